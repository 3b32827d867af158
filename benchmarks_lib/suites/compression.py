"""Compression-level sweep: mesh writers' levels on a tetrahedral mesh (seed 002) and Zarr codecs on arrays.

Points are (backend, data, codec setting); each is measured by the shared round trip
(:mod:`.roundtrip`), in rounds: a case's points are set up once (the data, the warm-ups), then each round
(:mod:`benchmarks_lib.run.rounds`: at most ``iterations``, every case of the run once, in a shuffled order) is one
timed write / evict / cold read / verify of every point (seed 002: 5 runs), verified by exact mesh equality or the
array checksum. In-memory codecs encode and decode chunk by chunk instead, with no files.

Backends come from the registry (:mod:`.backends`), by declared capabilities:

- mesh writers (kind ``mesh``): one with a ``level_range`` sweeps ``levels`` of its one
  compressor (``zvtk``: zstd), one without sweeps ``vtu_compressors`` at their default level
  (``vtu``, the VTK XML writer, on one thread);
- for the core datasets, Zarr writers that apply a codec to plain chunks and read them back
  (``zarr-python``, ``tensorstore``, ``zarrs``), and in-memory codecs (``numcodecs``: the
  codecs alone, chunks spread over ``threads`` threads as zarr-python does; ``blosc``).

Real data beside synthetic (:mod:`.twins`): each of ``real_datasets`` (every profile: the two real volumes that
ship with pyvista, ``example:frog_tissues`` and ``example:channels``) and its synthetic twin (``labels`` at the
real crop's dtype and shape) are encoded and decoded by every codec in memory (``numcodecs``, chunk by chunk: the
ratio a store of those chunks gets, without its files).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from benchmarks_lib.adapters import adapter_class
from benchmarks_lib.base.environment import usable_cores
from benchmarks_lib.base.specs import (
    ZSTD_LEVELS,
    ArraySpec,
    DimsSpec,
    SpecError,
    parse_bool,
    parse_codec,
    parse_codecs,
    parse_count,
    parse_dims,
    parse_ints,
    parse_names,
    parse_threads,
)
from benchmarks_lib.data.datasets import DATASETS
from benchmarks_lib.data.examples import EXAMPLES
from benchmarks_lib.data.meshes import MESH_DATASET, mesh_nbytes_estimate, parse_mesh_n
from benchmarks_lib.inputs.user_data import MeshSpec, dataset_dtype, parse_datasets, sources_param
from benchmarks_lib.suites import Case, CaseContext, Rounds, Suite
from benchmarks_lib.suites.kit.backends import (
    SuiteBackend,
    array_point_reason,
    array_round_trip,
    backend_names,
    mesh_points,
    suite_backend,
)
from benchmarks_lib.suites.kit.common import sized_by, with_defaults
from benchmarks_lib.suites.kit.in_rounds import Point, in_rounds, whole_case
from benchmarks_lib.suites.kit.own_data import case_dataset, fit_crops
from benchmarks_lib.suites.kit.roundtrip import (
    ArrayData,
    array_data,
    parse_generate_bytes,
    round_trip_point,
    skip_rows,
)
from benchmarks_lib.suites.kit.twins import PAIR_BACKEND, RealPair, pair_missing, pairs_param, parse_real_datasets

ZARR_FORMATS = ("zarr2", "zarr3")


def compresses_arrays(cls: type) -> bool:
    """An in-memory codec, or a Zarr writer that compresses plain (unsharded) chunks and reads them back."""
    if cls.kind == "codec":
        return True
    return (cls.applies_codec and cls.supports_read and not cls.requires_sharding
            and cls.format in ZARR_FORMATS)


MESH_BACKENDS = backend_names(lambda cls: bool(cls.compressors), kinds=("mesh",))
ARRAY_BACKENDS = backend_names(compresses_arrays, kinds=("array", "codec"))
#: compressors of the mesh writers that offer compressors rather than levels (the VTK XML writer)
VTU_COMPRESSORS = tuple(dict.fromkeys(
    c for name in MESH_BACKENDS if (cls := adapter_class(name, "mesh")).level_range is None for c in cls.compressors))


def codec_grid(*, zstd: Iterable[int] = (), gzip: Iterable[int] = (), lz4: bool = False,
               blosc_cnames: Iterable[str] = (), blosc_shuffles: Iterable[str] = (),
               blosc_levels: Iterable[int] = ()) -> list[str]:
    """Codec strings (``parse_codec`` syntax) for a sweep: every level, every blosc combination."""
    out = ["lz4"] if lz4 else []
    out += [f"zstd:{lvl}" for lvl in zstd] + [f"gzip:{lvl}" for lvl in gzip]
    out += [f"blosc-{c}:{lvl}:{s}" for c in blosc_cnames for s in blosc_shuffles for lvl in blosc_levels]
    return out


#: the Blosc compressors the sweeps cover (of ``specs.BLOSC_CNAMES``: lz4hc and zlib left out), with every shuffle
_BLOSC_SWEEP = {"blosc_cnames": ("lz4", "zstd", "blosclz"), "blosc_shuffles": ("shuffle", "bitshuffle", "noshuffle")}
_CORE_ARRAYS = ("zarr-python", "tensorstore", "numcodecs")
#: standard: the codecs people choose between (LZ4, Zstd at its fast and default levels, and Blosc with each
#: shuffle), each on every dataset, so that the chapter's questions reach their first look: 8 rounds of about 35 s
#: at 64-256 MiB per array on 2 cores (zvtk's levels and the VTK XML compressors included). zstd:9 and
#: gzip:6 (1.4 s a write of the microscopy array each, on 2026-11-29: a round was 86 s with them and zvtk's 15 and
#: 22, and left every question but one out at round 2) and the full grid are the seed profile's.
STANDARD_CODECS = ("lz4", "zstd:1", "zstd:3", "blosc-lz4:5:shuffle", "blosc-lz4:5:bitshuffle", "blosc-zstd:5:shuffle",
                   "blosc-zstd:5:bitshuffle")
#: standard: zvtk's levels from its fastest to level 9, 5 of the seed's 45 (15 and 22, 1.2 s and 7.3 s a write of
#: the 80^3 mesh, and every other level: seed)
STANDARD_LEVELS = [-7, -1, 1, 3, 9]
#: standard: VTK XML's compressors but lzma, whose writes of the 80^3 mesh took 26 s each: 155 of the 177 s the
#: four took in the reference of 2026-11-26 (lzma: the seed profile's, or name it in ``vtu_compressors``)
STANDARD_VTU = ["none", "lz4", "zlib"]
#: standard: the codecs in memory (numcodecs) and through one writer (tensorstore). zarr-python's codecs are
#: numcodecs' own and the writers chapter times its writes; here it cost a quarter of the standard run, so it is
#: the seed profile's (or name it in ``array_backends``)
STANDARD_ARRAYS = ("tensorstore", "numcodecs")
#: real volumes beside their synthetic twins, in every profile: in memory, 15-32 MB each at the quick and standard
#: dims; the quick profile's three codecs (the fast ones: ~4 s on 2 cores) are standard points too
REAL_DATASETS = [f"example:{name}" for name in EXAMPLES]
QUICK_REAL_CODECS = ["lz4", "zstd:1", "zstd:3"]
#: the quick profile answers the chapter's question with few, big points: standard's levels, compressor, chunks
#: and codecs on half its array (its first 32 planes, 64 MiB) and a 64^3 mesh instead of 80^3 (67 MB), so that a
#: round (1.6 s on 2026-11-29; 4.4 s at standard's sizes) reaches the first look within the quick book's share, in
#: 8 to 20 rounds: every timed write and read still lasts >= ~50 ms here, so fixed costs do not make the speeds.
#: VTK XML writes with zlib, seed 002's compressor (its claim against zvtk is checked in the seeds chapter).
#: The array codecs are tensorstore's (zarr-python writes these arrays 2-3x slower: standard); in-memory codec runs
#: are left to standard/seed (a fast codec decodes a quick-sized array in a few ms).
PROFILES: dict[str, dict] = {
    "quick": {
        "mesh_backends": list(MESH_BACKENDS), "mesh_n": 64, "seed": 42,
        "levels": [1, 3], "vtu_compressors": ["zlib"],
        "array_backends": ["tensorstore"], "datasets": ["microscopy"],
        "real_datasets": REAL_DATASETS, "real_codecs": QUICK_REAL_CODECS,
        "dims": "z:32:32,y:1024:256,x:1024:256", "codecs": ["zstd:1", "blosc-zstd:5:bitshuffle"],
        "threads": None, "fsync": False, "generate_bytes": None, "points_per_case": 1000,
        "warmups": 1,
    },
    "standard": {
        "mesh_backends": list(MESH_BACKENDS), "mesh_n": 80, "seed": 42,
        "levels": list(STANDARD_LEVELS), "vtu_compressors": list(STANDARD_VTU),
        "array_backends": list(STANDARD_ARRAYS), "datasets": list(DATASETS),
        "real_datasets": REAL_DATASETS, "real_codecs": list(STANDARD_CODECS),
        "dims": "z:64:32,y:1024:256,x:1024:256", "codecs": list(STANDARD_CODECS),
        "threads": None, "fsync": False, "generate_bytes": None, "points_per_case": 25,
        "warmups": 1,
    },
    # seed 002: the ~500 MB mesh (n=127), levels -22..22, 8 threads, no warm-up (the seed ran 5 times; here in
    # rounds, to the rule's looks)
    "seed": {
        "mesh_backends": list(MESH_BACKENDS), "mesh_n": 127, "seed": 42,
        "levels": list(range(-22, 23)), "vtu_compressors": ["none", "lz4", "zlib", "lzma"],
        "array_backends": list(_CORE_ARRAYS), "datasets": list(DATASETS),
        "real_datasets": REAL_DATASETS, "real_codecs": list(STANDARD_CODECS),
        "dims": "z:128:64,y:1024:256,x:1024:256",
        "codecs": codec_grid(lz4=True, zstd=range(1, 23), gzip=range(1, 10), blosc_levels=range(1, 10), **_BLOSC_SWEEP),
        "threads": 8, "fsync": False, "generate_bytes": None, "points_per_case": 4, "warmups": 0,
    },
}


# -- parameters and cases -----------------------------------------------------------------
def _thread_count(value: Any) -> int:
    """One thread count (``specs.parse_threads``); None: every usable core."""
    return usable_cores() if value is None else parse_threads(value, one=True)[0]


def _batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def build_cases(params: dict, profile: str) -> list[Case]:
    """Validate the parameters (SpecError before any work) and group the points into cases."""
    p = with_defaults(params, profile, PROFILES, "compression")
    mesh_backends = parse_names(p["mesh_backends"], "mesh_backends", MESH_BACKENDS, empty_ok=True)
    array_backends = parse_names(p["array_backends"], "array_backends", ARRAY_BACKENDS, empty_ok=True)
    levels = parse_ints(p["levels"], "levels", minimum=ZSTD_LEVELS[0], maximum=ZSTD_LEVELS[1])
    compressors = parse_names(p["vtu_compressors"], "vtu_compressors", VTU_COMPRESSORS)
    # the scalars before the datasets: a person's files are inspected in a child process of their own
    common = {"threads": _thread_count(p["threads"]),
              "seed": parse_count(p["seed"], "seed", minimum=0, maximum=2**32 - 1),
              "fsync": parse_bool(p["fsync"], "fsync")}
    generate = parse_generate_bytes(p["generate_bytes"])
    size = parse_count(p["points_per_case"], "points_per_case")
    codecs, real_codecs = parse_codecs(p["codecs"]), parse_codecs(p["real_codecs"])
    parsed = parse_datasets(p["datasets"], meshes=True)  # a person's mesh files go to the mesh writers
    mesh_files = [spec for _, spec in parsed if isinstance(spec, MeshSpec)]
    choices = [(label, spec) for label, spec in parsed if not isinstance(spec, MeshSpec)]
    pairs = parse_real_datasets(p["real_datasets"], named=params.get("real_datasets") is not None)
    for name, given, used in (("codecs", codecs, array_backends), ("real_codecs", real_codecs, pairs)):
        if used and not given:
            raise SpecError(f"{name} is empty; give at least one, e.g. zstd:3, gzip:6, lz4, blosc-lz4:5:shuffle")
    dims = parse_dims(p["dims"])
    if len(dims.dims) < 2:
        raise SpecError(f"dims {p['dims']!r} needs at least 2 dimensions for the datasets")
    if dims.shards:
        raise SpecError(f"dims {p['dims']!r} is sharded; this suite compares codecs on plain chunks")
    points_dims = {}  # a person's own data: its crop of the dims (synthetic data: the dims)
    for label, spec in choices:
        points_dims[label] = str(fit_crops(spec, array_backends, dims=(dims, True))[0] if spec else dims)
    tet = {"dataset": MESH_DATASET, "mesh_n": parse_mesh_n(p["mesh_n"]), **common}
    meshes = [tet, *({**common, "dataset": m.label, "mesh_file": m.to_param()} for m in mesh_files)]
    cases = []
    for backend, mesh in itertools.product(mesh_backends, meshes):
        if adapter_class(backend, "mesh").level_range is not None:  # a level sweep of its one compressor
            cases += [Case("compression", backend, {**mesh, "levels": batch}) for batch in _batches(levels, size)]
        else:  # its compressors, each at the default level
            cases += [Case("compression", backend, {**mesh, "compressors": batch})
                      for batch in _batches(compressors, size)]
    arrays = {**common, "generate_bytes": generate}
    if sources := sources_param([spec for _, spec in choices]):
        arrays["sources"] = sources
    for backend in array_backends:
        for shape in dict.fromkeys(points_dims.values()):  # one batch of points per shape: the case's dims
            points = [[d, c] for d, _ in choices if points_dims[d] == shape for c in codecs]
            cases += [Case("compression", backend, {**arrays, "dims": shape, "points": batch})
                      for batch in _batches(points, size)]
    cases += _pair_cases(pairs, real_codecs, dims, {**common, "generate_bytes": generate}, size)
    if not cases:
        raise SpecError("nothing to measure: mesh_backends, array_backends and real_datasets are all empty")
    return cases


def _pair_cases(pairs: list[RealPair], codecs: list, dims: DimsSpec, arrays: dict, size: int) -> list[Case]:
    """The real arrays and their twins, in memory: each pair at the real crop (the dims fitted to it), its points
    carrying their dims (one case for every shape: fewer worker starts)."""
    points = []
    for pair in pairs:
        shape = str(fit_crops(pair.spec, [PAIR_BACKEND], dims=(dims, True))[0] if pair.spec else dims)
        points += [[name, str(codec), shape] for codec in codecs for name in (pair.real, pair.twin)]
    params = {**arrays, "pairs": pairs_param(pairs)}
    if sources := sources_param([pair.spec for pair in pairs]):
        params["sources"] = sources
    return [Case("compression", PAIR_BACKEND, {**params, "points": batch}) for batch in _batches(points, size)]


def _point_nbytes(params: dict, name: str, dims: str) -> int:
    """Uncompressed bytes of one array point (none for a pair that cannot be measured here)."""
    if pair_missing(params, name):
        return 0
    dtype = params.get("pairs", {}).get(name, {}).get("dtype") or dataset_dtype(name, params.get("sources"))
    return math.prod(parse_dims(dims).shape) * np.dtype(dtype).itemsize


def case_nbytes(case: Case) -> int:
    """Uncompressed bytes of the largest data one case holds."""
    p = case.params
    if "mesh_file" in p:
        return p["mesh_file"]["nbytes"]
    if p.get("dataset") == MESH_DATASET:
        return mesh_nbytes_estimate(p["mesh_n"])
    return max(_point_nbytes(p, name, shape[0] if shape else p["dims"]) for name, _, *shape in p["points"])


# -- running: each case's points set up once, then measured once per round (``kit.in_rounds``) --------------------
def _mesh_points(who: SuiteBackend, case: Case, ctx: CaseContext) -> Iterator[Point | list[dict]]:
    p = case.params
    if who.cls.level_range is not None:  # a level sweep of its one compressor
        points = [(who.cls.compressors[0], level) for level in p["levels"]]
    else:  # its compressors, each at the default level
        points = [(compressor, None) for compressor in p["compressors"]]
    return mesh_points(who, p, ctx, {"dataset": p["dataset"]}, points)


def _array_points(who: SuiteBackend, case: Case, ctx: CaseContext) -> Iterator[Point | list[dict]]:
    """Each (dataset, codec) point set up: its data made once per dataset (shared by the case's points), its warm-ups
    run (the case's first point only: the library is warm after it). The chunk pool of a codec without threads of
    its own lives as long as the case: shut down with its first point (or now, when no point is measured)."""
    p = case.params
    threads = p["threads"]
    pool = who.chunk_pool(threads)
    cache: dict[str, ArrayData] = {}
    warmups = ctx.warmups
    path = ctx.scratch / "store.zarr"  # one output at a time: each round's is removed once verified
    try:
        for name, codec_text, *shape in p["points"]:  # a pair's point carries its dims (the real crop's)
            dims = parse_dims(shape[0] if shape else p["dims"])
            codec = parse_codec(codec_text)
            columns = {"dataset": name, "codec": str(codec), "codec_family": codec.family,
                       "level": codec.level, "cname": codec.cname, "shuffle": codec.shuffle, "threads": threads,
                       "shape": list(dims.shape), "chunks": list(dims.chunks)}
            if why := pair_missing(p, name):
                yield skip_rows(why, columns, who.operations)
                continue
            dataset, data = case_dataset(p, name, dims.shape)
            columns.update(data)
            spec = ArraySpec(dims, dataset.dtype, codec)
            if why := array_point_reason(who, spec, threads):
                yield skip_rows(why, columns, who.operations)
                continue
            if name not in cache:
                cache[name] = array_data(dataset, dims.chunks, p.get("generate_bytes"), split=who.kind == "codec",
                                         scratch=ctx.scratch)
            columns["data_tiled"] = cache[name].tiled
            rt = array_round_trip(who, spec, cache[name], path, threads=threads, pool=pool)
            point = round_trip_point(rt, warmups=warmups, nbytes=cache[name].values.nbytes,
                                     columns={**columns, "warmup_rounds": warmups}, fsync=p["fsync"])
            if pool is not None:
                point, pool = Point(point.measure, _then(point.cleanup, pool.shutdown)), None
            yield point
            warmups = 0
    finally:
        if pool is not None:
            pool.shutdown()


def _then(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    """``first``, then ``second`` even when ``first`` raised."""
    def both() -> None:
        try:
            first()
        finally:
            second()
    return both


def rounds(case: Case, ctx: CaseContext) -> Rounds:
    """The case in rounds (``kit.in_rounds``): its points set up once, each measured once per round."""
    who = suite_backend(case.backend)
    return in_rounds(_mesh_points(who, case, ctx) if who.kind == "mesh" else _array_points(who, case, ctx))


SUITE = Suite(
    name="compression",
    title="Compression levels and codecs",
    measures="zvtk levels, VTK XML, Zarr codecs: write/read speed vs ratio",
    build_cases=build_cases,
    run_case=whole_case(rounds),
    rounds=rounds,
    # the chapter ranks the writes of each dataset (``chapters.compression``, the front page's codec answer): a store
    # setting's write time, each writer at the threads it writes with (VTK XML writes on one, zvtk on several: the
    # choice a reader has, and seed 002's comparison)
    questions=("write",),
    contenders=("codec",), question_keys=("dataset", "nbytes"),
    # the real data beside its twins: in memory, its ratios the answer (its times shown, never ranked)
    optional=lambda case: "pairs" in case.params,
    profiles=PROFILES,
    # vtu without compression is base64 text (~1.4x the data); keep room for two outputs
    **sized_by(case_nbytes),
    label_keys=("dataset", "codec", "level", "threads"),
    case_keys=("dataset", "codec", "level", "threads", "nbytes"),
    time_budget_s={"quick": 31, "standard": 360},
    smoke={"mesh_n": 8, "levels": [1, 3], "vtu_compressors": ["zlib"], "datasets": ["em_like", "labels"],
           "dims": "z:4:4,y:32:16,x:32:16", "codecs": ["zstd:1", "blosc-lz4:5:shuffle"], "iterations": 1,
           "warmups": 0},
)

__all__ = [
    "ARRAY_BACKENDS",
    "MESH_BACKENDS",
    "PROFILES",
    "SUITE",
    "VTU_COMPRESSORS",
    "build_cases",
    "codec_grid",
    "compresses_arrays",
    "rounds",
]
