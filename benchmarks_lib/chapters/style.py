"""The look of every figure: the theme, the whiskers, shared axes helpers and the ceiling lines.

The theme is applied by ``subplots()``, which every figure function calls, never at import time.
pyplot and seaborn are imported on first use, so a measuring process that imports a suite (whose
summary table lives in a chapter module) never loads them.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from benchmarks_lib.base.stats import median_ci


class _OnFirstUse:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


plt = _OnFirstUse("matplotlib.pyplot")
sns = _OnFirstUse("seaborn")

#: the whiskers of every seaborn figure: the median's 95% bootstrap interval, seeded (with estimator="median")


def _median_interval(values) -> tuple[float, float]:
    """The whiskers: the order-statistic interval of the median the tables state (none for one value)."""
    med, lo, hi, _ = median_ci(values)
    return (lo, hi) if np.isfinite(lo) and np.isfinite(hi) else (med, med)


CI95 = {"errorbar": _median_interval}
WHISKERS = "median; whiskers: order-statistic interval (95% from n=6)"
CEILING_LABELS = {"write_fsync": "raw write + fsync, 1 stream", "write_nofsync": "raw write (no fsync), 1 stream",
                  "read_cold": "raw cold read, 1 stream", "read_warm": "raw warm read, 1 stream", "memcpy": "memcpy",
                  "write_fsync_parallel": "raw write + fsync, parallel streams",
                  "write_nofsync_parallel": "raw write (no fsync), parallel streams",
                  "read_cold_parallel": "raw cold read, parallel streams"}
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
    """The seaborn theme of every figure in the book (applied once per process), its text sized for the column."""
    global _applied
    if not _applied:
        sns.set_theme(style="whitegrid", context="notebook", rc=_THEME)
        _applied = True


def subplots(*args, **kwargs):
    """``plt.subplots`` with the book's theme applied first: every figure starts here. Text is never read as
    mathtext: labels carry names from records, and a ``$`` in one must show as itself, not fail the figure.
    A figure is never wider than the book's column (``MAX_WIDTH_IN``); its height is kept."""
    apply_theme()
    plt.rcParams["text.parse_math"] = False
    width, height = kwargs.get("figsize") or plt.rcParams["figure.figsize"]
    kwargs["figsize"] = (min(float(width), MAX_WIDTH_IN), float(height))
    return plt.subplots(*args, **kwargs)


def _note(text: str) -> None:
    """Show ``text`` as a sentence where a notebook displays (a Jupyter kernel); nothing elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:  # pragma: no cover - IPython comes with the book's extra
        return
    shell = get_ipython()
    if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":
        from benchmarks_lib.base.markup import md

        display(Markdown(f"*{md(text)}*"))


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


def too_few(rows, column: str, title: str, what: str):
    """``empty_figure`` when ``rows`` hold fewer than two distinct ``column`` values (a one-point line says
    nothing a table does not), else None."""
    values = rows[column].dropna().unique() if column in rows else []
    if len(values) >= 2:
        return None
    one = f"only one {what} measured ({values[0]:g})" if len(values) == 1 and isinstance(values[0], int | float) \
        else f"only one {what} measured" if len(values) == 1 else f"no {what} measured"
    return empty_figure(title, f"{one}; the table below has its numbers")


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


def _log_locator():
    """Ticks for a log axis that always has some: 1, 2, 5 x 10^k over up to three decades (1 to 9 under one
    decade), decades beyond."""
    from matplotlib.ticker import LogLocator

    class Ticks(LogLocator):
        def tick_values(self, vmin, vmax):
            if vmin > 0 and vmax > 0:
                decades = abs(np.log10(vmax / vmin))
                self.set_params(subs=(1.0, 2.0, 3.0, 5.0, 7.0) if decades < 1 else (1.0, 2.0, 5.0) if decades <= 3
                                else (1.0,))
            return super().tick_values(vmin, vmax)

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


__all__ = ["CEILING_LABELS", "CI95", "MAX_WIDTH_IN", "SMALL", "WHISKERS", "apply_theme", "draw_ceilings",
           "empty_figure", "legend_outside", "legend_under_figure", "log_axis", "plain_log_ticks", "ratio_log_axis",
           "subplots", "too_few"]
