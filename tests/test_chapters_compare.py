"""Comparing runs: the ratio's interval, the verdicts (each on the whole interval, with why), moving with the run, the
environment differences, the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.base.stats import MIN_RANK_N, TwoSample, ratio_ci, two_sample
from benchmarks_lib.chapters.compare import (
    NOT_SEPARABLE,
    WITH_RUN,
    Comparison,
    compare_runs,
    environment_differences,
    judge,
    parse_threshold,
    ratio_figure,
    resolve_runs,
    verdict,
)
from benchmarks_lib.cli.common import console
from benchmarks_lib.cli.main import main
from benchmarks_lib.records.store import write_atomic_parquet, write_json_atomic

ROOT = Path(__file__).resolve().parent.parent
#: iterations of one case: a few percent of spread, as on a quiet machine
TIMES = [1.00, 1.02, 0.99, 1.03, 1.01, 0.98]
ENV = {"machine": "vm", "cpu_model": "Test CPU", "kernel": "6.1", "git_commit": "abc", "version_zarr": "3.0.0",
       "fs_type": "ext4", "collected_at": "2026-11-22T10:00:00+00:00", "fs_free_bytes": 10}


def frame(run_id: str, slow: dict[tuple[str, str], float] | None = None, skip: tuple = (),
          iterations: list[float] = TIMES) -> pd.DataFrame:
    """A writers-like run: backends x codecs, each case's times multiplied by ``slow[(backend, codec)]``."""
    rows = []
    for backend in ("raw", "zarr-python", "tensorstore"):
        for codec in ("none", "lz4"):
            if (backend, codec) in skip:
                continue
            factor = (slow or {}).get((backend, codec), 1.0)
            rows += [{"status": "ok", "suite": "writers", "run_id": run_id, "backend": backend, "operation": "total",
                      "test": "write", "codec": codec, "nbytes": 2**20, "elapsed_s": t * factor, "gbps": 1 / t,
                      "iteration": i} for i, t in enumerate(iterations)]
    return pd.DataFrame(rows)


def verdicts(table: pd.DataFrame) -> dict[tuple[str, str], str]:
    codec = {"uncompressed": "none"}  # the case in words: its codec first
    return {(r.backend, codec.get(c := r.case.split(",")[0], c)): r.verdict for r in table.itertuples()}


def test_ratio_ci_of_identical_runs_is_one_and_seeded():
    ratio, lo, hi, n_a, n_b = ratio_ci(TIMES, TIMES)
    assert ratio == 1.0 and lo <= 1.0 <= hi and (n_a, n_b) == (6, 6)
    assert ratio_ci(TIMES, TIMES) == ratio_ci(TIMES, TIMES)
    doubled = ratio_ci(TIMES, [2 * t for t in TIMES])
    assert doubled[0] == pytest.approx(2.0) and 1.9 < doubled[1] <= 2.0 <= doubled[2] < 2.1


def test_identical_runs_flag_nothing():
    table = compare_runs(frame("a"), frame("b"))
    assert len(table) == 6 and set(table["verdict"]) == {"same"}
    assert (table["B/A time"] == 1.0).all()


def test_a_case_twice_as_slow_is_slower_and_listed_first():
    b = frame("b", slow={("zarr-python", "lz4"): 2.0, ("raw", "none"): 0.5}, skip=(("tensorstore", "none"),))
    a = frame("a", skip=(("tensorstore", "lz4"),))
    table = compare_runs(a, b)
    got = verdicts(table)
    assert got[("zarr-python", "lz4")] == "slower" and got[("raw", "none")] == "faster"
    assert got[("tensorstore", "lz4")] == "only in B" and got[("tensorstore", "none")] == "only in A"
    assert got[("raw", "lz4")] == got[("zarr-python", "none")] == "same"
    assert list(table["verdict"]) == ["slower", "faster", "only in A", "only in B", "same", "same"]
    slower = table.iloc[0]
    assert slower["B/A time"] == pytest.approx(2.0) and slower["95% CI lo"] > 1.1
    assert slower["case"] == "lz4, 1.05 MB"  # the case in words (words.case_text), matched on its keys


def test_a_change_inside_the_threshold_is_same_and_one_iteration_is_too_few():
    b = frame("b", slow={("raw", "none"): 1.05})
    assert verdicts(compare_runs(frame("a"), b))[("raw", "none")] == "same"
    assert verdicts(compare_runs(frame("a"), b, threshold=0.01))[("raw", "none")] == "slower"
    one = compare_runs(frame("a", iterations=[1.0]), frame("b", iterations=[3.0]))
    assert set(one["verdict"]) == {"too few iterations"} and np.allclose(one["B/A time"], 3.0)
    faster = two_sample([1.0, 1.01, 0.99, 1.02, 1.0], [0.7, 0.71, 0.69, 0.72, 0.7])
    assert verdict(faster) == "faster" and verdict(faster, threshold=0.5) == "same"
    four = two_sample([1.0, 1.01, 0.99, 1.02], [0.7, 0.71, 0.69, 0.72])
    assert verdict(four) == "too few iterations" and verdict(two_sample([], [1.0])) == "only in B"


@pytest.mark.parametrize(("lo", "hi", "expected", "why"), [
    (0.60, 0.92, NOT_SEPARABLE, "interval partly within, partly beyond 0.909-1.1"),  # issue 31: "same" before
    (1.02, 1.08, "same", "whole interval within 0.909-1.1"),  # excludes 1, yet smaller than the threshold
    (0.95, 1.12, NOT_SEPARABLE, "interval partly within, partly beyond 0.909-1.1"),
    (0.89, 0.907, "faster", "whole interval below 0.909"),  # the threshold is a factor: 1/1.1, not 1 - 0.1
    (0.905, 0.99, NOT_SEPARABLE, "interval partly within, partly beyond 0.909-1.1"),
    (1.101, 1.2, "slower", "whole interval above 1.1"),
    (0.909091, 1.1, "same", "whole interval within 0.909-1.1"),  # the band's own ends are inside it
])
def test_a_verdict_needs_the_whole_interval(lo: float, hi: float, expected: str, why: str):
    result = TwoSample((lo * hi) ** 0.5, lo, hi, 6, 6, not lo <= 1 <= hi)
    assert judge(result) == (expected, why) and verdict(result) == expected
    too_few = judge(TwoSample(1.0, 0.5, 2.0, 6, 3, None))
    assert too_few == ("too few iterations", f"n=6 and 3: {MIN_RANK_N} a side needed")


#: B's times of one case: a median 0.745 of A's 1.005, spread so widely that its interval reaches past 1/1.1
WIDE = [0.6, 0.95, 0.7, 0.79, 0.9, 0.65]


def wide_run(run_id: str) -> pd.DataFrame:
    """``frame`` with zarr-python lz4 twice as slow and raw none ``WIDE``."""
    df = frame(run_id, slow={("zarr-python", "lz4"): 2.0})
    df.loc[(df["backend"] == "raw") & (df["codec"] == "none"), "elapsed_s"] = WIDE
    return df


def test_an_interval_across_the_threshold_is_not_separable_and_not_flagged(tmp_path: Path):
    a, b = write_run(tmp_path, "a", frame("a")), write_run(tmp_path, "b", wide_run("b"))
    comparison = Comparison.load(a, b)
    table = comparison.table
    row = table[(table["backend"] == "raw") & table["case"].str.contains("uncompressed")].iloc[0]
    assert row["verdict"] == NOT_SEPARABLE and row["95% CI lo"] < 1 / 1.1 < row["95% CI hi"] < 1
    assert row["why"] == "interval partly within, partly beyond 0.909-1.1"
    assert list(table["verdict"]) == ["slower", NOT_SEPARABLE, "same", "same", "same", "same"]
    assert comparison.flagged()["verdict"].tolist() == ["slower"]
    assert "6 case(s): 1 slower, 1 not separable, 4 same (threshold: a factor of 1.1 either way, 0.909-1.1;" \
        in comparison.counts()
    labels = ratio_figure(comparison).axes[0].get_legend_handles_labels()[1]
    assert "within 0.909-1.1 (same)" in labels and NOT_SEPARABLE in labels


def drifting_runs(results: Path) -> None:
    """Twenty cases, B 1.3x slower as a whole with 2% stray, one of them 3x (as records of two runs)."""
    rng = np.random.default_rng(3)
    for run_id, factor in (("a", 1.0), ("b", 1.3)):
        rows = []
        for c in range(20):
            t = rng.lognormal(np.log(0.01 * (3 if run_id == "b" and c == 0 else 1) * factor), 0.02, size=MIN_RANK_N)
            rows += [{"status": "ok", "suite": "compression", "backend": "numcodecs", "operation": "encode",
                      "codec": f"zstd:{c}", "iteration": i, "elapsed_s": v} for i, v in enumerate(t)]
        write_run(results, run_id, pd.DataFrame(rows), suite="compression")


def test_a_case_that_moved_with_the_run_says_so_in_its_row(tmp_path: Path, capsys, monkeypatch):
    drifting_runs(tmp_path)
    comparison = Comparison.load(tmp_path / "vm" / "a", tmp_path / "vm" / "b")
    table = comparison.table.set_index("case")
    drift = f"the run's drift ({float(np.median(table['B/A time'])):.3g})"
    assert table.loc["zstd:0", "verdict"] == "slower"
    assert re.fullmatch(rf"whole interval above 1\.1; against {re.escape(drift)}: 3 \[2\.\d+, 3\.\d+\], beyond the "
                        "threshold on its own", table.loc["zstd:0", "why"])
    moved = table.drop(index="zstd:0")
    assert (moved["verdict"] == WITH_RUN).all() and (moved["95% CI lo"] > 1.1).all()
    said = f"slower (whole interval above 1.1), as the run; against {drift}: "
    assert all(why.startswith(said) and why.endswith(", not beyond the threshold on its own") for why in moved["why"])
    monkeypatch.setattr(console, "width", 400)  # the rows unwrapped
    assert main(["compare", "a", "b", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count(said) == 19
    assert "20 case(s): 1 slower, 19 moved with the run" in out and "1.31, 100% of them slower in B" in out


def test_cli_compare_help_states_the_threshold_as_a_factor(capsys):
    with pytest.raises(SystemExit) as done:
        main(["compare", "--help"])
    assert done.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "above 1 + this, faster when below 1 / (1 + this)" in help_text and "below 0.909" in help_text
    assert "+-" not in help_text and "±" not in help_text


def test_cases_match_across_dtypes_and_failed_rows_are_left_out():
    a, b = frame("a"), frame("b")
    b["nbytes"] = b["nbytes"].astype("float64")  # a column with gaps comes back as float
    b.loc[0, "status"] = "error"
    table = compare_runs(a, b)
    assert len(table) == 6 and set(table["verdict"]) == {"same"}
    assert table.loc[table["n B"] == 5].shape[0] == 1


def test_environment_differences_name_what_changed():
    meta_a = {"suite": "writers", "profile": "quick", "params": {"dims": "t:2"}, "environment": ENV}
    env_b = {**ENV, "version_zarr": "3.1.0", "fs_type": "xfs", "collected_at": "later", "fs_free_bytes": 99}
    meta_b = {**meta_a, "environment": env_b}
    diff = environment_differences(meta_a, meta_b)
    assert list(diff["key"]) == ["version_zarr", "fs_type"]
    assert diff.set_index("key").loc["version_zarr"].tolist() == ["3.0.0", "3.1.0"]
    assert environment_differences(meta_a, meta_a).empty
    changed = {**meta_a, "params": {"dims": "t:4"}, "environment": {**ENV, "kernel": "6.8"}}
    other = environment_differences(meta_a, changed)
    assert set(other["key"]) == {"kernel", "params.dims"}
    # the memory a kernel reports moves by a few KiB between boots: the same GiB is the same machine
    ram = {**meta_a, "environment": {**ENV, "ram_bytes": 24 * 2**30}}
    assert environment_differences(ram, {**ram, "environment": {**ENV, "ram_bytes": 24 * 2**30 + 8192}}).empty
    assert list(environment_differences(ram, {**ram, "environment": {**ENV, "ram_bytes": 32 * 2**30}})["key"]) == \
        ["ram_bytes"]


def test_parse_threshold_takes_a_fraction():
    assert parse_threshold("0.2") == 0.2 and parse_threshold(0.05) == 0.05
    for bad in ("abc", "0", "1", "-0.1", "nan", "inf", True, None):
        with pytest.raises(SpecError, match="threshold"):
            parse_threshold(bad)


def write_run(results: Path, run_id: str, df: pd.DataFrame, env: dict = ENV, suite: str = "writers") -> Path:
    run_dir = results / "vm" / run_id
    (run_dir / "records").mkdir(parents=True)
    write_atomic_parquet(df.assign(run_id=run_id), run_dir / "records" / "case.parquet")
    write_json_atomic({"suite": suite, "profile": "quick", "params": {}, "run_id": run_id, "schema_version": 2,
                       "started_at": "2026-11-22T14:31:38+00:00", "environment": env}, run_dir / "run.json")
    return run_dir


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    """results/ with a baseline, an upgraded run (zarr-python lz4 twice as slow) and a lone threads run."""
    results = tmp_path / "results"
    write_run(results, "before", frame("before"))
    os.utime(results / "vm" / "before" / "run.json", (1, 1))
    write_run(results, "after", frame("after", slow={("zarr-python", "lz4"): 2.0}), {**ENV, "version_zarr": "3.1.0"})
    os.utime(results / "vm" / "after" / "run.json", (2, 2))
    write_run(results, "threads-only", frame("t"), suite="threads")
    return results


def test_resolve_runs_picks_the_two_newest_runs_of_one_suite(two_runs: Path, tmp_path: Path):
    assert [d.name for d in resolve_runs(None, two_runs)] == ["before", "after"]
    assert [d.name for d in resolve_runs("after,before", two_runs)] == ["after", "before"]
    assert [d.name for d in resolve_runs([str(two_runs / "vm" / "before"), "after"], two_runs)] == ["before", "after"]
    with pytest.raises(SpecError, match="two or more"):
        resolve_runs(["after"], two_runs)
    with pytest.raises(FileNotFoundError):
        resolve_runs(["after", "nope"], two_runs)
    alone = tmp_path / "alone"
    write_run(alone, "only", frame("only"))
    assert resolve_runs(None, alone) == []


def test_comparison_and_its_figure(two_runs: Path):
    comparison = Comparison.load(two_runs / "vm" / "before", two_runs / "vm" / "after")
    assert comparison.flagged()["verdict"].tolist() == ["slower"]
    assert list(comparison.environment["key"]) == ["version_zarr"]
    assert "1 slower, 5 same" in comparison.counts()
    fig = ratio_figure(comparison)
    assert fig.axes[0].get_xscale() == "log"


def test_cli_compare_prints_differences_and_flagged_rows_first(two_runs: Path, capsys):
    assert main(["compare", "before", "after", "--results-dir", str(two_runs)]) == 0
    out = capsys.readouterr().out
    assert "version_zarr" in out and "3.1.0" in out
    assert out.index("slower") < out.index("same") and "1 slower, 5 same" in out
    assert "whole interval above 1.1" in out and "whole interval within 0.909-1.1" in out
    write_run(two_runs, "wide", wide_run("wide"))
    assert main(["compare", "before", "wide", "--results-dir", str(two_runs)]) == 0
    out = capsys.readouterr().out
    assert "not separable" in out and "interval partly within, partly beyond 0.909-1.1" in out
    assert "1 slower, 1 not separable, 4 same" in out
    assert main(["compare", "before", "after", "--results-dir", str(two_runs), "--threshold", "0.5"]) == 0


@pytest.mark.parametrize("argv", [["before", "nope"], ["before", "after", "--threshold", "abc"],
                                  ["before", "after", "--threshold", "1"], ["before", "after", "--threshold", "0"]])
def test_cli_compare_bad_input_is_exit_2(two_runs: Path, capsys, argv: list[str]):
    assert main(["compare", *argv, "--results-dir", str(two_runs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("iobench: error:")


@pytest.mark.slow
def test_the_compare_notebook_shows_the_slower_case(two_runs: Path, tmp_path: Path):
    papermill = Path(sys.executable).parent / "papermill"
    out = tmp_path / "compare.ipynb"
    done = subprocess.run([str(papermill), str(ROOT / "notebooks" / "compare.ipynb"), str(out), "-p", "RESULTS_DIR",
                           str(two_runs), "-k", "python3", "--cwd", str(ROOT), "--no-progress-bar"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    text = json.dumps([c.get("outputs", []) for c in json.loads(out.read_text())["cells"]])
    assert "slower" in text and "version_zarr" in text and "image/png" in text and "Nothing to compare" not in text



def test_cli_compare_of_an_unknown_suite_is_exit_2(tmp_path: Path, capsys):
    """Cases are named by the suite's declared key: a suite iobench does not know cannot be matched."""
    for run_id in ("x", "y"):
        write_run(tmp_path, run_id, frame(run_id).assign(suite="bogus"))
    assert main(["compare", "x", "y", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "suite 'bogus' is unknown" in err[0]
