"""A StatsD listener on 127.0.0.1: the request and byte counters an S3 server of ours pushes (versitygw's
``--metrics-statsd-servers``), summed per metric and per S3 action in the process that owns the server.

StatsD is UDP, one ``name,tag=value,...:count|c`` line per counter update (InfluxDB-style tags), several lines a
datagram. The listener is a daemon thread reading a socket bound to a port of 127.0.0.1 chosen by the kernel (no
other host can reach it); its receive buffer is enlarged so that a burst is not dropped while the thread waits for
the GIL. UDP has no connection, so any local process could send to that port: only datagrams sent from a socket of
the server's own process (``sender_pid``; its UDP sockets looked up in ``/proc``) are counted, the others are
counted as ``refused`` and dropped. A line that does not parse is counted (``malformed``), never raised: what a
server sends is data. A caller that needs every update sent before a request of its own waits for that request's
counter (:meth:`StatsdListener.wait_for`): the server queues its updates in order, so once the marker's arrives, so
have all before it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

from benchmarks_lib.servers.loopback import HOST

#: bytes of socket receive buffer asked for (the kernel may cap it at net.core.rmem_max)
RECEIVE_BUFFER = 4 << 20
#: longest line kept (a counter update is ~150 bytes)
MAX_LINE = 1024


def parse_line(line: str) -> tuple[str, dict[str, str], int] | None:
    """``versitygw.bytes_written,action=PutObject,status=200:1000|c`` -> (``bytes_written``, its tags, 1000), or
    None for anything that is not a counter update."""
    if len(line) > MAX_LINE:
        return None
    head, sep, tail = line.rpartition(":")
    value, _, kind = tail.partition("|")
    if not sep or kind.split("|")[0] != "c":
        return None
    name, *pairs = head.split(",")
    tags = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
    try:
        count = int(value)
    except ValueError:
        return None
    return name.rpartition(".")[2], tags, count


def udp_port_owner(port: int, pid: int) -> bool:
    """True when process ``pid`` holds the UDP socket bound to local ``port`` (its socket inodes against the UDP
    tables in ``/proc``, IPv4 and IPv6; False where unreadable)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):  # closed meanwhile
                inodes.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        lines = [line for table in ("udp", "udp6") for line in Path(f"/proc/{pid}/net/{table}").read_text()
                 .splitlines()[1:]]
    except OSError:
        return False
    suffix = f":{port:04X}"
    return any(fields[1].endswith(suffix) and f"socket:[{fields[9]}]" in inodes
               for fields in (line.split() for line in lines) if len(fields) > 9)


class StatsdListener:
    """Counter updates summed by (metric, tag ``key``'s value) since start; a context manager.

    ``address`` is what the server is told to send to (``127.0.0.1:PORT``); set ``sender_pid`` to the server's
    process id once it is started (nothing is counted before)."""

    def __init__(self, key: str = "action") -> None:
        self._key = key
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with contextlib.suppress(OSError):
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        self._sock.bind((HOST, 0))
        self.sender_pid: int | None = None
        self._senders: dict[tuple[str, int], bool] = {}
        self._totals: dict[tuple[str, str], int] = {}
        self.malformed = self.refused = 0
        self._closing = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._receive, name="statsd-listener", daemon=True)

    @property
    def address(self) -> str:
        return f"{HOST}:{self._sock.getsockname()[1]}"

    def __enter__(self) -> StatsdListener:
        self._thread.start()
        return self

    def _from_server(self, sender: tuple[str, int]) -> bool:
        if sender not in self._senders:
            if self.sender_pid is None:
                return False
            self._senders[sender] = sender[0] == HOST and udp_port_owner(sender[1], self.sender_pid)
        return self._senders[sender]

    def _receive(self) -> None:
        while not self._closing:
            try:
                data, sender = self._sock.recvfrom(65536)
            except OSError:  # closed
                return
            if self._closing or not sender:  # woken by __exit__
                return
            if not self._from_server(sender):
                self.refused += 1
                continue
            updates = [parse_line(line) for line in data.decode("utf-8", "replace").splitlines() if line]
            with self._changed:
                for update in updates:
                    if update is None:
                        self.malformed += 1
                        continue
                    name, tags, count = update
                    key = (name, tags.get(self._key, ""))
                    self._totals[key] = self._totals.get(key, 0) + count
                self._changed.notify_all()

    def totals(self) -> dict[tuple[str, str], int]:
        """(metric, tag value) -> the sum of its updates so far."""
        with self._changed:
            return dict(self._totals)

    def wait_for(self, metric: str, value: str, at_least: int, timeout_s: float) -> bool:
        """Wait until the sum of ``metric`` for tag value ``value`` reaches ``at_least`` (True), or ``timeout_s``
        passes (False)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self._totals.get((metric, value), 0) < at_least:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def __exit__(self, *exc: object) -> None:
        self._closing = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the thread's recvfrom
        self._thread.join(timeout=5)
        self._sock.close()


__all__ = ["StatsdListener", "parse_line", "udp_port_owner"]
