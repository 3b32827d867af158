"""The inputs that measured reads read: written once per run in the run's scratch directory,
verified, then reused while they pass a cheap check.

- :mod:`.root_sample`: seed 004's TTree sample file (written by ROOT or uproot);
- :mod:`.zarr_store`: a Zarr v3 store of a seeded dataset (written by zarr-python).

The libraries that write them are adapters (``adapters/root.py``, ``adapters/uproot.py``,
``adapters/zarr_http.py``); this package names, locks, checks and renames into place.
"""

from __future__ import annotations

import os
from pathlib import Path


def inputs_dir(case_scratch: Path) -> Path:
    """Where a case's inputs live: ``inputs/`` in the run's scratch directory (the marked parent of
    the case's scratch, kept for the whole run and checked for space by the runner), else in the
    case's own scratch. Never the results directory."""
    from benchmarks_lib.base.scratch import is_marked

    run_scratch = case_scratch.parent
    return (run_scratch if is_marked(run_scratch) else case_scratch) / "inputs"


def check_free(directory: Path, need: int) -> None:
    """Fail before writing an input that cannot fit (rather than leave a partial one behind)."""
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    if need > free:
        raise OSError(f"{directory} has {free / 1e9:.2f} GB free; this input needs up to {need / 1e9:.2f} GB")


__all__ = ["check_free", "inputs_dir"]
