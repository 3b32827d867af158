"""The writer comparison: write, append, full/cutout read and sharding, per backend.

One case is one (backend, test); inside it the sizes or layouts are swept, each with
warm-ups and iterations. Timed regions hold only the writer's calls: data is generated
(and hashed for verification) outside them. Every write is read back by a different library
where one exists, and compared by checksum.

Tests (seeds 000, 001, 003):
- ``write``: a new store per size; the first dimension grows by ``multipliers``. Phases
  create / write / finalize / fsync are timed separately; ``total`` is their sum (fsync
  included when ``fsync`` is true, and the row says so).
- ``append``: one store, frames appended one call at a time until ``append_frames``;
  per-frame latency, per-step GB/s, sustained fps, peak-memory ratio.
- ``read``: full read cold (page cache evicted and proven) and warm; cutouts of
  ``cutout`` per side, aligned to chunks and unaligned, at several positions.
- ``sharding``: a cube with shards of ``shard`` and inner chunks ``inner_chunks`` versus
  unsharded chunks of the inner size and of the shard size: write, read, cutout, bytes, inodes.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..adapters import backend_status, expand_backends, make_adapter
from ..adapters.base import Adapter, IndependentRead
from ..datasets import DATASETS, ArrayDigest, Dataset, checksum_array, checksum_blocks
from ..measure import ResourceSampler, disk_usage, evict_page_cache, measure
from ..measure.iocounters import read_io_counters
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
#: data generated for a size is kept for its iterations while it fits this budget
CACHE_BUDGET = 512 * 2**20
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

PROFILES = {
    "quick": {
        "backends": ["all"], "tests": list(TESTS), "dataset": "em_like", "codec": LZ4_FAMILY,
        "dims": "t:8,y:540:270,x:960", "multipliers": [1, 4], "fsync": True,
        "append_frames": 32, "append_step": 16, "append_repeats": 1,
        "read_dims": "z:64:32,y:256:32,x:256:32", "cutout": 32, "cutout_positions": 2,
        "shard_datasets": ["labels"], "shard_volume": 64, "shard": 64, "inner_chunks": [16],
        "seed": 0, "iterations": 2, "warmups": 1,
    },
    "standard": {
        "backends": ["all"], "tests": list(TESTS), "dataset": "em_like", "codec": LZ4_FAMILY,
        "dims": "t:64,y:1080:540,x:1920", "multipliers": [1, 2, 4], "fsync": True,
        "append_frames": 1024, "append_step": 64, "append_repeats": 2,
        "read_dims": "z:256:64,y:512:64,x:512:64", "cutout": 32, "cutout_positions": 5,
        "shard_datasets": ["em_like", "labels"], "shard_volume": 256, "shard": 128, "inner_chunks": [32, 64],
        "seed": 0, "iterations": 5, "warmups": 1,
    },
    "seed": {
        "backends": ["all"], "tests": list(TESTS), "dataset": "em_like", "codec": LZ4_FAMILY,
        "dims": "t:64,y:1080:540,x:1920", "multipliers": [1, 5, 10, 15, 20, 25, 30, 35], "fsync": True,
        "append_frames": 24000, "append_step": 64, "append_repeats": 1,
        "read_dims": "z:1024:512,y:1024:512,x:1024:512", "cutout": 32, "cutout_positions": 5,
        "shard_datasets": ["em_like", "labels"], "shard_volume": 1024, "shard": 512, "inner_chunks": [32, 64, 128],
        "seed": 0, "iterations": 3, "warmups": 1,
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
         ("append_frames", "append_step", "append_repeats", "cutout", "cutout_positions", "shard_volume", "shard")}
    inner = parse_int_list(params["inner_chunks"], "inner_chunks")
    if n["shard"] > n["shard_volume"] or n["shard_volume"] % n["shard"]:
        raise SpecError(f"shard {n['shard']} must divide shard_volume {n['shard_volume']}")
    for c in inner:
        if n["shard"] % c:
            raise SpecError(f"inner chunk {c} does not divide shard {n['shard']}")
    fsync = parse_bool(params["fsync"], "fsync")
    seed = parse_count(params["seed"], "seed", minimum=0, maximum=2**32 - 1)
    backends = expand_backends(parse_names(params["backends"], "backends"))
    common = {"codec": codec, "seed": seed, "fsync": fsync}
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
                         inner_chunks=list(inner), cutout=n["cutout"])
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
def _step(dims: DimsSpec, dtype: str, alignment: int = 1) -> int:
    """Entries along axis 0 per generated block: whole shards/chunks (and the writer's
    alignment), about 64 MiB."""
    unit = math.lcm((dims.shards or dims.chunks)[0], alignment)
    per_entry = math.prod(dims.shape[1:]) * np.dtype(dtype).itemsize
    return max(unit, (BLOCK_TARGET // max(1, per_entry * unit)) * unit)


class BlockSource:
    """The blocks a timed write receives, generated before the clock starts.

    Data up to ``CACHE_BUDGET`` is generated once and kept. A larger dataset is written as a
    pool of its first blocks (up to the budget) repeated along the first axis (``tiled``), so
    no data is generated between timed calls: a writer with background threads would
    otherwise keep working, unclocked, while the next block is made. Memory stays bounded,
    and ``checksum`` covers exactly the bytes handed to the writer.
    """

    def __init__(self, dataset: Dataset, step: int, *, tile: bool = True) -> None:
        self.dataset, self.step, self.tile = dataset, step, tile
        self._pool: list[np.ndarray] | None = None
        self.checksum: str | None = None

    @property
    def tiled(self) -> bool:
        return self.tile and self.dataset.nbytes > CACHE_BUDGET

    def prepare(self) -> BlockSource:
        """Generate the pool now (call before the timed region)."""
        if self._pool is None and (self.tile or self.dataset.nbytes <= CACHE_BUDGET):
            pool, size = [], 0
            for _, block in self.dataset.blocks(self.step):
                pool.append(block)
                size += block.nbytes
                if size >= CACHE_BUDGET:
                    break
            self._pool = pool
        return self

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        hasher = ArrayDigest()
        if self._pool is None:  # not tiled and too large to keep: generated as it goes (untimed writes only)
            blocks = self.dataset.blocks(self.step)
        else:
            n = self.dataset.shape[0]
            blocks = ((o, self._pool[k % len(self._pool)][: min(self.step, n - o)])
                      for k, o in enumerate(range(0, n, self.step)))
        for offset, block in blocks:
            hasher.update(block)
            yield offset, block
        self.checksum = hasher.hexdigest()


def _fsync_tree(path: Path) -> None:
    paths = [path] if path.is_file() else [Path(r) / n for r, _, fs in os.walk(path) for n in fs]
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for d in {p.parent for p in paths} | ({path} if path.is_dir() else set()):
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _skip(reason: str, **extra) -> list[dict]:
    return [{"operation": extra.pop("operation", "case"), "status": "skip", "reason": reason, **extra}]




def _verifier(writer: Adapter, spec: ArraySpec) -> str | None:
    """A different library that is installed and can read this codec, or None when there is none."""
    for name in VERIFIERS.get(writer.format, ()):
        if name != writer.name and backend_status(name).available and \
                make_adapter(name).is_incompatible(spec, "read") is None:
            return name
    return None


def _read_all(reader: Adapter, spec: ArraySpec, step: int, timings: list[int] | None = None) -> str:
    """Read block by block (timed per block when ``timings`` is given); return the checksum."""
    h = ArrayDigest()
    rest = tuple(slice(0, n) for n in spec.shape[1:])
    for start in range(0, spec.shape[0], step):
        index = (slice(start, min(start + step, spec.shape[0])), *rest)
        t0 = time.perf_counter_ns()
        block = reader.read(index)
        if timings is not None:
            timings.append(time.perf_counter_ns() - t0)
        h.update(block)
    return h.hexdigest()


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
    """Create, write block by block, finalize (and fsync); the elapsed time of each phase."""
    create = measure(lambda: adapter.create(path, spec))
    write_ns = 0
    sampler = ResourceSampler()
    io0 = read_io_counters()
    with sampler:
        for offset, block in source:
            t0 = time.perf_counter_ns()
            adapter.write(offset, block)
            write_ns += time.perf_counter_ns() - t0
        finalize = measure(adapter.finalize)
    io1 = read_io_counters()
    sync = measure(lambda: _fsync_tree(path)) if fsync else None
    adapter.finalize()  # finalize must be safe to call twice
    return {"create": create.elapsed_s, "write": write_ns / 1e9, "finalize": finalize.elapsed_s,
            "fsync": sync.elapsed_s if sync else 0.0, "peak_rss_bytes": sampler.peak_rss,
            "rss_growth_bytes": sampler.rss_growth, "threads_max": sampler.max_threads,
            "io_write_bytes": (io1.write_bytes - io0.write_bytes) if io0 and io1 else None}


def _phase_rows(phases: dict, iteration: int, nbytes: int, fsync: bool, extra: dict,
                writer_fsyncs: bool = False) -> list[dict]:
    """One row per phase and a ``total``; fsync is included when asked or when the writer does it."""
    rows = []
    total = phases["create"] + phases["write"] + phases["finalize"] + (phases["fsync"] if fsync else 0.0)
    names = ["create", "write", "finalize", *(["fsync"] if fsync else [])]
    for name in names:
        rows.append({"operation": name, "iteration": iteration, "elapsed_s": phases[name], "nbytes": nbytes,
                     "fsync_included": name == "fsync", **extra})
    rows.append({"operation": "total", "iteration": iteration, "elapsed_s": total, "nbytes": nbytes,
                 "fsync_included": fsync or writer_fsyncs, "writer_fsyncs": writer_fsyncs,
                 "peak_rss_bytes": phases["peak_rss_bytes"],
                 "rss_growth_bytes": phases["rss_growth_bytes"], "threads_max": phases["threads_max"],
                 "io_write_bytes": phases["io_write_bytes"], **extra})
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
        step = _step(dims, dataset.dtype, adapter.write_alignment(spec))
        source = BlockSource(dataset, step).prepare()
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
    source = BlockSource(dataset, step).prepare()
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
        adapter.create(path, spec, append=True)
        latencies: list[float] = []
        sampler = ResourceSampler()
        with sampler:
            for s, (_, block) in enumerate(source):
                step_ns = 0
                for f in range(block.shape[0]):
                    frame = block[f:f + 1]
                    t0 = time.perf_counter_ns()
                    adapter.append(frame)
                    dt_ns = time.perf_counter_ns() - t0
                    step_ns += dt_ns
                    latencies.append(dt_ns / 1e9)
                    rows.append({"operation": "append_frame", "iteration": rep, "step": s, "frame": len(latencies) - 1,
                                 "elapsed_s": dt_ns / 1e9, "nbytes": frame_bytes, **extra})
                rows.append({"operation": "append_step", "iteration": rep, "step": s, "elapsed_s": step_ns / 1e9,
                             "nbytes": block.nbytes, **extra})
            t0 = time.perf_counter_ns()
            adapter.finalize()
            fin = (time.perf_counter_ns() - t0) / 1e9
        adapter.finalize()
        total = sum(latencies) + fin
        lat = np.array(latencies)
        total_row = {"operation": "append_total", "iteration": rep, "elapsed_s": total, "nbytes": dataset.nbytes,
                     "finalize_s": fin, "frame_p50_s": float(np.percentile(lat, 50)),
                     "frame_p99_s": float(np.percentile(lat, 99)), "fps": frames / total,
                     "peak_rss_bytes": sampler.peak_rss, "rss_growth_bytes": sampler.rss_growth,
                     "threads_max": sampler.max_threads, "fsync_included": adapter.fsyncs,
                     "writer_fsyncs": adapter.fsyncs, **extra}
        usage = disk_usage(path)
        total_row.update(bytes_on_disk=usage.allocated_bytes, inodes=usage.inodes)
        new_rows = [total_row]
        if rep == p["append_repeats"] - 1:
            new_rows = _verify_rows(verify(path, spec, adapter, source.checksum, step), new_rows, extra, "append_total")
        rows += new_rows
        remove_output(path)
    return rows


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
                index: tuple[slice, ...] | None = None) -> tuple[dict, np.ndarray | str]:
    eviction = evict_page_cache(files) if cold else None
    adapter.open_reader(path, spec)
    try:
        if index is None:
            timings: list[int] = []
            io0 = read_io_counters()
            sampler = ResourceSampler()
            with sampler:
                result = _read_all(adapter, spec, step, timings)
            io1 = read_io_counters()
            elapsed = sum(timings) / 1e9
            nbytes = spec.nbytes
        else:
            io0 = read_io_counters()
            sampler = ResourceSampler()
            with sampler:
                m = measure(lambda: adapter.read(index), sample=False)
            io1 = read_io_counters()
            result, elapsed = m.value, m.elapsed_s
            nbytes = int(np.asarray(result).nbytes)
    finally:
        adapter.close_reader()
    row = {"elapsed_s": elapsed, "nbytes": nbytes, "cache_state": "cold" if cold else "warm",
           "peak_rss_bytes": sampler.peak_rss, "rss_growth_bytes": sampler.rss_growth,
           "threads_max": sampler.max_threads,
           "io_read_bytes": (io1.read_bytes - io0.read_bytes) if io0 and io1 else None,
           "io_syscr": (io1.syscr - io0.syscr) if io0 and io1 else None}
    if eviction is not None:
        row["eviction_verified"] = eviction.verified
        row["resident_bytes_before_read"] = eviction.resident_bytes_after
    return row, result


def _read_rows(case: Case, ctx: CaseContext, dims: DimsSpec, dataset: Dataset, codec: str, extra: dict,
               cutout: int, positions: int, fsync: bool, write_iterations: int = 0) -> list[dict]:
    """Write one store (timed when ``write_iterations``), then full and cutout reads."""
    writer = make_adapter(case.backend)
    spec = _spec(dims, dataset, codec, writer)
    extra = {**extra, "codec": _codec_used(writer, spec)}
    if reason := writer.is_incompatible(spec, "write"):
        return _skip(reason, operation="read_cold", **extra)
    step = _step(dims, dataset.dtype, writer.write_alignment(spec))
    # not tiled: cutouts are checked against the dataset itself (data kept when it fits the budget)
    source = BlockSource(dataset, step, tile=False).prepare()
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
        if not cold:
            _read_all_untimed(reader, read_path, spec, step)
        for i in range(ctx.warmups + ctx.iterations):
            row, digest = _timed_read(reader, read_path, spec, files, cold, step)
            if i >= ctx.warmups:
                rows.append({"operation": f"read_{'cold' if cold else 'warm'}", "iteration": i - ctx.warmups,
                             "verified": digest == source.checksum, **row, **extra})
    for n, (kind, index) in enumerate(_cutouts(dims.shape, cutout, positions)):
        expected = dataset.region(index)
        for i in range(ctx.warmups + ctx.iterations):
            row, data = _timed_read(reader, read_path, spec, files, True, step, index)
            if i >= ctx.warmups:
                rows.append({"operation": "read_region_cold", "iteration": i - ctx.warmups, "cutout_kind": kind,
                             "cutout_index": n, "cutout_origin": [s.start for s in index],
                             "verified": checksum_array(np.asarray(data)) == checksum_array(expected),
                             **row, **extra})
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
    return _read_rows(case, ctx, dims, dataset, p["codec"], extra, p["cutout"], p["cutout_positions"], p["fsync"])


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
                               p.get("cutout_positions", MIN_CUTOUT_POSITIONS), p["fsync"],
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
)
