"""Checks made before a run creates anything: paths it can write, space it will need, runs too big, too long
or starting too many processes.

Everything here only reads; a failed check is a one-line :class:`SpecError` (exit 2) and
nothing has been written.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks_lib.base.specs import PROFILES, SpecError, format_bytes
from benchmarks_lib.base.untrusted import PSEUDO_FILESYSTEMS, mount_type

if TYPE_CHECKING:
    from benchmarks_lib.suites import Case, Suite

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
    if (kind := mount_type(base)) in PSEUDO_FILESYSTEMS:  # /sys says root may write; it takes no directory
        raise SpecError(f"{what} {str(path)!r} lies on {kind}, the kernel's filesystem; give a directory on a disk")
    if not os.access(base, os.W_OK | os.X_OK):
        raise SpecError(f"{what} {str(path)!r} is not writable ({str(base)!r} is read-only for this user)")
    return base


def _free_bytes(path: Path) -> int | None:
    """Bytes free for this user; None where the filesystem reports no size at all (ramfs: it holds what memory
    does, which the memory check below bounds)."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize if st.f_blocks else None


def _available_memory() -> int:
    with contextlib.suppress(OSError, ValueError, StopIteration):
        lines = Path("/proc/meminfo").read_text().splitlines()
        return int(next(line for line in lines if line.startswith("MemAvailable:")).split()[1]) * 1024
    return 0


def check_space(need: int, profile: str, scratch_base: Path, results_base: Path, assume_yes: bool) -> None:
    free = _free_bytes(scratch_base)
    if free is not None and need * 1.2 > free:
        raise SpecError(f"scratch filesystem of {str(scratch_base)!r} has {format_bytes(free)} free; "
                        f"this run needs about {format_bytes(need * 1.2)}")
    free_results = _free_bytes(results_base)
    if free_results is not None and free_results < RESULTS_RESERVE:
        raise SpecError(f"results filesystem of {str(results_base)!r} has {format_bytes(free_results)} free; "
                        f"records need at least {format_bytes(RESULTS_RESERVE)}")
    memory = _available_memory()
    if not assume_yes and (need > DISK_BUDGET[profile] or (memory and need > memory)):
        raise SpecError(f"this run writes up to {format_bytes(need)} at once, more than the {profile} profile's "
                        f"budget of {format_bytes(DISK_BUDGET[profile])} or this machine's "
                        f"{format_bytes(memory)} of free memory; pass --yes (or IOBENCH_YES=1) to go ahead")


#: a run estimated to take more than this many times its profile's own run, and at least LONG_RUN_S seconds,
#: needs --yes: ``--iterations 10000`` is a typo more often than a plan
TIME_FACTOR = 2
LONG_RUN_S = 600
#: worker processes per usable core a run may start at once without --yes (Dask workers on this machine)
PROCESSES_PER_CORE = 4


def format_seconds(seconds: float) -> str:
    """A duration as a person reads it: 40 s, 3.5 min, 2.1 h, 3.2 days."""
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def work_units(sizes: list[int], runs: int, reference_runs: int, reference_size: float) -> float:
    """The work of measuring cases of ``sizes`` bytes, each ``runs`` times (iterations plus warm-ups), in units of
    the reference profile's average case: each case costs a part once (its process, imports, set-up), a part per
    run (create, finalize, verify) and a part per run and byte (moving the data), a third each for the average
    case of the reference (``reference_runs`` runs of ``reference_size`` bytes). One stated time cannot tell the
    three apart; equal thirds are never more than 3 times too low, whichever part dominates."""
    per_byte = 1 / reference_size if reference_size else 0.0
    return sum(1 + runs / reference_runs + runs * size * per_byte / reference_runs for size in sizes)


def check_time(seconds: float, profile_seconds: float, profile: str, assume_yes: bool) -> None:
    """Refuse, unless ``assume_yes``, a run estimated to take more than TIME_FACTOR times its profile's own run
    and at least LONG_RUN_S."""
    if assume_yes or seconds <= max(TIME_FACTOR * profile_seconds, LONG_RUN_S):
        return
    raise SpecError(f"this run would take about {format_seconds(seconds)}, more than {TIME_FACTOR} times the "
                    f"{profile} profile's own run (about {format_seconds(profile_seconds)} on 2 cores); lower "
                    "--iterations/--warmups or the sizes, or pass --yes (or IOBENCH_YES=1) to go ahead")


def check_processes(processes: int, what: str, assume_yes: bool) -> None:
    """Refuse, unless ``assume_yes``, starting more than PROCESSES_PER_CORE worker processes per usable core."""
    from benchmarks_lib.base.environment import usable_cores

    cores = usable_cores()
    if not assume_yes and processes > PROCESSES_PER_CORE * cores:
        raise SpecError(f"{what} starts {processes} worker processes at once on {cores} usable cores, more than "
                        f"{PROCESSES_PER_CORE} per core; give fewer, or pass --yes (or IOBENCH_YES=1) to go ahead")


def estimate_seconds(suite: Suite, profile: str, cases: list[Case], runs: int,
                     defaults: Callable[[str], tuple[int, list[Case]]]) -> tuple[float, float] | None:
    """(seconds ``cases`` measured ``runs`` times each should take, seconds the profile's own run takes), scaled
    by :func:`work_units` from the suite's stated time for the nearest profile that states one; None when none
    does. ``defaults(profile)`` gives a profile's own runs per case and cases."""
    stated = sorted((p for p in suite.time_budget_s if p in PROFILES),
                    key=lambda p: abs(PROFILES.index(p) - PROFILES.index(profile)))
    if not stated:
        return None

    def sizes(of: list[Case]) -> list[int]:
        work = suite.work_bytes or (lambda c: suite.scratch_bytes([c]))
        return [work(c) for c in of if c.suite == suite.name]

    reference = stated[0]
    reference_runs, reference_cases = defaults(reference)
    reference_sizes = sizes(reference_cases)
    mean = sum(reference_sizes) / len(reference_sizes) if reference_sizes else 0.0

    def work(of: list[Case], runs: int) -> float:
        return work_units(sizes(of), runs, reference_runs, mean)

    per_unit = suite.time_budget_s[reference] / (work(reference_cases, reference_runs) or 1)
    if reference == profile:
        return per_unit * work(cases, runs), suite.time_budget_s[profile]
    own_runs, own_cases = defaults(profile)
    return per_unit * work(cases, runs), per_unit * work(own_cases, own_runs)
