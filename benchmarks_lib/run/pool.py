"""The runner's worker processes: at most one at a time, reused across consecutive cases that may share it.

A worker (``benchmarks_lib.run.worker:main`` without a job) reads a job file's path a line on stdin and answers
with the case's exit status a line on its own channel (its stdout; what a library prints goes to its stderr,
kept in a file in the run's scratch). Each is spawned with the stated allocator configuration
(``measure.allocator.MALLOC_ENV``) and the case's environment (``executor.worker_launch``: its variables and,
at a version of its own, its interpreter).

Reuse: a suite that declares ``reuse_worker`` has its cases of one backend run one after another in one
worker (the runner orders them so); any other case, a case after an error (its library may be left in a
bad state), and the first case of a backend get a fresh one. The runner does nothing while a case runs
but wait for its status line, and the previous worker has exited before the next is spawned: nothing of
ours runs beside a timed region (``Timeline`` keeps the intervals that show it).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks_lib.measure import fresh
from benchmarks_lib.measure.allocator import MALLOC_ENV

#: how many characters of a failed case's stderr its error row keeps
STDERR_TAIL = 3000
#: seconds a worker may take to exit after its stdin is closed before it is killed
EXIT_TIMEOUT_S = 60


@dataclass
class Timeline:
    """What ran when (ns, CLOCK_MONOTONIC): the runner's own work between cases and each case's span (job
    sent to status received), the workers' timed regions, and the workers' lifetimes."""

    runner: list[tuple[int, int, str]] = field(default_factory=list)
    cases: list[tuple[int, int, str]] = field(default_factory=list)
    timed: list[tuple[int, int, str]] = field(default_factory=list)
    workers: list[tuple[int, int, int]] = field(default_factory=list)
    #: True while at most one worker may be alive (cases run whole); rounds keep idle workers waiting on their stdin
    #: (their CPU meanwhile is recorded: ``idle_workers_cpu_s``)
    one_worker: bool = True

    @contextlib.contextmanager
    def runner_work(self, label: str):
        t0 = time.perf_counter_ns()
        try:
            yield
        finally:
            self.runner.append((t0, time.perf_counter_ns(), label))

    def overlaps(self) -> list[str]:
        """Each timed region that shares time with the runner's own work, another case or another worker."""
        out = []
        for t0, t1, case_id in self.timed:
            for a, b, label in self.runner:
                if a < t1 and t0 < b:
                    out.append(f"{case_id}: timed region overlaps the runner's {label}")
            for a, b, other in self.cases:
                if other != case_id and a < t1 and t0 < b:
                    out.append(f"{case_id}: timed region overlaps case {other}")
            if self.one_worker:
                alive = [pid for pid, a, b in self.workers if a < t1 and t0 < b]
                if len(alive) > 1:
                    out.append(f"{case_id}: {len(alive)} workers alive during a timed region")
        return out


@dataclass(frozen=True)
class Launch:
    """How a case's worker starts: its environment variables (None: this process's), and for a case measured at a
    library version of its own (``--versions``: ``run.environments``) that environment's interpreter and the
    ``PYTHONPATH`` that holds the harness only."""

    env: dict[str, str] | None = None
    python: str | None = None
    path: str | None = None


class WorkerProcess:
    """One worker process serving cases (see the module's docstring)."""

    def __init__(self, key: tuple, launch: Launch, scratch: Path, timeline: Timeline) -> None:
        self.key = key
        self.timeline = timeline
        self.stderr_path = scratch / f"worker-{time.perf_counter_ns()}.stderr"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.started_ns = time.perf_counter_ns()
        self.proc = fresh.start("benchmarks_lib.run.worker:main", base_env=launch.env, env=MALLOC_ENV,
                                python=launch.python, path=launch.path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=self._stderr, bufsize=0)
        self.cases = 0

    def run(self, job_path: Path, timeout_s: float, tail_chars: int) -> tuple[int, str, bool]:
        """Send one job and wait for its status: (status, tail of the stderr it wrote, worker still usable)."""
        offset = os.fstat(self._stderr.fileno()).st_size
        self.cases += 1
        try:
            self.proc.stdin.write(f"{job_path}\n".encode())
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
            line = self.proc.stdout.readline() if ready else None
        except BrokenPipeError:
            line = b""
        if line is None:
            self.proc.kill()
            self.proc.wait()
            return -9, f"case timed out after {timeout_s:.0f} s\n{self._tail(offset, tail_chars)}", False
        if not line:  # it died (a crash, a kill)
            rc = self.proc.wait()
            return rc, self._tail(offset, tail_chars), False
        status = int(line)
        return status, self._tail(offset, tail_chars), status == 0

    def _tail(self, offset: int, chars: int) -> str:
        with open(self.stderr_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")[-chars:]

    def close(self) -> None:
        """Close its stdin and wait for it to exit (killed after ``EXIT_TIMEOUT_S``); remove its stderr file."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self._stderr.close()
        self.timeline.workers.append((self.proc.pid, self.started_ns, time.perf_counter_ns()))
        with contextlib.suppress(OSError):
            self.stderr_path.unlink()


def run_fresh(launch: Launch, job: dict, job_path: Path, timeout_s: float) -> tuple[int, str]:
    """One case in a fresh worker of its own, the job's path on its command line (the Dask cluster's way):
    its exit status and the tail of its stderr."""
    job_path.write_text(json.dumps(job))
    proc = fresh.start("benchmarks_lib.run.worker:main", str(job_path), base_env=launch.env, env=MALLOC_ENV,
                       python=launch.python, path=launch.path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    try:
        _, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        return -9, f"case timed out after {timeout_s:.0f} s\n{stderr[-STDERR_TAIL:]}"
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc.returncode, stderr[-STDERR_TAIL:]


def reuses_worker(case) -> bool:
    from benchmarks_lib.suites import get_suite

    return bool(getattr(get_suite(case.suite), "reuse_worker", False))


class CaseWorkers:
    """The serial runner's workers: the current one, kept for the next case when that case may reuse it."""

    def __init__(self, scratch: Path, timeline: Timeline, launch) -> None:
        self.scratch, self.timeline, self.launch = scratch, timeline, launch
        self.current: WorkerProcess | None = None
        self.usable = False
        self.reused = False

    @staticmethod
    def key(case) -> tuple | None:
        """Cases with the same key may share a worker (one backend's, in one environment); None: a fresh worker of
        its own."""
        return (case.suite, case.backend, case.params.get("environment")) if reuses_worker(case) else None

    @staticmethod
    def order(cases: list) -> list:
        """The cases in plan order, those that may share a worker brought together (after the first of their key)."""
        first: dict = {}
        for i, case in enumerate(cases):
            first.setdefault(CaseWorkers.key(case) or i, i)
        return [c for _, c in sorted(enumerate(cases), key=lambda ic: (first[CaseWorkers.key(ic[1]) or ic[0]], ic[0]))]

    @staticmethod
    def policy(suite_name: str) -> str:
        from benchmarks_lib.suites import get_suite

        if getattr(get_suite(suite_name), "reuse_worker", False):
            return ("one worker per backend, reused across that backend's cases (a fresh one after an error); "
                    "the ceiling case in a fresh one")
        return "a fresh worker per case"

    def run(self, case, job: dict, job_path: Path, timeout_s: float, next_case) -> tuple[int, str]:
        key = self.key(case)
        with self.timeline.runner_work("start worker"):
            if self.current is not None and (key is None or key != self.current.key or not self.usable):
                self.close()
            if self.current is None:
                self.current = WorkerProcess(key, self.launch(case), self.scratch, self.timeline)
            self.reused = self.current.cases > 0
            job_path.write_text(json.dumps(job))
        t0 = time.perf_counter_ns()
        rc, stderr, self.usable = self.current.run(job_path, timeout_s, STDERR_TAIL)
        self.timeline.cases.append((t0, time.perf_counter_ns(), case.case_id))
        if not self.usable:
            self.close()
        return rc, stderr

    def after_case(self, next_case) -> None:
        """Close the current worker unless ``next_case`` will reuse it (its exit is then this case's teardown)."""
        with self.timeline.runner_work("after case"):
            if self.current is not None and (next_case is None or self.key(next_case) is None
                                             or self.key(next_case) != self.current.key or not self.usable):
                self.close()

    def note(self, case, accounting: dict | None) -> None:
        for t0, t1 in (accounting or {}).get("intervals", []):
            self.timeline.timed.append((t0, t1, case.case_id))

    def pids(self) -> tuple[int, ...]:
        """The live reused worker's process id (none between workers): its CPU is the case's own, not load."""
        return (self.current.proc.pid,) if self.current is not None and self.current.proc.poll() is None else ()

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None

    def abort(self) -> None:
        """Kill the current worker (the run was interrupted: its case is not waited for)."""
        if self.current is not None:
            self.current.proc.kill()
            self.close()


#: shares of a case's wall time shown by ``timed_share_line``, after the timed share
SHOWN_PHASES = (("start", "t_start_s"), ("import", "t_import_s"), ("prep", "t_prep_s"), ("evict", "t_evict_s"),
                ("verify", "t_verify_s"), ("teardown", "t_teardown_s"), ("other", "t_other_s"))


def _numbers(df, column: str):
    """``column`` as numbers (anything else, e.g. text in a record from elsewhere, as missing); None when absent."""
    import pandas as pd

    return pd.to_numeric(df[column], errors="coerce") if column in df else None


def phase_totals(df) -> dict[str, float] | None:
    """Seconds per phase over a run's cases (one value per case) and ``case`` (their wall time); None when the
    records have no accounting (older runs, or none of it a number)."""
    per_case = df.drop_duplicates("case_id")
    case = _numbers(per_case, "t_case_s")
    if case is None or case.isna().all():
        return None
    totals = {name: float(values.sum()) for name, col in (("timed", "t_timed_s"), *SHOWN_PHASES)
              if (values := _numbers(per_case, col)) is not None}
    totals["case"] = float(case.sum())
    return totals


def peak_rss_mb(df, column: str) -> float | None:
    """The largest peak RSS (MB) of ``column`` (``runner_peak_rss_bytes``: the process that plans and records the
    cases; ``worker_peak_rss_bytes``: the workers, where the measured libraries hold the data) over a run's cases;
    None when not recorded."""
    values = _numbers(df, column)
    if values is None or values.isna().all():
        return None
    return float(values.max()) / 1e6


def timed_share_line(df) -> str | None:
    """One line: the share of the cases' wall time spent inside timed regions, then the other phases and the
    runner's peak RSS."""
    totals = phase_totals(df)
    if not totals or totals["case"] <= 0:
        return None
    suites = ", ".join(sorted(df["suite"].dropna().unique()))
    parts = ", ".join(f"{name} {totals[name]:.1f} s" for name, _ in SHOWN_PHASES if name in totals)
    runner = peak_rss_mb(df, "runner_peak_rss_bytes")
    memory = f"; the runner's peak RSS {runner:.0f} MB" if runner is not None else ""
    return (f"timed share ({suites}): {totals['timed'] / totals['case']:.0%} of {totals['case']:.1f} s in cases "
            f"inside timed regions ({totals['timed']:.1f} s); {parts}{memory}")
