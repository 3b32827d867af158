"""Thread scaling: the same write and cold read at 1..N threads, per backend (seed 002, extended).

One case is one (backend, thread count), each in its own worker process, because several
libraries size their thread pools once per process (zarr-python's executor, blosc's pool).
The backends are every registered adapter that declares a ``threads_setting`` (the knob it
turns; recorded in the rows) and does not ignore it, of three kinds:

- mesh writers (``zvtk``: ``n_threads``, zstd frames compressed in parallel, one per array),
  measured on the tetrahedral mesh at one zstd ``level``;
- array writers (``tensorstore``, ``zarr-python``, ``zarrs``, ``acquire-zarr``), through
  their adapters; a write-only writer (acquire-zarr) has only its write timed and is verified
  by another library that reads its format;
- in-memory codecs (``blosc``: numcodecs Blosc with ``set_nthreads``, blosc's own threads
  inside each chunk), encode/decode in memory.

Measured in rounds (:mod:`benchmarks_lib.run.rounds`): each case is set up once in its worker (its data, its
warm-ups), then every round measures one round trip of every case of the run, in a shuffled order, so the thread
counts are compared round by round. The round trip and its verification are the shared one's (:mod:`.roundtrip`):
each timed write starts on a path that does not exist, with ``fsync`` it ends with one ``syncfs`` of the store (the
same for every backend), and cold reads carry the eviction proof.
acquire-zarr fsyncs every file it writes itself, whatever the policy: its rows say so
(``writer_fsyncs``, ``fsync_comparable`` False), and a fit over threads would otherwise count
those fsyncs as serial work.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from benchmarks_lib.base.environment import usable_cores
from benchmarks_lib.base.specs import (
    ZSTD_LEVELS,
    ArraySpec,
    SpecError,
    parse_bool,
    parse_codec,
    parse_count,
    parse_dims,
    parse_ints,
    parse_names,
    parse_threads,
)
from benchmarks_lib.data.meshes import MESH_DATASET, mesh_nbytes_estimate, parse_mesh_n
from benchmarks_lib.inputs.user_data import dataset_dtype, parse_dataset, sources_param
from benchmarks_lib.suites import Case, CaseContext, Rounds, Suite
from benchmarks_lib.suites.kit.backends import (
    array_point_reason,
    array_round_trip,
    backend_names,
    mesh_points,
    suite_backend,
)
from benchmarks_lib.suites.kit.common import sized_by, with_defaults
from benchmarks_lib.suites.kit.in_rounds import Point, in_rounds, whole_case
from benchmarks_lib.suites.kit.own_data import case_dataset, fit_crops
from benchmarks_lib.suites.kit.roundtrip import array_data, parse_generate_bytes, round_trip_point, skip_rows


def scales_with_threads(cls: type) -> bool:
    """Declares a threads setting that it applies (a baseline that ignores a thread count does not)."""
    return cls.threads_setting is not None and not cls.ignores_threads


BACKENDS = backend_names(scales_with_threads)

#: quick: three backends that write files (zarr-python is in the compression chapter's standard run; blosc in
#: memory decodes a quick-sized array in a few ms; acquire-zarr fsyncs every file itself, so its times are not
#: comparable with the others': standard), at sizes where a round (1.0 s on 2026-11-29: 32 MiB of microscopy, a
#: 64^3 mesh) reaches the first look within the quick book's share, in 8 to 20 rounds. The standard profile's
#: shapes take about 6x as long per round: a quick run shares the codec, dataset, chunks and zvtk level with it,
#: not the sizes.
QUICK_BACKENDS = ["zvtk", "tensorstore", "zarrs"]
PROFILES: dict[str, dict] = {
    "quick": {
        "backends": QUICK_BACKENDS, "threads": None, "mesh_n": 64, "level": 3,
        "dataset": "microscopy", "dims": "z:32:16,y:1024:256,x:512:256", "codec": "blosc-zstd:3:shuffle",
        "seed": 42, "fsync": False, "generate_bytes": "16MiB", "warmups": 1,
    },
    "standard": {
        "backends": list(BACKENDS), "threads": None, "mesh_n": 127, "level": 3,
        "dataset": "microscopy", "dims": "z:128:16,y:1024:256,x:1024:256", "codec": "blosc-zstd:3:shuffle",
        "seed": 42, "fsync": False, "generate_bytes": None, "warmups": 1,
    },
    # seed 002: the ~10 GB mesh (n=342), threads 1..8, 16, 24, level 3 (the seed ran 5 times; here in rounds, to
    # the rule's looks)
    "seed": {
        "backends": list(BACKENDS), "threads": [1, 2, 3, 4, 5, 6, 7, 8, 16, 24], "mesh_n": 342, "level": 3,
        "dataset": "microscopy", "dims": "z:256:16,y:2048:512,x:2048:512", "codec": "blosc-zstd:3:shuffle",
        "seed": 42, "fsync": False, "generate_bytes": None, "warmups": 0,
    },
}


def default_threads(cores: int | None = None) -> list[int]:
    """1..cores (the usable cores of this machine)."""
    return list(range(1, (cores or usable_cores()) + 1))


def parse_threads_list(value: Any) -> list[int]:
    """Thread counts (``specs.parse_threads``); None: 1..the usable cores."""
    return default_threads() if value is None else parse_threads(value)


def mesh_point(cls: type, level: int) -> tuple[str, int | None]:
    """(compressor, level) of a mesh writer in this suite: its first compressor, at ``level`` where it has levels."""
    return cls.compressors[0], level if cls.level_range is not None else None


def build_cases(params: dict, profile: str) -> list[Case]:
    """Validate (SpecError before any work); one case per backend and thread count."""
    p = with_defaults(params, profile, PROFILES, "threads")
    names = parse_names(p["backends"], "backends", BACKENDS)
    threads = parse_threads_list(p["threads"])
    low, high = ZSTD_LEVELS
    levels = None if isinstance(p["level"], list | tuple) else parse_ints(p["level"], "level", minimum=low,
                                                                          maximum=high)
    if not levels or len(levels) != 1:
        raise SpecError(f"level {p['level']!r} must be one integer ({low}..{high}), not a list")
    level = levels[0]
    dataset, source = parse_dataset(p["dataset"])
    dims = parse_dims(p["dims"])
    if len(dims.dims) < 2:
        raise SpecError(f"dims {p['dims']!r} needs at least 2 dimensions for the datasets")
    if source is not None:  # a person's own data: the crop the dims measure
        (dims,) = fit_crops(source, names, dims=(dims, True))
    if not isinstance(p["codec"], str):
        raise SpecError(f"codec {p['codec']!r} must be one codec string, e.g. blosc-zstd:3:shuffle")
    codec = str(parse_codec(p["codec"]))
    common = {"seed": parse_count(p["seed"], "seed", minimum=0, maximum=2**32 - 1),
              "fsync": parse_bool(p["fsync"], "fsync")}
    mesh = {"dataset": MESH_DATASET, "mesh_n": parse_mesh_n(p["mesh_n"]), "level": level}
    arrays = {"dataset": dataset, "dims": str(dims), "codec": codec,
              "generate_bytes": parse_generate_bytes(p["generate_bytes"])}
    if source is not None:
        arrays["sources"] = sources_param([source])
    cases = []
    for name in names:
        who = suite_backend(name)
        data = arrays
        if who.kind == "mesh":
            data = {**mesh, "codec": who.cls.codec_label(*mesh_point(who.cls, level))}
        cases += [Case("threads", name, {**common, **data, "threads": n}) for n in threads]
    return cases


def case_nbytes(case: Case) -> int:
    if case.params["dataset"] == MESH_DATASET:
        return mesh_nbytes_estimate(case.params["mesh_n"])
    shape = parse_dims(case.params["dims"]).shape
    return math.prod(shape) * np.dtype(dataset_dtype(case.params["dataset"], case.params.get("sources"))).itemsize


def points(case: Case, ctx: CaseContext) -> Iterator[Point | list[dict]]:
    """The case's one point set up for rounds (``kit.in_rounds``): its data made and its warm-ups run, once."""
    p, who, threads = case.params, suite_backend(case.backend), case.params["threads"]
    columns: dict = {"threads": threads, "cores": usable_cores(), "dataset": p["dataset"],
                     "codec": p["codec"], "threads_setting": who.cls.threads_setting}
    if who.kind == "mesh":
        yield from mesh_points(who, p, ctx, columns, [mesh_point(who.cls, p["level"])])
        return
    dims = parse_dims(p["dims"])
    codec = parse_codec(p["codec"])
    dataset, data = case_dataset(p, p["dataset"], dims.shape)
    spec = ArraySpec(dims, dataset.dtype, codec)
    columns.update(**data, codec_family=codec.family, level=codec.level, shape=list(dims.shape),
                   chunks=list(dims.chunks))
    if reason := array_point_reason(who, spec, threads):
        yield skip_rows(reason, columns, who.operations)
        return
    data = array_data(dataset, dims.chunks, p.get("generate_bytes"), split=who.kind == "codec",
                      scratch=ctx.scratch)
    columns["data_tiled"] = data.tiled
    # every backend here turns its own threads knob: no chunk pool
    rt = array_round_trip(who, spec, data, ctx.scratch / "store.zarr", threads=threads)
    yield round_trip_point(rt, warmups=ctx.warmups, nbytes=data.values.nbytes, columns=columns, fsync=p["fsync"])


def rounds(case: Case, ctx: CaseContext) -> Rounds:
    """The case in rounds (``kit.in_rounds``): its point set up once, measured once per round."""
    return in_rounds(points(case, ctx))


SUITE = Suite(
    name="threads",
    title="Thread scaling",
    measures="write and cold-read time vs threads (zvtk, Zarr writers, Blosc)",
    build_cases=build_cases,
    run_case=whole_case(rounds),
    rounds=rounds,
    # the front page and the chapter rank each side's thread counts per backend (``rules.answers._threads``;
    # encode/decode are the sides of a codec in memory): a question is one backend's thread counts
    questions=("write", "read", "encode", "decode"),
    contenders=("threads",), question_keys=("backend", "dataset", "codec", "level", "nbytes"),
    # more threads than this machine's usable cores: oversubscribed, outside the Amdahl fit
    optional=lambda case: case.params["threads"] > usable_cores(),
    profiles=PROFILES,
    **sized_by(case_nbytes),
    label_keys=("dataset", "codec", "level", "threads"),
    case_keys=("dataset", "codec", "level", "threads", "nbytes"),
    time_budget_s={"quick": 19, "standard": 265},  # standard: its first look (8 rounds) on 2 cores
    smoke={"threads": [1, 2], "mesh_n": 8, "dims": "z:4:2,y:32:16,x:32:16", "iterations": 1, "warmups": 0},
)

__all__ = ["BACKENDS", "PROFILES", "SUITE", "build_cases", "default_threads", "parse_threads_list", "points",
           "rounds", "scales_with_threads"]
