"""The command line run many times, each run a process of its own, without paying for an interpreter each time.

A fresh ``python -m benchmarks_lib`` spends about 0.9 s of CPU before it reads its arguments (two interpreter
starts, pandas, numpy, pyarrow); the probes of the hostile-input tests make hundreds of such runs. Here one server
process per test worker imports the command line and the libraries its commands open files with, once; each
:func:`iobench` call is a process forked from it (about 0.05 s of CPU) that takes the call's arguments, working
directory and environment (with safe-path on and the ``PYTHONPATH`` the ``iobench`` command gives itself), writes
its output to files and ends as the command does (``sys.exit(main())``: exit status, traceback of an uncaught
exception, atexit). A call starts from the server's state, never from another call's.

What a fork cannot carry goes to a fresh interpreter instead: an environment that changes what is read at import
(``PYTHONPATH``: another import path; ``FORCE_COLOR`` and the like: the consoles made at import), which is every
variable given that is not iobench's own (``IOBENCH_*``). The launcher itself (``iobench`` with ``-I``, the restart
with safe-path) is tested on its own (``test_base_import_path``, ``test_run_lifetime``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks_lib.base.importpath import SAFE_PATH, child_env
from benchmarks_lib.measure.fresh import die_with_parent

#: what the server imports before its first fork: the command line and what its commands open files with
PRELOAD = ("benchmarks_lib.cli.main", "benchmarks_lib.run.runner", "benchmarks_lib.inputs.user_data",
           "benchmarks_lib.adapters.user_arrays", "benchmarks_lib.advise.command", "zarr", "h5py", "tifffile")
#: the server's own code: it imports ``PRELOAD`` and serves; a forked call leaves ``serve`` and runs the command
SERVER = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import forked_cli
request = forked_cli.serve()
sys.exit(forked_cli.run_command(request))
"""


def iobench(args: list[str], cwd: Path, env: dict[str, str] | None = None, *,
            timeout: float = 600) -> subprocess.CompletedProcess:
    """``iobench ARGS`` run in ``cwd`` with this process's environment and ``env``, as ``subprocess.run`` with
    ``capture_output=True, text=True`` and stdin from /dev/null returns it; ``subprocess.TimeoutExpired`` past
    ``timeout`` seconds (the call's process group killed)."""
    full_env = {**os.environ, **(env or {})}
    command = [sys.executable, "-m", "benchmarks_lib", *args]
    if any(not name.startswith("IOBENCH_") for name in env or {}):
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=full_env, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="forked-cli-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        status = _server().call({"args": list(args), "cwd": str(cwd), "env": child_env(full_env),
                                 "stdout": str(out), "stderr": str(err), "timeout": timeout})
        stdout, stderr = (p.read_text(errors="replace") if p.exists() else "" for p in (out, err))
    if status is None:
        raise subprocess.TimeoutExpired(command, timeout, stdout, stderr)
    return subprocess.CompletedProcess(command, status, stdout, stderr)


class _Server:
    """The server process: one JSON request a line on its stdin, the forked call's exit status (None: killed past
    its time) a line on its stdout. Killed with this process; started again should it have died."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, SAFE_PATH, "-c", SERVER], env=child_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=tempfile.gettempdir(), preexec_fn=die_with_parent)
        atexit.register(self.close)

    def call(self, request: dict) -> int | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"the forked-CLI server died (exit {self.proc.wait()})")
        return json.loads(reply)["status"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


_SERVER: _Server | None = None


def _server() -> _Server:
    global _SERVER
    if _SERVER is None or _SERVER.proc.poll() is not None:
        _SERVER = _Server()
    return _SERVER


# -- the server side ----------------------------------------------------------------------------------------------

def serve() -> dict:
    """Import ``PRELOAD``, then fork one process per request and answer with its exit status. Returns only in a
    forked process: its request."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    while line := sys.stdin.readline():
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            return request
        with contextlib.suppress(OSError):  # its own process group before it runs (it also asks for one)
            os.setpgid(pid, pid)
        sys.stdout.write(json.dumps({"status": _wait(pid, request["timeout"])}) + "\n")
        sys.stdout.flush()
    raise SystemExit(0)  # the test worker closed the channel


def _wait(pid: int, timeout: float) -> int | None:
    """The exit status of ``pid`` (negative: the signal that ended it), None where it ran past ``timeout``."""
    fd = os.pidfd_open(pid)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
    finally:
        os.close(fd)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def run_command(request: dict) -> int:
    """In the forked process: become the call (its own process group, streams, directory, environment) and run
    the command line, as ``iobench`` does after its restart."""
    os.setpgid(0, 0)
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_CREAT),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT)):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path.remove(str(Path(__file__).parent))
    sys.argv = ["iobench", *request["args"]]
    from benchmarks_lib.base.importpath import drop_working_directory
    from benchmarks_lib.cli.main import main

    drop_working_directory()
    return main(request["args"])
