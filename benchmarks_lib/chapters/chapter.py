"""A chapter of the book, declared once beside its suite: ``CHAPTER = Chapter(...)`` in its chapter module.

A chapter is found through the entry-point group ``iobench.chapters`` (``<notebook> = "module:CHAPTER"``): the
built-ins are declared in this package's ``pyproject.toml``, a third party's chapter (with its suite and notebook)
in its own package's. The book (its table of contents, front page and parameters page), the explorer, the command
line and the tests find chapters here, by notebook or by suite; no list of chapters is kept anywhere else.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks_lib.base.entrypoints import CHAPTERS_GROUP, declared, load
from benchmarks_lib.base.specs import SpecError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Chapter:
    """What a chapter is and shows. A measuring chapter names its ``suite`` and computes its text from a run's
    records; a chapter that measures nothing (``suite`` None) reads recorded runs and states what it shows."""

    #: its notebook's file name without ``.ipynb``: the chapter's page, ``iobench book --notebook``, its entry point
    notebook: str
    #: the suite its notebook measures (its one ``run_or_load`` call); None: it measures nothing
    suite: str | None = None
    #: the name of a chapter that measures nothing (a measuring chapter's is its suite's ``title``: ``label``)
    title: str = ""
    #: the front page's sentence: records -> Markdown for a measuring chapter; a fixed text for one that measures
    #: nothing
    answer: Callable[[pd.DataFrame], str] | str = ""
    #: records -> the chapter's table (also what ``iobench run``/``show`` print; None: the generic one)
    summary: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    #: records -> the conclusion computed from the run (Markdown)
    conclusion: Callable[[pd.DataFrame], str] | None = None
    #: records -> error rows, skips and flagged points (Markdown)
    problems: Callable[[pd.DataFrame], str] | None = None
    #: title -> records -> Figure: the figures the explorer offers
    figures: Mapping[str, Callable[[pd.DataFrame], Figure]] = field(default_factory=dict)
    #: its place in the book among the chapters of its distribution (built-ins first, then the others)
    order: int = 100
    #: the folder holding its notebook when it is not the book's ``notebooks/`` (a package of its own ships it)
    folder: Path | None = None

    @property
    def label(self) -> str:
        """Its name in the explorer's menu and in listings: its suite's title up to a colon, or its own title."""
        if self.suite is None:
            return self.title
        from benchmarks_lib.suites import get_suite

        return get_suite(self.suite).title.partition(":")[0]

    def template(self, root: Path) -> Path:
        """The notebook the book executes: in ``folder``, else in the book's ``root/notebooks``."""
        return (self.folder or root / "notebooks") / f"{self.notebook}.ipynb"

    def answer_of(self, df: pd.DataFrame) -> str:
        """The front page's sentence for a run's records (a chapter that measures nothing: its fixed text)."""
        return self.answer if isinstance(self.answer, str) else self.answer(df)


@functools.cache
def chapters() -> tuple[Chapter, ...]:
    """Every declared chapter in the book's order: the built-ins first, each group by ``order``, then notebook
    (their modules imported on first use); SpecError for one that fails to import or to declare a ``Chapter``."""
    found = declared(CHAPTERS_GROUP)
    if not found:
        raise SpecError(f"no chapters are registered (entry-point group {CHAPTERS_GROUP!r}): install this package "
                        "(pip install -e .) so that its entry points are found")
    out: list[tuple[tuple, Chapter]] = []
    for name, (target, builtin) in found.items():
        try:
            chapter = load(target)
        except ImportError as exc:
            raise SpecError(f"chapter {name!r} failed to import: {exc}") from None
        if not isinstance(chapter, Chapter) or chapter.notebook != name:
            raise SpecError(f"chapter {name!r}: {target} is not a Chapter whose notebook is {name!r}")
        out.append(((not builtin, chapter.order, chapter.notebook), chapter))
    suites = [c.suite for _, c in out if c.suite is not None]
    if len(set(suites)) < len(suites):
        twice = sorted({s for s in suites if suites.count(s) > 1})
        raise SpecError(f"suite {twice[0]!r} has more than one chapter; a suite has one")
    return tuple(chapter for _, chapter in sorted(out, key=lambda item: item[0]))


#: each measuring chapter has one name, its suite's, for its notebook, chapter module and page; the notebooks' names
#: before that are still accepted wherever a notebook is named (``iobench book --notebook``, ``--set NOTEBOOK:KEY``)
RENAMED = {"writer_comparison": "writers", "compression_sweep": "compression", "thread_scaling": "threads",
           "cache_prefetch": "cache", "parallel_writes": "parallel", "object_storage": "s3"}


def notebook_name(name: str) -> str:
    """The notebook a name means today (an old name mapped, ``RENAMED``)."""
    return RENAMED.get(name, name)


def chapter_named(notebook: str) -> Chapter:
    """The chapter whose notebook is ``notebook`` (or was, ``RENAMED``); SpecError naming the allowed ones."""
    notebook = notebook_name(notebook)
    for chapter in chapters():
        if chapter.notebook == notebook:
            return chapter
    raise SpecError(f"notebook {notebook!r} is unknown; allowed: {', '.join(c.notebook for c in chapters())}")


def chapter_of(suite: str) -> Chapter | None:
    """The chapter that measures ``suite`` (None for a suite without one, such as the ceiling)."""
    return next((c for c in chapters() if c.suite == suite), None)


def run_table(suite: str, df: pd.DataFrame) -> pd.DataFrame:
    """The table ``iobench run``/``show`` print for a run of ``suite``: its chapter's ``summary``, or the generic one
    for a suite without a chapter or where the chapter's table has no row."""
    from benchmarks_lib.chapters.common import generic_summary

    chapter = chapter_of(suite)
    table = chapter.summary(df) if chapter is not None and chapter.summary is not None else None
    return generic_summary(df) if table is None or table.empty else table


def measuring() -> dict[str, Chapter]:
    """suite -> its chapter, in the book's order."""
    return {c.suite: c for c in chapters() if c.suite is not None}


__all__ = ["RENAMED", "Chapter", "chapter_named", "chapter_of", "chapters", "measuring", "notebook_name", "run_table"]
