"""What names a case in ``iobench compare``: every suite's declared key holds for its rows, frames count as one
iteration, and an A/A run (one commit measured twice) flags at most 1% of its cases (the ceiling's rows, the
machine itself, aside)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks_lib.base.stats import MIN_RANK_N, two_sample
from benchmarks_lib.chapters.compare import (
    MACHINE,
    Comparison,
    compare_runs,
    declared_keys,
    key_problems,
    per_iteration,
    verdict,
)
from benchmarks_lib.cli.main import main
from benchmarks_lib.records.store import load_run
from benchmarks_lib.suites import get_suite, suite_names

ROOT = Path(__file__).resolve().parent.parent
#: the committed standard runs: every suite but the ceiling (whose rows each of them holds) at its full grid
REFERENCE_RUNS = sorted(p for p in (ROOT / "reference" / "vm").iterdir() if (p / "run.json").is_file())


def reference_run(suite: str) -> pd.DataFrame:
    """The rows of the committed reference's run of ``suite``."""
    return next(df for df, meta in map(load_run, REFERENCE_RUNS) if meta["suite"] == suite)


def run_keys(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    return declared_keys(sorted(str(s) for s in df["suite"].dropna().unique()))


@pytest.mark.parametrize("name", list(suite_names()))
def test_every_suite_declares_its_case_key(name: str):
    suite = get_suite(name)
    assert suite.case_keys, f"suite {name} declares no case_keys"
    assert not set(suite.iteration_parts) & set(suite.case_keys)


def test_the_reference_runs_cover_every_measuring_suite():
    suites = {str(load_run(d)[1]["suite"]) for d in REFERENCE_RUNS}
    assert suites | {"ceiling"} == set(suite_names())


@pytest.mark.parametrize("run_dir", REFERENCE_RUNS, ids=lambda p: p.name)
def test_each_suites_key_names_every_case_of_its_reference_run(run_dir: Path):
    df, _ = load_run(run_dir)
    assert key_problems(df, *run_keys(df)) == []


#: the suites with the most parameters that are cheap to run at their smoke sizes (threads shares compression's
#: key; parallel, s3 and cache need Dask, versitygw or ROOT: their reference runs stand for them)
SMOKE_RUNS = {"writers": {"backends": ["raw", "zarr-python"], "tests": ["write", "append", "read", "sharding"]},
              "compression": {"array_backends": ["numcodecs", "zarr-python"]}}


@pytest.mark.parametrize("name", list(SMOKE_RUNS))
def test_each_suites_key_names_every_case_of_a_small_real_run(name: str, tmp_path: Path):
    params = {**get_suite(name).smoke, **SMOKE_RUNS[name]}
    argv = [a for k, v in params.items() for a in ("--param", f"{k}={json.dumps(v)}")]
    assert main(["run", name, "--results-dir", str(tmp_path / "r"), "--scratch-dir", str(tmp_path / "s"),
                 "--run-id", "smoke", *argv]) == 0
    df, _ = load_run(tmp_path / "r" / "vm" / "smoke")
    assert (df["status"] == "ok").sum() > 0
    assert key_problems(df, *run_keys(df)) == []


def test_a_parameter_missing_from_the_key_is_named():
    """Parallel W left out of the key: W=1..8 would merge into one case (the bug this key fixes)."""
    df = reference_run("parallel")
    keys, parts = run_keys(df)
    problems = key_problems(df, [k for k in keys if k != "workers"], parts)
    assert problems and "'workers'" in problems[0]
    measured = key_problems(df, [*keys, "cpu_s"], parts)
    assert any("a key column is measured" in p for p in measured)


@pytest.mark.parametrize(("suite", "key", "other"), [
    ("s3", "latency_ms", None), ("s3", "s3_server", "MinIO (a run of another server)"), ("cache", "client_cache", None),
    ("cache", "step", None), ("cache", "server", "nginx"), ("cache", "bandwidth_bytes_s", 1e6),
    ("parallel", "region_step", 3)])
def test_the_s3_link_the_zarr_client_cache_and_the_cache_server_are_cases_of_their_own(suite, key, other):
    """Without ``key`` the run's cases merge; where the reference run holds it at one value (``other`` given),
    its rows doubled at a second value must stay apart (the S3 server: the reference's run on versitygw and a run on
    MinIO are not the same cases)."""
    df = reference_run(suite)
    if other is not None:
        df = pd.concat([df, df[df[key].notna()].assign(**{key: other})], ignore_index=True)
    keys, parts = run_keys(df)
    assert key in keys and key_problems(df, keys, parts) == []
    assert key_problems(df, [k for k in keys if k != key], parts)


def append_rows(repeats: int, frames: int = 64, factor: float = 1.0) -> pd.DataFrame:
    """A writers-like append: ``repeats`` repeats of ``frames`` frame rows each (times in s)."""
    return pd.DataFrame([{"status": "ok", "suite": "writers", "backend": "zarr-python", "operation": "append_frame",
                          "test": "append", "dataset": "em_like", "codec": "lz4", "nbytes": 4096, "iteration": r,
                          "frame": f, "elapsed_s": factor * (0.001 + 1e-6 * f + 1e-5 * r)}
                         for r in range(repeats) for f in range(frames)])


def test_frames_collapse_to_one_value_per_repeat():
    one = compare_runs(append_rows(1), append_rows(1, factor=5.0))
    assert len(one) == 1 and (one.loc[0, "n A"], one.loc[0, "n B"]) == (1, 1)
    assert one.loc[0, "verdict"] == "too few iterations"
    values = per_iteration(append_rows(2), *declared_keys(["writers"]))
    assert list(values["elapsed_s"]) == pytest.approx([0.001 + 31.5e-6, 0.001 + 31.5e-6 + 1e-5])  # the median frame
    many = compare_runs(append_rows(MIN_RANK_N), append_rows(MIN_RANK_N, factor=5.0))
    assert many.loc[0, "n A"] == MIN_RANK_N and many.loc[0, "verdict"] == "slower"


def test_a_shift_of_every_case_is_named_as_drift(tmp_path: Path):
    rows = append_rows(MIN_RANK_N)
    a = pd.concat([rows.assign(codec=f"zstd:{level}") for level in range(12)], ignore_index=True)
    b = a.assign(elapsed_s=a["elapsed_s"] * 1.3)
    table = compare_runs(a, b)
    comparison = Comparison("a", "b", "writers", table, pd.DataFrame(columns=["key", "A", "B"]), 0.1)
    assert "the median B/A of the 12 cases in both runs is 1.3, 100% of them slower in B" in comparison.counts()
    assert "moved alike" in comparison.counts()
    assert "moved alike" not in Comparison("a", "a", "writers", compare_runs(a, a), table.iloc[:0], 0.1).counts()


def test_identical_cases_are_flagged_at_the_tests_level():
    """Simulated A/A (seeded): 1000 cases, 6 iterations a side from one lognormal; at a threshold near 0 each
    case's own verdict is a test at the 5% level (the Mann-Whitney test of ``two_sample`` alone; ``compare_runs``'s
    t interval of the log ratio, with the between-run component the cases' scatter gives), and at the default 10%,
    fewer still."""
    rng = np.random.default_rng(7)
    n_cases, n = 1000, 6
    def run(run_id: str) -> pd.DataFrame:
        t = rng.lognormal(0.0, 0.1, size=(n_cases, n))
        return pd.DataFrame({"status": "ok", "suite": "compression", "backend": "numcodecs", "operation": "encode",
                             "codec": np.repeat([f"zstd:{c}" for c in range(n_cases)], n),
                             "iteration": np.tile(np.arange(n), n_cases), "elapsed_s": t.ravel(), "run_id": run_id})
    a, b = run("a"), run("b")
    va, vb = (per_iteration(df, ["codec"]).groupby("case")["elapsed_s"] for df in (a, b))
    alone = np.mean([verdict(two_sample(x.to_numpy(), y.to_numpy()), 1e-9) in ("slower", "faster")
                     for (_, x), (_, y) in zip(va, vb, strict=True)])
    sharp = compare_runs(a, b, threshold=1e-9)["verdict"].isin(["slower", "faster"]).mean()
    default = compare_runs(a, b)["verdict"].isin(["slower", "faster"]).mean()
    assert 0.01 < alone <= 0.06 and 0.01 < sharp <= 0.06 and default <= sharp


def test_a_case_that_changed_more_than_the_run_is_flagged_beside_the_drift():
    """Twenty cases, B 1.3x slower as a whole with 2% stray, one of them 3x: that one is "slower", the others
    "moved with the run", and the drift line says by how much the run moved."""
    rng = np.random.default_rng(3)
    rows = []
    for run_id, factor in (("a", 1.0), ("b", 1.3)):
        for c in range(20):
            t = rng.lognormal(np.log(0.01 * (3 if run_id == "b" and c == 0 else 1) * factor), 0.02, size=MIN_RANK_N)
            rows += [{"status": "ok", "suite": "compression", "backend": "numcodecs", "operation": "encode",
                      "codec": f"zstd:{c}", "iteration": i, "elapsed_s": v, "run_id": run_id} for i, v in enumerate(t)]
    df = pd.DataFrame(rows)
    table = compare_runs(df[df["run_id"] == "a"], df[df["run_id"] == "b"])
    assert table.loc[0, "verdict"] == "slower" and table.loc[0, "case"] == "zstd:0"
    assert (table["verdict"].iloc[1:] == "moved with the run").all()
    comparison = Comparison("a", "b", "compression", table, pd.DataFrame(columns=["key", "A", "B"]), 0.1)
    assert "the median B/A of the 20 cases in both runs is 1.3" in comparison.counts()
    assert list(comparison.flagged()["case"]) == ["zstd:0"]


def test_a_ceiling_beyond_the_threshold_says_the_machine_moved_and_takes_no_part_in_the_drift():
    """Twelve cases that stay put and the ceiling's fsync write 1.3x slower in B (a flush mode of the VM's disk that
    holds a whole run): the ceiling's row is "ceiling moved", not a case "slower"; the drift is the cases' alone, and
    the counts name what moved in words."""
    rng = np.random.default_rng(5)
    rows = []
    for run_id, factor in (("a", 1.0), ("b", 1.3)):
        for c in range(12):
            t = rng.lognormal(np.log(0.01), 0.02, size=MIN_RANK_N)
            rows += [{"status": "ok", "suite": "compression", "backend": "numcodecs", "operation": "encode",
                      "codec": f"zstd:{c}", "iteration": i, "elapsed_s": v, "run_id": run_id} for i, v in enumerate(t)]
        t = rng.lognormal(np.log(0.03 * factor), 0.02, size=MIN_RANK_N)
        rows += [{"status": "ok", "suite": "ceiling", "backend": "ceiling", "operation": "write_fsync",
                  "dataset": "random", "iteration": i, "elapsed_s": v, "run_id": run_id} for i, v in enumerate(t)]
    df = pd.DataFrame(rows)
    table = compare_runs(df[df["run_id"] == "a"], df[df["run_id"] == "b"])
    ceiling = table[table["backend"] == "ceiling"].iloc[0]
    assert ceiling["verdict"] == MACHINE and "no library" in ceiling["why"]
    assert not table["verdict"].isin(["slower", "faster"]).any()
    comparison = Comparison("a", "b", "compression", table, pd.DataFrame(columns=["key", "A", "B"]), 0.1)
    said = comparison.counts()
    assert "of the 12 cases in both runs" in said and "the machine itself moved" in said
    assert "raw write + fsync, 1 stream 1." in said


# -- A/A: two runs of one commit --------------------------------------------------------------------------------
#: in-memory encode and decode of 4 datasets x 6 codecs by numcodecs, one thread (a Blosc pool of its own on a
#: shared core is bimodal), 6 iterations: 48 cases and the run's 5 ceiling operations in ~10 s a run on 2 cores
AA_PARAMS = {"mesh_backends": [], "array_backends": ["numcodecs"], "real_datasets": [], "threads": 1,
             "datasets": ["em_like", "labels", "microscopy", "random"], "dims": "z:8:4,y:128:64,x:128:64",
             "codecs": ["lz4", "zstd:1", "zstd:3", "gzip:1", "blosc-lz4:5:shuffle", "blosc-zstd:1:bitshuffle"]}


def aa_run(results: Path, scratch: Path, run_id: str) -> None:
    params = [a for k, v in AA_PARAMS.items() for a in ("--param", f"{k}={json.dumps(v)}")]
    assert main(["run", "compression", "--results-dir", str(results), "--scratch-dir", str(scratch), "--run-id",
                 run_id, "--iterations", "6", "--warmups", "1", "--budget", "10m", *params]) == 0


@pytest.mark.quiet
def test_an_a_a_run_flags_at_most_1_percent_of_its_cases(tmp_path: Path, capsys):
    """Four quick runs of one commit, alone on the machine (``make test`` runs the quiet tests after the others),
    all six pairs compared: at most 1% of the cases flagged, no run discarded and none chosen. The ceiling's rows are
    the machine, not cases: a run's fsync flush on this VM holds one of two modes (31 or 40 ms) for seconds, so they
    say "ceiling moved" (eleven repetitions on this VM: 0 or 1 of 336 cases flagged each, 3 of 3696 in all, and 29
    ceiling rows moved; before, counting the ceiling's rows as cases, up to 8 of 336).

    Each run measures in rounds (``run.rounds``): every case once a round, in a fresh random order, so a burst of
    the host's load during a stretch of one run lands on every case alike, and ``iobench compare`` judges each
    case against the run's own drift. Before rounds (a case's iterations back to back, a burst moving all of them)
    five repetitions of this test on this VM flagged 25, 0, 6, 13 and 4 of 336 cases (2.9% in all), and it held 5%
    only after discarding a first run and keeping the three runs that agreed best.

    It runs whatever the load, and says the load beside its result (the share of the CPU other processes used
    during the runs, each case's ``other_cpu_pct``). With two CPU-bound loops beside it on this 2-core VM (about
    86% of the CPU) one tau for all cases flagged 1, 4, 3, 2 and 9 of 336, every flag a case shorter than 0.2 ms
    (a lost time slice is a larger part of it); with a tau per stratum of like duration (``rules.changes``), 3, 0,
    0 and 0 of 336. Before that it skipped above 25%, so it never ran in a busy CI."""
    results, scratch, ids = tmp_path / "results", tmp_path / "scratch", ("a", "b", "c", "d")
    for run_id in ids:
        aa_run(results, scratch, run_id)
    runs = [load_run(results / "vm" / run_id)[0] for run_id in ids]
    busy = max(float(df["other_cpu_pct"].median()) for df in runs)
    load = f"other processes used {busy:.0f}% of the CPU during the runs (median of a run's cases, the most of 4)"
    for df in runs:
        assert key_problems(df, *run_keys(df)) == []
        measured = df[(df["status"] == "ok") & (df["suite"] == "compression")]
        assert measured["round"].notna().all()  # measured in rounds
    pairs = [(x, y) for i, x in enumerate(ids) for y in ids[i + 1:]]
    comparisons = [Comparison.load(results / "vm" / x, results / "vm" / y) for x, y in pairs]
    for comparison in comparisons:
        table = comparison.table
        judged = table[(table["n A"] >= MIN_RANK_N) & (table["n B"] >= MIN_RANK_N)]
        assert len(judged) == len(table) >= 20 and not table["verdict"].str.startswith("only in").any()
    flags = {pair: int(c.table["verdict"].isin(["slower", "faster"]).sum()) for pair, c in zip(pairs, comparisons,
                                                                                              strict=True)}
    cases = sum(len(c.table) for c in comparisons)
    with capsys.disabled():  # beside the result in make test's output, whatever the capture
        print(f"\nA/A: {sum(flags.values())} of {cases} cases flagged; {load}")
    assert sum(flags.values()) <= 0.01 * cases, (load, flags, cases, [c.counts() for c in comparisons])
    assert main(["compare", "a", "b", "--results-dir", str(results)]) == 0
    assert f"{len(comparisons[0].table)} case(s)" in capsys.readouterr().out
