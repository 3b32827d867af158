"""What the servers count: requests, ranges and bytes per server and per path, and the CPU time and
disk reads of the server process(es) from /proc."""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks_lib.measure.iocounters import read_io_counters


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

