"""The Upgrades chapter: which runs it reads, the answer at the top (or how to measure versions), the table with each
side's Zarr format, the figure (points, never lines), record strings escaped, and its notebook executed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import version_rows as rows

from benchmarks_lib.book.pages import parameter_docs
from benchmarks_lib.chapters import upgrades
from benchmarks_lib.records.store import write_atomic_parquet, write_json_atomic
from benchmarks_lib.rules.upgrades import MEASURE_COMMAND

ROOT = Path(__file__).resolve().parent.parent


def write_run(results: Path, run_id: str, df: pd.DataFrame, started: str, suite: str = "writers") -> Path:
    run_dir = results / "vm" / run_id
    (run_dir / "records").mkdir(parents=True)
    write_atomic_parquet(df.assign(run_id=run_id), run_dir / "records" / "case.parquet")
    write_json_atomic({"suite": suite, "profile": "quick", "params": {}, "run_id": run_id, "schema_version": 2,
                       "started_at": started, "environment": {"machine": "vm"}}, run_dir / "run.json")
    return run_dir


def versions_run(**kw) -> pd.DataFrame:
    """One run of two versions in the same rounds: cutouts 1.8x slower at the newest, writes the same."""
    return pd.concat([rows("2.18.7", 1.0, seed=1, **kw), rows("3.1.6", 1.8, seed=2, **kw),
                      rows("2.18.7", 1.0, seed=3, operation="total", kind=None, **kw),
                      rows("3.1.6", 1.0, seed=4, operation="total", kind=None, **kw)], ignore_index=True)


def test_the_newest_run_with_versions_is_read_and_answered_at_the_top(tmp_path: Path):
    results = tmp_path / "results"
    write_run(results, "versions", versions_run(), "2026-11-27T10:00:00+00:00")
    write_run(results, "plain", rows("3.1.6", 1.0), "2026-11-27T11:00:00+00:00")  # newer, one version only
    runs = upgrades.resolve_runs(None, results)
    assert [r.name for r in runs] == ["versions"]
    df = upgrades.load(runs)
    text = upgrades.runs_header(runs, results, df)
    assert "3.1.6 is 1.7" in text or "3.1.6 is 1.8" in text
    assert "for cold cutouts of 32 KiB \\(aligned\\)" in text and "(Zarr v2 format on both)" in text
    assert "write" not in text.split("Zarr v2")[0].split("cutouts")[1]  # the equal write is not stated as a change
    table = upgrades.summary(df)
    assert list(table.columns) == upgrades.COLUMNS and len(table) == 2
    assert set(table["Zarr format (version → newest)"]) == {"v2"}
    assert set(table["rule"]) == {"newest slower", "equivalent"}


def test_without_versions_the_chapter_says_how_to_measure_them(tmp_path: Path):
    results = tmp_path / "results"
    write_run(results, "plain", rows("3.1.6", 1.0), "2026-11-27T11:00:00+00:00")
    assert upgrades.resolve_runs(None, results) == []
    text = upgrades.runs_header([], results, upgrades.load([]))
    assert MEASURE_COMMAND in text and "No library was measured at more than one version" in text
    assert upgrades.summary(pd.DataFrame()).empty
    fig = upgrades.ratio_figure(pd.DataFrame())
    assert "no library measured at two versions" in fig.axes[0].texts[0].get_text()


def test_two_runs_named_are_read_together_and_formats_that_differ_are_shown(tmp_path: Path):
    results = tmp_path / "results"
    write_run(results, "two", rows("2.18.7", 1.0, seed=1, zarr_format=2), "2026-11-27T10:00:00+00:00")
    write_run(results, "three", rows("3.1.6", 1.8, seed=2, zarr_format=3), "2026-11-27T11:00:00+00:00")
    df = upgrades.load(upgrades.resolve_runs("two,three", results))
    table = upgrades.summary(df)
    assert table["Zarr format (version → newest)"].tolist() == ["v2 → v3"]
    assert "v2 format on 2.18.7, v3 on 3.1.6" in upgrades.runs_header([], results, df)


def test_the_figure_draws_points_with_intervals_never_a_line():
    fig = upgrades.ratio_figure(versions_run())
    (ax,) = fig.axes
    assert ax.get_title() == "zarr-python" and ax.get_xscale() == "log"
    drawn = [line for line in ax.lines if len(line.get_xdata()) > 2]
    assert all(line.get_linestyle() == "None" for line in drawn)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["write", "cold cutouts of 32 KiB (aligned)"]


def test_record_strings_reach_the_page_escaped_and_the_figure_as_text():
    evil = "$x$<b>[a](https://x.org)"
    df = versions_run(backend=evil)
    text = upgrades.runs_header([], None, df)
    assert "<b>" not in text and "](https" not in text
    assert upgrades.summary(df)["library"].iloc[0] == evil  # shown as a DataFrame, whose HTML escapes it
    fig = upgrades.ratio_figure(df)
    fig.canvas.draw()  # a $ in a name is text, not math
    assert fig.axes[0].get_title() == evil


def test_the_notebook_is_thin_clean_and_documented():
    path = ROOT / "notebooks" / "upgrades.ipynb"
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert not any(c.get("outputs") or c.get("execution_count") for c in code)
    assert sum("parameters" in c["metadata"].get("tags", []) for c in code) == 1
    names = [p.name for p in parameter_docs(path)]
    assert {"RESULTS_DIR", "VERSIONS", "BACKENDS", "BUDGET", "LOAD_RUN"} <= set(names)
    assert all(p.meaning and p.default for p in parameter_docs(path))
    assert "".join("".join(c["source"]) for c in code).count('ib.parameters_table("upgrades", globals(), result)') == 1


@pytest.mark.slow
def test_the_notebook_executes_on_a_versions_run(tmp_path: Path, monkeypatch):
    papermill = pytest.importorskip("papermill")
    results = tmp_path / "results"
    write_run(results, "versions", versions_run(), "2026-11-27T10:00:00+00:00", suite="upgrades")
    monkeypatch.chdir(ROOT)  # parameters_table finds the notebook's template in notebooks/
    out = tmp_path / "upgrades.ipynb"
    papermill.execute_notebook(str(ROOT / "notebooks" / "upgrades.ipynb"), str(out),
                               parameters={"RESULTS_DIR": str(results), "LOAD_RUN": "versions"}, cwd=str(tmp_path),
                               progress_bar=False)
    shown = json.dumps(json.loads(out.read_text())["cells"])
    assert "is 1.7" in shown or "is 1.8" in shown
    assert "newest slower" in shown and "image/png" in shown


def test_an_operation_on_several_cases_names_each_case_on_the_figure():
    df = pd.concat([versions_run(), versions_run().assign(codec="zstd:3")], ignore_index=True)
    labels = [t.get_text() for t in upgrades.ratio_figure(df).axes[0].get_yticklabels()]
    assert len(labels) == 4 == len(set(labels)) and any("zstd:3" in label for label in labels)


def test_the_packages_that_differ_between_environments_are_listed_the_library_first():
    """What uv installed beside each version (``run.json``'s ``environments``): a package at the same version in
    both (numpy) is left out, one in only one environment says "-"; what is not an environment is ignored; record
    strings stay as they are (a book table escapes them)."""
    meta = {"environments": {
        "zarr==2.18.7": {"distribution": "zarr", "version": "2.18.7",
                         "packages": {"zarr": "2.18.7", "numcodecs": "0.15.2", "numpy": "2.4.6", "fasteners": "0.20"}},
        "zarr==3.1.6": {"distribution": "zarr", "version": "3.1.6",
                        "packages": {"zarr": "3.1.6", "numcodecs": "0.16.6", "numpy": "2.4.6", "<b>x</b>": "1"}},
        "junk": "not an environment"}}
    assert pd.DataFrame(upgrades.packages(meta)).values.tolist() == [
        ["zarr", "zarr", "zarr 2.18.7: 2.18.7; zarr 3.1.6: 3.1.6"],
        ["zarr", "<b>x</b>", "zarr 2.18.7: -; zarr 3.1.6: 1"],
        ["zarr", "fasteners", "zarr 2.18.7: 0.20; zarr 3.1.6: -"],
        ["zarr", "numcodecs", "zarr 2.18.7: 0.15.2; zarr 3.1.6: 0.16.6"]]
    assert upgrades.packages({}).empty and upgrades.packages({"environments": ["x"]}).empty


def test_the_settings_each_library_was_measured_with_are_listed_per_test():
    df = versions_run().assign(test="read", threads=2.0, fsync_included=pd.NA)
    df.loc[df["backend_version"] == "3.1.6", "zarr_format"] = 3
    table = pd.DataFrame(upgrades.settings(df))
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["library"], row["test"], row["versions"]) == ("zarr-python", "read", "2.18.7, 3.1.6")
    assert (row["data"], row["bytes"], row["codec"], row["threads"]) == ("em_like", "32.8 kB", "blosc-lz4:5:shuffle",
                                                                         "2")
    assert (row["Zarr format"], row["fsync in the time"]) == ("v2, v3", "-")
    assert pd.DataFrame(upgrades.settings(versions_run())).empty  # rows that name no test: nothing to list
