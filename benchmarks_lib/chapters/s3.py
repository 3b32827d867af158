"""The object-storage chapter: writing and reading one Zarr array through S3, with the server's own counts.

Per backend and operation: median GB/s with its 95% distribution-free interval over iterations, the requests the
server saw per timed region (PUTs, multipart parts, GETs/HEADs), the bytes it received and sent, the objects
the array became, the client's S3 requests in flight at most ("in flight": its setting), the cores the server's
CPU time kept busy (whether the server was the bottleneck, said per case), and the verification (the same
library's read and another library's). A write's time ends when every object was acknowledged by the server (S3
has no fsync: an acknowledged PUT is durable as far as the server promises). The chapter names the server and its
version (``s3_server``), its licence and what it does with a PUT (versitygw's posix backend: a file write without
fsync, so a page-cache write), beside the raw baseline's write of the same bytes to the same disk with and without
fsync (the run's ceiling), so that nobody mistakes a server's page cache for its disk. With more than one link
latency, each backend is shown at each (one round trip per connection and per request, as in the cache chapter).
"""

from __future__ import annotations

import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.stats import format_point, summarize, two_sample
from benchmarks_lib.chapters import tables
from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.chapters.common import (
    error_warning,
    no_answer,
    ok_rows,
    problems,
    run_header,
    s3_servers,
    with_ceiling_fraction,
)
from benchmarks_lib.chapters.flags import point_flags
from benchmarks_lib.chapters.style import (
    CI95,
    draw_ceilings,
    empty_figure,
    legend_outside,
    median_table,
    sns,
    subplots,
    too_few,
    whiskers,
)
from benchmarks_lib.rules.ceilings import ceiling_gbps
from benchmarks_lib.rules.ranking import rank_against_leader
from benchmarks_lib.rules.words import answer_clause, change_text, number

TIMES = ("write: create to finalize, every object PUT and acknowledged by the server; read: the whole array back "
         "through S3 after the server's files were evicted from the page cache")


def header(result) -> str:
    """The run header of this chapter (markdown)."""
    return run_header(result, TIMES)


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    rows = ok_rows(df)
    rows = rows[(rows["backend"] != "ceiling") & rows["operation"].isin(["write", "read"])] if len(rows) else rows
    latency = rows["latency_ms"].astype("float64").fillna(0.0) if "latency_ms" in rows else 0.0
    return rows.assign(latency_ms=latency)


def _at(latency: float) -> str:
    return f"{latency:g} ms link"


def speeds(df: pd.DataFrame):
    """Median GB/s per backend for write and read through S3, the machine's raw disk ceilings dashed."""
    rows = _rows(df)
    if rows.empty:
        return empty_figure("S3 write/read")
    label = rows["backend"] + " (" + rows["codec"].astype(str) + ")"
    if rows["latency_ms"].nunique() > 1:
        label = label + ", " + rows["latency_ms"].map(_at)
    rows = rows.assign(label=label).sort_values(["backend", "latency_ms"])
    fig, ax = subplots(figsize=(7.2, 1.6 + 0.6 * rows["label"].nunique()))
    sns.barplot(data=rows, y="label", x="gbps", hue="operation", estimator="median", **CI95, ax=ax)
    draw_ceilings(ax, ceiling_gbps(df), ("write_nofsync", "write_fsync", "read_cold"), vertical=True)
    ax.set(xlabel=f"GB/s through S3 ({whiskers(rows, ['label', 'operation'], 'gbps')})", ylabel="",
           title=f"One Zarr array through S3: {'; '.join(s3_servers(rows)) or 'server not recorded'}\n"
                 "(server and client share this machine)")
    legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def latency(df: pd.DataFrame):
    """Real time of each backend's write and read against the link's latency (medians with 95% intervals)."""
    rows = _rows(df)
    if rows.empty:
        return empty_figure("S3 time against link latency")
    numbers = median_table(rows, "latency_ms", "elapsed_s", ["backend", "operation"], _at, "real time, s")
    if (few := too_few(rows, "latency_ms", "S3 time against link latency", "latency", numbers)) is not None:
        return few
    fig, ax = subplots(figsize=(7.2, 4.6))
    sns.lineplot(data=rows, x="latency_ms", y="elapsed_s", hue="backend", style="operation", estimator="median",
                 **CI95, marker="o", ax=ax)
    ax.set(xlabel="link latency: one round trip per connection and per request (ms)",
           ylabel=f"real time, s ({whiskers(rows, ['backend', 'operation', 'latency_ms'], 'elapsed_s')})",
           title="What a slower link costs each S3 client")
    legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (server, backend, link latency, operation): speed, the server's requests and bytes, the link's
    connections, objects, verification (the server and codec columns only where rows differ in them, the
    connections only where a link was emulated)."""
    rows = _rows(df)
    cols = ["server", "backend", "codec", "link ms", "operation", "GB/s", "requests", "PUT", "multipart parts",
            "part MB", "GET/HEAD", "MB in", "MB out", "connections", "objects", "MB stored", "in flight",
            "server cores busy", "verified"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    out = []
    rows = rows.assign(s3_server=rows["s3_server"].astype("string").fillna("-") if "s3_server" in rows else "-")
    for p in summarize(rows, ["s3_server", "backend", "codec", "latency_ms", "operation"], "gbps").itertuples(
            index=False):
        part = rows[(rows["backend"] == p.backend) & (rows["codec"] == p.codec) & (rows["operation"] == p.operation)
                    & (rows["latency_ms"] == p.latency_ms) & (rows["s3_server"] == p.s3_server)]

        def med(col: str, scale: float = 1.0, part=part) -> str:
            values = part[col].dropna() if col in part else pd.Series(dtype=float)
            return "-" if values.empty else f"{values.astype(float).median() * scale:.4g}"

        out.append({"server": p.s3_server, "backend": p.backend, "codec": p.codec, "link ms": f"{p.latency_ms:g}",
                    "operation": p.operation,
                    "GB/s": format_point(p._asdict()), "requests": med("s3_requests"),
                    "PUT": med("s3_put_requests"), "multipart parts": med("s3_multipart_parts"),
                    "part MB": med("multipart_part_bytes", 1e-6), "GET/HEAD": med("s3_get_requests"),
                    "MB in": med("s3_received_bytes", 1e-6), "MB out": med("s3_sent_bytes", 1e-6),
                    "connections": med("link_connections"),
                    "objects": med("objects"), "MB stored": med("bytes_on_disk", 1e-6),
                    "in flight": med("client_concurrency"), "server cores busy": _cores_busy(part),
                    "verified": "yes" if part["verified"].astype("boolean").fillna(False).all() else "NO"})
    table = pd.DataFrame(out, columns=cols)
    # narrower for the page: one codec for all is stated by the figure's labels; no link, no connections counted
    if table["codec"].nunique() == 1:
        table = table.drop(columns="codec")
    if table["server"].nunique() == 1:  # one server: the conclusion and the figure name it
        table = table.drop(columns="server")
    if table["link ms"].nunique() == 1:  # one latency: the conclusion says which
        table = table.drop(columns="link ms")
    for col in ("connections", "in flight", "server cores busy"):
        if (table[col] == "-").all():
            table = table.drop(columns=col)
    return tables.table(table, keys=["server", "backend", "codec", "link ms", "operation"])


def _cores_busy(part: pd.DataFrame) -> str:
    """"0.85 of 2": the server's median CPU seconds per real second, of the cores it may use."""
    busy = _busy(part, "server_cpu_s")
    cores = part["server_cores"].dropna().median() if "server_cores" in part else float("nan")
    return "-" if busy != busy or cores != cores else f"{busy:.2f} of {cores:.0f}"


def conclusion(df: pd.DataFrame) -> str:
    rows = _rows(df)
    if rows.empty:
        return "No S3 measurements in this run."
    lines = error_warning(df)
    several = rows["latency_ms"].nunique() > 1
    for (backend, op, lat), part in rows.groupby(["backend", "operation", "latency_ms"]):
        requests = part["s3_requests"].median() if "s3_requests" in part else float("nan")
        lines.append(f"- **{md(backend)}** {md(op)}{f' at {_at(lat)}' if several else ''}: "
                     f"{part['gbps'].median():.3g} GB/s "
                     f"(median of n={len(part)}), {requests:.0f} requests to the server for "
                     f"{part['objects'].median():.0f} objects.")
    if several:
        lines += _latency_lines(rows)
    lines += durability_lines(df)
    lines += server_lines(rows)
    lines += ["", "Server and client share this machine's cores here: on a real object store the network and the "
              "server's own limits take their place; run the same chapter with `ENDPOINT` set to measure one."]
    return "\n".join(lines)


def _latency_lines(rows: pd.DataFrame) -> list[str]:
    """What the slowest link added per request: near its latency, the client sent its requests one after
    another; well below, it kept several in flight."""
    lo, hi = rows["latency_ms"].min(), rows["latency_ms"].max()
    lines = []
    for (backend, op), part in rows.groupby(["backend", "operation"]):
        fast, slow = part[part["latency_ms"] == lo], part[part["latency_ms"] == hi]
        if fast.empty or slow.empty or "s3_requests" not in slow or not slow["s3_requests"].median():
            continue
        extra = slow["elapsed_s"].median() - fast["elapsed_s"].median()
        per = 1000 * extra / slow["s3_requests"].median()
        how = "one request after another" if per >= 0.8 * hi else "several requests in flight"
        lines.append(f"- A {hi:g} ms link added {extra:.2f} s to **{md(backend)}**'s {md(op)} "
                     f"({change_text(two_sample(fast['elapsed_s'], slow['elapsed_s']))}): "
                     f"{per:.1f} ms per request, i.e. {how}.")
    return lines


def durability_lines(df: pd.DataFrame) -> list[str]:
    """Per S3 server: its name, version and licence, and what it does with a PUT; then the run's raw baseline,
    the same bytes written to the same disk with and without fsync (the ceiling), the pair an S3 write sits
    between."""
    from benchmarks_lib.records.store import OLD_MINIO
    from benchmarks_lib.servers.versitygw import DURABILITY, LICENCE

    rows = _rows(df)
    lines = []
    for name in s3_servers(rows):
        if name.startswith("versitygw"):
            said = f"{LICENCE}, on this machine: {DURABILITY}"
        elif name == OLD_MINIO:
            said = "the server this run was recorded on; what it does with a PUT was not stated with this run"
        else:
            said = "your endpoint: what it does with a PUT is its own (S3 promises only that an acknowledged object " \
                   "can be read back)"
        lines.append(f"- **Server** {md(name)} ({said}).")
    ceiling = ok_rows(df)
    ceiling = ceiling[ceiling["backend"] == "ceiling"] if len(ceiling) else ceiling
    speeds = ceiling_gbps(df)
    if lines and {"write_nofsync", "write_fsync"} <= set(speeds):
        raw = ceiling[ceiling["operation"] == "write_nofsync"]["nbytes"].dropna()
        written = rows[rows["operation"] == "write"]["nbytes"].dropna()
        same = "the same " if len(raw) and len(written) and raw.median() == written.median() else ""
        size = f"{raw.median() / 1e6:.0f} MB" if len(raw) else "its bytes"
        lines.append(f"- **Raw baseline**: plain file writes of {same}{size} to the same disk at "
                     f"{speeds['write_nofsync']:.3g} GB/s without fsync and {speeds['write_fsync']:.3g} GB/s with "
                     "fsync (this run's ceiling): a server that does not fsync answers at the first kind of speed, "
                     "and an acknowledged PUT is then as durable as an unflushed file.")
    return lines


#: a server whose CPU time over a timed region reaches this share of the cores it may use was the bottleneck
SERVER_BOUND_SHARE = 0.8


def _busy(part: pd.DataFrame, col: str) -> float:
    """Median cores ``col`` (CPU seconds) kept busy over the timed region: CPU seconds / real seconds."""
    if col not in part:
        return float("nan")
    share = part[col].astype("float64") / part["elapsed_s"].astype("float64")
    return float(share.median()) if share.notna().any() else float("nan")


def server_lines(rows: pd.DataFrame) -> list[str]:
    """Per case (backend, operation, link): was the server the bottleneck? Its CPU seconds over the timed
    region's real time (cores kept busy) against the cores it may use; the client's beside it, as both share
    this machine."""
    if "server_cpu_s" not in rows or rows["server_cpu_s"].isna().all():
        return []
    lines = []
    for (backend, op, lat), part in rows.groupby(["backend", "operation", "latency_ms"]):
        server, client = _busy(part, "server_cpu_s"), _busy(part, "cpu_s")
        cores = part["server_cores"].dropna().median() if "server_cores" in part else float("nan")
        if server != server or cores != cores:
            continue
        used = f"the server kept {server:.2f} of its {cores:.0f} cores busy, the client {client:.2f}"
        if server >= SERVER_BOUND_SHARE * cores:
            verdict = "the server was the bottleneck"
        elif server + client >= SERVER_BOUND_SHARE * cores:
            verdict = "not the server alone: server and client together filled the machine's cores"
        else:
            verdict = "the server was not the bottleneck"
        lines.append(f"- {md(backend)} {md(op)} at {_at(lat)}: {verdict} ({used}; median of n={len(part)}).")
    return lines


def answer(df: pd.DataFrame) -> str:
    rows = _rows(with_ceiling_fraction(df))
    if rows.empty:
        return no_answer("S3 measurements")
    rows = rows[rows["latency_ms"] == rows["latency_ms"].min()]
    parts = []
    for op, part in rows.groupby("operation", sort=False):
        rankings = rank_against_leader(part, "gbps", True)  # verified rows only, like for like
        if rankings:
            r = max(rankings, key=lambda g: len(g.entries))
            more = f" ({len(rankings) - 1} more group(s) of equals: see the chapter)" if len(rankings) > 1 else ""
            parts.append(f"{md(op)}: " + answer_clause(r, lambda e: f"{number(e.median)} GB/s", "clients",
                                                       lambda e: point_flags(e.rows)) + more)
    if not parts:
        return no_answer("verified S3 measurements")
    link = f" at {_at(rows['latency_ms'].iloc[0])}" if rows["latency_ms"].iloc[0] else ""
    where = "; ".join(md(name) for name in s3_servers(rows)) or "server not recorded"
    return f"Through S3 ({where}{link}), against the best median: " + "; ".join(parts) + "."


#: the chapter's standard figures, by title (the explorer draws them for any run)
FIGURES = {"Write and read GB/s through S3": speeds, "S3 time against link latency": latency}

__all__ = ["CHAPTER", "FIGURES", "answer", "conclusion", "durability_lines", "header", "latency", "problems", "speeds",
           "summary"]

CHAPTER = Chapter("s3", suite="s3", answer=answer, summary=summary,
                  conclusion=conclusion, problems=problems, figures=FIGURES, order=60)
