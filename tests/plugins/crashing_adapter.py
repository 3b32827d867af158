"""Test-only adapters: one that segfaults while writing, one that segfaults at its third store in a process (a
crash in the middle of a run in rounds), one that is slow (for kill -9 tests)."""

from __future__ import annotations

import ctypes
import time

from benchmarks_lib.adapters.raw import RawAdapter


class CrashingAdapter(RawAdapter):
    name = "crashing"

    def write(self, offset, block):
        ctypes.string_at(0)  # a real segfault inside the worker


class SlowAdapter(RawAdapter):
    name = "slow"

    def write(self, offset, block):
        time.sleep(0.3)
        super().write(offset, block)


class CrashLaterAdapter(RawAdapter):
    """Segfaults when it finalizes its third store in a process: its worker dies in the middle of a run."""

    name = "crashlater"
    finalized = 0

    def finalize(self):
        CrashLaterAdapter.finalized += 1
        if CrashLaterAdapter.finalized == 5:  # finalize is called twice a store
            ctypes.string_at(0)
        return super().finalize()
