"""The parallel-writes chapter: how fast do W workers fill one Zarr array together, and when is it safe?

Per (backend, alignment, W): the aggregate GB/s (the array's bytes over one wall-clock region from the
first write submitted to the last finished, with the store's syncfs when fsync is on), its median and
order-statistic interval over iterations; the per-worker GB/s (each worker's own write of its slab); and
the verification of the whole array (slabs that came back wrong). A write that failed verification is
never ranked: it is fast because it lost data. Where the array was also written through S3 (the server named
with its version in the panel's title), each store is its own series: there a write ends when every object is
acknowledged (no fsync).
"""

from __future__ import annotations

import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.stats import format_point, summarize
from benchmarks_lib.chapters import tables
from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.chapters.common import (
    answer_first,
    error_warning,
    no_answer,
    ok_rows,
    problems,
    run_header,
    s3_servers,
    with_ceiling_fraction,
    write_ceiling_op,
)
from benchmarks_lib.chapters.flags import point_flags
from benchmarks_lib.chapters.style import (
    CI95,
    draw_ceilings,
    empty_figure,
    legend_under_figure,
    median_table,
    sns,
    subplots,
    too_few,
    whiskers,
)
from benchmarks_lib.rules.answers import answer as question_answer
from benchmarks_lib.rules.ceilings import ceiling_gbps
from benchmarks_lib.rules.ranking import countable, rank_samples
from benchmarks_lib.rules.words import number, verdict_line, verdict_text

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
    store = rows["store"].fillna("file") if "store" in rows else pd.Series("file", index=rows.index)
    return rows.assign(workers=rows["workers"].astype(int), store=store,
                       series=rows["backend"] + " / " + rows["alignment"])


ALIGNMENTS = ("chunk", "shard", "unaligned")
STORE_TITLES = {"file": "to files", "s3": "through S3"}


def store_title(store: str, rows: pd.DataFrame) -> str:
    """A panel's title: ``to files``, or ``through S3`` with the server(s) and version(s) its rows went to."""
    servers = s3_servers(rows) if store == "s3" else []
    return STORE_TITLES.get(store, store) + (f"\n({'; '.join(servers)})" if servers else "")


def _panels(rows: pd.DataFrame, title: str):
    """A figure with one panel per store (files, S3), sharing the series' colours: (fig, [(ax, store rows)])."""
    stores = [s for s in ("file", "s3") if s in set(rows["store"])] or sorted(set(rows["store"]))
    fig, axes = subplots(1, len(stores), figsize=(7.2, 4.2), squeeze=False, sharey=True)
    fig.suptitle(title)
    return fig, [(ax, rows[rows["store"] == store], store) for ax, store in zip(axes[0], stores, strict=True)]


def _workers_label(workers: float) -> str:
    return f"W={workers:g}"


def _one_legend(panels: list) -> None:
    """One legend under the panels, with every panel's entries once (the ceiling and the cores too); lays the
    figure out."""
    legend_under_figure(panels[0][0].figure, [ax for ax, _, _ in panels])


def aggregate(df: pd.DataFrame):
    """Aggregate GB/s vs workers, one line per backend and alignment (one panel per store: files, S3), the
    machine's write ceiling dashed on the files' panel."""
    rows = _rows(df)
    if rows.empty:
        return empty_figure("parallel writes")
    numbers = median_table(rows, "workers", "gbps", ["store", "series"], _workers_label, "aggregate GB/s")
    if (few := too_few(rows, "workers", "Aggregate GB/s vs workers", "worker count", numbers)) is not None:
        return few
    order = sorted(rows["series"].unique())
    ceiling = ceiling_gbps(df)
    cores = rows["cores"].dropna().iloc[0] if "cores" in rows and rows["cores"].notna().any() else None
    fig, panels = _panels(rows, "All workers together: the array's bytes over the wall time")
    for ax, sub, store in panels:
        sns.lineplot(data=sub, estimator="median", **CI95, x="workers", y="gbps", hue="series", hue_order=order,
                     style="alignment", style_order=[a for a in ALIGNMENTS if a in set(rows["alignment"])],
                     marker="o", ax=ax)
        if store == "file":
            draw_ceilings(ax, ceiling, (write_ceiling_op(sub),))
        if cores:
            ax.axvline(cores, color="0.6", lw=1, ls=":", label=f"{int(cores)} usable cores")
        ax.set_xticks(sorted(rows["workers"].unique()))
        ax.set(xlabel="workers W (Dask processes)",
               ylabel=f"aggregate GB/s ({whiskers(rows, ['store', 'series', 'workers'], 'gbps')})"
               if ax is panels[0][0] else "",
               title=store_title(store, sub))
    _one_legend(panels)
    return fig


def per_worker(df: pd.DataFrame):
    """Median per-worker GB/s (each worker's own write of its slab) vs workers, one panel per store."""
    rows = _rows(df)
    if rows.empty or "worker_gbps_median" not in rows:
        return empty_figure("per-worker GB/s")
    numbers = median_table(rows, "workers", "worker_gbps_median", ["store", "series"], _workers_label,
                           "GB/s of one worker")
    if (few := too_few(rows, "workers", "Per-worker GB/s", "worker count", numbers)) is not None:
        return few
    order = sorted(rows["series"].unique())
    fig, panels = _panels(rows, "Each worker alone: its slab's bytes over its own write time")
    for ax, sub, store in panels:
        sns.lineplot(data=sub, estimator="median", **CI95, x="workers", y="worker_gbps_median", hue="series",
                     hue_order=order, marker="o", ax=ax)
        ax.set_xticks(sorted(rows["workers"].unique()))
        label = f"GB/s of one worker ({whiskers(rows, ['store', 'series', 'workers'], 'worker_gbps_median')})"
        ax.set(xlabel="workers W", ylabel=label if ax is panels[0][0] else "", title=store_title(store, sub))
    _one_legend(panels)
    return fig


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (backend, store, alignment, workers): aggregate GB/s, per-worker GB/s, S3 requests (where
    written through S3), verification."""
    rows = _rows(df)
    if rows.empty:
        return pd.DataFrame(columns=["backend", "store", "alignment", "workers", "aggregate GB/s", "per-worker GB/s",
                                     "verified", "n"])
    points = summarize(rows, ["backend", "store", "alignment", "workers"], "gbps")
    out = []
    for p in points.itertuples(index=False):
        part = rows[(rows["backend"] == p.backend) & (rows["store"] == p.store) & (rows["alignment"] == p.alignment)
                    & (rows["workers"] == p.workers)]
        wrong = int(part["slabs_wrong"].max()) if "slabs_wrong" in part else 0
        requests = part["s3_requests"].median() if "s3_requests" in part and part["s3_requests"].notna().any() \
            else None
        out.append({"backend": p.backend, "store": p.store,
                    "alignment": f"{p.alignment} ({SHORT.get(p.alignment, '')})",
                    "workers": p.workers, "aggregate GB/s": format_point(p._asdict()),
                    "per-worker GB/s": f"{part['worker_gbps_median'].median():.3g}",
                    "S3 requests": "-" if requests is None else f"{requests:.0f}",
                    "verified": "yes" if part["verified"].all() else
                    f"NO: {wrong} of {int(part['slabs'].max())} slabs wrong", "n": p.n})
    return tables.table(pd.DataFrame(out), {"S3 requests": "written to files, not through S3"})


def conclusion(df: pd.DataFrame) -> str:
    """Markdown: per backend, the safe alignment's aggregate at 1 and at the most workers, and what the unsafe
    alignment did to the data. It opens with the chapter's answer (``answer``)."""
    return answer_first(answer(df), _findings(df))


def _findings(df: pd.DataFrame) -> str:
    rows = _rows(df)
    if rows.empty:
        return "No parallel-write measurements in this run."
    cores = int(rows["cores"].dropna().iloc[0]) if rows["cores"].notna().any() else None
    lines = error_warning(df)
    several = rows["store"].nunique() > 1
    for (backend, store), b in rows.groupby(["backend", "store"]):
        for alignment, a in b.groupby("alignment"):
            med = a.groupby("workers")["gbps"].median()
            verdict = ("every array verified" + (" (its writes to shared chunks were not lost: the library guards "
                                                 "them, or this was luck; see the alignment)"
                                                 if alignment == "unaligned" and a["workers"].max() > 1 else "")
                       if a["verified"].all() else
                       f"**{int((~a['verified'].astype(bool)).sum())} of {len(a)} arrays failed verification** "
                       f"(up to {int(a['slabs_wrong'].max())} slabs wrong): concurrent writers lost each other's data")
            where = " through S3" if several and store == "s3" else " to files" if several else ""
            lines.append(f"- **{md(backend)}**{where}, {md(alignment)} ({SAFE.get(alignment, '')}): "
                         f"{med.iloc[0]:.3g} GB/s "
                         f"with {med.index[0]} worker(s), {med.iloc[-1]:.3g} GB/s with {med.index[-1]} "
                         f"({med.iloc[-1] / med.iloc[0]:.2f}x); {verdict}.")
    lines += ["", f"This machine has {cores} usable cores: beyond {cores} workers they share cores, so the aggregate "
              "flattens (or drops) there; a cluster of several hosts on a shared filesystem or object store moves "
              "that limit to the storage." if cores else ""]
    return "\n".join(lines)


def answer(df: pd.DataFrame) -> str:
    """Markdown, one sentence: per backend, the safe alignment and workers chosen by the ranking rule
    (``_choice``) over verified arrays, and how many unaligned arrays lost data."""
    rows = _rows(with_ceiling_fraction(df))
    safe = rows[rows["alignment"] != "unaligned"] if len(rows) else rows
    if safe.empty:
        return no_answer("parallel-write measurements")
    parts = []
    several = safe["store"].nunique() > 1
    for (backend, store), b in safe.groupby(["backend", "store"]):
        where = (" through S3" if store == "s3" else " to files") if several else ""
        parts.append(f"{md(backend)}{where} {_choice(countable(b))}")
    lost = question_answer("lost-data", df)  # the verdict box's answer, in its words
    return ("Writing one array from several workers, safe layouts, verified arrays only: " + "; ".join(parts) + "."
            + (f"\n\n{verdict_line(lost)}." if lost.measured else ""))


def _choice(b: pd.DataFrame) -> str:
    """The workers to use, by the ranking rule over (alignment, W): the leader when it is separable from every
    other; else the fewest workers within 5% of it (more workers buy nothing the data can show)."""
    groups = {(str(a), int(w)): p for (a, w), p in b.groupby(["alignment", "workers"])}
    setting = {f"{w} worker{'s' if w != 1 else ''} ({a}-aligned)": (a, w) for a, w in groups}
    r = rank_samples({n: groups[k]["gbps"] for n, k in setting.items()}, True,
                     rows={n: groups[k] for n, k in setting.items()})
    if not r.entries:
        return "(no verified array)"
    near = set(r.decision.within_margin) if r.decision is not None else {r.leader.name}
    pick = min([e for e in r.entries if e.name in near] or [r.leader], key=lambda e: setting[e.name][1])
    alignment, workers = setting[pick.name]
    one = groups.get((alignment, 1))
    gain = f", {pick.median / one['gbps'].median():.2f}x one worker" if one is not None and workers != 1 else ""
    why = verdict_text(r, "settings")
    if pick is not r.leader:
        why = f"the fewest workers within 5% of the fastest; {why}"
    flags = "".join(f"; {f}" for f in point_flags(pick.rows))
    count = f"{workers} worker{'s' if workers != 1 else ''}"
    return (f"**{number(pick.median)} GB/s** with {count} ({md(alignment)}-aligned{gain}; "
            f"{why}{flags})")


#: the chapter's standard figures, by title (the explorer draws them for any run)
FIGURES = {"Aggregate GB/s vs workers": aggregate, "Per-worker GB/s vs workers": per_worker}

__all__ = ["CHAPTER", "FIGURES", "aggregate", "answer", "conclusion", "header", "per_worker", "problems", "summary"]

CHAPTER = Chapter("parallel", suite="parallel", answer=answer, summary=summary,
                  conclusion=conclusion, problems=problems, figures=FIGURES, order=50)
