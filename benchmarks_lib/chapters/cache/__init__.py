"""The cache/prefetch chapter: what TTreeCache, prefetching and HTTP (or S3) latency cost (seed 004).

Every function takes the run's records (other suites' rows, the ceiling's too, are ignored) and
returns a Figure, a DataFrame or markdown text.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks_lib.base.specs import format_bytes
from benchmarks_lib.base.stats import format_values
from benchmarks_lib.chapters import tables
from benchmarks_lib.chapters.cache.rows import prepare
from benchmarks_lib.chapters.cache.text import answer, conclusion
from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.chapters.common import MB, problems, run_header
from benchmarks_lib.chapters.server import server_cpu, server_lines, server_rows
from benchmarks_lib.chapters.style import (
    CI95,
    MIN_LINE_POINTS,
    empty_figure,
    legend_outside,
    legend_under_figure,
    log_axis,
    median_table,
    plain_log_ticks,
    plt,
    sns,
    subplots,
    too_few,
    whiskers,
)

TIMES = ("real and CPU time of a fresh process from opening the file (or store) to the last entry or cutout, "
         "the input evicted from the page cache first")


def header(result) -> str:
    """The run header of this chapter (markdown)."""
    return run_header(result, TIMES)


def _link_order(rows: pd.DataFrame) -> list[str]:
    links = rows[["link", "location", "latency_ms"]].drop_duplicates()
    links = links.assign(local=links["location"] == "local")
    links = links.sort_values(["local", "location", "latency_ms"], ascending=[False, True, True])
    return list(dict.fromkeys(links["link"]))


def _zarr_stores(rows: pd.DataFrame) -> pd.Series:
    """``client / layout``, with ``via S3`` or ``via HTTP`` where the Zarr reads took both ways."""
    label = rows["client"] + " / " + rows["layout"]
    if rows["location"].nunique() > 1:
        label = label + rows["location"].map({"s3": " via S3", "http": " via HTTP"}).fillna("")
    return label


def _config_order(rows: pd.DataFrame) -> list[str]:
    return list(rows.groupby("config")["elapsed_s"].median().sort_values().index)


def transactions(df: pd.DataFrame) -> plt.Figure:
    """Transactions per configuration (log): the client's own count and the server's requests
    and ranges, for ROOT and uproot; counts do not depend on latency, so the median is shown."""
    rows = prepare(df, ("root", "uproot"))
    if rows.empty:
        return empty_figure("transactions")
    parts = []
    for reader, label in (("root", "ROOT GetReadCalls"), ("uproot", "uproot requests")):
        r = rows[rows["reader"] == reader]
        if r.empty:
            continue
        local = r[r["location"] == "local"]
        remote = r[r["location"] == "http"]
        parts.append(local.assign(counter=f"{label} (local file)", value=local["transactions"]))
        parts.append(remote.assign(counter=f"{label} (http)", value=remote["transactions"]))
        for col, name in (("server_requests", "server: requests"), ("server_ranges", "server: byte ranges")):
            if col in remote:
                parts.append(remote.assign(counter=name, value=remote[col].astype("float64")))
    long = pd.concat(parts, ignore_index=True).dropna(subset=["value"])
    readers = [r for r in ("root", "uproot") if r in set(long["reader"])]
    heights = [0.5 * long[long["reader"] == r]["config"].nunique() + 1.5 for r in readers]
    fig, axes = subplots(len(readers), 1, figsize=(7.2, sum(heights) + 0.6 * len(readers)), squeeze=False,
                         gridspec_kw={"height_ratios": heights})
    for ax, reader in zip(axes[:, 0], readers, strict=True):
        sub = long[long["reader"] == reader]
        sns.barplot(data=sub, estimator="median", errorbar=None, y="config", x="value", hue="counter",
                    order=sorted(sub["config"].unique()), ax=ax)
        log_axis(ax, "x")
        ax.set(xlim=(0.8, None), xlabel="transactions (log; median over latencies and iterations)", ylabel="",
               title=f"{'ROOT (TWebFile for http)' if reader == 'root' else 'uproot'}: reads per configuration")
        legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def times(df: pd.DataFrame, reader: str = "root") -> plt.Figure:
    """Real and CPU time per configuration and link (local file, each server latency)."""
    rows = prepare(df, reader)
    if rows.empty:
        return empty_figure(f"{reader} times")
    order, links = _config_order(rows), _link_order(rows)
    fig, axes = subplots(1, 2, figsize=(7.2, 1.6 + 0.55 * len(order) * max(1, len(links)) / 2), sharey=True)
    for ax, col, what in ((axes[0], "elapsed_s", "real time"), (axes[1], "cpu_s", "CPU time (all threads)")):
        sns.barplot(data=rows, estimator="median", **CI95, y="config", x=col, hue="link", order=order,
                    hue_order=links, ax=ax)
        ax.set(xlabel=f"{what}, s", ylabel="", title=f"{reader}: {what}")
    fig.suptitle(whiskers(rows, ["config", "link"], "elapsed_s"))
    legend_under_figure(fig, list(axes), ncol=3)
    return fig


def time_vs_latency(df: pd.DataFrame) -> plt.Figure:
    """Real time against the server's added latency, one line per configuration, one panel per reader
    (Zarr: cutouts at the highest concurrency, one line per client/layout, dashed with the client cache)."""
    rows = prepare(df)
    rows = rows[rows["location"] != "local"] if not rows.empty else rows
    if rows.empty:
        return empty_figure("time vs latency")
    if (latencies := rows["latency_ms"].dropna().unique()).size < 2:
        measured = f"{latencies[0]:g} ms" if latencies.size else "none"
        return empty_figure("time vs latency", f"one latency measured ({measured}); LATENCIES_MS with three or "
                            "more values, e.g. [0, 2, 10], draws how the time grows with it")
    numbers = median_table(rows.assign(reader_config=rows["reader"] + ": " + rows["config"]), "latency_ms",
                           "elapsed_s", "reader_config", lambda ms: f"{ms:g} ms", "real time, s")
    if (few := too_few(rows, "latency_ms", "Time vs latency", "latency", numbers)) is not None:
        return few
    readers = [r for r in ("root", "uproot", "zarr") if r in set(rows["reader"])]
    fig, axes = subplots(len(readers), 1, figsize=(7.2, 4.4 * len(readers)), squeeze=False)
    for ax, reader in zip(axes[:, 0], readers, strict=True):
        sub = rows[rows["reader"] == reader]
        style = "server" if sub["server"].nunique() > 1 else None
        if reader == "zarr":
            sub = sub[sub["concurrency"] == sub["concurrency"].max()]
            sub = sub[sub["workload"] == sub["workload"].iloc[-1]]
            sub = sub.assign(config=_zarr_stores(sub),
                             cache=sub["client_cache"].map({True: "cache on", False: "cache off"}))
            style = "cache"
        sns.lineplot(data=sub, estimator="median", **CI95, x="latency_ms", y="elapsed_s", hue="config", style=style,
                     marker="o", ax=ax)
        what = reader
        if reader == "zarr":
            what = f"zarr ({sub['workload'].iloc[0]}, concurrency {int(sub['concurrency'].max())})"
        points = ["config", "latency_ms", *([style] if style else [])]
        ax.set(yscale="log", xlabel="added latency per request (ms)",
               ylabel=f"real time, s (log; {whiskers(sub, points, 'elapsed_s')})", title=what)
        plain_log_ticks(ax)
        legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def memory(df: pd.DataFrame) -> plt.Figure:
    """RSS growth over the fresh process's baseline per configuration (the baseline is in the title)."""
    rows = prepare(df, ("root", "uproot"))
    if rows.empty or "rss_growth_bytes" not in rows:
        return empty_figure("memory")
    rows = rows.assign(growth_mb=rows["rss_growth_bytes"].astype("float64") / MB)
    readers = [r for r in ("root", "uproot") if r in set(rows["reader"])]
    fig, axes = subplots(1, len(readers), figsize=(7.2, 1.8 + 0.5 * rows["config"].nunique() / 2),
                         squeeze=False, sharey=True)
    for ax, reader in zip(axes[0], readers, strict=True):
        sub = rows[rows["reader"] == reader]
        base = sub["rss_baseline_bytes"].astype("float64").median() / MB
        sns.barplot(data=sub, estimator="median", **CI95, y="config", x="growth_mb", hue="link",
                    hue_order=_link_order(sub), ax=ax)
        ax.set(xlabel="peak RSS growth (MB)", ylabel="",
               title=f"{reader}: memory\n(fresh-process baseline {base:.0f} MB)")
    fig.suptitle(whiskers(rows, ["reader", "config", "link"], "growth_mb"))
    legend_under_figure(fig, list(axes[0]), ncol=3)
    return fig


def zarr_amplification(df: pd.DataFrame) -> plt.Figure:
    """Zarr over HTTP (and S3): read amplification and requests per client and layout, cache off/on; real time
    against concurrency at the highest latency, where two or more concurrency levels were measured."""
    rows = prepare(df, "zarr")
    if rows.empty:
        return empty_figure("zarr over http")
    rows = rows.assign(store=_zarr_stores(rows),
                       cache=rows["client_cache"].map({True: "client cache on", False: "client cache off"}))
    workloads = list(dict.fromkeys(rows["workload"]))
    varied = rows.groupby("workload")["concurrency"].nunique().max() >= MIN_LINE_POINTS  # else no line (the text)
    per = 2 if varied else 1  # rows of panels per workload: without a second level, no time panel
    fig, grid = subplots(per * len(workloads), 2, figsize=(7.2, 0.6 + (7.6 if varied else 4.6) * len(workloads)),
                         squeeze=False)
    for i, workload in enumerate(workloads):
        ax_a, ax_r = grid[per * i]
        sub = rows[rows["workload"] == workload]
        what = "whole array" if workload == "whole" else f"{int(sub['selections'].median())} overlapping cutouts"
        if not varied:
            what += f" at concurrency {', '.join(f'{int(c)}' for c in sorted(sub['concurrency'].dropna().unique()))}"
        order = sorted(sub["store"].unique())
        sns.barplot(data=sub, estimator="median", errorbar=None, y="store", x="read_amplification", hue="cache",
                    order=order, ax=ax_a)
        ax_a.axvline(1.0, ls="--", lw=1, color="0.4")
        ax_a.set(xlabel="bytes sent / bytes asked (median)", ylabel="", title=f"read amplification:\n{what}")
        sns.barplot(data=sub, estimator="median", errorbar=None, y="store", x="server_requests", hue="cache",
                    order=order, ax=ax_r)
        ax_r.set(xlabel="server requests (median)", ylabel="", yticklabels=[], title="requests")
        if not varied:
            continue
        ax_t, ax_key = grid[per * i + 1]
        top = sub[sub["latency_ms"] == sub["latency_ms"].max()]
        levels = sorted(top["concurrency"].dropna().unique())
        sns.lineplot(data=top, estimator="median", errorbar=None, x="concurrency", y="elapsed_s", hue="store",
                     style="cache", marker="o", ax=ax_t)
        ax_t.set(xscale="log", xlabel="requests in flight (log)", ylabel="real time (s, log; median)",
                 title=f"time at {top['latency_ms'].max():g} ms latency")
        plain_log_ticks(ax_t)
        ax_t.set_xticks(levels, [f"{int(c)}" for c in levels])
        ax_t.xaxis.set_minor_locator(plt.NullLocator())
        handles, labels = ax_a.get_legend_handles_labels()
        t_handles, t_labels = ax_t.get_legend_handles_labels()
        for ax in (ax_a, ax_r, ax_t):
            if ax.get_legend() is not None:
                ax.get_legend().remove()
        ax_key.set_axis_off()
        if handles or t_handles:
            ax_key.legend(handles + t_handles, labels + t_labels, loc="center left", frameon=False)
    if varied:
        fig.tight_layout()
    else:
        legend_under_figure(fig, list(grid.ravel()))
    return fig


def zarr_s3_vs_http(df: pd.DataFrame) -> plt.Figure:
    """The same Zarr reads through S3 and over HTTP at the highest latency both were measured at (only the
    workloads and concurrency levels measured both ways): real time per client and layout (medians, 95%
    intervals), one panel per client-cache setting."""
    rows = prepare(df, "zarr")
    rows = rows[rows["location"].isin(["http", "s3"])] if len(rows) else rows
    common = sorted(set(rows.loc[rows["location"] == "s3", "latency_ms"]) &
                    set(rows.loc[rows["location"] == "http", "latency_ms"])) if len(rows) else []
    if not common:
        return empty_figure("Zarr through S3 against HTTP (needs both locations at one latency)")
    rows = rows[rows["latency_ms"] == common[-1]]
    # like with like: only the workloads and concurrency levels measured both ways
    keys = ["client", "layout", "workload", "client_cache", "concurrency"]
    both = rows.groupby(keys)["location"].transform("nunique") == 2
    rows = rows[both]
    if rows.empty:
        return empty_figure("Zarr through S3 against HTTP (no configuration measured both ways)")
    what = ", ".join(f"{w} at concurrency {int(c)}" for w, c in
                     rows[["workload", "concurrency"]].drop_duplicates().itertuples(index=False))
    server = rows["s3_server"].astype("string").fillna("server not recorded") if "s3_server" in rows else \
        "server not recorded"
    rows = rows.assign(store=rows["client"] + " / " + rows["layout"],
                       protocol=("S3 (" + server + ")").where(rows["location"] == "s3", "HTTP"),
                       cache=rows["client_cache"].map({True: "client cache on", False: "client cache off"}))
    caches = sorted(rows["cache"].unique(), reverse=True)
    order = sorted(rows["store"].unique())
    fig, axes = subplots(1, len(caches), figsize=(7.2, 1.8 + 0.55 * len(order)), squeeze=False,
                         sharey=True)
    for ax, cache in zip(axes[0], caches, strict=True):
        sub = rows[rows["cache"] == cache]
        sns.barplot(data=sub, estimator="median", **CI95, y="store", x="elapsed_s", hue="protocol",
                    hue_order=["HTTP", *sorted(set(rows["protocol"]) - {"HTTP"})], order=order, ax=ax)
        ax.set(xlabel="real time, s", ylabel="", title=f"{cache},\n{common[-1]:g} ms per request")
    fig.suptitle(f"The same reads both ways: {what}\n"
                 f"({whiskers(rows, ['cache', 'store', 'protocol'], 'elapsed_s')})")
    legend_under_figure(fig, list(axes[0]))
    return fig


def _seed_label(row: pd.Series) -> str:
    where = "LOCAL" if row["location"] != "http" else f"REMOTE ({row['link']})"
    prefetch = "ASYNC" if int(row["async_prefetch"]) else "STANDARD"
    cache = format_bytes(row["cache_bytes"]) if row["cache_bytes"] else "none"
    return f"Read {where} file with {prefetch} prefetch and a TTreeCache of {cache}"


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Seed 004's summary per ROOT configuration: Avg RES memory, real and CPU time (s), bytes in N
    transactions (ROOT's GetBytesRead/GetReadCalls), plus the server's request count and whether the
    async prefetch thread actually ran."""
    rows = prepare(df, "root")
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(label=rows.apply(_seed_label, axis=1), remote=rows["location"] == "http",
                       latency=rows["latency_ms"].astype("float64").fillna(-1))
    rows = rows.sort_values(["remote", "server", "latency", "cache_bytes", "async_prefetch"],
                            ascending=[True, True, True, False, True])
    out = []
    for label, g in rows.groupby("label", sort=False):
        calls = g["root_read_calls"].astype("float64")
        nbytes = g["root_bytes_read"].astype("float64")
        server = g["server_requests"].astype("float64").median() if "server_requests" in g else np.nan
        out.append({
            "configuration": label,
            "Avg RES memory": format_bytes(g["rss_after_bytes"].astype("float64").mean()),
            "Avg REAL time": round(float(g["elapsed_s"].mean()), 3),
            "Avg CPU time": round(float(g["cpu_s"].mean()), 3),
            "REAL time, s (median [95% CI])": format_values(g["elapsed_s"].astype("float64")),
            "Read": f"{nbytes.median():.0f} bytes in {calls.median():.0f} transactions",
            "server requests": None if np.isnan(server) else int(server),
            "async active": bool(g["async_active"].astype(bool).any()) if "async_active" in g else None,
            "iterations": len(g),
        })
    return tables.table(pd.DataFrame(out).set_index("configuration"))


__all__ = ["CHAPTER", "answer", "conclusion", "header", "memory", "prepare", "problems", "server_cpu", "server_lines",
           "server_rows", "summary", "time_vs_latency", "times", "transactions", "zarr_amplification"]


#: the chapter's standard figures, by title (the explorer draws them for any run)
FIGURES = {
    "Transactions per read": transactions,
    "ROOT read times": times,
    "Time vs latency": time_vs_latency,
    "Memory": memory,
    "uproot read times": lambda df: times(df, "uproot"),
    "Zarr read amplification": zarr_amplification,
    "Zarr through S3 against HTTP": zarr_s3_vs_http,
    "Server CPU": server_cpu,
}

CHAPTER = Chapter("cache", suite="cache", answer=answer, summary=summary,
                  conclusion=conclusion, problems=problems, figures=FIGURES, order=40)
