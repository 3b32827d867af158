"""The emulated network link, where netem is not available.

``latency_ms`` is one round trip, charged once per new TCP connection (the connect) and once per
HTTP request (request out, first byte back), so a client that opens a connection per request pays
two round trips per request and a keep-alive client one; ``bandwidth`` (bytes/s) is one link
shared by all connections (paced writes). The builtin server applies both itself; for nginx a TCP
proxy in front (:class:`DelayProxy`) charges the same: one round trip per accepted connection and
one per HTTP request it forwards (it splits the byte stream into requests, so a request split over
several segments is charged once), and paces responses.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from . import HOST, _spec_error

_PACE_CHUNK = 64 << 10


class BandwidthPacer:
    """A shared link of ``rate`` bytes/s: each chunk waits for its slot (token bucket, no burst)."""

    def __init__(self, rate: float) -> None:
        if rate <= 0:
            raise _spec_error(f"bandwidth {rate} must be positive (bytes/s)")
        self.rate = float(rate)
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self, nbytes: int) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + nbytes / self.rate
            until = self._next
        delay = until - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def _check_link(latency_ms: float, bandwidth: float | None) -> None:
    if latency_ms < 0:
        raise _spec_error(f"latency_ms {latency_ms} must be >= 0")
    if bandwidth is not None and bandwidth <= 0:
        raise _spec_error(f"bandwidth {bandwidth} must be a positive number of bytes/s, or None for no cap")



def http_request_length(buf: bytes) -> int | None:
    """Length of the first complete HTTP/1.x request in ``buf`` (headers and Content-Length body), or None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    length = end + 4
    for line in buf[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            with contextlib.suppress(ValueError):
                length += int(value.strip())
    return length if len(buf) >= length else None


class DelayProxy:
    """A TCP proxy on 127.0.0.1 in front of a server: the link model of the module docstring.

    Each accepted connection is charged one round trip (the connect) before its first request
    goes upstream; each HTTP request is charged one round trip, counted from the arrival of its
    last byte (a request split over several segments is charged once; requests that arrive
    together leave together). Responses are paced to ``bandwidth`` bytes/s.
    ``charged_connections`` and ``charged_requests`` count what was charged.
    """

    def __init__(self, upstream: tuple[str, int], *, latency_ms: float = 0.0, bandwidth: float | None = None) -> None:
        _check_link(latency_ms, bandwidth)
        self.upstream = upstream
        self.latency_s = latency_ms / 1000.0
        self.pacer = BandwidthPacer(bandwidth) if bandwidth else None
        self.charged_connections = 0
        self.charged_requests = 0
        self._listener = socket.create_server((HOST, 0), backlog=1024)
        self.port = self._listener.getsockname()[1]
        self._socks: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, name=f"iobench-proxy-{self.port}", daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            accepted = time.monotonic()
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._socks.update((client, server))
                self.charged_connections += 1
            threading.Thread(target=self._forward_requests, args=(client, server, accepted), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, self.pacer), daemon=True).start()

    @staticmethod
    def _wait_until(deadline: float) -> None:
        delay = deadline - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def _forward_requests(self, src: socket.socket, dst: socket.socket, accepted: float) -> None:
        """Client to server, one HTTP request at a time, each after its round trip."""
        connected = accepted + self.latency_s
        buf = b""
        try:
            while data := src.recv(_PACE_CHUNK):
                arrived = time.monotonic()
                buf += data
                while (n := http_request_length(buf)) is not None:
                    request, buf = buf[:n], buf[n:]
                    self._wait_until(max(arrived, connected) + self.latency_s)
                    with self._lock:
                        self.charged_requests += 1
                    dst.sendall(request)
        except OSError:
            pass
        finally:
            self._close_pair(src, dst)

    def _pump(self, src: socket.socket, dst: socket.socket, pacer: BandwidthPacer | None) -> None:
        try:
            while data := src.recv(_PACE_CHUNK):
                if pacer:
                    pacer.wait(len(data))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._close_pair(src, dst)

    def _close_pair(self, src: socket.socket, dst: socket.socket) -> None:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        with self._lock:
            for s in (src, dst):
                self._socks.discard(s)
        src.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            socks = list(self._socks)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

