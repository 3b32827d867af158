"""Builds that continue (``run/continuation.py``): a later run of the same suite on the same machine, code and
library versions goes on from the rounds the last one recorded; a decided question is not measured again; anything
different starts afresh and says why."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks_lib.records.questions import BUILD_COLUMN
from benchmarks_lib.rules.decision import CAP, Verdict
from benchmarks_lib.run.continuation import DRAWING_ONLY, afresh_words, code_fingerprint, differences, find_prior
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites import get_suite

SMALL = {**get_suite("writers").smoke, "tests": ["write"], "multipliers": [1], "warmups": 1,
         "backends": ["raw", "zarr-python", "ome-writers:zarr-python"], "iterations": 20}
DECIDED = {str(v) for v in (Verdict.WINNER, Verdict.LEADER, Verdict.EQUIVALENT, Verdict.TIE)}


def _run(tmp_path: Path, run_id: str, params: dict | None = None, **kwargs):
    return run_suite("writers", {**SMALL, **(params or {})}, profile="quick", results_dir=tmp_path / "results",
                     scratch_dir=tmp_path / "scratch", run_id=run_id, progress=None, ceiling=False, **kwargs)


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("continue")
    first = _run(tmp, "b1", budget="2s", continue_rounds=True)
    return first, _run(tmp, "b2", budget="2s", continue_rounds=True)


def _rounds_of(result) -> dict[str, int]:
    ok = result.df[(result.df["status"] == "ok") & result.df["round"].notna()]
    return {str(k): int(v) + 1 for k, v in ok.groupby("case_id")["round"].max().items()}


def test_a_second_build_goes_on_from_the_first_ones_rounds(two_builds):
    first, second = two_builds
    assert first.meta["rounds"]["builds"] == 1 and first.meta["rounds"]["continued_from"] is None
    assert first.meta["rounds"]["afresh"] == "no earlier run of the suite on this machine"
    before, after = _rounds_of(first), _rounds_of(second)
    if not before:  # a machine so loaded that the first build's budget ended before its first round
        assert second.meta["rounds"]["afresh"].startswith("starts afresh: run b1 ")
        return
    assert second.meta["rounds"]["builds"] == 2 and second.meta["rounds"]["continued_from"] == "b1"
    assert set(after) >= set(before) and all(after[c] >= before[c] for c in before)
    # the first build's rows come across as they were measured, numbered first, and say which build measured them
    df1, df2 = first.df, second.df
    carried = df2[df2[BUILD_COLUMN] == "b1"]
    assert not carried.empty and (df2["run_id"] == "b2").all()
    key = ["case_id", "operation", "round", "iteration"]
    mine = df1[df1["round"].notna() & (df1["status"] == "ok")].set_index(key)["elapsed_s"].sort_index()
    assert carried.set_index(key)["elapsed_s"].sort_index().equals(mine)
    new = df2[df2[BUILD_COLUMN].isna() & df2["round"].notna()]
    assert new.empty or new["round"].min() >= first.meta["rounds"]["rounds"]
    # a question decided in the first build is not measured again, and stays decided; an undecided one goes on
    q1 = {(q["operation"], json.dumps(q["key"], sort_keys=True)): q for q in first.meta["rounds"]["questions"]}
    q2 = {(q["operation"], json.dumps(q["key"], sort_keys=True)): q for q in second.meta["rounds"]["questions"]}
    for k, q in q1.items():
        if q["answer"] in DECIDED:
            assert q2[k]["answer"] == q["answer"] and q2[k]["decision"]["leader"] == q["decision"]["leader"]
            assert all(after[c] == before[c] for c in q["cases"] if c in before)
        elif k in q2:  # undecided: decided now, or on at least as many rounds (more where this build measured any)
            assert q2[k]["answer"] in DECIDED or q2[k]["rounds"] >= q["rounds"]
            if not new.empty and q2[k]["answer"] not in DECIDED:
                assert q2[k]["rounds"] > q["rounds"]


def test_what_differs_starts_afresh_and_says_so(two_builds, tmp_path):
    _, second = two_builds
    meta = dict(second.meta)
    env = meta["environment"]
    assert differences(meta, second.meta) == []
    assert differences(meta, {**meta, "params": {**meta["params"], "iterations": 12}}) == ["params"]
    # a commit that changes only the pages, the notebooks or the prose continues: the code that measures and decides
    # is compared by its own digest (``test_a_change_to_the_pages_alone_continues``)
    assert differences(meta, {**meta, "environment": {**env, "git_commit": "0" * 40}}) == []
    assert differences(meta, {**meta, "environment": {**env, "version_zarr": "0.0.1"}}) == ["version_zarr"]
    # a few KiB of memory more or less is the same machine; a GiB is not
    assert differences(meta, {**meta, "environment": {**env, "ram_bytes": env["ram_bytes"] + 8192}}) == []
    assert differences(meta, {**meta, "environment": {**env, "ram_bytes": env["ram_bytes"] + 2**31}}) == ["ram_bytes"]
    assert differences(meta, {**meta, "rounds": {**meta["rounds"], "code": "0" * 64}}) == ["the code"]
    run_dir = Path(second.run_dir)
    other = {**meta, "params": {**meta["params"], "iterations": 12}}
    prior, why = find_prior(run_dir.parent / "b3", other, list(_rounds_of(second)))
    assert prior is None and why == "starts afresh: params differ from run b2"
    assert afresh_words(["the code"], "b2") == "starts afresh: the code differs from run b2"
    assert afresh_words(["cpu_model", "the code"], "b2") == "starts afresh: cpu_model, the code differ from run b2"
    prior, why = find_prior(run_dir.parent / "b3", meta, list(_rounds_of(second)))
    if _rounds_of(second):
        assert prior is not None and prior.run_id == "b2" and why == "", why
        assert prior.builds == meta["rounds"]["builds"]
    else:  # neither build reached a round (a very busy machine)
        assert prior is None and why == "starts afresh: run b2 holds no rounds of this run's cases"
    assert find_prior(tmp_path / "results" / "m" / "r", meta, []) == (None, "")
    # a results directory may hold anything: a damaged run.json, newer than every run, is passed over
    broken = run_dir.parent / "zz-broken"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")
    again, why = find_prior(run_dir.parent / "b3", meta, list(_rounds_of(second)))
    assert (again is None) == (prior is None) and (again is None or again.run_id == "b2"), why
    broken.joinpath("run.json").unlink()
    broken.rmdir()


def test_a_case_with_a_point_its_backend_does_not_offer_goes_on(two_builds, tmp_path):
    """A skip row (a codec the backend does not offer) is a point of the case, not the case: its measured rounds are
    carried; a case with an error row is measured afresh."""
    import shutil

    import pandas as pd

    _, second = two_builds
    rounds = _rounds_of(second)
    if not rounds:  # neither build reached a round (a very busy machine)
        pytest.skip("no rounds recorded to carry")
    machine = tmp_path / "m"
    shutil.copytree(Path(second.run_dir), machine / "b2")
    case_id = sorted(rounds)[0]
    (record,) = (machine / "b2" / "records").glob(f"{case_id}.parquet")
    df = pd.read_parquet(record)
    skip = df.iloc[[0]].assign(status="skip", reason="it does not offer codec lz4", round=pd.NA)
    pd.concat([df, skip], ignore_index=True).to_parquet(record)
    prior, why = find_prior(machine / "b3", dict(second.meta), list(rounds))
    assert prior is not None and why == "" and case_id in prior.rows, why
    assert len(prior.rows[case_id]) == int(df["round"].notna().sum())  # its measured rows, not the skip row
    pd.concat([df, skip.assign(status="error")], ignore_index=True).to_parquet(record)
    prior, _ = find_prior(machine / "b3", dict(second.meta), list(rounds))
    assert prior is None or case_id not in prior.rows


def test_a_change_to_the_pages_alone_continues(tmp_path):
    """The code a run is continued under is what measures and decides: a change to a chapter's drawing or the book's
    pages keeps the digest (the reader's rounds go on), one to a suite, the runner or the rule changes it."""
    import shutil

    package = Path(code_fingerprint.__code__.co_filename).resolve().parents[1]
    copy = tmp_path / "benchmarks_lib"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert code_fingerprint(copy) == code_fingerprint()
    assert set(DRAWING_ONLY) == {"chapters", "book"}
    for drawing in ("chapters/style.py", "book/frontpage.py"):
        with open(copy / drawing, "a") as f:
            f.write("\n# a page drawn otherwise\n")
        assert code_fingerprint(copy) == code_fingerprint(), drawing
    for measuring in ("suites/writers/__init__.py", "run/rounds.py", "rules/decision.py"):
        before = code_fingerprint(copy)
        with open(copy / measuring, "a") as f:
            f.write("\n# measured otherwise\n")
        assert code_fingerprint(copy) != before, measuring


def test_the_books_plan_says_what_the_last_run_left_open_and_the_seed_profiles_time(two_builds):
    """Before measuring, the book says each chapter's share, its scratch and what its last run here left open (what
    a continuing build goes on with); without a budget (the seed profile), each chapter's expected time."""
    from benchmarks_lib.book.plan import BudgetShares, continues, plan_lines

    _, second = two_builds
    results = Path(second.run_dir).parent.parent
    suites = {"writers": "writers", "threads": "threads"}
    lines = plan_lines(["writers"], suites, BudgetShares(300.0, {"writers": "writers"}, "quick"), "quick", results)
    assert lines[0].startswith("plan (quick profile, a budget of 5.0 min")
    asked = [q for q in second.meta["rounds"]["questions"] if q["answer"] != "alone"]
    assert "its last run here (b2)" in lines[1], lines
    assert f"{len(asked)} questions" in lines[1] if asked else "too few rounds to ask" in lines[1], lines
    assert lines[-1].startswith("  scratch: ") and " free in " in lines[-1]
    # the plan tells a build that will go on from the last run from one that starts afresh, and plans it so
    assert continues(second.meta)
    assert not continues({**second.meta, "rounds": {**second.meta["rounds"], "code": "other"}})
    assert continues({**second.meta, "environment": {**second.meta["environment"], "git_commit": "0" * 40}})
    fresh = plan_lines(["writers"], suites, BudgetShares(300.0, {"writers": "writers"}, "quick"), "quick", results,
                       fresh=True)
    assert fresh[1].endswith("; this build starts afresh (--fresh)"), fresh
    seed = plan_lines(list(suites), suites, BudgetShares(None, {}, "seed"), "seed", results)
    assert seed[0].startswith("plan (seed profile, no budget: about ") and "in all" in seed[0], seed
    assert all(" of scratch at once" in line and ": about " in line for line in seed[1:3]), seed


def test_the_book_shares_its_budget_by_what_each_chapter_needs(two_builds):
    """Each run keeps what it spent before its rounds and each round's time; the next book plans each chapter's share
    by what its last run here needs to reach its next look, and says so before measuring, with the budget that would
    reach every look where this one does not."""
    from benchmarks_lib.book.plan import NEED_MARGIN, BudgetShares, newest_run, plan_lines, prior_need

    _, second = two_builds
    rounds = second.meta["rounds"]
    assert rounds["before_s"] >= 0 and rounds["opened_s"] >= 0 and "measured_s" not in second.meta
    own = second.df[BUILD_COLUMN].isna() if BUILD_COLUMN in second.df else True  # none carried on a loaded machine
    new = second.df[own & second.df["round"].notna()]
    assert len(rounds["rounds_s"]) == new["round"].nunique() and all(x > 0 for x in rounds["rounds_s"])
    results = Path(second.run_dir).parent.parent
    assert newest_run(results, "writers", "quick")[0].name == "b2"
    assert newest_run(results, "threads", "quick") is None and newest_run(results, "writers", "standard") is None
    # a worked example: 3 s before the rounds, 1 s opening; from scratch, eight rounds at the second round's 4 s;
    # continuing from round 9 with a question open, to the look at 12 at the last round's 2 s; all decided: none
    meta = {"rounds": {"before_s": 3.0, "opened_s": 1.0, "rounds_s": [9.0, 4.0, 2.0], "rounds": 9,
                       "questions": [{"answer": "open"}, {"answer": "winner"}]}}
    assert prior_need(meta, continuing=False) == pytest.approx(NEED_MARGIN * (4 + 8 * 4))
    assert prior_need(meta, continuing=True) == pytest.approx(NEED_MARGIN * (4 + 3 * 2))
    decided = {"rounds": {**meta["rounds"], "questions": [{"answer": "winner"}]}}
    assert prior_need(decided, continuing=True) == pytest.approx(NEED_MARGIN * 4)
    versions = {**meta, "params": {"versions": ["zarr==2.18.7,3.1.6"]}}  # a run of versions never continues
    assert prior_need(versions, continuing=True) == prior_need(meta, continuing=False)
    # a run that itself continued measured only what its open questions needed: no measure of a build from scratch
    went_on = {"rounds": {**meta["rounds"], "continued_from": "b0"}}
    assert prior_need(went_on, continuing=False) is None
    assert prior_need(went_on, continuing=True) == prior_need(meta, continuing=True)
    for broken in ({}, {"rounds": []}, {"rounds": {"rounds_s": []}}, {"rounds": {**meta["rounds"], "before_s": "x"}},
                   {"rounds": {**meta["rounds"], "rounds_s": 7}}):
        assert prior_need(broken, continuing=True) is None
    # shares by need: the chapter that needs more gets more; a budget below the needs says which and what would do
    suites = {"writers": "writers", "threads": "threads"}
    shares = BudgetShares(150.0, suites, "quick", needs={"writers": 200.0, "threads": None})
    assert shares.measured == {"writers"} and shares.needs["threads"] == get_suite("threads").time_budget_s["quick"]
    assert shares.preview("writers") > shares.preview("threads")
    # the chapter that needs least runs first; one without a share after those with one
    assert shares.in_order(["seeds", "writers", "threads"]) == ["threads", "writers", "seeds"]
    lines = plan_lines(list(suites), suites, shares, "quick", results)
    assert "(its next look needs about 3.3 min, by its last run here)" in lines[1], lines
    assert "by its stated time)" in lines[2], lines
    assert lines[3].startswith("  this budget falls short of the next look of writers and threads: about "), lines
    assert f"(--budget {math.ceil(shares.wanted())})" in lines[3], lines
    roomy = BudgetShares(3600.0, suites, "quick", needs={"writers": 200.0, "threads": None})
    assert plan_lines(list(suites), suites, roomy, "quick", results)[3] == \
        "  this budget reaches every chapter's next look by the stated times of threads (no need of theirs measured " \
        "here): a machine slower than the one they were measured on may fall short"
    known = BudgetShares(3600.0, suites, "quick", needs={"writers": 200.0, "threads": 20.0})
    assert plan_lines(list(suites), suites, known, "quick", results)[3] == \
        "  this budget reaches every chapter's next look on this machine (by their last runs here)"
    stated = BudgetShares(3600.0, suites, "quick")
    assert plan_lines(list(suites), suites, stated, "quick", results)[3].endswith(
        "next look by their suites' stated times: a machine slower than the one they were measured on may fall short")


def test_what_the_chapters_leave_of_the_budget_goes_on_with_the_questions_it_ended(two_builds):
    """What a book's chapters leave of its budget goes to another pass of those whose budget ended questions that a
    later look can decide, least need first, as far as it reaches each one's next look (a continued standard book
    left 13 of its 30 minutes unused with 13 questions open)."""
    from benchmarks_lib.book.plan import (
        NEED_MARGIN,
        NOTEBOOK_OVERHEAD_S,
        BudgetShares,
        open_needs,
        pass_line,
        pass_need,
    )

    code = code_fingerprint()
    ended = {"rounds": {"before_s": 3.0, "opened_s": 1.0, "rounds_s": [9.0, 4.0, 2.0], "rounds": 9, "code": code,
                        "questions": [{"answer": "budget spent"}, {"answer": "winner"}, {"answer": "alone"}]}}
    assert pass_need(ended) == pytest.approx(NEED_MARGIN * (4 + 3 * 2))  # to the look at 12 at its last round's 2 s
    given_up = {"rounds": {**ended["rounds"], "questions": [{"answer": "left out"}]}}
    assert pass_need(given_up) == pass_need(ended)
    for other in ({"answer": "winner"}, {"answer": "tie"}, {"answer": "alone"},  # decided, or nothing to decide
                  {"answer": "build's rounds measured"}, {"answer": "not looked at"}):  # its parameters' rounds
        assert pass_need({"rounds": {**ended["rounds"], "questions": [other]}}) is None, other
    assert pass_need({"rounds": {**ended["rounds"], "rounds": CAP}}) is None
    assert pass_need({"rounds": {**ended["rounds"], "code": "other"}}) is None
    assert pass_need({**ended, "params": {"versions": ["zarr==2.18.7,3.1.6"]}}) is None
    for broken in ({}, {"rounds": None}, {"rounds": {**ended["rounds"], "questions": "x"}},
                   {"rounds": {**ended["rounds"], "rounds": "9"}}):
        assert pass_need(broken) is None
    # the runs of this build only, where they finished: the newest run here, not an earlier one
    _, second = two_builds
    results = Path(second.run_dir).parent.parent
    assert open_needs(results, {"writers": "b1"}, {"writers": "writers"}, "quick") == {}
    assert open_needs(results, {"writers": "b2"}, {"writers": "writers"}, "quick") == (
        {"writers": pass_need(second.meta)} if pass_need(second.meta) is not None else {})
    # what is left, shared by the chapters it reaches, least need first
    shares = BudgetShares(300.0, {"writers": "writers", "threads": "threads"}, "quick", reading=2)
    shares.left = 100.0
    again = shares.another_pass({"writers": 50.0, "threads": 30.0, "cache": 80.0})
    assert again is not None and again.needs == {"threads": 30.0} and again.budget == 100.0
    # threads (30 + its notebook's 9 s) leaves 51 s, short of writers' 59 s; what the reading notebooks need is kept
    assert again.preview("threads") == pytest.approx(100.0 - 2 * 5.0 - NOTEBOOK_OVERHEAD_S)
    assert shares.another_pass({"writers": 95.0}) is None
    assert BudgetShares(None, {}, "quick").another_pass({"writers": 1.0}) is None
    assert pass_line(2, ["threads"], again) == "pass 2: 100 s of the budget left; threads goes on with its open " \
                                               "questions"


def test_a_pass_goes_first_to_the_chapters_whose_front_page_questions_are_open(tmp_path):
    """The budget a pass shares goes first to a chapter whose run leaves a front-page question open, whatever its
    need, then to those whose open questions are drawn only in their pages (a standard book gave its last 2.2
    minutes to compression's other datasets and left 4 of the writers' front-page questions open)."""
    from benchmarks_lib.book.plan import NOTEBOOK_OVERHEAD_S, BudgetShares, front_page_open

    suites = {"writers": "writers"}
    few = _run(tmp_path / "few", "few", {"iterations": 2})  # two rounds, below the first look: Write is open
    results = Path(few.run_dir).parent.parent
    assert front_page_open(results, {"writers": "few"}, suites, "quick", ["writers"]) == {"writers"}
    assert front_page_open(results, {"writers": "other"}, suites, "quick", ["writers"]) == set()  # not this build's
    assert front_page_open(results, {"writers": "few"}, suites, "quick", []) == set()
    one = _run(tmp_path / "one", "one", {"iterations": 2, "backends": ["zarr-python"]})  # one writer: none to rank
    assert front_page_open(Path(one.run_dir).parent.parent, {"writers": "one"}, suites, "quick", ["writers"]) == set()
    shares = BudgetShares(300.0, {"writers": "writers", "threads": "threads"}, "quick", reading=2)
    shares.left = 100.0
    needs = {"writers": 50.0, "threads": 30.0}
    assert shares.another_pass(needs).needs == {"threads": 30.0}  # least need first
    again = shares.another_pass(needs, first={"writers"})  # writers (50 + 9 s of its notebook) leaves 31 s: short
    assert again.needs == {"writers": 50.0}  # of threads' 39
    assert again.preview("writers") == pytest.approx(100.0 - 2 * 5.0 - NOTEBOOK_OVERHEAD_S)


def test_builds_go_on_past_one_builds_rounds_to_the_cap(tmp_path, monkeypatch):
    """A build without a time budget measures at most one build's rounds (``BUILD_ROUNDS``, here 5: below the first
    look, so that no question can be decided in the first build) and leaves what it did not decide open for the
    next, which goes on from there under the same looks, towards the cap over all builds (40 here, the rule's)."""
    from benchmarks_lib.run import rounds

    monkeypatch.setattr(rounds, "BUILD_ROUNDS", 5)
    monkeypatch.delitem(get_suite("writers").time_budget_s, "quick")  # no budget: the build's rounds end it
    first = _run(tmp_path, "b1", {"iterations": CAP}, continue_rounds=True)
    meta = first.meta["rounds"]
    assert meta["stopped"] == "this build's 5 rounds measured, at round 5" and meta["rounds"] == 5
    assert {q["answer"] for q in meta["questions"]} == {"build's rounds measured"}
    assert all(q["decision"] is None or q["decision"]["verdict"] == "open" for q in meta["questions"])
    second = _run(tmp_path, "b2", {"iterations": CAP}, continue_rounds=True)
    meta = second.meta["rounds"]
    assert meta["continued_from"] == "b1" and meta["builds"] == 2
    for q in meta["questions"]:  # looked at round 8 over both builds' rounds; else open at this build's end, 10
        if q["answer"] in DECIDED:
            assert q["decision"]["stops"] == q["rounds"] == 8 and q["decision"]["cap"] == CAP
        else:
            assert q["answer"] == "build's rounds measured" and q["rounds"] == 10
            assert "next look at round 12 (a later build goes on from here)" in q["decision"]["words"]
    assert max(_rounds_of(second).values()) <= 10
    # with a time budget the budget ends a build, not one build's rounds
    monkeypatch.setitem(get_suite("writers").time_budget_s, "quick", 60.0)
    third = _run(tmp_path, "b3", {"iterations": CAP}, continue_rounds=True)
    assert "rounds measured" not in third.meta["rounds"]["stopped"]
    assert all(q["answer"] != "build's rounds measured" for q in third.meta["rounds"]["questions"])


def test_a_run_of_fixed_iterations_is_planned_by_the_time_it_took(workdir):
    """A suite measured in no rounds (parallel; here the ceiling on its own) records the seconds one session took to
    measure it whole, and the next book weighs its share by them (the plan went by parallel's stated time alone: 12 s,
    where its runs took 20-25 s); measured again from nothing, the new time; a run of rounds records none (its rounds
    say it)."""
    from benchmarks_lib.book.plan import NEED_MARGIN, prior_need
    from benchmarks_lib.records.store import read_run_json

    params = {"nbytes": "1MiB", "iterations": 1, "warmups": 0}
    first = run_suite("ceiling", params, results_dir="results", run_id="c1", progress=None)
    took = read_run_json(Path(first.run_dir) / "run.json")["measured_s"]
    assert took > 0 and "rounds" not in first.meta
    assert prior_need(first.meta, continuing=True) == pytest.approx(NEED_MARGIN * took)
    assert prior_need(first.meta, continuing=False) == pytest.approx(NEED_MARGIN * took)
    meta_path = Path(first.run_dir) / "run.json"
    meta_path.write_text(json.dumps({**read_run_json(meta_path), "measured_s": 999.0}))
    next(Path(first.run_dir, "records").glob("*.parquet")).unlink()  # its one case measured again, whole
    run_suite("ceiling", params, results_dir="results", run_id="c1", progress=None)
    assert 0 < read_run_json(meta_path)["measured_s"] < 999.0
    for broken in ("x", -1.0, float("nan"), None, [3]):
        assert prior_need({"measured_s": broken}, continuing=True) is None
