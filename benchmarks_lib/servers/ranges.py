"""HTTP byte ranges as every server answers them: ``Range`` parsing, the multipart boundary, confinement of
URL paths to the server root (``..`` segments, symlinks resolving outside it: refused), and what every server
shares (:class:`ServedRoot`). The builtin server's request handler (:mod:`.builtin`) answers with these.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from benchmarks_lib.servers.link import _check_link
from benchmarks_lib.servers.loopback import HOST, spec_error

#: numeric on purpose: TWebFile lower-cases response header lines, so "Boundary" would never match
MULTIPART_BOUNDARY = "9183720465117"


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
            raise spec_error(f"server root {str(root)!r} is not a directory")
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
                raise spec_error(f"{str(path)!r} is outside the server root {str(self.root)!r}")
            p = resolved.relative_to(self.root)
        return f"{self.url}/{urllib.parse.quote(p.as_posix())}"
