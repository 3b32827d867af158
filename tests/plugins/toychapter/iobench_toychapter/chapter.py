"""The toy suite's chapter: declared once (``CHAPTER``), its notebook shipped beside it in this package."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.chapters.common import generic_summary, no_answer, ok_rows, problems
from benchmarks_lib.chapters.style import empty_figure, subplots


def copy_time(df: pd.DataFrame):
    """The time of each copy, per iteration."""
    rows = ok_rows(df)
    rows = rows[rows["operation"] == "copy"] if "operation" in rows else rows.iloc[0:0]
    if rows.empty:
        return empty_figure("copy time")
    fig, ax = subplots(figsize=(5, 3))
    ax.plot(rows["iteration"], rows["elapsed_s"] * 1e3, "o")
    ax.set(xlabel="iteration", ylabel="copy time (ms)", title="Copy time")
    return fig


def answer(df: pd.DataFrame) -> str:
    rows = ok_rows(df)
    rows = rows[rows["operation"] == "copy"] if "operation" in rows else rows.iloc[0:0]
    if rows.empty:
        return no_answer("copy")
    return f"A copy took {rows['elapsed_s'].median() * 1e3:.3g} ms (median of {len(rows)})."


CHAPTER = Chapter("toy_copies", suite="toy", answer=answer, summary=generic_summary, conclusion=answer,
                  problems=problems, figures={"Copy time": copy_time}, order=10, folder=Path(__file__).parent)
