"""The standard figures, each a function of a records DataFrame returning a Figure.

Every bar or point is the median over iterations and every whisker its 95% bootstrap
interval (seeded, so a figure is reproducible), as the axis labels say. Contenders are
labelled with the codec they used. Throughput axes carry the machine's ceiling from the same
run as dashed lines and a right-hand axis in % of that ceiling.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import LogFormatterSciNotation, NullFormatter

from .report import ceiling_gbps, common_size, label_layouts, ok_rows, shuffle_of
from .style import apply_theme

CEILING_LABELS = {"write_fsync": "raw write + fsync", "write_nofsync": "raw write (no fsync)",
                  "read_cold": "raw cold read", "read_warm": "raw warm read", "memcpy": "memcpy"}
#: the whiskers of every seaborn figure here: the median's 95% bootstrap interval, seeded (with estimator="median")
CI95 = {"errorbar": ("ci", 95), "seed": 0}
WHISKERS = "median; whiskers: 95% bootstrap CI"
apply_theme()


def log_axis(ax: plt.Axes, axis: str = "x") -> None:
    """Log scale with labelled decades only (no overlapping minor labels)."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False, minor_thresholds=(0, 0)))
    target.set_minor_formatter(NullFormatter())


def empty_figure(title: str) -> plt.Figure:
    """A small placeholder figure saying there is no data for ``title``."""
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.text(0.5, 0.5, f"{title}: no data", ha="center", va="center")
    ax.set_axis_off()
    return fig


def add_ceiling(ax: plt.Axes, df: pd.DataFrame, ops: tuple[str, ...], *, pct_of: str | None = None) -> None:
    """Dashed lines at the ceiling GB/s; a right axis in % of ``pct_of`` (or the first op)."""
    ceil = ceiling_gbps(df)
    colors = sns.color_palette("Greys", len(ops) + 2)[2:]
    for op, color in zip(ops, colors, strict=False):
        if op in ceil:
            ax.axhline(ceil[op], ls="--", lw=1, color=color, label=f"ceiling: {CEILING_LABELS.get(op, op)}")
    ref = ceil.get(pct_of or ops[0])
    if ref:
        sec = ax.secondary_yaxis("right", functions=(lambda y: 100 * y / ref, lambda p: p * ref / 100))
        sec.set_ylabel(f"% of {CEILING_LABELS.get(pct_of or ops[0], pct_of)}")


def contender_labels(rows: pd.DataFrame) -> pd.Series:
    """``backend (codec, shuffle)`` per row, so a legend never hides which codec a number used."""
    codec = rows["codec"] if "codec" in rows else pd.Series(None, index=rows.index, dtype=object)
    return pd.Series([f"{b} ({c if isinstance(c, str) else 'none'}, {shuffle_of(c)})" for b, c in
                      zip(rows["backend"], codec, strict=True)], index=rows.index)


def ceiling_bars(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[rows["backend"] == "ceiling"]
    if rows.empty:
        return empty_figure("ceiling")
    fig, ax = plt.subplots(figsize=(7, 3))
    sns.barplot(data=rows, y="operation", x="gbps", estimator="median", **CI95, ax=ax, color="0.6")
    ax.set(xlabel=f"GB/s ({WHISKERS})", ylabel="", title="This machine's ceiling")
    fig.tight_layout()
    return fig


def write_gbps_vs_size(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[(rows["operation"] == "total") & (rows.get("test") == "write")] if "test" in rows else rows.iloc[0:0]
    if rows.empty:
        return empty_figure("write test")
    fsync_values = rows["fsync_included"].fillna(False).astype(bool)
    fsync = bool(fsync_values.any())
    rows = rows.assign(MB=rows["nbytes"] / 1e6, contender=contender_labels(rows),
                       fsync=fsync_values.map({True: "fsync included", False: "no fsync"}))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    style = "fsync" if rows["fsync"].nunique() > 1 else None
    sns.lineplot(data=rows, x="MB", y="gbps", estimator="median", **CI95, hue="contender", style=style, marker="o",
                 ax=ax)
    add_ceiling(ax, df, ("write_fsync", "write_nofsync") if fsync else ("write_nofsync",))
    log_axis(ax)
    what = "fsync included" if fsync_values.all() else ("no fsync" if not fsync else "fsync: see line style")
    ax.set(xlabel="bytes written (MB, log)", ylabel=f"GB/s ({WHISKERS})",
           title=f"Write test: a new store per size ({what})")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def median_bars(df: pd.DataFrame, operation: str = "total", test: str = "write") -> plt.Figure:
    """Median GB/s per contender (labelled with its codec) at the largest size every backend finished."""
    rows = ok_rows(df)
    rows = rows[(rows["operation"] == operation) & (rows.get("test") == test)] if "test" in rows else rows.iloc[0:0]
    rows = rows[rows["backend"] != "ceiling"]
    if rows.empty:
        return empty_figure(f"{test} {operation}")
    size = common_size(rows)
    rows = rows[rows["nbytes"] == (size if size is not None else rows["nbytes"].max())]
    rows = rows.assign(contender=contender_labels(rows))
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.45 * rows["contender"].nunique()))
    order = rows.groupby("contender")["gbps"].median().sort_values(ascending=False).index
    sns.barplot(data=rows, y="contender", x="gbps", order=order, estimator="median", **CI95, ax=ax)
    where = f"{rows['nbytes'].iloc[0] / 1e6:.3g} MB" + ("" if size is not None else " (largest; not shared by all)")
    ax.set(xlabel=f"GB/s ({WHISKERS}; n = iterations)", ylabel="",
           title=f"Median {test} bandwidth at {where}\ncompare only bars of the same codec")
    fig.tight_layout()
    return fig


def append_gbps_vs_step(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[rows["operation"] == "append_step"]
    if rows.empty:
        return empty_figure("append test")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    rows = rows.assign(contender=contender_labels(rows))
    sns.lineplot(data=rows, x="step", y="gbps", hue="contender", marker="o", estimator="median", **CI95, ax=ax)
    add_ceiling(ax, df, ("write_nofsync",))
    ax.set(xlabel="append step", ylabel=f"GB/s ({WHISKERS})", title="Append test: one store, frames appended")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def frame_latency(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[rows["operation"] == "append_frame"]
    if rows.empty:
        return empty_figure("append frames")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sns.ecdfplot(data=rows.assign(ms=rows["elapsed_s"] * 1e3), x="ms", hue="backend", ax=ax)
    log_axis(ax)
    ax.set(xlabel="per-frame append latency (ms, log)", ylabel="fraction of frames",
           title="Per-frame latency distribution")
    fig.tight_layout()
    return fig


def read_times(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    ops = ("read_cold", "read_warm", "read_region_cold")
    rows = rows[rows["operation"].isin(ops) & (rows.get("test") == "read")] if "test" in rows else rows.iloc[0:0]
    if rows.empty:
        return empty_figure("read test")
    rows = rows.assign(label=rows["operation"] + rows.get("cutout_kind", pd.Series("", index=rows.index)).map(
        lambda k: f" ({k})" if isinstance(k, str) and k else ""))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    rows = rows.assign(contender=contender_labels(rows))
    sns.barplot(data=rows, x="elapsed_s", y="label", hue="contender", estimator="median", **CI95, ax=ax)
    log_axis(ax)
    ax.set(xlabel=f"seconds (log; {WHISKERS})", ylabel="",
           title="Full reads (cold / warm) and cutouts (cold, the same positions for every writer)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def sharding_grid(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[rows.get("test") == "sharding"] if "test" in rows else rows.iloc[0:0]
    if rows.empty:
        return empty_figure("sharding sweep")
    rows = label_layouts(rows)
    metrics = [("total", "elapsed_s", "write (s)"), ("read_cold", "elapsed_s", "cold read (s)"),
               ("read_region_cold", "elapsed_s", "cold cutout (s)"), ("total", "bytes_on_disk", "MB on disk"),
               ("total", "inodes", "inodes")]
    fig, grid = plt.subplots(2, 3, figsize=(14, 2 + 0.9 * rows["layout"].nunique()))
    axes = grid.ravel()
    axes[-1].set_axis_off()
    for ax, (op, col, label) in zip(axes, metrics, strict=False):
        part = rows[rows["operation"] == op]
        if col == "bytes_on_disk":
            part = part.assign(bytes_on_disk=part[col] / 1e6)
        sns.barplot(data=part, x=col, y="layout", hue="backend", estimator="median", **CI95, ax=ax)
        ax.set(xlabel=label, ylabel="")
        if (part[col] > 0).any():
            log_axis(ax)
        if ax.get_legend():
            handles, labels = ax.get_legend_handles_labels()
            ax.get_legend().remove()
    axes[-1].legend(handles, labels, loc="center", title="backend")
    fig.suptitle(f"Sharding sweep: inner chunk x metric (log scales; {WHISKERS}; cutouts at the same positions "
                 "in every layout)")
    fig.tight_layout()
    return fig


def memory_and_threads(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[rows["operation"].isin(["total", "append_total"]) & rows["memory_ratio"].notna()]
    if rows.empty:
        return empty_figure("memory")
    rows = rows.assign(kind=rows["operation"].map({"total": "write", "append_total": "append"}))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 0.8 + 0.45 * rows["backend"].nunique()), sharey=True)
    sns.barplot(data=rows, x="memory_ratio", y="backend", hue="kind", estimator="median", **CI95, ax=a)
    a.set(xlabel=f"peak RSS growth / bytes written ({WHISKERS})", ylabel="",
          title="Peak-memory ratio (seed 000's 'N:1')")
    sns.barplot(data=rows, x="threads_max", y="backend", hue="kind", estimator="max", errorbar=None, ax=b)
    b.set(xlabel="threads (max seen)", title="Threads while writing")
    fig.tight_layout()
    return fig
