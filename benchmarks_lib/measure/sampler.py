"""A background thread that samples RSS and thread count (about every 10 ms)."""

from __future__ import annotations

import threading
from pathlib import Path

_STATUS = Path("/proc/self/status")


def current_rss_and_threads() -> tuple[int, int]:
    """Resident set size in bytes and the number of OS threads of this process."""
    rss = threads = 0
    for line in _STATUS.read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, threads


class ResourceSampler:
    """Context manager: peak RSS, RSS at start, and the largest thread count seen.

    The sampler's own thread is not counted.
    """

    def __init__(self, interval_s: float = 0.01) -> None:
        self.interval_s = interval_s
        self.baseline_rss = 0
        self.peak_rss = 0
        self.max_threads = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        rss, threads = current_rss_and_threads()
        self.peak_rss = max(self.peak_rss, rss)
        self.max_threads = max(self.max_threads, threads - 1)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __enter__(self) -> ResourceSampler:
        self.baseline_rss, threads = current_rss_and_threads()
        self.peak_rss, self.max_threads = self.baseline_rss, threads
        self._thread = threading.Thread(target=self._loop, name="iobench-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sample()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    @property
    def rss_growth(self) -> int:
        return max(0, self.peak_rss - self.baseline_rss)
