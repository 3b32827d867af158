"""The book's plan, before its first notebook runs: its time budget shared by what each measuring chapter needs to
reach its questions' next look (:class:`BudgetShares`, by :func:`prior_need` from this machine's last run of the
suite), whether a build goes on from that run (:func:`continues`), and the lines that say it (:func:`plan_lines`)."""

from __future__ import annotations

import contextlib
import math
import shutil
import time
from collections.abc import Collection
from pathlib import Path

#: the time a book's notebooks may take together, per profile, unless ``--budget`` says otherwise (seed: none);
#: standard: what its chapters took to reach every first look on 2 cores, quiet (a 35-minute book, its chapters run
#: least need first, reached every first look in 2,329 s: S3 102 s, upgrades 158, threads 272, parallel 255, writers
#: 336, compression 344, cache 821; the same chapters' rounds are 30-60% slower on some days than on others)
BOOK_BUDGET_S = {"quick": 320.0, "standard": 2400.0}
#: seconds a measuring notebook spends outside its run (its kernel's start, the chapter drawn), and a notebook that
#: only reads runs in all: kept out of the measuring runs' shares
NOTEBOOK_OVERHEAD_S, READING_NOTEBOOK_S = 9.0, 5.0


class BudgetShares:
    """The book's time budget shared by its measuring notebooks by need: each notebook's weight is what its last
    finished run on this machine says it needs to reach its next look (:func:`prior_need`), else its suite's
    stated time on the profile (``Suite.time_budget_s``, sized to reach the first look on a small machine; 60 s
    where none is stated). Each notebook gets its share of what is left when it starts, so a notebook that ends
    early leaves its rest to the ones after it. Without a budget each gets None (its suite's own)."""

    def __init__(self, budget: float | None, suites: dict[str, str], profile: str, reading: int = 0,
                 needs: dict[str, float | None] | None = None) -> None:
        from benchmarks_lib.suites import get_suite

        self.left = self.budget = budget
        needs = needs or {}
        #: each notebook's need, and whether it came from its last run here ('' : its suite's stated time)
        self.measured = {n for n in suites if needs.get(n) is not None}
        self.weights = {n: needs.get(n) or get_suite(s).time_budget_s.get(profile) or 60.0 for n, s in suites.items()}
        self.needs = dict(self.weights)
        #: what the notebooks that only read runs (built after the measuring ones) are left
        self.reserve = reading * READING_NOTEBOOK_S

    def preview(self, name: str) -> float | None:
        """Seconds the run of notebook ``name`` may take were it to start now: its share, by its weight, of what is
        left less what the reading notebooks need and each measuring notebook still to run spends outside its run
        (``NOTEBOOK_OVERHEAD_S``). Before the first notebook starts, the plan's share of each."""
        if self.left is None:
            return None
        weight = self.weights.get(name, 60.0)
        others = sum(w for n, w in self.weights.items() if n != name)
        starts = len(self.weights) + (name not in self.weights)
        return max(5.0, max(0.0, self.left - self.reserve - NOTEBOOK_OVERHEAD_S * starts) * weight / (weight + others))

    def next(self, name: str) -> float | None:
        """The share of notebook ``name``, about to start (:meth:`preview`); what it leaves goes to the ones after."""
        share = self.preview(name)
        self.weights.pop(name, None)
        return share

    def in_order(self, names: list[str]) -> list[str]:
        """``names`` in the order their runs go: the chapters that need least first (a name without a share keeps
        its place after them). A chapter slower than its plan may go past its share below its first look (its grace,
        ``run.rounds.FIRST_LOOK_GRACE``) and takes that from the chapters after it: run first, a short chapter
        never waits behind a long one's overrun and the ones after it need more and can spare it; the chapter that
        needs most runs last and takes its grace from no other chapter (a standard book that ran in the chapters'
        own order left S3 and upgrades at round 0, twice, behind a slow cache chapter)."""
        return sorted(names, key=lambda n: (n not in self.needs, self.needs.get(n, 0.0)))

    def another_pass(self, needs: dict[str, float], first: Collection[str] = ()) -> BudgetShares | None:
        """What is left of the budget, shared by the chapters of ``needs`` (each chapter's need to reach its open
        questions' next look, :func:`open_needs`) that it reaches, those of ``first`` (a question of the front page
        open: :func:`front_page_open`) before the rest, least need first within each: for a pass that goes on with
        them; None when it reaches none (or there is no budget). A chapter whose open questions are drawn only in its
        own pages gets what the front page's questions leave (a standard book gave its last 2.2 minutes to
        compression's other datasets while 4 of the writers' front-page questions stayed open)."""
        if self.left is None:
            return None
        room, fit = self.left - self.reserve, {}
        for name, need in sorted(needs.items(), key=lambda item: (item[0] not in first, item[1])):
            if need + NOTEBOOK_OVERHEAD_S <= room:
                fit[name], room = max(1.0, need), room - need - NOTEBOOK_OVERHEAD_S
        if not fit:
            return None
        again = BudgetShares(self.left, dict.fromkeys(fit, ""), "", needs=fit)
        again.reserve = self.reserve
        return again

    def wanted(self) -> float:
        """The budget every measuring notebook's need would take: the needs, their notebooks' own start and drawing,
        and the reading notebooks."""
        return sum(self.needs.values()) + NOTEBOOK_OVERHEAD_S * len(self.needs) + self.reserve

    @contextlib.contextmanager
    def spending(self):
        """Count the block's wall time against what is left."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if self.left is not None:
                self.left = max(0.0, self.left - (time.perf_counter() - t0))


def newest_run(results: Path, suite: str, profile: str) -> tuple[Path, dict] | None:
    """This machine's newest finished run of ``suite`` on ``profile`` and its ``run.json`` (None: none)."""
    from benchmarks_lib.base.environment import machine_name
    from benchmarks_lib.records.store import newest_run as newest

    return newest(results, suite, profile, machine_name())


def _undecided(questions: object) -> list[dict]:
    """The questions of a ``run.json`` (data from a file: anything but a list holds none) not decided."""
    from benchmarks_lib.rules.decision import Verdict

    decided = {str(v) for v in Verdict if v not in (Verdict.OPEN, Verdict.ALONE)}
    return [q for q in questions if isinstance(q, dict) and q.get("answer") not in decided | {"alone"}] \
        if isinstance(questions, list) else []


#: a need taken from a last run is this much larger (a round's time varies from build to build)
NEED_MARGIN = 1.15


def prior_need(meta: dict, continuing: bool) -> float | None:
    """Seconds a run like ``meta`` (a finished run's ``run.json``) needs to reach its questions' next look: what it
    spent before its first round, and the rounds to the look at the cost of its own rounds; a build that continues
    it (``continuing``) goes on from its rounds with the cases its open questions still measure (its last round's
    cost), one that does not starts from round 0 (its second round's cost: every case open, the first round's
    extra read-back paid); a run of fixed iterations, measured in no rounds (parallel), needs what it took
    (``measured_s``, recorded where one session measured it whole). None where the run recorded neither (a run
    before they were kept, a resumed one), and for a build from scratch where the run continued an earlier one (its
    set-up and rounds measured only the cases its open questions still needed: far less than a build from scratch
    measures)."""
    from benchmarks_lib.rules.decision import LOOKS

    rounds = meta.get("rounds")
    if rounds is None and "rounds" not in meta:  # a run of fixed iterations (parallel): the time it took, whole
        took = meta.get("measured_s")
        return NEED_MARGIN * took if isinstance(took, int | float) and math.isfinite(took) and took >= 0 else None
    if not isinstance(rounds, dict) or not isinstance(rounds.get("rounds_s"), list):
        return None
    if not continuing and rounds.get("continued_from"):
        return None
    times = [x for x in rounds["rounds_s"] if isinstance(x, int | float) and math.isfinite(x) and x >= 0]
    before = [rounds.get(k) for k in ("before_s", "opened_s")]
    if not times or not all(isinstance(x, int | float) and math.isfinite(x) for x in before):
        return None
    done = rounds.get("rounds") if isinstance(rounds.get("rounds"), int) else len(times)
    if continuing and not (meta.get("params") or {}).get("versions"):
        if not _undecided(rounds.get("questions") or []):
            return NEED_MARGIN * sum(before)
        n, per_round = min([look - done for look in LOOKS if look > done] or [0]), times[-1]
    else:
        n, per_round = LOOKS[0], times[min(1, len(times) - 1)]
    return NEED_MARGIN * (sum(before) + n * per_round)


#: how many times one build runs a chapter: its first run, then runs that go on with its open questions while the
#: budget the chapters left reaches their next look (:meth:`BudgetShares.another_pass`)
MAX_PASSES = 3


def _built(results: Path, run_ids: dict[str, str], suites: dict[str, str | None], profile: str,
           name: str) -> tuple[Path, dict] | None:
    """Chapter ``name``'s run of this build (``run_ids``: chapter -> its run) and its ``run.json``, where it finished
    and is this machine's newest of its suite; else None."""
    found = newest_run(results, str(suites[name]), profile) if suites.get(name) else None
    return found if found is not None and found[0].name == run_ids.get(name) else None


def open_needs(results: Path, run_ids: dict[str, str], suites: dict[str, str | None], profile: str) -> dict[str, float]:
    """Per chapter this build measured (``run_ids``: chapter -> its run), where its run finished and another pass
    would go on with it: what that needs (:func:`pass_need`)."""
    needs = {}
    for name in run_ids:
        if (found := _built(results, run_ids, suites, profile, name)) and (need := pass_need(found[1])) is not None:
            needs[name] = need
    return needs


def front_page_open(results: Path, run_ids: dict[str, str], suites: dict[str, str | None], profile: str,
                    names: Collection[str]) -> set[str]:
    """The chapters of ``names`` whose run of this build (``run_ids``) leaves a question of the front page open
    (``rules.answers.chapter_answers``: the answers the verdict box gives from it); a run that cannot be read
    counts as none."""
    from benchmarks_lib.records.store import load_run
    from benchmarks_lib.rules.answers import chapter_answers
    from benchmarks_lib.rules.ranking import Verdict

    found = set()
    for name in names:
        if (built := _built(results, run_ids, suites, profile, name)) is None:
            continue
        try:
            df, _ = load_run(built[0])
        except (OSError, ValueError):
            continue
        if any(a.measured and a.status is Verdict.OPEN for a in chapter_answers(str(suites[name]), df)):
            found.add(name)
    return found


def pass_need(meta: dict) -> float | None:
    """What going on with the run of ``meta`` (a ``run.json``) needs to reach its next look (:func:`prior_need`),
    where its budget ended questions that a later look can decide; None where it did not (every question decided,
    or ended at the rounds its parameters allow), at the cap of rounds, for a run of library versions (which never
    goes on) or one measured by other code."""
    from benchmarks_lib.rules.decision import CAP
    from benchmarks_lib.run.rounds import BUDGET_SPENT, LEFT_OUT

    rounds = meta.get("rounds")
    if not isinstance(rounds, dict) or (meta.get("params") or {}).get("versions") or not continues(meta):
        return None
    ended = [q for q in _undecided(rounds.get("questions")) if q.get("answer") in (BUDGET_SPENT, LEFT_OUT)]
    done = rounds.get("rounds")
    if not ended or not isinstance(done, int) or done >= CAP:
        return None
    return prior_need(meta, continuing=True)


def pass_line(again: int, going: list[str], shares: BudgetShares) -> str:
    """What a pass that goes on with the open questions says as it starts."""
    from benchmarks_lib.rules.decision import names_text
    from benchmarks_lib.run.preflight import format_seconds

    one = len(going) == 1
    return (f"pass {again}: {format_seconds(shares.budget or 0)} of the budget left; {names_text(going)} go"
            f"{'es' if one else ''} on with {'its' if one else 'their'} open questions")


def continues(meta: dict) -> bool:
    """Whether a build now goes on from the run of ``meta`` (a ``run.json``; ``run.continuation``) as far as the plan
    can tell before measuring: the same code that measures and decides (``run.continuation.code_fingerprint``), what a
    reader's checkout changes most often. The run itself checks the rest (library versions, parameters) and starts
    afresh where they differ."""
    from benchmarks_lib.run.continuation import code_fingerprint

    rounds = meta.get("rounds")
    return isinstance(rounds, dict) and rounds.get("code") == code_fingerprint()


def _left_open(results: Path, suite: str, profile: str, fresh: bool = False) -> str:
    """What this machine's newest finished run of ``suite`` on ``profile`` left open, in words ('' : none): what a
    build continuing it (``run.continuation``, where nothing that could change a time differs) goes on with; or that
    this build starts afresh (``fresh``, or other code measured that run)."""
    found = newest_run(results, suite, profile)
    if found is None or not found[1].get("rounds"):  # a suite not measured in rounds asks no question of the rule
        return ""
    run, meta = found
    if fresh:
        return "; this build starts afresh (--fresh)"
    if not continues(meta):
        return f"; its last run here ({run.name}) was measured by other code: this build starts afresh"
    questions = meta["rounds"].get("questions") if isinstance(meta["rounds"], dict) else None
    questions = [q for q in questions if isinstance(q, dict)] if isinstance(questions, list) else []
    if not questions:
        return f"; its last run here ({run.name}) measured too few rounds to ask its questions"
    asked = [q for q in questions if q.get("answer") != "alone"]
    still = len(_undecided(asked))
    on = ("it measures afresh (each library version in an environment of its own)" if (meta.get("params") or {})
          .get("versions") else "a build on the same code and versions goes on with them")
    return (f"; its last run here ({run.name}) left {still} of {len(asked)} questions open: {on}" if still else
            f"; its last run here ({run.name}) decided all {len(asked)} questions")


def _reach_basis(names: list[str], shares: BudgetShares) -> str:
    """What a plan's needs rest on, in words: this machine's last runs, or (for a chapter whose need no run here
    measured) its suite's stated time, which a slower machine than the one it was measured on can miss."""
    from benchmarks_lib.rules.decision import names_text

    stated = [n for n in names if n in shares.needs and n not in shares.measured]
    if not stated:
        return "on this machine (by their last runs here)"
    said = "their suites' stated times" if len(stated) == len(shares.needs) else \
        f"the stated times of {names_text(stated)} (no need of theirs measured here)"
    return f"by {said}: a machine slower than the one they were measured on may fall short"


def plan_lines(names: list[str], suites: dict[str, str | None], shares: BudgetShares, profile: str,
               results: Path, fresh: bool = False) -> list[str]:
    """What the book will measure, said before it starts: per measuring chapter, its share of the budget (or, without
    one, its expected time) beside what it needs to reach its next look, the scratch it writes at once and what its
    last run here left open; whether the budget reaches every next look (else the budget that would); the free
    space where the scratch lies."""
    from benchmarks_lib.base.paths import resolve_scratch_root
    from benchmarks_lib.base.specs import format_bytes
    from benchmarks_lib.rules.decision import names_text
    from benchmarks_lib.run.preflight import format_seconds
    from benchmarks_lib.run.runner import expected_run

    if not names:
        return []
    parts, largest, total, short = [], 0, 0.0, []
    for name in names:
        seconds, need = expected_run(str(suites[name]), profile)
        largest = max(largest, need)
        share = shares.preview(name)
        if share is not None:
            wants = shares.needs.get(name)
            by = "its last run here" if name in shares.measured else "its stated time"
            when = f"a share of about {format_seconds(share)}"
            if wants is not None:
                when += f" (its next look needs about {format_seconds(wants)}, by {by})"
                if share < wants:
                    short.append(name)
        elif seconds is not None:
            when, total = f"about {format_seconds(seconds)}", total + seconds
        else:
            when = "its own time (none stated)"
        parts.append(f"{name}: {when}, {format_bytes(need)} of scratch at once"
                     f"{_left_open(results, str(suites[name]), profile, fresh)}")
    head = (f"plan ({profile} profile, a budget of {format_seconds(shares.budget)}; a later build continues the "
            f"questions left open):" if shares.budget is not None else
            f"plan ({profile} profile, no budget: about {format_seconds(total)} in all, from each suite's stated "
            "time scaled to these sizes):")
    reach = []
    if shares.budget is not None:
        wanted = shares.wanted()
        reach = [f"  this budget falls short of the next look of {names_text(short)}: about "
                 f"{format_seconds(wanted)} would reach every one (--budget {math.ceil(wanted)}); a later build "
                 "goes on from what this one measures" if short else
                 f"  this budget reaches every chapter's next look {_reach_basis(names, shares)}"]
    scratch = resolve_scratch_root(None).absolute()
    there = next(p for p in (scratch, *scratch.parents) if p.exists())
    free = shutil.disk_usage(there).free
    full = (f"; the largest chapter needs about {format_bytes(largest * 1.2)} and stops before measuring"
            if free < largest * 1.2 else "")
    return [head, *(f"  {p}" for p in parts), *reach, f"  scratch: {format_bytes(free)} free in {there}{full}"]
