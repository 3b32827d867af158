"""Measuring in rounds: every open case of the run measured once per round, in an order shuffled afresh each round,
until each question is answered, its cap is reached or the reader's time budget is spent.

- A case of a suite that declares ``rounds`` (``suites.Rounds``) is *opened* once in a worker (its data, its prepared
  store and its warm-ups stay there across rounds); each round then asks it for one *step* (one measured iteration
  of each of its points). A worker holds the open cases of one (suite, backend) where the suite reuses workers (one
  per case otherwise), and exits when its last case closes. The idle ones wait on their stdin, so only one case is
  measured at a time; the CPU they use anyway while another is measured is each row's ``idle_workers_cpu_s``.
- The order of a round is shuffled with a seeded generator (the seed in ``run.json``; each row records its ``round``
  and ``round_position``): a burst of host load or a drift lands on every contender alike, so the per-round ratios
  of two contenders are fair coins under any drift (``rules.decision``).
- A *question* is one of the suite's ``questions`` (an operation) in one group of equals, grouped and named as the
  ranking does (``records.questions``); its contenders are the cases measured on it (the raw baseline and the
  ceiling excepted). It is looked at after the rounds of ``rules.decision.LOOKS`` and decided by the one rule
  (``rules.decision.decide``, on every contender's time per round so far): a contender separated from the leader
  leaves the question (its case measures on only for the questions it is still in), and the question stops once a
  leader is named, every contender is within the margin, or the cap is reached; ``run.json`` keeps each decision.
  A case closes when every question it is in is decided (or it left them), at the cap (the run's ``iterations``, over
  every build that continues the question: ``run.continuation``), when the budget is spent, or, in a run without a
  budget, at the end of this build's rounds (``rules.decision.BUILD_ROUNDS`` after those it carried: a question
  still undecided there is open, for the next build); a case
  in no question (a sweep drawn as a figure) at ``UNASKED_ROUNDS``, the fewest that give its median a 95% interval.
  Below the first look (a cap under 8) the rounds are a fixed count.
- The budget: a round is started only when its expected time still fits before the deadline. Below the first look
  the deadline is ``FIRST_LOOK_GRACE`` of the budget later: a question left below its first look has measured
  nothing a reader can use, so a run a little slower than its plan (a busier machine) goes past its budget by up to
  half of it to bring its questions there, rather than leave them out; the book's later chapters get what is left.
- A worker that dies (a crash in a native library) takes its open cases with it: the case that crashed gets an error
  row and ends; the others are opened again in a fresh worker and go on in the next round.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks_lib.base.scratch import create_marked_dir, remove_tree
from benchmarks_lib.measure import load
from benchmarks_lib.measure.ledger import CASE_COLUMNS, case_columns, peak_rss
from benchmarks_lib.records.questions import countable, equals_keys, named_by, per_round, question_groups
from benchmarks_lib.rules.decision import BUILD_ROUNDS, LOOKS, MARGIN, Decision, Verdict, decide
from benchmarks_lib.run.continuation import Prior, code_fingerprint
from benchmarks_lib.run.executor import CaseFinished, CaseStarted, Executor, worker_launch
from benchmarks_lib.run.pool import STDERR_TAIL, CaseWorkers, Timeline, WorkerProcess
from benchmarks_lib.run.worker import error_row, finish_rows
from benchmarks_lib.suites import Case, Suite, ended_reason, get_suite

#: contenders that are never ranked (the uncompressed baseline, the machine's ceiling)
NOT_CONTENDERS = ("raw", "ceiling")
#: the rounds of a case that answers no question (a sweep drawn as a figure): the fewest that give its median a 95%
#: interval (``stats.median_ci``: 2 x 0.5^6 < 5%); a baseline (``NOT_CONTENDERS``) measures to the first look
UNASKED_ROUNDS = 6
#: below the first look a run may go this share of its budget past it (see the module's docstring)
FIRST_LOOK_GRACE = 0.5
#: the answer of a question the budget ended: given up below its first look, or after it (a later run goes on)
LEFT_OUT, BUDGET_SPENT = "left out", "budget spent"


def round_seed(run_id: str) -> int:
    """The seed of a run's round order: from its id, so that a run is shuffled the same way when measured again."""
    return int.from_bytes(hashlib.sha256(f"rounds:{run_id}".encode()).digest()[:4], "big")


@dataclass
class Asked:
    """A question while it is measured: one operation at one value of the suite's case keys, the cases measured on
    it, and the decision of its last look (``rules.decision``)."""

    suite: str
    operation: str
    key: dict
    cases: set[str] = field(default_factory=set)
    answer: str = "open"
    why: str = ""
    rounds: int = 0
    leader: str = ""
    #: the contenders measured at its last look (backends, layouts, thread counts)
    contenders: tuple[str, ...] = ()
    #: the cases of contenders that left the question (separated from the leader), each with the round it left at:
    #: it needs them no more
    left: dict[str, int] = field(default_factory=dict)
    decision: Decision | None = None

    @property
    def closed(self) -> bool:
        return self.answer != "open"

    def needs(self, case_id: str) -> bool:
        return not self.closed and case_id in self.cases and case_id not in self.left

    def record(self) -> dict:
        return {"suite": self.suite, "operation": self.operation, "key": self.key, "rounds": self.rounds,
                "cases": sorted(self.cases), "contenders": list(self.contenders), "answer": self.answer,
                "why": self.why, "leader": self.leader,
                "decision": self.decision.record() if self.decision is not None else None}


@dataclass(frozen=True)
class RoundDone:
    """A round has ended: its number (1-based count), its seconds, the cases still open and the questions answered."""

    rounds: int
    seconds: float
    open_cases: int
    answered: int
    questions: int
    #: what the planner left out before this round, in words
    left_out: tuple[str, ...] = ()


def _plain(value):
    """A group key's value as JSON has it (numpy scalars as numbers, a missing value as None, a whole number as an
    int: a column that is missing from some rows, as a continued build's carried rows, holds its ints as floats)."""
    if value is None or (not isinstance(value, list | tuple | dict | str) and pd.isna(value)):
        return None
    value = value.item() if hasattr(value, "item") else value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def question_rows(rows: list[dict], operations: tuple[str, ...]) -> list[dict]:
    """The rows of ``rows`` that may answer a question: measured in a round, one of ``operations``, not of a
    baseline (``NOT_CONTENDERS``)."""
    return [r for r in rows if r.get("operation") in operations and r.get("round") is not None
            and r.get("backend") not in NOT_CONTENDERS]


def suite_questions(suite: Suite, rows: pd.DataFrame) -> Iterator[tuple[dict, pd.DataFrame]]:
    """The questions ``rows`` of ``suite`` answer (their key, with its ``operation``, and their rows, each row's
    contender in ``_entry``): the suite's own ``question_groups``, else each of its ``questions`` operations in each
    group of equals (``question_keys`` or the ranking's, less ``contenders``), named by backend and ``contenders``."""
    if suite.question_groups is not None:
        yield from suite.question_groups(rows)
        return
    for operation, part in rows.groupby("operation", sort=True):
        keys = [k for k in (suite.question_keys if suite.question_keys is not None else equals_keys(part))
                if k in part and k not in suite.contenders]
        for key, group in question_groups(part, keys, named_by(suite.contenders)):
            yield {"operation": operation, **key}, group


class RoundsExecutor(Executor):
    """The cases of suites that measure in rounds, interleaved over the whole run (see the module's docstring);
    ``iterations`` in the job is the cap of rounds, ``budget_s`` the seconds the rounds may take (None: no limit)."""

    def __init__(self, scratch: Path, timeline: Timeline, seed: int, budget_s: float | None = None,
                 partial: Path | None = None, looks: tuple[int, ...] = LOOKS, margin: float = MARGIN,
                 prior: Prior | None = None) -> None:
        self.scratch, self.timeline, self.seed, self.budget_s = scratch, timeline, seed, budget_s
        #: the earlier build this run continues (``run.continuation``): its rounds come first
        self.prior = prior
        #: where each open case's rows are appended as they come (a JSON line per row; the runner removes a case's
        #: file once its record is written), so that a killed run loses no measured round
        self.partial = partial
        self.looks, self.margin = looks, margin
        self.questions: dict[tuple, Asked] = {}
        self.cap = LOOKS[-1]
        #: each open case's seconds in each round so far (its step and the runner's work around it)
        self._steps: dict[str, list[float]] = {}
        #: what the planner left out, in words (the runner prints them)
        self.left_out: list[str] = []
        #: the cases of a baseline (``NOT_CONTENDERS``): measured to the first look, in a question or not
        self._baselines: set[str] = set()
        self.rounds_done = 0
        self.stopped = ""
        #: seconds from the start of :meth:`run` to its first round (the cases opened), and each round's seconds:
        #: what the next build plans its share by (``book.plan.prior_need``)
        self.opened_s = 0.0
        self.rounds_s: list[float] = []

    # -- workers ---------------------------------------------------------------------------------------------------
    def _worker(self, case: Case) -> WorkerProcess:
        key = CaseWorkers.key(case) or (case.case_id,)
        worker = self._workers.get(key)
        if worker is None or worker.proc.poll() is not None:
            with self.timeline.runner_work("start worker"):
                worker = self._workers[key] = WorkerProcess(key, worker_launch(case), self.scratch, self.timeline)
        return worker

    def _close_worker(self, key: tuple | None, kill: bool = False) -> None:
        worker = self._workers.pop(key, None) if key is not None else None
        if worker is not None:
            if kill:
                worker.proc.kill()
            worker.close()

    def _drop_worker(self, case: Case) -> None:
        """Kill ``case``'s worker; its other open cases are opened again (in a fresh worker) at their next step."""
        key = CaseWorkers.key(case) or (case.case_id,)
        self._close_worker(key, kill=True)
        for state in self._state.values():
            if state["worker"] == key:
                state["opened"] = False

    def _job(self, case: Case, action: str, job_base: dict, timeout_s: float, round_no: int = 0,
             position: int = 0) -> tuple[list[dict] | None, int, str, bool, dict]:
        """Send one rounds job to ``case``'s worker: (rows or None, status, stderr tail, case ended, its columns)."""
        state = self._state[case.case_id]
        worker = self._worker(case)
        state["worker"] = worker.key
        rows_path = self.scratch / "rows.json"
        remove_tree(rows_path, self.scratch)
        job = {**job_base, "case": case.to_json(), "scratch": str(state["scratch"]), "rows": str(rows_path),
               "action": action, "round": round_no, "position": position}
        job_path = self.scratch / "job.json"
        job_path.write_text(json.dumps(job))
        if action == "open":
            state["reused"] = worker.cases > 0
        idle = [w.proc.pid for w in self._workers.values() if w is not worker]
        idle_cpu = sum(load.process_cpu_s(pid) for pid in idle)
        t_begin, before = time.perf_counter_ns(), load.snapshot((worker.proc.pid,))
        status, stderr, usable = worker.run(job_path, timeout_s, STDERR_TAIL)
        t_end, after = time.perf_counter_ns(), load.snapshot((worker.proc.pid,))  # its CPU is the case's, not load
        idle_cpu = sum(load.process_cpu_s(pid) for pid in idle) - idle_cpu
        self.timeline.cases.append((t_begin, t_end, case.case_id))
        try:
            payload = json.loads(rows_path.read_text())
            remove_tree(rows_path, self.scratch)
        except FileNotFoundError:
            payload = None
        if not usable:
            self._drop_worker(case)
        if payload is None:
            return None, status, stderr, True, case_columns(None, t_begin, t_end)
        accounting = payload.get("accounting") or {}
        for t0, t1 in accounting.get("intervals", []):
            self.timeline.timed.append((t0, t1, case.case_id))
        # the other workers wait on their stdin meanwhile: the CPU they used anyway is stated, never hidden
        columns = {**case_columns(accounting, t_begin, t_end), **load.case_columns(before, after),
                   "idle_workers_cpu_s": idle_cpu}
        columns["worker_peak_rss_bytes"] = accounting.get("worker_peak_rss_bytes")
        return payload["rows"], status, stderr, bool(payload.get("done")) or status != 0, columns

    # -- questions -------------------------------------------------------------------------------------------------
    def _look(self, rounds: int, decide_now: bool = True) -> None:
        """Look at every open question after ``rounds`` rounds (a look of ``self.looks``, or the last round): the
        groups of equals of the rows measured so far (``records.questions``, as the ranking groups them), each
        contender's time per round (NaN where it missed one), the one rule (``rules.decision.decide``). With
        ``decide_now`` False only the questions and their cases are known (the planner's, between looks)."""
        if not self._qrows:
            return
        df = countable(pd.DataFrame(self._qrows)).dropna(subset=["elapsed_s"])
        for suite, rows in df.groupby("suite", sort=True):
            for key, group in suite_questions(get_suite(str(suite)), rows):
                key = {k: _plain(v) for k, v in key.items()}
                operation = key.pop("operation", "")
                q = self.questions.setdefault((suite, operation, json.dumps(key, sort_keys=True, default=str)),
                                              Asked(str(suite), str(operation), key))
                q.cases |= set(group["case_id"].astype(str))
                if q.closed or not decide_now:
                    continue
                parts = {str(n): p for n, p in group.groupby("_entry", sort=True)}
                values = per_round(parts, "elapsed_s") or {}
                times = {name: np.asarray([v.get(r, math.nan) for r in range(rounds)]) for name, v in values.items()}
                q.rounds, q.contenders = rounds, tuple(sorted(times))
                if len(times) < 2:
                    q.answer, q.why = "alone", "fewer than two contenders measured"
                    continue
                d = q.decision = decide(times, looks=self.looks, cap=self.cap, margin=self.margin)
                q.leader = d.best
                gone = {c.name: c.out for c in d.out}
                q.left = {str(c): max(gone[n] for n in names)
                          for c, names in group.groupby("case_id")["_entry"].agg(set).items() if names <= gone.keys()}
                if d.decided:
                    q.answer, q.why = str(d.verdict), d.why()

    def _close_all(self, why: str, answer: str) -> None:
        """Close the open questions: each decided on all its rounds (``rules.decision.decide``: a tie at the cap,
        else open), ``answer`` and ``why`` where the decision is still open."""
        self._look(self.rounds_done)
        for q in self.questions.values():
            if not q.closed:
                q.answer, q.why, q.rounds = answer, why, self.rounds_done

    # -- the run ---------------------------------------------------------------------------------------------------
    def run(self, cases: list[Case], job_base: dict, timeout_s: Mapping[str, float]) -> Iterator[
            CaseStarted | CaseFinished | RoundDone]:
        cap = self.cap = int(job_base["iterations"])
        rng = random.Random(self.seed)
        self._workers: dict[tuple, WorkerProcess] = {}
        self._state: dict[str, dict] = {}
        self._qrows: list[dict] = []
        rows: dict[str, list[dict]] = {}
        spent: dict[str, dict[str, float]] = {}
        t_start = time.perf_counter()
        deadline = t_start + self.budget_s if self.budget_s is not None else math.inf

        def until() -> float:
            return self._until(t_start, cap)

        by_id = {c.case_id: c for c in cases}
        self._baselines |= {c.case_id for c in cases if c.backend in NOT_CONTENDERS}
        carried = self._carry(cases, job_base["run_columns"])
        # the round this build stops at: without a time budget, one build's rounds after those it carried; the cap
        end = min(cap, self.rounds_done + BUILD_ROUNDS) if self.budget_s is None else cap

        def add_spent(case_id: str, columns: dict) -> None:
            mine = spent.setdefault(case_id, {})
            for name, value in columns.items():
                if name in CASE_COLUMNS and isinstance(value, int | float):
                    mine[name] = mine.get(name, 0.0) + value
                elif name not in mine or mine[name] is None:
                    mine[name] = value

        def finish(case: Case, rc: int, stderr: str, reason: str) -> CaseFinished:
            state = self._state[case.case_id]
            if state["opened"]:  # end its generator (its ``finally`` removes what it made)
                add_spent(case.case_id, self._job(case, "close", job_base, timeout_s[case.case_id])[4])
            del self._state[case.case_id]
            remove_tree(state["scratch"], self.scratch)
            if state["worker"] not in {s["worker"] for s in self._state.values()}:
                self._close_worker(state["worker"])  # none of its cases is open any more: its memory back
            got = rows.pop(case.case_id)
            columns = spent.pop(case.case_id, {})
            if not got and rc == 0:  # opened, never stepped: the budget or the cap ended the rounds first
                got = finish_rows([{"operation": "case", "status": "skip", "reason": f"not measured: {reason}"}], case,
                                  job_base["run_columns"])
            if not got:  # its worker died before it wrote a row: the runner makes the error row
                return CaseFinished(case, None, rc, stderr, columns.get("t_case_s") or 0.0)
            out = [{**r, **{k: v for k, v in columns.items() if k not in r or k in CASE_COLUMNS},
                    "rounds_stop": reason, "runner_peak_rss_bytes": peak_rss(),
                    "worker_reused": state.get("reused", False)} for r in got]
            return CaseFinished(case, out, rc, stderr, columns.get("t_case_s") or 0.0)

        def step(case: Case, action: str, round_no: int = 0, position: int = 0) -> CaseFinished | None:
            # a case's time limit is over all its jobs: each gets what the earlier ones left
            left = max(1.0, timeout_s[case.case_id] - (spent.get(case.case_id, {}).get("t_case_s") or 0.0))
            got, rc, stderr, ended, columns = self._job(case, action, job_base, left, round_no, position)
            if got is None and stderr.startswith("case timed out after"):  # the case's limit, not this job's part
                stderr = f"case timed out after {timeout_s[case.case_id]:.0f} s (its set-up and rounds together)\n" \
                    + stderr.partition("\n")[2]
            add_spent(case.case_id, columns)
            self._state[case.case_id]["opened"] = not ended
            if got is None:  # its worker died or timed out: the case ends with what it measured and an error row
                if rows[case.case_id]:
                    reason = ended_reason(rc, stderr) or f"worker exited with status {rc}" + \
                        (" (killed by signal)" if rc < 0 else "")
                    rows[case.case_id] += finish_rows([error_row(case, f"{reason}\n{stderr}")], case,
                                                      job_base["run_columns"])
                return finish(case, rc, stderr, "its worker ended")
            load_cols = {k: columns.get(k) for k in columns if k not in CASE_COLUMNS}
            got = [{**r, **load_cols} for r in got]
            rows[case.case_id].extend(got)
            if self.partial is not None and got:
                with open(self.partial / f"{case.case_id}.jsonl", "a") as f:
                    f.write("".join(json.dumps(r, default=str) + "\n" for r in got))
            self._qrows += question_rows(got, get_suite(case.suite).questions)
            if ended:
                return finish(case, rc, stderr, "error" if rc else "nothing more to measure")
            return None

        try:
            for n, case in enumerate(cases):  # open every case: set-up and warm-ups, once
                self._state[case.case_id] = {"scratch": create_marked_dir(self.scratch / f"case-{n}"),
                                             "worker": None, "opened": False}
                rows[case.case_id] = carried.get(case.case_id, [])
                if case.case_id in carried and self._answered(case.case_id, cap):  # decided in an earlier build
                    yield finish(case, 0, "", self._why(case.case_id))
                    continue
                yield CaseStarted(case)
                if (done := step(case, "open")) is not None:
                    yield done
            round_s = 0.0
            self.opened_s = time.perf_counter() - t_start
            while self._state:
                before = len(self.left_out)
                # from round 2: a case's first round pays once for what its later rounds do not (a write's
                # read-back whole, where later ones compare digests: ``suites.kit.verification``)
                if self.rounds_done >= 2 and (self.rounds_done < end) and deadline < math.inf:
                    for case_id, why in self._plan(until() - time.perf_counter(), end, by_id):
                        yield finish(by_id[case_id], 0, "", why)
                    if not self._state:  # the plan gave every case up: no round to count (it would measure nothing)
                        break
                if self.rounds_done >= cap:
                    if cap < self.looks[0]:
                        self.stopped = f"a fixed {cap} rounds, below the first look at {self.looks[0]}"
                        self._close_all(self.stopped, "not looked at")
                    else:
                        self.stopped = f"cap of {cap} rounds reached"
                        self._close_all(self.stopped, str(Verdict.TIE))
                    break
                if self.rounds_done >= end:
                    self.stopped = f"this build's {BUILD_ROUNDS} rounds measured, at round {end}"
                    self._close_all(f"{self.stopped} (a later build goes on)", "build's rounds measured")
                    break
                # the next round: its open cases' last steps (the planner may have closed some since)
                next_s = sum(self._cost(c) for c in self._state) if self._steps else round_s
                if time.perf_counter() + next_s > until():
                    self.stopped = f"this build's time ended at round {self.rounds_done}"
                    self._close_all(self.stopped + ("" if self.rounds_done >= self.looks[0]
                                                    else f", below the first look at {self.looks[0]}"),
                                    BUDGET_SPENT)
                    break
                t0 = time.perf_counter()
                order = sorted(self._state)
                rng.shuffle(order)
                for position, case_id in enumerate(order):
                    case = by_id[case_id]
                    if case_id not in self._state:
                        continue
                    # its worker died under another case: set up again
                    if not self._state[case_id]["opened"] and (done := step(case, "open")) is not None:
                        yield done
                        continue
                    t_case = time.perf_counter()
                    if (done := step(case, "step", self.rounds_done, position)) is not None:
                        yield done
                    self._steps.setdefault(case_id, []).append(time.perf_counter() - t_case)
                self.rounds_done += 1
                round_s = time.perf_counter() - t0
                self.rounds_s.append(round_s)
                if self.rounds_done in self.looks and self.rounds_done <= cap:
                    self._look(self.rounds_done)
                if UNASKED_ROUNDS <= self.rounds_done < min(self.looks[0], cap):
                    self._look(self.rounds_done, decide_now=False)  # the questions so far: which cases answer none
                for case_id in [c for c in self._state if self._answered(c, cap)]:
                    yield finish(by_id[case_id], 0, "", self._why(case_id))
                yield RoundDone(self.rounds_done, round_s, len(self._state),
                                sum(q.closed for q in self.questions.values()), len(self.questions),
                                tuple(self.left_out[before:]))
            for case_id in list(self._state):
                yield finish(by_id[case_id], 0, "", self.stopped)
        except BaseException:
            for worker in self._workers.values():
                worker.proc.kill()
            raise
        finally:
            for worker in list(self._workers.values()):
                worker.close()
            self._workers.clear()
            for state in self._state.values():
                remove_tree(state["scratch"], self.scratch)

    def _carry(self, cases: list[Case], run_columns: dict) -> dict[str, list[dict]]:
        """The earlier build's rows of ``cases`` (this run's run columns, the build that measured each kept in
        ``records.questions.BUILD_COLUMN``), its rounds counted as this run's first ones and its questions looked at
        on them."""
        if self.prior is None:
            return {}
        ids = {c.case_id for c in cases}
        carried = {case_id: [{**r, **run_columns} for r in part]  # each keeps its BUILD_COLUMN
                   for case_id, part in self.prior.rows.items() if case_id in ids}
        suites = {c.case_id: get_suite(c.suite) for c in cases}
        for case_id, part in carried.items():
            self._qrows += question_rows(part, suites[case_id].questions)
        self.rounds_done = self.prior.rounds
        self._look(self.rounds_done)
        return carried

    def _until(self, t_start: float, cap: int) -> float:
        """The time by which the next round must end: the budget's end, ``FIRST_LOOK_GRACE`` of it later while the
        run is below its first look (never without a budget)."""
        if self.budget_s is None:
            return math.inf
        below = self.rounds_done < min(self.looks[0], cap)
        return t_start + self.budget_s * (1 + (FIRST_LOOK_GRACE if below else 0.0))

    def _cost(self, case_id: str) -> float:
        """What a round of ``case_id`` costs: the mean of its rounds after its first (which pays once for a write's
        whole read-back), so that a step that is dearer every few rounds (the sharding sweep's whole layouts) is
        counted at its share, not as the cost of every round; its first round's while it has no other."""
        steps = self._steps.get(case_id) or [0.0]
        return sum(steps[1:]) / (len(steps) - 1) if len(steps) > 1 else steps[0]

    def _plan(self, left_s: float, cap: int, by_id: Mapping[str, Case]) -> list[tuple[str, str]]:
        """Before a round: what the time left can carry, and the cases to close because it cannot carry more.

        Each open question is carried to its next look (or the cap), each case to the furthest of its open
        questions; a case in no open question to ``UNASKED_ROUNDS`` (its median's interval), a baseline
        (``NOT_CONTENDERS``) to the first look. When that does not fit: below the first look the cases their suites
        declare optional are left out, the dearest first; then the dearest questions are given up but the cheapest
        (their cases close with them); then the cases in no question, the dearest first (never a baseline). After
        the first look the dearest open questions are given up. The cheaper ones still reach their next look.
        Returns (case id, why) of the cases to close now."""
        r = self.rounds_done
        first = r < self.looks[0]
        self._look(r, decide_now=False)  # the questions so far and their cases
        open_ids = set(self._state)
        kept = [q for q in self.questions.values() if not q.closed]

        # every open question's next look (a question of three or more has no interval at round 8, but the front
        # page may rank a pair of its contenders there: the cache's client cache on against off)
        next_look = min([look for look in self.looks if look > r] + [cap])

        def target(c: str) -> int:
            if any(q.needs(c) for q in kept):
                return next_look
            return min(cap, self.looks[0] if c in self._baselines else UNASKED_ROUNDS)

        def need(ids) -> float:
            return sum(self._cost(c) * max(0, target(c) - r) for c in ids)

        def cost(q: Asked) -> float:  # what it costs a round: its cases still in it (not those that left it)
            return sum(self._cost(c) for c in q.cases & open_ids if q.needs(c))

        if need(open_ids) <= left_s:
            return []
        out: list[tuple[str, str]] = []
        if first:
            why = f"left out at round {r}: the rounds it needs do not fit the budget"
            for case_id in sorted((c for c in open_ids if get_suite(by_id[c].suite).optional(by_id[c])),
                                  key=lambda c: -self._cost(c)):
                if need(open_ids) <= left_s:
                    break
                open_ids.discard(case_id)
                out.append((case_id, why))
        else:
            why = f"this build's time ended at round {r}: left open for cheaper questions (a later build goes on)"
        # the dearest open questions, so that the cheaper ones reach their next look; below the first look the
        # cheapest is kept whatever it costs (it measures until the budget is spent)
        by_cost = sorted(kept, key=lambda q: -cost(q))
        for q in by_cost[:-1] if first else by_cost:
            if need(open_ids) <= left_s:
                break
            q.answer, q.why, q.rounds = (LEFT_OUT if first else BUDGET_SPENT), why, r
            kept.remove(q)
            open_ids -= {c for c in q.cases if not any(o.needs(c) for o in self.questions.values())}
        if first:  # then the cases in no question (a sweep, measured to its median's interval), the dearest first
            keep = {c for q in kept for c in q.cases if q.needs(c)}
            for case_id in sorted((c for c in open_ids if c not in keep and c not in self._baselines),
                                  key=lambda c: -self._cost(c)):
                if need(open_ids) <= left_s:
                    break
                open_ids.discard(case_id)
        out += [(c, why) for c in sorted(set(self._state) - open_ids) if c not in dict(out)]
        if first:
            self.left_out += [f"{get_suite(by_id[c].suite).describe(by_id[c])} ({why})" for c, _ in out]
        return out

    def _answered(self, case_id: str, cap: int) -> bool:
        """True when ``case_id`` may close: in no open question (none, or every one given up or answered), at
        ``UNASKED_ROUNDS`` (a baseline at the first look); else the first look (or the cap below it) reached and
        every question it is in answered."""
        mine = [q for q in self.questions.values() if case_id in q.cases]
        baseline = case_id in self._baselines
        if not baseline and not any(q.needs(case_id) for q in mine) and self.rounds_done >= min(UNASKED_ROUNDS, cap):
            return True
        if self.rounds_done < min(self.looks[0], cap):
            return False
        return not any(q.needs(case_id) for q in mine)

    def _why(self, case_id: str) -> str:
        whys = sorted({q.why if q.closed else f"out at round {q.left.get(case_id, self.rounds_done)}"
                       for q in self.questions.values() if case_id in q.cases})
        return "; ".join(whys) if whys else f"{self.rounds_done} rounds (no question to answer)"

    def record(self) -> dict:
        """What ``run.json`` keeps of the rounds: the seed, the looks, the margin, the budget and every question."""
        return {"seed": self.seed, "looks": list(self.looks), "margin": self.margin, "budget_s": self.budget_s,
                "rounds": self.rounds_done, "stopped": self.stopped, "left_out": self.left_out,
                "builds": self.prior.builds + 1 if self.prior is not None else 1,
                "continued_from": self.prior.run_id if self.prior is not None else None, "code": code_fingerprint(),
                "opened_s": round(self.opened_s, 3), "rounds_s": [round(x, 3) for x in self.rounds_s],
                "questions": [q.record() for q in self.questions.values()]}


__all__ = ["BUDGET_SPENT", "FIRST_LOOK_GRACE", "LEFT_OUT", "NOT_CONTENDERS", "UNASKED_ROUNDS", "Asked", "RoundDone",
           "RoundsExecutor", "question_rows", "round_seed"]
