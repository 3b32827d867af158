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


def test_held_files_follow_the_tree_they_advise_out(tmp_path):
    """The files held open between evictions are the files the paths name now: one replaced (a new inode), one
    grown, one added and one removed are all advised out and proven; closing lets every one go."""
    from benchmarks_lib.measure.eviction import HeldFiles

    store = _store(tmp_path)
    os.sync()  # no dirty page: advice alone drops them
    held = HeldFiles()
    _read_all(store)
    report = held.advise_out(store)
    assert report.files == 4 and report.verified and resident_bytes(store) == 0
    (store / "c0").unlink()
    (store / "c0").write_bytes(os.urandom(300 * 1024))  # replaced: another inode
    with open(store / "c1", "ab") as f:  # grown in place
        f.write(os.urandom(64 * 1024))
    (store / "c2").unlink()
    (store / "c9").write_bytes(os.urandom(100 * 1024))
    os.sync()
    _read_all(store)
    assert resident_bytes(store) > 0
    report = held.advise_out(store)
    assert report.files == 4 and report.bytes == 300 * 1024 + 320 * 1024 + 256 * 1024 + 100 * 1024
    assert report.verified and report.resident_bytes_after == resident_bytes(store) == 0
    assert sorted(held._held) == sorted(str(f) for f in store.iterdir())
    fds = [fd for _, fd, _, _ in held._held.values()]
    held.close()
    assert not held._held
    for fd in fds:
        try:
            os.fstat(fd)
        except OSError:
            continue
        raise AssertionError(f"descriptor {fd} still open")


def test_a_store_written_again_is_flushed_without_the_global_drop(tmp_path, monkeypatch):
    """After ``rewrote`` (the sharding sweep's new store at the same path) the next eviction flushes and advises
    the files out without dropping the machine's caches; the one after that advises only."""
    from benchmarks_lib.measure import eviction

    full = []
    real = eviction.evict_page_cache
    monkeypatch.setattr(eviction, "evict_page_cache", lambda files, **kw: (full.append(kw), real(files, **kw))[1])
    store = _store(tmp_path)
    evictions = StoreEvictions()
    evictions.evict(store)
    evictions.close()
    for f in store.iterdir():  # written again: new files at the same paths
        f.unlink()
        f.write_bytes(os.urandom(256 * 1024))
    evictions.rewrote()
    assert evictions.evict(store).verified and full[-1] == {"drop_caches": False} and len(full) == 2
    _read_all(store)
    assert evictions.evict(store).verified and len(full) == 2 and resident_bytes(store) == 0
