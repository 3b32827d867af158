"""Where a case's seconds go, the worker processes cases run in, and the allocator state they start with.

Real runs of the writers suite at tiny sizes (real libraries, real worker processes); correctness only:
no assertion here is about speed, except the generous isolation check of the allocator state, which
compares medians of the same writer in two workers with a factor of two of room.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from benchmarks_lib.measure.allocator import MALLOC_ENV
from benchmarks_lib.measure.ledger import CASE_COLUMNS, LEDGER, phase
from benchmarks_lib.run.pool import CaseWorkers, phase_totals, timed_share_line
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites import get_suite

PARTS = [c for c in CASE_COLUMNS if c != "t_case_s"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("accounting")
    params = {**get_suite("writers").smoke, "backends": ["raw", "zarr-python"]}
    return run_suite("writers", params, profile="quick", results_dir=base / "results", scratch_dir=base / "scratch",
                     run_id="accounting", progress=None, assume_yes=True)


def per_case(result):
    return result.df.drop_duplicates("case_id").set_index("case_id")


def test_the_parts_add_up_to_each_cases_wall_time(small_run):
    cases = per_case(small_run)
    assert len(cases) == 9  # the ceiling and 2 backends x 4 tests
    for case_id, row in cases.iterrows():
        parts = [float(row[c]) for c in PARTS]
        assert all(p >= -1e-3 for p in parts), (case_id, dict(zip(PARTS, parts, strict=True)))
        assert sum(parts) == pytest.approx(float(row["t_case_s"]), rel=0.05), case_id
        assert row["t_timed_s"] > 0, case_id  # every case here measures something
    # the phases named in the ledger were really met: data prepared, caches evicted, writes verified
    for col in ("t_start_s", "t_prep_s", "t_evict_s", "t_verify_s", "t_teardown_s"):
        assert cases[col].sum() > 0, col


def test_the_timed_phase_holds_the_timed_regions(small_run):
    """The ledger's timed seconds of a case are exactly its outermost timed regions' intervals."""
    cases = per_case(small_run)
    measured: dict[str, float] = {}
    for t0, t1, case_id in small_run.timeline.timed:
        measured[case_id] = measured.get(case_id, 0.0) + (t1 - t0) / 1e9
    assert set(measured) == set(cases.index)
    for case_id, seconds in measured.items():
        assert seconds == pytest.approx(cases.loc[case_id, "t_timed_s"], rel=1e-6)


def test_nothing_of_ours_runs_beside_a_timed_region(small_run):
    timeline = small_run.timeline
    assert timeline.timed and timeline.runner and timeline.cases
    assert timeline.overlaps() == []
    spans: dict[str, list] = {}
    for a, b, case_id in timeline.cases:
        spans.setdefault(case_id, []).append((a, b))
    for t0, t1, case_id in timeline.timed:  # each timed region inside one of its own case's spans (a round's job)
        assert any(a <= t0 <= t1 <= b for a, b in spans[case_id])
    # measured in rounds, the idle workers wait on their stdin: the CPU they used meanwhile is recorded, and small
    idle = small_run.df["idle_workers_cpu_s"].dropna()
    assert len(idle) and idle.max() < 0.5


def test_the_overlap_check_sees_an_overlap():
    from benchmarks_lib.run.pool import Timeline

    timeline = Timeline(runner=[(5, 15, "record")], cases=[(0, 20, "a"), (18, 30, "b")], timed=[(10, 19, "a")],
                        workers=[(1, 0, 30), (2, 0, 30)])  # cases run whole: one worker at a time
    problems = timeline.overlaps()
    assert any("runner's record" in p for p in problems)
    assert any("case b" in p for p in problems)
    assert any("2 workers" in p for p in problems)


def test_a_backends_cases_share_one_worker(small_run):
    cases = per_case(small_run)
    assert not cases.loc[cases["backend"] == "ceiling", "worker_reused"].any()
    for backend in ("raw", "zarr-python"):
        reused = cases.loc[cases["backend"] == backend, "worker_reused"]
        assert reused.sum() == 3  # the first of its 4 cases started the worker
        assert (cases.loc[(cases["backend"] == backend) & cases["worker_reused"], "t_start_s"]
                < cases.loc[(cases["backend"] == backend) & ~cases["worker_reused"], "t_start_s"].min()).all()
    assert len(small_run.timeline.workers) == 3


def test_peak_memory_of_the_harness_is_recorded(small_run):
    cases = per_case(small_run)
    assert (cases["worker_peak_rss_bytes"] > 10 * 2**20).all()
    assert (cases["runner_peak_rss_bytes"] > 10 * 2**20).all()


def test_run_json_states_the_worker_process(small_run):
    meta = json.loads((small_run.run_dir / "run.json").read_text())
    assert meta["worker_process"]["allocator"]["malloc_env"] == MALLOC_ENV
    assert "reused" in meta["worker_process"]["reuse"]


def test_timed_share_line(small_run):
    totals = phase_totals(small_run.df)
    assert 0 < totals["timed"] < totals["case"]
    line = timed_share_line(small_run.df)
    assert line.startswith("timed share (ceiling, writers): ") and "inside timed regions" in line
    assert "; the runner's peak RSS " in line and line.endswith(" MB")


def test_cases_of_a_backend_are_brought_together():
    from benchmarks_lib.suites import Case

    cases = [Case("ceiling", "ceiling", {}), *(Case("writers", b, {"test": t}) for t in ("write", "append")
                                              for b in ("raw", "h5py"))]
    ordered = CaseWorkers.order(cases)
    assert [(c.backend, c.params.get("test")) for c in ordered] == [
        ("ceiling", None), ("raw", "write"), ("raw", "append"), ("h5py", "write"), ("h5py", "append")]


def test_nested_phases_count_once():
    from benchmarks_lib.measure import timed

    LEDGER.reset()
    with phase("verify"), phase("evict"), timed():
        pass
    seconds = LEDGER.seconds()
    assert seconds["evict"] == 0 and seconds["timed"] == 0 and seconds["verify"] > 0
    with timed() as outer:
        with timed(sample=False):
            pass
        with timed(sample=False):
            pass
    assert len(LEDGER.intervals) == 1 and LEDGER.seconds()["timed"] == pytest.approx(outer.result.elapsed_s)
    with pytest.raises(ValueError, match="unknown phase"), phase("lunch"):
        pass
    LEDGER.reset()


def _append_frame_median(result) -> float:
    rows = result.df[(result.df["operation"] == "append_frame") & (result.df["status"] == "ok")]
    assert len(rows) > 0, result.df[["operation", "status", "reason"]].to_string()
    return float(rows["elapsed_s"].median())


def test_a_writer_measures_the_same_after_another_allocation_history(tmp_path):
    """acquire-zarr's appends (issue: they paid page faults in a process whose heap had been returned) measured in
    a fresh worker, and in a worker whose earlier case allocated and freed hundreds of MB (the write test): the
    medians of the frame latencies agree within a factor of two (generous: a correctness test of isolation)."""
    backend = "acquire-zarr"
    from benchmarks_lib.adapters import backend_status

    if not backend_status(backend).available:
        backend = "zarr-python"
    # uint8 frames of 2 MB, as the issue measured. Open (2026-11-27): with the uint16 microscopy frames of 4 MB the
    # quick profile now uses, the fresh worker's median frame is 2.0 ms and the reused one's 0.24 ms (8x)
    params = {"backends": [backend], "dims": "t:32:8,y:1080:540,x:1920", "multipliers": [2], "append_frames": 32,
              "append_step": 8, "fsync": False, "iterations": 1, "warmups": 1, "dataset": "em_like"}
    common = {"profile": "quick", "results_dir": tmp_path / "results", "scratch_dir": tmp_path / "scratch",
              "progress": None, "assume_yes": True, "ceiling": False}
    fresh = run_suite("writers", {**params, "tests": ["append"]}, run_id="fresh", **common)
    after = run_suite("writers", {**params, "tests": ["write", "append"]}, run_id="after-write", **common)
    appended = after.df[after.df["test"] == "append"]
    assert appended["worker_reused"].all()  # the append ran in the worker the write had used
    a, b = _append_frame_median(fresh), _append_frame_median(after)
    assert max(a, b) / min(a, b) < 2.0, (a, b)


def test_a_case_that_times_out_takes_its_worker_down_and_the_next_gets_a_fresh_one(workdir, plugin_env):
    params = {"tests": ["write"], "dims": "t:2,y:32:16,x:48", "multipliers": list(range(1, 11)), "iterations": 2,
              "warmups": 0, "backends": ["slow", "raw"]}
    result = run_suite("writers", params, profile="quick", results_dir=workdir / "results", run_id="timeout",
                       progress=None, ceiling=False, case_timeout_s=5)
    df = result.df
    slow = df[df["backend"] == "slow"]
    # the rounds it finished are kept; the round that timed out ends it with one error row
    errors = slow[slow["status"] == "error"]
    assert len(errors) == 1 and "timed out after 5 s" in errors["reason"].iloc[0]
    assert slow["t_case_s"].iloc[0] >= 5  # its wall time counts to the run's
    raw = df[(df["backend"] == "raw") & (df["operation"] == "total")]
    assert len(raw) == 20 and (raw["status"] == "ok").all() and not raw["worker_reused"].any()
    assert not any((workdir / "scratch").iterdir())


def test_the_machine_page_shows_where_the_time_went(small_run, tmp_path):
    from benchmarks_lib.book.pages import write_machine_page

    page = write_machine_page(small_run.run_dir.parent.parent, tmp_path, ["accounting"]).read_text()
    section = page.split("## Where the time went", 1)[1]
    assert "| writers | " in section and "timed share" in section
    memory = section.split("| suite | runner peak RSS (MB) | worker peak RSS (MB) |", 1)[1]
    row = next(line for line in memory.splitlines() if line.startswith("| writers |"))
    runner, worker = (float(cell) for cell in row.strip(" |").split(" | ")[-2:])
    assert runner * 1e6 == pytest.approx(per_case(small_run)["runner_peak_rss_bytes"].max(), rel=0.01)
    assert worker > 10


def test_a_generated_array_is_made_once_per_run_and_a_damaged_copy_is_made_again(tmp_path):
    """The suites that hand a whole array to every backend load it from the run's inputs after the first case; a
    copy whose bytes no longer match its digest is generated again, never used."""
    import numpy as np

    from benchmarks_lib.base.scratch import create_marked_dir
    from benchmarks_lib.data.datasets import Dataset
    from benchmarks_lib.inputs.arrays import generated

    case = create_marked_dir(tmp_path / "run") / "case-1"
    case.mkdir()
    dataset = Dataset("em_like", (4, 32, 32))
    index = (slice(0, 2), slice(None), slice(None))
    first = generated(dataset, index, case)
    kept = list((case.parent / "inputs").glob("array-*.npy"))
    assert len(kept) == 1 and np.array_equal(first, dataset.region(index))
    again = generated(dataset, index, case)
    assert np.array_equal(again, first)
    data = np.load(kept[0])
    data[0, 0, 0] ^= 1
    np.save(kept[0], data)
    assert np.array_equal(generated(dataset, index, case), dataset.region(index))


def test_a_peak_rss_that_is_not_a_number_is_left_blank():
    from benchmarks_lib.run.pool import peak_rss_mb

    df = pd.DataFrame({"runner_peak_rss_bytes": ["<b>x</b>", None], "worker_peak_rss_bytes": [2e8, 3e8]})
    assert peak_rss_mb(df, "runner_peak_rss_bytes") is None
    assert peak_rss_mb(df, "worker_peak_rss_bytes") == 300.0
    assert peak_rss_mb(df, "absent") is None


def test_phase_seconds_that_are_not_numbers_count_as_missing():
    df = pd.DataFrame({"case_id": ["a", "b"], "t_case_s": ["<b>9</b>", 2.0], "t_timed_s": [1.0, "x"]})
    assert phase_totals(df) == {"timed": 1.0, "case": 2.0}
    assert phase_totals(df.assign(t_case_s=["x", None])) is None
