"""Range-capable HTTP servers for the remote-read benchmarks, with their own request counters.

Two servers share one interface (:class:`HTTPServerLike`: a context manager with ``.url``,
``.url_for(path)``, ``.counters()`` and ``.reset()``), made by :func:`serve`: ``builtin``
(:mod:`.builtin`, in its own process; range answers in :mod:`.ranges`) and ``nginx``
(:mod:`.nginx`). Both count requests, ranges, bytes, CPU time and disk reads (:mod:`.counters`),
emulate latency and bandwidth the same way (:mod:`.link`), refuse paths outside their root and
bind 127.0.0.1 only (:mod:`.loopback`: the address, ports, stopping a server process, which the
server modules import). Import the classes from their modules; this package's ``__init__`` holds only
the shared interface, so the server process stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from benchmarks_lib.servers.loopback import HOST, ServerUnavailable, free_port, port_is_open, spec_error, stop_process

if TYPE_CHECKING:
    from benchmarks_lib.servers.builtin import ServerProcess
    from benchmarks_lib.servers.counters import ServerCounters
    from benchmarks_lib.servers.nginx import NginxServer

SERVER_KINDS = ("builtin", "nginx")


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
        from benchmarks_lib.servers.builtin import ServerProcess

        return ServerProcess(root, latency_ms=latency_ms, bandwidth=bandwidth)
    if kind == "nginx":
        from benchmarks_lib.servers.nginx import NginxServer

        return NginxServer(root, latency_ms=latency_ms, bandwidth=bandwidth)
    raise spec_error(f"server kind {kind!r} is unknown; allowed: {', '.join(SERVER_KINDS)}")


__all__ = ["HOST", "SERVER_KINDS", "HTTPServerLike", "ServerUnavailable", "free_port", "port_is_open", "serve",
           "stop_process"]
