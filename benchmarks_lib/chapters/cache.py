"""The cache/prefetch chapter: what TTreeCache, prefetching and HTTP (or S3) latency cost (seed 004).

Every function takes the run's records (other suites' rows, the ceiling's too, are ignored) and
returns a Figure, a DataFrame or markdown text.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..stats import format_values
from .common import MB, median_of, no_answer, ok_rows, problems, run_header, separable
from .flags import point_flags
from .markup import md
from .server import server_cpu, server_lines, server_rows
from .style import CI95, WHISKERS, empty_figure, legend_outside, plain_log_ticks, plt, sns, subplots

TIMES = ("real and CPU time of a fresh process from opening the file (or store) to the last entry or cutout, "
         "the input evicted from the page cache first")


def header(result) -> str:
    """The run header of this chapter (markdown)."""
    return run_header(result, TIMES)


def _link(row: pd.Series) -> str:
    location = row.get("location")
    if location not in ("http", "s3"):
        return "local file"
    if location == "s3" and row.get("server") == "endpoint":
        return "S3 endpoint"
    text = f"{row.get('server') or 'http'}{' S3' if location == 's3' else ''} {float(row['latency_ms']):g} ms"
    bw = row.get("bandwidth_bytes_s")
    if bw is not None and not pd.isna(bw) and bw:
        text += f", {float(bw) / MB:g} MB/s"
    return text


def prepare(df: pd.DataFrame, reader: str | tuple[str, ...] | None = None) -> pd.DataFrame:
    """OK rows of this chapter (of ``reader``, one or several) with a ``link`` label (local file / server +
    latency) and ``transactions`` (ROOT's GetReadCalls, uproot's requests, else the server's requests)."""
    if "reader" not in df:
        return df.iloc[0:0]
    rows = ok_rows(df)
    rows = rows[rows["reader"].notna()]
    if reader is not None:
        rows = rows[rows["reader"].isin([reader] if isinstance(reader, str) else list(reader))]
    if rows.empty:
        return rows
    rows = rows.copy()
    rows["link"] = rows.apply(_link, axis=1)
    client = pd.Series(np.nan, index=rows.index)
    for col in ("root_read_calls", "client_requests"):
        if col in rows:
            client = client.fillna(rows[col].astype("float64"))
    rows["transactions"] = client
    if "server_requests" in rows:
        rows["transactions"] = rows["transactions"].fillna(rows["server_requests"].astype("float64"))
    return rows


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
    fig, axes = subplots(len(readers), 1, figsize=(9, sum(heights)), squeeze=False,
                         gridspec_kw={"height_ratios": heights})
    for ax, reader in zip(axes[:, 0], readers, strict=True):
        sub = long[long["reader"] == reader]
        sns.barplot(data=sub, estimator="median", errorbar=None, y="config", x="value", hue="counter",
                    order=sorted(sub["config"].unique()), ax=ax)
        ax.set(xscale="log", xlim=(0.8, None), xlabel="transactions (log; median over latencies and iterations)",
               ylabel="",
               title=f"{'ROOT (TWebFile for http)' if reader == 'root' else 'uproot'}: reads per configuration")
        legend_outside(ax)
    fig.tight_layout()
    return fig


def times(df: pd.DataFrame, reader: str = "root") -> plt.Figure:
    """Real and CPU time per configuration and link (local file, each server latency)."""
    rows = prepare(df, reader)
    if rows.empty:
        return empty_figure(f"{reader} times")
    order, links = _config_order(rows), _link_order(rows)
    fig, axes = subplots(1, 2, figsize=(13, 1.2 + 0.55 * len(order) * max(1, len(links)) / 2), sharey=True)
    for ax, col, what in ((axes[0], "elapsed_s", "real time"), (axes[1], "cpu_s", "CPU time (all threads)")):
        sns.barplot(data=rows, estimator="median", **CI95, y="config", x=col, hue="link", order=order,
                    hue_order=links, ax=ax)
        ax.set(xlabel=f"{what}, s ({WHISKERS})", ylabel="", title=f"{reader}: {what}")
        ax.get_legend().remove()
    legend_outside(axes[1])
    fig.tight_layout()
    return fig


def time_vs_latency(df: pd.DataFrame) -> plt.Figure:
    """Real time against the server's added latency, one line per configuration, one panel per reader
    (Zarr: cutouts at the highest concurrency, one line per client/layout, dashed with the client cache)."""
    rows = prepare(df)
    rows = rows[rows["location"] != "local"] if not rows.empty else rows
    if rows.empty:
        return empty_figure("time vs latency")
    readers = [r for r in ("root", "uproot", "zarr") if r in set(rows["reader"])]
    fig, axes = subplots(len(readers), 1, figsize=(11, 3.6 * len(readers)), squeeze=False)
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
        ax.set(yscale="log", xlabel="added latency per request (ms)", ylabel=f"real time (s, log; {WHISKERS})",
               title=what)
        plain_log_ticks(ax)
        legend_outside(ax)
    fig.tight_layout()
    return fig


def memory(df: pd.DataFrame) -> plt.Figure:
    """RSS growth over the fresh process's baseline per configuration (the baseline is in the title)."""
    rows = prepare(df, ("root", "uproot"))
    if rows.empty or "rss_growth_bytes" not in rows:
        return empty_figure("memory")
    rows = rows.assign(growth_mb=rows["rss_growth_bytes"].astype("float64") / MB)
    readers = [r for r in ("root", "uproot") if r in set(rows["reader"])]
    fig, axes = subplots(1, len(readers), figsize=(7 * len(readers), 1.5 + 0.5 * rows["config"].nunique() / 2),
                         squeeze=False)
    for ax, reader in zip(axes[0], readers, strict=True):
        sub = rows[rows["reader"] == reader]
        base = sub["rss_baseline_bytes"].astype("float64").median() / MB
        sns.barplot(data=sub, estimator="median", **CI95, y="config", x="growth_mb", hue="link",
                    hue_order=_link_order(sub), ax=ax)
        ax.set(xlabel=f"peak RSS growth over baseline (MB; {WHISKERS})", ylabel="",
               title=f"{reader}: memory (fresh-process baseline {base:.0f} MB)")
        legend_outside(ax)
    fig.tight_layout()
    return fig


def zarr_amplification(df: pd.DataFrame) -> plt.Figure:
    """Zarr over HTTP (and S3): read amplification and requests per client and layout, cache off/on;
    real time against concurrency at the highest latency."""
    rows = prepare(df, "zarr")
    if rows.empty:
        return empty_figure("zarr over http")
    rows = rows.assign(store=_zarr_stores(rows),
                       cache=rows["client_cache"].map({True: "client cache on", False: "client cache off"}))
    workloads = list(dict.fromkeys(rows["workload"]))
    fig, axes = subplots(len(workloads), 3, figsize=(17, 0.6 + 3.8 * len(workloads)), squeeze=False)
    for (ax_a, ax_r, ax_t), workload in zip(axes, workloads, strict=True):
        sub = rows[rows["workload"] == workload]
        what = "whole array" if workload == "whole" else f"{int(sub['selections'].median())} overlapping cutouts"
        order = sorted(sub["store"].unique())
        sns.barplot(data=sub, estimator="median", errorbar=None, y="store", x="read_amplification", hue="cache",
                    order=order, ax=ax_a)
        ax_a.axvline(1.0, ls="--", lw=1, color="0.4")
        ax_a.set(xlabel="bytes transferred / bytes asked for (median)", ylabel="",
                 title=f"read amplification: {what}")
        sns.barplot(data=sub, estimator="median", errorbar=None, y="store", x="server_requests", hue="cache",
                    order=order, ax=ax_r)
        ax_r.set(xlabel="server requests (median)", ylabel="", yticklabels=[], title="requests")
        top = sub[sub["latency_ms"] == sub["latency_ms"].max()]
        sns.lineplot(data=top, estimator="median", errorbar=None, x="concurrency", y="elapsed_s", hue="store",
                     style="cache", marker="o", ax=ax_t)
        levels = sorted(top["concurrency"].dropna().unique())
        ax_t.set(xscale="log", yscale="log", xlabel="requests in flight (log)", ylabel="real time (s, log; median)",
                 title=f"time at {top['latency_ms'].max():g} ms latency")
        plain_log_ticks(ax_t)
        ax_t.set_xticks(levels, [f"{int(c)}" for c in levels])
        ax_t.xaxis.set_minor_locator(plt.NullLocator())
        for ax in (ax_a, ax_r):
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7, loc="lower right")
        legend_outside(ax_t)
    fig.tight_layout()
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
    rows = rows.assign(store=rows["client"] + " / " + rows["layout"],
                       protocol=rows["location"].map({"http": "HTTP", "s3": "S3 (MinIO)"}),
                       cache=rows["client_cache"].map({True: "client cache on", False: "client cache off"}))
    caches = sorted(rows["cache"].unique(), reverse=True)
    order = sorted(rows["store"].unique())
    fig, axes = subplots(1, len(caches), figsize=(6.5 * len(caches), 1.4 + 0.55 * len(order)), squeeze=False,
                         sharey=True)
    for ax, cache in zip(axes[0], caches, strict=True):
        sub = rows[rows["cache"] == cache]
        sns.barplot(data=sub, estimator="median", **CI95, y="store", x="elapsed_s", hue="protocol",
                    hue_order=["HTTP", "S3 (MinIO)"], order=order, ax=ax)
        ax.set(xlabel=f"real time, s ({WHISKERS})", ylabel="", title=f"{cache}, {common[-1]:g} ms per request")
        ax.get_legend().remove()
    legend_outside(axes[0][-1])
    fig.suptitle(f"The same reads both ways: {what}", fontsize=10)
    fig.tight_layout()
    return fig


def _seed_label(row: pd.Series) -> str:
    where = "LOCAL" if row["location"] != "http" else f"REMOTE ({row['link']})"
    prefetch = "ASYNC" if int(row["async_prefetch"]) else "STANDARD"
    return f"Read {where} file with {prefetch} prefetch and CACHE SIZE {int(row['cache_bytes'])}"


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
            "Avg RES memory": f"{g['rss_after_bytes'].astype('float64').mean() / 1024:.0f} KB",
            "Avg REAL time": round(float(g["elapsed_s"].mean()), 3),
            "Avg CPU time": round(float(g["cpu_s"].mean()), 3),
            "REAL time, s (median [95% CI])": format_values(g["elapsed_s"].astype("float64")),
            "Read": f"{nbytes.median():.0f} bytes in {calls.median():.0f} transactions",
            "server requests": None if np.isnan(server) else int(server),
            "async active": bool(g["async_active"].astype(bool).any()) if "async_active" in g else None,
            "iterations": len(g),
        })
    return pd.DataFrame(out).set_index("configuration")


def _ttreecache_pair(at: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """ROOT's reads at one link without a TTreeCache and with the largest one (None unless both were measured)."""
    no_cache, cache = at[at["cache_bytes"] == 0], at[at["cache_bytes"] > 0]
    if no_cache.empty or cache.empty:
        return None
    return no_cache, cache[cache["cache_bytes"] == cache["cache_bytes"].max()]


def _root_lines(rows: pd.DataFrame) -> list[str]:
    lines = []
    remote = rows[rows["location"] == "http"]
    local = rows[rows["location"] == "local"]
    if not remote.empty:
        lat = remote["latency_ms"].max()
        at = remote[remote["latency_ms"] == lat]
        if pair := _ttreecache_pair(at):
            no_cache, big = pair
            lines.append(
                f"- **TTreeCache**: over HTTP at {lat:g} ms per request, reading without a cache took "
                f"{median_of(no_cache, 'root_read_calls'):.0f} transactions and "
                f"{median_of(no_cache, 'elapsed_s'):.2f} s; "
                f"a {big['cache_bytes'].max() / MB:g} MB cache needed {median_of(big, 'root_read_calls'):.0f} "
                f"transactions and {median_of(big, 'elapsed_s'):.2f} s "
                f"({median_of(no_cache, 'elapsed_s') / median_of(big, 'elapsed_s'):.1f}x faster; "
                f"{separable(no_cache, big)}).")
        for size in sorted(at["cache_bytes"].unique()):
            a = at[(at["cache_bytes"] == size) & (at["async_prefetch"] == 1)]
            s = at[(at["cache_bytes"] == size) & (at["async_prefetch"] == 0)]
            if a.empty or s.empty:
                continue
            active = bool(a["async_active"].astype(bool).any())
            change = median_of(a, "elapsed_s") / median_of(s, "elapsed_s") - 1
            mem = (median_of(a, "rss_growth_bytes") - median_of(s, "rss_growth_bytes")) / MB
            cache_text = "no TTreeCache" if size == 0 else f"a {size / MB:g} MB TTreeCache"
            lines.append(
                f"- **Async prefetching** ({cache_text}, {lat:g} ms): median real time {change:+.0%} "
                f"({separable(a, s)}), "
                f"peak RSS growth {mem:+.1f} MB versus standard prefetching"
                + ("" if active else "; ROOT did not start the prefetch thread (it works through the TTreeCache)")
                + ".")
    if not local.empty and (local["async_prefetch"] == 1).any():
        active = bool(local[local["async_prefetch"] == 1]["async_active"].astype(bool).any())
        lines.append("- **Local files**: " + ("async prefetching was active." if active else
                     "ROOT turns async prefetching off for local files by design; the async rows of the local "
                     "file show the same reads as the standard ones."))
    if "server_requests" in remote and not remote.empty:
        extra = remote["server_requests"].astype("float64") - remote["root_read_calls"].astype("float64")
        if (extra == 1).all():
            lines.append("- The server counted exactly one request more than ROOT's GetReadCalls in every remote "
                         "read: TWebFile's HEAD when opening the file.")
        else:
            lines.append(f"- The server counted {extra.min():.0f} to {extra.max():.0f} requests more than ROOT's "
                         "GetReadCalls: TWebFile's HEAD at open, plus vector reads that TWebFile split into "
                         "several HTTP requests.")
    return lines


def _uproot_lines(rows: pd.DataFrame) -> list[str]:
    remote = rows[rows["location"] == "http"]
    if remote.empty or "step_unit" not in remote:
        return []
    lat = remote["latency_ms"].max()
    at = remote[remote["latency_ms"] == lat]
    lines = []
    entries, nbytes = at[at["step_unit"] == "entries"], at[at["step_unit"] == "bytes"]
    if not entries.empty and not nbytes.empty:
        lines.append(
            f"- **uproot step size**: in bytes, uproot first reads every basket header separately "
            f"({median_of(nbytes, 'server_requests'):.0f} server requests, {median_of(nbytes, 'elapsed_s'):.2f} s at "
            f"{lat:g} ms); in entries it does not ({median_of(entries, 'server_requests'):.0f} requests, "
            f"{median_of(entries, 'elapsed_s'):.2f} s).")
    best = at.groupby("config")["elapsed_s"].median().sort_values()
    if len(best) > 1:
        first, second = (at[at["config"] == c] for c in best.index[:2])
        verdict = "ahead of" if separable(first, second) == "separable" else "**not separable** from"
        lines.append(f"- Fastest uproot configuration at {lat:g} ms: {md(best.index[0])} "
                     f"({format_values(first['elapsed_s'])} s), {verdict} {md(best.index[1])} "
                     f"({format_values(second['elapsed_s'])} s).")
    return lines


def _zarr_lines(rows: pd.DataFrame) -> list[str]:
    if rows.empty or "read_amplification" not in rows:
        return []
    lines = []
    cut = rows[rows["workload"] == "cutouts"]
    if not cut.empty:
        keys = ["client", "layout", "client_cache"] + (["location"] if cut["location"].nunique() > 1 else [])
        amp = cut.groupby(keys)["read_amplification"].median()

        def name(key: tuple) -> str:
            via = f", {'S3' if key[3] == 's3' else 'HTTP'}" if len(key) > 3 else ""
            return f"{md(key[0])}, {md(key[1])}, cache {'on' if key[2] else 'off'}{via}"

        lines.append(
            f"- **Zarr cutouts**: read amplification ranged from {amp.min():.2f} ({name(amp.idxmin())}) to "
            f"{amp.max():.2f} ({name(amp.idxmax())}); values below 1 mean compression and a client cache saved more "
            "than the chunk overhang cost.")
        req = _one_location(cut).groupby(["layout", "client_cache"])["server_requests"].median()
        if ("sharded", False) in req and ("unsharded", False) in req:
            lines.append(f"- Sharding: {req[('unsharded', False)]:.0f} requests unsharded versus "
                         f"{req[('sharded', False)]:.0f} sharded (median over clients, no cache).")
    lines += _s3_lines(rows)
    grid = _one_location(rows)
    lat = grid["latency_ms"].max()
    at = grid[grid["latency_ms"] == lat]
    conc = at.groupby("concurrency")["elapsed_s"].median()
    if len(conc) > 1:
        low, high = at[at["concurrency"] == conc.index[0]], at[at["concurrency"] == conc.index[-1]]
        lines.append(f"- Zarr concurrency at {lat:g} ms: median real time {conc.iloc[0]:.2f} s with "
                     f"{int(conc.index[0])} request(s) in flight versus {conc.iloc[-1]:.2f} s with "
                     f"{int(conc.index[-1])} (pooled over clients and layouts; {separable(low, high)}).")
    return lines


def _one_location(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of one location, HTTP's where there are any: the full grid (S3 may measure fewer workloads and
    concurrency levels), so that pooled medians compare like with like."""
    return rows[rows["location"] == ("http" if (rows["location"] == "http").any() else rows["location"].iloc[0])]


def _s3_lines(rows: pd.DataFrame) -> list[str]:
    """The same Zarr reads through S3 (MinIO) and over HTTP at the highest latency both have, per client: the
    time ratio of each configuration measured both ways (same layout, workload, cache and concurrency)."""
    s3, http = rows[rows["location"] == "s3"], rows[rows["location"] == "http"]
    both = sorted(set(s3["latency_ms"]) & set(http["latency_ms"]))
    if not both:
        return []
    lat = both[-1]
    keys = ["layout", "workload", "client_cache", "concurrency"]
    lines = []
    for client in sorted(set(s3["client"]) & set(http["client"])):
        a = s3[(s3["client"] == client) & (s3["latency_ms"] == lat)].groupby(keys)
        b = http[(http["client"] == client) & (http["latency_ms"] == lat)].groupby(keys)
        ratio = (a["elapsed_s"].median() / b["elapsed_s"].median()).dropna()
        if ratio.empty:
            continue
        extra = (a["server_requests"].median() / b["server_requests"].median()).reindex(ratio.index)
        heads = a["server_head_requests"].median().reindex(ratio.index) if "server_head_requests" in s3 else None
        span = f"{ratio.min():.2f}x" if len(ratio) == 1 else f"{ratio.min():.2f}x to {ratio.max():.2f}x"
        head_text = f"; {heads.median():.0f} HEAD requests per read (median)" if heads is not None and \
            heads.median() > 0 else ""
        lines.append(f"- **{md(client)} through S3** at {lat:g} ms took {span} the time of the same read over HTTP "
                     f"({len(ratio)} configuration(s) measured both ways), with {extra.median():.2f}x the requests"
                     f"{head_text}.")
    return lines


def conclusion(df: pd.DataFrame) -> str:
    """A markdown conclusion computed from this run's numbers: what the readers did and whether the
    server was the bottleneck (reads not proven cold are listed by ``problems``)."""
    rows = prepare(df)
    if rows.empty:
        return "No measurements of the cache chapter in this run."
    lines = ["### What this run shows", ""]
    lines += _root_lines(rows[rows["reader"] == "root"])
    lines += _uproot_lines(rows[rows["reader"] == "uproot"])
    lines += _zarr_lines(rows[rows["reader"] == "zarr"])
    if "verified" in rows:
        bad = rows[rows["verified"].astype("boolean").eq(False).fillna(False)]
        lines.append("- Every read delivered the expected values." if bad.empty else
                     f"- **{len(bad)} read(s) delivered unexpected values**; see the records.")
    lines += server_lines(df)
    return "\n".join(lines)


def answer(df: pd.DataFrame) -> str:
    """Markdown, one sentence: what a read cache buys a remote read at the highest latency measured: ROOT's
    TTreeCache (with against without, async prefetching pooled as in the conclusion) and the Zarr client cache
    on cutouts (per client and layout, at the highest concurrency)."""
    rows = prepare(df)
    remote = rows[rows["location"] != "local"] if len(rows) else rows
    top = {r: p[p["latency_ms"] == p["latency_ms"].max()] for r, p in remote.groupby("reader")} if len(remote) else {}
    parts = []
    if "root" in top and (pair := _ttreecache_pair(top["root"])):
        without, big = pair
        t0, t1, verdict = median_of(without, "elapsed_s"), median_of(big, "elapsed_s"), separable(without, big)
        effect = "" if verdict != "separable" else f"**{t0 / t1:.1f}x faster**; " if t1 <= t0 else \
            f"**{t1 / t0:.1f}x slower**; "
        parts.append(f"over HTTP at {big['latency_ms'].max():g} ms per request, ROOT with a "
                     f"{big['cache_bytes'].max() / MB:g} MB TTreeCache read in {t1:.2f} s against {t0:.2f} s without "
                     f"({'; '.join([effect + verdict, *point_flags(big), *point_flags(without)])})")
    zarr = top.get("zarr", remote.iloc[0:0])
    cut = zarr[(zarr["workload"] == "cutouts") & (zarr["concurrency"] == zarr["concurrency"].max())] if len(zarr) \
        else zarr
    times = (cut.groupby(["client", "layout", "location", "client_cache"])["elapsed_s"].median().unstack() if len(cut)
             else pd.DataFrame())
    ratio = times[True] / times[False] if {True, False} <= set(times.columns) else pd.Series(dtype="float64")
    if ratio.notna().any():
        parts.append(f"Zarr's client cache took {ratio.min():.2f}x to {ratio.max():.2f}x the time of cutouts "
                     f"without it at {cut['latency_ms'].max():g} ms (best: {' '.join(map(md, ratio.idxmin()))})")
    return ("The cache setting that matters for remote reads: " + "; ".join(parts) + "." if parts
            else no_answer("remote reads with and without a cache"))


__all__ = ["answer", "conclusion", "header", "memory", "prepare", "problems", "server_cpu", "server_lines",
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
