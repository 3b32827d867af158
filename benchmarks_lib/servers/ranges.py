"""HTTP byte ranges as the builtin server answers them: ``Range`` parsing, multipart/byteranges
answers, confinement of URL paths to the server root, and the request handler itself.

The handler answers single and multi-range GETs (``Range: bytes=a-b,c-d,...`` as ROOT's TWebFile
sends them) and HEAD with HTTP/1.1 keep-alive, TCP_NODELAY (else Nagle + delayed ACK add ~40 ms
per request) and a numeric multipart boundary (TWebFile lower-cases header lines before matching
it). Paths outside the root (``..`` segments, symlinks resolving outside it) answer 403.
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING

from . import HOST, _spec_error
from .link import _PACE_CHUNK, _check_link

if TYPE_CHECKING:
    from .builtin import RangeHTTPServer

#: numeric on purpose: TWebFile lower-cases response header lines, so "Boundary" would never match
MULTIPART_BOUNDARY = "9183720465117"
_CHUNK = 1 << 20


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



def confine(root: Path, url_path: str) -> Path | None:
    """The file a URL path names under ``root``, or None when it would leave the root."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(url_path).path)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." or "\x00" in p for p in parts):
        return None
    target = root.joinpath(*parts).resolve()
    return target if target == root or target.is_relative_to(root) else None



class ServedRoot:
    """What every server shares: the directory it serves, the emulated link, its URLs on 127.0.0.1."""

    root: Path
    port: int

    def _serve_root(self, root: str | Path, latency_ms: float, bandwidth: float | None) -> None:
        _check_link(latency_ms, bandwidth)
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise _spec_error(f"server root {str(root)!r} is not a directory")
        self.latency_ms = float(latency_ms)
        self.bandwidth = bandwidth

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url_for(self, path: str | Path) -> str:
        """The URL of a file given relative to the root (or as an absolute path inside it)."""
        p = Path(path)
        if p.is_absolute():
            resolved = p.resolve()
            if not resolved.is_relative_to(self.root):
                raise _spec_error(f"{str(path)!r} is outside the server root {str(self.root)!r}")
            p = resolved.relative_to(self.root)
        return f"{self.url}/{urllib.parse.quote(p.as_posix())}"


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

