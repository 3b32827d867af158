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


def _measured(version: str, factor: float, operation: str, *, cpu: float | None, moved: float = 1e6,
              seed: int = 0, backend: str = "zarr-python") -> pd.DataFrame:
    """Rows of one operation at one version, as a run records them: ``cpu`` the share of each time spent on the CPU
    (None: a constant 1 ms, whatever the wall time), ``moved`` the bytes written or read."""
    df = rows(version, factor, operation=operation, kind=None, seed=seed, backend=backend)
    cpu_s = df["elapsed_s"] * cpu if cpu is not None else 0.001
    column = "io_read_bytes" if operation.startswith("read") else "io_write_bytes"
    return df.assign(case_id=f"{backend}-{version}-{operation}", cpu_s=cpu_s, **{column: moved})


def test_what_drives_a_large_change_is_said_where_the_run_can_tell():
    """A write 2x slower whose CPU time moved with it is CPU work, in its write calls (fsync the same); a cold read
    2x slower on the same CPU time is waiting, and it read 1.5x the bytes; a test that did not change says nothing.
    Each line is escaped; its medians are in the table."""
    evil = "zarr<b>"
    write = [_measured(v, f, "total", cpu=0.9, seed=s, backend=evil) for v, f, s in (("2.18.7", 1.0, 1),
                                                                                      ("3.1.6", 2.0, 2))]
    phases = [rows(v, f, operation=op, kind=None, seed=s, backend=evil).assign(case_id=f"{evil}-{v}-total")
              for v, f, s, op in (("2.18.7", 0.6, 5, "write"), ("3.1.6", 1.6, 6, "write"),
                                  ("2.18.7", 0.3, 7, "fsync"), ("3.1.6", 0.3, 8, "fsync"))]
    read = [_measured("2.18.7", 1.0, "read_cold", cpu=None, seed=3, backend=evil),
            _measured("3.1.6", 2.0, "read_cold", cpu=None, seed=4, moved=1.5e6, backend=evil)]
    same = [_measured(v, 1.0, "read_region_cold", cpu=0.5, seed=s, backend=evil) for v, s in (("2.18.7", 9),
                                                                                               ("3.1.6", 10))]
    why, medians = upgrades.drivers(pd.concat([*write, *phases, *read, *same], ignore_index=True))
    lines = why.splitlines()
    assert len(lines) == 2 and all("<b>" not in line and "zarr\\<b\\>" in line for line in lines), lines
    assert ", write: " in lines[0] and "mostly CPU work" in lines[0] and "most of it in the write calls" in lines[0]
    assert ", cold full read: " in lines[1] and "mostly waiting" in lines[1] and "bytes moved 1 MB → 1.5 MB" in lines[1]
    shown = medians.shown()
    fsync = shown[shown["measure"] == "fsync (to the disk)"]
    assert len(fsync) == 1 and 0.95 < float(fsync["newest / older"].iloc[0].removesuffix("x")) < 1.05
    assert set(shown["test"]) == {"write", "cold full read"}
    assert shown["older"].str.fullmatch(r"[\d.]+ (ms|MB)").all()  # in the unit that fits, never e-notation
    assert upgrades.drivers(versions_run().assign(cpu_s=0.01, case_id="c").iloc[0:0])[0] == ""


def test_the_reference_machines_changes_are_beside_this_machines(tmp_path: Path):
    """Each change either machine measured, this machine's and the reference's as the rule decided them, and a line
    naming both runs (escaped); nothing beside the reference's own run or without a reference."""
    from types import SimpleNamespace

    reference = tmp_path / "reference"
    theirs = write_run(reference, "ref", versions_run(), "2026-11-27T10:00:00+00:00", suite="upgrades")
    meta = json.loads((theirs / "run.json").read_text())
    meta |= {"finished_at": "2026-11-27T11:00:00+00:00", "environment": {"cpu_model": "<b>EPYC", "cpu_count": 2}}
    (theirs / "run.json").write_text(json.dumps(meta))
    mine = SimpleNamespace(df=versions_run().drop(columns=["zarr_format"]), meta={"environment": {"cpu_count": 4}},
                           path=tmp_path / "mine")
    why, table = upgrades.beside_reference(mine, reference)
    assert "/ref`" in why  # the run, named
    assert "\\<b\\>EPYC, 2 cores" in why and "(4 cores;" in why, why
    shown = table.shown()
    assert list(shown["test"]) == ["write", "cold cutouts of 32 KiB (aligned)"]
    cutouts = shown.iloc[1]
    assert cutouts["this machine"].startswith("1.") and "slower [" in cutouts["this machine"]
    assert cutouts["reference machine"] == cutouts["this machine"]  # the same rows: the same decision
    assert shown.iloc[0]["this machine"] in ("not separable", "equivalent")
    assert upgrades.beside_reference(SimpleNamespace(df=mine.df, meta={}, path=theirs), reference)[0] == ""
    assert upgrades.beside_reference(mine, tmp_path / "none")[0] == ""
