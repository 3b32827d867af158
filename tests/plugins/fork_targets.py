"""Targets of the fork-server tests (``tests/test_measure_forks.py``), run in the processes ``measure.fresh.Forks``
forks: each says what its process holds."""

from __future__ import annotations

import os
import signal
import time

#: set by ``preload`` in the server, changed by ``state``: a call sees the server's value, never another call's
VALUE = {"set_by": None}


def preload(marker: str) -> None:
    """Import numpy (its libraries mapped in the server) and leave one line in ``marker`` per server start."""
    import numpy  # noqa: F401

    VALUE["set_by"] = "preload"
    with open(marker, "a") as f:
        f.write(f"{os.getpid()}\n")


def _rss(pid: int | str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def state(set_to: str) -> dict:
    """This process's pid, its parent's, the value the module held when it started (then ``set_to``), and its RSS
    beside its parent's (the server's) as it starts."""
    seen = VALUE["set_by"]
    VALUE["set_by"] = set_to
    return {"pid": os.getpid(), "ppid": os.getppid(), "seen": seen, "rss": _rss("self"),
            "server_rss": _rss(os.getppid())}


def crash(how: str) -> dict:
    """Die as ``how`` says: an exit status, a signal, an exception, a hang, or the server's death."""
    if how == "exit":
        os._exit(3)
    if how == "signal":
        os.kill(os.getpid(), signal.SIGSEGV)
    if how == "server":
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(600)  # killed with it
    if how == "hang":
        time.sleep(600)
    raise RuntimeError("the call failed on purpose")


def unavailable() -> dict:
    from benchmarks_lib.base.availability import Unavailable

    raise Unavailable("libfoo is not installed (pip install foo)")
