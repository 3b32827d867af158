"""The emulated network link, where netem is not available.

``latency_ms`` is one round trip. The link is a delay line: every byte, each way, arrives half a round trip
after it was sent, so any request costs one round trip more than on 127.0.0.1 (request out, response back),
whatever the client (a keep-alive client, one that opens a connection per request, one that waits for
``100 Continue``: each pays what it would pay on a real link); a new TCP connection costs one round trip more
(its connect: nothing it sends leaves before then). ``bandwidth`` (bytes/s) is the link's capacity in each
direction, shared by all its connections: each chunk takes its slot in that direction's queue before its
propagation delay. Bodies stream through in both directions (nothing is stored and forwarded), so the proxy
adds the link's cost and not its own.

The builtin server applies the same model itself; for nginx and versitygw a TCP proxy in front
(:class:`DelayProxy`) is the link. It runs in a process of its own (:class:`LinkProcess`), so its threads
share no interpreter lock with the client or server they sit between (an S3 signature covers the Host
header, which passes through unchanged). It counts the connections it accepted and the HTTP requests that
went through (:class:`RequestCounter`, which reads request heads and skips bodies by their length).
"""

from __future__ import annotations

import contextlib
import json
import queue
import select
import socket
import struct
import subprocess
import sys
import threading
import time

from benchmarks_lib.servers.loopback import HOST, spec_error

_PACE_CHUNK = 64 << 10
#: what one direction of one connection reads at a time
_CHUNK = 1 << 20
#: bytes one direction of one connection holds in flight before it stops reading (a TCP window this large)
_MAX_HELD = 64 << 20
#: a request head longer than this is not HTTP: the counter stops counting that connection
_MAX_HEAD = 64 << 10


class BandwidthPacer:
    """A shared link of ``rate`` bytes/s: each chunk waits for its slot (token bucket, no burst)."""

    def __init__(self, rate: float) -> None:
        if rate <= 0:
            raise spec_error(f"bandwidth {rate} must be positive (bytes/s)")
        self.rate = float(rate)
        self._lock = threading.Lock()
        self._next = 0.0

    def reserve(self, nbytes: int, now: float | None = None) -> float:
        """Book ``nbytes`` on the link from ``now`` (the caller's clock, one per pacer; by default monotonic):
        the time its last byte has left."""
        with self._lock:
            start = max(time.monotonic() if now is None else now, self._next)
            self._next = start + nbytes / self.rate
            return self._next

    def wait(self, nbytes: int) -> None:
        _sleep_until(self.reserve(nbytes))


def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _check_link(latency_ms: float, bandwidth: float | None) -> None:
    if latency_ms < 0:
        raise spec_error(f"latency_ms {latency_ms} must be >= 0")
    if bandwidth is not None and bandwidth <= 0:
        raise spec_error(f"bandwidth {bandwidth} must be a positive number of bytes/s, or None for no cap")


class RequestCounter:
    """Counts the HTTP/1.x requests in a byte stream fed in pieces of any size. It keeps a request's head
    until its end, and skips its body by count (``Content-Length``, or chunk by chunk), never storing it;
    a stream that is not HTTP stops the count (``broken``)."""

    def __init__(self) -> None:
        self.requests = 0
        self.broken = False
        self._buf = b""  # the head, a chunk-size line or the trailers being read
        self._state = "head"  # head | body | size | data | trailers
        self._skip = 0  # body or chunk bytes still to pass

    def feed(self, data: bytes) -> None:
        view, pos = memoryview(data), 0
        while pos < len(view) and not self.broken:
            if self._state in ("body", "data"):
                step = min(self._skip, len(view) - pos)
                pos, self._skip = pos + step, self._skip - step
                if not self._skip:
                    self._state = "head" if self._state == "body" else "size"
                continue
            end_mark = b"\r\n" if self._state == "size" else b"\r\n\r\n"
            old = len(self._buf)
            self._buf += bytes(view[pos:pos + _MAX_HEAD + 1 - old])
            found = self._buf.find(end_mark, max(0, old - len(end_mark) + 1))
            if found < 0:
                pos += len(self._buf) - old
                self.broken = len(self._buf) > _MAX_HEAD
                continue
            block, pos = self._buf[:found], pos + found + len(end_mark) - old
            self._buf = b""
            self._end_of(block)

    def _end_of(self, block: bytes) -> None:
        """A head, a chunk-size line or the trailers ended (``block``: without their end mark)."""
        if self._state == "trailers":
            self._state = "head"
        elif self._state == "size":
            try:
                size = int(block.split(b";")[0], 16)
            except ValueError:
                self.broken = True
                return
            self._state, self._skip = ("data", size + 2) if size else ("trailers", 0)
            if not size:
                self._buf = b"\r\n"  # trailers end with an empty line: none at all is "\r\n" right away
        elif block.strip():
            self.requests += 1
            fields = {}
            for line in block.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                fields[name.strip().lower()] = value.strip()
            if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
                self._state = "size"
                return
            try:
                self._skip = int(fields.get(b"content-length", b"0"))
            except ValueError:
                self.broken = True
                return
            self._state = "body" if self._skip else "head"


class _Direction:
    """One way of one connection. A reader thread reads eagerly (the link, not the kernel's socket buffer,
    holds what is in flight, so a long delay does not stall a transfer on the TCP window) and stamps each chunk
    with the time it reaches the far end: its arrival (the kernel's receive timestamp of its last segment), its
    slot on the link's pacer, the one-way delay, never before ``not_before``. A sender thread hands each chunk
    over at that time. It ends with a half-close of the far end, as TCP forwards a FIN."""

    def __init__(self, conn: _Connection, src: socket.socket, dst: socket.socket, delay_s: float,
                 pacer: BandwidthPacer | None, not_before: float, counter: RequestCounter | None) -> None:
        self.conn, self.src, self.dst, self.delay_s = conn, src, dst, delay_s
        self.pacer, self.not_before, self.counter = pacer, not_before, counter
        self._chunks: queue.SimpleQueue[tuple[float, bytes | None]] = queue.SimpleQueue()
        self._held = 0  # bytes read and not yet sent
        self._room = threading.Condition()

    def start(self, name: str) -> None:
        threading.Thread(target=self._read, name=f"{name}-read", daemon=True).start()
        threading.Thread(target=self._send, name=f"{name}-send", daemon=True).start()

    def _read(self) -> None:
        try:
            self.src.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            while True:
                data, ancillary, _, _ = self.src.recvmsg(_CHUNK, _TIMESTAMP_SPACE)
                if not data:
                    break
                arrived = _arrival(ancillary)
                if self.counter is not None:
                    self.counter.feed(data)
                left = self.pacer.reserve(len(data), arrived) if self.pacer else arrived
                with self._room:
                    while self._held >= _MAX_HELD and not self.conn.aborted:
                        self._room.wait()
                    self._held += len(data)
                self._chunks.put((max(left, self.not_before) + self.delay_s, data))
        except OSError:
            pass
        finally:
            self._chunks.put((0.0, None))

    def _send(self) -> None:
        try:
            while (item := self._chunks.get())[1] is not None:
                due, data = item
                delay = due - time.time()
                if delay > 0:
                    time.sleep(delay)
                self.dst.sendall(data)
                with self._room:
                    self._held -= len(data)
                    self._room.notify()
            with contextlib.suppress(OSError):
                self.dst.shutdown(socket.SHUT_WR)
        except OSError:
            self.conn.abort()
        finally:
            self.conn.finished()

    def wake(self) -> None:
        with self._room:
            self._room.notify_all()


#: Linux's SO_TIMESTAMPNS (x86, ARM, most others; Python 3.11 has no name for it); its message has the same type
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESTAMP_SPACE = socket.CMSG_SPACE(16)


def _arrival(ancillary: list) -> float:
    """The kernel's receive time (``SO_TIMESTAMPNS``, the wall clock) of a read, or now where it gave none."""
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(value) >= 16:
            seconds, nanoseconds = struct.unpack("qq", value[:16])
            return seconds + nanoseconds * 1e-9
    return time.time()


class _Connection:
    """A client's connection and the proxy's connection upstream: two :class:`_Direction`; both sockets close
    when both ways have ended, or at once when one fails."""

    def __init__(self, proxy: DelayProxy, client: socket.socket, server: socket.socket, accepted: float) -> None:
        self.proxy, self.socks, self.aborted = proxy, (client, server), False
        self._lock = threading.Lock()
        self._running = 2
        one_way = proxy.latency_s / 2
        connected = accepted + proxy.latency_s  # the connect's round trip: nothing leaves the client before
        self.ways = (_Direction(self, client, server, one_way, proxy.up, connected, proxy.new_counter()),
                     _Direction(self, server, client, one_way, proxy.down, 0.0, None))

    def start(self, name: str) -> None:
        self.ways[0].start(f"{name}-up")
        self.ways[1].start(f"{name}-down")

    def abort(self) -> None:
        self.aborted = True
        for s in self.socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        for way in self.ways:
            way.wake()

    def finished(self) -> None:
        with self._lock:
            self._running -= 1
            last = self._running == 0
        if last:
            self.proxy._forget(self)
            for s in self.socks:
                s.close()


class DelayProxy:
    """A TCP proxy on 127.0.0.1 in front of a server: the link of the module docstring (``latency_ms`` one round
    trip, ``bandwidth`` bytes/s each way). ``charged_connections`` counts the connections it accepted (each
    paid its connect), ``charged_requests`` the HTTP requests that went through (each paid its round trip)."""

    def __init__(self, upstream: tuple[str, int], *, latency_ms: float = 0.0, bandwidth: float | None = None) -> None:
        _check_link(latency_ms, bandwidth)
        self.upstream = upstream
        self.latency_s = latency_ms / 1000.0
        self.up = BandwidthPacer(bandwidth) if bandwidth else None
        self.down = BandwidthPacer(bandwidth) if bandwidth else None
        self.charged_connections = 0
        self._counters: set[RequestCounter] = set()  # open connections'; closed ones are summed
        self._closed_requests = 0
        self._listener = socket.create_server((HOST, 0), backlog=1024)
        self.port = self._listener.getsockname()[1]
        self._conns: set[_Connection] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, name=f"iobench-proxy-{self.port}", daemon=True)
        self._thread.start()

    def new_counter(self) -> RequestCounter:
        """A new connection's request counter (:attr:`charged_requests` sums them)."""
        counter = RequestCounter()
        with self._lock:
            self._counters.add(counter)
        return counter

    @property
    def charged_requests(self) -> int:
        with self._lock:
            return self._closed_requests + sum(c.requests for c in self._counters)

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            accepted = time.time()  # the clock of the kernel's receive timestamps
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(self, client, server, accepted)
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._conns.add(conn)
                self.charged_connections += 1
            conn.start(f"iobench-proxy-{self.port}-{self.charged_connections}")

    def _forget(self, conn: _Connection) -> None:
        counter = conn.ways[0].counter
        with self._lock:
            self._conns.discard(conn)
            if counter in self._counters:
                self._counters.discard(counter)
                self._closed_requests += counter.requests

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns = list(self._conns)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for conn in conns:
            conn.abort()
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
        from benchmarks_lib.measure import fresh

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
        from benchmarks_lib.servers.loopback import stop_process

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
