"""What each chapter of the book shows, one module per chapter, all of the same shape.

``writers``, ``compression``, ``threads`` and ``cache`` each have ``header(result)`` (the run
header), figure functions (records DataFrame -> Figure), ``summary(df)`` (the table),
``conclusion(df)`` and ``problems(df)`` (markdown). ``common`` holds what they share (ceilings,
failures, like-for-like ranking); ``style`` the look of the figures.
"""

CHAPTERS = ("writers", "compression", "threads", "cache")

__all__ = ["CHAPTERS"]
