"""The upgrades suite: the writers' own cases under a suite of their own, each library at several versions (each in
an environment of its own), the versions of one library the contenders of one question, in the same rounds.

The toy library of ``test_run_versions`` (wheels of versions 1.0 and 2.0, installed by uv with no index) is measured
for real; the chapter reads the run."""

from __future__ import annotations

import json

from test_run_versions import TOY_BACKEND, TOY_DIST, toy_env, toy_index  # noqa: F401 - the fixtures

from benchmarks_lib.run.runner import resolve_params
from benchmarks_lib.suites import get_suite
from benchmarks_lib.suites.upgrades import SUITE, VERSIONS


def test_its_cases_are_the_writers_own_under_its_name():
    params = {k: v for k, v in resolve_params("upgrades", None, "quick").items()
              if k not in ("iterations", "warmups", "versions")}
    mine = SUITE.build_cases(params, "quick")
    theirs = get_suite("writers").build_cases(params, "quick")
    assert [c.params for c in mine] == [c.params for c in theirs] and {c.suite for c in mine} == {"upgrades"}
    assert not {c.case_id for c in mine} & {c.case_id for c in theirs}
    assert resolve_params("upgrades", None, "quick")["versions"] == VERSIONS
    assert {c.params["test"] for c in mine} == {"write", "read"}  # a write, a cold read, cold cutouts


def test_each_library_is_a_question_of_its_versions_measured_in_the_same_rounds(toy_env, workdir):  # noqa: F811
    from benchmarks_lib.chapters import upgrades
    from benchmarks_lib.run.runner import run_suite

    result = run_suite("upgrades", {**SUITE.smoke, "backends": [TOY_BACKEND], "tests": ["write"], "iterations": 8,
                                    "warmups": 1, "versions": [f"{TOY_DIST}==1.0,2.0"]},
                       profile="quick", results_dir=workdir / "results", scratch_dir=workdir / "scratch",
                       run_id="up", ceiling=False, progress=None, assume_yes=True, budget="10m")
    df = result.df
    assert set(df["suite"]) == {"upgrades"} and not (df["status"] == "error").any()
    questions = json.loads((result.run_dir / "run.json").read_text())["rounds"]["questions"]
    assert questions and all(q["key"]["backend"] == TOY_BACKEND for q in questions)
    assert {tuple(q["contenders"]) for q in questions} == {(f"{TOY_BACKEND} 1.0", f"{TOY_BACKEND} 2.0")}
    table = upgrades.summary(df)  # the chapter: the older version's time over the newest's, paired by round
    assert len(table) and set(table["version"]) == {"1.0"} and set(table["newest"]) == {"2.0"}
    assert (table["n"] >= 8).all() and upgrades.resolve_runs(None, workdir / "results") == [result.run_dir]
