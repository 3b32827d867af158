"""The cache chapter's cases run: one configuration's reads, each a fresh process on an input evicted from the page
cache, with the client's and the server's counters and the proof that the read was cold (the plan is in
:mod:`.cache`). A case is measured in rounds (``suites.Rounds``): set up once (its input, the values its reads must
return, its HTTP or S3 server), then one read per round."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks_lib.adapters import adapter_class, backend_status
from benchmarks_lib.base.availability import Unavailable
from benchmarks_lib.base.specs import shape_text
from benchmarks_lib.inputs import inputs_dir, root_sample, zarr_store
from benchmarks_lib.inputs.zarr_store import ZARR_DATASET
from benchmarks_lib.measure.fresh import Forks
from benchmarks_lib.suites import Case, CaseContext, Rounds, end_case
from benchmarks_lib.suites.kit.in_rounds import whole_case


def _fmt_bytes(n: int) -> str:
    if n == 0:
        return "0"
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def config_label(params: dict) -> str:
    """A short human label of one configuration, used by the figures."""
    reader = params["reader"]
    if reader == "root":
        return f"cache {_fmt_bytes(params['cache_bytes'])}, async {params['async_prefetch']}"
    if reader == "uproot":
        step = params["step"]
        step_text = f"{step} entries" if isinstance(step, int) else _fmt_bytes(int(str(step).split()[0]))
        workers = f" x{params['num_workers']}" if params["source"] == "multithreaded" else ""
        return f"{params['source']}{workers}, step {step_text}"
    return f"{params['client']} {params['layout']}, cache {'on' if params['client_cache'] else 'off'}"


def _needs(q: dict) -> list[tuple[str, str]]:
    """The registry entries (name, kind) a case needs: its reader and the writer of its input."""
    if q["reader"] == "zarr":
        return [(q["client"], "remote"), (zarr_store.WRITER, "array")]
    return [(q["reader"], "remote"), (q["sample"]["writer"], "remote")]


def unavailable_reason(case: Case) -> str | None:
    """Why a case cannot run here (its reader or its input's writer is not installed, or its server), or None."""
    q = case.params
    reason = next(filter(None, (backend_status(name, kind).reason for name, kind in _needs(q))), None)
    if reason or q["location"] == "local":
        return reason
    if q["location"] == "s3":
        from benchmarks_lib.servers.versitygw import versitygw_missing_reason

        reason = adapter_class(q["client"], "remote").missing_for("s3")
        return reason or (versitygw_missing_reason() if q["server"] == "versitygw" else None)
    if q["server"] == "nginx":
        from benchmarks_lib.servers.nginx import nginx_missing_reason

        return nginx_missing_reason()
    return None


def _base_row(case: Case) -> dict:
    q = case.params
    row: dict[str, Any] = {
        "location": q["location"], "server": q.get("server"), "latency_ms": q.get("latency_ms"),
        "bandwidth_bytes_s": q.get("bandwidth"), "config": config_label(q), "reader": q["reader"],
    }
    if q["reader"] in ("root", "uproot"):
        s = q["sample"]
        row.update(dataset="seed004-ttree", codec="zlib:1", entries=s["entries"], branches=s["branches"],
                   auto_flush=s["auto_flush"], sample_writer=s["writer"])
    if q["reader"] == "root":
        row.update(operation="root_read", client="ROOT", cache_bytes=q["cache_bytes"],
                   async_prefetch=q["async_prefetch"])
    elif q["reader"] == "uproot":
        step = q["step"]
        row.update(operation="uproot_iterate", client=f"uproot-{q['source']}", step=str(step),
                   step_unit="entries" if isinstance(step, int) else "bytes", concurrency=q["num_workers"])
    else:
        row.update(operation=f"zarr_read_{q['workload']}", client=q["client"], dataset=ZARR_DATASET, dtype="uint16",
                   codec="zstd:0", layout=q["layout"], workload=q["workload"], client_cache=q["client_cache"],
                   concurrency=q["concurrency"], zarr_dims=q["store"]["dims"],
                   cutout=shape_text(q["cutout"]) if q["workload"] == "cutouts" else "whole")
    return row


def _skip_rows(case: Case, reason: str) -> list[dict]:
    return [{**_base_row(case), "iteration": 0, "status": "skip", "reason": reason}]


def rounds(case: Case, ctx: CaseContext) -> Rounds:
    """The configuration in rounds (``suites.Rounds``): its input prepared, the values its reads must return computed
    and its server started (kept for the case's life, stopped on close) before the first yield; then each round one
    measured read, in a fresh process on an input evicted from the page cache first.

    Warm-ups are not run: every read starts cold by design (fresh process, evicted input).
    """
    from benchmarks_lib.servers import ServerUnavailable

    if reason := unavailable_reason(case):
        return _skip_rows(case, reason)
    with ExitStack() as stack:
        try:
            read = _open_case(case, ctx, stack)
        except (Unavailable, ServerUnavailable) as exc:  # found missing only later (e.g. a broken install)
            return _skip_rows(case, str(exc))
        yield []
        for r in itertools.count():
            try:
                row = read(r)
            except (Unavailable, ServerUnavailable) as exc:  # found missing at its first read
                return _skip_rows(case, str(exc))
            yield [row]


run_case = whole_case(rounds)


def _prepare_input(q: dict, inputs: Path) -> tuple[Path, dict, Any]:
    """The case's input (written or reused, verified), the row columns describing it, and its record."""
    if q["reader"] in ("root", "uproot"):
        s = q["sample"]
        sample = root_sample.ensure_sample_file(inputs, s["entries"], s["branches"], s["auto_flush"],
                                                writer=s["writer"])
        return Path(sample.path), {"file_bytes": sample.file_bytes}, sample
    target = zarr_store.ensure_zarr_store(inputs, q["store"]["dims"], q["layout"], q["store"]["dataset"])
    info = zarr_store.zarr_store_info(target)
    return target, {"file_bytes": info["stored_bytes"],
                    "compression_ratio": info["array_bytes"] / info["stored_bytes"]}, info


def _reader(q: dict) -> type:
    """The case's remote adapter."""
    return adapter_class(q["client"] if q["reader"] == "zarr" else q["reader"], "remote")


def _read_once(q: dict, location: str, forks: Forks, expected: list[int] | None) -> dict:
    """One measured read by the case's remote adapter, in a process of its own forked from ``forks``."""
    reader = _reader(q)
    if q["reader"] == "root":
        settings = {"cache_bytes": q["cache_bytes"], "async_prefetch": bool(q["async_prefetch"])}
    elif q["reader"] == "uproot":
        settings = {"source": q["source"] if q["location"] != "local" else "local", "step_size": q["step"],
                    "num_workers": q["num_workers"]}
    else:
        settings = {"workload": q["workload"], "client_cache": q["client_cache"], "concurrency": q["concurrency"],
                    "cutout": q["cutout"], "cutouts": q["cutouts"], "dims": q["store"]["dims"],
                    "dataset": q["store"]["dataset"], "expected_crc32s": expected}
    return reader.read(location, timeout_s=q["timeout_s"], forks=forks, **settings)


def _open_case(case: Case, ctx: CaseContext, stack: ExitStack) -> Callable[[int], dict]:
    """Set ``case`` up (its input, the values its reads must return, its server entered on ``stack``) and return
    the measured read of a round: evict, reset the server's counters, read in a fresh process, prove it cold."""
    from benchmarks_lib import servers
    from benchmarks_lib.measure import cold_read_state
    from benchmarks_lib.measure.eviction import StoreEvictions

    q = case.params
    inputs = inputs_dir(ctx.scratch)
    target, input_columns, info = _prepare_input(q, inputs)
    base = {**_base_row(case), **input_columns}
    # before any eviction: computing them may read the store (and so fill the page cache)
    expected = (zarr_store.expected_crc32s(target, q["workload"], q["cutout"], q["cutouts"])
                if q["reader"] == "zarr" else None)
    server: Any = None
    if q["location"] == "http":
        server = stack.enter_context(servers.serve(inputs, q["server"], latency_ms=q["latency_ms"],
                                                   bandwidth=q["bandwidth"]))
    elif q["location"] == "s3":
        from benchmarks_lib.servers.s3site import S3Site

        server = stack.enter_context(S3Site(target, q["s3_target"], endpoint=q["s3_endpoint"], scratch=ctx.scratch,
                                            latency_ms=q["latency_ms"], bandwidth=q["bandwidth"], on_death=end_case))
        base["s3_server"] = server.label  # the server and its version, or the user's endpoint
    location = server.url_for(target) if server is not None else str(target)
    if server is not None and (q["location"] == "http" or server.bundled):
        base["server_url"] = server.url  # a server of ours, started once for the case: the same in every round
    # what holds the bytes the read fetches: the server's copy for S3 (a user's endpoint: nothing of ours)
    evict = getattr(server, "data_dir", target)
    # the input is only read between reads: flushed once, then advised out (never the machine's caches)
    evictions = StoreEvictions(drop_caches=False)
    # each read a process of its own, forked from one that imported the reader's library (its import and start-up,
    # 1-1.7 s a read on 2 cores): once for the worker's cases of the reader, or for the case where its environment is
    # the S3 server's credentials (nothing else)
    forks = stack.enter_context(_reader(q).forks(server.reader_environ() if q["location"] == "s3" else None))

    def read(iteration: int) -> dict:
        report = evictions.evict(evict) if evict is not None else None
        if server is not None:
            server.reset()
        metrics = _read_once(q, location, forks, expected)
        sums = metrics.pop("branch_sums", None)
        row = {**base, **metrics, **(report.as_row() if report else {}), "iteration": iteration, "status": "ok"}
        if q["reader"] in ("root", "uproot"):
            row["verified"] = (metrics.get("nbytes") == info.entry_bytes and metrics.get("entries") == info.entries
                               and root_sample.sums_match(sums, info))
        counters = server.counters() if server is not None else None
        if report is None:  # a user's S3 endpoint: its caches are its own
            row["cache_state"] = "unknown"
            return row
        if counters is not None:
            row.update(counters.as_row())
            # the server read the file: its disk reads prove the read was cold
            disk_read, needed = counters.io_read_bytes, min(counters.payload_bytes, base["file_bytes"])
            if q["reader"] == "zarr" and metrics.get("cutout_bytes"):
                # bytes moved per byte asked for; "_stored" divides by the cutout's compressed share
                row["read_amplification"] = counters.payload_bytes / metrics["cutout_bytes"]
                row["read_amplification_stored"] = row["read_amplification"] * base["compression_ratio"]
        else:
            asked = metrics.get("root_bytes_read", metrics.get("client_bytes")) or 0
            disk_read, needed = metrics.get("io_read_bytes"), min(asked, base["file_bytes"])
        row["cache_state"] = cold_read_state(report, disk_read, needed)
        evictions.saw(row["cache_state"])
        return row

    return read
