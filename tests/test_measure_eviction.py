"""Evictions before one store's cold reads: the machine's caches dropped once per store, then the store's own files
advised out, for as long as the cold proof holds (real files, real page cache)."""

from __future__ import annotations

import os

from benchmarks_lib.measure import resident_bytes
from benchmarks_lib.measure.eviction import StoreEvictions, advise_out


def _store(tmp_path, files: int = 4, size: int = 256 * 1024):
    store = tmp_path / "store"
    store.mkdir()
    for i in range(files):
        (store / f"c{i}").write_bytes(os.urandom(size))
    return store


def _read_all(store):
    for f in sorted(store.iterdir()):
        f.read_bytes()


def test_the_first_eviction_is_the_full_one_and_later_ones_advise_the_files_out(tmp_path, monkeypatch):
    from benchmarks_lib.measure import eviction

    full = []
    real = eviction.evict_page_cache
    monkeypatch.setattr(eviction, "evict_page_cache", lambda files, **kw: (full.append(kw), real(files, **kw))[1])
    store = _store(tmp_path)
    evictions = StoreEvictions()
    first = evictions.evict(store)
    assert len(full) == 1 and first.verified and first.files == 4
    assert first.dropped_caches == (os.geteuid() == 0)
    for _ in range(3):  # read (so the pages come back), then evicted again by advice alone
        _read_all(store)
        report = evictions.evict(store)
        assert report.verified and not report.dropped_caches and resident_bytes(store) == 0
    assert len(full) == 1 and evictions.evictions == 4
    evictions.saw("cold_unverified")  # a failed proof: the full eviction again, next time
    evictions.evict(store)
    assert len(full) == 2
    evictions.evict(store, rewritten=True)  # written again since: flushed, without the global drop
    assert full[-1] == {"drop_caches": False}


def test_advice_reports_what_stays_resident(tmp_path):
    store = _store(tmp_path, files=2)
    for f in store.iterdir():  # a store that was only read since its last flush: no dirty page
        fd = os.open(f, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    _read_all(store)
    report = advise_out(store)
    assert report.files == 2 and report.bytes == 2 * 256 * 1024
    assert report.resident_bytes_after == resident_bytes(store) and report.verified


def test_the_cache_suite_never_drops_the_machines_caches(tmp_path, monkeypatch):
    from benchmarks_lib.measure import eviction

    seen = []
    real = eviction.evict_page_cache
    monkeypatch.setattr(eviction, "evict_page_cache", lambda files, **kw: (seen.append(kw), real(files, **kw))[1])
    store = _store(tmp_path, files=1)
    evictions = StoreEvictions(drop_caches=False)
    assert not evictions.evict(store).dropped_caches
    evictions.saw("cold_unverified")
    assert not evictions.evict(store).dropped_caches
    assert seen == [{"drop_caches": False}, {"drop_caches": False}]
