"""The one way to run code in a fresh Python process.

A fresh process is how a measurement starts without another's state: a case (the runner's
worker), a cold read whose RSS baseline must be the reader's own, a server whose CPU must not
mix with the client's, a renderer whose crash must not take the caller down. The child is
``python -P -m benchmarks_lib.measure.fresh module:function ...``; the package's ``__init__`` is
lazy, so the child imports only the target's module and what it needs, and nothing from its working directory
(:mod:`benchmarks_lib.base.importpath`).

- :func:`call` runs ``function(**kwargs)`` once and returns its JSON result;
- :func:`start` starts ``function(*args)`` as a long-lived child (its return value is the exit
  status) in its own session, killed when its parent dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import signal
import subprocess
import sys
from typing import Any

from benchmarks_lib.base.availability import Unavailable
from benchmarks_lib.base.importpath import SAFE_PATH, child_env

ENTRY = "benchmarks_lib.measure.fresh"
#: how long the pipes of a killed child are drained before the caller goes on
KILLED_PIPES_S = 5.0
#: how many lines of a failed child's stderr an error quotes
STDERR_LINES = 15


class FreshProcessError(RuntimeError):
    """A child process failed; the message carries the tail of its stderr. ``returncode``: the child's exit status
    (negative: the signal that ended it), None where it did not finish in time."""

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode


def command(target: str, *args: str, python: str | None = None) -> list[str]:
    """The command line that runs ``module:function`` in a fresh interpreter: this one, or ``python`` (the
    interpreter of an environment of its own, ``run.environments``)."""
    return [python or sys.executable, SAFE_PATH, "-m", ENTRY, target, *args]


def die_with_parent() -> None:
    """``preexec_fn`` of every child this package starts (workers, servers): killed when its parent dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def start(target: str, *args: str, env: dict[str, str] | None = None, base_env: dict[str, str] | None = None,
          python: str | None = None, path: str | None = None, **popen: Any) -> subprocess.Popen:
    """``function(*args)`` in a child: own session (Ctrl-C reaches the parent only, which stops
    it), killed with its parent (PR_SET_PDEATHSIG), so nothing keeps running behind a killed run.
    Its environment is ``base_env`` (default: this process's) with ``env`` added, safe-path on and only absolute
    ``PYTHONPATH`` entries after this package's parent (``importpath.child_env``). ``python`` and ``path``: another
    interpreter, and the whole ``PYTHONPATH`` it gets (the directory holding only the harness, so that nothing of
    this interpreter's site reaches it)."""
    env = {**child_env(os.environ if base_env is None else base_env), "PYTHONUNBUFFERED": "1", **(env or {})}
    if path is not None:
        env["PYTHONPATH"] = path
    return subprocess.Popen(command(target, *args, python=python), env=env,
                            start_new_session=True, preexec_fn=die_with_parent, **popen)


def call(target: str, kwargs: dict, *, timeout_s: float | None = None, env: dict[str, str] | None = None,
         base_env: dict[str, str] | None = None, python: str | None = None) -> Any:
    """``function(**kwargs)`` in a fresh process (of this interpreter, or ``python``); its JSON-serialisable result.

    The result comes back on the child's stdout (what the function itself prints goes to its stderr), so
    nothing is written to disk, and nothing is left behind when either process is killed.
    :class:`Unavailable` raised in the child is raised here with the same message; any other
    failure raises :class:`FreshProcessError` with the tail of the child's stderr.
    """
    proc = start(target, "--call", json.dumps(kwargs), env=env, base_env=base_env, python=python,
                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except BaseException:
        proc.kill()
        # a process the child started may still hold its pipes open: the wait for them is bounded, so a signal or
        # a timeout ends the caller however the child's descendants behave
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=KILLED_PIPES_S)
        if isinstance(sys.exc_info()[1], subprocess.TimeoutExpired):
            raise FreshProcessError(f"{target} did not finish within {timeout_s} s") from None
        raise
    try:
        reply = json.loads(stdout) if stdout.strip() else None
    except json.JSONDecodeError:
        reply = None
    if isinstance(reply, dict) and "unavailable" in reply:
        raise Unavailable(reply["unavailable"])
    if proc.returncode != 0 or not isinstance(reply, dict) or "result" not in reply:
        tail = "\n".join(stderr.strip().splitlines()[-STDERR_LINES:])
        raise FreshProcessError(f"{target} failed (exit {proc.returncode}): {tail}", proc.returncode)
    return reply["result"]


def _resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _reply_channel() -> int:
    """A private copy of stdout for the reply; stdout itself (Python's and native code's) then goes to stderr."""
    sys.stdout.flush()
    channel = os.dup(1)
    os.dup2(2, 1)
    return channel


def main(argv: list[str]) -> int:
    target, args = argv[0], argv[1:]
    if args[:1] != ["--call"]:
        return int(_resolve(target)(*args) or 0)
    channel = _reply_channel()
    try:
        reply = {"result": _resolve(target)(**json.loads(args[1]))}
    except Unavailable as exc:
        reply = {"unavailable": str(exc)}
    sys.stdout.flush()
    with os.fdopen(channel, "w") as out:
        out.write(json.dumps(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
