"""How a chapter's table shows in the book: no pandas index, no NaN, numbers to three significant figures, never
wider than the book's column.

``Table`` is a DataFrame (tests and callers index it as one) whose notebook display is the book's: a default
row index is not shown (a named one becomes the first column), a missing value is a dash whose reason is stated
under the table, a float has three significant figures and no exponent notation. pandas escapes every cell.

A table wider than the column (``COLUMN_PX``; ``shown_px`` estimates its width from its text, the way a browser
lays out a table whose cells wrap only at spaces and hyphens) is shown as several tables one under the other,
each with the table's key columns (``keys``: what names a row) and as many of the other columns as fit, so no
column is hidden past the column's edge.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import one_line
from benchmarks_lib.rules.names import backend_name, operation_name

#: what a dash means where a table does not say otherwise
MISSING = "not measured or not applicable in this run"
#: the width of the book's column (px): a wider table is cut at its edge, so none is shown wider
COLUMN_PX = 784
#: px per character of the theme's 16 px table text (headers bold): upper case and wide signs, the rest; a cell's
#: padding. Measured in Chromium on the book's tables (digits and lower case 7.5-9 px, capitals and bold 10-12 px):
#: upper bounds, so that a table estimated to fit does fit
_WIDE_PX, _NARROW_PX, _PADDING_PX = 11.5, 8.5, 8.0
#: where a browser may break a cell's line: after a space or a hyphen between letters or digits
_BREAKS = re.compile(r"\s+|(?<=[\w)\]]-)(?=\w)")


def text_px(text: str, bold: bool = False) -> float:
    """The width (px) of the widest piece of ``text`` a browser cannot break (its min-content width)."""
    widest = 0.0
    for word in _BREAKS.split(str(text)):
        wide = sum(map(str.isupper, word)) + sum(map(word.count, "%@#&mw"))  # (M and W are upper case)
        px = _WIDE_PX * wide + _NARROW_PX * (len(word) - wide)
        widest = max(widest, px * (1.25 if bold else 1.0))
    return widest


def column_px(header: object, cells) -> float:
    """The least width (px) a column of a shown table takes: its widest unbreakable word, header included."""
    return max([text_px(str(header), bold=True), *(text_px(str(c)) for c in cells)]) + _PADDING_PX


def shown_px(frame: pd.DataFrame) -> float:
    """The least width (px) of a table of text cells (``Table.shown``): the sum of its columns' least widths."""
    return sum(column_px(c, frame[c]) for c in frame.columns)


def column_groups(frame: pd.DataFrame, keys: list[str], width: float = COLUMN_PX) -> list[list[str]]:
    """The columns of a table of text cells in parts that each fit ``width``: each part the ``keys`` and some of the
    other columns, in order; as few parts as fit, as even as they can be (one part when the whole table fits; a
    column too wide alone is a part of its own)."""
    if shown_px(frame) <= width:
        return [list(frame.columns)]
    keys = [k for k in keys if k in frame.columns]
    rest = [c for c in frame.columns if c not in keys]
    if not rest:  # nothing but key columns: nothing to spread over parts
        return [list(frame.columns)]
    widths = [column_px(c, frame[c]) for c in rest]
    room = width - sum(column_px(k, frame[k]) for k in keys)

    def pack(capacity: float) -> list[list[str]]:
        parts: list[list[str]] = []
        used = 0.0
        for column, px in zip(rest, widths, strict=True):
            if parts and used + px <= capacity:
                parts[-1].append(column)
                used += px
            else:
                parts.append([column])
                used = px
        return parts

    fewest = len(pack(room))
    even = max(max(widths, default=0.0), sum(widths) / fewest)  # the least room that might still give as few parts
    while even < room and len(pack(even)) > fewest:
        even += 4.0
    return [[*keys, *columns] for columns in pack(min(even, room))]


def num3(value: float) -> str:
    """Three significant figures, never in exponent notation (2810, 0.733, 0.000123, 0.0000145)."""
    if not np.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else "-"
    if value == 0:
        return "0"
    return np.format_float_positional(float(f"{value:.3g}"), trim="-")


def duration_text(seconds: float) -> str:
    """A time with three significant figures in the unit that fits: ``450 µs``, ``85 ms``, ``1.23 s`` ("-": none)."""
    if not np.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if abs(seconds) >= scale:
            return f"{num3(seconds / scale)} {unit}"
    return f"{num3(seconds / 1e-6)} µs"


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
    return one_line(value)  # a record string: control characters (ESC, BEL) never reach the page


class Table(pd.DataFrame):
    """A chapter's table: a DataFrame that displays as the book shows tables. ``missing`` (column -> why a value
    is missing there) is stated under the table for the columns that have a dash."""

    _metadata = ("missing", "row_keys")

    @property
    def _constructor(self):
        return Table

    def shown(self) -> pd.DataFrame:
        """The table as text cells: index as a column where it carries names, dashes for missing values, a
        recorded operation and writer in words (``names.operation_name``, ``names.backend_name``: ``cold cutout``,
        never ``read_region_cold``)."""
        frame = pd.DataFrame(self)
        if not isinstance(frame.index, pd.RangeIndex):
            frame = frame.reset_index(names=frame.index.name or "")
        if not len(frame):
            return frame.astype(object)
        raw = frame.copy()
        ceiling = raw["backend"].astype(str).eq("ceiling") if "backend" in raw else pd.Series(False, index=raw.index)
        frame = frame.map(_cell)
        words = {"operation": lambda v, i: operation_name(v, bool(ceiling.iloc[i])),
                 "backend": lambda v, i: backend_name(v), "library": lambda v, i: backend_name(v)}
        for column, say in words.items():
            if column in frame:  # record strings: one line, no control character, as every cell
                frame[column] = [cell if _missing(v) else one_line(say(v, i))
                                 for i, (v, cell) in enumerate(zip(raw[column], frame[column], strict=True))]
        return frame

    def key_columns(self, shown: pd.DataFrame) -> list[str]:
        """The columns that name a row, repeated in every part of a wrapped table: ``row_keys``, else the first."""
        keys = [k for k in (getattr(self, "row_keys", None) or []) if k in shown.columns]
        return keys or list(shown.columns[:1])

    def shown_parts(self) -> list[pd.DataFrame]:
        """The table as shown, in parts that each fit the book's column (one part when it fits whole)."""
        shown = self.shown()
        if shown.columns.empty:
            return [shown]
        return [shown[columns] for columns in column_groups(shown, self.key_columns(shown))]

    def _repr_html_(self) -> str:
        shown = self.shown()
        body = "\n".join(part.to_html(index=False, escape=True, border=0, classes="dataframe")
                         for part in self.shown_parts())
        reasons = getattr(self, "missing", None) or {}
        dashed = [c for c in shown.columns if (shown[c] == "-").any()]
        if not dashed:
            return body
        notes = sorted({reasons.get(c, MISSING) for c in dashed})
        return body + "<p><em>" + html.escape("-: " + "; ".join(notes)) + "</em></p>"

    def _repr_markdown_(self) -> None:  # the HTML is what a notebook shows
        return None


def table(frame: pd.DataFrame, missing: dict[str, str] | None = None, keys: list[str] | None = None) -> Table:
    """``frame`` as a :class:`Table` (``missing``: column -> why a value is missing there; ``keys``: the columns
    that name a row, kept in every part where the table is too wide for the column; default its first)."""
    out = Table(frame)
    out.missing = dict(missing or {})
    out.row_keys = list(keys or [])
    return out


__all__ = ["COLUMN_PX", "MISSING", "Table", "column_groups", "column_px", "duration_text", "num3", "shown_px", "table",
           "text_px"]
