"""The builtin server: :class:`RangeHTTPServer` (a ``ThreadingHTTPServer`` with range answers,
counters, the emulated link and a 1024-deep listen backlog, as uproot's multithreaded source opens
a connection per request) and :class:`ServerProcess`, the same server in its own Python process
(what :func:`~benchmarks_lib.servers.serve` returns), so that its CPU time is its own: the counters
carry ``cpu_s`` (server CPU since the last ``reset()``) and ``io_read_bytes`` (its disk reads, the
proof that a remote read was cold).

Its request handler answers single and multi-range GETs (``Range: bytes=a-b,c-d,...`` as ROOT's TWebFile
sends them) and HEAD with HTTP/1.1 keep-alive, TCP_NODELAY (else Nagle + delayed ACK add ~40 ms per request)
and a numeric multipart boundary (:data:`.ranges.MULTIPART_BOUNDARY`: TWebFile lower-cases header lines before
matching it). Paths outside the root answer 403.

``python -m benchmarks_lib.servers.builtin CONFIG`` is that process: it serves and answers
``counters``/``reset``/``stop`` lines on stdin.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks_lib.measure import fresh
from benchmarks_lib.servers.counters import ServerCounters, _proc_read_bytes, _Tally
from benchmarks_lib.servers.link import _PACE_CHUNK, BandwidthPacer
from benchmarks_lib.servers.loopback import HOST
from benchmarks_lib.servers.ranges import MULTIPART_BOUNDARY, ServedRoot, confine, parse_range_header

_CHUNK = 1 << 20


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


class RangeHTTPServer(ServedRoot, ThreadingHTTPServer):
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
        self._serve_root(root, latency_ms, bandwidth)
        self.latency_s = self.latency_ms / 1000.0
        self.pacer = BandwidthPacer(bandwidth) if bandwidth else None
        self.tally = _Tally()
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__((HOST, port), _RangeRequestHandler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def counters(self) -> ServerCounters:
        return self.tally.snapshot()

    def reset(self) -> None:
        self.tally.reset()

    def charge_round_trip(self) -> None:
        """One emulated round trip (the link model of :mod:`benchmarks_lib.servers.link`)."""
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


class ServerProcess(ServedRoot):
    """The builtin server (:class:`RangeHTTPServer`) in its own Python process.

    Same interface as :class:`RangeHTTPServer`; its CPU never mixes with the client's or the
    runner's, and :meth:`counters` reports it (``cpu_s``, ``io_read_bytes`` since ``reset()``).
    """

    kind = "builtin"

    def __init__(self, root: str | Path, *, latency_ms: float = 0.0, bandwidth: float | None = None) -> None:
        self._serve_root(root, latency_ms, bandwidth)
        self.port = 0
        self._proc: subprocess.Popen | None = None
        self._stderr: Any = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> ServerProcess:
        config = json.dumps({"root": str(self.root), "latency_ms": self.latency_ms, "bandwidth": self.bandwidth})
        # stderr to a file, not a pipe: nobody drains it while serving, and a full pipe would block the server
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 (lives as long as the process)
        self._proc = fresh.start("benchmarks_lib.servers.builtin:_serve_child", config, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1)
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

