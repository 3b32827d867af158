"""The measuring core: datasets, eviction, records, scratch safety, the runner's crash and resume."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks_lib.base.scratch import MARKER, ScratchError, claim_scratch, release_scratch, remove_tree
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.data.datasets import DATASETS, Dataset, checksum_array
from benchmarks_lib.measure import disk_usage, evict_page_cache, measure, resident_bytes
from benchmarks_lib.records.store import COLUMNS, SCHEMA_VERSION, load_run, to_frame, write_atomic_parquet
from benchmarks_lib.run.runner import run_suite


@pytest.mark.parametrize("name", list(DATASETS))
def test_dataset_is_deterministic_and_blockwise_consistent(name):
    d = Dataset(name, (6, 40, 50), seed=3)
    full = d.region((slice(0, 6), slice(0, 40), slice(0, 50)))
    assert full.dtype == np.dtype(DATASETS[name][0])
    assert np.array_equal(full, Dataset(name, (6, 40, 50), seed=3).region((slice(0, 6), slice(0, 40), slice(0, 50))))
    assert np.array_equal(full[2:5, 7:19, 3:41], d.region((slice(2, 5), slice(7, 19), slice(3, 41))))
    assert d.checksum(1) == d.checksum(4) == checksum_array(full)
    assert d.checksum() != Dataset(name, (6, 40, 50), seed=4).checksum() or name == "labels"


@pytest.mark.parametrize("name", list(DATASETS))
def test_a_region_made_on_every_core_equals_one_made_plane_by_plane(name, monkeypatch):
    """Large regions are generated plane by plane on every core (each plane seeded by its index): the same values
    as one plane at a time."""
    from benchmarks_lib.data import datasets

    d = Dataset(name, (5, 300, 400), seed=2)
    index = (slice(0, 5), slice(10, 290), slice(0, 400))
    monkeypatch.setattr(datasets, "PARALLEL_BYTES", 1)
    together = d.region(index)
    monkeypatch.setattr(datasets, "PARALLEL_BYTES", 1 << 62)
    assert np.array_equal(together, d.region(index))


def test_stated_compressibility_orders_datasets():
    ratios = {n: Dataset(n, (2, 256, 256)).compressibility() for n in DATASETS}
    assert ratios["random"] < 1.05 < ratios["em_like"] < ratios["microscopy"] < ratios["labels"]


def test_eviction_is_verified_on_a_real_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(16 * 2**20))
    path.read_bytes()
    assert resident_bytes(path) > 0
    report = evict_page_cache(path)
    assert report.verified and report.resident_bytes_after <= report.bytes // 100
    m = measure(lambda: path.read_bytes())
    if m.io is not None:  # the cold read really came from the device
        assert m.io.read_bytes >= 0.9 * path.stat().st_size


def test_disk_usage_counts_inodes(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 5000)
    usage = disk_usage(tmp_path / "a")
    assert usage.inodes == 2 and usage.logical_bytes == 5000 and usage.allocated_bytes >= 4096


def test_record_schema_round_trip(tmp_path):
    rows = [{"schema_version": SCHEMA_VERSION, "run_id": "r", "suite": "s", "backend": "b", "operation": "write",
             "iteration": i, "status": "ok", "elapsed_s": 0.5, "nbytes": 10**9, "rss_growth_bytes": 2 * 10**9,
             "shape": [4, 5], "verified": True} for i in range(3)]
    df = to_frame(rows)
    write_atomic_parquet(df, tmp_path / "x.parquet")
    back = pd.read_parquet(tmp_path / "x.parquet")
    assert list(back.columns)[: len(COLUMNS)] == list(COLUMNS)
    assert back["gbps"].iloc[0] == pytest.approx(2.0) and back["memory_ratio"].iloc[0] == pytest.approx(2.0)
    assert back["elapsed_s"].dtype == np.float64 and str(back["iteration"].dtype) == "int64"
    assert list(back["shape"].iloc[0]) == [4, 5]
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_cleanup_never_follows_a_symlink_out_of_scratch(tmp_path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("measured data")
    scratch = claim_scratch(tmp_path / "scr", "run")
    (scratch / "case").mkdir()
    (scratch / "case" / "link").symlink_to(outside, target_is_directory=True)
    (scratch / "link-file").symlink_to(outside / "keep.txt")
    with pytest.raises(ScratchError):
        remove_tree(outside, scratch)
    with pytest.raises(ScratchError):
        remove_tree(scratch / "case" / "link" / "keep.txt", scratch)
    remove_tree(scratch / "link-file", scratch)
    remove_tree(scratch, scratch)
    assert not scratch.exists()
    assert (outside / "keep.txt").read_text() == "measured data"
    unmarked = tmp_path / "unmarked"
    unmarked.mkdir()
    with pytest.raises(ScratchError):
        remove_tree(unmarked, unmarked)
    assert unmarked.exists() and not (unmarked / MARKER).exists()


def test_a_tree_a_dying_process_still_writes_into_is_removed_once_it_stops(tmp_path):
    """A stopped case's workers die with it a moment later, and until then may still add files to its store: the
    removal of the scratch tries again (``REMOVE_TRIES``) instead of failing the stopped run with "Directory not
    empty" (``run parallel`` under SIGTERM exited 1 one time in four)."""
    import threading

    scratch = claim_scratch(tmp_path / "scr", "run")
    store = scratch / "store" / "c"
    store.mkdir(parents=True)
    stop = time.monotonic() + 0.5

    def writer():  # a dying writer: files into the store for half a second, wherever the removal has got to
        n = 0
        while time.monotonic() < stop:
            with contextlib.suppress(OSError):
                store.mkdir(parents=True, exist_ok=True)
                (store / f"{n}").write_bytes(b"x")
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while time.monotonic() < stop - 0.4:  # the writer under way before the removal starts
            time.sleep(0.01)
        remove_tree(scratch / "store", scratch)
    finally:
        thread.join()
    remove_tree(scratch / "store", scratch)  # what the writer made after the last try, if any (nothing left)
    assert not (scratch / "store").exists()


def test_a_claimed_scratch_is_never_claimed_twice(tmp_path):
    """A live scratch directory is locked: a second claim (another run, or this process again) is refused with
    its contents untouched; once removed it can be claimed anew, and a killed run's leftovers are emptied."""
    scratch = claim_scratch(tmp_path / "scr", "run")
    (scratch / "live.bin").write_bytes(b"being measured")
    with pytest.raises(SpecError, match="is in use by another iobench"):
        claim_scratch(tmp_path / "scr", "run")
    assert (scratch / "live.bin").read_bytes() == b"being measured"
    remove_tree(scratch, scratch)
    again = claim_scratch(tmp_path / "scr", "run")
    (again / "left.bin").write_bytes(b"a killed run's")
    release_scratch(again)  # as the kernel does when its run is killed
    assert claim_scratch(tmp_path / "scr", "run") == again and list(again.iterdir()) == [again / MARKER]
    remove_tree(again, again)


TINY = {"tests": ["write"], "dims": "t:2,y:32:16,x:48", "multipliers": [1, 2], "iterations": 2, "warmups": 0}


def test_crashing_adapter_becomes_an_error_row_and_the_sweep_goes_on(workdir, plugin_env):
    result = run_suite("writers", {**TINY, "backends": ["raw", "crashing", "zarr-python"]}, profile="quick",
                       results_dir=workdir / "results", run_id="crash", progress=None)
    df = result.df
    crashed = df[df["backend"] == "crashing"]
    assert len(crashed) == 1 and crashed["status"].iloc[0] == "error"
    assert "signal" in crashed["reason"].iloc[0] or "-11" in crashed["reason"].iloc[0]
    for backend in ("raw", "zarr-python"):
        ok = df[(df["backend"] == backend) & (df["operation"] == "total")]
        assert len(ok) == 4 and (ok["status"] == "ok").all() and ok["verified"].all()
    assert result.failed == 1
    assert not any((workdir / "scratch").iterdir())
    # a resume measures again the case that holds only an error row, and leaves the others alone
    records = result.run_dir / "records"
    before = {p.name: p.stat().st_mtime_ns for p in records.glob("*.parquet")}
    again = run_suite("writers", {**TINY, "backends": ["raw", "crashing", "zarr-python"]}, profile="quick",
                      results_dir=workdir / "results", run_id="crash", progress=None)
    after = {p.name: p.stat().st_mtime_ns for p in records.glob("*.parquet")}
    changed = {name for name in before if after[name] != before[name]}
    assert changed == {name for name in before if "crashing" in name}
    assert len(again.df[again.df["backend"] == "crashing"]) == 1


def test_kill_9_then_resume_gives_exactly_the_expected_rows(workdir, plugin_env):
    cmd = [sys.executable, "-m", "benchmarks_lib", "run", "writers", "--results-dir", "results", "--run-id", "k9",
           "--test", "write", "-d", "t:2,y:32:16,x:48", "--param", "multipliers=[1,2,3]", "--iterations", "2",
           "--warmups", "0", "-b", "raw", "-b", "slow", "-b", "zarr-python"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # plugin_env's PYTHONPATH
    records = None
    deadline = time.time() + 120
    while time.time() < deadline:
        found = list((workdir / "results").glob("*/k9/records/*.parquet"))
        if len(found) >= 2:  # the ceiling and raw are done; slow is running
            records = found[0].parent
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert records is not None
    partial = len(list(records.glob("*.parquet")))
    assert partial < 4
    rc = subprocess.run(cmd, capture_output=True, text=True).returncode
    assert rc == 0
    df, meta = load_run(records.parent)
    assert sorted(df["case_id"].unique()) == sorted(meta["cases"])
    totals = df[df["operation"] == "total"]
    assert len(totals) == 3 * 3 * 2  # backends x sizes x iterations, none lost, none twice
    assert not totals.duplicated(["backend", "multiplier", "iteration"]).any()


def test_resume_with_other_parameters_is_refused(workdir):
    run_suite("ceiling", {"nbytes": "1MiB", "iterations": 1, "warmups": 0}, results_dir="results", run_id="c1",
              progress=None)
    from benchmarks_lib.base.specs import SpecError

    with pytest.raises(SpecError, match="other parameters"):
        run_suite("ceiling", {"nbytes": "2MiB", "iterations": 1, "warmups": 0}, results_dir="results", run_id="c1",
                  progress=None)


def test_records_carry_environment(workdir):
    result = run_suite("ceiling", {"nbytes": "4MiB", "iterations": 2, "warmups": 1}, results_dir="results",
                       run_id="env", progress=None)
    df, env = result.df, result.meta["environment"]
    for key in ("cpu_model", "cpu_count", "ram_bytes", "fs_type", "kernel", "python", "git_commit", "machine"):
        assert key in df.columns and key in env
    assert env["version_numpy"] and env["fs_type"]
    assert set(df["operation"]) == {"write_nofsync", "write_fsync", "read_cold", "read_warm", "memcpy",
                                    "write_nofsync_parallel", "write_fsync_parallel", "read_cold_parallel"}
    assert (df["gbps"] > 0).all()
    assert df[df["operation"].isin(["read_cold", "read_cold_parallel"])]["verified"].all()
    assert Path(result.run_dir, "run.json").exists()


def test_a_notebook_without_a_results_dir_writes_to_the_checkouts_results_wherever_it_runs(monkeypatch, tmp_path):
    from benchmarks_lib.base.paths import checkout_dirs

    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(tmp_path)  # JupyterLab starts a notebook in notebooks/, papermill wherever it is asked
    assert checkout_dirs() == (root / "results", root / ".iobench-scratch")


def test_a_measuring_worker_never_loads_pandas_or_the_chapters():
    """The worker's start-up and memory baseline are the case's own: no pandas, no matplotlib, no chapters."""
    code = ("import sys, benchmarks_lib.run.worker\n"
            "from benchmarks_lib.suites import get_suite, suite_names\n"
            "[get_suite(s) for s in suite_names()]\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'matplotlib', 'seaborn')\n"
            "             or m.startswith('benchmarks_lib.chapters')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_public_name_resolves():
    import benchmarks_lib as ib

    assert all(getattr(ib, name) is not None for name in ib.__all__)
    with pytest.raises(AttributeError):
        ib.not_a_public_name  # noqa: B018
