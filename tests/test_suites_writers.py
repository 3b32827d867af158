"""The writers suite: data made before the clock, one timed region per write/append, fsync policy, cold proof."""

import json
import time

import numpy as np
import pytest

from benchmarks_lib.adapters.raw import RawAdapter
from benchmarks_lib.base.specs import ArraySpec, parse_dims
from benchmarks_lib.data.datasets import FAST_CHECKSUM, Dataset, checksum_blocks
from benchmarks_lib.measure import EvictionReport
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites import writers
from benchmarks_lib.suites.kit import blocks, cutouts, timed_io, verification
from benchmarks_lib.suites.kit.blocks import BlockSource


def test_small_data_is_kept_whole_and_matches_the_dataset():
    d = Dataset("em_like", (10, 32, 48))
    source = BlockSource(d, 3).prepare()
    blocks = list(source)
    assert not source.tiled and [o for o, _ in blocks] == [0, 3, 6, 9]
    assert source.checksum == d.checksum(algorithm=FAST_CHECKSUM)
    index = (slice(2, 8), slice(5, 20), slice(7, 40))
    assert np.array_equal(source.region(index), d.region(index))


def test_large_data_is_tiled_from_a_bounded_pool_and_checked_against_it():
    d = Dataset("microscopy", (10, 32, 48))
    source = BlockSource(d, 1, pool_bytes=2 * 32 * 48 * 2).prepare()  # two frames of uint16
    assert source.tiled and len(source._pool) == 2
    first_two = [d.region((slice(i, i + 1), slice(0, 32), slice(0, 48))) for i in range(2)]
    written = [first_two[i % 2] for i in range(10)]
    assert source.checksum == checksum_blocks(written, FAST_CHECKSUM)  # hashed in prepare, before any timed region
    assert source.checksum != d.checksum(algorithm=FAST_CHECKSUM)
    blocks = [b for _, b in source]
    assert len(blocks) == 10 and checksum_blocks(blocks, FAST_CHECKSUM) == source.checksum
    whole = np.concatenate(written)
    index = (slice(1, 8), slice(3, 30), slice(0, 11))
    assert np.array_equal(source.region(index), whole[index])


def test_blocks_are_never_generated_after_prepare(monkeypatch):
    d = Dataset("labels", (9, 16, 16))
    with pytest.raises(RuntimeError):
        list(BlockSource(d, 2))
    source = BlockSource(d, 2, pool_bytes=16).prepare()  # far smaller than the data: tiled
    monkeypatch.setattr(Dataset, "blocks", lambda *a, **k: pytest.fail("data generated after prepare"))
    monkeypatch.setattr(Dataset, "region", lambda *a, **k: pytest.fail("data generated after prepare"))
    assert source.tiled and sum(b.shape[0] for _, b in source) == 9
    assert source.region((slice(3, 7), slice(0, 16), slice(0, 16))).shape == (4, 16, 16)


def test_a_pool_is_reused_by_later_cases_and_regenerated_when_damaged(tmp_path, monkeypatch):
    d = Dataset("microscopy", (10, 32, 48))
    first = BlockSource(d, 1, pool_bytes=2 * 32 * 48 * 2).prepare(tmp_path)
    for made_by in ("blocks", "region"):
        monkeypatch.setattr(Dataset, made_by, lambda *a, **k: pytest.fail("a cached pool was generated again"))
    again = BlockSource(d, 1, pool_bytes=2 * 32 * 48 * 2).prepare(tmp_path)
    assert again.checksum == first.checksum and checksum_blocks((b for _, b in again), FAST_CHECKSUM) == first.checksum
    other = Dataset("microscopy", (10, 32, 48), seed=1)  # other data: other file, generated
    with pytest.raises(pytest.fail.Exception):
        BlockSource(other, 1, pool_bytes=2 * 32 * 48 * 2).prepare(tmp_path)
    monkeypatch.undo()
    (data_file,) = tmp_path.glob("pool-*.npy")
    raw = bytearray(data_file.read_bytes())
    raw[-1] ^= 0xFF  # one flipped byte: the digest no longer matches, the pool is made anew
    data_file.write_bytes(bytes(raw))
    redone = BlockSource(d, 1, pool_bytes=2 * 32 * 48 * 2).prepare(tmp_path)
    assert redone.checksum == first.checksum
    assert checksum_blocks((b for _, b in redone), FAST_CHECKSUM) == first.checksum


def test_a_kept_array_is_checked_by_the_algorithm_that_kept_it(tmp_path, monkeypatch):
    """A file kept with an xxh3 digest (the run's own environment) is loaded and checked there; a worker without
    xxhash (a library version's own environment) makes the array itself and leaves the file as it is."""
    from benchmarks_lib.inputs import arrays

    made = []

    def make():
        made.append(1)
        return np.arange(12, dtype=np.uint16).reshape(3, 4), {"note": "x"}

    data, meta = arrays.kept(tmp_path, "a", make)
    assert meta["digest"].startswith("xxh3:") and len(made) == 1
    assert np.array_equal(arrays.kept(tmp_path, "a", make)[0], data) and len(made) == 1  # loaded, checked
    before = (tmp_path / "a.json").read_text(), (tmp_path / "a.npy").read_bytes()
    monkeypatch.setattr(arrays, "FAST_CHECKSUM", "blake2b")
    again, meta = arrays.kept(tmp_path, "a", make)
    assert np.array_equal(again, data) and len(made) == 2 and not meta["digest"].startswith("xxh3:")
    assert ((tmp_path / "a.json").read_text(), (tmp_path / "a.npy").read_bytes()) == before


class _SlowSource(BlockSource):
    """Blocks handed over with a gap between them (as generating or hashing them once did)."""

    def __iter__(self):
        for item in super().__iter__():
            time.sleep(0.08)
            yield item


def test_a_background_writer_is_on_the_clock_between_calls(plugin_env, tmp_path, monkeypatch):
    from background_adapter import BackgroundAdapter

    log = tmp_path / "busy.jsonl"
    monkeypatch.setenv("IOBENCH_BACKGROUND_LOG", str(log))
    dims = parse_dims("t:6,y:16,x:16")
    spec = ArraySpec(dims, "uint8")
    source = _SlowSource(Dataset("em_like", dims.shape), 1).prepare()
    phases = timed_io.write_store(BackgroundAdapter(), tmp_path / "w", spec, source, fsync=False)
    timing = timed_io.append_store(BackgroundAdapter(), tmp_path / "a", spec, source, fsync=True)
    busy = {r["store"]: r["busy_s"] for r in map(json.loads, log.read_text().splitlines())}
    assert busy["w"] >= 6 * 0.05 and busy["a"] >= 6 * 0.05
    assert sum(phases["calls"]) < busy["w"]  # the calls alone would miss the background work
    assert phases["region"].elapsed_s >= busy["w"] and timing["region"].elapsed_s >= busy["a"]
    assert timing["sync_s"] > 0 and len(timing["frames"]) == 6
    assert (tmp_path / "w").read_bytes() == (tmp_path / "a").read_bytes()


@pytest.mark.parametrize("fsync", [False, True])
def test_recorded_totals_cover_background_work_and_state_the_fsync(workdir, plugin_env, monkeypatch, fsync):
    log = workdir / "busy.jsonl"
    monkeypatch.setenv("IOBENCH_BACKGROUND_LOG", str(log))
    params = {"backends": ["background"], "tests": ["write", "append"], "dims": "t:4,y:32:16,x:48",
              "multipliers": [1, 2], "append_frames": 6, "append_step": 3,
              "codec": "none", "fsync": fsync, "iterations": 2, "warmups": 0}
    df = run_suite("writers", params, results_dir=workdir / "results", run_id=f"bg-{fsync}", ceiling=False,
                   progress=None).df
    assert (df["status"] == "ok").all()
    busy = {r["store"]: r["busy_s"] for r in map(json.loads, log.read_text().splitlines())}
    totals = df[df["operation"] == "total"]
    assert len(totals) == 4 and totals["verified"].all()
    for _, row in totals.iterrows():
        assert row["elapsed_s"] >= busy[f"store-{int(row['multiplier'])}-{int(row['iteration'])}"]
        parts = df[(df["multiplier"] == row["multiplier"]) & (df["iteration"] == row["iteration"])
                   & df["operation"].isin(["write", "finalize"])]
        assert parts["elapsed_s"].sum() == pytest.approx(row["write_region_s"])
    appends = df[df["operation"] == "append_total"]
    assert len(appends) == 2
    for _, row in appends.iterrows():
        assert row["elapsed_s"] >= busy[f"append-{int(row['iteration'])}"] >= 2 * 0.05
        assert row["frames"] == 6 and row["frame_p99_s"] < row["elapsed_s"]
    timed_rows = df[df["operation"].isin(["write", "finalize", "total", "append_total", "append_step"])]
    assert (timed_rows["sync_method"] == ("syncfs" if fsync else "none")).all()
    assert (timed_rows["writer_fsyncs"] == False).all()  # noqa: E712
    for op in ("total", "append_total"):
        assert (df[df["operation"] == op]["fsync_included"] == fsync).all()
    syncs = df[df["operation"] == "fsync"]
    assert syncs["fsync_included"].all() and (len(syncs) == 4 if fsync else syncs.empty)
    assert (df[df["operation"] == "total"]["total_includes"] == "create+write+finalize" + ("+syncfs" * fsync)).all()


def test_a_cold_read_is_cold_only_with_its_proof(tmp_path, monkeypatch):
    dims = parse_dims("t:8,y:64,x:64")
    spec = ArraySpec(dims, "uint8")
    source = BlockSource(Dataset("random", dims.shape), 4).prepare()
    writer = RawAdapter()
    timed_io.write_store(writer, tmp_path / "raw", spec, source, fsync=True)
    row, blocks = timed_io.timed_read(RawAdapter(), tmp_path / "raw", spec, [tmp_path / "raw"], True, 4)
    assert checksum_blocks(blocks, FAST_CHECKSUM) == source.checksum
    assert row["evicted_bytes"] == spec.nbytes and "eviction_verified" in row
    assert row["cache_state"] == ("cold" if row["eviction_verified"] else "cold_unverified")
    row, _ = timed_io.timed_read(RawAdapter(), tmp_path / "raw", spec, [tmp_path / "raw"], False, 4)
    assert row["cache_state"] == "warm" and "eviction_verified" not in row
    failed = EvictionReport(files=1, bytes=spec.nbytes, resident_bytes_after=spec.nbytes, dropped_caches=False)
    monkeypatch.setattr(timed_io, "evict_page_cache", lambda files: failed)
    row, _ = timed_io.timed_read(RawAdapter(), tmp_path / "raw", spec, [tmp_path / "raw"], True, 4)
    assert row["cache_state"] == "cold_unverified" and row["eviction_verified"] is False
    index = (slice(1, 3), slice(0, 64), slice(0, 64))
    row, data = timed_io.timed_read(RawAdapter(), tmp_path / "raw", spec, [tmp_path / "raw"], True, 4, index)
    assert row["cache_state"] == "cold_unverified" and np.array_equal(data, source.region(index))


@pytest.mark.parametrize("module", [writers, blocks, cutouts, timed_io, verification])
def test_no_inline_timer_in_the_suite(module):
    import inspect

    text = inspect.getsource(module)
    assert "perf_counter" not in text and "_fsync_tree" not in text and "os.fsync" not in text


def test_every_quick_profile_keeps_enough_cutout_positions():
    assert all(p["cutout_positions"] >= 8 for p in writers.PROFILES.values())
