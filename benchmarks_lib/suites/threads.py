"""Thread scaling: the same write and cold read at 1..N threads, per contender (seed 002, extended).

One case is one (contender, thread count), each in its own worker process, because several
libraries size their thread pools once per process (zarr-python's executor, blosc's pool).
Contenders and the knob each one turns:

- ``zvtk``: ``n_threads`` of zvtk.write/read (zstd frames compressed in parallel, one per array);
- ``tensorstore``, ``zarr-python``, ``zarrs``, ``acquire-zarr``: their adapters' ``threads``
  (see each adapter's ``threads_setting``); acquire-zarr cannot read, so its output is
  verified with zarr-python and only its write is timed;
- ``blosc``: numcodecs Blosc with ``set_nthreads`` (blosc's own threads inside each chunk),
  encode/decode in memory.

Rounds, time cap and verification are the compression suite's (``measure_round_trips``):
each timed write starts on a path that does not exist, with ``fsync`` it ends with one
``syncfs`` of the store (the same for every contender), and cold reads carry the eviction
proof. acquire-zarr fsyncs every file it writes itself, whatever the policy: its rows say so
(``writer_fsyncs``, ``fsync_comparable`` False), and a fit over threads would otherwise count
those fsyncs as serial work.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..adapters import adapter_class, make_adapter
from ..datasets import DATASETS, Dataset, checksum_array
from ..meshes import mesh_nbytes_estimate, parse_mesh_n
from ..specs import (
    ArraySpec,
    SpecError,
    parse_bool,
    parse_choice,
    parse_codec,
    parse_count,
    parse_dims,
    parse_ints,
    parse_names,
    parse_seconds,
)
from . import Case, CaseContext, Suite
from .common import remove_output, unavailable_reason, with_defaults
from .compression import (
    RoundTrip,
    adapter_round_trip,
    codec_round_trip,
    measure_round_trips,
    mesh_round_trip,
    missing_module,
    numcodecs_codec,
    parse_generate_bytes,
    skip_rows,
    split_chunks,
    suite_data,
    usable_cores,
)

CONTENDERS = ("zvtk", "tensorstore", "zarr-python", "zarrs", "blosc", "acquire-zarr")
ADAPTER_CONTENDERS = ("tensorstore", "zarr-python", "zarrs", "acquire-zarr")
THREADS_SETTING = {"zvtk": "zvtk n_threads", "blosc": "numcodecs.blosc.set_nthreads"}
MAX_THREADS = 4096

#: quick: four contenders that write files (zarr-python is in the compression chapter's quick run;
#: blosc in memory decodes a quick-sized array in a few ms), at sizes where every timed write and
#: read lasts >= ~100 ms on a small machine, within ~40 s for 1..2 threads
QUICK_CONTENDERS = ["zvtk", "tensorstore", "zarrs", "acquire-zarr"]
PROFILES: dict[str, dict] = {
    "quick": {
        "contenders": QUICK_CONTENDERS, "threads": None, "mesh_n": 80, "level": 3,
        "dataset": "microscopy", "dims": "z:80:16,y:1024:256,x:512:256", "codec": "blosc-zstd:3:shuffle",
        "seed": 42, "fsync": False, "generate_bytes": "16MiB", "time_cap_s": 1.0, "iterations": 2, "warmups": 1,
    },
    "standard": {
        "contenders": list(CONTENDERS), "threads": None, "mesh_n": 127, "level": 3,
        "dataset": "microscopy", "dims": "z:128:16,y:1024:256,x:1024:256", "codec": "blosc-zstd:3:shuffle",
        "seed": 42, "fsync": False, "generate_bytes": None, "time_cap_s": 10.0, "iterations": 5, "warmups": 1,
    },
    # seed 002: the ~10 GB mesh (n=342), threads 1..8, 16, 24, level 3, 5 runs, 20 s cap
    "seed": {
        "contenders": list(CONTENDERS), "threads": [1, 2, 3, 4, 5, 6, 7, 8, 16, 24], "mesh_n": 342, "level": 3,
        "dataset": "microscopy", "dims": "z:256:16,y:2048:512,x:2048:512", "codec": "blosc-zstd:3:shuffle",
        "seed": 42, "fsync": False, "generate_bytes": None, "time_cap_s": 20.0, "iterations": 5, "warmups": 0,
    },
}


def default_threads(cores: int | None = None) -> list[int]:
    """1..cores (the usable cores of this machine)."""
    return list(range(1, (cores or usable_cores()) + 1))


def parse_threads_list(value: Any) -> list[int]:
    """Thread counts, each >= 1 (values above the core count are allowed: oversubscription)."""
    if value is None:
        return default_threads()
    return sorted(set(parse_ints(value, "threads", minimum=1, maximum=MAX_THREADS)))


def build_cases(params: dict, profile: str) -> list[Case]:
    """Validate (SpecError before any work); one case per contender and thread count."""
    p = with_defaults(params, profile, PROFILES, "threads")
    contenders = parse_names(p["contenders"], "contenders", CONTENDERS)
    threads = parse_threads_list(p["threads"])
    levels = None if isinstance(p["level"], list | tuple) else parse_ints(p["level"], "level", minimum=-131072,
                                                                          maximum=22)
    if not levels or len(levels) != 1:
        raise SpecError(f"level {p['level']!r} must be one integer (-131072..22), not a list")
    level = levels[0]
    dataset = parse_choice(p["dataset"], "dataset", DATASETS)
    dims = parse_dims(p["dims"])
    if len(dims.dims) < 2:
        raise SpecError(f"dims {p['dims']!r} needs at least 2 dimensions for the datasets")
    if not isinstance(p["codec"], str):
        raise SpecError(f"codec {p['codec']!r} must be one codec string, e.g. blosc-zstd:3:shuffle")
    codec = str(parse_codec(p["codec"]))
    common = {"time_cap_s": parse_seconds(p["time_cap_s"], "time_cap_s"),
              "seed": parse_count(p["seed"], "seed", minimum=0, maximum=2**32 - 1),
              "fsync": parse_bool(p["fsync"], "fsync")}
    mesh = {"dataset": "tet_mesh", "mesh_n": parse_mesh_n(p["mesh_n"]), "level": level, "codec": f"zstd:{level}"}
    arrays = {"dataset": dataset, "dims": str(dims), "codec": codec,
              "generate_bytes": parse_generate_bytes(p["generate_bytes"])}
    cases = []
    for contender in contenders:
        for n in threads:
            data = mesh if contender == "zvtk" else arrays
            cases.append(Case("threads", contender, {**common, **data, "threads": n}))
    return cases


def case_nbytes(case: Case) -> int:
    if case.backend == "zvtk":
        return mesh_nbytes_estimate(case.params["mesh_n"])
    shape = parse_dims(case.params["dims"]).shape
    return math.prod(shape) * np.dtype(DATASETS[case.params["dataset"]][0]).itemsize


def _zarr_reader_round_trip(writer: str, spec: ArraySpec, data: np.ndarray, checksum: str, path, threads: int
                            ) -> RoundTrip:
    """A write-only contender (acquire-zarr): its write is timed, zarr-python reads it back to verify."""
    rt = adapter_round_trip(writer, spec, data, checksum, path, threads=threads)
    check = adapter_round_trip("zarr-python", spec, data, checksum, path, threads=None)
    rt.read, rt.timed_read = check.read, False
    return rt


def run_case(case: Case, ctx: CaseContext) -> list[dict]:
    p, contender, threads = case.params, case.backend, case.params["threads"]
    columns: dict = {"contender": contender, "threads": threads, "cores": usable_cores(), "dataset": p["dataset"],
                     "codec": p["codec"]}
    if contender in ADAPTER_CONTENDERS:
        columns["threads_setting"] = adapter_class(contender).threads_setting
    else:
        columns["threads_setting"] = THREADS_SETTING[contender]
    rounds = {"iterations": ctx.iterations, "warmups": ctx.warmups, "time_cap_s": p["time_cap_s"],
              "fsync": p["fsync"]}
    if contender == "zvtk":
        return _run_zvtk(p, ctx, columns, rounds)
    dims = parse_dims(p["dims"])
    codec = parse_codec(p["codec"])
    dataset = Dataset(p["dataset"], dims.shape, seed=p["seed"])
    spec = ArraySpec(dims, dataset.dtype, codec)
    columns.update(dtype=dataset.dtype, codec_family=codec.family, level=codec.level, shape=list(dims.shape),
                   chunks=list(dims.chunks))
    ops = ("encode", "decode") if contender == "blosc" else ("write", "read")
    if contender == "blosc":
        reason = None if codec.family == "blosc" else f"the blosc contender needs a blosc codec, not {codec}"
    else:
        reason = unavailable_reason(contender)
        reason = reason or make_adapter(contender, threads=threads).is_incompatible(spec, "write")
        if contender == "acquire-zarr":
            reason = reason or unavailable_reason("zarr-python")
    if reason:
        return skip_rows(reason, columns, ops)
    data, columns["data_tiled"] = suite_data(dataset, dims.chunks, p.get("generate_bytes"))
    checksum = checksum_array(data)
    path = ctx.scratch / "store.zarr"
    if contender == "blosc":
        import numcodecs.blosc

        numcodecs.blosc.use_threads = threads > 1
        numcodecs.blosc.set_nthreads(threads)
        rt = codec_round_trip(numcodecs_codec(codec, dataset.dtype), split_chunks(data, dims.chunks), dims.shape,
                              dataset.dtype, checksum, pool=None)
    elif contender == "acquire-zarr":
        rt = _zarr_reader_round_trip(contender, spec, data, checksum, path, threads)
    else:
        rt = adapter_round_trip(contender, spec, data, checksum, path, threads=threads)
    rows = measure_round_trips(rt, nbytes=data.nbytes, columns=columns, **rounds)
    remove_output(path)
    return rows


def _run_zvtk(p: dict, ctx: CaseContext, columns: dict, rounds: dict) -> list[dict]:
    from ..meshes import build_tet_mesh, mesh_nbytes

    if reason := missing_module("zvtk"):
        return skip_rows(reason, columns)
    mesh = build_tet_mesh(p["mesh_n"], p["seed"])
    columns.update(dtype="mixed", mesh_n=p["mesh_n"], level=p["level"], codec_family="zstd",
                   mesh_points=mesh.n_points, mesh_cells=mesh.n_cells)
    path = ctx.scratch / "mesh.zvtk"
    rt = mesh_round_trip("zvtk", mesh, path, threads=p["threads"], level=p["level"])
    rows = measure_round_trips(rt, nbytes=mesh_nbytes(mesh), columns=columns, **rounds)
    remove_output(path)
    return rows


SUITE = Suite(
    name="threads",
    title="Thread scaling: write and cold-read time vs threads (zvtk, Zarr writers, Blosc)",
    build_cases=build_cases,
    run_case=run_case,
    profiles=PROFILES,
    scratch_bytes=lambda cases: 3 * max((case_nbytes(c) for c in cases), default=0),
    ceiling_bytes=lambda cases: min(max([64 * 2**20, *(case_nbytes(c) for c in cases)]), 2 * 2**30),
    label_keys=("dataset", "codec", "level", "threads"),
    time_budget_s={"quick": 35},
)

__all__ = ["CONTENDERS", "PROFILES", "SUITE", "build_cases", "default_threads", "parse_threads_list", "run_case"]
