"""The machine's load around a case: was anything else running while it was measured?

Read from ``/proc`` before and after each case by the runner (the process that starts the case's
worker, not the worker itself), so that every row of the case carries:

- ``loadavg_1m_before`` / ``loadavg_1m_after``: the kernel's 1-minute load average (``/proc/loadavg``):
  runnable tasks, and on Linux also tasks waiting on the disk, damped over a minute; *before* still holds
  a decaying share of the previous case, *after* holds this case's own work;
- ``cpu_steal_pct``: the share of CPU time the hypervisor gave to other guests during the case (``steal``
  in ``/proc/stat``);
- ``other_cpu_pct``: the share of the machine's CPU (all its cores) that processes other than the case
  used during it: busy time in ``/proc/stat`` minus the CPU of the case's processes (the runner's reaped
  children, ``RUSAGE_CHILDREN``, plus a reused worker that is still alive, from its ``/proc/<pid>/stat``),
  over the wall time;
- ``usable_cores``: the cores this process may run on.

``under_load`` says why a case counts as measured under load (empty when it does not). Not Linux: the
columns are left empty and nothing is flagged.
"""

from __future__ import annotations

import math
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks_lib.base.environment import usable_cores

#: a case started with a 1-minute load average above this many times the usable cores was measured under load
LOAD_LIMIT_FACTOR = 1.0
#: CPU steal above this % during a case: the hypervisor gave this machine's CPU to other guests
STEAL_LIMIT_PCT = 5.0
#: other processes used more than this % of the machine's CPU during the case
OTHER_CPU_LIMIT_PCT = 25.0

LOAD_COLUMNS = ("loadavg_1m_before", "loadavg_1m_after", "cpu_steal_pct", "other_cpu_pct", "usable_cores")


@dataclass(frozen=True)
class LoadSnapshot:
    """One reading of the machine's load: ``None`` fields where ``/proc`` is not there."""

    wall_s: float
    loadavg_1m: float | None
    busy_s: float | None  # every core's non-idle time (user, nice, system, irq, softirq, steal)
    steal_s: float | None
    total_s: float | None  # every core's time, idle and iowait included
    cpus: int | None  # the cores /proc/stat counts
    children_cpu_s: float  # user + system time of this process's reaped children


def _clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def read_loadavg(path: Path = Path("/proc/loadavg")) -> float | None:
    """The 1-minute load average, or None where it cannot be read."""
    try:
        return float(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_cpu_times(path: Path = Path("/proc/stat")) -> tuple[float, float, float, int] | None:
    """``(busy_s, steal_s, total_s, cpus)`` summed over every core from ``/proc/stat``, or None."""
    try:
        lines = path.read_text().splitlines()
        fields = [int(v) for v in lines[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    fields += [0] * (8 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]  # guest time is already in user
    tick = _clock_ticks()
    cpus = sum(1 for line in lines[1:] if line.startswith("cpu") and line[3:4].isdigit())
    busy = user + nice + system + irq + softirq + steal
    return busy / tick, steal / tick, (busy + idle + iowait) / tick, max(cpus, 1)


def process_cpu_s(pid: int) -> float:
    """CPU seconds of a live process and its reaped children (``/proc/<pid>/stat``), 0 when it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(v) for v in fields[11:15]) / _clock_ticks()  # utime, stime, cutime, cstime
    except (OSError, ValueError, IndexError):
        return 0.0


def snapshot(pids: tuple[int, ...] = ()) -> LoadSnapshot:
    """The load now (cheap: small ``/proc`` reads and one ``getrusage``); ``pids``: live processes of ours
    (a reused worker) whose CPU is the case's own, not other load."""
    own = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = read_cpu_times()
    busy, steal, total, cpus = cpu if cpu is not None else (None, None, None, None)
    mine = own.ru_utime + own.ru_stime + sum(process_cpu_s(pid) for pid in pids)
    return LoadSnapshot(time.monotonic(), read_loadavg(), busy, steal, total, cpus, mine)


def case_columns(before: LoadSnapshot, after: LoadSnapshot | None = None) -> dict[str, float | int | None]:
    """The load columns of a case measured between ``before`` and ``after`` (now, by default)."""
    after = snapshot() if after is None else after
    steal = other = None
    if None not in (before.total_s, after.total_s, before.busy_s, after.busy_s, before.steal_s, after.steal_s):
        total = after.total_s - before.total_s
        if total > 0:
            steal = 100 * (after.steal_s - before.steal_s) / total
        wall = after.wall_s - before.wall_s
        if wall > 0 and after.cpus:
            own = after.children_cpu_s - before.children_cpu_s
            # at most all of the machine: over a step of a few clock ticks, tick rounding can say more
            other = min(100.0, max(0.0, 100 * ((after.busy_s - before.busy_s) - own) / (wall * after.cpus)))
    return {"loadavg_1m_before": before.loadavg_1m, "loadavg_1m_after": after.loadavg_1m, "cpu_steal_pct": steal,
            "other_cpu_pct": other, "usable_cores": usable_cores()}


def _number(value: object) -> float | None:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(out) else out


def under_load(loadavg_before: object, cores: object, steal_pct: object, other_pct: object = None) -> str:
    """Why a case counts as measured under load, in a few words (empty when it does not, or nothing was read)."""
    why = []
    load, usable, steal, other = (_number(v) for v in (loadavg_before, cores, steal_pct, other_pct))
    if load is not None and usable and load > LOAD_LIMIT_FACTOR * usable:
        why.append(f"1-min load {load:.2f} at the start, above {LOAD_LIMIT_FACTOR * usable:g} usable cores")
    if steal is not None and steal > STEAL_LIMIT_PCT:
        why.append(f"CPU steal {steal:.1f}% (above {STEAL_LIMIT_PCT:g}%)")
    if other is not None and other > OTHER_CPU_LIMIT_PCT:
        why.append(f"other processes used {other:.0f}% of the CPU (above {OTHER_CPU_LIMIT_PCT:g}%)")
    return "; ".join(why)
