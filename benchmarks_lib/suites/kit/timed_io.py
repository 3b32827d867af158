"""The timed regions of a store: one write, one append, one cold or warm read, and the rows they become.

A write or an append is ONE timed region (``measure.timed``) from the first call to the end of
``finalize``, so a writer's background threads cannot work off the clock; per-call latencies are
measured inside it as a distribution, never summed into a time. The data comes from a prepared
:class:`~.blocks.BlockSource`, so nothing is generated or hashed inside a region.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import Adapter
from benchmarks_lib.base.specs import ArraySpec
from benchmarks_lib.measure import (
    Measurement,
    cold_read_state,
    evict_page_cache,
    measure,
    sync_store,
    timed,
)
from benchmarks_lib.measure.eviction import StoreEvictions
from benchmarks_lib.records.durability import InTime, durability_columns
from benchmarks_lib.suites.kit.blocks import BlockSource, block_indices
from benchmarks_lib.suites.kit.verification import read_checksum


def write_store(adapter: Adapter, path: Path, spec: ArraySpec, source: BlockSource, fsync: bool) -> dict:
    """Create (its own phase); then ONE timed region from the first write to the end of
    finalize; then one ``syncfs`` when ``fsync``. Per-call latencies are kept apart."""
    create = measure(lambda: adapter.create(path, spec), sample=False)
    calls: list[float] = []
    with timed() as region:
        for offset, block in source:
            with timed(sample=False, io=False) as call:
                adapter.write(offset, block)
            calls.append(call.result.elapsed_s)
        with timed(sample=False, io=False) as fin:
            adapter.finalize()
    sync = measure(lambda: sync_store(path), sample=False) if fsync else None
    adapter.finalize()  # finalize must be safe to call twice
    return {"create": create, "region": region.result, "finalize_s": fin.result.elapsed_s, "calls": calls,
            "sync": sync}


def latency_columns(prefix: str, latencies: list[float]) -> dict:
    """Count, median, p99 and max of per-call latencies (a distribution, never a summed time)."""
    lat = np.asarray(latencies, dtype=float)
    if not lat.size:
        return {f"{prefix}s": 0}
    return {f"{prefix}s": int(lat.size), f"{prefix}_p50_s": float(np.percentile(lat, 50)),
            f"{prefix}_p99_s": float(np.percentile(lat, 99)), f"{prefix}_max_s": float(lat.max())}


def phase_rows(phases: dict, iteration: int, nbytes: int, fsync: bool, extra: dict,
               writer_fsyncs: bool = False) -> list[dict]:
    """Rows ``create``, ``write`` + ``finalize`` (the two consecutive parts of the one region),
    ``fsync`` (syncfs, when asked) and ``total`` = create + region (+ fsync).

    ``fsync_included`` is true iff the row's time contains a flush: our syncfs, or the
    writer's own fsyncs (which happen while it writes and closes); see :mod:`~benchmarks_lib.records.durability`.
    """
    create, region, sync = phases["create"], phases["region"], phases["sync"]
    fin = phases["finalize_s"]
    common = {"iteration": iteration, "nbytes": nbytes, **extra}
    calls = latency_columns("write_call", phases["calls"])

    def flushes(in_time: InTime) -> dict:
        return durability_columns(fsync, writer_fsyncs, in_time)

    rows = [
        {"operation": "create", "elapsed_s": create.elapsed_s, "cpu_s": create.cpu_s, **flushes("none"), **common},
        {"operation": "write", "elapsed_s": region.elapsed_s - fin, **calls, **flushes("writer"), **common},
        {"operation": "finalize", "elapsed_s": fin, **flushes("writer"), **common},
    ]
    if sync is not None:
        rows.append({"operation": "fsync", "elapsed_s": sync.elapsed_s, "cpu_s": sync.cpu_s, **flushes("syncfs"),
                     **common})
    total = create.elapsed_s + region.elapsed_s + (sync.elapsed_s if sync else 0.0)
    cpu = create.cpu_s + region.cpu_s + (sync.cpu_s if sync else 0.0)
    rows.append({**region.as_row(), "operation": "total", "elapsed_s": total, "cpu_s": cpu,
                 "write_region_s": region.elapsed_s,
                 "total_includes": "create+write+finalize" + ("+syncfs" if sync is not None else ""),
                 **calls, **flushes("all"), **common})
    return rows


def append_store(adapter: Adapter, path: Path, spec: ArraySpec, source: BlockSource, fsync: bool) -> dict:
    """Create (untimed in the total); then ONE timed region from the first append to the end
    of finalize, and of one ``syncfs`` when ``fsync``. Frame latencies and per-step laps are
    measured inside it as distributions; the total is the region."""
    create = measure(lambda: adapter.create(path, spec, append=True), sample=False)
    frames: list[float] = []
    steps: list[tuple[float, int]] = []
    sync_s = 0.0
    with timed() as region:
        for _, block in source:
            with timed(sample=False, io=False) as lap:
                for f in range(block.shape[0]):
                    with timed(sample=False, io=False) as call:
                        adapter.append(block[f:f + 1])
                    frames.append(call.result.elapsed_s)
            steps.append((lap.result.elapsed_s, block.nbytes))
        with timed(sample=False, io=False) as fin:
            adapter.finalize()
        if fsync:
            with timed(sample=False, io=False) as sync:
                sync_store(path)
            sync_s = sync.result.elapsed_s
    adapter.finalize()  # finalize must be safe to call twice
    return {"create_s": create.elapsed_s, "region": region.result, "finalize_s": fin.result.elapsed_s,
            "sync_s": sync_s, "frames": frames, "steps": steps}


def timed_read(adapter: Adapter, path: Path, spec: ArraySpec, files: list[Path], cold: bool, step: int,
               index: tuple[slice, ...] | None = None, evictions: StoreEvictions | None = None,
               ) -> tuple[dict, list[np.ndarray] | np.ndarray]:
    """One timed read: the full array (block by block, one region) or one cutout.

    Cold: the store's files are evicted first and the eviction report goes into the row;
    ``cache_state`` is ``cold`` only when :func:`cold_read_state` accepts the proof: the
    eviction verified and, for a full read, at least half the store's bytes read from disk
    (a cutout has no lower bound we can state, so only the eviction proof counts for it).
    The reader is opened, untimed, after the eviction. The blocks are kept and hashed after
    the region, so a full read holds the array in memory. With ``evictions`` (one per store) every
    cache is dropped only at the store's first cold read and after a failed proof (see :mod:`.eviction`).
    """
    eviction = None
    if cold:
        eviction = evictions.evict(files) if evictions is not None else evict_page_cache(files)
    adapter.open_reader(path, spec)
    try:
        with timed() as region:
            if index is None:
                result: list[np.ndarray] | np.ndarray = [adapter.read(ix) for ix in block_indices(spec, step)]
            else:
                result = adapter.read(index)
    finally:
        adapter.close_reader()
    m: Measurement = region.result
    nbytes = spec.nbytes if index is None else int(np.asarray(result).nbytes)
    row = {**m.as_row(), "nbytes": nbytes, "cache_state": "warm"}
    if eviction is not None:
        needed = eviction.bytes if index is None else 0
        row.update(eviction.as_row(), cold_needed_bytes=needed,
                   cache_state=cold_read_state(eviction, row["io_read_bytes"], needed))
        if evictions is not None:
            evictions.saw(row["cache_state"])
    return row, result


def read_all_untimed(reader: Adapter, path: Path, spec: ArraySpec, step: int) -> None:
    """One full read off the clock: it fills the page cache (and the reader's caches) before warm reads."""
    reader.open_reader(path, spec)
    try:
        read_checksum(reader, spec, step)
    finally:
        reader.close_reader()
