"""One ceiling per book (``run/shared_ceiling.py``): a run takes the ceiling an earlier run of the same build measured
of the same bytes on the same machine, names the run that measured it, and measures its own otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.chapters.common import run_header
from benchmarks_lib.records.questions import BUILD_COLUMN, CAP_COLUMN
from benchmarks_lib.rules.ceilings import with_ceiling_fraction
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites import get_suite

SMALL = {**get_suite("writers").smoke, "backends": ["raw"], "tests": ["write"], "multipliers": [1],
         "iterations": 2, "warmups": 0}


def _run(tmp: Path, run_id: str, params: dict | None = None, **kwargs):
    return run_suite("writers", {**SMALL, **(params or {})}, profile="quick", results_dir=tmp / "results",
                     scratch_dir=tmp / "scratch", run_id=run_id, **{"progress": None, **kwargs})


def _ceiling(result) -> pd.DataFrame:
    return result.df[result.df["backend"] == "ceiling"]


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shared")
    return tmp, _run(tmp, "a")


def test_a_run_takes_the_ceiling_an_earlier_run_of_the_build_measured(first):
    tmp, a = first
    lines: list[str] = []
    b = _run(tmp, "b", ceiling_from=["missing", "a"], progress=lambda done, total, line, end: lines.append(line))
    mine, theirs = _ceiling(b), _ceiling(a)
    assert len(mine) == len(theirs) > 0
    key = ["operation", "iteration"]
    # the same measurements, now rows of this run that name the run that measured them
    assert mine.set_index(key)["elapsed_s"].sort_index().equals(theirs.set_index(key)["elapsed_s"].sort_index())
    assert (mine["run_id"] == "b").all() and (mine[BUILD_COLUMN] == "a").all()
    assert (mine[CAP_COLUMN] == SMALL["iterations"]).all()
    assert b.meta["ceiling_from"] == "a" and "ceiling_from" not in a.meta
    assert any("taken from run a of this book build" in line for line in lines)
    # the run's own rows are judged by it, as by a ceiling it measured
    judged = with_ceiling_fraction(b.df)
    assert judged[judged["backend"] == "raw"]["pct_of_ceiling"].notna().any()
    # a run that takes it from a run that took it names the run that measured it
    f = _run(tmp, "f", ceiling_from=["a", "b"])
    assert f.meta["ceiling_from"] == "a" and (_ceiling(f)[BUILD_COLUMN] == "a").all()
    # `iobench show` and the chapter's header say where its ceiling was measured
    from benchmarks_lib.cli import common

    with common.console.capture() as shown:
        common.print_run(b.df, "writers", "b")
    assert "Ceiling (measured by run a of the same book build)" in shown.get()
    assert "memcpy measured once for this book, by run `a` of the same build" in run_header(b, "the write")
    assert "memcpy measured in the same run" in run_header(a, "the write")
    # no ceiling measured here: no worker ran it, and the measuring run's seconds are not counted as this run's
    assert mine["t_case_s"].isna().all() and mine["worker_peak_rss_bytes"].isna().all()
    assert theirs["t_case_s"].notna().all()
    assert any(case_id.startswith("ceiling-") for *_, case_id in a.timeline.cases)
    assert not any(case_id.startswith("ceiling-") for *_, case_id in b.timeline.cases)


def test_the_machine_page_lists_a_shared_ceiling_once(first, tmp_path):
    from benchmarks_lib.book.pages import write_machine_page

    tmp, a = first
    _run(tmp, "e", ceiling_from=["a"])
    text = write_machine_page(tmp / "results", tmp_path, ["a", "e"]).read_text()
    assert text.count("## Ceiling") == 1
    assert "## Ceiling measured in the writers run (`a`), and taken by the writers run(s) of this build" in text
    # without the run that measured it, the ceiling is listed under the run that took it, naming the other
    text = write_machine_page(tmp / "results", tmp_path, ["e"]).read_text()
    assert "## Ceiling of the writers run (`e`), measured by run `a`" in text
    # the rows say which run measured them (a forged name is shown as text, in a code span)
    record = next((a.run_dir.parent / "e" / "records").glob("ceiling-*.parquet"))
    pd.read_parquet(record).assign(**{BUILD_COLUMN: "<b>x</b>"}).to_parquet(record)
    text = write_machine_page(tmp / "results", tmp_path, ["a", "e"]).read_text()
    assert "## Ceiling of the writers run (`e`), measured by run `<b>x</b>`" in text
    assert "## Ceiling measured in the writers run (`a`)\n" in text


def test_another_size_or_machine_measures_its_own(first):
    tmp, a = first
    other = _run(tmp, "c", {"dims": "t:2,y:64:32,x:64"}, ceiling_from=["a"])
    assert "ceiling_from" not in other.meta and len(_ceiling(other))
    assert BUILD_COLUMN not in other.df or other.df[BUILD_COLUMN].isna().all()
    # a run whose machine differs (here its recorded kernel), or whose record is not a regular file, is not taken
    forged = tmp / "results" / a.run_dir.parent.name / "forged"
    forged.mkdir()
    meta = json.loads((a.run_dir / "run.json").read_text())
    meta["environment"]["kernel"] = "another kernel"
    (forged / "run.json").write_text(json.dumps(meta))
    (forged / "records").mkdir()
    record = next((a.run_dir / "records").glob("ceiling-*.parquet"))
    (forged / "records" / record.name).write_bytes(record.read_bytes())
    linked = forged.with_name("linked")
    (linked / "records").mkdir(parents=True)
    (linked / "run.json").write_text((a.run_dir / "run.json").read_text())
    (linked / "records" / record.name).symlink_to(record)
    d = _run(tmp, "d", ceiling_from=["forged", "linked"])
    assert "ceiling_from" not in d.meta and len(_ceiling(d)) == len(_ceiling(a))
    assert not _ceiling(d)["elapsed_s"].sort_values().reset_index(drop=True).equals(
        _ceiling(a)["elapsed_s"].sort_values().reset_index(drop=True))


@pytest.mark.parametrize("value", ["a", ["../a"], [3], {"a": 1}])
def test_a_bad_ceiling_from_is_one_line_before_anything_is_made(tmp_path, value):
    with pytest.raises(SpecError, match=r"ceiling_from|run id"):
        _run(tmp_path, "x", ceiling_from=value)
    assert not (tmp_path / "results").exists()
