"""Measure one call: wall time (perf_counter_ns), peak RSS, threads and I/O counter deltas."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .iocounters import IOCounters, read_io_counters
from .sampler import ResourceSampler


@dataclass(frozen=True)
class Measurement:
    elapsed_s: float
    peak_rss_bytes: int
    rss_growth_bytes: int
    threads_max: int
    io: IOCounters | None
    value: Any = None

    def as_row(self) -> dict:
        io = self.io or IOCounters()
        return {
            "elapsed_s": self.elapsed_s,
            "peak_rss_bytes": self.peak_rss_bytes,
            "rss_growth_bytes": self.rss_growth_bytes,
            "threads_max": self.threads_max,
            "io_read_bytes": io.read_bytes if self.io else None,
            "io_write_bytes": io.write_bytes if self.io else None,
            "io_syscr": io.syscr if self.io else None,
            "io_syscw": io.syscw if self.io else None,
        }


def measure(fn: Callable[[], Any], *, sample: bool = True) -> Measurement:
    """Call ``fn()`` once; only the call itself is inside the timed region."""
    sampler = ResourceSampler() if sample else None
    if sampler:
        sampler.__enter__()
    before = read_io_counters()
    t0 = time.perf_counter_ns()
    try:
        value = fn()
    finally:
        t1 = time.perf_counter_ns()
        after = read_io_counters()
        if sampler:
            sampler.__exit__(None, None, None)
    io = after - before if before and after else None
    return Measurement(
        elapsed_s=(t1 - t0) / 1e9,
        peak_rss_bytes=sampler.peak_rss if sampler else 0,
        rss_growth_bytes=sampler.rss_growth if sampler else 0,
        threads_max=sampler.max_threads if sampler else 0,
        io=io,
        value=value,
    )
