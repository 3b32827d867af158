"""Range-capable HTTP servers for the remote-read benchmarks, with their own request counters.

Two servers share one interface (:class:`HTTPServerLike`: a context manager with ``.url``,
``.url_for(path)``, ``.counters()`` and ``.reset()``), made by :func:`serve`: ``builtin``
(:mod:`.builtin`, in its own process; range answers in :mod:`.ranges`) and ``nginx``
(:mod:`.nginx`). Both count requests, ranges, bytes, CPU time and disk reads (:mod:`.counters`),
emulate latency and bandwidth the same way (:mod:`.link`), refuse paths outside their root and
bind 127.0.0.1 only. Import the classes from their modules; this package's ``__init__`` holds
only the shared interface, so the server process stays light.
"""

from __future__ import annotations

import errno
import socket
import subprocess
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .builtin import ServerProcess
    from .counters import ServerCounters
    from .nginx import NginxServer

SERVER_KINDS = ("builtin", "nginx")
HOST = "127.0.0.1"


def _spec_error(message: str) -> Exception:
    """:class:`benchmarks_lib.specs.SpecError`, imported when needed: the server process stays free of numpy."""
    from ..specs import SpecError

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


class HTTPServerLike(Protocol):
    """What :func:`serve` returns, whichever the kind."""

    kind: str
    root: Path

    @property
    def url(self) -> str: ...

    def url_for(self, path: str | Path) -> str: ...

    def counters(self) -> ServerCounters: ...

    def reset(self) -> None: ...

    def __enter__(self) -> HTTPServerLike: ...

    def __exit__(self, *exc: object) -> None: ...


def serve(root: str | Path, kind: str = "builtin", *, latency_ms: float = 0.0,
          bandwidth: float | None = None) -> ServerProcess | NginxServer:
    """A server for ``root`` (not started: use it as a context manager); the builtin one in its own process.

    ``latency_ms`` is one round trip, charged per connection and per request; ``bandwidth``
    (bytes/s) caps all connections together, each way (see :mod:`benchmarks_lib.servers.link`).
    """
    if kind == "builtin":
        from .builtin import ServerProcess

        return ServerProcess(root, latency_ms=latency_ms, bandwidth=bandwidth)
    if kind == "nginx":
        from .nginx import NginxServer

        return NginxServer(root, latency_ms=latency_ms, bandwidth=bandwidth)
    raise _spec_error(f"server kind {kind!r} is unknown; allowed: {', '.join(SERVER_KINDS)}")


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


__all__ = ["HOST", "SERVER_KINDS", "HTTPServerLike", "ServerUnavailable", "port_is_open", "serve"]
