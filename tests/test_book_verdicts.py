"""One answer per question, everywhere: the front page's verdict box, each chapter's answer and conclusion and the
advise page give the same pick and the same verdict for one small writers run (the suite's smoke sizes, 8
rounds); the box holds one line per question, each linked to a section its chapter has; the words handle every
``Verdict``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import pytest

from benchmarks_lib.base.paths import ROOT
from benchmarks_lib.book.frontpage import anchor, evidence_link, verdict_box
from benchmarks_lib.book.notebooks import template
from benchmarks_lib.book.pages import write_answers_page
from benchmarks_lib.chapters import advise as advise_page
from benchmarks_lib.chapters import writers
from benchmarks_lib.records.store import load_run, run_dirs
from benchmarks_lib.rules.answers import (
    QUESTIONS,
    Answer,
    answers,
    chapter_answers,
    counterpart,
    sharding_ranking,
    sharding_rows,
)
from benchmarks_lib.rules.ranking import Ranking, Verdict, rank_samples
from benchmarks_lib.rules.words import (
    CHANCE,
    MACHINES,
    SAME,
    SURE,
    agreement,
    pick_text,
    rests_text,
    sure_text,
    two_sample_text,
    verdict_line,
)
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites import get_suite

#: the smoke run's arrays: (shape, dtype) of the write/append data, the read test's store and the sharding cube
WRITE, READ, CUBE = ("2,64,96", "uint16"), ("8,32,32", "uint16"), ("32,32,32", "uint32")
#: question -> the advise page's workload that asks it of the same rows
ADVISED = {"write": (*WRITE, "write"), "cold-read": (*READ, "full-read"), "cutouts-unaligned": (*READ, "cutout:8,8,8"),
           "append": (*WRITE, "append"), "sharding": (*CUBE, "cutout:8,8,8")}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> tuple[Path, pd.DataFrame, dict]:
    """A writers run at the suite's smoke sizes with 8 rounds and 8 cutout positions (the paired rule looks at 8):
    its results directory, rows and run.json."""
    base = tmp_path_factory.mktemp("verdicts")
    params = {**get_suite("writers").smoke, "iterations": 8, "cutout_positions": 8}
    run_suite("writers", params, results_dir=base / "results", run_id="verdicts", scratch_dir=base / "scratch",
              ceiling=False, progress=None)
    df, meta = load_run(run_dirs(base / "results")[0])
    return base / "results", df, meta


def _rows(entry) -> set:
    return set(entry.rows.index)


def test_the_front_page_and_the_chapter_say_each_answer_in_the_same_words(smoke, tmp_path):
    results, df, meta = smoke
    found = [a for a in chapter_answers("writers", df) if a.measured]
    assert {a.question.key for a in found} == {q.key for q in QUESTIONS if q.suite == "writers"}
    page = write_answers_page(ROOT, results, tmp_path, {"writers": meta["run_id"]}).read_text()
    answer, conclusion = writers.answer(df), writers.conclusion(df)
    for a in found:
        cells = f"| {pick_text(a)} | {sure_text(a)} | {rests_text(a, run=False)} |"
        assert cells in page, a.question.key  # the verdict box
        assert verdict_line(a) in answer and verdict_line(a) in conclusion, a.question.key  # the chapter


@pytest.mark.parametrize("key", ["append", "cold-read", "cutouts-unaligned", "sharding"])
def test_the_advise_page_picks_the_same_rows_with_the_same_verdict(smoke, key):
    results, df, _ = smoke
    a = next(x for x in chapter_answers("writers", df) if x.question.key == key)
    shape, dtype, access = ADVISED[key]
    page = advise_page.page(shape=shape, dtype=dtype, access=access, results_dir=str(results), other_dirs=[])
    ranking = page.answer.evidence.ranking
    assert _rows(ranking.leader) == _rows(a.pick_entry), key  # the same pick, from the same rows
    assert f"**The book's answer** from the same run (its front page and chapter say the same): {verdict_line(a)}." \
        in page.header(), key
    if key == "sharding":  # the leader against its writer's other sharding choice
        every = sharding_ranking(sharding_rows(df))  # advise's candidates: every writer and layout the book ranks
        assert set().union(*map(_rows, ranking.entries)) == set().union(*map(_rows, every.entries))
        other = counterpart(a.ranking)  # the leader's writer with the other sharding choice, in the one decision
        assert other is not None and other in a.ranking.others
        assert any(_rows(e) == _rows(other) for e in ranking.entries)  # the same rows: one of advise's candidates
        lines = page.answer.lines
        head = next(i for i, line in enumerate(lines) if line.startswith("Cost against "))
        assert ranking.paired and a.ranking.paired  # both pair the rounds
        # advise costs sharding against the book's counterpart, with the book's verdict on the same rows
        assert lines[head].startswith(f"Cost against {_candidate(other)} (the same writer")
        assert lines[head + 1].startswith("  time per access: ")
        assert f"({two_sample_text(other.vs_leader)}, n={other.n}/{a.pick_entry.n})" in lines[head + 1]
        return
    assert set().union(*map(_rows, ranking.entries)) == set().union(*map(_rows, a.ranking.entries)), key
    assert ranking.paired and a.ranking.paired, key
    assert ranking.status is a.status, key


def _candidate(entry) -> str:
    """advise's name of a book's entry (the same rows)."""
    from benchmarks_lib.advise.evidence import with_candidates

    return str(with_candidates(entry.rows)["candidate"].iloc[0])


def test_the_advise_page_answers_writes_on_the_same_size(smoke):
    """The book ranks writes on the largest size every contender finished (the smoke run writes two); advise ranks
    the same rows, paired round by round, with the same verdict."""
    results, df, _ = smoke
    a = next(x for x in chapter_answers("writers", df) if x.question.key == "write")
    shape, dtype, access = ADVISED["write"]
    page = advise_page.page(shape=shape, dtype=dtype, access=access, results_dir=str(results), other_dirs=[])
    ranking = page.answer.evidence.ranking
    assert set(page.answer.evidence.rows["nbytes"]) == {a.ranking.key["nbytes"]}
    assert _rows(ranking.leader) == _rows(a.pick_entry)
    assert set().union(*map(_rows, ranking.entries)) == set().union(*map(_rows, a.ranking.entries))
    assert ranking.paired and a.ranking.paired
    assert ranking.status is a.status


def test_the_sharding_answer_is_the_decision_the_run_recorded(smoke):
    """The run asks the sharding question the book answers (every writer with every layout, on one kind of cutouts)
    and records its decision; the book's answer is that decision, over the same contenders."""
    _, df, meta = smoke
    a = next(x for x in chapter_answers("writers", df) if x.question.key == "sharding")
    kind = a.pick_entry.rows["cutout_kind"].iloc[0]
    asked = [q for q in meta["rounds"]["questions"]
             if q["key"].get("test") == "sharding" and q["key"].get("cutout_kind") == kind]
    assert len(asked) == 1, asked
    decision = asked[0]["decision"]
    assert sorted(decision["contenders"]) == sorted(e.name for e in a.ranking.entries)
    assert len(decision["contenders"]) >= 4  # two writers, two layouts each
    assert decision["best"] == a.ranking.leader.name and decision["verdict"] == str(a.status)


@pytest.mark.parametrize("key", ["write", "append", "cold-read", "cutouts-unaligned", "sharding"])
def test_advise_gives_the_books_answers_from_the_committed_reference(key):
    """The committed reference (a standard run in rounds: the paired rule): advise, asked the workload each of the
    book's answers rests on, picks the same rows with the same verdict, from every directory."""
    from benchmarks_lib.advise.evidence import measured_cutout, suite_runs
    from benchmarks_lib.base.paths import REFERENCE

    run_dir, _ = next(suite_runs([REFERENCE], ("writers",)))
    df, _ = load_run(run_dir)
    a = next(x for x in chapter_answers("writers", df) if x.question.key == key)
    first = a.pick_entry.rows.iloc[0]
    access = {"write": "write", "append": "append", "cold-read": "full-read"}.get(key) or \
        "cutout:" + ",".join(map(str, measured_cutout(first["cutout"], first["shape"])))
    page = advise_page.page(shape=",".join(map(str, first["shape"])), dtype=str(first["dtype"]), access=access,
                            results_dir=str(REFERENCE), other_dirs=[])
    ranking = page.answer.evidence.ranking
    assert ranking.paired == a.ranking.paired
    assert _rows(ranking.leader) == _rows(a.pick_entry)
    assert f"{verdict_line(a)}." in page.header()
    if key != "sharding":
        assert set().union(*map(_rows, ranking.entries)) == set().union(*map(_rows, a.ranking.entries))
        assert ranking.status is a.status


def _headings(notebook: str) -> list[str]:
    cells = json.loads(template(notebook, ROOT).read_text())["cells"]
    return [line.lstrip("#").strip() for c in cells if c["cell_type"] == "markdown"
            for line in "".join(c["source"]).splitlines() if re.match(r"#{1,3} ", line)]


def test_the_verdict_box_has_one_line_per_question_each_linked_to_a_section_that_exists(smoke):
    _, df, meta = smoke
    box = verdict_box(answers({"writers": (df, meta)}))
    lines = box.splitlines()[3:-1]  # the container's fence and the table's head around its rows
    assert box.startswith(":::{container} verdict-box\n| question |") and box.endswith("\n:::")
    assert len(lines) == len(QUESTIONS)
    for q, line in zip(QUESTIONS, lines, strict=True):
        link = re.match(r"\| \[([^]]+)\]\(([\w-]+)\.ipynb#([\w-]+)\) \|", line)
        assert link and link[1] == q.label, line
        assert link[3] in {anchor(h) for h in _headings(link[2])}, (q.key, link[3])
    measured = sum("not measured here" not in line for line in lines)
    assert measured == sum(q.suite == "writers" for q in QUESTIONS)  # the others are said to be unmeasured


def test_every_evidence_section_exists_and_anchors_are_myst_slugs():
    from myst_parser.mdit_to_docutils.base import default_slugify

    for q in QUESTIONS:
        headings = _headings(q.chapter)
        assert q.section in headings, (q.key, q.section)
        assert all(anchor(h) == default_slugify(h) for h in headings)
        assert evidence_link(Answer(q)) == f"{q.chapter}.ipynb#{default_slugify(q.section)}"
    from benchmarks_lib.rules.answers import _ROOT_SECTION

    assert _ROOT_SECTION in _headings("cache")


@dataclass(frozen=True, eq=False)
class _Forced(Ranking):
    """A ranking whose verdict is given (every member of ``Verdict``, the coming ones included)."""

    forced: Verdict = Verdict.WINNER

    @property
    def status(self) -> Verdict:
        return self.forced


@pytest.mark.parametrize("verdict", list(Verdict), ids=str)
def test_every_verdict_has_its_words(verdict: Verdict):
    r = rank_samples({"a": [1.0, 1.01, 0.99, 1.02, 0.98], "b<x>": [1.03, 1.04, 1.02, 1.05, 1.01]}, False)
    forced = _Forced(r.entries, r.higher, r.key, forced=verdict)
    for key in ("write", "threads"):
        q = next(q for q in QUESTIONS if q.key == key)
        a = Answer(q, forced, "a", ("em_like",))
        assert SURE[verdict] in sure_text(a)
        line = verdict_line(a)
        assert "<x>" not in line and line.startswith(f"**{q.label}**: ")
        if verdict is Verdict.TIE and q.picks_leader:
            assert pick_text(a).startswith("tie between a and b")
        if verdict is Verdict.EQUIVALENT and q.picks_leader:
            assert pick_text(a).startswith("equivalent: a and b")
        if verdict is Verdict.OPEN and q.picks_leader:  # undecided: never a tie, never a pick in bold
            assert pick_text(a) == "a so far, undecided"
        if verdict is Verdict.OPEN:  # nor the rule's own pick where it is not the leader (the codec worth taking)
            assert "**" not in pick_text(replace(a, pick="b<x>")) and "so far, undecided" in pick_text(a)
    assert verdict_line(Answer(QUESTIONS[0])).endswith("not measured here")
    lost = replace(Answer(QUESTIONS[-1]), lost=("zarr-python (files)",), checked=(2, 5))
    assert "2 of 5 unaligned arrays wrong" in verdict_line(lost)


@pytest.mark.parametrize(("key", "here", "there", "said"), [
    ("threads", Verdict.EQUIVALENT, Verdict.WINNER, MACHINES),  # 1 thread within 5% here, 2 threads faster there
    ("write", Verdict.LEADER, Verdict.WINNER, MACHINES),
    ("threads", Verdict.TIE, Verdict.WINNER, CHANCE),
    ("threads", Verdict.OPEN, Verdict.EQUIVALENT, CHANCE),
], ids=lambda x: str(x))
def test_two_machines_that_both_decided_differ_and_an_undecided_one_may_be_chance(key, here, there, said):
    """Beside the reference, two different picks are the machines' difference where both were decided (a leader or
    an equivalence: neither is ever re-opened), chance where one is a tie at the cap or still open."""
    r = rank_samples({"a": [1.0, 1.01, 0.99, 1.02, 0.98], "b": [1.03, 1.04, 1.02, 1.05, 1.01]}, False)
    q = next(q for q in QUESTIONS if q.key == key)
    mine = Answer(q, _Forced(r.entries, r.higher, r.key, forced=here), "a", ("em_like",))
    ref = Answer(q, _Forced(r.entries, r.higher, r.key, forced=there), "b", ("em_like",))
    assert agreement(mine, ref) == said
    assert agreement(mine, mine) == SAME
