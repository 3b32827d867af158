"""The parallel-writes chapter: how fast do W workers fill one Zarr array together, and when is it safe?

Per (backend, alignment, W): the aggregate GB/s (the array's bytes over one wall-clock region from the
first write submitted to the last finished, with the store's syncfs when fsync is on), its median and
95% bootstrap interval over iterations; the per-worker GB/s (each worker's own write of its slab); and
the verification of the whole array (slabs that came back wrong). A write that failed verification is
never ranked: it is fast because it lost data.
"""

from __future__ import annotations

import pandas as pd

from ..stats import format_point, summarize
from .common import (
    ceiling_gbps,
    error_warning,
    no_answer,
    ok_rows,
    problems,
    run_header,
    with_ceiling_fraction,
    write_ceiling_op,
)
from .flags import point_flags
from .style import CI95, WHISKERS, draw_ceilings, empty_figure, legend_outside, sns, subplots

TIMES = ("write: from the W writes submitted to the last one finished (each worker opens the array and writes "
         "its own ranges, handed to it before the clock); the array's metadata is created before the clock")
SHORT = {"chunk": "safe", "shard": "safe", "unaligned": "shared chunks"}
SAFE = {"chunk": "safe: no two workers share a chunk", "shard": "safe: no two workers share a shard",
        "unaligned": "every chunk has two writers: safe only where the library guards its read-modify-write"}


def header(result) -> str:
    """The run header of this chapter (markdown)."""
    return run_header(result, TIMES)


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    rows = ok_rows(df)
    if "workers" not in rows:
        return rows.iloc[0:0]
    rows = rows[(rows["backend"] != "ceiling") & (rows["operation"] == "write") & rows["workers"].notna()]
    return rows.assign(workers=rows["workers"].astype(int), series=rows["backend"] + " / " + rows["alignment"])


def aggregate(df: pd.DataFrame):
    """Aggregate GB/s vs workers, one line per backend and alignment, the machine's write ceiling dashed."""
    rows = _rows(df)
    if rows.empty:
        return empty_figure("parallel writes")
    fig, ax = subplots(figsize=(8, 4.5))
    sns.lineplot(data=rows, x="workers", y="gbps", hue="series", style="alignment", estimator="median", **CI95,
                 marker="o", ax=ax)
    ceiling = ceiling_gbps(df)
    draw_ceilings(ax, ceiling, (write_ceiling_op(rows),))
    cores = rows["cores"].dropna().iloc[0] if "cores" in rows and rows["cores"].notna().any() else None
    if cores:
        ax.axvline(cores, color="0.6", lw=1, ls=":", label=f"{int(cores)} usable cores")
    ax.set_xticks(sorted(rows["workers"].unique()))
    ax.set(xlabel="workers W (one Dask worker process each, single-threaded)",
           ylabel=f"aggregate GB/s ({WHISKERS})", title="All workers together: the array's bytes over the wall time")
    legend_outside(ax)
    fig.tight_layout()
    return fig


def per_worker(df: pd.DataFrame):
    """Median per-worker GB/s (each worker's own write of its slab) vs workers."""
    rows = _rows(df)
    if rows.empty or "worker_gbps_median" not in rows:
        return empty_figure("per-worker GB/s")
    fig, ax = subplots(figsize=(8, 4.5))
    sns.lineplot(data=rows, x="workers", y="worker_gbps_median", hue="series", estimator="median", **CI95,
                 marker="o", ax=ax)
    ax.set_xticks(sorted(rows["workers"].unique()))
    ax.set(xlabel="workers W", ylabel=f"GB/s of one worker ({WHISKERS})",
           title="Each worker alone: its slab's bytes over its own write time")
    legend_outside(ax)
    fig.tight_layout()
    return fig


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (backend, alignment, workers): aggregate GB/s, per-worker GB/s, verification."""
    rows = _rows(df)
    if rows.empty:
        return pd.DataFrame(columns=["backend", "alignment", "workers", "aggregate GB/s", "per-worker GB/s",
                                     "verified", "n"])
    points = summarize(rows, ["backend", "alignment", "workers"], "gbps")
    out = []
    for p in points.itertuples(index=False):
        part = rows[(rows["backend"] == p.backend) & (rows["alignment"] == p.alignment)
                    & (rows["workers"] == p.workers)]
        wrong = int(part["slabs_wrong"].max()) if "slabs_wrong" in part else 0
        out.append({"backend": p.backend, "alignment": f"{p.alignment} ({SHORT.get(p.alignment, '')})",
                    "workers": p.workers, "aggregate GB/s": format_point(p._asdict()),
                    "per-worker GB/s": f"{part['worker_gbps_median'].median():.3g}",
                    "verified": "yes" if part["verified"].all() else
                    f"NO: {wrong} of {int(part['slabs'].max())} slabs wrong", "n": p.n})
    return pd.DataFrame(out)


def conclusion(df: pd.DataFrame) -> str:
    """Markdown: per backend, the safe alignment's aggregate at 1 and at the most workers, and what the unsafe
    alignment did to the data."""
    rows = _rows(df)
    if rows.empty:
        return "No parallel-write measurements in this run."
    cores = int(rows["cores"].dropna().iloc[0]) if rows["cores"].notna().any() else None
    lines = [*error_warning(df), "## Conclusion", ""]
    for backend, b in rows.groupby("backend"):
        for alignment, a in b.groupby("alignment"):
            med = a.groupby("workers")["gbps"].median()
            verdict = ("every array verified" + (" (its writes to shared chunks were not lost: the library guards "
                                                 "them, or this was luck; see the alignment)"
                                                 if alignment == "unaligned" and a["workers"].max() > 1 else "")
                       if a["verified"].all() else
                       f"**{int((~a['verified'].astype(bool)).sum())} of {len(a)} arrays failed verification** "
                       f"(up to {int(a['slabs_wrong'].max())} slabs wrong): concurrent writers lost each other's data")
            lines.append(f"- **{backend}**, {alignment} ({SAFE.get(alignment, '')}): {med.iloc[0]:.3g} GB/s with "
                         f"{med.index[0]} worker(s), {med.iloc[-1]:.3g} GB/s with {med.index[-1]} "
                         f"({med.iloc[-1] / med.iloc[0]:.2f}x); {verdict}.")
    lines += ["", f"This machine has {cores} usable cores: beyond {cores} workers they share cores, so the aggregate "
              "flattens (or drops) there; a cluster of several hosts on a shared filesystem or object store moves "
              "that limit to the storage." if cores else ""]
    return "\n".join(lines)


def answer(df: pd.DataFrame) -> str:
    """Markdown, one sentence: the safe alignment's best aggregate and at how many workers, per backend."""
    rows = _rows(with_ceiling_fraction(df))
    safe = rows[rows["alignment"] != "unaligned"] if len(rows) else rows
    if safe.empty:
        return no_answer("parallel-write measurements")
    parts = []
    for backend, b in safe.groupby("backend"):
        med = b.groupby(["alignment", "workers"])["gbps"].median()
        (alignment, workers), best = med.idxmax(), med.max()
        one = med.get((alignment, 1))
        gain = f", {best / one:.2f}x one worker" if one else ""
        parts.append(f"{backend} **{best:.3g} GB/s** with {workers} workers ({alignment}-aligned{gain}"
                     + "".join(f"; {f}" for f in point_flags(b[b["workers"] == workers])) + ")")
    unsafe = rows[rows["alignment"] == "unaligned"]
    lost = (f" Unaligned regions lost data in {int((~unsafe['verified'].astype(bool)).sum())} of {len(unsafe)} "
            "arrays." if len(unsafe) else "")
    return "Writing one array from several workers, fastest safe layout: " + "; ".join(parts) + "." + lost


#: the chapter's standard figures, by title (the explorer draws them for any run)
FIGURES = {"Aggregate GB/s vs workers": aggregate, "Per-worker GB/s vs workers": per_worker}

__all__ = ["FIGURES", "aggregate", "answer", "conclusion", "header", "per_worker", "problems", "summary"]
