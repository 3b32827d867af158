"""Object storage: the writers that can, writing and reading one Zarr array through S3 (a real server).

One case is one backend (every array adapter whose ``stores`` include "s3": tensorstore's s3 kvstore,
zarr-python through obstore, acquire-zarr's S3 stream) at one link latency. By default each case starts its
own versitygw (posix backend, Apache-2.0) on 127.0.0.1 (``servers.versitygw``) with the credentials the runner
made for this case's process, the only AWS variables that process has (``servers.versitygw.case_environ``:
nothing of the user's), behind the emulated link of the cache chapter (``servers.link.LinkProcess``: one round
trip per connection and per request, in a process of its own) when ``latencies_ms`` is above 0; with
``endpoint`` it uses that server over the real network instead (AWS, Ceph, a MinIO or versitygw of the user's:
credentials from the user's standard AWS variables, the bucket must exist). Each row names the server
(``s3_server``: its name and version, or the endpoint). A bundled server that dies during the case ends the case
with the reason (``suites.end_case``); the other cases have their own.

A case is measured in rounds (``suites.Rounds``): its data generated, its server and link started and its warm-up
rounds run once, before the first round; they stay up until the case closes. Every case of a run is open at once,
each in its own worker with its own server (the quick profile's 3, the standard's 6), and each worker holds its
array between rounds (standard's 128 MiB: workers peaked at 0.9-1.0 GB each on 2026-11-27, the array, the copy
read back and the library's buffers; quick's is 32 MiB; the server holds nothing between rounds).

Per round, all off the clock unless said: **write** a new array under the case's prefix (timed: the
first call to the end of finalize, i.e. every object PUT and acknowledged: versitygw acknowledges a PUT once
it is in the page cache, without fsync, as the ceiling's ``write_nofsync`` does); with the bundled server, its data
files are evicted from the page cache and the eviction checked; **read** (timed: the whole array back
through S3 by the same library, compared with the data); the array read again by another library and compared
with the data: whole, or in the quick profile after the first measured round a sample of its chunks
(``verified_scope``); its objects deleted. Every cache of the machine is dropped before the first cold read only (see
:mod:`.eviction`). The server's own counters give requests per S3 call (PUT, multipart parts, GET, HEAD,
LIST) and bytes in and out for each timed region, and its CPU seconds (/proc/PID/stat, read outside the
region) with the cores it may use; the multipart part size each library chose is stated where it used
multipart, and each row states the client's S3 request concurrency and the setting it comes from
(``Adapter.s3_concurrency``).
"""

from __future__ import annotations

import itertools
import math
import uuid
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

import numpy as np

from benchmarks_lib.adapters import adapter_class
from benchmarks_lib.adapters.obstore_s3 import delete_prefix, list_objects
from benchmarks_lib.base.specs import (
    ArraySpec,
    SpecError,
    parse_codecs,
    parse_dims,
    parse_items,
    parse_names,
    parse_number,
)
from benchmarks_lib.data.storage import S3Target, parse_s3
from benchmarks_lib.inputs.arrays import generated
from benchmarks_lib.inputs.user_data import dataset_dtype, parse_dataset, sources_param
from benchmarks_lib.measure import cold_read_state, timed
from benchmarks_lib.measure.eviction import StoreEvictions
from benchmarks_lib.measure.ledger import phase
from benchmarks_lib.records.durability import durability_columns
from benchmarks_lib.servers.link import LinkProcess
from benchmarks_lib.suites import Case, CaseContext, Rounds, Suite, end_case
from benchmarks_lib.suites.kit.backends import backend_names
from benchmarks_lib.suites.kit.common import RUN_KEYS, preferred_spec, sized_by, with_defaults
from benchmarks_lib.suites.kit.in_rounds import whole_case
from benchmarks_lib.suites.kit.own_data import case_dataset, fit_crops
from benchmarks_lib.suites.kit.roundtrip import skip_rows
from benchmarks_lib.suites.kit.verification import sample_regions, verifier, verify_scope

NAME = "s3"
BACKENDS = backend_names(lambda cls: "s3" in getattr(cls, "stores", ()), kinds=("array",))
#: the first codec of this list each writer offers (acquire-zarr: Blosc1 only), stated per row
CODECS = "blosc-lz4:5:shuffle,lz4"

#: shards of 1 x 2 x 2 chunks (4 MiB): acquire-zarr 0.10.0 crashed (SIGSEGV) here writing shards of
#: 2 x 2 x 2 chunks (16 MiB) to S3, which it writes fine to a local disk; such a case is its error row.
#: quick: the standard profile's cases without the emulated link and at a quarter of its array (the same codec,
#: chunks, shards and server), in rounds (at most ``iterations``, each question stopped once answered, within the
#: profile's time): 32 MiB (4 MiB shards of 1 MiB chunks), so that a round (3.2 s at 64 MiB, 5 s at 128 MiB on
#: 2026-11-29) reaches the first look within the quick book's share; standard: 128 MiB
PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "backends": list(BACKENDS), "endpoint": None, "target": "s3://iobench/runs", "dataset": "em_like",
        "latencies_ms": [0],
        "dims": "z:32:16:16,y:1024:256:512,x:1024:256:512", "codec": CODECS, "seed": 0,
        "warmups": 1,
    },
    "standard": {
        "backends": list(BACKENDS), "endpoint": None, "target": "s3://iobench/runs", "dataset": "em_like",
        "latencies_ms": [0, 10],
        "dims": "z:128:16:16,y:1024:256:512,x:1024:256:512", "codec": CODECS, "seed": 0,
        "warmups": 1,
    },
    "seed": {
        "backends": list(BACKENDS), "endpoint": None, "target": "s3://iobench/runs", "dataset": "em_like",
        "latencies_ms": [0, 10],
        "dims": "z:1024:64:128,y:2048:256:1024,x:2048:256:1024", "codec": CODECS, "seed": 0, "warmups": 1,
    },
}
PARAMETERS = tuple(k for k in PROFILES["quick"] if k not in RUN_KEYS)


def build_cases(params: dict, profile: str) -> list[Case]:
    """Validate (SpecError before any work); one case per backend."""
    p = with_defaults(params, profile, PROFILES, NAME)
    names = parse_names(p["backends"], "backends", BACKENDS)
    target = parse_s3(p["target"], p["endpoint"])
    dims = parse_dims(p["dims"])
    if len(dims.dims) < 2:
        raise SpecError(f"dims {p['dims']!r} needs at least 2 dimensions for the datasets")
    dataset, source = parse_dataset(p["dataset"])
    if source is not None:  # a person's own data: the crop the dims measure
        (dims,) = fit_crops(source, names, dims=(dims, True))
    codecs = [str(c) for c in parse_codecs(p["codec"], "codec")]
    if not codecs:
        raise SpecError("codec is empty; give at least one, e.g. blosc-lz4:5:shuffle")
    latencies = list(dict.fromkeys(parse_number(v, "latencies_ms value", minimum=0, maximum=10_000, unit="ms")
                                   for v in parse_items(p["latencies_ms"], "latencies_ms", "[0, 10]")))
    if not latencies:
        raise SpecError("latencies_ms is empty; give at least one, e.g. [0]")
    if target.endpoint and latencies != [0]:
        raise SpecError(f"latencies_ms {latencies} needs the bundled S3 server: a link is emulated only in front of a "
                        "server on 127.0.0.1; with endpoint set, use [0] (its network is the real one)")
    common = {"endpoint": target.endpoint, "target": target.url, "dataset": dataset, "dims": str(dims),
              "codecs": codecs, "seed": p["seed"]}
    if source is not None:
        common["sources"] = sources_param([source])
    return [Case(NAME, name, {**common, "latency_ms": latency}) for latency in latencies for name in names]


def _object_bytes(target: S3Target) -> tuple[int, int]:
    """(objects, bytes) under the prefix."""
    sizes = [size for _, size in list_objects(target)]
    return len(sizes), sum(sizes)


def rounds(case: Case, ctx: CaseContext) -> Rounds:
    """The case in rounds (``suites.Rounds``): the data generated, the server (and the link) started and kept for the
    case's life, the warm-up round-trips run, before the first yield; each round then writes a new array and reads
    it back, verified, and deletes it. Closing it stops the server and the link."""
    p, backend = case.params, case.backend
    cls = adapter_class(backend, "array")
    dims = parse_dims(p["dims"])
    dataset, data = case_dataset(p, p["dataset"], dims.shape)
    spec = preferred_spec(dims, dataset.dtype, p["codecs"], cls())
    columns: dict[str, Any] = {**data, "shape": list(dims.shape),
                               "chunks": list(dims.chunks), "shards": list(dims.shards or []),
                               "layout": "sharded" if dims.shards else "unsharded", "nbytes": dataset.nbytes,
                               "store": "s3", "latency_ms": p.get("latency_ms", 0),
                               **durability_columns(False, False)}  # S3 has no fsync (its reads say so too)
    columns["codec"] = str(spec.codec)
    concurrency = cls().s3_concurrency()
    columns["client_concurrency"], columns["client_concurrency_setting"] = concurrency or (None, None)
    if reason := cls().is_incompatible(spec, "write"):
        return skip_rows(reason, columns)
    verified_by = verifier(cls(), spec, "s3")  # another library that reads this from S3
    columns["verified_by"] = verified_by
    values = generated(dataset, tuple(slice(None) for _ in dims.shape), ctx.scratch)  # before any clock
    with ExitStack() as stack:
        server, link = None, None
        if p["endpoint"] is None:
            from benchmarks_lib.servers import ServerUnavailable
            from benchmarks_lib.servers.versitygw import VersityServer, case_credentials

            try:
                with phase("prep"):
                    server = stack.enter_context(VersityServer(bucket=parse_s3(p["target"]).bucket,
                                                               root=ctx.scratch, credentials=case_credentials(),
                                                               on_death=end_case))
            except ServerUnavailable as exc:
                return skip_rows(str(exc), {**columns, "s3_server": "versitygw (not installed)"})
            columns["server"] = f"{server.label} {server.endpoint} (started in {server.start_s:.1f} s)"
            columns["s3_server"] = server.label
            if p["latency_ms"]:
                with phase("prep"):
                    link = stack.enter_context(LinkProcess(server.port, latency_ms=p["latency_ms"]))
            direct = parse_s3(p["target"], server.endpoint)
        else:
            columns["server"] = columns["s3_server"] = p["endpoint"]
            direct = parse_s3(p["target"], p["endpoint"])
        name = f"{backend}-{uuid.uuid4().hex[:8]}"
        # the measured clients go through the link; listing, deleting and verifying go straight to the server
        target = (replace(direct, endpoint=link.url) if link else direct).child(name)
        direct = direct.child(name)
        columns["s3_prefix"] = target.url
        stack.callback(_delete, direct)  # whatever a failed round left, before the server stops
        evictions = StoreEvictions()  # every cache dropped before the first cold read only (see .eviction)

        def round_trip(it: int | None) -> list[dict]:
            """Round ``it``'s rows (a warm-up's: none): a new array written (timed), the server's copy evicted,
            read back (timed), verified by another library, and its objects deleted, all off the clock unless said:
            an open case keeps nothing on the server between rounds."""
            writer = cls()
            before = _snapshot(server, link)
            with timed(sample=False, io=False) as wrote:
                writer.create(target, spec)
                writer.write(0, values)
                writer.finalize()
            traffic = _traffic(server, link, before)
            objects, stored = _object_bytes(direct)
            row = {**columns, **wrote.result.as_row(), **traffic, "operation": "write", "iteration": it,
                   "objects": objects, "bytes_on_disk": stored, "gbps": dataset.nbytes / wrote.result.elapsed_s / 1e9,
                   "multipart_part_bytes": _part_bytes(traffic, stored)}
            read_row: dict[str, Any] = {}
            if cls.supports_read:
                state = "unknown"  # a user's endpoint: its caches are its own
                server_read0 = None
                if server:
                    report = evictions.evict(server.data_dir, rewritten=True)
                    read_row |= report.as_row()
                    server_read0 = server.read_bytes()
                before = _snapshot(server, link)
                reader = cls()
                with timed(sample=False, io=False) as read:
                    reader.open_reader(target, spec)
                    back = reader.read(tuple(slice(None) for _ in dims.shape))
                    reader.close_reader()
                if server:
                    disk = server.read_bytes()
                    # the proof needs the server's disk reads to cover the array's objects (its data directory
                    # also holds deleted objects awaiting purge, which a read never touches)
                    state = cold_read_state(report, None if disk is None or server_read0 is None else
                                            disk - server_read0, stored)
                    evictions.saw(state)
                    read_row |= _traffic(server, link, before)
                ok = back.shape == values.shape and np.array_equal(back, values)
                read_row |= {**columns, **read.result.as_row(), "operation": "read", "iteration": it,
                             "gbps": dataset.nbytes / read.result.elapsed_s / 1e9, "cache_state": state,
                             "verified": ok, "objects": objects, "bytes_on_disk": stored}
            rows: list[dict] = []
            if it is not None:  # a warm-up round is not verified (nor recorded)
                scope = verify_scope(ctx.profile, it)
                verified = _verify(verified_by, direct, spec, values, scope) if verified_by else None
                row.update(verified=verified, verified_scope=scope if verified_by else None)
                rows = [row, *([read_row] if read_row else [])]
            _delete(direct)
            return rows

        for _ in range(ctx.warmups):
            round_trip(None)
        try:
            yield []
            for r in itertools.count():
                yield round_trip(r)
        finally:  # closed (or failed): the last objects deleted, then the server and the link stop
            with phase("teardown"):
                stack.close()


def _delete(direct: S3Target) -> None:
    """Every object under the case's prefix (only it), off the clock."""
    with phase("teardown"):
        delete_prefix(direct)


run_case = whole_case(rounds)


def _snapshot(server: Any, link: LinkProcess | None) -> tuple | None:
    """The server's counters, the link's charged round trips and the server's CPU seconds now (None for a user's
    endpoint); the CPU time is read last, so the metrics request is outside the region it brackets."""
    return (server.counts(), link.charged() if link else None, server.cpu_s()) if server else None


def _traffic(server: Any, link: LinkProcess | None, before: tuple | None) -> dict:
    """What the server (and the link) saw since ``before``: S3 requests and bytes, the link's connections, the
    server's CPU seconds and the cores it may use."""
    if before is None:
        return {}
    cpu = server.cpu_s()  # first: the metrics request below is not the timed region's
    counts, charged, _ = _snapshot(server, link)
    row = (counts - before[0]).as_row()
    if charged:
        row["link_connections"] = charged["connections"] - before[1]["connections"]
    if cpu is not None and before[2] is not None:
        row |= {"server_cpu_s": cpu - before[2], "server_cores": server.cores()}
    return row


def _part_bytes(traffic: dict, stored: int) -> float | None:
    """Mean multipart part size of a write that used multipart (None when every object was one PUT)."""
    parts = traffic.get("s3_multipart_parts") or 0
    return stored / parts if parts else None


@phase("verify")
def _verify(reader_name: str, target: S3Target, spec: ArraySpec, values: np.ndarray, scope: str = "full") -> bool:
    """The array read back by another library: whole, or (``scope`` ``sampled``) a few of its chunks."""
    reader = adapter_class(reader_name, "array")()
    reader.open_reader(target, spec)
    regions = sample_regions(spec) if scope == "sampled" else [tuple(slice(None) for _ in spec.shape)]
    try:
        backs = [(reader.read(ix), values[ix]) for ix in regions]
    finally:
        reader.close_reader()
    return all(back.shape == want.shape and bool(np.array_equal(back, want)) for back, want in backs)


def case_nbytes(case: Case) -> int:
    dims = parse_dims(case.params["dims"])
    return math.prod(dims.shape) * np.dtype(dataset_dtype(case.params["dataset"], case.params.get("sources"))).itemsize


SUITE = Suite(
    name=NAME,
    title="Object storage: Zarr through S3",
    measures="Zarr writers and readers through S3 (a real versitygw on 127.0.0.1, or your endpoint)",
    build_cases=build_cases,
    run_case=run_case,
    rounds=rounds,
    questions=("write", "read"),
    question_keys=("dataset", "codec", "nbytes", "latency_ms"),
    profiles=PROFILES,
    case_keys=("dataset", "codec", "nbytes", "latency_ms", "s3_server"),
    time_budget_s={"quick": 20, "standard": 100},  # standard: its first look on 2 cores
    user_s3=lambda case: case.params["endpoint"] is not None,
    **sized_by(case_nbytes),
    smoke={"dims": "z:8:4:8,y:64:32:64,x:64:32:64", "iterations": 1, "warmups": 0},
)

__all__ = ["BACKENDS", "PROFILES", "SUITE", "build_cases", "rounds", "run_case"]
