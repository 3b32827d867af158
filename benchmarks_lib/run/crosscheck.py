"""Cross-check: ome-writers' own documented case through our runner and timed its own way.

ome-writers' ``tools/benchmark.py`` times ``create_stream``, then the append loop plus the
backend's finalize ("write"), and reports bandwidth = bytes / mean write time. We time the
same case through the writers suite (write + finalize phases, no extra fsync) and compare
per backend. Both sides run in fresh processes, backend by backend (ours, then theirs), so
neither inherits the other's process state or a disk busy with the other's writes. The figures
are reported, never asserted: they are timings.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks_lib.adapters import adapter_class, make_adapter
from benchmarks_lib.base.paths import RESULTS_DIR
from benchmarks_lib.base.scratch import make_temp_scratch, remove_tree
from benchmarks_lib.base.specs import ArraySpec, parse_dims
from benchmarks_lib.data.datasets import Dataset
from benchmarks_lib.measure import fresh
from benchmarks_lib.run.runner import run_suite

OME_WRITERS = "ome-writers"
#: the case in ome-writers' performance docs: (20, 1024, 1024) uint16, chunks (1, 256, 256), no compression
DOCUMENTED_DIMS = "t:20:1,y:1024:256,x:1024:256"


def time_like_ome_writers(backend: str, dims: str, warmups: int, iterations: int) -> list[float]:
    """Write seconds (append loop + finalize) per iteration, measured as tools/benchmark.py does.

    The one place outside ``measure.timed`` that reads a clock, on purpose: this is a replica
    of ome-writers' own timing (``time.perf_counter`` around the append loop and close), the
    reference our runner's figure is compared against. Our side is timed by the writers suite.
    The stream is the ome-writers adapter's, set up off the clock as ``create_stream`` is there, so
    both sides write with the same settings and only the timing differs. Each iteration writes into
    a new empty directory, so ``overwrite=True`` deletes nothing.
    """
    dims_spec = parse_dims(dims)
    dataset = Dataset("microscopy", dims_spec.shape)
    frames = dataset.region(tuple(slice(0, n) for n in dims_spec.shape))
    spec = ArraySpec(dims_spec, str(dataset.dtype))
    out = []
    for i in range(warmups + iterations):
        tmp = make_temp_scratch("iobench-ow-")
        try:
            writer = make_adapter(f"{OME_WRITERS}:{backend}")
            writer.create(tmp / "bench.ome.zarr", spec)
            t1 = time.perf_counter()  # tools/benchmark.py's clock (see the docstring), not measure.timed
            writer.write(0, frames)  # one stream.append per frame
            writer.finalize()  # stream.close()
            t3 = time.perf_counter()
        finally:
            remove_tree(tmp, tmp)
        if i >= warmups:
            out.append(t3 - t1)
    return out


def crosscheck_backends() -> tuple[str, ...]:
    """The ome-writers backends (its adapter's options) the cross-check can run."""
    return tuple(adapter_class(OME_WRITERS).options)


def ome_writers_crosscheck(backends: list[str], *, dims: str = DOCUMENTED_DIMS, warmups: int = 1,
                           iterations: int = 10, results_dir: str | Path = RESULTS_DIR) -> pd.DataFrame:
    """Per backend: GB/s through our runner and as ome-writers times it, and their difference."""
    nbytes = Dataset("microscopy", parse_dims(dims).shape).nbytes
    rows = []
    for backend in backends:
        name = f"{OME_WRITERS}:{backend}"
        result = run_suite("writers", {"backends": [name], "tests": ["write"], "dims": dims, "multipliers": [1],
                                       "dataset": "microscopy", "codec": "none", "fsync": False,
                                       "iterations": iterations, "warmups": warmups},
                           results_dir=results_dir, ceiling=False, progress=None)
        df = result.df[result.df["status"] == "ok"]
        mine = df[df["operation"].isin(["write", "finalize"])]
        ours_s = mine.groupby("iteration")["elapsed_s"].sum().mean() if len(mine) else np.nan
        theirs = fresh.call("benchmarks_lib.run.crosscheck:time_like_ome_writers",
                            {"backend": backend, "dims": dims, "warmups": warmups, "iterations": iterations})
        theirs_s = float(np.mean(theirs))
        rows.append({"backend": name, "ours_gbps": nbytes / ours_s / 1e9, "theirs_gbps": nbytes / theirs_s / 1e9,
                     "difference_pct": 100 * (theirs_s / ours_s - 1) if ours_s else np.nan})
    return pd.DataFrame(rows)
