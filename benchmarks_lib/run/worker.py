"""Runs cases in a worker process: one (``measure.fresh.start("benchmarks_lib.run.worker:main", JOB.json)``), or
one after another (``benchmarks_lib.run.worker:main`` without a job: job paths on stdin, see :func:`main`).

The job file names the case, the context and where to write the rows. Rows are written
atomically to the records directory, so the parent sees all of a case or none of it. A
Python exception becomes an error row here; a hard crash (segfault, kill) is turned into an
error row by the parent from this process's exit status and stderr.

Each case runs under a memory limit set from its plan (:func:`memory_limit`), so that a library that
over-allocates (a lying file's codec, say) fails the case with a ``MemoryError`` that names the limit, not the
machine. It is ``RLIMIT_DATA`` (the heap and private writable mappings: what the process can fill), not
``RLIMIT_AS``: the address space that glibc's per-thread arenas and tensorstore reserve without using is several
times the memory they use (a writers case with zarr, tensorstore, h5py and pyvista imported: 1.45 GB of address
space, 0.28 GB of data, 0.19 GB resident on 2 cores), and grows with the cores.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks_lib.adapters.user_files import hide_directories
from benchmarks_lib.base.environment import machine_memory
from benchmarks_lib.base.redact import redact_row
from benchmarks_lib.base.specs import format_bytes
from benchmarks_lib.measure.allocator import settle_heap
from benchmarks_lib.measure.ledger import LEDGER, peak_rss, phase, reset_peak_rss
from benchmarks_lib.records.store import SCHEMA_VERSION, write_atomic
from benchmarks_lib.suites import Case, CaseContext, Rounds, get_suite

#: a case's worker may hold (``RLIMIT_DATA``) half this machine's memory, at least MEMORY_FLOOR, plus MEMORY_FACTOR
#: times the bytes its case plans to hold (its suite's ``scratch_bytes``, or ``work_bytes`` where larger); the
#: processes it starts (servers, Dask workers) inherit it
MEMORY_FLOOR, MEMORY_FACTOR = 4 << 30, 4
MEMORY_POLICY = (f"RLIMIT_DATA: half the machine's memory (at least {MEMORY_FLOOR >> 30} GiB) plus {MEMORY_FACTOR} "
                 "times the bytes the case plans to hold")


def memory_limit(case: Case) -> int:
    """The bytes ``case``'s worker may hold (see :data:`MEMORY_POLICY`)."""
    suite = get_suite(case.suite)
    planned = max(suite.scratch_bytes([case]), suite.work_bytes(case) if suite.work_bytes else 0)
    return max(machine_memory() // 2, MEMORY_FLOOR) + MEMORY_FACTOR * planned


def case_memory(case: Case) -> tuple[int, str]:
    """The bytes ``case``'s worker may hold (:func:`memory_limit`, at most the hard ``RLIMIT_DATA`` this process
    was started with), and what an error reason says of it."""
    planned, (_, hard) = memory_limit(case), resource.getrlimit(resource.RLIMIT_DATA)
    limit = planned if hard == resource.RLIM_INFINITY else min(planned, hard)
    lower = ", lowered to the hard limit it was started with" if limit < planned else ""
    return limit, f"out of memory: the case's worker may hold {format_bytes(limit)} ({MEMORY_POLICY}{lower})"


def finish_rows(rows: list[dict], case: Case, run_columns: dict) -> list[dict]:
    out = []
    for row in rows:
        full = {"schema_version": SCHEMA_VERSION, **run_columns, "suite": case.suite, "case_id": case.case_id,
                "backend": case.backend, "iteration": 0, "status": "ok"}
        for key, value in case.params.items():
            if isinstance(value, str | int | float | bool) or value is None:
                full.setdefault(key, value)
        full.update(row)
        # no credential in a record, and no directory of a person's file:, whatever a library put in its message
        out.append(hide_directories(redact_row(full), case.params))
    return out


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as the Python values they hold (JSON has no numpy types)."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    return str(value)


#: the most characters of an error's reason a record keeps
REASON_CHARS = 4000


def shorten_reason(reason: str, limit: int = REASON_CHARS) -> str:
    """At most ``limit`` characters of a reason: its first line (the exception and its message, or how the worker
    ended; at most a quarter of ``limit``) and the end of the rest (where it was raised, the worker's last words)."""
    if len(reason) <= limit:
        return reason
    first, _, rest = reason.partition("\n")
    head = first[:limit // 4]
    return f"{head}\n[...]\n{rest[-(limit - len(head) - 7):]}"  # 7: the marker


def exception_reason(exc: BaseException) -> str:
    """An exception as a reason: ``Type: message`` first, then its traceback, the message not repeated at its end
    (a long message, an S3 error's XML body say, would otherwise fill the end that ``shorten_reason`` keeps)."""
    parts = traceback.format_exception(exc)
    frames = parts[:len(parts) - len(traceback.format_exception_only(exc))]
    return f"{type(exc).__name__}: {exc}\n{''.join(frames)}"


def error_row(case: Case, reason: str, operation: str = "case") -> dict:
    """A case's error row; a long reason keeps its first line whole (``shorten_reason``)."""
    return {"operation": operation, "status": "error", "reason": shorten_reason(reason)}


def _import_library(backend: str) -> None:
    """Import the case's library (its adapter's declared modules) before the case: the ``import`` phase."""
    from benchmarks_lib.adapters import KINDS, adapter_class
    from benchmarks_lib.base.specs import SpecError

    for kind in KINDS:
        try:
            cls = adapter_class(backend, kind)
        except (SpecError, ImportError):
            continue
        for module in (cls.module, *cls.extra_modules):
            with contextlib.suppress(Exception):  # a missing library is the case's own skip row
                importlib.import_module(module)
        return


#: the cases this worker holds open across rounds (``rounds`` jobs): case id -> its generator (``suites.Rounds``)
_OPEN: dict[str, Rounds] = {}
#: what a rounds job asks of its case: set it up (and hand over the set-up's rows), measure one round, end it
ROUND_ACTIONS = ("open", "step", "close")


def _round_rows(job: dict, case: Case, ctx: CaseContext) -> tuple[list[dict], bool]:
    """One rounds job (``job["action"]``): the rows it made and whether the case has ended (nothing more to measure).
    A step's rows are numbered by the round (``iteration`` and ``round``) and carry the case's place in the round's
    shuffled order (``round_position``)."""
    action = job["action"]
    if action == "close":
        if (rounds := _OPEN.pop(case.case_id, None)) is not None:
            rounds.close()  # its ``finally`` removes what it made
        return [], True
    if action == "open":
        with phase("import"):
            _import_library(case.backend)
        _OPEN[case.case_id] = get_suite(case.suite).rounds(case, ctx)
    try:
        rows = next(_OPEN[case.case_id])
    except StopIteration as end:  # nothing (more) to measure: a skip, say
        _OPEN.pop(case.case_id, None)
        return list(end.value or []), True
    except BaseException:
        _OPEN.pop(case.case_id, None)
        raise
    if action == "step":
        rows = [{**row, "iteration": job["round"], "round": job["round"], "round_position": job["position"]}
                for row in rows]
    return rows, False


def run_job(job_path: str) -> int:
    """One case, or one rounds job of a case (the job names an ``action``: :func:`_round_rows`): its rows (and its
    accounting: ``measure.ledger``) written atomically to the job's rows file."""
    case_ns = time.perf_counter_ns()
    job = json.loads(Path(job_path).read_text())
    case = Case.from_json(job["case"])
    ctx = CaseContext(scratch=Path(job["scratch"]), iterations=job["iterations"], warmups=job["warmups"],
                      profile=job["profile"], run_dir=Path(job["run_dir"]))
    LEDGER.reset()
    action = job.get("action")
    if action in (None, "open"):  # the same allocator state at every case's start, fresh worker or reused; not
        settle_heap()  # before a round's step: its set-up and warm-ups brought the heap to its steady state
    reset_peak_rss()
    status = 0
    memory_words = "out of memory"
    done = True
    try:
        limit, memory_words = case_memory(case)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, resource.getrlimit(resource.RLIMIT_DATA)[1]))
        if action in ROUND_ACTIONS:
            rows, done = _round_rows(job, case, ctx)
        else:
            with phase("import"):
                _import_library(case.backend)
            rows = get_suite(case.suite).run_case(case, ctx)
            if not rows:
                rows = [{"operation": "case", "status": "skip", "reason": "the case produced no measurement"}]
    except Exception as exc:
        sys.stderr.write(traceback.format_exc())
        reason = exception_reason(exc)
        if isinstance(exc, MemoryError):
            reason = f"{memory_words}; {reason}"
        rows = [error_row(case, reason)]
        status = 3
    accounting = {"case_ns": case_ns, "body_end_ns": time.perf_counter_ns(), "phases": LEDGER.seconds(),
                  "intervals": LEDGER.intervals, "worker_peak_rss_bytes": peak_rss(), "pid": os.getpid()}
    # JSON, atomically: the runner (which has pandas; this process never loads it, so its memory and
    # start-up are the case's own) turns the rows into the case's parquet record
    text = json.dumps({"rows": finish_rows(rows, case, job["run_columns"]), "accounting": accounting, "done": done},
                      default=_plain)
    write_atomic(Path(job["rows"]), lambda f: f.write(text.encode()))
    return status


def main(job_path: str | None = None) -> int:
    """One case (``job_path``), or, without one, a worker serving cases: a job file's path a line on stdin, its
    status a line back on stdout (the real stdout goes to stderr), until stdin closes."""
    if job_path is not None:
        return run_job(job_path)
    sys.stdout.flush()
    channel = os.dup(1)
    os.dup2(2, 1)  # what a library prints cannot reach the channel
    for line in sys.stdin:
        status = run_job(line.strip())
        os.write(channel, f"{status}\n".encode())
    return 0
