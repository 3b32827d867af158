"""The writer chapter: which writer should store my arrays (seeds 000, 001, 003).

Every bar or point is the median over iterations and every whisker its order-statistic
interval (seeded, so a figure is reproducible), as the axis labels say. Backends are
labelled with the codec they used. Throughput axes carry the machine's ceiling from the same
run as dashed lines and a right-hand axis in % of that ceiling. The summary and the
conclusion compare writers only like for like (same codec, bytes, fsync policy).
"""

from __future__ import annotations

import pandas as pd

from benchmarks_lib.base.stats import format_values
from benchmarks_lib.chapters import tables
from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.chapters.common import (
    first_line,
    layout_note,
    ok_rows,
    problems,
    run_header,
    shuffle_of,
    threads_of,
    with_ceiling_fraction,
)
from benchmarks_lib.chapters.flags import ceiling_mark
from benchmarks_lib.chapters.style import (
    CI95,
    draw_ceilings,
    empty_figure,
    legend_outside,
    log_axis,
    median_table,
    plt,
    sns,
    subplots,
    too_few,
    whiskers,
)
from benchmarks_lib.chapters.writers.text import answer, conclusion, label_layouts, verified_text
from benchmarks_lib.rules.ceilings import ceiling_gbps
from benchmarks_lib.rules.names import backend_name, operation_name

TIMES = ("write: create + write + finalize of a new store; append: every frame's call; reads: open to the last "
         "byte, cold after a checked page-cache eviction")


def header(result) -> str:
    """The run header of this chapter (markdown)."""
    return run_header(result, TIMES)


def backend_labels(rows: pd.DataFrame) -> pd.Series:
    """``backend (codec, shuffle)`` per row, so a legend never hides which codec a number used."""
    codec = rows["codec"] if "codec" in rows else pd.Series(None, index=rows.index, dtype=object)
    return pd.Series([f"{b} ({c if isinstance(c, str) else 'none'}, {shuffle_of(c)})" for b, c in
                      zip(rows["backend"], codec, strict=True)], index=rows.index)


def ceiling_bars(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[rows["backend"] == "ceiling"]
    if rows.empty:
        return empty_figure("ceiling")
    fig, ax = subplots(figsize=(7, 3))
    sns.barplot(data=rows, y="operation", x="gbps", estimator="median", **CI95, ax=ax, color="0.6")
    ax.set(xlabel=f"GB/s ({whiskers(rows, 'operation', 'gbps')})", ylabel="", title="This machine's ceiling")
    fig.tight_layout()
    return fig


def write_gbps_vs_size(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[(rows["operation"] == "total") & (rows.get("test") == "write")] if "test" in rows else rows.iloc[0:0]
    if rows.empty:
        return empty_figure("write test")
    fsync_values = rows["fsync_included"].fillna(False).astype(bool)
    fsync = bool(fsync_values.any())
    rows = rows.assign(MB=rows["nbytes"] / 1e6, backend=backend_labels(rows),
                       fsync=fsync_values.map({True: "fsync included", False: "no fsync"}))
    series = ["backend", "fsync"] if rows["fsync"].nunique() > 1 else "backend"  # never pooled across policies
    numbers = median_table(rows, "MB", "gbps", series, lambda mb: f"{mb:.3g} MB", "GB/s")
    if (few := too_few(rows, "MB", "Write GB/s vs size", "size", numbers)) is not None:
        return few
    fig, ax = subplots(figsize=(7.2, 4.5 + 0.2 * rows["backend"].nunique()))
    style = "fsync" if rows["fsync"].nunique() > 1 else None
    sns.lineplot(data=rows, x="MB", y="gbps", estimator="median", **CI95, hue="backend", style=style, marker="o",
                 ax=ax)
    ops = ("write_fsync", "write_nofsync") if fsync else ("write_nofsync",)
    draw_ceilings(ax, ceiling_gbps(df), ops, percent_of=ops[0])
    log_axis(ax)
    what = "fsync included" if fsync_values.all() else ("no fsync" if not fsync else "fsync: see line style")
    ax.set(xlabel="bytes written (MB, log)", ylabel=f"GB/s ({whiskers(rows, ['backend', 'MB', 'fsync'], 'gbps')})",
           title=f"Write test: a new store per size ({what})")
    legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def median_bars(df: pd.DataFrame, operation: str = "total", test: str = "write") -> plt.Figure:
    """Median GB/s per backend (labelled with its codec) at the largest size every backend finished."""
    rows = ok_rows(df)
    rows = rows[(rows["operation"] == operation) & (rows.get("test") == test)] if "test" in rows else rows.iloc[0:0]
    rows = rows[rows["backend"] != "ceiling"]
    if rows.empty:
        return empty_figure(f"{test} {operation}")
    size = common_size(rows)
    rows = rows[rows["nbytes"] == (size if size is not None else rows["nbytes"].max())]
    rows = rows.assign(backend=backend_labels(rows))
    fig, ax = subplots(figsize=(8, 0.5 + 0.45 * rows["backend"].nunique()))
    order = rows.groupby("backend")["gbps"].median().sort_values(ascending=False).index
    sns.barplot(data=rows, y="backend", x="gbps", order=order, estimator="median", **CI95, ax=ax)
    where = f"{rows['nbytes'].iloc[0] / 1e6:.3g} MB" + ("" if size is not None else " (largest; not shared by all)")
    ax.set(xlabel=f"GB/s ({whiskers(rows, 'backend', 'gbps')}; n = iterations)", ylabel="",
           title=f"Median {test} bandwidth at {where}\ncompare only bars of the same codec")
    fig.tight_layout()
    return fig


def append_gbps_vs_step(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[rows["operation"] == "append_step"]
    if rows.empty:
        return empty_figure("append test")
    rows = rows.assign(backend=backend_labels(rows))
    numbers = median_table(rows, "step", "gbps", "backend", lambda step: f"step {step:g}", "GB/s")
    if (few := too_few(rows, "step", "Append GB/s vs step", "append step", numbers)) is not None:
        return few
    fig, ax = subplots(figsize=(7.2, 4.5 + 0.2 * rows["backend"].nunique()))
    sns.lineplot(data=rows, x="step", y="gbps", hue="backend", marker="o", estimator="median", **CI95, ax=ax)
    draw_ceilings(ax, ceiling_gbps(df), ("write_nofsync",), percent_of="write_nofsync")
    ax.set(xlabel="append step", ylabel=f"GB/s ({whiskers(rows, ['backend', 'step'], 'gbps')})",
           title="Append test: one store, frames appended")
    legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def frame_latency(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[rows["operation"] == "append_frame"]
    if rows.empty:
        return empty_figure("append frames")
    fig, ax = subplots(figsize=(7.2, 4 + 0.2 * rows["backend"].nunique()))
    sns.ecdfplot(data=rows.assign(ms=rows["elapsed_s"] * 1e3), x="ms", hue="backend", ax=ax)
    log_axis(ax)
    ax.set(xlabel="per-frame append latency (ms, log)", ylabel="fraction of frames",
           title="Per-frame latency distribution")
    legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def read_times(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    ops = ("read_cold", "read_warm", "read_region_cold")
    rows = rows[rows["operation"].isin(ops) & (rows.get("test") == "read")] if "test" in rows else rows.iloc[0:0]
    if rows.empty:
        return empty_figure("read test")
    kind = rows.get("cutout_kind", pd.Series("", index=rows.index)).map(
        lambda k: f" ({k})" if isinstance(k, str) and k else "")
    rows = rows.assign(label=rows["operation"].map(operation_name) + kind)  # in words: "cold cutout (aligned)"
    rows = rows.assign(backend=backend_labels(rows))
    fig, ax = subplots(figsize=(7.2, 1.5 + 0.22 * rows["label"].nunique() * rows["backend"].nunique()
                                + 0.25 * rows["backend"].nunique()))
    sns.barplot(data=rows, x="elapsed_s", y="label", hue="backend", estimator="median", **CI95, ax=ax)
    log_axis(ax)
    ax.set(xlabel=f"seconds (log; {whiskers(rows, ['backend', 'label'], 'elapsed_s')})", ylabel="",
           title="Full reads (cold / warm) and cutouts\n(cold, the same positions for every writer)")
    legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def sharding_grid(df: pd.DataFrame) -> plt.Figure:
    rows = ok_rows(df)
    rows = rows[rows.get("test") == "sharding"] if "test" in rows else rows.iloc[0:0]
    if rows.empty:
        return empty_figure("sharding sweep")
    rows = label_layouts(rows)
    if "dataset" in rows and rows["dataset"].nunique() > 1:  # one bar per dataset and layout: never pooled
        rows = rows.assign(layout=rows["dataset"].astype(str) + ": " + rows["layout"].astype(str))
    metrics = [("total", "elapsed_s", "write (s)"), ("read_cold", "elapsed_s", "cold read (s)"),
               ("read_region_cold", "elapsed_s", "cold cutout (s)"), ("total", "bytes_on_disk", "MB on disk"),
               ("total", "inodes", "inodes")]
    per_panel = 0.6 + 0.12 * rows["layout"].nunique() * max(1, rows["backend"].nunique())
    fig, grid = subplots(3, 2, figsize=(7.2, 3 * per_panel + 1), sharey=True)
    axes = grid.ravel()
    axes[-1].set_axis_off()
    handles, labels = [], []
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
    axes[-1].legend(handles, labels, loc="center", title="backend", frameon=False)
    fig.suptitle(f"Sharding sweep: layout x metric (log scales; "
                 f"{whiskers(rows, ['backend', 'layout', 'operation'], 'elapsed_s')};\n"
                 "cutouts at the same positions in every layout)")
    fig.tight_layout()
    return fig


def memory_and_threads(df: pd.DataFrame) -> plt.Figure:
    """The rows the summary's "peak-memory ratio" rests on (the write test at the size every writer finished, and
    the append test), so that the figure and the table say the same: not the sharding sweep's stores."""
    rows = ok_rows(df)
    rows = rows[rows["operation"].isin(["total", "append_total"]) & rows["memory_ratio"].notna()]
    if "test" in rows:
        writes = rows[(rows["test"] == "write") & (rows["operation"] == "total")]
        common = common_size(writes[writes["backend"] != "ceiling"])
        at_size = writes if common is None else writes[writes["nbytes"] == common]
        rows = pd.concat([at_size, rows[(rows["test"] == "append") & (rows["operation"] == "append_total")]])
    if rows.empty:
        return empty_figure("memory")
    rows = rows.assign(kind=rows["operation"].map({"total": "write", "append_total": "append"}))
    fig, (a, b) = subplots(1, 2, figsize=(7.2, 1.4 + 0.45 * rows["backend"].nunique()), sharey=True)
    sns.barplot(data=rows, x="memory_ratio", y="backend", hue="kind", estimator="median", **CI95, ax=a)
    a.set(xlabel="peak RSS growth / bytes written", ylabel="", title="Peak-memory ratio")
    sns.barplot(data=rows, x="threads_max", y="backend", hue="kind", estimator="max", errorbar=None, ax=b)
    b.set(xlabel="threads (max seen)", title="Threads while writing")
    fig.suptitle(f"Memory and threads ({whiskers(rows, ['backend', 'kind'], 'memory_ratio')})")
    if a.get_legend():
        a.get_legend().remove()
    legend_outside(b, below=True)
    fig.tight_layout()
    return fig


# -- the table and the conclusion ---------------------------------------------------------


def _fmt(value: float | None, fmt: str) -> str:
    return "-" if value is None or pd.isna(value) else fmt.format(value)


def _ci(values: pd.Series, fmt: str = "{:.3g}", scale: float = 1.0) -> str:
    """Median [95% CI] (n=...) of ``values`` (times ``scale``), or ``-``."""
    return format_values(values.dropna().astype("float64"), fmt, scale)



def common_size(w: pd.DataFrame) -> float | None:
    """The largest ``nbytes`` every backend's write test finished (None when they share none)."""
    sizes = [set(part["nbytes"].dropna()) for _, part in w.groupby("backend")]
    common = set.intersection(*sizes) if sizes else set()
    return max(common) if common else None


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Backends as columns: codec, shuffle, threads, fsync, then median [95% CI] (n) per metric.

    Times and bandwidths are those of the largest size that every backend finished (stated in
    the ``size`` row), so the columns compare the same bytes.
    """
    df = with_ceiling_fraction(df)
    rows = ok_rows(df)
    rows = rows[rows["suite"] == "writers"] if "suite" in rows else rows
    backends = [b for b in dict.fromkeys(df["backend"]) if b != "ceiling"]
    writes = rows[(rows["operation"] == "total") & (rows.get("test") == "write")] if "test" in rows else rows.iloc[0:0]
    common = common_size(writes[writes["backend"] != "ceiling"])
    table: dict[str, dict[str, str]] = {}
    for backend in backends:
        b = rows[rows["backend"] == backend]
        col: dict[str, str] = {}
        w = b[b.get("test", pd.Series(dtype=str)) == "write"] if "test" in b else b.iloc[0:0]
        if not w.empty:
            totals = w[w["operation"] == "total"]
            size = common if common is not None else totals["nbytes"].max()
            at = w[w["nbytes"] == size]
            total = at[at["operation"] == "total"]
            codecs = sorted(set(w["codec"].dropna()))
            col["codec"] = ", ".join(codecs) or "-"
            col["shuffle"] = ", ".join(sorted({shuffle_of(c) for c in codecs})) or "-"
            col["threads"] = threads_of(total)
            col["fsync in time"] = "yes (writer's own)" if total.get("writer_fsyncs", pd.Series(dtype=bool)).any() \
                else ("yes" if total["fsync_included"].fillna(False).astype(bool).any() else "no")
            col["note"] = layout_note(backend) or ("baseline (uncompressed)" if backend == "raw" else "")
            col["size (MB)"] = _fmt(size / 1e6 if size is not None else None, "{:.1f}") + \
                ("" if common is not None else " (not shared by all)")
            for phase in ("create", "write", "finalize", "fsync"):  # microseconds to seconds: in ms, never 4.85e-05
                col[f"{phase} (ms, median [95% CI])"] = _ci(at[at["operation"] == phase]["elapsed_s"], "{:.3g}", 1e3)
            frames = total["shape"].map(lambda s: s[0]) if "shape" in total else pd.Series(dtype=float)
            col["throughput (fps, median [95% CI])"] = _ci(frames / total["elapsed_s"], "{:.1f}")
            col["bandwidth (GB/s, median [95% CI])"] = _ci(total["gbps"])
            col["% of raw write ceiling (median)"] = (_fmt(total["pct_of_ceiling"].median(), "{:.0f}%")
                                                      + ceiling_mark(total))
            col["peak-memory ratio (median)"] = _fmt(total["memory_ratio"].median(), "{:.2f}")
            col["MB on disk"] = _fmt(total["bytes_on_disk"].median() / 1e6, "{:.1f}")
            col["inodes"] = _fmt(total["inodes"].median(), "{:.0f}")
            col["verified"] = verified_text(totals)
        a = b[b["operation"] == "append_total"]
        if not a.empty:
            col["append (fps, median)"] = _fmt(a["fps"].median(), "{:.0f}")
            col["append frame p99 (ms, median)"] = _fmt(a["frame_p99_s"].median() * 1e3, "{:.2f}")
            col["append (GB/s, median [95% CI])"] = _ci(a["gbps"]) + ceiling_mark(a)
        r = b[(b["operation"] == "read_cold") & (b.get("test") == "read")] if "test" in b else b.iloc[0:0]
        if not r.empty:
            col["cold read (GB/s, median [95% CI])"] = _ci(r["gbps"])
            col["% of raw cold read (median)"] = _fmt(r["pct_of_ceiling"].median(), "{:.0f}%") + ceiling_mark(r)
        rw = b[(b["operation"] == "read_warm") & (b.get("test") == "read")] if "test" in b else b.iloc[0:0]
        if not rw.empty:
            col["warm read (GB/s, median [95% CI])"] = _ci(rw["gbps"]) + ceiling_mark(rw)
        c = b[(b["operation"] == "read_region_cold") & (b.get("test") == "read")] if "test" in b else b.iloc[0:0]
        sides = sorted(set(c["cutout"].dropna())) if "cutout" in c else []
        if len(sides) > 1:  # the cutouts of each side apart (32 and 64 in quick and standard), never pooled
            for side in sides:
                col[f"cutout {side:g} a side, cold (ms, median [95% CI])"] = \
                    _ci(c[c["cutout"] == side]["elapsed_s"], "{:.3g}", 1e3)
        elif not c.empty:
            col["cutout, cold (ms, median [95% CI])"] = _ci(c["elapsed_s"], "{:.3g}", 1e3)
        table[backend] = col
    skipped = df[(df["status"] == "skip") & (df["backend"] != "ceiling")]
    for backend in backends:
        if not table[backend] and backend in set(skipped["backend"]):
            reason = str(skipped[skipped["backend"] == backend]["reason"].iloc[0])
            table[backend] = {"status": f"skipped: {first_line(reason, limit=10**6)}"}
    out = pd.DataFrame(table).astype(object)
    out.index.name = "metric"
    return tables.table(out, {"status": "measured", **dict.fromkeys(out.columns, "not measured for this writer")})


#: the front page's summary picture: (test, operation, what a reader calls it); a write at the size every writer
#: finished, cold reads and appends as measured
SUMMARY_TESTS = (("write", "total", "write"), ("read", "read_cold", "cold full read"),
                 ("append", "append_total", "append"))
#: the most writers it draws (a run may name any number: each is a row)
SUMMARY_MOST = 30


def ceiling_summary(df: pd.DataFrame) -> plt.Figure | None:
    """The front page's picture: each writer's median throughput in each test (``SUMMARY_TESTS``) as a share of
    this machine's own ceiling in the same run (raw I/O of the same bytes, ``with_ceiling_fraction``), one row per
    writer, one mark per test; None where no test has a share. A median, not a ranking: the answers say which
    differences the rule separated."""
    rows = ok_rows(with_ceiling_fraction(df))
    if rows.empty or "test" not in rows:
        return None
    rows = rows[(rows["backend"] != "ceiling") & rows["pct_of_ceiling"].notna()]
    common = common_size(rows[(rows["operation"] == "total") & (rows["test"] == "write")])
    parts = []
    for test, operation, label in SUMMARY_TESTS:
        part = rows[(rows["test"] == test) & (rows["operation"] == operation)]
        if operation == "total" and common is not None:
            part = part[part["nbytes"] == common]
        if not part.empty:
            parts.append(part.groupby("backend", sort=False)["pct_of_ceiling"].agg(["median", "size"])
                         .assign(test=label))
    if not parts:
        return None
    table = pd.concat(parts).reset_index()
    table = table[table["median"].abs() < float("inf")]  # a record's impossible time (0 s, inf GB/s) draws nothing
    if table.empty:
        return None
    order = (table[table["test"] == table["test"].iloc[0]].sort_values("median", ascending=False)["backend"].tolist()
             + [b for b in dict.fromkeys(table["backend"])])
    order = list(dict.fromkeys(order))
    shown = f" ({SUMMARY_MOST} of {len(order)} writers)" if len(order) > SUMMARY_MOST else ""
    order = order[:SUMMARY_MOST]
    table = table[table["backend"].isin(order)]
    names = {b: backend_name(b) + (" (baseline)" if b == "raw" else "") for b in order}
    fig, ax = subplots(figsize=(7.2, 1.4 + 0.32 * len(order)))
    for marker, (label, part) in zip("osD^v", table.groupby("test", sort=False), strict=False):
        ax.scatter(part["median"], [order.index(b) for b in part["backend"]], label=label, marker=marker, s=36,
                   zorder=3)
    ax.axvline(100, color="0.3", lw=1, ls="--", zorder=2)
    ax.set_yticks(range(len(order)), [names[b] for b in order])
    ax.invert_yaxis()
    ax.set_xlim(0, max(110.0, float(table["median"].max()) * 1.05))
    n = f"n={table['size'].min()}" if table["size"].min() == table["size"].max() else \
        f"n={table['size'].min()}-{table['size'].max()}"
    ax.set(xlabel=f"% of this machine's ceiling (raw I/O of the same bytes; median, {n})", ylabel="",
           title=f"Each writer against this machine's ceiling (dashed: 100%){shown}")
    legend_outside(ax)
    fig.tight_layout()
    return fig


__all__ = ["CHAPTER", "SUMMARY_TESTS", "answer", "append_gbps_vs_step", "ceiling_bars", "ceiling_summary",
           "conclusion", "frame_latency", "header", "median_bars", "memory_and_threads", "problems", "read_times",
           "sharding_grid", "summary", "write_gbps_vs_size"]


#: the chapter's standard figures, by title (the explorer draws them for any run)
FIGURES = {
    "Ceiling of this machine": ceiling_bars,
    "Write GB/s vs size": write_gbps_vs_size,
    "Median write bandwidth": median_bars,
    "Append GB/s vs step": append_gbps_vs_step,
    "Frame latency": frame_latency,
    "Read times": read_times,
    "Sharding grid": sharding_grid,
    "Memory and threads": memory_and_threads,
}

CHAPTER = Chapter("writers", suite="writers", answer=answer, summary=summary,
                  conclusion=conclusion, problems=problems, figures=FIGURES, order=10)
