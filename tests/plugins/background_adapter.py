"""Test-only adapter whose work happens in a background thread, like acquire-zarr's.

``write``/``append`` only queue the block and return at once; a thread sleeps ``DELAY_S``
per block and then writes its bytes (raw format); ``finalize`` joins the thread. The thread's
busy time for each store is appended as one JSON line to the file named by
``IOBENCH_BACKGROUND_LOG``, so a test can check that the suite's timed region covered it.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time

from benchmarks_lib.adapters.raw import RawAdapter

DELAY_S = 0.05


class BackgroundAdapter(RawAdapter):
    name = "background"

    def create(self, path, spec, *, append=False):
        super().create(path, spec, append=append)
        self._queue: queue.Queue = queue.Queue()
        self._busy_s = 0.0
        self._blocks = 0
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def _work(self):
        while (job := self._queue.get()) is not None:
            t0 = time.perf_counter()
            time.sleep(DELAY_S)
            super().write(*job)
            self._busy_s += time.perf_counter() - t0
            self._blocks += 1

    def write(self, offset, block):
        self._queue.put((offset, block))

    def append(self, block):
        self._queue.put((self._next, block))
        self._next += block.shape[0]

    def finalize(self):
        if getattr(self, "_thread", None) is None:
            return
        self._queue.put(None)
        self._thread.join()
        self._thread = None
        super().finalize()
        if log := os.environ.get("IOBENCH_BACKGROUND_LOG"):
            with open(log, "a") as f:
                f.write(json.dumps({"store": self.path.name, "busy_s": self._busy_s, "blocks": self._blocks}) + "\n")
