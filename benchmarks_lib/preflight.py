"""Checks made before a run creates anything: paths it can write, space it will need, runs too big.

Everything here only reads; a failed check is a one-line :class:`SpecError` (exit 2) and
nothing has been written.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .specs import SpecError, format_bytes

#: the disk a profile is planned to need at most; a run asking for more (or for more than the
#: machine's free memory) needs ``--yes`` (``assume_yes``, or IOBENCH_YES=1)
DISK_BUDGET = {"quick": 4 * 10**9, "standard": 40 * 10**9, "seed": 400 * 10**9}
#: what the records of a run need on the results filesystem at least
RESULTS_RESERVE = 64 * 2**20


def _existing_ancestor(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def check_writable_dir(path: Path, what: str) -> Path:
    """Refuse, before anything is created, a directory we could not create or write into."""
    path = Path(path).absolute()
    name_max = os.pathconf("/", "PC_NAME_MAX")
    if any(len(os.fsencode(part)) > name_max for part in path.parts):
        raise SpecError(f"{what} {str(path)[:80]!r}... has a name longer than {name_max} bytes")
    if len(os.fsencode(str(path))) > os.pathconf("/", "PC_PATH_MAX") - 256:
        raise SpecError(f"{what} {str(path)[:80]!r}... is too long a path")
    base = _existing_ancestor(path)
    if base == path and not path.is_dir():
        raise SpecError(f"{what} {str(path)!r} is a file, not a directory")
    if not base.is_dir():
        raise SpecError(f"{what} {str(path)!r} is below {str(base)!r}, which is a file, not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise SpecError(f"{what} {str(path)!r} is not writable ({str(base)!r} is read-only for this user)")
    return base


def _free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _available_memory() -> int:
    with contextlib.suppress(OSError, ValueError, StopIteration):
        lines = Path("/proc/meminfo").read_text().splitlines()
        return int(next(line for line in lines if line.startswith("MemAvailable:")).split()[1]) * 1024
    return 0


def check_space(need: int, profile: str, scratch_base: Path, results_base: Path, assume_yes: bool) -> None:
    free = _free_bytes(scratch_base)
    if need * 1.2 > free:
        raise SpecError(f"scratch filesystem of {str(scratch_base)!r} has {format_bytes(free)} free; "
                        f"this run needs about {format_bytes(need * 1.2)}")
    free_results = _free_bytes(results_base)
    if free_results < RESULTS_RESERVE:
        raise SpecError(f"results filesystem of {str(results_base)!r} has {format_bytes(free_results)} free; "
                        f"records need at least {format_bytes(RESULTS_RESERVE)}")
    memory = _available_memory()
    if not assume_yes and (need > DISK_BUDGET[profile] or (memory and need > memory)):
        raise SpecError(f"this run writes up to {format_bytes(need)} at once, more than the {profile} profile's "
                        f"budget of {format_bytes(DISK_BUDGET[profile])} or this machine's "
                        f"{format_bytes(memory)} of free memory; pass --yes (or IOBENCH_YES=1) to go ahead")
