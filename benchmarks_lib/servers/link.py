"""The emulated network link, where netem is not available.

``latency_ms`` is one round trip, charged once per new TCP connection (the connect) and once per
HTTP request (request out, first byte back), so a client that opens a connection per request pays
two round trips per request and a keep-alive client one; ``bandwidth`` (bytes/s) is one link
shared by all connections (paced writes). The builtin server applies both itself; for nginx a TCP
proxy in front (:class:`DelayProxy`) charges the same: one round trip per accepted connection and
one per HTTP request it forwards (it splits the byte stream into requests, so a request split over
several segments is charged once), and paces responses. The proxy runs in a process of its own
(:class:`LinkProcess`), so its threads share no interpreter lock with the client or server they sit
between: the same link for nginx and for MinIO (an S3 signature covers the Host header, which passes
through unchanged).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import subprocess
import sys
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



def _headers(buf: bytes) -> tuple[int, dict[bytes, bytes]] | None:
    """(length of the header block, lower-case header names -> values) of the request starting ``buf``."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    fields = {}
    for line in buf[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    return end + 4, fields


def _chunked_length(buf: bytes, pos: int) -> int | None:
    """End of a chunked body starting at ``pos`` (its last chunk and trailers included), or None."""
    while True:
        line_end = buf.find(b"\r\n", pos)
        if line_end < 0:
            return None
        try:
            size = int(buf[pos:line_end].split(b";")[0], 16)
        except ValueError:
            return len(buf)  # not HTTP chunking: forward what there is
        if size == 0:
            trailers_end = buf.find(b"\r\n\r\n", line_end)
            return None if trailers_end < 0 else trailers_end + 4
        pos = line_end + 2 + size + 2
        if len(buf) < pos:
            return None


def http_request_length(buf: bytes) -> int | None:
    """Length of the first complete HTTP/1.x request in ``buf`` (headers and body: Content-Length or
    chunked), or None."""
    head = _headers(buf)
    if head is None:
        return None
    length, fields = head
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        return _chunked_length(buf, length)
    with contextlib.suppress(ValueError):
        length += int(fields.get(b"content-length", b"0"))
    return length if len(buf) >= length else None


def expects_continue(buf: bytes) -> int | None:
    """Length of the header block when the request starting ``buf`` holds its body back until the server's
    ``100 Continue`` (``Expect: 100-continue``), else None."""
    head = _headers(buf)
    return head[0] if head and head[1].get(b"expect", b"").lower() == b"100-continue" else None


class DelayProxy:
    """A TCP proxy on 127.0.0.1 in front of a server: the link model of the module docstring.

    Each accepted connection is charged one round trip (the connect) before its first request
    goes upstream; each HTTP request is charged one round trip, counted from the arrival of its
    last byte (a request split over several segments is charged once; requests that arrive
    together leave together). A request that waits for ``100 Continue`` before sending its body
    (curl's uploads) sends its headers after a round trip of their own, as over a real link.
    Responses are paced to ``bandwidth`` bytes/s.
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
        sent = 0  # bytes of the request at the head of buf already forwarded (headers awaiting 100 Continue)
        try:
            while data := src.recv(_PACE_CHUNK):
                arrived = time.monotonic()
                buf += data
                while (n := http_request_length(buf)) is not None:
                    request, buf = buf[sent:n], buf[n:]
                    sent = 0
                    self._wait_until(max(arrived, connected) + self.latency_s)
                    with self._lock:
                        self.charged_requests += 1
                    dst.sendall(request)
                if not sent and (head := expects_continue(buf)):
                    self._wait_until(max(arrived, connected) + self.latency_s)
                    dst.sendall(buf[:head])
                    sent = head
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



def run_proxy(upstream_port: str, latency_ms: str, bandwidth: str) -> int:
    """The child of :class:`LinkProcess`: a :class:`DelayProxy` to ``upstream_port`` on 127.0.0.1. Prints its
    port, then answers each line on stdin with its charged counts (JSON); stops at end of input."""
    proxy = DelayProxy((HOST, int(upstream_port)), latency_ms=float(latency_ms), bandwidth=float(bandwidth) or None)
    print(json.dumps({"port": proxy.port}), flush=True)
    for _ in sys.stdin:
        print(json.dumps({"connections": proxy.charged_connections, "requests": proxy.charged_requests}), flush=True)
    proxy.close()
    return 0


class LinkProcess:
    """A :class:`DelayProxy` in a process of its own in front of ``upstream`` (a 127.0.0.1 port); a context
    manager. ``port`` is where clients connect; :meth:`charged` says what it charged so far. It dies with
    its owner."""

    def __init__(self, upstream_port: int, *, latency_ms: float = 0.0, bandwidth: float | None = None) -> None:
        _check_link(latency_ms, bandwidth)
        self.upstream_port, self.latency_ms, self.bandwidth = upstream_port, latency_ms, bandwidth
        self.port = 0
        self._proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def _reply(self, timeout_s: float = 30.0) -> dict:
        assert self._proc is not None and self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout_s)
        line = self._proc.stdout.readline() if ready else ""
        if not line:
            self.__exit__()
            raise RuntimeError(f"the link proxy (latency {self.latency_ms} ms) did not answer within {timeout_s} s")
        return json.loads(line)

    def __enter__(self) -> LinkProcess:
        from ..measure import fresh

        self._proc = fresh.start("benchmarks_lib.servers.link:run_proxy", str(self.upstream_port),
                                 str(self.latency_ms), str(self.bandwidth or 0), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        self.port = self._reply()["port"]
        return self

    def charged(self) -> dict[str, int]:
        """Round trips charged so far: ``connections`` and ``requests``."""
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write("\n")
        self._proc.stdin.flush()
        return self._reply()

    def __exit__(self, *exc: object) -> None:
        from . import stop_process

        if self._proc is None:
            return
        with contextlib.suppress(OSError):
            self._proc.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)
        stop_process(self._proc)
        if self._proc.stdout:
            self._proc.stdout.close()
        self._proc = None
