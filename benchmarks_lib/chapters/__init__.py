"""What each chapter of the book shows, one module per chapter, all of the same shape.

Each chapter module (``writers``, ``compression``, ``threads``, ``cache``) has ``header(result)``
(the run header), figure functions (records DataFrame -> Figure), ``summary(df)`` (the table),
``conclusion(df)`` and ``problems(df)`` (markdown). ``common`` holds what they share (ceilings,
failures, like-for-like ranking); ``style`` the look of the figures. A notebook imports its
chapter module by name (``from benchmarks_lib.chapters import writers``): there is no list here
to keep in step.
"""
