"""The one way to run code in a fresh Python process.

A fresh process is how a measurement starts without another's state: a case (the runner's
worker), a cold read whose RSS baseline must be the reader's own, a server whose CPU must not
mix with the client's, a renderer whose crash must not take the caller down. The child is
``python -P -m benchmarks_lib.measure.fresh module:function ...``; the package's ``__init__`` is
lazy, so the child imports only the target's module and what it needs, and nothing from its working directory
(:mod:`benchmarks_lib.base.importpath`).

- :func:`call` runs ``function(**kwargs)`` once and returns its JSON result;
- :class:`Forks` runs ``function(**kwargs)`` once per call, each in a process forked from a server that imported
  the function's library once (and started it up: ROOT's interpreter), so that a measurement that needs a fresh
  process per read pays the library's import (1-1.7 s on 2 cores) once per case instead of once per read;
- :func:`start` starts ``function(*args)`` as a long-lived child (its return value is the exit
  status) in its own session, killed when its parent dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
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
    reply = _reply(stdout)
    if proc.returncode != 0 or reply is None or "result" not in reply:
        tail = "\n".join(stderr.strip().splitlines()[-STDERR_LINES:])
        raise FreshProcessError(f"{target} failed (exit {proc.returncode}): {tail}", proc.returncode)
    return reply["result"]


def _reply(text: str | bytes) -> dict | None:
    """A child's reply (None: none, or not JSON); the child's :class:`Unavailable` raised here as itself."""
    try:
        reply = json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        reply = None
    if isinstance(reply, dict) and "unavailable" in reply:
        raise Unavailable(reply["unavailable"])
    return reply if isinstance(reply, dict) else None


class Forks:
    """``function(**kwargs)`` of ``target`` (``module:function``) once per :meth:`call`, each in a process of its
    own forked from one server: the server imports the target's module and runs ``preload`` (``module:function``
    and its keyword arguments: the library imported and started up) once; each call's process starts from that
    state, never from another call's (a call's library state, caches, open files and event loops end with its
    process), and its CPU time, I/O counters and RSS are its own from the fork. The server starts at the first
    call, runs until :meth:`close` (or its parent dies: each process it forks dies with it), and starts again
    after a call that timed out or took it down. What the server and its calls print goes to a file of their own,
    whose lines since the call began a failure quotes; the result comes back as :func:`call`'s does."""

    def __init__(self, target: str, *, preload: tuple[str, dict] | None = None,
                 base_env: dict[str, str] | None = None) -> None:
        self.target, self.preload, self.base_env = target, preload, base_env
        self._proc: subprocess.Popen | None = None
        self._log: Any = None

    def __enter__(self) -> Forks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _server(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self.close()
            self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the server's for its life: closed by close()
            self._proc = start(self.target, "--serve", json.dumps(self.preload), base_env=self.base_env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
        return self._proc

    def _said(self, since: int) -> str:
        """The last lines the server and its calls wrote from byte ``since`` of their log."""
        size = os.fstat(self._log.fileno()).st_size
        said = os.pread(self._log.fileno(), min(size - since, 1 << 20), max(since, size - (1 << 20)))
        return "\n".join(said.decode(errors="replace").strip().splitlines()[-STDERR_LINES:])

    def call(self, kwargs: dict, *, timeout_s: float | None = None) -> Any:
        """``function(**kwargs)`` in a process forked for it: its JSON-serialisable result (:func:`call`'s
        errors: :class:`Unavailable` as raised there, :class:`FreshProcessError` for the rest)."""
        proc = self._server()
        since = os.fstat(self._log.fileno()).st_size
        try:
            proc.stdin.write(json.dumps(kwargs).encode() + b"\n")
            proc.stdin.flush()
            line = _read_line(proc.stdout.fileno(), timeout_s)
        except TimeoutError:
            said = self._said(since)
            self.close()
            raise FreshProcessError(f"{self.target} did not finish within {timeout_s} s: {said}") from None
        except BaseException:
            self.close()
            raise
        reply = _reply(line)
        if reply is None or "result" not in reply:
            said = self._said(since)
            if reply is None:  # the server itself ended (its preload or a library took it down)
                self.close()
            code = proc.returncode if reply is None else reply.get("failed")
            raise FreshProcessError(f"{self.target} failed (exit {code}): {said}", code if isinstance(code, int)
                                    else None)
        return reply["result"]

    def close(self) -> None:
        """The server stopped (its input closed; killed, with what it forked, if it does not end at once)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(timeout=KILLED_PIPES_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            with contextlib.suppress(OSError):
                proc.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None


#: the fork servers this process shares (:func:`shared_forks`), by what they serve
_SHARED: dict[str, Forks] = {}


def shared_forks(target: str, *, preload: tuple[str, dict] | None = None) -> Forks:
    """The :class:`Forks` of ``target`` and ``preload`` that this process shares, with this process's environment:
    every case of a worker that reads through the same server forks from it (a call starts from the server's
    state whichever case made it; starting one costs a reader's imports and preload, 1-1.5 s of CPU). Stopped when
    this process exits (and killed with it)."""
    import atexit

    key = json.dumps([target, preload])
    if not _SHARED:
        atexit.register(lambda: [forks.close() for forks in _SHARED.values()])
    if key not in _SHARED:
        _SHARED[key] = Forks(target, preload=preload)
    return _SHARED[key]


def _read_line(fd: int, timeout_s: float | None) -> bytes:
    """One line from ``fd`` (without waiting past ``timeout_s``: TimeoutError); what came before EOF at EOF."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    got = b""
    while not got.endswith(b"\n"):
        left = None if deadline is None else deadline - time.monotonic()
        if (left is not None and left <= 0) or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        got += chunk
    return got


def serve(target: str, preload: str) -> int:
    """The server of :class:`Forks`: ``preload`` run once, then one forked process per request line on stdin,
    whose reply (or ``{"failed": exit status}``) is written as one line on the reply channel."""
    channel = _reply_channel()
    function = _resolve(target)
    if (hook := json.loads(preload)) is not None:
        try:
            _resolve(hook[0])(**hook[1])
        except Exception:  # each call imports what it needs itself, and says what is missing
            traceback.print_exc()
    with os.fdopen(channel, "w") as out:
        for line in sys.stdin:
            sys.stdout.flush()
            sys.stderr.flush()
            read_end, write_end = os.pipe()
            mapped = _pages_mapped()
            pid = os.fork()
            if pid == 0:  # the call's own process
                os.close(read_end)
                _forked_call(function, line, write_end, mapped)
            os.close(write_end)
            with os.fdopen(read_end, "rb") as got:
                reply = got.read()
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            out.write((reply.decode() if code == 0 and reply else json.dumps({"failed": code})) + "\n")
            out.flush()
    return 0


#: ``madvise`` advice (Linux 5.14): fault pages in as a read (map them) or as a write (copy a shared private page)
MADV_POPULATE_READ, MADV_POPULATE_WRITE = 22, 23


def _pages_mapped() -> list[tuple[int, int, int]]:
    """The runs of this process's pages present now (``/proc/self/pagemap``'s present bit) that a process it forks
    does not have as its own, as (start, length, advice): its files' pages (its libraries' code: fork copies no
    page-table entry of a file's mapping, so they would fault in again) to map, and its private writable pages
    (shared with the child until either writes one) to copy. Either would be paid inside the child's measured read
    and counted as its memory. Empty where pagemap does not read."""
    import numpy as np

    page, runs = os.sysconf("SC_PAGE_SIZE"), []
    try:
        with open("/proc/self/maps") as maps, open("/proc/self/pagemap", "rb") as pagemap:
            for line in maps:
                fields = line.split()
                mode, name = fields[1], fields[5] if len(fields) > 5 else ""
                private = mode[1] == "w" and mode[3] == "p"
                if not mode.startswith("r") or not (private or name.startswith("/")):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                entries = np.frombuffer(os.pread(pagemap.fileno(), 8 * ((end - start) // page), 8 * (start // page)),
                                        dtype="<u8")
                present = np.flatnonzero(entries >> np.uint64(63))
                if not present.size:
                    continue
                breaks = np.flatnonzero(np.diff(present) > 1) + 1
                for first, last in zip(np.r_[present[0], present[breaks]], np.r_[present[breaks - 1], present[-1]],
                                       strict=True):
                    runs.append((start + page * int(first), page * int(last - first + 1),
                                 MADV_POPULATE_WRITE if private else MADV_POPULATE_READ))
    except (OSError, ValueError, IndexError):
        return []
    return runs


def _forked_call(function: Any, line: str, write_end: int, mapped: list[tuple[int, int, int]]) -> None:
    """In a process :func:`serve` forked: the pages its server had (``mapped``: :func:`_pages_mapped`) made its
    own by the kernel (``madvise``: its files' pages mapped, its private pages copied), as a process that imported
    the library itself has them; then ``function(**json(line))``, its reply written to ``write_end``. Never
    returns."""
    code = 1
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
        madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        for start, length, advice in mapped:
            madvise(start, length, advice)  # a kernel before 5.14 refuses: the pages fault in as the read uses them
        die_with_parent()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # the server's requests are not this process's to read
        try:
            reply = {"result": function(**json.loads(line))}
        except Unavailable as exc:
            reply = {"unavailable": str(exc)}
        with os.fdopen(write_end, "wb") as out:
            out.write(json.dumps(reply).encode())
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


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
    if args[:1] == ["--serve"]:
        return serve(target, args[1])
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
