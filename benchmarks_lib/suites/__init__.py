"""Suites: the chapters' measurement plans, declared as data.

A suite turns validated parameters into a list of :class:`Case` (``build_cases``) and runs
one case inside a worker subprocess (``run_case``), returning tidy row dicts (see
``benchmarks_lib.records.store.COLUMNS``). The runner adds run-level columns (run id, machine,
commit, profile, suite, case id, backend) and turns a skip/crash into a row.

A suite is found through the entry-point group ``iobench.suites`` (``name = "module:SUITE"``): the built-ins are
declared in this package's ``pyproject.toml``, a third party's suite in its own package's (see CONTRIBUTING.md for
the whole recipe of a new chapter). Only the module of the suite asked for is imported.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks_lib.base.entrypoints import SUITES_GROUP, declared, load
from benchmarks_lib.base.specs import SpecError


@dataclass(frozen=True)
class Case:
    """One unit of work run in its own worker process; ``params`` is JSON-serialisable."""

    suite: str
    backend: str
    params: dict[str, Any]
    case_id: str = ""

    def __post_init__(self) -> None:
        if not self.case_id:
            digest = hashlib.sha1(json.dumps([self.suite, self.backend, self.params], sort_keys=True).encode())
            slug = "".join(c if c.isalnum() else "-" for c in f"{self.suite}-{self.backend}")
            object.__setattr__(self, "case_id", f"{slug}-{digest.hexdigest()[:10]}")

    def to_json(self) -> str:
        return json.dumps({"suite": self.suite, "backend": self.backend, "params": self.params,
                           "case_id": self.case_id})

    @classmethod
    def from_json(cls, text: str) -> Case:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class CaseContext:
    """What a case may use: its own scratch directory (deleted after) and the run's settings."""

    scratch: Path
    iterations: int
    warmups: int
    profile: str
    run_dir: Path | None = None


#: the exit status of a case's process that ended itself (:func:`end_case`); its reason is its last line of stderr
CASE_ENDED = 75
CASE_ENDED_PREFIX = "iobench: "


def end_case(reason: str) -> None:
    """End this case's process now, from any thread, with ``reason`` (made one line) as the case's: for a fault
    that leaves the case's own thread waiting (its S3 server died under a client that retries for minutes). What
    the process started dies with it (PDEATHSIG); the runner records the case as failed with ``reason``
    (:func:`ended_reason`)."""
    os.write(2, f"\n{CASE_ENDED_PREFIX}{' '.join(reason.split())}\n".encode())
    os._exit(CASE_ENDED)


def ended_reason(rc: int, stderr: str) -> str | None:
    """The reason a case's process that ended itself gave (:func:`end_case`), or None."""
    if rc != CASE_ENDED:
        return None
    lines = [line for line in stderr.splitlines() if line.startswith(CASE_ENDED_PREFIX)]
    return lines[-1].removeprefix(CASE_ENDED_PREFIX) if lines else None


#: a case measured in rounds: its set-up (the data, a prepared store, the warm-ups) runs before the first ``yield``,
#: which hands over the set-up's rows (usually none); each ``next()`` after it measures one round (one iteration of
#: each of the case's points) and yields its rows, with ``iteration`` the round's number. What must be fresh for
#: every iteration stays fresh (a cold read evicts before each read; a write writes a new store). It returns when it
#: has nothing to measure (a skip row in its set-up); ``close()`` ends it and removes what it made.
Rounds = Iterator[list[dict]]


@dataclass(frozen=True)
class Suite:
    name: str
    #: the chapter's title, the one place it is written: the chapter notebook's heading says it (a test holds them
    #: equal), ``iobench suites`` and the explorer show it (the explorer the part before a colon)
    title: str
    #: (params, profile) -> cases; raises SpecError on bad params, before any work
    build_cases: Callable[[dict, str], list[Case]]
    #: (case, ctx) -> rows; runs in a worker subprocess
    run_case: Callable[[Case, CaseContext], list[dict]]
    #: what it measures, in a line (``iobench suites`` prints it after the title)
    measures: str = ""
    #: default parameters per profile
    profiles: dict[str, dict] = field(default_factory=dict)
    #: bytes of scratch space a case needs at most, for the free-disk check
    scratch_bytes: Callable[[list[Case]], int] = lambda cases: 0
    #: bytes one run of a case moves, the per-byte part of the time estimate; None = its ``scratch_bytes``
    work_bytes: Callable[[Case], int] | None = None
    #: bytes the run's ceiling case moves (raw write/read, memcpy); None = the profile's default
    ceiling_bytes: Callable[[list[Case]], int] | None = None
    #: (case, iterations) -> seconds a case may run before it is killed; None = the runner's default
    case_timeout_s: Callable[[Case, int], float] | None = None
    #: stated wall time per profile on a 2-core machine (seconds; shown by ``iobench suites``): a run's budget unless
    #: one is given, and a book's weight for the suite's share where no run of it here says what it needs; quick's
    #: is what its run needs to reach the first look on the 2-core VM of the reference, as ``book.plan.prior_need``
    #: counts it (its set-up and eight rounds, 15% more; measured 2026-11-29)
    time_budget_s: dict[str, float] = field(default_factory=dict)
    #: case parameters that name a case in progress lines (e.g. ``test``, ``codec``)
    label_keys: tuple[str, ...] = ()
    #: the record columns that together name a case (with backend and operation): ``iobench compare`` matches
    #: cases by them; a test fails when rows of one run differ in a parameter that is not among them
    case_keys: tuple[str, ...] = ()
    #: columns that number the parts of one iteration (frames, steps): compared as one value per iteration
    iteration_parts: tuple[str, ...] = ()
    #: tiny parameters (over the quick profile) with which the tests run the chapter end to end in seconds
    smoke: dict[str, Any] = field(default_factory=dict)
    #: case -> worker processes it starts at once on this machine (Dask workers); more than a few per core need --yes
    local_processes: Callable[[Case], int] | None = None
    #: case -> True when it reads or writes a user's own S3 endpoint: its process keeps the user's AWS environment
    #: (every other case's process has none of it: see ``executor.worker_environ``)
    user_s3: Callable[[Case], bool] = lambda case: False
    #: True when its cases of one backend may run one after another in one worker process (the runner orders
    #: them so): its libraries keep no state between cases that matters (``workers``); False: a fresh one each
    reuse_worker: bool = False
    #: (case, ctx) -> a generator that measures the case one round at a time (:data:`Rounds`); None: the case runs
    #: ``run_case`` whole, its iterations back to back
    rounds: Callable[[Case, CaseContext], Rounds] | None = None
    #: case -> True when a run may leave it out when even the first look's rounds of every case do not fit its
    #: budget (the dearest first; the run says which)
    optional: Callable[[Case], bool] = lambda case: False
    #: record columns that, with the backend, name a contender of its questions (threads: ``threads``; compression:
    #: ``codec``): they are left out of the group of equals and added to the contender's name
    contenders: tuple[str, ...] = ()
    #: the columns that make one question's group of equals; None: the ranking's (``records.questions.EQUALS`` and the
    #: codec), less ``contenders``
    question_keys: tuple[str, ...] | None = None
    #: rows -> each of its questions as (key, rows with the contender's name in ``_entry``), for a suite whose
    #: questions are not one operation in one group of equals (writers: sharding layouts within one writer); None: the
    #: default (``questions``, ``question_keys``, ``contenders``)
    question_groups: Callable[[Any], Iterator[tuple[dict, Any]]] | None = None
    #: the operations whose ``elapsed_s`` are compared between contenders measured in the same rounds: a question is
    #: one operation at one value of the ``case_keys`` recorded (the runner stops asking it once it is answered)
    questions: tuple[str, ...] = ()

    @property
    def parameters(self) -> tuple[str, ...]:
        """The names a run of this suite takes: every profile's keys (a notebook assigns each in upper case), and the
        cap of rounds (``iterations``) of a suite in rounds, whose default is the rule's cap, not a profile's."""
        capped = ("iterations",) if self.rounds is not None else ()
        return tuple(dict.fromkeys([*(name for profile in self.profiles.values() for name in profile), *capped]))

    def describe(self, case: Case) -> str:
        """A case in one line: its backend and the parameters in ``label_keys``."""
        return " ".join([case.suite, case.backend, *(f"{k}={case.params[k]}" for k in self.label_keys
                                                     if k in case.params)])


@functools.cache
def _declared() -> dict[str, str]:
    """name -> ``module:SUITE`` of every declared suite: the built-ins first, then the others by name."""
    found = declared(SUITES_GROUP)
    return {name: found[name][0] for name in sorted(found, key=lambda n: (not found[n][1], n))}


def suite_names() -> tuple[str, ...]:
    """Every declared suite's name (the built-ins first), read from the metadata: no suite is imported."""
    return tuple(_declared())


def get_suite(name: str) -> Suite:
    """The suite declared as ``name`` (its module imported); SpecError for a name nobody declares or a suite that
    fails to import."""
    suites = _declared()
    if not suites:
        raise SpecError(f"no suites are registered (entry-point group {SUITES_GROUP!r}): install this package "
                        "(pip install -e .) so that its entry points are found")
    if name not in suites:
        raise SpecError(f"suite {name!r} is unknown; allowed: {', '.join(suites)}")
    try:
        suite = load(suites[name])
    except ImportError as exc:
        raise SpecError(f"suite {name!r} failed to import: {exc}") from None
    if not isinstance(suite, Suite) or suite.name != name:
        raise SpecError(f"suite {name!r}: {suites[name]} is not a Suite named {name!r}")
    return suite


__all__ = ["CASE_ENDED", "Case", "CaseContext", "Rounds", "Suite", "end_case", "ended_reason", "get_suite",
           "suite_names"]
