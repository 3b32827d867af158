"""How a run's cases are executed: one case in a worker process (:func:`run_one_case`), and the one interface
the runner drives (:class:`Executor`), which yields each case as it finishes. :class:`SerialExecutor` runs them
here, one after another (the default: a benchmark wants a quiet machine); the Dask executor
(:mod:`benchmarks_lib.run.cluster`) runs the same :func:`run_one_case` as a task on a cluster's workers. An executor
never records anything: the runner does, from what it yields.
"""

from __future__ import annotations

import json
import os
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks_lib.base.scratch import create_marked_dir, remove_tree
from benchmarks_lib.measure import load
from benchmarks_lib.measure.ledger import case_columns, peak_rss, reset_peak_rss
from benchmarks_lib.run.environments import launch_of
from benchmarks_lib.run.pool import CaseWorkers, Launch, Timeline, run_fresh
from benchmarks_lib.suites import Case, get_suite
from benchmarks_lib.suites.kit.verification import HARNESS_PYTHON


@dataclass(frozen=True)
class CaseStarted:
    """A case about to run here (a serial executor says so; a cluster's cases start out of sight)."""

    case: Case


@dataclass(frozen=True)
class CaseFinished:
    """A case that ran: the rows its worker wrote (None when it wrote none: crashed, killed, timed out, its host
    lost), its exit status, the tail of its stderr, its wall seconds and the columns every row of it gets."""

    case: Case
    rows: list[dict] | None
    rc: int
    stderr: str
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


class Executor(ABC):
    """Runs cases, each in a worker process with its own scratch, and yields each as it finishes (any order)."""

    @abstractmethod
    def run(self, cases: list[Case], job_base: dict, timeout_s: Mapping[str, float]) -> Iterator[
            CaseStarted | CaseFinished]:
        """Run ``cases`` (``job_base``: what every case's job holds; ``timeout_s``: seconds per case id). Close the
        iterator to stop: what it started is stopped and removed."""


def worker_environ(case: Case) -> dict[str, str] | None:
    """A case's process environment: the user's for a case of the user's own S3 endpoint (None: inherited); for
    any other, the user's without any AWS variable, plus credentials of its own for an S3 server it may start."""
    if get_suite(case.suite).user_s3(case):
        return None
    from benchmarks_lib.servers.versitygw import case_environ as bundled_environ

    return bundled_environ()


def worker_launch(case: Case) -> Launch:
    """How a case's worker starts: its environment variables (:func:`worker_environ`) and, for a case measured at a
    library version of its own (``--versions``), that environment's interpreter (``environments.launch_of``)."""
    python, path = launch_of(case) or (None, None)
    env = worker_environ(case)
    if python is not None:  # no second library there: its stores are read back by one of this interpreter's
        env = {**(os.environ if env is None else env), HARNESS_PYTHON: sys.executable}
    return Launch(env, python, path)


def run_one_case(case: Case, job_base: dict, scratch: Path, timeout_s: float, workers: CaseWorkers | None = None,
                 next_case: Case | None = None) -> tuple[list[dict] | None, int, str]:
    """One case in a worker process (a fresh one, or ``workers``' current one when the case may reuse it), its
    scratch a marked directory inside ``scratch`` (removed after): the rows it wrote (None when it wrote none),
    each with the case's accounting columns (``measure.ledger``), its exit status and the tail of its stderr."""
    t_begin = time.perf_counter_ns()
    reset_peak_rss()
    rows_path = scratch / "rows.json"
    remove_tree(rows_path, scratch)  # nothing left from a case that was interrupted
    case_scratch = create_marked_dir(scratch / "case")
    job = {**job_base, "case": case.to_json(), "scratch": str(case_scratch), "rows": str(rows_path)}
    try:
        if workers is None:
            rc, stderr = run_fresh(worker_launch(case), job, scratch / "job.json", timeout_s)
        else:
            rc, stderr = workers.run(case, job, scratch / "job.json", timeout_s, next_case)
    finally:
        remove_tree(case_scratch, scratch)
        if workers is not None:
            workers.after_case(next_case)
    rows, accounting = _worker_rows(rows_path)
    if workers is not None:
        workers.note(case, accounting)
    if rows is not None:
        columns = {**case_columns(accounting, t_begin, time.perf_counter_ns()), "runner_peak_rss_bytes": peak_rss(),
                   "worker_peak_rss_bytes": (accounting or {}).get("worker_peak_rss_bytes"),
                   "worker_reused": bool(workers and workers.reused)}
        rows = [{**row, **columns} for row in rows]
    return rows, rc, stderr


def _worker_rows(path: Path) -> tuple[list[dict] | None, dict | None]:
    """The rows a worker wrote and its accounting (and the file removed), or (None, None) when it wrote none."""
    try:
        payload = json.loads(path.read_text())
    except FileNotFoundError:
        return None, None
    remove_tree(path, path.parent)
    return payload["rows"], payload.get("accounting")


class SerialExecutor(Executor):
    """The cases here, one after another, in the run's ``scratch`` (the workers of a suite that declares
    ``reuse_worker`` reused across one backend's cases: :class:`benchmarks_lib.run.pool.CaseWorkers`), each with
    the machine's load around it (``measure.load``); ``timeline`` keeps what ran when."""

    def __init__(self, scratch: Path, timeline: Timeline) -> None:
        self.scratch, self.timeline = scratch, timeline

    def run(self, cases: list[Case], job_base: dict, timeout_s: Mapping[str, float]) -> Iterator[
            CaseStarted | CaseFinished]:
        todo = CaseWorkers.order(cases)
        workers = CaseWorkers(self.scratch, self.timeline, worker_launch)
        try:
            for i, case in enumerate(todo):
                yield CaseStarted(case)
                t0, before = time.perf_counter(), load.snapshot(workers.pids())  # the machine's load around it
                rows, rc, stderr = run_one_case(case, job_base, self.scratch, timeout_s[case.case_id], workers,
                                                todo[i + 1] if i + 1 < len(todo) else None)
                extra = load.case_columns(before, load.snapshot(workers.pids()))
                with self.timeline.runner_work("record"):  # the runner records the case while this waits
                    yield CaseFinished(case, rows, rc, stderr, time.perf_counter() - t0, extra)
        except BaseException:  # interrupted, or closed early: the current case is not waited for
            workers.abort()
            raise
        finally:
            workers.close()


__all__ = ["CaseFinished", "CaseStarted", "Executor", "SerialExecutor", "run_one_case", "worker_environ",
           "worker_launch"]
