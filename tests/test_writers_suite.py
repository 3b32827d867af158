"""The writers suite's data source: generated before the clock, bounded, checksummed as written."""

from benchmarks_lib.datasets import Dataset, checksum_blocks
from benchmarks_lib.suites import writers


def test_small_data_is_kept_whole_and_matches_the_dataset():
    d = Dataset("em_like", (10, 32, 48))
    source = writers.BlockSource(d, 3).prepare()
    blocks = list(source)
    assert not source.tiled and [o for o, _ in blocks] == [0, 3, 6, 9]
    assert source.checksum == d.checksum()


def test_large_data_is_tiled_from_a_bounded_pool(monkeypatch):
    d = Dataset("microscopy", (10, 32, 48))
    monkeypatch.setattr(writers, "CACHE_BUDGET", 2 * 32 * 48 * 2)  # two frames of uint16
    source = writers.BlockSource(d, 1).prepare()
    assert source.tiled and len(source._pool) == 2
    blocks = [b for _, b in source]
    assert len(blocks) == 10 and sum(b.shape[0] for b in blocks) == 10
    first_two = [d.region((slice(i, i + 1), slice(0, 32), slice(0, 48))) for i in range(2)]
    assert source.checksum == checksum_blocks([first_two[i % 2] for i in range(10)])
    assert source.checksum != d.checksum()


def test_untiled_large_data_is_generated_as_it_goes(monkeypatch):
    d = Dataset("labels", (6, 16, 16))
    monkeypatch.setattr(writers, "CACHE_BUDGET", 16)
    source = writers.BlockSource(d, 2, tile=False).prepare()
    assert source._pool is None
    list(source)
    assert source.checksum == d.checksum()
