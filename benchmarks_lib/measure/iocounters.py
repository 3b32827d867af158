"""Per-process I/O counters from ``/proc/self/io`` (real disk bytes, not page-cache hits)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class IOCounters:
    read_bytes: int = 0
    write_bytes: int = 0
    syscr: int = 0
    syscw: int = 0

    def __sub__(self, other: IOCounters) -> IOCounters:
        return IOCounters(
            self.read_bytes - other.read_bytes,
            self.write_bytes - other.write_bytes,
            self.syscr - other.syscr,
            self.syscw - other.syscw,
        )


def read_io_counters(pid: int | str = "self") -> IOCounters | None:
    """The current counters of a process (this one by default), or None where unreadable."""
    try:
        fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines() if ": " in line)
    except OSError:
        return None
    return IOCounters(int(fields["read_bytes"]), int(fields["write_bytes"]), int(fields["syscr"]), int(fields["syscw"]))
