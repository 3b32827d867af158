"""Page-cache eviction for a set of files, and proof that it worked.

Eviction: ``syncfs`` once per filesystem the files are on (dirty pages cannot be dropped; one call, where an
fsync per file cost a journal commit each), then posix_fadvise(DONTNEED) per file;
when running as root also ``echo 3 > /proc/sys/vm/drop_caches``. Proof, by bytes: mincore(2)
on an mmap of each file counts the bytes still resident, which must be at most 1% of the
store (``EvictionReport.verified``); after the read, ``read_bytes`` from /proc/self/io must
come close to the bytes read from disk (:func:`cold_read_state`). A read whose proof fails is
labelled ``cold_unverified``, never ``cold``.

Cold reads of one store, evicted as cheaply as the proof allows (:class:`StoreEvictions`): the full eviction
(:func:`evict_page_cache`, with ``drop_caches``) evicts what every other process has too, so the next worker re-reads
its libraries from disk; it is done once per store, at its first cold read. A store written again since (a round
trip's next round) is flushed and advised out without the global drop; a store only read since has no dirty page,
and advising its files out is enough (no sync, no global drop; the full eviction when that leaves pages resident),
through its files held open and mapped from one eviction to the next (:class:`HeldFiles`: three calls per file where
opening them afresh made seven; the evictions of a quick writers read round of 129 files, 21 ms, became 12 ms, and
those of a sharding round, 22 to 30 ms, 9 ms). The proof of each read is the same either way, and whenever it
fails, the next eviction is the full one again. The ``drop_caches`` column of each row says whether every cache was
dropped before it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import mmap
import os
import resource
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks_lib.measure.disk import list_files, scan_files
from benchmarks_lib.measure.ledger import phase
from benchmarks_lib.measure.sync import sync_store

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
#: mincore taking the vector's address as a number (numpy's), with no ctypes pointer made per call
_mincore_at = _libc["mincore"]
_mincore_at.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_PAGE = mmap.PAGESIZE


@dataclass(frozen=True)
class EvictionReport:
    files: int
    bytes: int
    resident_bytes_after: int
    dropped_caches: bool

    @property
    def verified(self) -> bool:
        """True when at most 1% of the store's bytes are still in the page cache."""
        return self.resident_bytes_after <= self.bytes // 100

    def as_row(self) -> dict:
        return {"resident_bytes_before_read": self.resident_bytes_after, "evicted_bytes": self.bytes,
                "eviction_verified": self.verified, "drop_caches": self.dropped_caches}


#: a cold read must show at least this share of the bytes it needed as real disk reads
MIN_DISK_READ_SHARE = 0.5


def cold_read_state(report: EvictionReport, io_read_bytes: int | None, needed_bytes: int) -> str:
    """``cold`` when the eviction was proven and /proc/self/io shows the read reached the disk.

    ``needed_bytes`` is what the read must fetch from disk when cold (the bytes on disk of
    the files it touches; for a cutout, at least the compressed chunks it covers, so pass a
    lower bound). Without I/O counters only the eviction proof counts.
    """
    if not report.verified:
        return "cold_unverified"
    if io_read_bytes is not None and needed_bytes > 0 and io_read_bytes < MIN_DISK_READ_SHARE * needed_bytes:
        return "cold_unverified"
    return "cold"


def _resident_file(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return _resident_fd(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _resident_fd(fd: int, size: int) -> int:
    """Bytes of the open file ``fd`` (``size`` bytes long) in the page cache now (mincore over a mapping of it)."""
    if size == 0:
        return 0
    addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        return 0
    try:
        pages = (size + _PAGE - 1) // _PAGE
        vec = (ctypes.c_ubyte * pages)()
        if _libc.mincore(addr, size, vec) != 0:
            return 0
        return int(np.count_nonzero(np.frombuffer(vec, dtype=np.uint8) & 1)) * _PAGE
    finally:
        _libc.munmap(addr, size)


def resident_bytes(paths: list[str | Path] | str | Path) -> int:
    """Bytes of these files (or trees) that are in the page cache now."""
    items = [paths] if isinstance(paths, str | Path) else paths
    return sum(_resident_file(f) for p in items for f in list_files(p))


def advise_dontneed(files: list[Path]) -> int:
    """``POSIX_FADV_DONTNEED`` on each file (its clean pages leave the page cache; nothing is flushed): their bytes."""
    total = 0
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return total


@phase("evict")
def evict_page_cache(paths: list[str | Path] | str | Path, *, drop_caches: bool = True) -> EvictionReport:
    """Push these files (or trees) out of the page cache and report what is left in it."""
    items = [paths] if isinstance(paths, str | Path) else paths
    files = [f for p in items for f in list_files(p)]
    devices: dict[int, Path] = {}
    for f in files:  # one syncfs per filesystem, not one fsync per file (each can cost a journal commit)
        devices.setdefault(f.stat().st_dev, f)
    for f in devices.values():
        sync_store(f)
    total = advise_dontneed(files)
    dropped = False
    if drop_caches and os.geteuid() == 0:
        try:
            os.sync()
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
            dropped = True
        except OSError:
            dropped = False
    resident = sum(_resident_file(f) for f in files)
    return EvictionReport(len(files), total, resident, dropped)


def advise_out(paths: list[Path] | Path) -> EvictionReport:
    """``POSIX_FADV_DONTNEED`` on every file of ``paths`` (clean pages only: nothing is flushed), and what is left
    resident after it (each file opened once for both)."""
    files = [f for p in ([paths] if isinstance(paths, str | Path) else paths) for f in list_files(p)]
    total = resident = 0
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            size = os.fstat(fd).st_size
            total += size
            resident += _resident_fd(fd, size)
        finally:
            os.close(fd)
    return EvictionReport(len(files), total, resident, False)


#: a store of more files than this (or than half the open-file limit) is opened afresh for each eviction
#: (:class:`HeldFiles` would hold a descriptor and a mapping per file)
HELD_FILES_LIMIT = 4096


class HeldFiles:
    """A store's files held open and mapped between the evictions of a store that is only read: advising them out and
    proving it is then three calls per file (``posix_fadvise``, ``fstat``, ``mincore`` on the mapping kept), where
    :func:`advise_out` makes seven (open, fadvise, fstat, mmap, mincore, munmap, close). The tree is scanned again
    before each eviction (its directory entries, with their inodes): a file added, removed or replaced (another
    inode), or one whose size changed, is held afresh, so the advice and the proof always reach the files the
    paths name now."""

    def __init__(self) -> None:
        #: path -> (inode, fd, size, mapping address or 0)
        self._held: dict[str, tuple[int, int, int, int]] = {}
        self._vec = np.zeros(0, dtype=np.uint8)

    def _map(self, fd: int, size: int) -> int:
        if size == 0:
            return 0
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        return 0 if addr in (None, ctypes.c_void_p(-1).value) else addr

    def _release(self, path: str) -> None:
        _, fd, size, addr = self._held.pop(path)
        if addr:
            _libc.munmap(addr, size)
        os.close(fd)

    def _hold(self, path: str, inode: int) -> None:
        fd = os.open(path, os.O_RDONLY)  # a regular file of the tree, or the path named itself (as advise_out)
        size = os.fstat(fd).st_size
        self._held[path] = (inode, fd, size, self._map(fd, size))

    def advise_out(self, paths: list[Path] | Path) -> EvictionReport:
        """``POSIX_FADV_DONTNEED`` on every file of ``paths``, and what is left resident after it."""
        now = dict(pair for p in ([paths] if isinstance(paths, str | Path) else paths) for pair in scan_files(p))
        if len(now) > min(HELD_FILES_LIMIT, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 2):
            self.close()
            return advise_out([Path(p) for p in now])
        for path in [p for p, (inode, *_) in self._held.items() if now.get(p) != inode]:
            self._release(path)
        held = []
        for path, inode in now.items():
            if path not in self._held:
                self._hold(path, inode)
            _, fd, size, addr = self._held[path]
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            if os.fstat(fd).st_size != size:  # grown or cut since it was mapped: mapped again
                self._release(path)
                self._hold(path, inode)
                _, fd, size, addr = self._held[path]
            held.append((fd, size, addr))
        # every mapping's residency into one vector, counted once
        pages = sum((size + _PAGE - 1) // _PAGE for _, size, _ in held)
        if self._vec.size < pages:
            self._vec = np.zeros(pages, dtype=np.uint8)
        base, offset, other = self._vec.ctypes.data, 0, 0
        for fd, size, addr in held:
            if not addr:  # not mapped (empty, or mmap refused)
                other += _resident_fd(fd, size) if size else 0
                continue
            n = (size + _PAGE - 1) // _PAGE
            if _mincore_at(addr, size, base + offset) != 0:
                self._vec[offset:offset + n] = 1  # unknown: counted resident, so the full eviction follows
            offset += n
        resident = int(np.count_nonzero(self._vec[:offset] & 1)) * _PAGE + other
        return EvictionReport(len(held), sum(size for _, size, _ in held), resident, False)

    def close(self) -> None:
        """Every file let go (before the store is removed: a file held open keeps its blocks)."""
        for path in list(self._held):
            self._release(path)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit, the module may be gone first
            self.close()


class StoreEvictions:
    """The evictions before one store's cold reads: every cache dropped at the first, then only the store's files,
    for as long as the cold proof holds."""

    def __init__(self, drop_caches: bool = True) -> None:
        #: False: the full eviction flushes and advises out the store's files but never drops the machine's caches
        self.drop_caches = drop_caches
        self.drop_next = True
        self.drops = 0
        self.evictions = 0
        self._held = HeldFiles()
        self._rewritten = False

    @phase("evict")
    def evict(self, files: list[Path] | Path, *, rewritten: bool = False) -> EvictionReport:
        """Evict before a cold read. ``rewritten``: the store was written again since the last eviction (its dirty
        pages are flushed first, as after :meth:`rewrote`); else it was only read, and advising its files out is
        enough."""
        rewritten, self._rewritten = rewritten or self._rewritten, False
        if self.drop_next:
            report = evict_page_cache(files, drop_caches=self.drop_caches)
        elif rewritten:
            report = evict_page_cache(files, drop_caches=False)
        else:
            report = self._held.advise_out(files)
            if not report.verified:  # pages that advice cannot drop: the full eviction, now
                report = evict_page_cache(files, drop_caches=self.drop_caches)
        self.evictions += 1
        self.drops += report.dropped_caches
        # a failed eviction proof (too much left resident) asks for the full drop next time
        self.drop_next = not report.verified
        return report

    def rewrote(self) -> None:
        """The store was written again (at the same path) since the last eviction: the next one flushes it first."""
        self._rewritten = True

    def close(self) -> None:
        """The store's files let go (:meth:`HeldFiles.close`): call it before the store is removed."""
        self._held.close()

    def saw(self, cache_state: str | None) -> None:
        """The state a cold read was given: anything but ``cold`` asks for the full drop before the next read."""
        if cache_state != "cold":
            self.drop_next = True
