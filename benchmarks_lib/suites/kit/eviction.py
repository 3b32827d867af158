"""Cold reads of one store, evicted as cheaply as the proof allows.

The full eviction (:func:`~benchmarks_lib.measure.evict_page_cache`: fsync every file, ``POSIX_FADV_DONTNEED``,
and as root ``sync`` + ``drop_caches``) flushes and evicts what every other process has too, so the next worker
re-reads its libraries from disk; it is done once per store, at its first cold read. A store written again since
(a round trip's next round) is flushed and advised out, file by file, without the global drop; a store only read
since has no dirty page, and advising its files out of the page cache is enough (``POSIX_FADV_DONTNEED``: no
fsync, no global drop; the full eviction when that leaves pages resident). The proof of each read is the same
either way: at most 1% of the store resident by ``mincore`` after the eviction, and the bytes the read took from
disk by /proc/self/io (:func:`~benchmarks_lib.measure.cold_read_state`). Whenever a proof fails, the next eviction
is the full one again. The ``drop_caches`` column of each row says whether every cache was dropped before it.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks_lib.measure import EvictionReport, evict_page_cache, list_files, resident_bytes
from benchmarks_lib.measure.cache import advise_dontneed
from benchmarks_lib.measure.ledger import phase


def advise_out(paths: list[Path] | Path) -> EvictionReport:
    """``POSIX_FADV_DONTNEED`` on every file of ``paths`` (clean pages only: nothing is flushed), and what is left
    resident after it."""
    files = [f for p in ([paths] if isinstance(paths, str | Path) else paths) for f in list_files(p)]
    return EvictionReport(len(files), advise_dontneed(files), resident_bytes(files), False)


class StoreEvictions:
    """The evictions before one store's cold reads: every cache dropped at the first, then only the store's files,
    for as long as the cold proof holds."""

    def __init__(self, drop_caches: bool = True) -> None:
        #: False: the full eviction flushes and advises out the store's files but never drops the machine's caches
        self.drop_caches = drop_caches
        self.drop_next = True
        self.drops = 0
        self.evictions = 0

    @phase("evict")
    def evict(self, files: list[Path] | Path, *, rewritten: bool = False) -> EvictionReport:
        """Evict before a cold read. ``rewritten``: the store was written again since the last eviction (its dirty
        pages are flushed first); else it was only read, and advising its files out is enough."""
        if self.drop_next:
            report = evict_page_cache(files, drop_caches=self.drop_caches)
        elif rewritten:
            report = evict_page_cache(files, drop_caches=False)
        else:
            report = advise_out(files)
            if not report.verified:  # pages that advice cannot drop: the full eviction, now
                report = evict_page_cache(files, drop_caches=self.drop_caches)
        self.evictions += 1
        self.drops += report.dropped_caches
        # a failed eviction proof (too much left resident) asks for the full drop next time
        self.drop_next = not report.verified
        return report

    def saw(self, cache_state: str | None) -> None:
        """The state a cold read was given: anything but ``cold`` asks for the full drop before the next read."""
        if cache_state != "cold":
            self.drop_next = True


__all__ = ["StoreEvictions"]
