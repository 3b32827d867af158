"""The machine's ceilings (single stream and parallel), the flag that judges a point by the right one, fio's
cross-check, and the machine's load recorded around every case (read from the real /proc)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks_lib.base.environment import usable_cores
from benchmarks_lib.base.scratch import create_marked_dir
from benchmarks_lib.chapters import common, flags
from benchmarks_lib.measure import load
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame
from benchmarks_lib.suites import CaseContext
from benchmarks_lib.suites.ceiling import ceiling_case, describe_ceiling, fio_block, run_ceiling, stream_sizes

MB = 10**6
PARALLEL_OPS = ("write_nofsync_parallel", "write_fsync_parallel", "read_cold_parallel")


def test_stream_sizes_split_the_bytes_exactly():
    assert stream_sizes(10, 3) == [4, 3, 3]
    assert stream_sizes(2, 8) == [1, 1]  # never an empty stream
    assert sum(stream_sizes(64 * 2**20 + 5, 7)) == 64 * 2**20 + 5


def test_the_ceiling_measures_one_stream_and_parallel_streams_of_the_same_bytes(tmp_path: Path):
    scratch = create_marked_dir(tmp_path / "scratch")
    nbytes = 3 * 2**20 + 4096
    rows = run_ceiling(ceiling_case(nbytes), CaseContext(scratch=scratch, iterations=2, warmups=0, profile="quick"))
    ops = [r["operation"] for r in rows]
    for op in ("write_nofsync", "write_fsync", "read_cold", "read_warm", "memcpy", *PARALLEL_OPS):
        assert ops.count(op) == 2, op
    streams = min(usable_cores(), nbytes)
    for r in rows:
        assert r["nbytes"] == nbytes and r["queue_depth"] == 1
        assert r["streams"] == (streams if r["operation"].endswith("_parallel") else 1)
    cold = [r for r in rows if r["operation"] == "read_cold_parallel"]
    assert all(r["verified"] and r["cache_state"] in ("cold", "cold_unverified") for r in cold)
    assert all(r["cache_state"] == ("cold" if r["eviction_verified"] else "cold_unverified") or r["eviction_verified"]
               for r in cold)
    fsync = [r for r in rows if r["operation"] == "write_fsync_parallel"]
    assert all(r["fsync_included"] and r["sync_method"] == "syncfs" for r in fsync)
    if streams > 1:
        # the streams really ran side by side: the sampler saw more threads than the single-stream write
        assert max(r["threads_max"] for r in rows if r["operation"] == "write_nofsync_parallel") > \
            max(r["threads_max"] for r in rows if r["operation"] == "write_nofsync")
    assert [p.name for p in scratch.iterdir()] == [".iobench-scratch"]  # every stream's file removed


def test_every_ceiling_says_what_it_is():
    assert describe_ceiling("write_fsync") == "single stream, queue depth 1"
    assert describe_ceiling("read_cold_parallel", 4) == "4 parallel streams (one file each, queue depth 1 each)"
    assert "one thread" in describe_ceiling("memcpy")
    for odd in (None, float("nan"), "lots", float("inf"), -2, 2.5):  # a record's value, whatever it holds
        assert describe_ceiling("write_fsync_parallel", odd) == "parallel streams (one file each, queue depth 1 each)"
    df = to_frame([{"schema_version": SCHEMA_VERSION, "run_id": "r", "backend": "ceiling", "operation": op,
                    "status": "ok", "nbytes": MB, "elapsed_s": 0.01, "streams": s, "iteration": 0}
                   for op, s in (("write_fsync", 1), ("write_fsync_parallel", 3))])
    table = common.ceiling_table(df).set_index("ceiling")  # named in words, not by the record's operation
    assert table.loc["raw write + fsync, parallel streams", "what it is"].startswith("3 parallel streams")
    assert table.loc["raw write + fsync, 1 stream", "what it is"] == "single stream, queue depth 1"


def _run(points: list[tuple[str, str | None, float]], parallel: bool = True) -> pd.DataFrame:
    """A run whose single-stream ceilings move 1 GB in 1 s and parallel ones in 0.5 s (2 GB/s), and one backend's
    points: (operation, cache_state, seconds for 1 GB), five iterations each."""
    ceiling = [("write_fsync", 1.0), ("read_cold", 1.0)] + ([("write_fsync_parallel", 0.5),
                                                             ("read_cold_parallel", 0.5)] if parallel else [])
    rows = [{"backend": "ceiling", "operation": op, "elapsed_s": s, "streams": 2 if "parallel" in op else 1,
             "cache_state": "cold" if "read" in op else None, "fsync_included": "write" in op}
            for op, s in ceiling for _ in range(5)]
    rows += [{"backend": "lib", "operation": op, "cache_state": cache, "elapsed_s": s, "test": f"{op}-{cache}",
              "fsync_included": True if op == "total" else None} for op, cache, s in points for _ in range(5)]
    return to_frame([{"schema_version": SCHEMA_VERSION, "run_id": "r", "suite": "writers", "status": "ok",
                      "nbytes": 1000 * MB, "iteration": 0, **r} for r in rows])


def test_a_proven_cold_read_between_the_ceilings_is_not_noise_but_is_said_to_be_parallel():
    df = _run([("read", "cold", 0.7)])  # 1.43 GB/s: 143% of one stream, 71% of the parallel ceiling
    assert flags.above_ceiling(df).empty
    between = flags.between_ceilings(df)
    assert list(between["% of single-stream ceiling (median)"]) == ["143%"]
    assert list(between["% of parallel ceiling (median)"]) == ["71%"]
    text = common.problems(df)
    assert "passed the single-stream ceiling" in text and "noise or caching" not in text
    assert flags.point_flags(df[df["backend"] == "lib"].pipe(common.with_ceiling_fraction)) == []


def test_a_read_not_proven_cold_is_judged_by_the_single_stream_ceiling():
    df = _run([("read", "cold_unverified", 0.7)])
    high = flags.above_ceiling(df)
    assert list(high["ceiling"]) == ["read_cold (single stream, queue depth 1)"]
    assert flags.between_ceilings(df).empty


def test_above_the_parallel_ceiling_is_noise_and_the_table_names_that_ceiling():
    df = _run([("read", "cold", 0.4), ("total", None, 0.4)])  # 2.5 GB/s: above both
    high = flags.above_ceiling(df).set_index("operation")
    assert high.loc["read", "ceiling"] == "read_cold_parallel (2 parallel streams (one file each, queue depth 1 each))"
    assert high.loc["total", "ceiling"].startswith("write_fsync_parallel")
    assert high.loc["read", "% of ceiling (median)"] == "125%"


def test_a_run_without_a_parallel_ceiling_is_judged_by_the_single_stream_one_as_before():
    df = _run([("read", "cold", 0.7)], parallel=False)
    assert list(flags.above_ceiling(df)["ceiling"]) == ["read_cold (single stream, queue depth 1)"]
    assert flags.between_ceilings(df).empty


def test_fio_block_never_exceeds_the_size():
    assert fio_block(4 * 2**20) == 4 * 2**20
    assert fio_block(64 * 2**20) == 8 * 2**20
    assert fio_block(5000) == 4096


def test_fio_cross_checks_both_ceilings_at_a_size_below_its_block(tmp_path: Path):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (apt-get install fio)")
    from benchmarks_lib.suites.ceiling import run_fio

    out = run_fio(tmp_path, 4 * 2**20, repeats=1, streams=2)
    assert set(out) == {"write_fsync", "read_cold", "write_fsync_parallel", "read_cold_parallel"}
    assert all(v > 0 for v in out.values())
    assert list(tmp_path.iterdir()) == []


# -- the machine's load ---------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc")
def test_load_is_read_from_proc():
    first = float(Path("/proc/loadavg").read_text().split()[0])
    snap = load.snapshot()
    assert snap.loadavg_1m is not None and abs(snap.loadavg_1m - first) < 5  # the same counter, moments apart
    assert snap.busy_s > 0 and snap.total_s >= snap.busy_s >= snap.steal_s >= 0
    assert snap.cpus == os.cpu_count()


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc")
def test_a_cases_own_cpu_is_not_counted_as_other_load():
    before = load.snapshot()
    # a child that burns CPU for a while, reaped before the second reading: it is the "case", not other load
    subprocess.run([sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.5: pass"],
                   check=True)
    after = load.snapshot()
    assert after.children_cpu_s - before.children_cpu_s >= 0.45
    cols = load.case_columns(before, after)
    assert set(cols) == set(load.LOAD_COLUMNS)
    assert 0 <= cols["cpu_steal_pct"] <= 100 and cols["other_cpu_pct"] >= 0
    assert cols["usable_cores"] == usable_cores()


def test_under_load_says_why():
    assert load.under_load(0.5, 2, 0.0, 3.0) == ""
    assert "1-min load 3.00" in load.under_load(3.0, 2, 0.0)
    assert "CPU steal 12.0%" in load.under_load(0.1, 2, 12.0)
    assert "other processes used 60%" in load.under_load(0.1, 2, 0.0, 60.0)
    assert load.under_load(None, None, float("nan")) == ""  # nothing read, nothing flagged


def test_every_case_records_the_load_and_a_loaded_case_is_a_problem(workdir):
    from benchmarks_lib.run.runner import run_suite

    result = run_suite("ceiling", {"nbytes": "1MiB", "iterations": 1, "warmups": 0}, results_dir="results",
                       progress=None)
    df = result.df
    for col in load.LOAD_COLUMNS:
        assert col in df and df[col].notna().all(), col
    assert (df["usable_cores"] == usable_cores()).all()
    # the same records, as if the machine had been busy when the case started
    busy = df.assign(loadavg_1m_before=df["usable_cores"] + 1.0)
    loaded = flags.loaded_cases(busy)
    assert list(loaded["backend"]) == ["ceiling"] and "1-min load" in loaded["why"].iloc[0]
    assert "measured under load" in common.problems(busy)
    quiet = df.assign(loadavg_1m_before=0.0, cpu_steal_pct=0.0, other_cpu_pct=0.0)
    assert flags.loaded_cases(quiet).empty
    assert flags.loaded_cases(quiet.assign(loadavg_1m_before="lots", cpu_steal_pct="x")).empty  # a record's data


def test_each_row_is_divided_by_the_ceiling_of_its_own_run_with_its_fsync_and_cache_state():
    """Two runs with ceilings of their own (the median of each operation), one without: a write with fsync by the
    fsync ceiling, without by the other, a cold read by the cold read (and its parallel twin), a warm read by memcpy;
    an operation no ceiling judges, a row of a run without one and a row without a time get none."""
    ceiling = [("write_fsync", 1.0), ("write_fsync", 3.0), ("write_nofsync", 4.0), ("read_cold", 2.0),
               ("read_cold_parallel", 8.0), ("memcpy", 10.0)]
    rows = [{"run_id": run, "backend": "ceiling", "operation": op, "gbps": g * scale, "status": "ok"}
            for run, scale in (("a", 1.0), ("b", 2.0)) for op, g in ceiling]
    rows += [{"run_id": "a", "backend": "lib", "operation": "total", "gbps": 1.0, "fsync_included": True},
             {"run_id": "a", "backend": "lib", "operation": "total", "gbps": 1.0, "fsync_included": False},
             {"run_id": "b", "backend": "lib", "operation": "read_cold", "gbps": 1.0, "cache_state": "cold"},
             {"run_id": "b", "backend": "lib", "operation": "read", "gbps": 5.0, "cache_state": "warm"},
             {"run_id": "b", "backend": "lib", "operation": "encode", "gbps": 1.0},
             {"run_id": "c", "backend": "lib", "operation": "read_cold", "gbps": 1.0, "cache_state": "cold"},
             {"run_id": "a", "backend": "lib", "operation": "total", "gbps": None, "fsync_included": True}]
    df = pd.DataFrame([{"status": "ok", "fsync_included": None, "cache_state": None, **r} for r in rows])
    got = common.with_ceiling_fraction(df)[df["backend"] == "lib"]
    assert got["ceiling_op"].fillna("-").tolist() == ["write_fsync", "write_nofsync", "read_cold", "memcpy", "-",
                                                      "read_cold", "write_fsync"]
    assert got["pct_of_ceiling"].round(6).tolist()[:4] == [50.0, 25.0, 25.0, 25.0]  # of 2 (median), 4, 4, 20 GB/s
    assert got["pct_of_ceiling"].iloc[4:].isna().all()
    assert got["pct_of_parallel_ceiling"].round(6).tolist()[2] == 6.25  # of b's 16 GB/s
    assert got["pct_of_parallel_ceiling"].drop(got.index[2]).isna().all()
    assert len(common.with_ceiling_fraction(df)) == len(df) and "pct_of_ceiling" not in df  # the caller's rows kept
