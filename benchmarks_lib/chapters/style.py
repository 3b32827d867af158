"""The look of every figure: the theme, the whiskers, shared axes helpers and the ceiling lines.

The theme is applied by ``subplots()``, which every figure function calls, never at import time.
pyplot and seaborn are imported on first use, so a measuring process that imports a suite (whose
summary table lives in a chapter module) never loads them.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

import numpy as np

from benchmarks_lib.base.stats import median_ci
from benchmarks_lib.rules.names import CEILING_LABELS


class _OnFirstUse:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


plt = _OnFirstUse("matplotlib.pyplot")
sns = _OnFirstUse("seaborn")


def _median_interval(values) -> tuple[float, float]:
    """The whiskers: the order-statistic interval of the median the tables state (none for one value)."""
    med, lo, hi, _ = median_ci(values)
    return (lo, hi) if np.isfinite(lo) and np.isfinite(hi) else (med, med)


CI95 = {"errorbar": _median_interval}


def whiskers(rows, keys, value: str) -> str:
    """What a figure's points and whiskers are, with the n and coverage the tables state for them: ``median [94%
    interval], n=5`` (every point n=5; the whiskers are that interval), ``median [94-95% intervals], n=5-16``,
    ``median, n=1, no interval``. ``keys``: the columns that make a point (x, hue, panel), ``value`` its column."""
    import math

    from benchmarks_lib.base.stats import CONFIDENCE, coverage

    keys = [k for k in ([keys] if isinstance(keys, str) else list(keys)) if k in rows]
    if value not in rows or rows.empty:
        return "median"
    counts = rows.groupby(keys, dropna=False)[value].count() if keys else rows[value].count()
    ns = sorted({int(n) for n in np.atleast_1d(counts) if n > 0})
    if not ns:
        return "median"
    n_text = f"n={ns[0]}" if len(ns) == 1 else f"n={ns[0]}-{ns[-1]}"
    # each point's coverage as ``stats.format_ci`` states it in a table: its own below 95%, else 95%
    covers = sorted({math.floor(100 * c + 0.5) if c < CONFIDENCE else 95 for c in (coverage(n) for n in ns if n >= 2)})
    if not covers:
        return f"median, {n_text}, no interval"
    span = f"{covers[0]}%" if len(covers) == 1 else f"{covers[0]}-{covers[-1]}%"
    lone = "; n=1: no whisker" if ns[0] == 1 else ""
    return f"median [{span} interval{'s' if len(covers) > 1 else ''}], {n_text}{lone}"


#: axis unit -> how many of it one GB/s is (ceilings are always given in GB/s, as records store them)
UNITS = {"GB/s": 1.0, "MB/s": 1e3}

#: the book's column shows a figure at most this wide (inches at the figure's 100 dpi: 688 px in the book's theme,
#: a little more is scaled down by at most ~5%); ``subplots`` never makes a figure wider, and no row has more than
#: two panels
MAX_WIDTH_IN = 7.2
#: the smallest text of any figure (points at 100 dpi): at the column's width it shows as at least 9 pt
SMALL = 10
_THEME = {"font.size": 11, "axes.titlesize": 11, "axes.labelsize": 10.5, "xtick.labelsize": SMALL,
          "ytick.labelsize": SMALL, "legend.fontsize": SMALL, "legend.title_fontsize": SMALL,
          "figure.titlesize": 11, "figure.dpi": 100}

_applied = False


def apply_theme() -> None:
    """The seaborn theme of every figure in the book (applied once per process), its text sized for the column; in
    a notebook's kernel, figures shown as retina PNGs (twice the pixels, the same size on the page: sharp on 2x
    screens; the book's ``<img>`` carries the figure's own width, which ``figures.js`` reads)."""
    global _applied
    if not _applied:
        sns.set_theme(style="whitegrid", context="notebook", rc=_THEME)
        _retina()
        _applied = True


def _retina() -> None:
    """Inline figures as retina PNGs where this process is an IPython kernel (never creates a shell elsewhere)."""
    import sys

    ipython = sys.modules.get("IPython")
    if ipython is None or ipython.get_ipython() is None:
        return
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # a shell without the inline backend: its figures as it shows them
        return
    set_matplotlib_formats("retina")


#: the most characters a line of a figure's text shows, and the most lines (a name from a record may be any length:
#: drawn whole it widened its figure to 8,000 px, the book then showing every text at a tenth of its size); a tick
#: label (beside the axes) at most LABEL_CHARS, a legend's entry as much, LEGEND_ROW for all of a row's columns
TEXT_CHARS, TEXT_LINES, LABEL_CHARS, LEGEND_ROW = 100, 4, 56, 144


def clip_text(text: str, chars: int = TEXT_CHARS) -> str:
    """``text`` cut to ``TEXT_LINES`` lines of at most ``chars`` characters, each cut ending in an ellipsis."""
    lines = str(text).split("\n")
    cut = [line if len(line) <= chars else line[:chars - 1] + "…" for line in lines[:TEXT_LINES]]
    if len(lines) > TEXT_LINES and not cut[-1].endswith("…"):
        cut[-1] += " …"
    return "\n".join(cut)


@cache
def _figure_class():
    """The class of every figure of the book: a matplotlib ``Figure`` whose texts (titles, labels, legends, tick
    labels from any formatter) are cut by :func:`clip_text` whenever it is drawn, before its layout is measured."""
    from matplotlib.figure import Figure
    from matplotlib.text import Text
    from matplotlib.ticker import Formatter

    class ClippedFormatter(Formatter):
        def __init__(self, inner: Formatter) -> None:
            self.inner = inner

        def __call__(self, x, pos=None):
            return clip_text(self.inner(x, pos), LABEL_CHARS)

        def format_ticks(self, values):
            return [clip_text(label, LABEL_CHARS) for label in self.inner.format_ticks(values)]

        def set_locs(self, locs):
            self.inner.set_locs(locs)

        def get_offset(self):
            return self.inner.get_offset()

    class BookFigure(Figure):
        def draw(self, renderer):
            for ax in self.axes:
                for axis in (ax.xaxis, ax.yaxis):
                    if not isinstance(formatter := axis.get_major_formatter(), ClippedFormatter):
                        axis.set_major_formatter(ClippedFormatter(formatter))
            legends = [legend for legend in (*self.legends, *(ax.get_legend() for ax in self.axes)) if legend]
            entries = {id(t): min(LABEL_CHARS, LEGEND_ROW // max(1, getattr(legend, "_ncols", 1)))
                       for legend in legends for t in legend.get_texts()}
            for text in self.findobj(Text):
                chars = entries.get(id(text), TEXT_CHARS)
                if (shown := text.get_text()) != (cut := clip_text(shown, chars)):
                    text.set_text(cut)
            super().draw(renderer)

    return BookFigure


def subplots(*args, **kwargs):
    """``plt.subplots`` with the book's theme applied first: every figure starts here. Text is never read as
    mathtext: labels carry names from records, and a ``$`` in one must show as itself, not fail the figure; nor
    longer than a figure can hold (:func:`clip_text`, whenever it is drawn). A figure is never wider than the
    book's column (``MAX_WIDTH_IN``); its height is kept."""
    apply_theme()
    plt.rcParams["text.parse_math"] = False
    width, height = kwargs.get("figsize") or plt.rcParams["figure.figsize"]
    kwargs["figsize"] = (min(float(width), MAX_WIDTH_IN), float(height))
    return plt.subplots(*args, FigureClass=_figure_class(), **kwargs)


def _note(text: str, *shown) -> None:
    """Show ``text`` as a sentence (and ``shown``, a table, under it) where a notebook displays (a Jupyter kernel);
    nothing elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:  # pragma: no cover - IPython comes with the book's extra
        return
    shell = get_ipython()
    if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":
        from benchmarks_lib.base.markup import md

        display(Markdown(f"*{md(text)}*"), *shown)


def empty_figure(title: str, why: str = "no data in this run"):
    """No figure where there is nothing to draw: in a notebook, a sentence saying so (``title``: ``why``); the
    returned figure (for the explorer and tests, which draw it) says the same and is never shown by the inline
    backend (it is not a pyplot figure)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    apply_theme()
    _note(f"{title}: {why}.")
    fig = Figure(figsize=(6, 1.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, f"{title}: {why}", ha="center", va="center", fontsize=SMALL, parse_math=False)
    ax.set_axis_off()
    return fig


#: the fewest distinct x-values drawn as a line: through two points any line is straight, and says nothing a small
#: table does not (with the numbers and their intervals)
MIN_LINE_POINTS = 3


def _plural(what: str) -> str:
    return what[:-1] + "ies" if what.endswith("y") and not what.endswith("ay") else what + "s"


def _values_text(values) -> str:
    return ", ".join(f"{v:g}" if isinstance(v, int | float | np.integer | np.floating) else str(v) for v in values)


def too_few(rows, column: str, title: str, what: str, table=None):
    """None when ``rows`` hold ``MIN_LINE_POINTS`` or more distinct ``column`` values (a line says something);
    else no line: in a notebook, a sentence and ``table`` (the numbers, e.g. ``median_table``) where one is given,
    and a figure holding the same (what the explorer shows); without a table, a sentence pointing to the
    chapter's table."""
    values = sorted(rows[column].dropna().unique()) if column in rows else []
    if len(values) >= MIN_LINE_POINTS:
        return None
    named = ", ".join(map(str, table.columns)) if table is not None and len(table) else _values_text(values)
    measured = (f"no {what} measured" if not values else f"only one {what} measured ({named})"
                if len(values) == 1 else f"{len(values)} {_plural(what)} measured ({named})")
    if table is None or len(table) == 0:
        return empty_figure(title, f"{measured}; the table below has its numbers")
    why = f"{measured}: a line needs {MIN_LINE_POINTS}, so the numbers are in this table"
    _note(f"{title}: {why}.", table)
    return table_figure(title, why, table)


def median_table(rows, x: str, value: str, series, label, unit: str = "", scale: float = 1.0):
    """A small table of a sweep too short for a line: one row per ``series`` (a column or columns), one column per
    ``x`` value (named ``label(x)``), each cell the median of ``value`` (in ``unit``, times ``scale``) with its
    interval and n as every table states them."""
    import pandas as pd

    from benchmarks_lib.base.stats import format_values
    from benchmarks_lib.chapters.tables import table

    series = [series] if isinstance(series, str) else list(series)
    cells: dict[str, dict[str, str]] = {}
    for key, part in rows.groupby([*series, x], sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        name = " ".join(str(k) for k in key[:-1])
        values = part[value].astype("float64")
        fmt = "{:.0f}" if abs(values.median() * scale) >= 100 else "{:.3g}"  # never in exponent notation
        cells.setdefault(label(key[-1]), {})[name] = format_values(values, fmt, scale)
    frame = pd.DataFrame(cells)
    frame.index.name = " / ".join(series) + (f" ({unit})" if unit else "")
    return table(frame, {c: "not measured at this value" for c in frame.columns})


def table_figure(title: str, note: str, table):
    """A figure that is a table (never a pyplot figure: the inline backend does not show it), for the explorer and
    the tests: its title, why it is a table, and the cells as the book's table shows them, each column as wide as
    its widest text (a cell's n and coverage on a second line where the columns would not fit the book's column)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from benchmarks_lib.base.markup import short

    apply_theme()
    shown = table.shown().map(short)  # a record's long name cannot stretch the figure
    shown.columns = [short(c) for c in shown.columns]
    fig = Figure(figsize=(MAX_WIDTH_IN, 2.0))
    renderer = FigureCanvasAgg(fig).get_renderer()
    room = MAX_WIDTH_IN * fig.dpi

    def width(text: str) -> float:
        probe = Text(0, 0, text, fontsize=SMALL, figure=fig, parse_math=False)
        return probe.get_window_extent(renderer).width + 12  # with the cell's padding

    def widths(cells) -> list[float]:
        return [max(width(line) for value in [column, *cells[column]] for line in str(value).split("\n"))
                for column in cells.columns]

    cells, lines = shown, 1
    if sum(widths(cells)) > room:  # n and coverage under the value
        cells, lines = shown.map(lambda v: str(v).replace(" (n=", "\n(n=")), 2
    need = widths(cells)
    height = 0.25 * lines * len(cells) + 0.3
    fig.set_size_inches(MAX_WIDTH_IN, height + 0.75)
    share = min(1.0, sum(need) / room)
    ax = fig.add_axes((0.0, 0.0, share, height / (height + 0.75)))
    ax.set_axis_off()
    drawn = ax.table(cellText=cells.to_numpy(), colLabels=list(cells.columns), cellLoc="left", bbox=(0, 0, 1, 1),
                     colWidths=[n / sum(need) for n in need])
    drawn.auto_set_font_size(False)
    drawn.set_fontsize(SMALL)
    for cell in drawn.get_celld().values():
        cell.PAD = 6 / max(n for n in need)  # about 6 px of the widest cell's width
        cell.get_text().set_parse_math(False)  # a record's "$" is itself, never math
    fig.suptitle(f"{title}\n({note})", fontsize=SMALL, x=0.02, ha="left", y=0.98, va="top", parse_math=False)
    return fig


def _plain(value: float, _pos=None) -> str:
    """A log axis's tick label as a plain number (0.5, 20, 1500), powers of ten beyond 1e5 or below 1e-3 as 10^k."""
    if value <= 0:
        return ""
    exp = int(np.floor(np.log10(value) + 1e-9))
    if -3 <= exp < 5:
        return np.format_float_positional(float(f"{value:.2g}"), trim="-")
    digits = str(exp).translate(str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076"
                                              "\u2077\u2078\u2079"))
    mantissa = value / 10.0**exp
    return f"10{digits}" if abs(mantissa - 1) < 1e-6 else f"{mantissa:.2g}\u00d710{digits}"


#: the room (px at the figure's 100 dpi) a tick label of a log axis needs with its gap: on an x axis its width
#: ("2x10^-5" at 10 pt is about 45 px), on a y axis its height
TICK_ROOM_PX = {"x": 56.0, "y": 22.0}


def _log_locator():
    """Ticks for a log axis that always has some and never so many that their labels overprint: 1, 2, 3, 5, 7 x
    10^k under one decade, 1, 2, 5 x 10^k up to three, decades beyond; fewer where the axis is too short for their
    labels (``TICK_ROOM_PX`` each: 1, 3 x 10^k, then decades, then every other decade ...)."""
    from matplotlib.ticker import LogLocator

    class Ticks(LogLocator):
        def tick_values(self, vmin, vmax):
            if vmin > 0 and vmax > 0:
                decades = abs(np.log10(vmax / vmin))
                room = self._room()
                choices = [(1.0, 2.0, 3.0, 5.0, 7.0), (1.0, 2.0, 5.0)] if decades < 1 else \
                    [(1.0, 2.0, 5.0), (1.0, 3.0), (1.0,)] if decades <= 3 else [(1.0,)]
                subs = next((c for c in choices if len(c) * max(decades, 1.0) <= room), choices[-1])
                self.set_params(subs=subs, numticks=max(2, min(12, int(room))))
            return super().tick_values(vmin, vmax)

        def _room(self) -> float:
            """How many tick labels the axis has room for (12 where it is not on a figure yet)."""
            axis = self.axis
            if axis is None or getattr(axis, "axes", None) is None:
                return 12.0
            name = getattr(axis, "axis_name", "x")
            box = axis.axes.get_position(original=False)
            width, height = axis.axes.figure.get_size_inches() * axis.axes.figure.dpi
            length = box.width * width if name == "x" else box.height * height
            return max(length / TICK_ROOM_PX.get(name, TICK_ROOM_PX["x"]), 1.0)

    return Ticks(base=10, numticks=12)


def log_axis(ax, axis: str = "x") -> None:
    """Log scale whose ticks are labelled as plain numbers, with labels even where the data span less than a
    decade (no decade inside the axis left the axis unlabelled)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_locator(_log_locator())
    target.set_major_formatter(FuncFormatter(_plain))
    target.set_minor_formatter(NullFormatter())


def plain_log_ticks(ax, axis: str = "y") -> None:
    """Log ticks written as plain numbers (the axis must already be log)."""
    log_axis(ax, "x" if axis == "x" else "y")


def ratio_log_axis(ax, axis: str = "y") -> None:
    """Log axis (y by default) labelled 1, 2, 5, 10, 20 ... (ratios read better as plain numbers)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    target.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    target.set_minor_formatter(NullFormatter())


def legend_outside(ax, title: str | None = None, *, below: bool = False, handles=None, labels=None) -> None:
    """The legend off the data (when there is anything to label): right of the axes, or ``below`` them (long
    labels: then in up to two columns, under the axis label). ``tight_layout`` makes room for it inside the
    figure's width."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
        old = ax.get_legend()
        if old is not None and not handles:  # seaborn's own legend (ecdfplot, hue without labelled artists)
            handles, labels = list(old.legend_handles), [t.get_text() for t in old.get_texts()]
            title = title or old.get_title().get_text() or None
        if old is not None:
            old.remove()
    if not handles:
        return
    if below:
        from matplotlib.transforms import ScaledTranslation

        shift = ScaledTranslation(0, -0.55, ax.figure.dpi_scale_trans)
        ax.legend(handles, labels, title=title, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                  bbox_transform=ax.transAxes + shift, ncol=2 if len(handles) > 3 else 1, frameon=False)
    else:
        ax.legend(handles, labels, title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def legend_under_figure(fig, axes, ncol: int = 2) -> None:
    """One legend for all ``axes`` (their entries, each label once) under the figure, off the data; the axes'
    own legends removed; the figure made taller to hold it and laid out (call last)."""
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels and not label.startswith("_"):
                handles.append(h)
                labels.append(label)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    rows = -(-len(labels) // ncol) if labels else 0
    extra = 0.24 * rows + (0.1 if rows else 0)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + extra)
    if labels:
        fig.legend(handles, labels, loc="lower center", ncol=ncol, frameon=False)
    fig.tight_layout(rect=(0, extra / (height + extra), 1, 1))


#: where a point's label may go (offset in points, horizontal alignment), tried in order: above right, below right,
#: above left, below left, then further out
_LABEL_SPOTS = [((4, 3), "left"), ((4, -11), "left"), ((-4, 3), "right"), ((-4, -11), "right"),
                ((8, 12), "left"), ((8, -20), "left"), ((-8, 12), "right"), ((-8, -20), "right")]


def label_points(ax, points, fontsize: float = SMALL - 1, color=None, drawn_already: bool = False) -> list:
    """Name points of ``ax`` (``(x, y, text)`` each) with labels that are never cut short, never print over each
    other and stay inside the axes: each in the first free spot around its point (``_LABEL_SPOTS``), else moved
    down (or up) the axes until free, joined to its point by a thin line. Call once the figure is laid out; with
    ``drawn_already`` the figure was drawn since (once for all its panels: a draw is most of the cost, and a label
    placed in one panel moves no other panel)."""
    from matplotlib.text import Text

    def text_box(label):  # the text alone, not its leader line
        label.update_positions(renderer)
        return Text.get_window_extent(label, renderer)

    if not drawn_already:
        ax.figure.canvas.draw()  # the limits and the layout as they will be shown
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    placed, drawn = [], []

    def free(box, wide: bool = False) -> bool:
        across = wide or (frame.x0 <= box.x0 and box.x1 <= frame.x1)  # a label wider than either side may pass
        clear = not any(box.padded(2).overlaps(b) for b in placed)  # 2 px apart at least
        return across and frame.y0 <= box.y0 and box.y1 <= frame.y1 and clear

    for x, y, text in sorted(points, key=lambda p: (-p[1], p[0])):
        probe = ax.annotate(text, (x, y), xytext=(0, 0), textcoords="offset points", fontsize=fontsize,
                            parse_math=False)
        spot = None
        for offset, align in _LABEL_SPOTS:
            probe.xyann = offset
            probe.set_horizontalalignment(align)
            if free(text_box(probe)):
                spot = (offset, align)
                break
        if spot is None:  # down the axes (then up) beside the point, on its roomier side, until free
            probe.set_horizontalalignment("left")
            probe.xyann = (4, -11)
            box = text_box(probe)
            room_right, room_left = frame.x1 - box.x0, box.x0 - frame.x0
            align = "left" if box.x1 <= frame.x1 or room_right >= room_left else "right"
            wide = box.width + 4 > max(room_right, room_left)
            probe.set_horizontalalignment(align)
            dx = 4 if align == "left" else -4
            for step in [*range(1, 60), *range(-1, -60, -1)]:
                probe.xyann = (dx, -11 - 12 * step if step > 0 else 3 - 12 * step)
                if free(text_box(probe), wide):
                    break
            spot = (probe.xyann, align)
        probe.remove()
        (offset, align), far = spot, abs(spot[0][1]) > 12 or abs(spot[0][0]) > 4
        line = {"arrowprops": {"arrowstyle": "-", "color": "0.6", "lw": 0.6, "shrinkA": 0, "shrinkB": 2}} if far \
            else {}
        drawn.append(ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", fontsize=fontsize,
                                 color=color, ha=align, annotation_clip=False, parse_math=False, **line))
        placed.append(text_box(drawn[-1]))
    return drawn


def draw_ceilings(ax, ceiling: dict[str, float], ops: tuple[str, ...], *, unit: str = "GB/s",
                  vertical: bool = False, percent_of: str | None = None) -> None:
    """Dashed lines at this machine's ceilings, the one way every figure draws them: each single-stream
    ceiling in ``ops`` and, dotted, its parallel twin where the run measured one.

    ``ceiling`` is GB/s per ceiling operation (``ceilings.ceiling_gbps``); ``unit`` is the axis's
    unit (``GB/s`` or ``MB/s``). With ``percent_of`` (a ceiling operation) a right-hand axis shows
    % of that ceiling.
    """
    scale = UNITS[unit]
    values = {op: gbps * scale for op, gbps in ceiling.items() if gbps and np.isfinite(gbps)}
    drawn = [o for op in ops for o in (op, f"{op}_parallel") if o in values]
    colors = sns.color_palette("Greys", len(drawn) + 2)[2:]
    for op, color in zip(drawn, colors, strict=False):
        line = ax.axvline if vertical else ax.axhline
        line(values[op], ls=":" if op.endswith("_parallel") else "--", lw=1, color=color,
             label=f"ceiling: {CEILING_LABELS.get(op, op)}")
    ref = values.get(percent_of) if percent_of else None
    if ref:
        sec = ax.secondary_yaxis("right", functions=(lambda y: 100 * y / ref, lambda p: p * ref / 100))
        sec.set_ylabel(f"% of {CEILING_LABELS.get(percent_of, percent_of)}")


__all__ = ["CEILING_LABELS", "CI95", "MAX_WIDTH_IN", "MIN_LINE_POINTS", "SMALL", "apply_theme", "draw_ceilings",
           "empty_figure", "label_points", "legend_outside", "legend_under_figure", "log_axis", "median_table",
           "plain_log_ticks", "ratio_log_axis", "subplots", "table_figure", "too_few", "whiskers"]
