"""The explorer: runs found in results directories (a corrupt one skipped, never deleted), the readers'
directories checked, the overview drawing the median and interval it names, in absolute units or as a
percentage of each run's own ceiling."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.chapters import explore
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame, write_atomic_parquet, write_json_atomic

TIMES = [1.0, 1.1, 0.9, 1.0, 5.0]  # one outlier: the median is 1.0, the mean 1.8


def record_run(results: Path, run_id: str, *, machine: str = "vm", speed: float = 1.0, ceiling_gbps: float = 2.0,
               suite: str = "writers") -> Path:
    """A writers-like run: two backends writing 1 GB, and the run's own raw write ceiling."""
    rows = [{"backend": b, "operation": "total", "test": "write", "codec": "lz4", "dataset": "em_like",
             "fsync_included": True, "nbytes": 10**9, "elapsed_s": t / speed / (2 if b == "zarrs" else 1),
             "iteration": i} for b in ("zarr-python", "zarrs") for i, t in enumerate(TIMES)]
    rows += [{"backend": "ceiling", "operation": "write_fsync", "fsync_included": True, "nbytes": 10**9,
              "elapsed_s": 1 / ceiling_gbps, "iteration": i} for i in range(3)]
    df = to_frame([{"schema_version": SCHEMA_VERSION, "run_id": run_id, "suite": suite, "status": "ok", **r}
                   for r in rows])
    run_dir = results / machine / run_id
    write_atomic_parquet(df, run_dir / "records" / "case.parquet")
    write_json_atomic({"run_id": run_id, "suite": suite, "profile": "quick", "started_at": "2026-11-22T10:00:00",
                       "params": {}, "environment": {"machine": machine}},
                      run_dir / "run.json")
    return run_dir


def test_runs_are_found_per_directory_and_a_corrupt_run_is_skipped_not_deleted(tmp_path):
    record_run(tmp_path / "results", "mine")
    record_run(tmp_path / "reference", "ref", machine="big")
    bad = tmp_path / "results" / "vm" / "broken"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text("{not json")
    runs = explore.find_runs([tmp_path / "results", tmp_path / "reference", tmp_path / "results", tmp_path / "gone"])
    assert sorted(r.path.name for r in runs) == ["mine", "ref"]
    assert any("big" in r.label and "[reference/]" in r.label for r in runs)
    assert (bad / "run.json").exists()
    found = explore.found_text([tmp_path / "results", tmp_path / "reference"])
    assert "2 recorded runs (2 writer comparison)" in found
    assert str(tmp_path) not in found and "`…/results`, `…/reference`" in found  # no path of the reader's machine
    assert "No recorded run" in explore.found_text([tmp_path / "gone"])


def test_other_directories_are_checked(tmp_path):
    record_run(tmp_path / "a", "one")
    record_run(tmp_path / "b", "two")
    dirs = explore.results_dirs(tmp_path / "mine", f"{tmp_path / 'a'}, {tmp_path / 'b'}")  # papermill -p: text
    assert dirs == [tmp_path / "mine", tmp_path / "a", tmp_path / "b"]
    assert explore.results_dirs(tmp_path / "mine", [str(tmp_path / "a")])[1:] == [tmp_path / "a"]
    (tmp_path / "empty").mkdir()
    for bad, words in [(str(tmp_path / "nope"), "does not exist"), (str(tmp_path / "empty"), "holds no run"),
                       ("", "must be a path"), (3, "must be a path"), (None, "must be a path")]:
        with pytest.raises(SpecError, match=words):
            explore.check_dir(bad)
    with pytest.raises(SpecError, match="OTHER_DIRS"):
        explore.results_dirs(None, {"a": 1})


def test_the_overview_draws_medians_and_the_ceiling_fraction(tmp_path):
    record_run(tmp_path / "r", "slow", ceiling_gbps=2.0)
    record_run(tmp_path / "r", "fast", machine="other", speed=2.0, ceiling_gbps=4.0)
    runs = explore.find_runs([tmp_path / "r"])
    fig = explore.figures(runs, explore.OVERVIEW, metric="throughput (GB/s)")[0]
    x = sorted(float(v) for line in fig.axes[0].lines for v in np.atleast_1d(line.get_xdata()))
    medians = {1.0, 2.0, 4.0}  # zarr-python 1 GB/s, zarrs 2 GB/s on the slow run; twice that on the fast one
    assert medians <= {round(v, 6) for v in x}
    assert "median [94% interval], n=5" in fig.axes[0].get_xlabel()  # the n and coverage the tables state
    plt.close(fig)
    # as % of each run's own ceiling, the fast machine (twice the speed, twice the ceiling) draws the same points
    fig = explore.figures(runs, explore.OVERVIEW, scale="% of ceiling")[0]
    points = [round(float(v), 6) for line in fig.axes[0].lines if line.get_marker() == "o"
              for v in np.atleast_1d(line.get_xdata())]
    assert sorted(points) == [50.0, 50.0, 100.0, 100.0]
    plt.close(fig)
    # filters: one backend, the ceiling rows kept for the fraction
    df = explore.select(explore.load_rows(runs), ["zarrs"])
    assert set(df["backend"]) == {"zarrs", "ceiling"}
    assert explore.backends_of(df) == ["zarrs"] and explore.datasets_of(df) == ["em_like"]


def test_bad_selections_are_refused(tmp_path):
    record_run(tmp_path / "r", "w")
    record_run(tmp_path / "r", "t", suite="threads")
    runs = explore.find_runs([tmp_path / "r"])
    with pytest.raises(SpecError, match="one chapter at a time"):
        explore.figures(runs)
    writers = [r for r in runs if r.suite == "writers"]
    with pytest.raises(SpecError, match="figure 'Nope' is unknown"):
        explore.figures(writers, "Nope")
    with pytest.raises(SpecError, match="metric"):
        explore.overview(pd.DataFrame(), "speed")
    fig = explore.overview(explore.load_rows(writers), "time (s)", "% of ceiling")
    assert "only throughput has a ceiling" in fig.axes[0].texts[0].get_text()
    plt.close(fig)
    for bad in ({"chapter": "nope"}, {"figure": "nope"}, {"scale": "log"}):
        with pytest.raises(SpecError):
            explore.explorer([tmp_path / "r"], **bad)


def test_the_widgets_drive_the_figures(tmp_path):
    """The ipywidgets explorer without a kernel: its controls exist, a change redraws, a bad directory is
    refused in the message line and nothing else changes."""
    pytest.importorskip("ipywidgets")
    record_run(tmp_path / "r", "w")
    box = explore.explorer([tmp_path / "r"])
    controls, _ = box.children

    def find(kind: str, description: str | None = None):
        stack = [controls]
        while stack:
            w = stack.pop()
            if type(w).__name__ == kind and (description is None or getattr(w, "description", None) == description):
                return w
            stack.extend(getattr(w, "children", ()))
        raise AssertionError(kind)

    runs = find("SelectMultiple", "runs")
    assert len(runs.value) == 1 and find("Dropdown", "chapter").value == "writers"
    figure = find("Dropdown", "figure")
    assert figure.options[0] == explore.OVERVIEW and "Read times" in figure.options
    find("Dropdown", "metric").value = "time (s)"  # redraws without error
    find("Text").value = str(tmp_path / "nowhere")
    find("Button").click()
    assert "does not exist" in find("HTML").value
    (tmp_path / "r" / "vm" / "w" / "records" / "case.parquet").write_bytes(b"not parquet")  # corrupted since
    runs.value = ()
    runs.value = runs.options[:1]
    assert "cannot be read" in find("HTML").value or "case.parquet" in find("HTML").value
