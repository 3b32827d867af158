"""The writer comparison: write, append, full/cutout read and sharding, per backend.

One case is one (backend, test); inside it the sizes or layouts are swept, each with
warm-ups and iterations. A write is ONE timed region (``measure.timed``) from the first
``write``/``append`` call to the end of ``finalize``, so a writer's background threads cannot
work off the clock; data is generated and hashed before it, and nothing is generated, hashed
or deleted inside it. Every write is read back by a different library where one exists, and
compared by checksum.

Tests (seeds 000, 001, 003):
- ``write``: a new store per size; the first dimension grows by ``multipliers``. Rows:
  ``create``; ``write`` and ``finalize``, the two consecutive parts of the one region (split
  where ``finalize`` is called); ``fsync`` (one ``syncfs`` per store, when ``fsync`` is true);
  ``total`` = create + region (+ fsync), as its ``total_includes`` column says. Per-call
  latencies are columns (``write_call_p50_s``...), never summed into a time.
- ``append``: one store, frames appended one call at a time until ``append_frames``; one
  region from the first append to the end of finalize (and syncfs when ``fsync``); per-frame
  latency, per-step wall time (laps of the region), sustained fps, peak-memory ratio.
- ``read``: full read cold (page cache evicted and proven: ``cache_state`` is ``cold`` or
  ``cold_unverified``) and warm, each one timed region; cutouts of ``cutout`` per side,
  aligned to chunks and unaligned, at several positions.
- ``sharding``: a cube with shards of ``shard`` and inner chunks ``inner_chunks`` versus
  unsharded chunks of the inner size and of the shard size: write, read, cutout, bytes, inodes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..adapters import backend_status, expand_backends, make_adapter
from ..adapters.base import Adapter, IndependentRead
from ..chapters.writers import summary as writers_summary
from ..datasets import DATASETS, Dataset, checksum_array, checksum_blocks
from ..measure import (
    SYNC_METHOD,
    Measurement,
    cold_read_state,
    disk_usage,
    evict_page_cache,
    measure,
    sync_store,
    timed,
)
from ..specs import (
    ArraySpec,
    Dim,
    DimsSpec,
    SpecError,
    parse_bool,
    parse_codec,
    parse_count,
    parse_dims,
    parse_int_list,
    parse_names,
)
from . import Case, CaseContext, Suite
from .common import remove_output, unavailable_reason

TESTS = ("write", "append", "read", "sharding")
BLOCK_TARGET = 64 * 2**20
#: default size of the pool of generated blocks a write receives (beyond it the data is tiled)
POOL_BYTES = 512 * 2**20
#: readers used to verify a format, in order of preference (a different library first)
VERIFIERS = {
    "zarr3": ("zarr-python", "tensorstore"),
    "zarr2": ("zarr-python", "tensorstore"),
    "ome-zarr": ("zarr-python", "tensorstore"),
    "hdf5": ("h5py",),
    "wkw": ("wkw",),
    "raw": ("raw",),
}

#: seed 000 used "LZ4"; each writer takes the first of these it can write (the row records which)
LZ4_FAMILY = "blosc-lz4:5:shuffle,lz4,blosc-lz4:5:bitshuffle"

#: the quick profile's writers: the raw baseline and each engine once
QUICK_BACKENDS = ["raw", "zarr-python", "zarrs", "tensorstore", "acquire-zarr", "ome-writers:tensorstore", "wkw",
                  "h5py"]

PROFILES = {
    # quick: few, big points (each timed write, append and cold full read lasts about 100 ms or more
    # here) for a representative set of writers (the baseline, each engine once; the other
    # ome-writers backends wrap the same engines and are in standard), so that the quick writer
    # chapter stays near 2.5 minutes on 2 cores. Warm reads and cutouts are latencies by nature.
    "quick": {
        "backends": QUICK_BACKENDS, "tests": list(TESTS), "dataset": "em_like", "codec": LZ4_FAMILY,
        "dims": "t:64:8,y:1080:540,x:1920", "multipliers": [1, 2], "fsync": True,
        "append_frames": 64, "append_step": 16, "append_repeats": 1,
        "read_dims": "z:128:32,y:1024:128,x:1024:128", "cutout": 32, "cutout_positions": 8,
        "shard_datasets": ["labels"], "shard_volume": 256, "shard": 128, "inner_chunks": [32],
        "seed": 0, "iterations": 2, "warmups": 1, "pool_mib": 32,
    },
    "standard": {
        "backends": ["all"], "tests": list(TESTS), "dataset": "em_like", "codec": LZ4_FAMILY,
        "dims": "t:64,y:1080:540,x:1920", "multipliers": [1, 2, 4], "fsync": True,
        "append_frames": 1024, "append_step": 64, "append_repeats": 2,
        "read_dims": "z:256:64,y:512:64,x:512:64", "cutout": 32, "cutout_positions": 8,
        "shard_datasets": ["em_like", "labels"], "shard_volume": 256, "shard": 128, "inner_chunks": [32, 64],
        "seed": 0, "iterations": 5, "warmups": 1, "pool_mib": 512,
    },
    "seed": {
        "backends": ["all"], "tests": list(TESTS), "dataset": "em_like", "codec": LZ4_FAMILY,
        "dims": "t:64,y:1080:540,x:1920", "multipliers": [1, 5, 10, 15, 20, 25, 30, 35], "fsync": True,
        "append_frames": 24000, "append_step": 64, "append_repeats": 1,
        "read_dims": "z:1024:512,y:1024:512,x:1024:512", "cutout": 32, "cutout_positions": 8,
        "shard_datasets": ["em_like", "labels"], "shard_volume": 1024, "shard": 512, "inner_chunks": [32, 64, 128],
        "seed": 0, "iterations": 3, "warmups": 1, "pool_mib": 512,
    },
}


# -- parameters --------------------------------------------------------------------------
def build_cases(params: dict, profile: str) -> list[Case]:
    tests = parse_names(params["tests"], "tests", TESTS)
    dataset = parse_names(params["dataset"], "dataset", tuple(DATASETS))
    if len(dataset) != 1:
        raise SpecError(f"dataset {params['dataset']!r} must be one name; allowed: {', '.join(DATASETS)}")
    shard_datasets = parse_names(params["shard_datasets"], "shard_datasets", tuple(DATASETS))
    codec = ",".join(str(parse_codec(c)) for c in parse_names(params["codec"], "codec"))
    dims = parse_dims(params["dims"])
    read_dims = parse_dims(params["read_dims"], "read_dims")
    if len(read_dims.dims) < 2 or len(dims.dims) < 2:
        raise SpecError("dims and read_dims need at least 2 dimensions")
    multipliers = parse_int_list(params["multipliers"], "multipliers", maximum=10_000)
    n = {key: parse_count(params[key], key, maximum=10**7) for key in
         ("append_frames", "append_step", "append_repeats", "cutout", "cutout_positions", "shard_volume", "shard",
          "pool_mib")}
    inner = parse_int_list(params["inner_chunks"], "inner_chunks")
    if n["shard"] > n["shard_volume"] or n["shard_volume"] % n["shard"]:
        raise SpecError(f"shard {n['shard']} must divide shard_volume {n['shard_volume']}")
    for c in inner:
        if n["shard"] % c:
            raise SpecError(f"inner chunk {c} does not divide shard {n['shard']}")
    fsync = parse_bool(params["fsync"], "fsync")
    seed = parse_count(params["seed"], "seed", minimum=0, maximum=2**32 - 1)
    backends = expand_backends(parse_names(params["backends"], "backends"))
    common = {"codec": codec, "seed": seed, "fsync": fsync, "pool_bytes": n["pool_mib"] * 2**20}
    cases = []
    for test in tests:
        for backend in backends:
            p = {"test": test, **common}
            if test == "write":
                p.update(dataset=dataset[0], dims=str(dims), multipliers=list(multipliers))
            elif test == "append":
                p.update(dataset=dataset[0], dims=str(dims), append_frames=n["append_frames"],
                         append_step=n["append_step"], append_repeats=n["append_repeats"])
            elif test == "read":
                p.update(dataset=dataset[0], dims=str(read_dims), cutout=n["cutout"],
                         cutout_positions=n["cutout_positions"])
            else:
                p.update(datasets=shard_datasets, shard_volume=n["shard_volume"], shard=n["shard"],
                         inner_chunks=list(inner), cutout=n["cutout"], cutout_positions=n["cutout_positions"])
            cases.append(Case("writers", backend, p))
    return cases


def _case_bytes(case: Case) -> int:
    p = case.params
    if p["test"] == "write":
        dims = parse_dims(p["dims"])
        dtype = DATASETS[p["dataset"]][0]
        return math.prod(dims.shape) * max(p["multipliers"]) * np.dtype(dtype).itemsize
    if p["test"] == "append":
        dims = parse_dims(p["dims"])
        return math.prod(dims.shape[1:]) * p["append_frames"] * np.dtype(DATASETS[p["dataset"]][0]).itemsize
    if p["test"] == "read":
        return math.prod(parse_dims(p["dims"]).shape) * np.dtype(DATASETS[p["dataset"]][0]).itemsize
    return p["shard_volume"] ** 3 * 4


def _ceiling_bytes(cases: list[Case]) -> int:
    return min(max((_case_bytes(c) for c in cases), default=64 * 2**20), 2 * 2**30)


# -- helpers ------------------------------------------------------------------------------
def _step(dims: DimsSpec, dtype: str, alignment: int = 1, target: int = BLOCK_TARGET) -> int:
    """Entries along axis 0 per generated block: whole shards/chunks (and the writer's
    alignment), about ``target`` bytes (64 MiB)."""
    unit = math.lcm((dims.shards or dims.chunks)[0], alignment)
    per_entry = math.prod(dims.shape[1:]) * np.dtype(dtype).itemsize
    return max(unit, (min(target, BLOCK_TARGET) // max(1, per_entry * unit)) * unit)


class BlockSource:
    """The blocks a timed write receives, all generated and hashed before the clock starts.

    ``prepare`` generates a pool of the dataset's first blocks, up to ``pool_bytes``. The
    array written is that pool repeated along the first axis: block k is
    ``pool[k % len(pool)]`` cut to the entries left, so data larger than the budget is
    ``tiled`` and memory stays bounded at any size. ``checksum`` covers exactly the bytes
    handed to the writer and ``region`` gives the expected content of any cutout, both taken
    from the same pool; iterating only slices the pool.
    """

    def __init__(self, dataset: Dataset, step: int, pool_bytes: int = POOL_BYTES) -> None:
        self.dataset, self.step, self.pool_bytes = dataset, step, pool_bytes
        self._pool: list[np.ndarray] | None = None
        self.checksum: str | None = None

    @property
    def tiled(self) -> bool:
        return len(self._prepared_pool()) * self.step < self.dataset.shape[0]

    def _prepared_pool(self) -> list[np.ndarray]:
        if self._pool is None:
            raise RuntimeError("BlockSource.prepare() must run before the timed region")
        return self._pool

    def prepare(self) -> BlockSource:
        """Generate the pool and hash the whole written sequence now (before any timed region)."""
        if self._pool is None:
            pool, size = [], 0
            for _, block in self.dataset.blocks(self.step):
                pool.append(block)
                size += block.nbytes
                if size >= self.pool_bytes:
                    break
            self._pool = pool
            self.checksum = checksum_blocks(block for _, block in self)
        return self

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        pool, n = self._prepared_pool(), self.dataset.shape[0]
        for k, offset in enumerate(range(0, n, self.step)):
            yield offset, pool[k % len(pool)][: min(self.step, n - offset)]

    def region(self, index: tuple[slice, ...]) -> np.ndarray:
        """The written array's values in ``index`` (slices, step 1), assembled from the pool."""
        pool = self._prepared_pool()
        index = tuple(slice(*sl.indices(n)[:2]) for sl, n in zip(index, self.dataset.shape, strict=True))
        first, rest = index[0], index[1:]
        parts, row = [], first.start
        while row < first.stop:
            k, within = divmod(row, self.step)
            take = min(self.step - within, first.stop - row)
            parts.append(pool[k % len(pool)][(slice(within, within + take), *rest)])
            row += take
        if not parts:
            return np.empty((0, *(sl.stop - sl.start for sl in rest)), dtype=self.dataset.dtype)
        return np.concatenate(parts)


def _skip(reason: str, **extra) -> list[dict]:
    return [{"operation": extra.pop("operation", "case"), "status": "skip", "reason": reason, **extra}]


def _verifier(writer: Adapter, spec: ArraySpec) -> str | None:
    """A different library that is installed and can read this codec, or None when there is none."""
    for name in VERIFIERS.get(writer.format, ()):
        if name != writer.name and backend_status(name).available and \
                make_adapter(name).is_incompatible(spec, "read") is None:
            return name
    return None


def _block_indices(spec: ArraySpec, step: int) -> list[tuple[slice, ...]]:
    """The full array as consecutive blocks of ``step`` entries along the first axis."""
    rest = tuple(slice(0, n) for n in spec.shape[1:])
    return [(slice(start, min(start + step, spec.shape[0])), *rest) for start in range(0, spec.shape[0], step)]


def _read_all(reader: Adapter, spec: ArraySpec, step: int) -> str:
    """Read block by block, untimed; return the checksum."""
    return checksum_blocks(reader.read(index) for index in _block_indices(spec, step))


def verify(path: Path, spec: ArraySpec, writer: Adapter, expected: str, step: int) -> dict:
    """Read a written store back and compare its checksum (dtype, shape and bytes) with ``expected``.

    The reader is, in order: a different library that reads the format; else the writer's
    ``independent_read`` (file I/O and the codec library, none of the writer's code); else the
    writer itself, and then ``verified_independently`` is False and ``verify_note`` says why.
    """
    name = _verifier(writer, spec)
    by, note = name or f"{writer.name} independent reader", ""
    try:
        independent = writer.independent_read(path, spec) if name is None else None
        if isinstance(independent, IndependentRead):
            by = independent.by
            got = checksum_blocks(independent.blocks)
        else:
            by = name or writer.name
            if independent:
                note = f"no other installed library reads {writer.format} with {spec.codec}; {independent}"
            reader = make_adapter(by)
            try:
                reader.open_reader(writer.array_path(path) if name else path, spec)
                got = _read_all(reader, spec, step)
            finally:
                reader.close_reader()
    except Exception as exc:  # a failed read-back is recorded, the measured rows are kept
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        got, detail = None, f"{by} could not read it back: {type(exc).__name__}: {first}"
    else:
        detail = "" if got == expected else f"checksum mismatch: wrote {expected}, {by} read {got}"
    return {"verified": got == expected, "verified_by": by, "verified_independently": not note,
            "verify_note": note, "verify_detail": detail}


def _write_store(adapter: Adapter, path: Path, spec: ArraySpec, source: BlockSource, fsync: bool) -> dict:
    """Create (its own phase); then ONE timed region from the first write to the end of
    finalize; then one ``syncfs`` when ``fsync``. Per-call latencies are kept apart."""
    create = measure(lambda: adapter.create(path, spec), sample=False)
    calls: list[float] = []
    with timed() as region:
        for offset, block in source:
            with timed(sample=False, io=False) as call:
                adapter.write(offset, block)
            calls.append(call.result.elapsed_s)
        with timed(sample=False, io=False) as fin:
            adapter.finalize()
    sync = measure(lambda: sync_store(path), sample=False) if fsync else None
    adapter.finalize()  # finalize must be safe to call twice
    return {"create": create, "region": region.result, "finalize_s": fin.result.elapsed_s, "calls": calls,
            "sync": sync}


def _latency_columns(prefix: str, latencies: list[float]) -> dict:
    """Count, median, p99 and max of per-call latencies (a distribution, never a summed time)."""
    lat = np.asarray(latencies, dtype=float)
    if not lat.size:
        return {f"{prefix}s": 0}
    return {f"{prefix}s": int(lat.size), f"{prefix}_p50_s": float(np.percentile(lat, 50)),
            f"{prefix}_p99_s": float(np.percentile(lat, 99)), f"{prefix}_max_s": float(lat.max())}


def _sync_columns(fsync: bool, writer_fsyncs: bool) -> dict:
    return {"sync_method": SYNC_METHOD if fsync else "none", "writer_fsyncs": writer_fsyncs}


def _phase_rows(phases: dict, iteration: int, nbytes: int, fsync: bool, extra: dict,
                writer_fsyncs: bool = False) -> list[dict]:
    """Rows ``create``, ``write`` + ``finalize`` (the two consecutive parts of the one region),
    ``fsync`` (syncfs, when asked) and ``total`` = create + region (+ fsync).

    ``fsync_included`` is true iff the row's time contains a flush: our syncfs, or the
    writer's own fsyncs (which happen while it writes and closes).
    """
    create, region, sync = phases["create"], phases["region"], phases["sync"]
    fin = phases["finalize_s"]
    common = {"iteration": iteration, "nbytes": nbytes, **_sync_columns(fsync, writer_fsyncs), **extra}
    calls = _latency_columns("write_call", phases["calls"])
    rows = [
        {"operation": "create", "elapsed_s": create.elapsed_s, "cpu_s": create.cpu_s, "fsync_included": False,
         **common},
        {"operation": "write", "elapsed_s": region.elapsed_s - fin, "fsync_included": writer_fsyncs, **calls,
         **common},
        {"operation": "finalize", "elapsed_s": fin, "fsync_included": writer_fsyncs, **common},
    ]
    if sync is not None:
        rows.append({"operation": "fsync", "elapsed_s": sync.elapsed_s, "cpu_s": sync.cpu_s, "fsync_included": True,
                     **common})
    total = create.elapsed_s + region.elapsed_s + (sync.elapsed_s if sync else 0.0)
    cpu = create.cpu_s + region.cpu_s + (sync.cpu_s if sync else 0.0)
    rows.append({**region.as_row(), "operation": "total", "elapsed_s": total, "cpu_s": cpu,
                 "write_region_s": region.elapsed_s,
                 "total_includes": "create+write+finalize" + ("+syncfs" if sync is not None else ""),
                 "fsync_included": sync is not None or writer_fsyncs, **calls, **common})
    return rows


def _spec(dims: DimsSpec, dataset: Dataset, codecs: str, adapter: Adapter | None = None,
          operation: str = "write") -> ArraySpec:
    """The array spec with the first codec of the preference list that ``adapter`` can write."""
    specs = [ArraySpec(dims, dataset.dtype, parse_codec(c)) for c in codecs.split(",")]
    if adapter is None:
        return specs[0]
    for spec in specs:
        if adapter.is_incompatible(spec, operation) is None:
            return spec
    # none fits: keep the first whose refusal is not about the codec, so the skip row says why
    return next((s for s in specs if "codec" not in (adapter.is_incompatible(s, operation) or "")), specs[0])


def _codec_used(adapter: Adapter, spec: ArraySpec) -> str:
    return str(spec.codec) if adapter.applies_codec else "none"


def _verify_rows(check: dict, rows: list[dict], extra: dict, target: str = "total") -> list[dict]:
    """Mark the ``target`` rows verified or not; a mismatch adds an error row."""
    for row in rows:
        if row["operation"] == target:
            row.update({k: v for k, v in check.items() if k != "verify_detail"})
    if not check["verified"]:
        rows.append({"operation": "verify", "status": "error", "reason": check["verify_detail"], **extra})
    return rows


# -- tests --------------------------------------------------------------------------------
def run_write(case: Case, ctx: CaseContext) -> list[dict]:
    p = case.params
    base = parse_dims(p["dims"])
    rows: list[dict] = []
    for m in p["multipliers"]:
        dims = base.with_size(0, base.shape[0] * m)
        dataset = Dataset(p["dataset"], dims.shape, seed=p["seed"])
        adapter = make_adapter(case.backend)
        spec = _spec(dims, dataset, p["codec"], adapter)
        extra = {"test": "write", "multiplier": m, "shape": list(dims.shape), "chunks": list(dims.chunks),
                 "dataset": dataset.name, "dtype": dataset.dtype, "codec": _codec_used(adapter, spec)}
        if reason := adapter.is_incompatible(spec, "write"):
            rows += _skip(reason, operation="total", **extra)
            continue
        step = _step(dims, dataset.dtype, adapter.write_alignment(spec), p["pool_bytes"])
        source = BlockSource(dataset, step, p["pool_bytes"]).prepare()
        extra["data_tiled"] = source.tiled
        for i in range(ctx.warmups + ctx.iterations):
            path = ctx.scratch / f"store-{m}-{i}"
            adapter = make_adapter(case.backend)
            phases = _write_store(adapter, path, spec, source, p["fsync"])
            if i >= ctx.warmups:
                usage = disk_usage(path)
                it_rows = _phase_rows(phases, i - ctx.warmups, dataset.nbytes, p["fsync"],
                                      {**extra, "bytes_on_disk": usage.allocated_bytes, "inodes": usage.inodes},
                                      adapter.fsyncs)
                if i == ctx.warmups + ctx.iterations - 1:
                    it_rows = _verify_rows(verify(path, spec, adapter, source.checksum, step), it_rows, extra)
                rows += it_rows
            remove_output(path)
    return rows


def run_append(case: Case, ctx: CaseContext) -> list[dict]:
    p = case.params
    base = parse_dims(p["dims"])
    frames, step = p["append_frames"], p["append_step"]
    dims = DimsSpec((Dim(base.dims[0].name, frames, 1), *base.dims[1:]))
    dataset = Dataset(p["dataset"], dims.shape, seed=p["seed"])
    probe = make_adapter(case.backend)
    spec = _spec(dims, dataset, p["codec"], probe, "append")
    extra = {"test": "append", "shape": list(dims.shape), "chunks": list(dims.chunks), "dataset": dataset.name,
             "dtype": dataset.dtype, "codec": _codec_used(probe, spec)}
    if reason := probe.is_incompatible(spec, "append"):
        return _skip(reason, operation="append_total", **extra)
    if probe.write_alignment(spec) > 1:
        return _skip(f"{probe.name} writes whole files of {probe.write_alignment(spec)} frames with this codec, "
                     "not single frames", operation="append_total", **extra)
    frame_bytes = dataset.nbytes // frames
    source = BlockSource(dataset, step, p["pool_bytes"]).prepare()
    extra["data_tiled"] = source.tiled
    for w in range(ctx.warmups):  # untimed: first-call costs (imports, pools) stay out of the frames
        warm = make_adapter(case.backend)
        warm.create(ctx.scratch / f"append-warmup-{w}", spec, append=True)
        _, block = next(iter(source))
        for f in range(block.shape[0]):
            warm.append(block[f:f + 1])
        warm.finalize()
        remove_output(ctx.scratch / f"append-warmup-{w}")
    rows: list[dict] = []
    for rep in range(p["append_repeats"]):
        path = ctx.scratch / f"append-{rep}"
        adapter = make_adapter(case.backend)
        timing = _append_store(adapter, path, spec, source, p["fsync"])
        region, fin, sync_s = timing["region"], timing["finalize_s"], timing["sync_s"]
        common = {"iteration": rep, **_sync_columns(p["fsync"], adapter.fsyncs), **extra}
        for n, elapsed in enumerate(timing["frames"]):
            rows.append({"operation": "append_frame", "frame": n, "elapsed_s": elapsed, "nbytes": frame_bytes,
                         "fsync_included": adapter.fsyncs, **common})
        for k, (elapsed, nbytes) in enumerate(timing["steps"]):
            rows.append({"operation": "append_step", "step": k, "elapsed_s": elapsed, "nbytes": nbytes,
                         "fsync_included": adapter.fsyncs, **common})
        total_row = {**region.as_row(), "operation": "append_total", "nbytes": dataset.nbytes,
                     "create_s": timing["create_s"], "finalize_s": fin, "sync_s": sync_s,
                     "total_includes": "append+finalize" + ("+syncfs" if p["fsync"] else ""),
                     **_latency_columns("frame", timing["frames"]), "fps": frames / region.elapsed_s,
                     "fsync_included": p["fsync"] or adapter.fsyncs, **common}
        usage = disk_usage(path)
        total_row.update(bytes_on_disk=usage.allocated_bytes, inodes=usage.inodes)
        new_rows = [total_row]
        if rep == p["append_repeats"] - 1:
            new_rows = _verify_rows(verify(path, spec, adapter, source.checksum, step), new_rows, extra, "append_total")
        rows += new_rows
        remove_output(path)
    return rows


def _append_store(adapter: Adapter, path: Path, spec: ArraySpec, source: BlockSource, fsync: bool) -> dict:
    """Create (untimed in the total); then ONE timed region from the first append to the end
    of finalize, and of one ``syncfs`` when ``fsync``. Frame latencies and per-step laps are
    measured inside it as distributions; the total is the region."""
    create = measure(lambda: adapter.create(path, spec, append=True), sample=False)
    frames: list[float] = []
    steps: list[tuple[float, int]] = []
    sync_s = 0.0
    with timed() as region:
        for _, block in source:
            with timed(sample=False, io=False) as lap:
                for f in range(block.shape[0]):
                    with timed(sample=False, io=False) as call:
                        adapter.append(block[f:f + 1])
                    frames.append(call.result.elapsed_s)
            steps.append((lap.result.elapsed_s, block.nbytes))
        with timed(sample=False, io=False) as fin:
            adapter.finalize()
        if fsync:
            with timed(sample=False, io=False) as sync:
                sync_store(path)
            sync_s = sync.result.elapsed_s
    adapter.finalize()  # finalize must be safe to call twice
    return {"create_s": create.elapsed_s, "region": region.result, "finalize_s": fin.result.elapsed_s,
            "sync_s": sync_s, "frames": frames, "steps": steps}


#: cutout positions per kind when a test does not say (the sharding sweep)
MIN_CUTOUT_POSITIONS = 8


def _positions(rng: np.random.Generator, starts: list[np.ndarray], count: int) -> list[tuple[int, ...]]:
    """``count`` distinct combinations of per-dimension ``starts`` while there are enough, then repeated."""
    total = int(np.prod([len(s) for s in starts]))
    picks = rng.choice(total, size=min(count, total), replace=False)
    picks = np.resize(picks, count)
    return [tuple(int(s[i]) for s, i in zip(starts, idx, strict=True))
            for idx in zip(*np.unravel_index(picks, [len(s) for s in starts]), strict=True)]


def _cutouts(shape: tuple[int, ...], size: int, count: int) -> list[tuple[str, tuple[slice, ...]]]:
    """``count`` aligned and ``count`` unaligned cutouts of ``size`` per side.

    The positions depend on the array shape and the cutout size only (the seed is made from
    them), so every writer and every layout of a comparison reads the same cutouts. *aligned*
    cutouts start at multiples of the cutout size in every dimension: where chunks, inner chunks
    and shards divide the cutout size or are multiples of it (powers of two in every profile),
    such a cutout covers whole chunks or lies inside one chunk in every layout compared.
    *unaligned* cutouts start off those multiples wherever a dimension leaves room. Positions are
    distinct while the shape has enough of them, then repeat.
    """
    rng = np.random.default_rng([size, *shape])
    sides = [min(size, n) for n in shape]
    aligned = [np.arange(0, n - side + 1, size) for n, side in zip(shape, sides, strict=True)]
    unaligned = []
    for n, side in zip(shape, sides, strict=True):
        starts = np.arange(0, n - side + 1)
        off = starts[starts % size != 0]
        unaligned.append(off if off.size else starts[:1])
    out = []
    for kind, starts in (("aligned", aligned), ("unaligned", unaligned)):
        for origin in _positions(rng, starts, count):
            out.append((kind, tuple(slice(o, o + side) for o, side in zip(origin, sides, strict=True))))
    return out


def _timed_read(adapter: Adapter, path: Path, spec: ArraySpec, files: list[Path], cold: bool, step: int,
                index: tuple[slice, ...] | None = None) -> tuple[dict, list[np.ndarray] | np.ndarray]:
    """One timed read: the full array (block by block, one region) or one cutout.

    Cold: the store's files are evicted first and the eviction report goes into the row;
    ``cache_state`` is ``cold`` only when :func:`cold_read_state` accepts the proof: the
    eviction verified and, for a full read, at least half the store's bytes read from disk
    (a cutout has no lower bound we can state, so only the eviction proof counts for it).
    The reader is opened, untimed, after the eviction. The blocks are kept and hashed after
    the region, so a full read holds the array in memory.
    """
    eviction = evict_page_cache(files) if cold else None
    adapter.open_reader(path, spec)
    try:
        with timed() as region:
            if index is None:
                result: list[np.ndarray] | np.ndarray = [adapter.read(ix) for ix in _block_indices(spec, step)]
            else:
                result = adapter.read(index)
    finally:
        adapter.close_reader()
    m: Measurement = region.result
    nbytes = spec.nbytes if index is None else int(np.asarray(result).nbytes)
    row = {**m.as_row(), "nbytes": nbytes, "cache_state": "warm"}
    if eviction is not None:
        needed = eviction.bytes if index is None else 0
        row.update(eviction.as_row(), cold_needed_bytes=needed,
                   cache_state=cold_read_state(eviction, row["io_read_bytes"], needed))
    return row, result


def _read_rows(case: Case, ctx: CaseContext, dims: DimsSpec, dataset: Dataset, codec: str, extra: dict,
               cutout: int, positions: int, fsync: bool, pool_bytes: int, write_iterations: int = 0) -> list[dict]:
    """Write one store (timed when ``write_iterations``), then full and cutout reads.

    The store holds the (tiled) pool of a ``BlockSource``, so no data is generated while
    anything is timed; full reads and cutouts are checked against that same pool.
    """
    writer = make_adapter(case.backend)
    spec = _spec(dims, dataset, codec, writer)
    extra = {**extra, "codec": _codec_used(writer, spec)}
    if reason := writer.is_incompatible(spec, "write"):
        return _skip(reason, operation="read_cold", **extra)
    step = _step(dims, dataset.dtype, writer.write_alignment(spec), pool_bytes)
    source = BlockSource(dataset, step, pool_bytes).prepare()
    extra["data_tiled"] = source.tiled
    rows: list[dict] = []
    path = ctx.scratch / "store"
    writes = ctx.warmups + write_iterations if write_iterations else 1
    for i in range(writes):
        remove_output(path)
        writer = make_adapter(case.backend)
        phases = _write_store(writer, path, spec, source, fsync)
        if write_iterations and i >= ctx.warmups:
            rows += _phase_rows(phases, i - ctx.warmups, dataset.nbytes, fsync, extra, writer.fsyncs)
    check = verify(path, spec, writer, source.checksum, step)
    usage = disk_usage(path)
    extra = {**extra, "bytes_on_disk": usage.allocated_bytes, "inodes": usage.inodes}
    rows = _verify_rows(check, [{**r, "bytes_on_disk": usage.allocated_bytes, "inodes": usage.inodes}
                                for r in rows], extra)
    reader, read_path = make_adapter(case.backend), path
    if reader.is_incompatible(spec, "read"):
        # a writer that cannot read (acquire-zarr) is read by the library that verified it
        reader, read_path = make_adapter(check["verified_by"]), writer.array_path(path)
    extra["read_by"] = reader.name
    files = writer.output_files(path)
    for cold in (True, False):
        if not cold and not ctx.warmups:  # a warm-up iteration (or the cold reads) already filled the cache
            _read_all_untimed(reader, read_path, spec, step)
        for i in range(ctx.warmups + ctx.iterations):
            row, blocks = _timed_read(reader, read_path, spec, files, cold, step)
            if i >= ctx.warmups:
                rows.append({"operation": f"read_{'cold' if cold else 'warm'}", "iteration": i - ctx.warmups,
                             "verified": checksum_blocks(blocks) == source.checksum, **row, **extra})
            del blocks
    # One cold read per position: the positions are the repeats of a cutout point (n = positions per
    # kind), so the spread covers where a cutout falls. No warm-ups: the full reads above warmed the reader.
    for n, (kind, index) in enumerate(_cutouts(dims.shape, cutout, positions)):
        expected = checksum_array(source.region(index))
        row, data = _timed_read(reader, read_path, spec, files, True, step, index)
        rows.append({"operation": "read_region_cold", "iteration": n, "cutout_kind": kind,
                     "cutout_index": n, "cutout_origin": [s.start for s in index],
                     "verified": checksum_array(np.asarray(data)) == expected, **row, **extra})
    remove_output(path)
    return rows


def _read_all_untimed(reader: Adapter, path: Path, spec: ArraySpec, step: int) -> None:
    reader.open_reader(path, spec)
    try:
        _read_all(reader, spec, step)
    finally:
        reader.close_reader()


def run_read(case: Case, ctx: CaseContext) -> list[dict]:
    p = case.params
    dims = parse_dims(p["dims"])
    dataset = Dataset(p["dataset"], dims.shape, seed=p["seed"])
    extra = {"test": "read", "shape": list(dims.shape), "chunks": list(dims.chunks), "dataset": dataset.name,
             "dtype": dataset.dtype}
    return _read_rows(case, ctx, dims, dataset, p["codec"], extra, p["cutout"], p["cutout_positions"], p["fsync"],
                      p["pool_bytes"])


def shard_layouts(volume: int, shard: int, inner: list[int]) -> list[tuple[str, int, int | None]]:
    """(label, chunk, shard) per layout: sharded with each inner chunk, unsharded at each size."""
    layouts = [(f"sharded {shard}/{c}", c, shard) for c in inner]
    layouts += [(f"unsharded {c}", c, None) for c in sorted({*inner, shard})]
    return layouts


def run_sharding(case: Case, ctx: CaseContext) -> list[dict]:
    p = case.params
    v = p["shard_volume"]
    rows: list[dict] = []
    for name in p["datasets"]:
        for label, chunk, shard in shard_layouts(v, p["shard"], p["inner_chunks"]):
            dims = DimsSpec(tuple(Dim(n, v, chunk, shard) for n in ("z", "y", "x")))
            dataset = Dataset(name, dims.shape, seed=p["seed"])
            extra = {"test": "sharding", "layout": label, "inner_chunk": chunk, "shard_size": shard or 0,
                     "sharded": shard is not None, "shape": list(dims.shape), "chunks": list(dims.chunks),
                     "dataset": name, "dtype": dataset.dtype}
            rows += _read_rows(case, ctx, dims, dataset, p["codec"], extra, p["cutout"],
                               p.get("cutout_positions", MIN_CUTOUT_POSITIONS), p["fsync"], p["pool_bytes"],
                               write_iterations=ctx.iterations)
    return rows


RUNNERS = {"write": run_write, "append": run_append, "read": run_read, "sharding": run_sharding}


def run_case(case: Case, ctx: CaseContext) -> list[dict]:
    if reason := unavailable_reason(case.backend):
        return _skip(reason, test=case.params["test"])
    rows = RUNNERS[case.params["test"]](case, ctx)
    version = backend_status(case.backend).version
    return [{**r, "backend_version": version} for r in rows]


SUITE = Suite(
    name="writers",
    title="Writer comparison: write, append, read, cutouts, sharding",
    build_cases=build_cases,
    run_case=run_case,
    profiles=PROFILES,
    scratch_bytes=lambda cases: 3 * max((_case_bytes(c) for c in cases), default=0),
    ceiling_bytes=_ceiling_bytes,
    label_keys=("test", "dataset", "codec"),
    summary=writers_summary,
    time_budget_s={"quick": 170, "standard": 1150},
)
