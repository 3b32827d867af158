"""What each chapter of the book shows, one module per chapter, all of the same shape.

Each chapter module (``writers``, ``compression``, ``threads``, ``cache``) has ``header(result)``
(the run header), figure functions (records DataFrame -> Figure), ``summary(df)`` (the table),
``conclusion(df)``, ``problems(df)`` and ``answer(df)`` (markdown; the answer is the chapter's sentence
on the book's front page, found by the suite's name). ``common`` holds what they share (ceilings,
failures, like-for-like ranking); ``flags`` the points a reader must be warned of; ``server`` the
server's share of a remote read; ``style`` the look of the figures. Each chapter module declares
its chapter once, ``CHAPTER = Chapter(...)`` (``chapter``: found through the ``iobench.chapters``
entry points, by notebook or by suite), and a notebook imports its chapter module by name
(``from benchmarks_lib.chapters import writers``): there is no list here to keep in step.
"""
