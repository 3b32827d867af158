"""How a chapter's table shows in the book: no pandas index, no NaN, numbers to three significant figures.

``Table`` is a DataFrame (tests and callers index it as one) whose notebook display is the book's: a default
row index is not shown (a named one becomes the first column), a missing value is a dash whose reason is stated
under the table, a float has three significant figures and no exponent notation. pandas escapes every cell.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

#: what a dash means where a table does not say otherwise
MISSING = "not measured or not applicable in this run"


def num3(value: float) -> str:
    """Three significant figures, without exponent notation between 1e-4 and 1e9 (2810, 0.733, 0.000123)."""
    if not np.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else "-"
    if value == 0 or not 1e-4 <= abs(value) < 1e9:
        return f"{value:.3g}"
    return np.format_float_positional(float(f"{value:.3g}"), trim="-")


def _missing(value: object) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _cell(value: object) -> str:
    if _missing(value):
        return "-"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return str(int(value)) if float(value).is_integer() and abs(value) < 1e9 else num3(float(value))
    return str(value)


class Table(pd.DataFrame):
    """A chapter's table: a DataFrame that displays as the book shows tables. ``missing`` (column -> why a value
    is missing there) is stated under the table for the columns that have a dash."""

    _metadata = ("missing",)

    @property
    def _constructor(self):
        return Table

    def shown(self) -> pd.DataFrame:
        """The table as text cells: index as a column where it carries names, dashes for missing values."""
        frame = pd.DataFrame(self)
        if not isinstance(frame.index, pd.RangeIndex):
            frame = frame.reset_index(names=frame.index.name or "")
        return frame.map(_cell) if len(frame) else frame.astype(object)

    def _repr_html_(self) -> str:
        shown = self.shown()
        body = shown.to_html(index=False, escape=True, border=0, classes="dataframe")
        reasons = getattr(self, "missing", None) or {}
        dashed = [c for c in shown.columns if (shown[c] == "-").any()]
        if not dashed:
            return body
        notes = sorted({reasons.get(c, MISSING) for c in dashed})
        return body + "<p><em>" + html.escape("-: " + "; ".join(notes)) + "</em></p>"

    def _repr_markdown_(self) -> None:  # the HTML is what a notebook shows
        return None


def table(frame: pd.DataFrame, missing: dict[str, str] | None = None) -> Table:
    """``frame`` as a :class:`Table` (``missing``: column -> why a value is missing there)."""
    out = Table(frame)
    out.missing = dict(missing or {})
    return out


__all__ = ["MISSING", "Table", "num3", "table"]
