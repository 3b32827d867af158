"""Range-capable HTTP servers for the remote-read benchmarks, with their own request counters.

Two servers share one interface (a context manager with ``.url``, ``.url_for(path)``,
``.counters()`` and ``.reset()``), made by :func:`serve`:

- ``builtin``: :class:`RangeHTTPServer`, a ``ThreadingHTTPServer`` that answers single and
  multi-range GETs (``Range: bytes=a-b,c-d,...`` as ROOT's TWebFile sends them) and HEAD, with
  HTTP/1.1 keep-alive, TCP_NODELAY (else Nagle + delayed ACK add ~40 ms per request), a
  1024-deep listen backlog (uproot's multithreaded source opens a connection per request) and
  a numeric multipart boundary (TWebFile lower-cases header lines before matching it).
- ``nginx``: :class:`NginxServer`, Debian's nginx (optional) counted from a JSON access log.

The builtin server runs in its own Python process (:class:`ServerProcess`, what :func:`serve`
returns), so its CPU time is its own: the counters carry ``cpu_s`` (server CPU since the last
``reset()``) and ``io_read_bytes`` (its disk reads, the proof that a remote read was cold).

The link model, where netem is not available: ``latency_ms`` is one round trip, charged once per
new TCP connection (the connect) and once per HTTP request (request out, first byte back), so a
client that opens a connection per request pays two round trips per request and a keep-alive
client one; ``bandwidth`` (bytes/s) is one link shared by all connections (paced writes). The
builtin server applies both itself; for nginx a TCP proxy in front (:class:`DelayProxy`) charges
the same: one round trip per accepted connection and one per HTTP request it forwards (it splits
the byte stream into requests, so a request split over several segments is charged once), and
paces responses. Both servers refuse paths outside their root (``..`` segments and symlinks
resolving outside it answer 403) and bind 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from .measure.iocounters import read_io_counters
from .scratch import create_marked_dir, remove_tree

SERVER_KINDS = ("builtin", "nginx")
HOST = "127.0.0.1"
#: numeric on purpose: TWebFile lower-cases response header lines, so "Boundary" would never match
MULTIPART_BOUNDARY = "9183720465117"
_CHUNK = 1 << 20
_PACE_CHUNK = 64 << 10


def _spec_error(message: str) -> Exception:
    """:class:`benchmarks_lib.specs.SpecError`, imported when needed: the server process stays free of numpy."""
    from .specs import SpecError

    return SpecError(message)


class ServerUnavailable(RuntimeError):
    """The requested server program is not installed; the message says how to get it."""


# ---------------------------------------------------------------------------------------------
# counters


@dataclass(frozen=True)
class PathCounters:
    requests: int = 0
    ranges: int = 0
    bytes_sent: int = 0


@dataclass(frozen=True)
class ServerCounters:
    """What the server saw since start or the last ``reset()``.

    ``ranges`` counts byte ranges asked for (a GET without Range counts one), ``bytes_sent``
    counts response body bytes including multipart framing, ``payload_bytes`` only file bytes.
    """

    requests: int = 0
    head_requests: int = 0
    ranges: int = 0
    multi_range_requests: int = 0
    bytes_sent: int = 0
    payload_bytes: int = 0
    connections: int = 0
    #: most requests being answered at the same time (None where the server does not say: nginx)
    max_in_flight: int | None = 0
    statuses: dict[int, int] = field(default_factory=dict)
    by_path: dict[str, PathCounters] = field(default_factory=dict)
    #: CPU seconds (user + system) of the server process(es); None where not measured
    cpu_s: float | None = None
    #: bytes the server process(es) read from disk (/proc/PID/io read_bytes); None where not measured
    io_read_bytes: int | None = None

    @property
    def get_requests(self) -> int:
        return self.requests - self.head_requests

    def as_row(self) -> dict:
        """The scalar counters as ``server_*`` row columns."""
        return {"server_requests": self.requests, "server_head_requests": self.head_requests,
                "server_ranges": self.ranges, "server_multi_range_requests": self.multi_range_requests,
                "server_bytes": self.bytes_sent, "server_payload_bytes": self.payload_bytes,
                "server_connections": self.connections, "server_max_in_flight": self.max_in_flight,
                "server_cpu_s": self.cpu_s, "server_io_read_bytes": self.io_read_bytes}

    def to_json(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("statuses", "by_path")}
        return {**d, "statuses": {str(k): v for k, v in self.statuses.items()},
                "by_path": {k: [v.requests, v.ranges, v.bytes_sent] for k, v in self.by_path.items()}}

    @classmethod
    def from_json(cls, d: dict) -> ServerCounters:
        rest = {k: v for k, v in d.items() if k not in ("statuses", "by_path")}
        return cls(**rest, statuses={int(k): v for k, v in d["statuses"].items()},
                   by_path={k: PathCounters(*v) for k, v in d["by_path"].items()})


class _Tally:
    """Thread-safe accumulation of :class:`ServerCounters`."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._in_flight = 0
        self.reset()

    def begin(self) -> None:
        """A request started (before any byte of its response is sent)."""
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def end(self) -> None:
        """A request is fully answered and tallied."""
        with self._lock:
            self._in_flight -= 1
            self._lock.notify_all()

    def reset(self) -> None:
        with self._lock:
            self._totals = {"requests": 0, "head_requests": 0, "ranges": 0, "multi_range_requests": 0,
                            "bytes_sent": 0, "payload_bytes": 0, "connections": 0}
            self._statuses: dict[int, int] = {}
            self._paths: dict[str, list[int]] = {}
            self._max_in_flight = self._in_flight

    def connection(self) -> None:
        with self._lock:
            self._totals["connections"] += 1

    def request(self, path: str, method: str, status: int, ranges: int, body: int, payload: int) -> None:
        with self._lock:
            t = self._totals
            t["requests"] += 1
            t["head_requests"] += method == "HEAD"
            t["ranges"] += ranges
            t["multi_range_requests"] += ranges > 1
            t["bytes_sent"] += body
            t["payload_bytes"] += payload
            self._statuses[status] = self._statuses.get(status, 0) + 1
            p = self._paths.setdefault(path, [0, 0, 0])
            p[0] += 1
            p[1] += ranges
            p[2] += body

    def snapshot(self, wait_s: float = 5.0) -> ServerCounters:
        """The counts, once requests in flight are tallied (a client may see the last byte first)."""
        with self._lock:
            self._lock.wait_for(lambda: self._in_flight == 0, timeout=wait_s)
            paths = {k: PathCounters(*v) for k, v in self._paths.items()}
            return ServerCounters(**self._totals, max_in_flight=self._max_in_flight, statuses=dict(self._statuses),
                                  by_path=paths)


# ---------------------------------------------------------------------------------------------
# ranges and pacing


def parse_range_header(header: str | None, size: int) -> list[tuple[int, int]] | None:
    """``bytes=a-b,c-,-n`` to half-open ``(start, stop)`` pairs clipped to ``size``.

    Returns None when there is no usable Range header (serve the whole file), ``[]`` when no
    range is satisfiable (416). Syntactically invalid headers are ignored, as RFC 9110 allows.
    """
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or not spec.strip():
        return None
    out: list[tuple[int, int]] = []
    for item in spec.split(","):
        first, dash, last = item.strip().partition("-")
        if not dash:
            return None
        try:
            if first == "":
                n = int(last)
                if n <= 0:
                    continue
                start, stop = max(0, size - n), size
            else:
                start = int(first)
                stop = size if last == "" else min(int(last) + 1, size)
                if int(first) < 0 or (last != "" and int(last) < start):
                    return None
        except ValueError:
            return None
        if start < size and stop > start:
            out.append((start, stop))
    return out


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


def confine(root: Path, url_path: str) -> Path | None:
    """The file a URL path names under ``root``, or None when it would leave the root."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(url_path).path)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." or "\x00" in p for p in parts):
        return None
    target = root.joinpath(*parts).resolve()
    return target if target == root or target.is_relative_to(root) else None


# ---------------------------------------------------------------------------------------------
# the builtin server


class _RangeRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "iobench-range/1"
    disable_nagle_algorithm = True
    timeout = 120
    server: RangeHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)
        self.server.tally.connection()
        self.server.charge_round_trip()  # the TCP connect

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.track(self.connection, False)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self._respond(head=True)

    def do_GET(self) -> None:
        self._respond(head=False)

    def _error(self, status: HTTPStatus, method: str) -> None:
        body = f"{status.value} {status.phrase}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)
        self.server.tally.request(self.path, method, status.value, 0, 0 if method == "HEAD" else len(body), 0)

    def _respond(self, head: bool) -> None:
        self.server.tally.begin()
        try:
            self._answer(head)
        finally:
            self.server.tally.end()

    def _answer(self, head: bool) -> None:
        server = self.server
        method = "HEAD" if head else "GET"
        server.charge_round_trip()  # the request
        target = confine(server.root, self.path)
        url_path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if target is None:
            return self._error(HTTPStatus.FORBIDDEN, method)
        if not target.is_file():
            return self._error(HTTPStatus.NOT_FOUND, method)
        try:
            fd = os.open(target, os.O_RDONLY)
        except OSError:
            return self._error(HTTPStatus.FORBIDDEN, method)
        try:
            size = os.fstat(fd).st_size
            ranges = parse_range_header(self.headers.get("Range"), size)
            if ranges == []:
                self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                server.tally.request(url_path, method, 416, 0, 0, 0)
                return None
            sent = payload = 0
            if ranges is None or head:
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(size))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if not head:
                    sent = payload = self._send_file(fd, 0, size)
                server.tally.request(url_path, method, 200, 0 if head else 1, sent, payload)
                return None
            if len(ranges) == 1:
                start, stop = ranges[0]
                self.send_response(HTTPStatus.PARTIAL_CONTENT)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
                self.send_header("Content-Length", str(stop - start))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                sent = payload = self._send_file(fd, start, stop)
                server.tally.request(url_path, method, 206, 1, sent, payload)
                return None
            heads = [(f"\r\n--{MULTIPART_BOUNDARY}\r\nContent-Type: application/octet-stream\r\n"
                      f"Content-Range: bytes {a}-{b - 1}/{size}\r\n\r\n").encode() for a, b in ranges]
            tail = f"\r\n--{MULTIPART_BOUNDARY}--\r\n".encode()
            length = sum(len(h) for h in heads) + sum(b - a for a, b in ranges) + len(tail)
            self.send_response(HTTPStatus.PARTIAL_CONTENT)
            self.send_header("Content-Type", f"multipart/byteranges; boundary={MULTIPART_BOUNDARY}")
            self.send_header("Content-Length", str(length))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            for h, (a, b) in zip(heads, ranges, strict=True):
                sent += self._write(h)
                n = self._send_file(fd, a, b)
                sent += n
                payload += n
            sent += self._write(tail)
            server.tally.request(url_path, method, 206, len(ranges), sent, payload)
            return None
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return None
        finally:
            os.close(fd)

    def _write(self, data: bytes) -> int:
        pacer = self.server.pacer
        if pacer is None:
            self.wfile.write(data)
            return len(data)
        view = memoryview(data)
        for i in range(0, len(view), _PACE_CHUNK):
            part = view[i:i + _PACE_CHUNK]
            pacer.wait(len(part))
            self.wfile.write(part)
        return len(data)

    def _send_file(self, fd: int, start: int, stop: int) -> int:
        sent = 0
        step = _PACE_CHUNK if self.server.pacer else _CHUNK
        while start < stop:
            data = os.pread(fd, min(step, stop - start), start)
            if not data:
                break
            self._write(data)
            start += len(data)
            sent += len(data)
        return sent


class RangeHTTPServer(ThreadingHTTPServer):
    """The builtin server: serves ``root`` on 127.0.0.1 with range support and counters.

    Use as a context manager; the server thread, the listening socket and every open
    connection are closed on exit, also when the body raised.
    """

    kind = "builtin"
    daemon_threads = True
    request_queue_size = 1024
    allow_reuse_address = True

    def __init__(self, root: str | Path, *, port: int = 0, latency_ms: float = 0.0,
                 bandwidth: float | None = None) -> None:
        _check_link(latency_ms, bandwidth)
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise _spec_error(f"server root {str(root)!r} is not a directory")
        self.latency_ms = float(latency_ms)
        self.latency_s = self.latency_ms / 1000.0
        self.bandwidth = bandwidth
        self.pacer = BandwidthPacer(bandwidth) if bandwidth else None
        self.tally = _Tally()
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__((HOST, port), _RangeRequestHandler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url_for(self, path: str | Path) -> str:
        """The URL of a file given relative to the root (or as an absolute path inside it)."""
        return _url_for(self.url, self.root, path)

    def counters(self) -> ServerCounters:
        return self.tally.snapshot()

    def reset(self) -> None:
        self.tally.reset()

    def charge_round_trip(self) -> None:
        """One emulated round trip (the link model in the module docstring)."""
        if self.latency_s:
            time.sleep(self.latency_s)

    def track(self, sock: socket.socket, opened: bool) -> None:
        with self._open_lock:
            (self._open.add if opened else self._open.discard)(sock)

    def start(self) -> RangeHTTPServer:
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"iobench-http-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every socket; safe to call twice."""
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()
        with self._open_lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self._open.clear()

    def __enter__(self) -> RangeHTTPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _url_for(base: str, root: Path, path: str | Path) -> str:
    p = Path(path)
    if p.is_absolute():
        resolved = p.resolve()
        if not resolved.is_relative_to(root):
            raise _spec_error(f"{str(path)!r} is outside the server root {str(root)!r}")
        p = resolved.relative_to(root)
    return f"{base}/{urllib.parse.quote(p.as_posix())}"


# ---------------------------------------------------------------------------------------------
# the builtin server in its own process


def _proc_cpu_s(pid: int | str = "self") -> float:
    """CPU seconds (user + system) of a process, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _proc_read_bytes(pid: int | str = "self") -> int | None:
    """``read_bytes`` of /proc/PID/io (bytes fetched from storage), or None where unreadable."""
    counters = read_io_counters(pid)
    return counters.read_bytes if counters else None


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for children in Path(f"/proc/{p}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo.extend(int(c) for c in children.read_text().split())
    return out


#: The server child imports only this module (``benchmarks_lib`` as a bare package, its heavy
#: ``__init__`` not run), so it starts in ~0.1 s.
_SERVER_BOOTSTRAP = (
    "import sys, types\n"
    "package = types.ModuleType('benchmarks_lib')\n"
    "package.__path__ = [sys.argv[1]]\n"
    "sys.modules['benchmarks_lib'] = package\n"
    "from benchmarks_lib.httpserver import _serve_child\n"
    "sys.exit(_serve_child(sys.argv[2]))\n"
)


def _serve_child(config: str) -> int:
    """The server process: serve, answer ``counters``/``reset``/``stop`` lines on stdin with JSON lines.

    The counters carry this process's CPU time and disk reads since the last reset. EOF on stdin
    (the parent died) stops it too.
    """
    c = json.loads(config)
    server = RangeHTTPServer(c["root"], latency_ms=c["latency_ms"], bandwidth=c["bandwidth"]).start()
    cpu0, io0 = time.process_time(), _proc_read_bytes()
    print(json.dumps({"port": server.port}), flush=True)
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "reset":
                server.reset()
                cpu0, io0 = time.process_time(), _proc_read_bytes()
                reply: dict = {"ok": True}
            elif command == "counters":
                snap = server.counters()
                io1 = _proc_read_bytes()
                io = io1 - io0 if io0 is not None and io1 is not None else None
                reply = ServerCounters.to_json(snap) | {"cpu_s": time.process_time() - cpu0, "io_read_bytes": io}
            elif command == "stop":
                break
            else:
                reply = {"error": f"unknown command {command!r}"}
            print(json.dumps(reply), flush=True)
    finally:
        server.stop()
    return 0


class ServerProcess:
    """The builtin server (:class:`RangeHTTPServer`) in its own Python process.

    Same interface as :class:`RangeHTTPServer`; its CPU never mixes with the client's or the
    runner's, and :meth:`counters` reports it (``cpu_s``, ``io_read_bytes`` since ``reset()``).
    """

    kind = "builtin"

    def __init__(self, root: str | Path, *, latency_ms: float = 0.0, bandwidth: float | None = None) -> None:
        _check_link(latency_ms, bandwidth)
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise _spec_error(f"server root {str(root)!r} is not a directory")
        self.latency_ms = float(latency_ms)
        self.bandwidth = bandwidth
        self.port = 0
        self._proc: subprocess.Popen | None = None
        self._stderr: Any = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url_for(self, path: str | Path) -> str:
        return _url_for(self.url, self.root, path)

    def start(self) -> ServerProcess:
        config = json.dumps({"root": str(self.root), "latency_ms": self.latency_ms, "bandwidth": self.bandwidth})
        cmd = [sys.executable, "-c", _SERVER_BOOTSTRAP, str(Path(__file__).resolve().parent), config]
        # stderr to a file, not a pipe: nobody drains it while serving, and a full pipe would block the server
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 (lives as long as the process)
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                      text=True, bufsize=1)
        line = self._proc.stdout.readline() if self._proc.stdout else ""
        if not line:
            self._proc.wait()
            self._stderr.seek(0)
            err = self._stderr.read()
            self.stop()
            raise RuntimeError(f"the builtin server process did not start: {err.strip()[-500:]}")
        self.port = int(json.loads(line)["port"])
        return self

    def _call(self, command: str) -> dict:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise RuntimeError("the server process is not running")
        proc.stdin.write(command + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the server process exited (status {proc.poll()}) while answering {command!r}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def counters(self) -> ServerCounters:
        return ServerCounters.from_json(self._call("counters"))

    def reset(self) -> None:
        self._call("reset")

    def stop(self) -> None:
        """Stop the server process; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.write("stop\n")
                proc.stdin.flush()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for stream in (proc.stdin, proc.stdout, self._stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.close()
        self._stderr = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------------
# latency proxy (for nginx)


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


# ---------------------------------------------------------------------------------------------
# nginx


def nginx_path() -> str | None:
    """The nginx executable on PATH (or in /usr/sbin), or None."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


_NGINX_MISSING = ("nginx is not installed (no `nginx` on PATH or in /usr/sbin); install Debian's "
                  "`apt-get install nginx-light`, or use server kind 'builtin'")


def nginx_missing_reason() -> str | None:
    """None when nginx is installed, else a one-line reason with the install hint."""
    return None if nginx_path() else _NGINX_MISSING


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with status {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.2):
            return
        time.sleep(0.02)
    raise RuntimeError(f"nginx did not listen on {HOST}:{port} within {timeout_s} s")


class NginxServer:
    """nginx serving ``root`` (same interface as :class:`RangeHTTPServer`).

    Counters come from a JSON-lines access log; latency and bandwidth go through a
    :class:`DelayProxy` in front. Symlinks are refused (``disable_symlinks on``), so nothing
    outside the root can be served.
    """

    kind = "nginx"

    def __init__(self, root: str | Path, *, latency_ms: float = 0.0, bandwidth: float | None = None) -> None:
        _check_link(latency_ms, bandwidth)
        self.executable = nginx_path()
        if self.executable is None:
            raise ServerUnavailable(_NGINX_MISSING)
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise _spec_error(f"server root {str(root)!r} is not a directory")
        self.latency_ms = float(latency_ms)
        self.bandwidth = bandwidth
        self._dir: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._proxy: DelayProxy | None = None
        self._offset = 0
        self._cpu0 = 0.0
        self._io0: int | None = 0
        self.nginx_port = 0

    def _config(self, port: int) -> str:
        d = self._dir
        assert d is not None
        temps = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        temp = "\n".join(f"  {name}_temp_path {d / name};" for name in temps)
        user = "user root root;" if os.geteuid() == 0 else ""
        return f"""
{user}
daemon off;
worker_processes 1;
pid {d / 'nginx.pid'};
error_log {d / 'error.log'} warn;
events {{ worker_connections 4096; }}
http {{
  log_format iobench escape=json '{{"method":"$request_method","uri":"$uri","status":$status,'
      '"body":$body_bytes_sent,"connection":$connection,"range":"$http_range"}}';
  access_log {d / 'access.log'} iobench;
{temp}
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush off;
  tcp_nodelay on;
  keepalive_timeout 300s;
  keepalive_requests 1000000;
  max_ranges 100000;
  server_tokens off;
  server {{
    listen {HOST}:{port} backlog=1024;
    root {self.root};
    disable_symlinks on;
    location / {{ autoindex off; }}
  }}
}}
"""

    @property
    def url(self) -> str:
        port = self._proxy.port if self._proxy else self.nginx_port
        return f"http://{HOST}:{port}"

    def url_for(self, path: str | Path) -> str:
        return _url_for(self.url, self.root, path)

    def start(self) -> NginxServer:
        # marked as ours, so that stop() may delete it through scratch.remove_tree
        self._dir = create_marked_dir(Path(tempfile.gettempdir()) / f"iobench-nginx-{uuid.uuid4().hex[:12]}")
        for attempt in range(5):
            self.nginx_port = _free_port()
            (self._dir / "nginx.conf").write_text(self._config(self.nginx_port))
            self._proc = subprocess.Popen(
                [self.executable, "-p", str(self._dir), "-c", str(self._dir / "nginx.conf"),
                 "-e", str(self._dir / "error.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                _wait_for_port(self.nginx_port, self._proc)
                break
            except RuntimeError:
                log = self._dir / "error.log"
                err = log.read_text(errors="replace") if log.exists() else ""
                self._kill()
                if "Address already in use" not in err or attempt == 4:
                    self.stop()
                    raise RuntimeError(f"nginx failed to start: {err.strip()[-500:]}") from None
        if self.latency_ms or self.bandwidth:
            self._proxy = DelayProxy((HOST, self.nginx_port), latency_ms=self.latency_ms, bandwidth=self.bandwidth)
        return self

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc is not None and self._proc.stderr:
            self._proc.stderr.close()
        self._proc = None

    def stop(self) -> None:
        """Stop the proxy and nginx and remove the config directory; safe to call twice."""
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None
        self._kill()
        if self._dir is not None:
            remove_tree(self._dir, self._dir)
            self._dir = None

    def __enter__(self) -> NginxServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _log_lines(self) -> list[dict]:
        if self._dir is None:
            return []
        log = self._dir / "access.log"
        # nginx logs a request just after sending it: wait until the log stops growing
        size, deadline = -1, time.monotonic() + 1.0
        while time.monotonic() < deadline:
            new = log.stat().st_size if log.exists() else 0
            if new == size:
                break
            size = new
            time.sleep(0.02)
        if size <= self._offset:
            return []
        with open(log, "rb") as f:
            f.seek(self._offset)
            data = f.read(size - self._offset)
        return [json.loads(line) for line in data.decode().splitlines() if line.strip()]

    def counters(self) -> ServerCounters:
        tally = _Tally()
        connections: set[int] = set()
        for e in self._log_lines():
            uri, method, status = e["uri"], e["method"], int(e["status"])
            connections.add(int(e["connection"]))
            body = int(e["body"])
            if method == "HEAD" or status >= 300:
                tally.request(uri, method, status, 0, body, 0)
                continue
            target = confine(self.root, uri)
            size = target.stat().st_size if target is not None and target.is_file() else 0
            ranges = parse_range_header(e["range"] or None, size) if status == 206 else None
            if ranges:
                tally.request(uri, method, status, len(ranges), body, sum(b - a for a, b in ranges))
            else:
                tally.request(uri, method, status, 1, body, body)
        for _ in connections:
            tally.connection()
        cpu, io = self._usage()
        io_delta = io - self._io0 if io is not None and self._io0 is not None else None
        return replace(tally.snapshot(), cpu_s=cpu - self._cpu0, io_read_bytes=io_delta, max_in_flight=None)

    def _usage(self) -> tuple[float, int | None]:
        """CPU seconds and disk reads of nginx (master and workers); the proxy's threads are not included."""
        pids = _process_tree(self._proc.pid) if self._proc is not None else []
        cpu, io = 0.0, 0
        for pid in pids:
            with contextlib.suppress(OSError):
                cpu += _proc_cpu_s(pid)
            got = _proc_read_bytes(pid)
            io = None if got is None or io is None else io + got
        return cpu, io

    def reset(self) -> None:
        if self._dir is not None:
            self._log_lines()
            log = self._dir / "access.log"
            self._offset = log.stat().st_size if log.exists() else 0
            self._cpu0, self._io0 = self._usage()


class HTTPServerLike(Protocol):
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
    (bytes/s) caps all responses together (see the module docstring).
    """
    if kind == "builtin":
        return ServerProcess(root, latency_ms=latency_ms, bandwidth=bandwidth)
    if kind == "nginx":
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


__all__ = [
    "MULTIPART_BOUNDARY", "SERVER_KINDS", "BandwidthPacer", "DelayProxy", "NginxServer", "PathCounters",
    "RangeHTTPServer", "ServerCounters", "ServerProcess", "ServerUnavailable", "confine", "http_request_length",
    "nginx_missing_reason", "nginx_path", "parse_range_header",
    "port_is_open", "serve",
]
