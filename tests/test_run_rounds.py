"""Measuring in rounds (``run/rounds.py``): every open case of the run once per round in a shuffled order, set up
once, each question stopped once answered, within the run's budget; a crash, a timeout and a kill -9 lose no
measured round."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from benchmarks_lib.base.specs import SpecError, parse_duration
from benchmarks_lib.records.store import load_run
from benchmarks_lib.rules.decision import LOOKS, Verdict, decision_from_record
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites import get_suite

SMOKE = get_suite("writers").smoke
SMALL = {**SMOKE, "tests": ["write", "read"], "multipliers": [1], "warmups": 1}


def _run(tmp_path: Path, params: dict, run_id: str = "r", **kwargs):
    return run_suite("writers", params, profile="quick", results_dir=tmp_path / "results",
                     scratch_dir=tmp_path / "scratch", run_id=run_id, progress=None, ceiling=False, **kwargs)


@pytest.fixture(scope="module")
def nine_rounds(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("rounds"), {**SMALL, "iterations": 9})


def test_every_open_case_is_measured_once_a_round_in_a_fresh_order(nine_rounds):
    df = nine_rounds.df
    measured = df[df["status"] == "ok"]
    assert measured["round"].notna().all() and (measured["iteration"] == measured["round"]).all()
    cases = measured.groupby("case_id")["round"].agg(lambda r: sorted(set(r)))
    assert all(rounds == list(range(len(rounds))) for rounds in cases)  # no round skipped
    # a round's positions are a permutation of the cases measured in it, and the orders differ between rounds
    orders = []
    for _, part in measured.drop_duplicates(["case_id", "round"]).groupby("round"):
        assert sorted(part["round_position"]) == list(range(len(part)))
        orders.append(tuple(part.sort_values("round_position")["case_id"]))
    assert len(set(orders)) > 1
    rounds = nine_rounds.meta["rounds"]
    assert rounds["seed"] and rounds["looks"] == list(LOOKS) and rounds["questions"]
    # a verdict of the one rule (a tie at the run's cap of 9), or why a question was not decided
    verdicts = {str(v) for v in Verdict if v is not Verdict.OPEN}
    assert {q["answer"] for q in rounds["questions"]} <= verdicts | {"alone", "not looked at", "budget spent",
                                                                     "left out"}
    for q in rounds["questions"]:
        decision = q["decision"]
        if q["answer"] in verdicts - {"alone", "tie"}:  # decided at the first look or at the cap (its last look)
            assert decision["verdict"] == q["answer"] and decision["stops"] == q["rounds"] in (8, 9)
            assert q["why"] == f"decided at round {q['rounds']}" and decision["words"]
        if decision is not None:
            assert decision_from_record(decision) is not None
            assert sorted(decision["contenders"]) == sorted(q["contenders"])
    assert df["rounds_stop"].notna().all()
    # the machine's load around each step: the worker's own CPU is not counted as other processes' (at most 100%)
    assert measured["other_cpu_pct"].notna().all() and measured["other_cpu_pct"].max() <= 101
    assert not any((Path(nine_rounds.run_dir) / "partial").iterdir())  # every case's rounds are in its record


def test_the_same_run_id_is_shuffled_the_same_way(tmp_path):
    from benchmarks_lib.run.rounds import round_seed

    assert round_seed("a") == round_seed("a") != round_seed("b")


def test_the_ranking_pairs_rows_measured_in_rounds(nine_rounds):
    from benchmarks_lib.rules.ranking import rank_against_leader

    df = nine_rounds.df
    rankings = rank_against_leader(df[df["operation"] == "total"], "elapsed_s", higher=False)
    assert rankings and all(r.paired and r.why for r in rankings)
    for r in rankings:
        for e in r.others:
            assert e.vs_leader.paired and e.vs_leader.n_a == e.n and 8 <= e.n <= 9  # answered at 8, or the cap
            # at a look its level; at 9 (no look) the count at the first look's level
            assert e.vs_leader.separable is None or 0 < e.vs_leader.coverage < 1


def test_a_question_stops_at_its_first_look_once_answered(tmp_path):
    """Two contenders 8 rounds apart: a question answered at a look (the first, mostly) closes its cases there (the
    cap of 20 is not reached); the rows say why."""
    result = _run(tmp_path, {**SMALL, "backends": ["raw", "zarr-python", "tensorstore"], "iterations": 20})
    questions = result.meta["rounds"]["questions"]
    decided = ("winner", "leader", "equivalent")
    answered = [q for q in questions if q["answer"] in decided]
    assert any(q["rounds"] < 20 for q in answered), questions  # one at least stopped before the cap
    for q in answered:
        assert q["rounds"] in LOOKS and q["why"] == f"decided at round {q['rounds']}"
        assert q["decision"]["verdict"] == q["answer"] and q["decision"]["stops"] == q["rounds"]
        assert q["leader"] == q["decision"]["leader"] and q["leader"] in q["contenders"]
    df = result.df
    for case_id, part in df[df["backend"] != "raw"].groupby("case_id"):
        mine = [q for q in questions if case_id in q["cases"]]
        if mine and all(q["answer"] in decided for q in mine):
            assert part["round"].max() + 1 == max(q["rounds"] for q in mine)
    raw = df[df["backend"] == "raw"]  # a baseline answers no question: it stops at the first look
    assert raw["round"].max() + 1 == 8


def test_a_run_keeps_to_its_budget_and_says_where_it_stopped(tmp_path):
    """The rounds get what the ceiling left of the budget, and no round starts that the time left cannot carry: the
    last one started within the budget (by the run's own clock: its set-up and rounds so far), and the rows say
    why it stopped. Nothing here depends on how fast the machine is (on a busy one the run stops sooner)."""
    from benchmarks_lib.run.rounds import FIRST_LOOK_GRACE

    result = _run(tmp_path, {**SMALL, "backends": ["raw", "zarr-python", "tensorstore"], "iterations": 20,
                             "dims": "t:8,y:256:128,x:256"}, budget="6s")
    rounds = result.meta["rounds"]
    stop = rounds["stopped"]
    assert stop.startswith("this build's time ended at round") or stop == ""
    assert rounds["budget_s"] <= 6 <= rounds["budget_s"] + rounds["before_s"] + 0.01  # what the ceiling left
    if stop:
        last_started = rounds["opened_s"] + sum(rounds["rounds_s"][:-1])
        grace = FIRST_LOOK_GRACE if rounds["rounds"] - 1 < rounds["looks"][0] else 0.0  # below the first look
        assert last_started <= rounds["budget_s"] * (1 + grace), rounds
        assert result.df["rounds_stop"].str.contains("this build's time ended").any()


def test_budgets_are_durations():
    assert parse_duration("2m", "budget") == 120 and parse_duration("90", "budget") == 90
    assert parse_duration("1.5h", "budget") == 5400 and parse_duration(30, "budget") == 30
    for bad in ("soon", "2 minutes", "-5s", "0", True, None, "nan"):
        with pytest.raises(SpecError, match="budget"):
            parse_duration(bad, "budget")


def test_a_bad_budget_is_one_line_and_creates_nothing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchmarks_lib", "run", "writers", "--budget", "tomorrow",
                           "--results-dir", str(tmp_path / "results"), "--scratch-dir", str(tmp_path / "scratch")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "budget 'tomorrow'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "scratch").exists()


def test_a_crash_ends_its_case_and_the_other_cases_of_its_worker_go_on(tmp_path, plugin_env):
    """``crashlater`` segfaults at its third store in a process: in round 1 its write case's worker dies; the write
    case keeps its round 0 and gets an error row; its read case, open in the same worker, is set up again in a fresh
    one and measures every round."""
    result = _run(tmp_path, {**SMALL, "backends": ["crashlater"], "warmups": 0, "iterations": 4})
    df = result.df
    write, read = df[df["test"] == "write"], df[df["test"] == "read"]
    errors = write[write["status"] == "error"]
    assert len(errors) == 1 and "signal" in errors["reason"].iloc[0]
    assert set(write.loc[write["status"] == "ok", "round"]) == {0}
    assert (read["status"] == "ok").all() and set(read["round"]) == {0, 1, 2, 3}


def test_a_killed_run_loses_no_measured_round_and_a_resume_finishes_it(tmp_path):
    """kill -9 in the middle of the rounds: the rows measured so far are in ``partial/`` (a JSON line each); the
    resumed run keeps them in ``interrupted/`` and measures the open cases again."""
    params = json.dumps({**SMALL, "backends": ["raw", "zarr-python"], "iterations": 20,
                         "dims": "t:8,y:256:128,x:256"})
    code = (f"from benchmarks_lib.run.runner import run_suite; import json; "
            f"run_suite('writers', json.loads({params!r}),"
            f" profile='quick', results_dir={str(tmp_path / 'results')!r}, scratch_dir={str(tmp_path / 'scratch')!r},"
            " run_id='killed', progress=None, ceiling=False, budget=600)")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    partial = next(iter((tmp_path / "results").glob("*/killed")), tmp_path) / "partial"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(
            p.stat().st_size > 0 for p in (partial.glob("*.jsonl") if partial.is_dir() else [])):
        time.sleep(0.2)
        partial = next(iter((tmp_path / "results").glob("*/killed")), tmp_path) / "partial"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = {p.name: p.read_text() for p in partial.glob("*.jsonl")}
    assert kept and all(json.loads(line)["round"] >= 0 for text in kept.values() for line in text.splitlines())
    result = _run(tmp_path, json.loads(params), run_id="killed", budget=600)
    interrupted = list((result.run_dir / "interrupted").glob("*/*.jsonl"))
    assert {p.name for p in interrupted} == set(kept)
    assert all(p.read_text().startswith(kept[p.name][:50]) for p in interrupted)  # kept, not rewritten
    df, meta = load_run(result.run_dir)
    assert meta.get("finished_at") and (df["status"] == "ok").any() and not list(partial.glob("*.jsonl"))
    assert isinstance(df, pd.DataFrame)


def test_show_lists_each_questions_rounds_and_why(nine_rounds, capsys):
    from benchmarks_lib.cli.main import main

    assert main(["show", nine_rounds.run_dir.name, "--results-dir", str(nine_rounds.run_dir.parent.parent)]) == 0
    out = capsys.readouterr().out
    assert "Rounds:" in out and "question(s)" in out and "cold read" in out


def test_a_hostile_rounds_record_is_data():
    """run.json comes from anyone: its rounds' strings are escaped, wrong types are left out, nothing raises."""
    from benchmarks_lib.base.markup import md
    from benchmarks_lib.rules.words import rounds_table

    meta = {"rounds": {"questions": [
        {"operation": "<script>x</script>", "key": {"dataset": "[a](javascript:1)"}, "contenders": ["a", "b"],
         "rounds": 12, "answer": "*separated*", "why": "<b>why</b>"},
        "not a question", {"key": "not a dict", "rounds": "twelve", "cases": 3}]}}
    table = rounds_table(meta, md)
    assert len(table) == 2 and table["contenders"].iloc[0] == 2 and pd.isna(table["rounds"].iloc[1])
    text = table.to_string()
    assert "<script>" not in text and "<b>" not in text and "](javascript" not in text
    assert rounds_table({"rounds": "nonsense"}).empty and rounds_table({}).empty


def test_below_the_first_look_the_dearest_questions_are_left_out_so_the_cheaper_reach_it(tmp_path):
    """The planner (``RoundsExecutor._plan``) on a run whose rounds cannot all reach the first look: the optional
    cases go first, then the dearest questions, never the cheapest; after the first look it gives questions up."""
    from benchmarks_lib.run.rounds import Asked, RoundsExecutor
    from benchmarks_lib.suites import get_suite

    cases = {c.case_id: c for c in get_suite("writers").build_cases({**SMALL, "backends": ["raw", "h5py"]}, "quick")}
    ids = sorted(cases)
    ex = RoundsExecutor(tmp_path, timeline=None, seed=1)
    ex._state, ex._qrows = {c: {} for c in ids}, []
    ex._steps = {ids[0]: [3.0], ids[1]: [3.0], ids[2]: [0.5], ids[3]: [0.5]}
    dear = ex.questions["dear"] = Asked("writers", "total", {}, {ids[0], ids[1]})
    cheap = ex.questions["cheap"] = Asked("writers", "read_cold", {}, {ids[2], ids[3]})
    ex.rounds_done = 2
    out = ex._plan(left_s=10.0, cap=20, by_id=cases)  # 6 rounds of 7 s do not fit 10 s; of 1 s, they do
    assert sorted(c for c, _ in out) == [ids[0], ids[1]] and dear.answer == "left out" and not cheap.closed
    assert all("left out at round 2" in why for _, why in out) and len(ex.left_out) == 2
    ex.questions.pop("dear")
    ex._state = {ids[2]: {}, ids[3]: {}}
    assert ex._plan(left_s=1.0, cap=20, by_id=cases) == [] and not cheap.closed  # the cheapest measures on
    ex.rounds_done = 8
    out = ex._plan(left_s=1.0, cap=20, by_id=cases)  # after the first look: given up
    assert cheap.answer == "budget spent" and sorted(c for c, _ in out) == [ids[2], ids[3]]


def test_a_round_is_planned_at_a_cases_mean_cost_not_its_last(tmp_path):
    """A step dearer every few rounds (the sharding sweep writes its layouts whole every ``SWEEP_EVERY`` rounds) is
    planned at its share: the mean of the rounds after the first (which pays once for a whole read-back), so that
    the planner does not leave a question out because the last round was a dear one."""
    from benchmarks_lib.run.rounds import Asked, RoundsExecutor
    from benchmarks_lib.suites import get_suite

    cases = {c.case_id: c for c in get_suite("writers").build_cases({**SMALL, "backends": ["raw", "h5py"]}, "quick")}
    ids = sorted(cases)
    ex = RoundsExecutor(tmp_path, timeline=None, seed=1)
    ex._state, ex._qrows = {c: {} for c in ids}, []
    ex._steps = {ids[0]: [9.0, 1.0, 1.0, 1.0, 5.0], ids[1]: [2.0], ids[2]: [0.1], ids[3]: [0.1]}
    assert ex._cost(ids[0]) == 2.0 and ex._cost(ids[1]) == 2.0 and ex._cost("never measured") == 0.0
    dear = ex.questions["dear"] = Asked("writers", "total", {}, {ids[0], ids[1]})
    cheap = ex.questions["cheap"] = Asked("writers", "read_cold", {}, {ids[2], ids[3]})
    ex.rounds_done = 5
    # 3 rounds to the first look at 4.2 s: 12.6 s fit 13 s (at the last round's 7.2 s they would not)
    assert ex._plan(left_s=13.0, cap=20, by_id=cases) == [] and not dear.closed
    assert sorted(c for c, _ in ex._plan(left_s=12.0, cap=20, by_id=cases)) == ids[:2] and not cheap.closed


def test_below_the_first_look_a_case_in_no_question_goes_before_any_question_and_a_baseline_stays(tmp_path):
    """A case that answers no question (a sweep drawn as a figure) and is dear is left out before the planner gives
    up a question; the raw baseline, in no question either, is kept (the standard compression run's em_like sweep
    once took the whole budget below the first look and left 5 of 6 questions out)."""
    from benchmarks_lib.run.rounds import Asked, RoundsExecutor
    from benchmarks_lib.suites import get_suite

    cases = {c.case_id: c for c in get_suite("writers").build_cases({**SMALL, "backends": ["raw", "h5py"]}, "quick")}
    h5_read, h5_write, raw_read, raw_write = sorted(cases)
    ex = RoundsExecutor(tmp_path, timeline=None, seed=1)
    ex._state, ex._qrows = {c: {} for c in cases}, []
    ex._steps = {h5_read: [0.5], h5_write: [3.0], raw_read: [0.5], raw_write: [0.5]}
    asked = ex.questions["asked"] = Asked("writers", "read_cold", {}, {h5_read, raw_read})
    ex.rounds_done = 2
    out = ex._plan(left_s=12.0, cap=20, by_id=cases)  # 6 rounds of 4.5 s do not fit 12 s; without h5_write they do
    assert [c for c, _ in out] == [h5_write] and not asked.closed
    assert "left out at round 2" in out[0][1] and len(ex.left_out) == 1


def test_a_case_in_no_question_closes_at_six_rounds_and_the_planner_counts_it_so(tmp_path):
    """A case that answers no question closes at ``UNASKED_ROUNDS`` (6: its median's 95% interval), not at the first
    look, and a baseline in none at the first look; the planner counts its rounds to 6 (here 4 rounds of 3 s left,
    not 6, so everything fits 15 s)."""
    from benchmarks_lib.run.rounds import UNASKED_ROUNDS, Asked, RoundsExecutor
    from benchmarks_lib.suites import get_suite

    assert UNASKED_ROUNDS == 6
    cases = {c.case_id: c for c in get_suite("writers").build_cases({**SMALL, "backends": ["raw", "h5py"]}, "quick")}
    h5_read, h5_write, raw_read, raw_write = sorted(cases)
    ex = RoundsExecutor(tmp_path, timeline=None, seed=1)
    ex._state, ex._qrows = {c: {} for c in cases}, []
    ex._steps = {h5_read: [0.1], h5_write: [3.0], raw_read: [0.1], raw_write: [0.1]}
    ex.questions["asked"] = Asked("writers", "read_cold", {}, {h5_read, raw_read})
    ex.rounds_done = 2
    assert ex._plan(left_s=15.0, cap=20, by_id=cases) == []  # 4 x 3.0 + 6 x 0.3 = 13.8 s
    ex.rounds_done = UNASKED_ROUNDS
    ex._baselines = {raw_read, raw_write}
    assert ex._answered(h5_write, 20) and not ex._answered(h5_read, 20) and not ex._answered(raw_write, 20)


def test_a_question_given_up_closes_its_cases_with_it_and_the_cheaper_question_goes_on(tmp_path):
    """When the next look of every open question does not fit, the dearest question is given up ("left out") and its
    case closes with it (measuring it on would eat the budget of the question kept: a standard cache run once
    stopped at round 7 so); the cheaper question goes on."""
    from benchmarks_lib.run.rounds import Asked, RoundsExecutor
    from benchmarks_lib.suites import get_suite

    cases = {c.case_id: c for c in get_suite("writers").build_cases({**SMALL, "backends": ["raw", "h5py"]}, "quick")}
    h5_read, h5_write, raw_read, raw_write = sorted(cases)
    ex = RoundsExecutor(tmp_path, timeline=None, seed=1)
    ex._state, ex._qrows = {c: {} for c in cases}, []
    ex._steps = {h5_read: [0.5], h5_write: [3.0], raw_read: [0.5], raw_write: [0.1]}
    big = ex.questions["big"] = Asked("writers", "total", {}, {h5_write})
    small = ex.questions["small"] = Asked("writers", "read_cold", {}, {h5_read, raw_read})
    ex.rounds_done = 2
    assert ex._plan(left_s=25.0, cap=20, by_id=cases) == []  # 6 x (3.0 + 1.0 + 0.1) = 24.6 s
    out = ex._plan(left_s=20.0, cap=20, by_id=cases)
    assert [c for c, _ in out] == [h5_write] and not small.closed
    assert big.answer == "left out" and "left out at round 2" in big.why


def test_a_case_that_left_a_question_is_not_its_cost_and_says_when_it_left(tmp_path):
    """A contender separated from the leader leaves the question (``Asked.left``, with the round it left at): the
    question needs its case no more, the planner does not count the case's time as the question's (giving up the
    question would save none of it), and the case, once no question needs it, says the round it left at."""
    from benchmarks_lib.run.rounds import Asked, RoundsExecutor
    from benchmarks_lib.suites import get_suite

    cases = {c.case_id: c for c in get_suite("writers").build_cases({**SMALL, "backends": ["raw", "h5py"]}, "quick")}
    h5_read, h5_write, raw_read, raw_write = sorted(cases)
    ex = RoundsExecutor(tmp_path, timeline=None, seed=1)
    ex._state, ex._qrows = {c: {} for c in cases}, []
    ex._steps = {h5_read: [3.0], h5_write: [0.5], raw_read: [0.5], raw_write: [0.5]}
    # h5_read left the race at round 8; it is still in the other question, which is open
    race = ex.questions["race"] = Asked("writers", "read_cold", {}, {h5_read, raw_read, raw_write},
                                        left={h5_read: 8})
    other = ex.questions["other"] = Asked("writers", "total", {}, {h5_read, h5_write})
    assert not race.needs(h5_read) and race.needs(raw_read) and other.needs(h5_read)
    ex.rounds_done = 12
    # to the next look (16): 4 rounds of 4.5 s do not fit 10 s; the race costs 1.0 s a round, the other 3.5 s
    out = ex._plan(left_s=10.0, cap=20, by_id=cases)
    assert sorted(c for c, _ in out) == sorted([h5_read, h5_write]) and other.answer == "budget spent"
    assert not race.closed  # the cheaper question reaches its next look
    ex.questions["other"] = Asked("writers", "total", {}, {h5_read, h5_write}, answer="winner",
                                  why="decided at round 12")
    assert ex._answered(h5_read, 20) and not ex._answered(raw_read, 20)
    assert ex._why(h5_read) == "decided at round 12; out at round 8"


def test_below_the_first_look_a_run_may_go_half_its_budget_past_it(tmp_path):
    """A question left below its first look has measured nothing a reader can use: a run slower than its plan goes
    up to ``FIRST_LOOK_GRACE`` of its budget past it to bring its questions there; from the first look on, the
    budget is the budget; without one, there is no deadline."""
    from benchmarks_lib.run.rounds import FIRST_LOOK_GRACE, RoundsExecutor

    ex = RoundsExecutor(tmp_path, timeline=None, seed=1, budget_s=60.0)
    assert FIRST_LOOK_GRACE == 0.5
    for done, until in ((0, 190.0), (7, 190.0), (8, 160.0), (12, 160.0)):
        ex.rounds_done = done
        assert ex._until(100.0, cap=20) == until, done
    ex.rounds_done = 4
    assert ex._until(100.0, cap=4) == 160.0  # a cap below the first look: the budget is the budget
    assert RoundsExecutor(tmp_path, timeline=None, seed=1)._until(100.0, cap=20) == math.inf
