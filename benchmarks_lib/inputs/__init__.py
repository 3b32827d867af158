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


def check_free(directory: Path, need: int) -> None:
    """Fail before writing an input that cannot fit (rather than leave a partial one behind)."""
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    if need > free:
        raise OSError(f"{directory} has {free / 1e9:.2f} GB free; this input needs up to {need / 1e9:.2f} GB")


__all__ = ["check_free"]
