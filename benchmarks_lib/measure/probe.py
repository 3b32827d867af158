"""The one measuring primitive: wall time, CPU time, peak RSS, threads and I/O counters
around one timed region.

Use it as a ``with`` block (``with timed() as region: ...`` then ``region.result``) or
around one callable (``measure(fn)``). The region is one wall-clock interval from entering
to leaving: whatever a writer's background threads do before the block ends is inside it,
and nothing that is not the operation (generating data, hashing, deleting) may run in it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from benchmarks_lib.measure.iocounters import IOCounters, read_io_counters
from benchmarks_lib.measure.ledger import LEDGER
from benchmarks_lib.measure.sampler import ResourceSampler


@dataclass(frozen=True)
class Measurement:
    elapsed_s: float
    cpu_s: float
    peak_rss_bytes: int
    rss_growth_bytes: int
    threads_max: int
    io: IOCounters | None
    value: Any = None

    def as_row(self) -> dict:
        io = self.io or IOCounters()
        return {
            "elapsed_s": self.elapsed_s,
            "cpu_s": self.cpu_s,
            "peak_rss_bytes": self.peak_rss_bytes if self.peak_rss_bytes else None,
            "rss_growth_bytes": self.rss_growth_bytes if self.peak_rss_bytes else None,
            "threads_max": self.threads_max if self.threads_max else None,
            "io_read_bytes": io.read_bytes if self.io else None,
            "io_write_bytes": io.write_bytes if self.io else None,
            "io_syscr": io.syscr if self.io else None,
            "io_syscw": io.syscw if self.io else None,
        }


class timed:
    """A timed region: ``with timed() as region: op()``; then ``region.result``.

    ``sample`` runs the RSS/thread sampler (a 10 ms thread) for the region's duration; ``io=False``
    skips the two reads of /proc/self/io (about 30 us), for per-call latencies inside a larger region.
    """

    def __init__(self, *, sample: bool = True, io: bool = True) -> None:
        self._sampler = ResourceSampler() if sample else None
        self._io = io
        self.result: Measurement | None = None

    def __enter__(self) -> timed:
        if self._sampler:
            self._sampler.__enter__()
        self._io0 = read_io_counters() if self._io else None
        self._cpu0 = time.process_time_ns()
        self._t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        t1 = time.perf_counter_ns()
        cpu1 = time.process_time_ns()
        io1 = read_io_counters() if self._io else None
        s = self._sampler
        if s:
            s.__exit__(None, None, None)
        self.result = Measurement(
            elapsed_s=(t1 - self._t0) / 1e9,
            cpu_s=(cpu1 - self._cpu0) / 1e9,
            peak_rss_bytes=s.peak_rss if s else 0,
            rss_growth_bytes=s.rss_growth if s else 0,
            threads_max=s.max_threads if s else 0,
            io=io1 - self._io0 if self._io0 and io1 else None,
        )
        LEDGER.add_timed(self._t0, t1)  # the case's accounting (``ledger``), after the measured interval


def measure(fn: Callable[[], Any], *, sample: bool = True) -> Measurement:
    """Call ``fn()`` once inside one timed region; its return value is kept in ``value``."""
    with timed(sample=sample) as region:
        value = fn()
    assert region.result is not None
    return replace(region.result, value=value)
