"""Tables and conclusions of the writer chapter from synthetic records: medians, intervals, like for like."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks_lib.base.stats import median_ci
from benchmarks_lib.chapters import common, flags, writers
from benchmarks_lib.records.store import SCHEMA_VERSION
from benchmarks_lib.records.store import to_frame as _to_frame

MB = 10**6
SKEWED = [1.0, 1.1, 1.2, 1.0, 1.05, 9.0]


def _writes(backend: str, codec: str, times, nbytes: int = 100 * MB, fsync: bool = True, threads: int = 4,
            **extra) -> list[dict]:
    return [{"run_id": "r", "suite": "writers", "backend": backend, "test": "write", "operation": "total",
             "iteration": i, "status": "ok", "codec": codec, "nbytes": nbytes, "elapsed_s": t, "fsync_included": fsync,
             "threads_max": threads, "multiplier": nbytes // MB, "shape": [10, 100, 100], "memory_ratio": 0.1,
             "bytes_on_disk": nbytes // 2, "inodes": 10, "verified": True, **extra} for i, t in enumerate(times)]


def _ceiling() -> list[dict]:
    return [{"run_id": "r", "suite": "writers", "backend": "ceiling", "operation": op, "iteration": i,
             "status": "ok", "nbytes": 100 * MB, "elapsed_s": 0.05} for op in ("write_fsync", "write_nofsync")
            for i in range(3)]


def to_frame(rows: list[dict]) -> pd.DataFrame:
    return _to_frame([{"schema_version": SCHEMA_VERSION, **r} for r in rows])


FAST = [1.0, 1.01, 0.99, 1.02, 0.98]
SLOW = [2.0, 2.01, 1.99, 2.02, 1.98]
NOISY = [0.6, 3.0, 1.5, 2.5, 1.0]
#: the same for 8 iterations, the rule's first look (each iteration stands for a round: fewer than 8 stay open)
FAST8, SLOW8, NOISY8 = [*FAST, 1.0, 1.01, 0.99], [*SLOW, 2.0, 2.01, 1.99], [*NOISY, 0.7, 2.0, 1.2]


def test_summary_states_median_ci_and_n_not_mean():
    df = to_frame(_ceiling() + _writes("zarr-python", "blosc-lz4:5:shuffle", SKEWED))
    table = writers.summary(df)
    cell = table.loc["bandwidth (GB/s, median [95% CI])", "zarr-python"]
    gbps = [0.1 / t for t in SKEWED]
    med, lo, hi, _ = median_ci(gbps)
    assert cell == f"{med:.3g} [{lo:.3g}, {hi:.3g}] (n=6)"
    assert f"{np.mean(gbps):.3g}" not in cell
    assert not any("mean" in str(i) for i in table.index)
    assert table.loc["shuffle", "zarr-python"] == "shuffle"
    assert "thread" in table.loc["threads", "zarr-python"]


def test_summary_compares_the_size_every_backend_finished():
    df = to_frame(_writes("a", "lz4", FAST, nbytes=100 * MB) + _writes("a", "lz4", FAST, nbytes=400 * MB)
                  + _writes("b", "lz4", SLOW, nbytes=100 * MB))
    table = writers.summary(df)
    assert table.loc["size (MB)", "a"] == table.loc["size (MB)", "b"] == "100.0"


def test_conclusion_refuses_to_rank_different_codecs_and_names_raw_the_baseline():
    df = to_frame(_ceiling() + _writes("raw", "none", FAST, threads=1) + _writes("wkw", "lz4", SLOW, threads=1)
                  + _writes("ome-writers:tensorstore", "blosc-lz4:5:bitshuffle", FAST)
                  + _writes("h5py", "blosc-lz4:5:shuffle", SLOW, threads=1))
    text = writers.conclusion(df)
    assert "slower than" not in text and "fastest" not in text
    assert text.count("not ranked") == 4  # three lone codecs and the baseline
    assert "raw (uncompressed, not ranked)" in text
    assert "codec `blosc-lz4:5:bitshuffle` (bitshuffle)" in text and "codec `lz4` (no shuffle)" in text
    assert "1 thread(s)" in text or "up to 1 threads seen" in text


def test_conclusion_names_a_leader_only_where_the_rule_decides():
    codec = "blosc-lz4:5:shuffle"
    df = to_frame(_writes("a", codec, FAST8) + _writes("b", codec, SLOW8) + _writes("c", codec, NOISY8))
    text = writers.conclusion(df)
    line = next(x for x in text.splitlines() if x.startswith("- **write**"))
    # a and c not told apart at the first look: no leader named, the question open; b left it there
    assert "open after 8 rounds" in line and "**a**" not in line and "next look at round 12" in line
    assert "out: b 2.00x slower" in line and "at round 8" in line
    # the entries: the paired leader a first, then c, then b (that left the question), every one against a
    entries = line.split("(3 backends); ", 1)[1]
    assert entries.startswith("a ") and entries.index("; c ") < entries.index("; b ")
    assert "1.35x slower than a [" in entries.split("; c ")[1] and "not told apart" in entries.split("; c ")[1]
    assert "2.00x slower than a [" in entries.split("; b ")[1] and "out at round 8" in entries.split("; b ")[1]
    assert "than c" not in line and "than b" not in line
    assert "**not told apart** means that interval includes 1." in text  # the legend names the entries' word
    text = writers.conclusion(to_frame(_writes("a", codec, FAST8) + _writes("b", codec, SLOW8)))
    assert "**a** fastest, by more than 5%" in text and "2.00x slower than a [" in text
    assert "(decided at round 8)" in text and "open after" not in text
    assert "not told apart" not in text.split("means that interval includes 1.", 1)[1]
    # below the first look (5 iterations) nothing is decided, however far apart
    text = writers.conclusion(to_frame(_writes("a", codec, FAST) + _writes("b", codec, SLOW)))
    line = next(x for x in text.splitlines() if x.startswith("- **write**"))
    assert "open after 5 rounds" in line and "**a**" not in line and "fastest" not in line


def test_conclusion_keeps_sizes_and_fsync_apart():
    codec = "lz4"
    df = to_frame(_writes("a", codec, FAST8, nbytes=100 * MB) + _writes("a", codec, FAST8, nbytes=400 * MB)
                  + _writes("b", codec, SLOW8, nbytes=100 * MB) + _writes("c", codec, FAST8, fsync=False))
    lines = [x for x in writers.conclusion(df).splitlines() if x.startswith("- **write**")]
    assert len(lines) == 2
    synced = next(x for x in lines if "fsync included" in x)
    assert "100 MB" in synced and "slower than a" in synced and " c " not in synced
    unsynced = next(x for x in lines if "no fsync" in x)
    assert " c " in unsynced and "not ranked" in unsynced


def test_always_sharded_writer_is_labelled():
    df = to_frame(_writes("acquire-zarr", "blosc-lz4:5:shuffle", FAST))
    assert "one chunk per shard" in writers.summary(df).loc["note", "acquire-zarr"]
    rows = pd.DataFrame({"backend": ["acquire-zarr", "acquire-zarr", "zarr-python"],
                         "layout": ["unsharded 64", "sharded 128/32", "unsharded 64"]})
    assert writers.label_layouts(rows)["layout"].tolist() == ["unsharded 64 (1 chunk per shard)", "sharded 128/32",
                                                             "unsharded 64"]


@pytest.mark.parametrize(("codec", "shuffle"), [("blosc-zstd:3:bitshuffle", "bitshuffle"), ("blosc-lz4:5:noshuffle",
                         "no shuffle"), ("blosc-lz4", "shuffle"), ("zstd:3", "no shuffle"), (None, "no shuffle")])
def test_shuffle_of(codec, shuffle):
    assert common.shuffle_of(codec) == shuffle


def test_generic_summary_does_not_pool_codecs():
    df = to_frame(_writes("a", "lz4", FAST) + _writes("a", "zstd:3", SLOW))
    out = common.generic_summary(df)
    assert len(out) == 2 and set(out["codec"]) == {"lz4", "zstd:3"}
    assert (out["95% CI lo s"] <= out["median s"]).all() and (out["n"] == 5).all()


def test_a_throughput_above_the_ceiling_is_flagged_as_noise_not_presented_as_a_result():
    # the raw write + fsync ceiling moves 100 MB in 0.05 s (2 GB/s); "fast" claims 5 GB/s: 250% of it
    df = to_frame(_ceiling() + _writes("fast", "lz4", [0.02, 0.021, 0.019]) + _writes("slow", "lz4", SLOW))
    table = writers.summary(df)
    assert "above the ceiling: noise or caching" in table.loc["% of raw write ceiling (median)", "fast"]
    assert "above" not in table.loc["% of raw write ceiling (median)", "slow"]
    high = flags.above_ceiling(df)
    assert high["backend"].tolist() == ["fast"] and high["iterations above"].iloc[0] == "3 of 3"
    # the store is half its array on disk (bytes_on_disk): 125% of the ceiling in the bytes that moved
    assert high["ceiling"].iloc[0] == "write_fsync (single stream, queue depth 1)"
    assert high["% of ceiling (median)"].iloc[0] == "125%"
    problems = writers.problems(df)
    assert "1 point(s) above this machine's ceiling" in problems and "| fast |" in problems
    assert "slow" not in problems
    assert "250% of this machine's ceiling (above the ceiling" in writers.conclusion(df)
    # a store that compressed 4:1 moved a quarter of the bytes: 62% of the disk's ceiling, a real result
    packed = to_frame(_ceiling() + _writes("fast", "lz4", [0.02, 0.021, 0.019], compression_ratio=4.0))
    assert flags.above_ceiling(packed).empty
    assert "above" not in writers.summary(packed).loc["% of raw write ceiling (median)", "fast"]


def test_phases_steps_and_compressed_stores_are_judged_on_what_moved():
    # a writer's write phase (its finalize still to come) and an append step (into buffers) may pass the
    # disk's rate; a store 4x smaller on disk moved a quarter of the bytes: none of them is flagged
    fast = [0.02, 0.021, 0.019]
    phase = [{**r, "operation": "write"} for r in _writes("a", "lz4", fast)]
    step = [{**r, "operation": "append_step"} for r in _writes("b", "lz4", fast)]
    packed = _writes("c", "lz4", [0.04, 0.041, 0.039], bytes_on_disk=25 * MB)
    assert flags.above_ceiling(to_frame(_ceiling() + phase + step + packed)).empty
    assert flags.above_ceiling(to_frame(_ceiling() + _writes("d", "none", [0.04, 0.041, 0.039],
                                                              bytes_on_disk=100 * MB)))["backend"].tolist() == ["d"]


def test_a_timed_region_under_100_ms_is_listed_and_its_ranking_says_so():
    short = _writes("quick", "lz4", [0.05, 0.06, 0.055])  # whole writes of 50-60 ms: fixed costs weigh
    phases = [{**r, "operation": "write", "elapsed_s": 0.001} for r in _writes("slow", "lz4", SLOW)]
    frames = [{**r, "operation": "append_frame", "elapsed_s": 0.002} for r in _writes("slow", "lz4", SLOW)]
    df = to_frame(short + _writes("slow", "lz4", SLOW) + phases + frames)
    table = flags.short_points(df)
    assert table[["backend", "operation", "median time", "n"]].values.tolist() == [["quick", "total", "55 ms", 3]]
    assert "1 point(s) lasted under 100 ms" in common.problems(df) and "| quick |" in common.problems(df)
    assert "quick" in writers.conclusion(df) and "under 100 ms: fixed costs weigh" in writers.conclusion(df)
    assert flags.short_points(to_frame(_writes("slow", "lz4", SLOW))).empty


def test_problems_lists_errors_skips_and_unproven_cold_reads():
    ok = _writes("a", "lz4", FAST)
    assert common.problems(to_frame(ok)).startswith("No errors, no skipped cases")
    bad = [{**ok[0], "iteration": 9, "status": "error", "reason": "Traceback\nboom | <here>"},
           {**ok[0], "backend": "b", "status": "skip", "reason": "not installed"},
           {**ok[0], "operation": "read_cold", "test": "read", "cache_state": "cold_unverified"}]
    text = common.problems(to_frame(ok + bad))
    assert "1 error row(s)" in text and "Traceback" in text and "boom" not in text
    assert "| b |" in text and "not installed" in text and "1 read(s) could not be proven cold" in text
