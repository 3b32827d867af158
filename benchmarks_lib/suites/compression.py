"""Compression-level sweep: zvtk's zstd levels on a tetrahedral mesh (seed 002) and Zarr codecs on arrays.

Points are (contender, data, codec setting). Each point runs warm-ups, then up to
``iterations`` round trips, stopping early once its timed seconds reach ``time_cap_s``
(seed 002: 5 runs, 20 s). A round trip is: remove the last output (untimed, so every timed
write starts on a path that does not exist), write (timed; with ``fsync`` one ``syncfs`` of
the store inside the clock, the same for every contender), evict the files from the page
cache and prove it (untimed), cold read (timed; ``cold`` only when the eviction and the
read's disk bytes prove it, else ``cold_unverified``), verify the data read back (untimed;
exact mesh equality or array checksum). In-memory contenders (``numcodecs``) encode and
decode chunk by chunk instead, with no files.

Every write row states what its time includes: ``fsync_included``, ``writer_fsyncs`` (the
library fsyncs its own files, whatever the policy), ``sync_method`` and ``fsync_comparable``
(False when the writer's own fsyncs make its time unlike the others').

Contenders: ``zvtk`` (levels), ``vtu`` (the VTK XML writer with its compressors), and for the
core datasets ``zarr-python`` and ``tensorstore`` (through their adapters) and ``numcodecs``
(the codecs alone, chunks spread over ``threads`` threads as zarr-python does).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..adapters import make_adapter
from ..datasets import DATASETS, Dataset, checksum_array
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
from ..meshes import VTU_COMPRESSORS, mesh_nbytes_estimate, parse_mesh_n
from ..specs import (
    ArraySpec,
    CodecSpec,
    SpecError,
    parse_bool,
    parse_codec,
    parse_codecs,
    parse_count,
    parse_dims,
    parse_ints,
    parse_names,
    parse_seconds,
    parse_size,
)
from . import Case, CaseContext, Suite
from .common import remove_output, unavailable_reason, with_defaults

MESH_BACKENDS = ("zvtk", "vtu")
ARRAY_BACKENDS = ("zarr-python", "tensorstore", "numcodecs")
MESH_DATASET = "tet_mesh"
ZSTD_LEVELS = (-131072, 22)


def usable_cores() -> int:
    """CPU cores this process may run on (affinity-aware)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def codec_grid(*, zstd: Iterable[int] = (), gzip: Iterable[int] = (), lz4: bool = False,
               blosc_cnames: Iterable[str] = (), blosc_shuffles: Iterable[str] = (),
               blosc_levels: Iterable[int] = ()) -> list[str]:
    """Codec strings (``parse_codec`` syntax) for a sweep: every level, every blosc combination."""
    out = ["lz4"] if lz4 else []
    out += [f"zstd:{lvl}" for lvl in zstd] + [f"gzip:{lvl}" for lvl in gzip]
    out += [f"blosc-{c}:{lvl}:{s}" for c in blosc_cnames for s in blosc_shuffles for lvl in blosc_levels]
    return out


_ALL_BLOSC = {"blosc_cnames": ("lz4", "zstd", "blosclz"), "blosc_shuffles": ("shuffle", "bitshuffle", "noshuffle")}
#: the quick profile answers the chapter's question with few, big points: every timed write and
#: read lasts >= ~100 ms here, so fixed costs do not make the speeds. In-memory codec runs are
#: left to standard/seed: a fast codec decodes a quick-sized array in a few ms.
PROFILES: dict[str, dict] = {
    "quick": {
        "mesh_backends": list(MESH_BACKENDS), "mesh_n": 80, "seed": 42,
        "levels": [1, 3, 6], "vtu_compressors": ["lz4"],
        "array_backends": ["zarr-python", "tensorstore"], "datasets": ["microscopy"],
        "dims": "z:112:16,y:1024:256,x:512:256", "codecs": ["zstd:1", "blosc-zstd:5:bitshuffle"],
        "threads": None, "fsync": False, "generate_bytes": "16MiB", "time_cap_s": 1.2, "points_per_case": 1000,
        "iterations": 3, "warmups": 1,
    },
    "standard": {
        "mesh_backends": list(MESH_BACKENDS), "mesh_n": 80, "seed": 42,
        "levels": list(range(-22, 23)), "vtu_compressors": ["none", "lz4", "zlib", "lzma"],
        "array_backends": list(ARRAY_BACKENDS), "datasets": list(DATASETS), "dims": "z:64:32,y:1024:256,x:1024:256",
        "codecs": codec_grid(lz4=True, zstd=(-5, 1, 3, 5, 9, 15, 19, 22), gzip=(1, 6, 9), blosc_levels=(1, 5, 9),
                             **_ALL_BLOSC),
        "threads": None, "fsync": False, "generate_bytes": None, "time_cap_s": 10.0, "points_per_case": 25,
        "iterations": 5, "warmups": 1,
    },
    # seed 002: the ~500 MB mesh (n=127), levels -22..22, 8 threads, 5 runs, 20 s cap, no warm-up
    "seed": {
        "mesh_backends": list(MESH_BACKENDS), "mesh_n": 127, "seed": 42,
        "levels": list(range(-22, 23)), "vtu_compressors": ["none", "lz4", "zlib", "lzma"],
        "array_backends": list(ARRAY_BACKENDS), "datasets": list(DATASETS), "dims": "z:128:64,y:1024:256,x:1024:256",
        "codecs": codec_grid(lz4=True, zstd=range(1, 23), gzip=range(1, 10), blosc_levels=range(1, 10), **_ALL_BLOSC),
        "threads": 8, "fsync": False, "generate_bytes": None, "time_cap_s": 20.0, "points_per_case": 4,
        "iterations": 5, "warmups": 0,
    },
}


# -- the measured round trip (shared with the threads suite) ------------------------------
@dataclass
class RoundTrip:
    """One contender at one setting: how to write it, read it back and check what came back."""

    write: Callable[[], Any]
    read: Callable[[], Any]
    #: None when the value returned by ``read`` is exactly what was written, else why not
    verify: Callable[[Any], str | None]
    #: compressed bytes of the last write (file sizes, or encoded bytes in memory)
    stored_bytes: Callable[[], int]
    #: files to evict before a cold read; None for an in-memory contender
    files: Callable[[], list[Path]] | None = None
    #: where the output lives (removed before each write, off the clock); None in memory
    path: Path | None = None
    #: drops what the last in-memory write produced (called off the clock before each write)
    reset: Callable[[], None] | None = None
    write_op: str = "write"
    read_op: str = "read"
    #: False for write-only contenders; ``read`` is then only a verification (untimed)
    timed_read: bool = True
    #: the library fsyncs the files it writes itself (acquire-zarr), whatever the suite's policy
    writer_fsyncs: bool = False

    def clear(self) -> None:
        """Remove the previous output (untimed), so that the next write starts from nothing."""
        if self.path is not None:
            remove_output(self.path)
            if self.path.exists():
                raise RuntimeError(f"{self.path} still exists after removal; a timed write must start on no file")
        if self.reset is not None:
            self.reset()


def sync_columns(rt: RoundTrip, fsync: bool) -> dict:
    """What a write row's time includes: our syncfs (policy), the writer's own fsyncs, or neither."""
    ours = fsync and rt.path is not None
    method = "+".join(m for m, on in ((SYNC_METHOD, ours), ("writer", rt.writer_fsyncs)) if on) or "none"
    return {"fsync_included": ours or rt.writer_fsyncs, "writer_fsyncs": rt.writer_fsyncs, "sync_method": method,
            "fsync_comparable": not rt.writer_fsyncs}


def timed_write(rt: RoundTrip, *, fsync: bool, sample: bool = True) -> Measurement:
    """Clear the last output (untimed), then one timed region: the write and, with ``fsync``, one syncfs."""
    rt.clear()
    with timed(sample=sample) as region:
        rt.write()
        if fsync and rt.path is not None:
            sync_store(rt.path)
    assert region.result is not None
    return region.result


def measure_round_trips(rt: RoundTrip, *, iterations: int, warmups: int, time_cap_s: float, nbytes: int,
                        columns: dict, fsync: bool = False) -> list[dict]:
    """Warm-ups, then timed write / evict / read / verify rounds until ``iterations`` or the time cap.

    Returns one row per timed operation; a verification failure ends the point with error rows.
    With ``fsync`` the write's timed region ends with :func:`~benchmarks_lib.measure.sync_store`.
    """
    spent = 0.0
    for _ in range(warmups):
        spent += timed_write(rt, fsync=fsync, sample=False).elapsed_s
        if rt.files is not None:
            evict_page_cache(rt.files())
        spent += measure(rt.read, sample=False).elapsed_s
        if spent >= time_cap_s:
            break
    rows: list[dict] = []
    spent = 0.0
    sync = sync_columns(rt, fsync)
    for iteration in range(iterations):
        wrote = timed_write(rt, fsync=fsync)
        stored = rt.stored_bytes()
        size = {"compressed_bytes": stored, "compression_ratio": nbytes / stored if stored else None}
        if rt.path is not None:
            usage = disk_usage(rt.path)
            size.update(bytes_on_disk=usage.allocated_bytes, inodes=usage.inodes)
        report = evict_page_cache(rt.files()) if rt.files is not None else None
        got = measure(rt.read) if rt.timed_read else measure(rt.read, sample=False)
        if report is None:
            cache = {"cache_state": "memory"}
        else:
            io_read = got.io.read_bytes if got.io is not None else None
            cache = {**report.as_row(),
                     "cache_state": cold_read_state(report, io_read, size.get("bytes_on_disk") or stored)}
        problem = rt.verify(got.value)
        check = {"status": "ok", "verified": problem is None}
        if problem:
            check.update(status="error", reason=f"round trip not verified: {problem}")
        common = {**columns, **size, **check, "iteration": iteration, "nbytes": nbytes}
        rows.append({**common, **wrote.as_row(), **sync, "operation": rt.write_op})
        if rt.timed_read:
            rows.append({**common, **got.as_row(), **cache, "operation": rt.read_op})
        spent += wrote.elapsed_s + (got.elapsed_s if rt.timed_read else 0.0)
        del got
        if problem or spent >= time_cap_s:
            break
    return rows


def skip_rows(reason: str, columns: dict, operations: Iterable[str] = ("write", "read")) -> list[dict]:
    """A skipped point is recorded, one row per operation it would have measured."""
    return [{**columns, "operation": op, "status": "skip", "reason": reason} for op in operations]


def missing_module(module: str) -> str | None:
    """Why a library cannot be used here (not importable), or None."""
    import importlib.util

    return None if importlib.util.find_spec(module) else f"module {module!r} is not installed; pip install {module}"


# -- data ----------------------------------------------------------------------------------
def suite_data(dataset: Dataset, chunks: tuple[int, ...], generate_bytes: int | None) -> tuple[np.ndarray, bool]:
    """The whole array handed to the writers, made before any clock; and whether it is tiled.

    Generated in full up to ``generate_bytes`` (None: always). A larger array is its first whole
    chunks along axis 0 (about ``generate_bytes``) repeated to the full shape: every chunk is
    compressed on its own, so each costs and compresses what a generated one does, while the
    quick profile's sizes stop paying seconds of generation per case (``data_tiled`` in the rows).
    """
    full = tuple(slice(0, n) for n in dataset.shape)
    lead = dataset.shape[0]
    if generate_bytes is not None and dataset.nbytes > generate_bytes:
        step = chunks[0]
        lead = max(step, generate_bytes // (dataset.nbytes // dataset.shape[0]) // step * step)
    if lead >= dataset.shape[0]:
        return dataset.region(full), False
    pool = dataset.region((slice(0, lead), *full[1:]))
    reps = -(-dataset.shape[0] // lead)
    return np.ascontiguousarray(np.concatenate([pool] * reps, axis=0)[: dataset.shape[0]]), True


def parse_generate_bytes(value: Any) -> int | None:
    """At most this many bytes of an array are generated (None: all); more are tiled (``suite_data``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise SpecError(f"generate_bytes {value!r} must be a size such as 16MiB, or null to generate everything")
    return parse_size(value)


# -- contenders ---------------------------------------------------------------------------
def mesh_round_trip(backend: str, mesh: Any, path: Path, *, threads: int, level: int | None = None,
                    compressor: str | None = None) -> RoundTrip:
    """zvtk at a zstd level, or the VTK XML writer with a compressor; verified by exact equality."""
    from .. import meshes

    if backend == "zvtk":
        def write() -> None:
            meshes.write_zvtk(mesh, path, level=level, threads=threads)

        def read() -> Any:
            return meshes.read_zvtk(path, threads=threads)
    else:
        def write() -> None:
            meshes.write_vtu(mesh, path, compressor=compressor)

        def read() -> Any:
            return meshes.read_vtu(path)
    return RoundTrip(write=write, read=read, verify=lambda got: meshes.mesh_mismatch(mesh, got),
                     stored_bytes=lambda: path.stat().st_size, files=lambda: [path], path=path)


def adapter_round_trip(backend: str, spec: ArraySpec, data: np.ndarray, checksum: str, path: Path, *,
                       threads: int) -> RoundTrip:
    """A Zarr writer through its adapter: create + write + finalize, then open + full read."""
    full = tuple(slice(0, n) for n in spec.shape)

    def write() -> None:
        adapter = make_adapter(backend, threads=threads)
        adapter.create(path, spec)
        adapter.write(0, data)
        adapter.finalize()

    def read() -> np.ndarray:
        adapter = make_adapter(backend, threads=threads)
        adapter.open_reader(path, spec)
        try:
            return adapter.read(full)
        finally:
            adapter.close_reader()

    def files() -> list[Path]:
        return make_adapter(backend, threads=threads).output_files(path)

    def verify(got: np.ndarray) -> str | None:
        return None if checksum_array(got) == checksum else "checksum of the data read back differs"

    return RoundTrip(write=write, read=read, verify=verify, files=files, path=path,
                     stored_bytes=lambda: disk_usage(path).logical_bytes,
                     writer_fsyncs=bool(make_adapter(backend, threads=threads).fsyncs))


def numcodecs_codec(codec: CodecSpec, dtype: str) -> Any:
    """The numcodecs codec object for a CodecSpec (what zarr runs on each chunk)."""
    import numcodecs

    if codec.family == "zstd":
        return numcodecs.Zstd(level=codec.level)
    if codec.family == "gzip":
        return numcodecs.GZip(level=codec.level)
    if codec.family == "lz4":
        return numcodecs.LZ4()
    if codec.family == "blosc":
        shuffle = {"noshuffle": numcodecs.Blosc.NOSHUFFLE, "shuffle": numcodecs.Blosc.SHUFFLE,
                   "bitshuffle": numcodecs.Blosc.BITSHUFFLE}[codec.shuffle]
        return numcodecs.Blosc(cname=codec.cname, clevel=codec.level, shuffle=shuffle,
                               typesize=np.dtype(dtype).itemsize)
    raise SpecError(f"codec {codec} has no numcodecs codec to run in memory")


def split_chunks(data: np.ndarray, chunks: tuple[int, ...]) -> list[tuple[tuple[slice, ...], np.ndarray]]:
    """The array cut into its chunk grid, each chunk a contiguous copy (set-up, never timed)."""
    ranges = [range(0, n, c) for n, c in zip(data.shape, chunks, strict=True)]
    out = []
    for starts in itertools.product(*ranges):
        index = tuple(slice(s, min(s + c, n)) for s, c, n in zip(starts, chunks, data.shape, strict=True))
        out.append((index, np.ascontiguousarray(data[index])))
    return out


def codec_round_trip(codec_obj: Any, pieces: list[tuple[tuple[slice, ...], np.ndarray]], shape: tuple[int, ...],
                     dtype: str, checksum: str, pool: ThreadPoolExecutor | None) -> RoundTrip:
    """In-memory encode/decode of every chunk (mapped over ``pool`` when given); no files."""
    chunks = [c for _, c in pieces]
    encoded: list[bytes] = []
    run = pool.map if pool is not None else map

    def write() -> None:
        encoded[:] = list(run(codec_obj.encode, chunks))

    def read() -> list:
        return list(run(codec_obj.decode, encoded))

    def verify(decoded: list) -> str | None:
        out = np.empty(shape, dtype=dtype)
        for (index, chunk), buf in zip(pieces, decoded, strict=True):
            out[index] = np.frombuffer(buf, dtype=dtype).reshape(chunk.shape)
        return None if checksum_array(out) == checksum else "checksum of the decoded chunks differs"

    return RoundTrip(write=write, read=read, verify=verify, stored_bytes=lambda: sum(len(e) for e in encoded),
                     reset=encoded.clear, write_op="encode", read_op="decode")


# -- parameters and cases -----------------------------------------------------------------
def parse_threads(value: Any, what: str = "threads") -> int:
    """One thread count (>= 1); None means every usable core."""
    if value is None:
        return usable_cores()
    if isinstance(value, bool) or not isinstance(value, int | str) or (
            isinstance(value, str) and not value.strip().isdigit()):
        raise SpecError(f"{what} {value!r} must be one integer, 1..4096 (or null for every core)")
    return parse_count(value, what, minimum=1, maximum=4096)


def _batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def build_cases(params: dict, profile: str) -> list[Case]:
    """Validate the parameters (SpecError before any work) and group the points into cases."""
    p = with_defaults(params, profile, PROFILES, "compression")
    mesh_backends = parse_names(p["mesh_backends"], "mesh_backends", MESH_BACKENDS, empty_ok=True)
    array_backends = parse_names(p["array_backends"], "array_backends", ARRAY_BACKENDS, empty_ok=True)
    levels = parse_ints(p["levels"], "levels", minimum=ZSTD_LEVELS[0], maximum=ZSTD_LEVELS[1])
    compressors = parse_names(p["vtu_compressors"], "vtu_compressors", VTU_COMPRESSORS)
    datasets = parse_names(p["datasets"], "datasets", DATASETS)
    codecs = parse_codecs(p["codecs"])
    if array_backends and not codecs:
        raise SpecError("codecs is empty; give at least one, e.g. zstd:3, gzip:6, lz4, blosc-lz4:5:shuffle")
    dims = parse_dims(p["dims"])
    if len(dims.dims) < 2:
        raise SpecError(f"dims {p['dims']!r} needs at least 2 dimensions for the datasets")
    if dims.shards:
        raise SpecError(f"dims {p['dims']!r} is sharded; this suite compares codecs on plain chunks")
    common = {"threads": parse_threads(p["threads"]), "time_cap_s": parse_seconds(p["time_cap_s"], "time_cap_s"),
              "seed": parse_count(p["seed"], "seed", minimum=0, maximum=2**32 - 1),
              "fsync": parse_bool(p["fsync"], "fsync")}
    generate = parse_generate_bytes(p["generate_bytes"])
    size = parse_count(p["points_per_case"], "points_per_case")
    mesh = {"dataset": MESH_DATASET, "mesh_n": parse_mesh_n(p["mesh_n"]), **common}
    cases = []
    if "zvtk" in mesh_backends:
        cases += [Case("compression", "zvtk", {**mesh, "levels": batch}) for batch in _batches(levels, size)]
    if "vtu" in mesh_backends:
        cases += [Case("compression", "vtu", {**mesh, "compressors": batch}) for batch in _batches(compressors, size)]
    points = [[d, c] for d in datasets for c in codecs]
    for backend in array_backends:
        cases += [Case("compression", backend, {**common, "dims": str(dims), "generate_bytes": generate,
                                                 "points": batch})
                  for batch in _batches(points, size)]
    if not cases:
        raise SpecError("nothing to measure: mesh_backends and array_backends are both empty")
    return cases


def case_nbytes(case: Case) -> int:
    """Uncompressed bytes of the largest data one case holds."""
    if case.params.get("dataset") == MESH_DATASET:
        return mesh_nbytes_estimate(case.params["mesh_n"])
    shape = parse_dims(case.params["dims"]).shape
    return max(math.prod(shape) * np.dtype(DATASETS[d][0]).itemsize for d, _ in case.params["points"])


# -- running ------------------------------------------------------------------------------
def _run_mesh(case: Case, ctx: CaseContext) -> list[dict]:
    from ..meshes import build_tet_mesh, mesh_nbytes

    p = case.params
    if case.backend == "zvtk" and (reason := missing_module("zvtk")):
        return skip_rows(reason, {"dataset": MESH_DATASET})
    mesh = build_tet_mesh(p["mesh_n"], p["seed"])
    nbytes = mesh_nbytes(mesh)
    base = {"dataset": MESH_DATASET, "dtype": "mixed", "mesh_n": p["mesh_n"], "mesh_points": mesh.n_points,
            "mesh_cells": mesh.n_cells, "contender": case.backend}
    rows: list[dict] = []
    settings = p["levels"] if case.backend == "zvtk" else p["compressors"]
    for setting in settings:
        if case.backend == "zvtk":
            path = ctx.scratch / "mesh.zvtk"
            columns = {**base, "codec": f"zstd:{setting}", "codec_family": "zstd", "level": setting,
                       "threads": p["threads"]}
            rt = mesh_round_trip("zvtk", mesh, path, threads=p["threads"], level=setting)
        else:
            path = ctx.scratch / "mesh.vtu"
            # the VTK XML writer compresses on one thread whatever the setting
            columns = {**base, "codec": setting, "codec_family": setting, "level": None, "threads": 1}
            rt = mesh_round_trip("vtu", mesh, path, threads=1, compressor=setting)
        rows += measure_round_trips(rt, iterations=ctx.iterations, warmups=ctx.warmups, time_cap_s=p["time_cap_s"],
                                    nbytes=nbytes, columns=columns, fsync=p["fsync"])
        remove_output(path)
    return rows


def _run_arrays(case: Case, ctx: CaseContext) -> list[dict]:
    p = case.params
    backend, threads = case.backend, p["threads"]
    dims = parse_dims(p["dims"])
    reason = missing_module("numcodecs") if backend == "numcodecs" else unavailable_reason(backend)
    pool = ThreadPoolExecutor(threads, thread_name_prefix="codec") if backend == "numcodecs" and threads > 1 else None
    if backend == "numcodecs" and not reason:
        import numcodecs.blosc

        numcodecs.blosc.use_threads = False  # parallelism comes from the chunk pool, as in zarr-python
    cache: dict[str, tuple[np.ndarray, str, list, bool]] = {}
    rows: list[dict] = []
    try:
        for name, codec_text in p["points"]:
            dataset = Dataset(name, dims.shape, seed=p["seed"])
            codec = parse_codec(codec_text)
            ops = ("encode", "decode") if backend == "numcodecs" else ("write", "read")
            columns = {"dataset": name, "dtype": dataset.dtype, "codec": str(codec), "codec_family": codec.family,
                       "level": codec.level, "cname": codec.cname, "shuffle": codec.shuffle, "threads": threads,
                       "contender": backend, "shape": list(dims.shape), "chunks": list(dims.chunks)}
            spec = ArraySpec(dims, dataset.dtype, codec)
            why = reason or (f"{codec} has no in-memory codec" if backend == "numcodecs" and not codec.compressed
                             else None)
            if why is None and backend != "numcodecs":
                why = make_adapter(backend, threads=threads).is_incompatible(spec, "write")
            if why:
                rows += skip_rows(why, columns, ops)
                continue
            if name not in cache:
                data, tiled = suite_data(dataset, dims.chunks, p.get("generate_bytes"))
                pieces = split_chunks(data, dims.chunks) if backend == "numcodecs" else []
                cache[name] = (data, checksum_array(data), pieces, tiled)
            data, checksum, pieces, tiled = cache[name]
            columns["data_tiled"] = tiled
            path = ctx.scratch / "store.zarr"
            if backend == "numcodecs":
                rt = codec_round_trip(numcodecs_codec(codec, dataset.dtype), pieces, dims.shape, dataset.dtype,
                                      checksum, pool)
            else:
                rt = adapter_round_trip(backend, spec, data, checksum, path, threads=threads)
            rows += measure_round_trips(rt, iterations=ctx.iterations, warmups=ctx.warmups,
                                        time_cap_s=p["time_cap_s"], nbytes=data.nbytes, columns=columns,
                                        fsync=p["fsync"])
            remove_output(path)
    finally:
        if pool is not None:
            pool.shutdown()
    return rows


def run_case(case: Case, ctx: CaseContext) -> list[dict]:
    if case.backend in MESH_BACKENDS:
        return _run_mesh(case, ctx)
    return _run_arrays(case, ctx)


SUITE = Suite(
    name="compression",
    title="Compression-level sweep: zvtk levels, VTK XML, Zarr codecs (write/read speed vs ratio)",
    build_cases=build_cases,
    run_case=run_case,
    profiles=PROFILES,
    # vtu without compression is base64 text (~1.4x the data); keep room for two outputs
    scratch_bytes=lambda cases: 3 * max((case_nbytes(c) for c in cases), default=0),
    ceiling_bytes=lambda cases: min(max([64 * 2**20, *(case_nbytes(c) for c in cases)]), 2 * 2**30),
    label_keys=("dataset", "codec", "level", "threads"),
    time_budget_s={"quick": 40},
)

__all__ = [
    "ARRAY_BACKENDS",
    "MESH_BACKENDS",
    "PROFILES",
    "SUITE",
    "RoundTrip",
    "adapter_round_trip",
    "build_cases",
    "codec_grid",
    "codec_round_trip",
    "measure_round_trips",
    "mesh_round_trip",
    "numcodecs_codec",
    "run_case",
    "skip_rows",
    "split_chunks",
    "usable_cores",
]
