"""The look of every figure: the theme, the whiskers, shared axes helpers and the ceiling lines.

The theme is applied by ``subplots()``, which every figure function calls, never at import time.
pyplot and seaborn are imported on first use, so a measuring process that imports a suite (whose
summary table lives in a chapter module) never loads them.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np


class _OnFirstUse:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


plt = _OnFirstUse("matplotlib.pyplot")
sns = _OnFirstUse("seaborn")

#: the whiskers of every seaborn figure: the median's 95% bootstrap interval, seeded (with estimator="median")
CI95 = {"errorbar": ("ci", 95), "seed": 0}
WHISKERS = "median; whiskers: 95% bootstrap CI"
CEILING_LABELS = {"write_fsync": "raw write + fsync, 1 stream", "write_nofsync": "raw write (no fsync), 1 stream",
                  "read_cold": "raw cold read, 1 stream", "read_warm": "raw warm read, 1 stream", "memcpy": "memcpy",
                  "write_fsync_parallel": "raw write + fsync, parallel streams",
                  "write_nofsync_parallel": "raw write (no fsync), parallel streams",
                  "read_cold_parallel": "raw cold read, parallel streams"}
#: axis unit -> how many of it one GB/s is (ceilings are always given in GB/s, as records store them)
UNITS = {"GB/s": 1.0, "MB/s": 1e3}

_applied = False


def apply_theme() -> None:
    """The seaborn theme of every figure in the book (applied once per process)."""
    global _applied
    if not _applied:
        sns.set_theme(style="whitegrid", context="notebook")
        _applied = True


def subplots(*args, **kwargs):
    """``plt.subplots`` with the book's theme applied first: every figure starts here. Text is never read as
    mathtext: labels carry names from records, and a ``$`` in one must show as itself, not fail the figure."""
    apply_theme()
    plt.rcParams["text.parse_math"] = False
    return plt.subplots(*args, **kwargs)


def empty_figure(title: str):
    """A small placeholder figure saying there is no data for ``title``."""
    fig, ax = subplots(figsize=(6, 2))
    ax.text(0.5, 0.5, f"{title}: no data", ha="center", va="center")
    ax.set_axis_off()
    return fig


def log_axis(ax, axis: str = "x") -> None:
    """Log scale with labelled decades only (no overlapping minor labels)."""
    from matplotlib.ticker import LogFormatterSciNotation, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False, minor_thresholds=(0, 0)))
    target.set_minor_formatter(NullFormatter())


def plain_log_ticks(ax, axis: str = "y") -> None:
    """Log ticks at 1, 2, 5 x 10^k written as plain numbers (the axis must already be log)."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(ScalarFormatter())
    target.set_minor_formatter(NullFormatter())


def ratio_log_axis(ax, axis: str = "y") -> None:
    """Log axis (y by default) labelled 1, 2, 5, 10, 20 ... (ratios read better as plain numbers)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    target.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    target.set_minor_formatter(NullFormatter())


def legend_outside(ax, title: str | None = None) -> None:
    """The legend to the right of the axes (when there is anything to label)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def draw_ceilings(ax, ceiling: dict[str, float], ops: tuple[str, ...], *, unit: str = "GB/s",
                  vertical: bool = False, percent_of: str | None = None) -> None:
    """Dashed lines at this machine's ceilings, the one way every figure draws them: each single-stream
    ceiling in ``ops`` and, dotted, its parallel twin where the run measured one.

    ``ceiling`` is GB/s per ceiling operation (``common.ceiling_gbps``); ``unit`` is the axis's
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


__all__ = ["CEILING_LABELS", "CI95", "WHISKERS", "apply_theme", "draw_ceilings", "empty_figure", "legend_outside",
           "log_axis", "plain_log_ticks", "ratio_log_axis", "subplots"]
