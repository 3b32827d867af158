"""Parallel writes: W Dask workers write disjoint regions of one Zarr array, then the whole array is verified.

One case is one (backend, alignment): a Dask ``LocalCluster`` of single-threaded worker processes is
started once, outside any clock. The data is generated once; per round the array is created by the
case (metadata only) and each of the round's W workers is handed its ranges of the data (along the
first axis, held in its memory) before the clock. The timed region is one wall-clock interval from
submitting the W writes (each worker opens the array with ``open_writer`` and writes its ranges) to
the last one finished, plus, with ``fsync``, one ``syncfs`` of the store; aggregate GB/s is the
array's bytes over it. Each worker also times its own write (per-worker GB/s). After the clock the
whole array is read back by another library and compared with the data slab by slab (one slab = one
chunk or shard along the first axis): every slab of every round in the standard and seed profiles and of
every unaligned round (its losses are the result); in quick, a sample of the slabs after each worker
count's first round of an aligned write (``verified_scope``).

Alignments (what makes concurrent writes safe):

- ``chunk``: unsharded array, every region starts and ends on a chunk boundary: no two writers touch one
  chunk (safe);
- ``shard``: sharded array, regions on shard boundaries: no two writers touch one shard (safe);
- ``unaligned``: unsharded array, stripes of half a chunk dealt round-robin to the workers: every chunk has
  two writers that read, modify and write it without a lock, and the later write can silently drop the
  other's half (unsafe: its verification says how many slabs came back wrong; a pass is luck, not safety).
  With one worker it is the same stripes written by one process: safe, and the cost of small writes.

Stores (``targets``): ``file``, a Zarr store in the case's scratch directory, or ``s3://bucket/prefix``, the
same array as objects through S3: by default on a versitygw this case starts on 127.0.0.1 (fresh credentials,
handed to the workers through the AWS environment they start with), or on ``endpoint`` (credentials from the
standard AWS variables, on every worker). S3 has no fsync: a write's time ends when every object is
acknowledged (by versitygw: in its page cache, never fsynced), and the server's own counts of requests and bytes
per round are recorded. Each round writes under a new prefix and deletes it (only it) afterwards.

Nothing assumes one host: with ``cluster`` a Dask scheduler address, that cluster's workers write (a ``file``
store in the case's scratch directory must then be on a filesystem they share: ``--scratch-dir``; an S3
target needs an ``endpoint`` they all reach). By default the case starts a ``LocalCluster`` on this machine,
whose cores bound the aggregate: on 2 cores it flattens at W = 2.

A case is measured whole, not in rounds (``suites.Rounds``): in rounds every case of a run stays open at once, and
each holds its own cluster (the standard profile's 12 cases: 48 Dask workers of ~70 MB each, idle ones using ~0.02
of a core each for their heartbeats, beside the case being measured).
"""

from __future__ import annotations

import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks_lib.adapters import adapter_class
from benchmarks_lib.adapters.obstore_s3 import delete_prefix
from benchmarks_lib.base.environment import usable_cores
from benchmarks_lib.base.specs import (
    ArraySpec,
    SpecError,
    parse_bool,
    parse_codec,
    parse_dims,
    parse_ints,
    parse_items,
    parse_names,
)
from benchmarks_lib.data.datasets import Dataset
from benchmarks_lib.data.storage import S3Target, parse_s3
from benchmarks_lib.inputs.arrays import generated
from benchmarks_lib.inputs.user_data import FileDataset, dataset_columns, make_dataset, parse_dataset, sources_param
from benchmarks_lib.measure import sync_store, timed
from benchmarks_lib.records.durability import durability_columns
from benchmarks_lib.suites import Case, CaseContext, Suite, end_case
from benchmarks_lib.suites.kit.backends import backend_names
from benchmarks_lib.suites.kit.common import RUN_KEYS, remove_output, sized_by, with_defaults
from benchmarks_lib.suites.kit.own_data import fit_crops
from benchmarks_lib.suites.kit.roundtrip import skip_rows
from benchmarks_lib.suites.kit.verification import SAMPLE_CHUNKS, verifier, verify_scope

NAME = "parallel"
BACKENDS = backend_names(lambda cls: getattr(cls, "writes_regions", False), kinds=("array",))
ALIGNMENTS = ("chunk", "shard", "unaligned")
MAX_WORKERS = 256

PROFILES: dict[str, dict[str, Any]] = {
    # quick: n = 5 per point at half the standard array (the same chunks, shards, codec and flush; 64 MiB: each
    # timed write lasts >= ~100 ms here); standard's 128 MiB arrays take 2x as long per round. One library
    # (zarr-python, the one most people write with); tensorstore is standard's
    "quick": {
        "backends": ["zarr-python"], "workers": [1, 2], "alignments": ["chunk", "unaligned"],
        "dataset": "microscopy", "dims": "z:64:8:32,y:1024:256:512,x:512:256:512", "codec": "blosc-lz4:5:shuffle",
        "fsync": True, "seed": 0, "cluster": "local", "targets": ["file"], "endpoint": None, "iterations": 5,
        "warmups": 1,
    },
    "standard": {
        "backends": ["zarr-python", "tensorstore"], "workers": [1, 2, 4], "alignments": list(ALIGNMENTS),
        "dataset": "microscopy", "dims": "z:128:8:32,y:1024:256:512,x:512:256:512", "codec": "blosc-lz4:5:shuffle",
        "fsync": True, "seed": 0, "cluster": "local", "targets": ["file", "s3://iobench/parallel"], "endpoint": None,
        "iterations": 5, "warmups": 1,
    },
    "seed": {
        "backends": ["zarr-python", "tensorstore"], "workers": [1, 2, 4, 8, 16], "alignments": list(ALIGNMENTS),
        "dataset": "microscopy", "dims": "z:1024:16:64,y:2048:256:512,x:2048:256:512",
        "codec": "blosc-lz4:5:shuffle", "fsync": True, "seed": 0, "cluster": "local",
        "targets": ["file", "s3://iobench/parallel"], "endpoint": None, "iterations": 3, "warmups": 1,
    },
}
PARAMETERS = tuple(k for k in PROFILES["quick"] if k not in RUN_KEYS)


def build_cases(params: dict, profile: str) -> list[Case]:
    """Validate (SpecError before any work); one case per (backend, alignment)."""
    p = with_defaults(params, profile, PROFILES, NAME)
    names = parse_names(p["backends"], "backends", BACKENDS)
    workers = sorted(set(parse_ints(p["workers"], "workers", minimum=1, maximum=MAX_WORKERS)))
    alignments = parse_names(p["alignments"], "alignments", ALIGNMENTS)
    dataset, source = parse_dataset(p["dataset"])
    dims = parse_dims(p["dims"])
    if source is not None:  # a person's own data: the crop the dims measure
        (dims,) = fit_crops(source, names, dims=(dims, True))
    if not dims.shards:
        raise SpecError(f"dims {p['dims']!r} needs a shard size on the first axis (name:size:chunk:shard), "
                        "e.g. z:64:8:32,y:1024:256:512,x:1024:256:512")
    if len(dims.dims) < 2:
        raise SpecError(f"dims {p['dims']!r} needs at least 2 dimensions for the datasets")
    unit, what = (dims.shards[0], "shards") if "shard" in alignments else (dims.chunks[0], "chunks")
    if dims.shape[0] % (unit * max(workers)):
        raise SpecError(f"dims {p['dims']!r}: the first axis ({dims.shape[0]}) must be a multiple of "
                        f"{unit * max(workers)}, so that it splits into whole {what} ({unit}) for every worker "
                        f"count up to {max(workers)}")
    if not isinstance(p["codec"], str):
        raise SpecError(f"codec {p['codec']!r} must be one codec string, e.g. blosc-lz4:5:shuffle")
    common = {"workers": workers, "dataset": dataset, "dims": str(dims), "codec": str(parse_codec(p["codec"])),
              "fsync": parse_bool(p["fsync"], "fsync"), "seed": p["seed"], "cluster": _workers_from(p["cluster"])}
    if source is not None:
        common["sources"] = sources_param([source])
    stores = _targets(p)
    if common["cluster"] != "local" and any(t != "file" for t in stores) and p["endpoint"] is None:
        raise SpecError(f"targets {p['targets']!r} with cluster {common['cluster']!r} needs an endpoint: a scheduler's "
                        "workers cannot reach the S3 server this machine starts on 127.0.0.1")
    if common["cluster"] != "local":
        from benchmarks_lib.base.dask_scheduler import probe_scheduler

        probe_scheduler(common["cluster"])  # last: a wrong address is refused before anything is created
    return [Case(NAME, name, {**common, "alignment": a, **({} if t == "file" else {"target": t, "endpoint": e})})
            for t, e in stores.items() for name in names for a in alignments]


def _targets(p: dict) -> dict[str, str | None]:
    """Each store to write: ``file``, or an S3 URL with its endpoint (None: the versitygw the case starts)."""
    stores: dict[str, str | None] = {}
    for value in parse_items(p["targets"], "targets", '["file", "s3://iobench/parallel"]'):
        if value == "file":
            stores["file"] = None
        elif not (isinstance(value, str) and value.startswith("s3://")):
            raise SpecError(f"targets value {value!r} is not allowed; give file or s3://bucket/prefix")
        else:
            target = parse_s3(value, p["endpoint"])
            stores[target.url] = target.endpoint
    if not stores:
        raise SpecError("targets is empty; give file and/or s3://bucket/prefix")
    return stores


def _workers_from(value: object) -> str:
    """``local`` (a LocalCluster of single-threaded workers started by the case) or a Dask scheduler address
    whose workers write (they must reach the store path: a shared filesystem, given as the scratch directory)."""
    from benchmarks_lib.base.dask_scheduler import parse_cluster

    return parse_cluster(value, local_workers=False)


def assignments(length: int, workers: int, step: int, stripe: int | None = None) -> list[list[tuple[int, int]]]:
    """Per worker, the [start, stop) ranges of the first axis it writes; together they cover ``length`` once.

    Aligned (``stripe`` None): one contiguous range per worker, its boundaries on multiples of ``step``.
    Unaligned: stripes of ``stripe`` (half a chunk) dealt round-robin, so every chunk has two writers."""
    if stripe is None:
        per = length // workers
        if per % step or per == 0:
            raise SpecError(f"{length} rows do not split into {workers} ranges on multiples of {step}")
        return [[(i * per, length if i == workers - 1 else (i + 1) * per)] for i in range(workers)]
    stripes = [(a, min(a + stripe, length)) for a in range(0, length, stripe)]
    return [stripes[i::workers] for i in range(workers)]


def array_spec(params: dict) -> tuple[ArraySpec, Dataset | FileDataset]:
    """The case's array (sharded for the ``shard`` alignment only) and its dataset (nothing read yet)."""
    dims = parse_dims(params["dims"])
    if params["alignment"] != "shard":
        dims = parse_dims(",".join(f"{d.name}:{d.size}:{d.chunk}" for d in dims.dims))
    dataset = make_dataset(params["dataset"], dims.shape, params["seed"], params.get("sources"))
    return ArraySpec(dims, dataset.dtype, parse_codec(params["codec"])), dataset


# -- what a Dask worker runs (module-level functions: Dask pickles them by name) --------------------
def write_region(backend: str, path: str | S3Target, params: dict, ranges: list[tuple[int, int]],
                 blocks: list[np.ndarray]) -> dict:
    """Open the array (a path, or an S3 location: credentials from the worker's AWS environment) and write this
    worker's slabs; the worker's own wall and CPU time of it."""
    spec, _ = array_spec(params)
    adapter = adapter_class(backend, "array")(threads=1)
    t0, c0 = time.perf_counter(), time.process_time()
    adapter.open_writer(path if isinstance(path, S3Target) else Path(path), spec)
    for (start, _), block in zip(ranges, blocks, strict=True):
        adapter.write(start, block)
    adapter.finalize()
    return {"elapsed_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
            "nbytes": sum(b.nbytes for b in blocks)}


# -- one case ---------------------------------------------------------------------------------------
def verify(reader_name: str, path, spec: ArraySpec, values: np.ndarray,
           scope: str = "full") -> tuple[int, int, int]:
    """(slabs that came back wrong, slabs read, slabs in the array): the whole array read by ``reader_name``, slab
    by slab, against the data the workers were given; with ``scope`` ``sampled``, ``SAMPLE_CHUNKS`` slabs (the
    first, the last and others seeded by the shape)."""
    reader = adapter_class(reader_name, "array")()
    reader.open_reader(path, spec)
    step = (spec.dims.shards or spec.dims.chunks)[0]
    starts = list(range(0, spec.shape[0], step))
    slabs = len(starts)
    if scope == "sampled" and len(starts) > SAMPLE_CHUNKS:
        rng = np.random.default_rng(list(spec.shape))
        picked = {0, len(starts) - 1, *rng.choice(len(starts), size=SAMPLE_CHUNKS, replace=False).tolist()}
        starts = [starts[i] for i in sorted(picked)[:SAMPLE_CHUNKS]]
    wrong = 0
    try:
        for start in starts:
            index = (slice(start, min(start + step, spec.shape[0])), *(slice(None) for _ in spec.shape[1:]))
            wrong += not np.array_equal(reader.read(index), values[index])
    finally:
        reader.close_reader()
    return wrong, len(starts), slabs


def run_case(case: Case, ctx: CaseContext) -> list[dict]:
    p, backend = case.params, case.backend
    spec, dataset = array_spec(p)
    step = (spec.dims.shards or spec.dims.chunks)[0]
    stripe = max(1, spec.dims.chunks[0] // 2) if p["alignment"] == "unaligned" else None
    cls = adapter_class(backend, "array")
    s3 = "target" in p
    own_fsyncs = bool(cls().fsyncs) and not s3  # S3 has no fsync: a write ends when every object is acknowledged
    reader = verifier(cls(), spec, "s3" if s3 else "file") or backend  # another library where one reads it here
    columns = {"dataset": p["dataset"], "dtype": dataset.dtype, **dataset_columns(dataset), "codec": p["codec"],
               "alignment": p["alignment"],
               "layout": "sharded" if spec.dims.shards else "unsharded", "shape": list(spec.shape),
               "chunks": list(spec.dims.chunks), "cores": usable_cores(),
               **durability_columns(p["fsync"] and not s3, own_fsyncs), "verified_by": reader,
               "nbytes": spec.nbytes, "region_step": step, "stripe": stripe}
    if reason := cls().is_incompatible(spec, "write"):
        return skip_rows(reason, columns, ("write",))
    try:
        from distributed import Client, wait
    except ImportError:
        return skip_rows("Dask is not installed: pip install 'iobench-book[cluster]'", columns, ("write",))
    from benchmarks_lib.base.dask_scheduler import connect_client, start_local_cluster

    columns["store"] = "s3" if s3 else "file"
    rows: list[dict] = []
    path: Path | S3Target = ctx.scratch / "parallel.zarr"
    values = generated(dataset, tuple(slice(None) for _ in spec.shape), ctx.scratch)  # once, before any clock
    with ExitStack() as stack:
        server = None
        if s3 and p["endpoint"] is None:
            from benchmarks_lib.servers import ServerUnavailable
            from benchmarks_lib.servers.versitygw import VersityServer, case_credentials

            try:
                # the credentials the runner made for this case's process: its workers inherit them, and no other
                server = stack.enter_context(VersityServer(bucket=parse_s3(p["target"]).bucket, root=ctx.scratch,
                                                           credentials=case_credentials(), on_death=end_case))
            except ServerUnavailable as exc:
                return skip_rows(str(exc), {**columns, "s3_server": "versitygw (not installed)"}, ("write",))
            columns["server"] = f"{server.label} {server.endpoint}"
            columns["s3_server"] = server.label
        elif s3:
            columns["s3_server"] = p["endpoint"]
        base = parse_s3(p["target"], server.endpoint if server else p["endpoint"]) if s3 else None
        if p["cluster"] == "local":
            cluster = stack.enter_context(start_local_cluster(max(p["workers"]), ctx.scratch / "dask"))
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(connect_client(p["cluster"]))
        addresses = sorted(client.scheduler_info()["workers"])
        if len(addresses) < max(p["workers"]):
            return skip_rows(f"the Dask cluster at {p['cluster']} has {len(addresses)} workers, fewer than "
                             f"{max(p['workers'])}", columns, ("write",))
        columns["worker_hosts"] = len({a.rsplit(":", 1)[0] for a in addresses[:max(p["workers"])]})
        client.run(lambda: __import__(cls.module))  # every worker imports the library before any clock
        for w in p["workers"]:
            work = assignments(spec.shape[0], w, step, stripe)
            for it in range(-ctx.warmups, ctx.iterations):
                if base is not None:
                    path = base.child(f"{backend}-{uuid.uuid4().hex[:8]}")  # a new prefix per round
                else:
                    remove_output(path)  # off the clock: the last round's array
                creator = cls()
                creator.create(path, spec)  # metadata only; every chunk is written by the workers
                creator.finalize()
                # each worker's slabs go to its memory before the clock (scatter: pinned to that worker; fresh
                # keys, or a slab equal to one the last round released is "already forgotten" by the scheduler)
                slabs = [client.scatter([values[a:b] for a, b in ranges], workers=[addresses[i]], direct=True,
                                        hash=False) for i, ranges in enumerate(work)]
                wait([f for worker_slabs in slabs for f in worker_slabs])
                before = server.counts() if server else None
                with timed(sample=False, io=False) as region:
                    writes = [client.submit(write_region, backend, path if s3 else str(path), p, ranges, slab,
                                            workers=[addresses[i]], pure=False)
                              for i, (ranges, slab) in enumerate(zip(work, slabs, strict=True))]
                    done = client.gather(writes)
                    if p["fsync"] and not s3:
                        sync_store(path)
                traffic = (server.counts() - before).as_row() if server else {}
                del slabs, writes
                if it >= 0:
                    # unaligned writes lose data by chance: every slab of every round is the measurement there
                    scope = "full" if p["alignment"] == "unaligned" else verify_scope(ctx.profile, it)
                    wrong, checked, total = verify(reader, path, spec, values, scope)
                    measured = region.result.as_row()
                    rows.append({**columns, **measured, **traffic, "operation": "write", "iteration": it,
                                 "workers": w, "gbps": spec.nbytes / measured["elapsed_s"] / 1e9,
                                 "cpu_s": sum(d["cpu_s"] for d in done),
                                 "worker_gbps_median": float(np.median([d["nbytes"] / d["elapsed_s"] / 1e9
                                                                        for d in done])),
                                 "worker_gbps_min": float(min(d["nbytes"] / d["elapsed_s"] / 1e9 for d in done)),
                                 "slabs_wrong": wrong, "slabs": total, "verified": wrong == 0,
                                 "verified_scope": scope, "slabs_checked": checked,
                                 "cache_state": None})
                if isinstance(path, S3Target):
                    delete_prefix(path)
    if not s3:
        remove_output(path)
    return rows


def case_nbytes(case: Case) -> int:
    return array_spec({**case.params, "alignment": "chunk"})[0].nbytes


SUITE = Suite(
    name=NAME,
    title="Parallel writes: many workers, one array",
    measures="W Dask workers write disjoint regions of one Zarr array",
    build_cases=build_cases,
    run_case=run_case,
    profiles=PROFILES,
    # quick: what its run took from nothing in three quick books on 2 cores (20-22 s, 2026-12-07; 17 s where it takes
    # the book's ceiling): no rounds, so no budget shortens it; the book plans it by its last run (``measured_s``)
    time_budget_s={"quick": 21, "standard": 270},
    **sized_by(case_nbytes, copies=2),
    label_keys=("alignment",),
    case_keys=("dataset", "codec", "nbytes", "alignment", "workers", "store", "layout", "region_step", "stripe",
               "fsync_included"),
    local_processes=lambda case: max(case.params["workers"]) if case.params["cluster"] == "local" else 0,
    user_s3=lambda case: case.params.get("endpoint") is not None,
    smoke={"workers": [1, 2], "alignments": ["chunk", "unaligned"], "dims": "z:8:2:4,y:64:32:64,x:64:32:64",
           "iterations": 1, "warmups": 0},
)

__all__ = ["ALIGNMENTS", "BACKENDS", "PROFILES", "SUITE", "assignments", "build_cases", "run_case"]
