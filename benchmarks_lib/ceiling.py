"""The machine's own ceiling, measured in the same run as the contenders.

Raw sequential write of the same number of bytes (plain buffered file I/O, with and without
fsync), a cold sequential read of that file (page cache evicted and verified), a warm read,
and memcpy bandwidth. Every throughput in the book is also shown as a fraction of these.
An optional cross-check runs ``fio`` on the same file size.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from pathlib import Path

import numpy as np

from .measure import evict_page_cache, measure
from .specs import parse_size
from .suites import Case, CaseContext, Suite

BLOCK = 8 * 2**20
CEILING_OPERATIONS = ("write_nofsync", "write_fsync", "read_cold", "read_warm", "memcpy")


def write_buffer(nbytes: int) -> np.ndarray:
    """The block the raw write repeats (made before the clock starts)."""
    return np.frombuffer(np.random.default_rng(0).bytes(min(nbytes, BLOCK)), dtype=np.uint8)


def raw_write(path: Path, nbytes: int, buf: np.ndarray, *, fsync: bool) -> None:
    left = nbytes
    with open(path, "wb", buffering=0) as f:
        while left > 0:
            n = min(left, buf.size)
            f.write(buf[:n].data)
            left -= n
        if fsync:
            os.fsync(f.fileno())


def raw_read(path: Path) -> int:
    buf = bytearray(BLOCK)
    total = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            total += n
    return total


def memcpy_buffers(nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Source and destination (touched, so page faults stay outside the timed copy)."""
    size = min(nbytes, 256 * 2**20)
    return np.ones(size, dtype=np.uint8), np.ones(size, dtype=np.uint8)


def memcpy(nbytes: int, src: np.ndarray, dst: np.ndarray) -> None:
    size = src.size
    left = nbytes
    while left > 0:
        n = min(left, size)
        np.copyto(dst[:n], src[:n])
        left -= n


def run_ceiling(case: Case, ctx: CaseContext) -> list[dict]:
    nbytes = int(case.params["nbytes"])
    path = ctx.scratch / "ceiling.bin"
    rows: list[dict] = []

    def record(op: str, i: int, m, **extra) -> None:
        if i >= ctx.warmups:
            rows.append(
                {
                    "operation": op,
                    "iteration": i - ctx.warmups,
                    "status": "ok",
                    "nbytes": nbytes,
                    "dataset": "random",
                    "codec": "none",
                    **m.as_row(),
                    **extra,
                }
            )

    buf = write_buffer(nbytes)
    for i in range(ctx.warmups + ctx.iterations):
        path.unlink(missing_ok=True)  # a new file each time, like a writer's new store
        record("write_nofsync", i, measure(lambda: raw_write(path, nbytes, buf, fsync=False)), fsync_included=False)
        path.unlink(missing_ok=True)
        record("write_fsync", i, measure(lambda: raw_write(path, nbytes, buf, fsync=True)), fsync_included=True)
        report = evict_page_cache(path)
        record("read_cold", i, measure(lambda: raw_read(path)), cache_state="cold", verified=report.verified)
        record("read_warm", i, measure(lambda: raw_read(path)), cache_state="warm")
        buffers = memcpy_buffers(nbytes)
        record("memcpy", i, measure(lambda b=buffers: memcpy(nbytes, *b)))
        del buffers
    return rows


def build_ceiling_cases(params: dict, profile: str) -> list[Case]:
    return [Case("ceiling", "ceiling", {"nbytes": parse_size(params.get("nbytes", "256MiB"))})]


SUITE = Suite(
    name="ceiling",
    title="Machine ceiling: raw sequential write/read and memcpy",
    build_cases=build_ceiling_cases,
    run_case=run_ceiling,
    profiles={"quick": {"nbytes": "64MiB"}, "standard": {"nbytes": "1GiB"}, "seed": {"nbytes": "4GiB"}},
    scratch_bytes=lambda cases: max(c.params["nbytes"] for c in cases),
)


def ceiling_case(nbytes: int) -> Case:
    """The ceiling case a run of any suite measures first, sized like that run's data."""
    return Case("ceiling", "ceiling", {"nbytes": int(nbytes)})


def run_fio(directory: Path, nbytes: int, repeats: int = 3) -> dict[str, float]:
    """fio's sequential write (fsync at end) and cold read of ``nbytes``, in GB/s (median of repeats).

    Needs the ``fio`` binary (Debian package ``fio``); raises FileNotFoundError otherwise.
    """
    exe = shutil.which("fio")
    if exe is None:
        raise FileNotFoundError("fio is not installed (apt-get install fio)")
    common = [
        "--name=seq",
        f"--directory={directory}",
        f"--size={nbytes}",
        "--bs=8M",
        "--ioengine=psync",
        "--numjobs=1",
        "--output-format=json",
        "--filename=fio.bin",
    ]
    # like our raw write: a new file each time, blocks allocated while writing (no fallocate)
    write = ["--rw=write", "--end_fsync=1", "--fallocate=none"]
    out = {}
    for op, extra in (("write_fsync", write), ("read_cold", ["--rw=read", "--invalidate=1"])):
        rates = []
        for _ in range(repeats):
            if op == "write_fsync":
                (directory / "fio.bin").unlink(missing_ok=True)
            result = subprocess.run([exe, *common, *extra], capture_output=True, text=True, check=True, timeout=600)
            job = json.loads(result.stdout)["jobs"][0]
            if op == "write_fsync":  # job_runtime (ms) includes the final fsync; the write runtime does not
                rates.append(job["write"]["io_bytes"] / (job["job_runtime"] / 1000) / 1e9)
            else:
                rates.append(job["read"]["bw_bytes"] / 1e9)
            evict_page_cache(directory / "fio.bin")
        out[op] = statistics.median(rates)
    (directory / "fio.bin").unlink(missing_ok=True)
    return out
