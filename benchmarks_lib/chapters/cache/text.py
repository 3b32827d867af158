"""The cache chapter's text: the conclusion computed from a run's numbers and the front page's answer."""

from __future__ import annotations

import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.stats import format_values, two_sample
from benchmarks_lib.chapters.cache.rows import prepare
from benchmarks_lib.chapters.common import MB, answer_first, median_of, no_answer, s3_servers
from benchmarks_lib.chapters.flags import point_flags
from benchmarks_lib.chapters.server import server_lines
from benchmarks_lib.rules.answers import answer as question_answer
from benchmarks_lib.rules.ranking import rank_samples
from benchmarks_lib.rules.words import change_text, verdict_line, verdict_text, versus_text


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
                f"({_change(no_cache, big)}).")
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
                f"({_change(s, a)}), "
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
    r = rank_samples({str(c): p["elapsed_s"] for c, p in at.groupby("config")}, higher=False)
    if len(r.entries) > 1:
        others = "; ".join(f"{md(e.name)} ({format_values(e.values)} s): {versus_text(e, r)}" for e in r.others)
        lines.append(f"- Fastest uproot configuration at {lat:g} ms: {md(r.leader.name)} "
                     f"({format_values(r.leader.values)} s): {verdict_text(r, 'configurations')}; {others}.")
    return lines


def _change(before: pd.DataFrame, after: pd.DataFrame) -> str:
    """What ``after`` did to the time of ``before``: a factor only where the two are separable."""
    return change_text(two_sample(before["elapsed_s"].astype("float64"), after["elapsed_s"].astype("float64")))


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
                     f"{int(conc.index[-1])} (pooled over clients and layouts; {_change(low, high)}).")
    return lines


def _one_location(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of one location, HTTP's where there are any: the full grid (S3 may measure fewer workloads and
    concurrency levels), so that pooled medians compare like with like."""
    return rows[rows["location"] == ("http" if (rows["location"] == "http").any() else rows["location"].iloc[0])]


def _s3_lines(rows: pd.DataFrame) -> list[str]:
    """The same Zarr reads through S3 and over HTTP at the highest latency both have, per client: the time ratio of
    each configuration measured both ways (same layout, workload, cache and concurrency); the S3 server named with
    its version."""
    s3, http = rows[rows["location"] == "s3"], rows[rows["location"] == "http"]
    both = sorted(set(s3["latency_ms"]) & set(http["latency_ms"]))
    if not both:
        return []
    lat = both[-1]
    where = "; ".join(s3_servers(s3)) or "server not recorded"
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
        lines.append(f"- **{md(client)} through S3** ({md(where)}) at {lat:g} ms took {span} the time of the same "
                     "read over HTTP "
                     f"({len(ratio)} configuration(s) measured both ways), with {extra.median():.2f}x the requests"
                     f"{head_text}.")
    return lines


def conclusion(df: pd.DataFrame) -> str:
    """A markdown conclusion computed from this run's numbers: what the readers did and whether the server was the
    bottleneck (reads not proven cold are listed by ``problems``). It opens with the chapter's answer
    (``answer``)."""
    return answer_first(answer(df), _findings(df))


def _findings(df: pd.DataFrame) -> str:
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
    """Markdown: what a read cache buys a remote read at the highest latency measured
    (:func:`benchmarks_lib.rules.answers.answer`, the verdict box's answer and words): the Zarr client cache on
    cutouts (the fastest setup at the highest concurrency against itself with the other cache setting; the span of
    the same ratio over every client and layout) and ROOT's TTreeCache (none against the largest, async prefetching
    pooled as in the conclusion)."""
    found = question_answer("cache", df)
    if not found.measured:
        return no_answer("remote reads with and without a cache")
    lines = []
    for a in (found, *found.more):
        rows = {e.name: e.rows for e in a.ranking.entries}
        details = [" against ".join(f"{median_of(part, 'elapsed_s'):.2f} s" for part in rows.values())
                   + " (medians)"]
        if a.of == "zarr":
            details += _client_cache_span(prepare(df))
        details += [flag for r in rows.values() for flag in point_flags(r)]
        lines.append(f"- {verdict_line(a, label=False)}; {'; '.join(dict.fromkeys(details))}.")
    return "The cache setting that matters for remote reads (the fastest setup against itself with the other " \
           "setting, by the ranking rule):\n" + "\n".join(lines)


def _client_cache_span(rows: pd.DataFrame) -> list[str]:
    """The client cache's time ratio (with / without, medians) over every Zarr client, layout and location, at the
    highest latency and concurrency: ``the client cache took 0.27x to 0.54x the time (best: ...)``."""
    remote = rows[(rows["reader"] == "zarr") & (rows["location"] != "local")] if len(rows) else rows
    if remote.empty or "client_cache" not in remote:
        return []
    cut = remote[(remote["workload"] == "cutouts") & (remote["latency_ms"] == remote["latency_ms"].max())]
    cut = cut[cut["concurrency"] == cut["concurrency"].max()]
    times = cut.groupby(["client", "layout", "location", "client_cache"])["elapsed_s"].median().unstack()
    ratio = (times[True] / times[False]).dropna() if {True, False} <= set(times.columns) else pd.Series(dtype="float64")
    if len(ratio) < 2:
        return []
    return [f"over every client and layout, the client cache took {ratio.min():.2f}x to {ratio.max():.2f}x the time "
            f"(best: {' '.join(map(md, ratio.idxmin()))})"]
