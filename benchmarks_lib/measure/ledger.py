"""Where a case's seconds go: the worker's phases, its timed regions, and the process it runs in.

Every second of a case falls in one phase (``PHASES``); the runner adds what only it sees (process start,
teardown after the worker's last row) and stores them per case as the ``t_*_s`` columns
(:data:`CASE_COLUMNS`):

- ``start``: the runner asks for a worker until the worker's code runs (interpreter start, harness imports);
  0 for a case run in a worker that an earlier case of the same backend started;
- ``import``: the case's library imported (its adapter's declared modules), before ``run_case``;
- ``prep``: test data generated or loaded (``BlockSource.prepare``);
- ``evict``: page-cache eviction and its proof (``evict_page_cache``);
- ``timed``: inside the outermost timed regions (``measure.timed``/``measure``), exactly their measured
  intervals: the measurement itself (the sampler thread's start and stop around it are ``other``);
- ``verify``: read-back verification (``verification.verify``);
- ``teardown``: outputs removed and flushed, rows written, the worker's exit, the case's scratch removed;
- ``other``: the rest of ``run_case`` (adapter set-up, disk usage, untimed warm reads, hashing of results).

A phase entered while another is running (a timed region inside a verification, say) belongs to the one
already running: the phases never overlap, so they add up to the case's wall time (``t_case_s``).

The timed regions' intervals are kept on ``CLOCK_MONOTONIC`` (``time.perf_counter_ns`` on Linux), which all
processes share, so the runner can check that none of its own work ran during one (``timed_intervals``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

#: the phases inside a worker, in case order (``other`` is what is left of ``run_case``)
PHASES = ("import", "prep", "evict", "timed", "verify", "teardown")
#: per-case columns (seconds), every row of a case gets them: start + import + prep + evict + timed + verify
#: + other + teardown = case
CASE_COLUMNS = ("t_start_s", "t_import_s", "t_prep_s", "t_evict_s", "t_timed_s", "t_verify_s", "t_other_s",
                "t_teardown_s", "t_case_s")


class Ledger:
    """The seconds of each phase in this process, and the intervals (ns, CLOCK_MONOTONIC) of its timed regions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.ns = dict.fromkeys(PHASES, 0)
            self.intervals: list[tuple[int, int]] = []
            self._active: str | None = None
            self._depth = 0
            self._t0 = 0

    def enter(self, name: str) -> None:
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._active, self._t0 = name, time.perf_counter_ns()

    def leave(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._active is not None:
                self.ns[self._active] += time.perf_counter_ns() - self._t0
                self._active = None

    def add_timed(self, t0_ns: int, t1_ns: int) -> None:
        """A timed region's measured interval, counted to ``timed`` unless another phase is running (then it is
        that phase's time) or it lies inside a region already counted."""
        with self._lock:
            if self._depth:
                return
            while self.intervals and t0_ns <= self.intervals[-1][0] and self.intervals[-1][1] <= t1_ns:
                inner = self.intervals.pop()  # an inner region ends first: the outer one replaces it
                self.ns["timed"] -= inner[1] - inner[0]
            if not self.intervals or not (self.intervals[-1][0] <= t0_ns and t1_ns <= self.intervals[-1][1]):
                self.intervals.append((t0_ns, t1_ns))
                self.ns["timed"] += t1_ns - t0_ns

    def seconds(self) -> dict[str, float]:
        with self._lock:
            return {name: ns / 1e9 for name, ns in self.ns.items()}


LEDGER = Ledger()


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Count the block's wall time to phase ``name`` (unless another phase is running); also a decorator."""
    if name not in PHASES:
        raise ValueError(f"unknown phase {name!r}; phases: {', '.join(PHASES)}")
    LEDGER.enter(name)
    try:
        yield
    finally:
        LEDGER.leave()


def case_columns(worker: dict | None, t_begin_ns: int, t_end_ns: int) -> dict[str, float | None]:
    """The ``t_*_s`` columns of a case from the runner's begin and end (ns, CLOCK_MONOTONIC) and the worker's
    report (``worker.Accounting``): when its case began (job read) and ended (rows made), its phases."""
    total = (t_end_ns - t_begin_ns) / 1e9
    if not worker:  # the worker reported nothing (a crash): the case's wall time only
        return {**dict.fromkeys(CASE_COLUMNS[:-1]), "t_case_s": total}
    phases = worker["phases"]
    body = (worker["body_end_ns"] - worker["case_ns"]) / 1e9
    named = sum(phases[p] for p in PHASES)
    return {"t_start_s": (worker["case_ns"] - t_begin_ns) / 1e9, "t_import_s": phases["import"],
            "t_prep_s": phases["prep"], "t_evict_s": phases["evict"], "t_timed_s": phases["timed"],
            "t_verify_s": phases["verify"], "t_other_s": body - named,
            "t_teardown_s": phases["teardown"] + (t_end_ns - worker["body_end_ns"]) / 1e9, "t_case_s": total}


_STATUS = "/proc/self/status"


def reset_peak_rss() -> None:
    """Start this process's peak RSS (VmHWM) again from its current RSS (Linux: ``clear_refs`` 5)."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss() -> int | None:
    """This process's peak RSS in bytes since it started or since :func:`reset_peak_rss` (None off Linux)."""
    with contextlib.suppress(OSError), open(_STATUS) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None
