"""The measured round trip shared by the compression and threads suites, as a point measured in rounds.

A point (one backend at one setting) is set up once (its warm-ups), then measured once per round
(:mod:`.in_rounds`; the runner decides how many rounds: :mod:`benchmarks_lib.run.rounds`).
A round is: remove the last output (untimed, so every timed write starts on a path that does not
exist), write (timed; with ``fsync`` one ``syncfs`` of the store inside the clock, the same for every
backend), evict the files from the page cache and prove it (untimed; every cache of the machine is
dropped only before the point's first cold read, see :mod:`.eviction`), cold read (timed; ``cold``
only when the eviction and the read's disk bytes prove it, else ``cold_unverified``), verify what
was read back against the data written, whole, every round (untimed), and remove the output once
verified (so a case's points hold one output at a time on disk, none between rounds). In-memory codecs
encode and decode instead, with no files.

Every write row states what its time includes in the columns of :mod:`~benchmarks_lib.records.durability`
(``sync_method``, ``writer_fsyncs``, ``fsync_comparable``, ``fsync_included``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks_lib.base.environment import usable_cores
from benchmarks_lib.base.specs import SpecError, parse_size
from benchmarks_lib.data.datasets import Dataset, checksum_array
from benchmarks_lib.inputs.arrays import generated
from benchmarks_lib.measure import (
    Measurement,
    cold_read_state,
    disk_usage,
    measure,
    sync_store,
    timed,
)
from benchmarks_lib.measure.eviction import StoreEvictions
from benchmarks_lib.records.durability import durability_columns
from benchmarks_lib.suites.kit.common import remove_output
from benchmarks_lib.suites.kit.in_rounds import Point


@dataclass
class RoundTrip:
    """One backend at one setting: how to write it, read it back and check what came back."""

    write: Callable[[], Any]
    read: Callable[[], Any]
    #: None when the value returned by ``read`` is exactly what was written, else why not
    verify: Callable[[Any], str | None]
    #: compressed bytes of the last write (file sizes, or encoded bytes in memory)
    stored_bytes: Callable[[], int]
    #: files to evict before a cold read; None for an in-memory codec
    files: Callable[[], list[Path]] | None = None
    #: where the output lives (removed before each write, off the clock); None in memory
    path: Path | None = None
    #: drops what the last in-memory write produced (called off the clock before each write)
    reset: Callable[[], None] | None = None
    write_op: str = "write"
    read_op: str = "read"
    #: False for a write-only writer; ``read`` is then only a verification (untimed)
    timed_read: bool = True
    #: the library fsyncs the files it writes itself (acquire-zarr), whatever the suite's policy
    writer_fsyncs: bool = False

    def clear(self) -> None:
        """Remove the previous output (untimed), so that the next write starts from nothing."""
        if self.path is not None:
            remove_output(self.path)
            if self.path.exists():
                raise RuntimeError(f"{self.path} still exists after removal; a timed write must start on no file")
        if self.reset is not None:
            self.reset()


def sync_columns(rt: RoundTrip, fsync: bool) -> dict:
    """What a write row's time includes: our syncfs (policy), the writer's own fsyncs, or neither."""
    return durability_columns(fsync and rt.path is not None, rt.writer_fsyncs)  # in memory: no files to flush


def timed_write(rt: RoundTrip, *, fsync: bool, sample: bool = True) -> Measurement:
    """Clear the last output (untimed), then one timed region: the write and, with ``fsync``, one syncfs."""
    rt.clear()
    with timed(sample=sample) as region:
        rt.write()
        if fsync and rt.path is not None:
            sync_store(rt.path)
    assert region.result is not None
    return region.result


def round_trip_point(rt: RoundTrip, *, warmups: int, nbytes: int, columns: dict, fsync: bool = False) -> Point:
    """The point of ``rt`` set up (``warmups`` untimed round trips, now) and measured one round at a time: the
    point's ``measure(round)`` is one timed write / evict / read / verify, its output removed once verified.

    Returns one row per timed operation of a round; a verification failure is an error row and ends the point (its
    later rounds measure nothing). With ``fsync`` the write's timed region ends with
    :func:`~benchmarks_lib.measure.sync_store`. Every cache is dropped before the point's first cold read only (and
    after a failed proof): see :mod:`.eviction`.
    """
    evictions = StoreEvictions()
    for _ in range(warmups):
        timed_write(rt, fsync=fsync, sample=False)
        if rt.files is not None:
            evictions.evict(rt.files(), rewritten=True)
        measure(rt.read, sample=False)
    rt.clear()
    sync = sync_columns(rt, fsync)
    failed: list[str] = []

    def one_round(iteration: int) -> list[dict]:
        if failed:
            return []
        wrote = timed_write(rt, fsync=fsync)
        stored = rt.stored_bytes()
        size = {"compressed_bytes": stored, "compression_ratio": nbytes / stored if stored else None}
        if rt.path is not None:
            usage = disk_usage(rt.path)
            size.update(bytes_on_disk=usage.allocated_bytes, inodes=usage.inodes)
        report = evictions.evict(rt.files(), rewritten=True) if rt.files is not None else None
        got = measure(rt.read) if rt.timed_read else measure(rt.read, sample=False)
        if report is None:
            cache = {"cache_state": "memory"}
        else:
            io_read = got.io.read_bytes if got.io is not None else None
            cache = {**report.as_row(),
                     "cache_state": cold_read_state(report, io_read, size.get("bytes_on_disk") or stored)}
            evictions.saw(cache["cache_state"])
        problem = rt.verify(got.value)
        rt.clear()
        check = {"status": "ok", "verified": problem is None, "verified_scope": "full"}
        if problem:
            check.update(status="error", reason=f"round trip not verified: {problem}")
            failed.append(problem)
        common = {**columns, **size, **check, "iteration": iteration, "nbytes": nbytes}
        rows = [{**common, **wrote.as_row(), **sync, "operation": rt.write_op}]
        if rt.timed_read:
            rows.append({**common, **got.as_row(), **cache, "operation": rt.read_op})
        return rows

    return Point(one_round, rt.clear)


def skip_rows(reason: str, columns: dict, operations: Iterable[str] = ("write", "read")) -> list[dict]:
    """A skipped point is recorded, one row per operation it would have measured."""
    return [{**columns, "operation": op, "status": "skip", "reason": reason} for op in operations]


# -- data ----------------------------------------------------------------------------------
def suite_data(dataset: Dataset, chunks: tuple[int, ...], generate_bytes: int | None,
               scratch: Path | None = None) -> tuple[np.ndarray, bool]:
    """The whole array handed to the writers, made before any clock; and whether it is tiled.

    Generated in full up to ``generate_bytes`` (None: always). A larger array is its first whole
    chunks along axis 0 (about ``generate_bytes``) repeated to the full shape: every chunk is
    compressed on its own, so each costs and compresses what a generated one does, while the
    quick profile's sizes stop paying seconds of generation per case (``data_tiled`` in the rows). With the case's
    ``scratch``, what is generated is kept for the run's later cases (:func:`inputs.arrays.generated`).
    """
    def region(index: tuple[slice, ...]) -> np.ndarray:
        return dataset.region(index) if scratch is None else generated(dataset, index, scratch)

    full = tuple(slice(0, n) for n in dataset.shape)
    lead = dataset.shape[0]
    if generate_bytes is not None and dataset.nbytes > generate_bytes:
        step = chunks[0]
        lead = max(step, generate_bytes // (dataset.nbytes // dataset.shape[0]) // step * step)
    if lead >= dataset.shape[0]:  # a file's crop shorter than the array repeats itself (``user_data``)
        return region(full), getattr(dataset, "tiled", False)
    pool = region((slice(0, lead), *full[1:]))
    reps = -(-dataset.shape[0] // lead)
    return np.ascontiguousarray(np.concatenate([pool] * reps, axis=0)[: dataset.shape[0]]), True


def parse_generate_bytes(value: Any) -> int | None:
    """At most this many bytes of an array are generated (None: all); more are tiled (``suite_data``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise SpecError(f"generate_bytes {value!r} must be a size such as 16MiB, or null to generate everything")
    return parse_size(value)


def split_chunks(data: np.ndarray, chunks: tuple[int, ...]) -> list[tuple[tuple[slice, ...], np.ndarray]]:
    """The array cut into its chunk grid, each chunk a contiguous copy (set-up, never timed)."""
    ranges = [range(0, n, c) for n, c in zip(data.shape, chunks, strict=True)]
    out = []
    for starts in itertools.product(*ranges):
        index = tuple(slice(s, min(s + c, n)) for s, c, n in zip(starts, chunks, data.shape, strict=True))
        out.append((index, np.ascontiguousarray(data[index])))
    return out


@dataclass(frozen=True)
class ArrayData:
    """The array a point measures, made before any clock: values, checksum, and its chunks for codecs."""

    values: np.ndarray
    checksum: str
    #: True when the array repeats its first chunks (see :func:`suite_data`)
    tiled: bool
    #: the chunk grid as (index, contiguous chunk), for in-memory codecs; empty otherwise
    pieces: list[tuple[tuple[slice, ...], np.ndarray]]


def array_data(dataset: Dataset, chunks: tuple[int, ...], generate_bytes: int | None, *,
               split: bool, scratch: Path | None = None) -> ArrayData:
    """The array for ``dataset`` (see :func:`suite_data`), its checksum, and (``split``) its chunks."""
    values, tiled = suite_data(dataset, chunks, generate_bytes, scratch)
    return ArrayData(values, checksum_array(values), tiled, split_chunks(values, chunks) if split else [])


__all__ = [
    "ArrayData",
    "RoundTrip",
    "array_data",
    "parse_generate_bytes",
    "round_trip_point",
    "skip_rows",
    "split_chunks",
    "suite_data",
    "sync_columns",
    "timed_write",
    "usable_cores",
]
