"""What every local server shares: the loopback address it binds, a free port, whether a port answers,
stopping a server process, and the errors a server raises. The server modules import this, never the
package's ``__init__``, which imports them."""

from __future__ import annotations

import errno
import socket
import subprocess
import urllib.parse

HOST = "127.0.0.1"


def spec_error(message: str) -> Exception:
    """:class:`benchmarks_lib.base.specs.SpecError`, imported when needed: the server process stays free of numpy."""
    from benchmarks_lib.base.specs import SpecError

    return SpecError(message)


class ServerUnavailable(RuntimeError):
    """The requested server program is not installed; the message says how to get it."""


def stop_process(proc: subprocess.Popen | None) -> None:
    """Stop a server process: SIGTERM, 10 s to exit, then SIGKILL; its stderr pipe closed."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr:
        proc.stderr.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (for a server started next)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_is_open(url_or_port: str | int) -> bool:
    """True when something accepts TCP connections on this 127.0.0.1 port (or URL's port)."""
    port = url_or_port if isinstance(url_or_port, int) else urllib.parse.urlsplit(url_or_port).port
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, None) and not isinstance(exc, TimeoutError):
            raise
        return False
