"""The machine's own ceiling, measured in the same run as the backends.

Raw sequential write of the same number of bytes into a file that does not exist yet (the
last one is removed off the clock): ``write_nofsync`` ends at close, ``write_fsync`` ends
with the suites' own fsync policy, one ``syncfs`` of the store (``measure.sync_store``), so
that a backend's write with fsync is divided by a ceiling that paid the same flush. Then
a cold sequential read of that file (``cold`` only when the eviction and the read's disk
bytes prove it, else ``cold_unverified``), a warm read, and memcpy bandwidth. Every
throughput in the book is also shown as a fraction of these. An optional cross-check runs
``fio`` on the same file size.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path

import numpy as np

from .availability import find_program, not_installed
from .measure import SYNC_METHOD, cold_read_state, disk_usage, evict_page_cache, measure, sync_store
from .scratch import create_marked_dir, remove_tree
from .specs import parse_size
from .suites import Case, CaseContext, Suite
from .suites.common import remove_output

BLOCK = 8 * 2**20


def write_buffer(nbytes: int) -> np.ndarray:
    """The block the raw write repeats (made before the clock starts)."""
    return np.frombuffer(np.random.default_rng(0).bytes(min(nbytes, BLOCK)), dtype=np.uint8)


def raw_write(path: Path, nbytes: int, buf: np.ndarray, *, fsync: bool) -> None:
    """Write ``nbytes`` (``buf`` repeated) to a new file; with ``fsync``, one syncfs after the close."""
    left = nbytes
    with open(path, "xb", buffering=0) as f:  # "x": a timed write never starts on an old file
        while left > 0:
            n = min(left, buf.size)
            f.write(buf[:n].data)
            left -= n
    if fsync:
        sync_store(path)


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

    def write(fsync: bool):
        remove_output(path)  # off the clock: every timed write creates its file
        return measure(lambda: raw_write(path, nbytes, buf, fsync=fsync))

    buf = write_buffer(nbytes)
    no_sync = {"fsync_included": False, "writer_fsyncs": False, "sync_method": "none"}
    with_sync = {"fsync_included": True, "writer_fsyncs": False, "sync_method": SYNC_METHOD}
    for i in range(ctx.warmups + ctx.iterations):
        record("write_nofsync", i, write(fsync=False), **no_sync)
        record("write_fsync", i, write(fsync=True), **with_sync)
        on_disk = disk_usage(path).allocated_bytes
        report = evict_page_cache(path)
        cold = measure(lambda: raw_read(path))
        io_read = cold.io.read_bytes if cold.io is not None else None
        record("read_cold", i, cold, cache_state=cold_read_state(report, io_read, on_disk), **report.as_row(),
               verified=cold.value == nbytes)
        warm = measure(lambda: raw_read(path))
        record("read_warm", i, warm, cache_state="warm", verified=warm.value == nbytes)
        buffers = memcpy_buffers(nbytes)
        record("memcpy", i, measure(lambda b=buffers: memcpy(nbytes, *b)))
        del buffers
    remove_output(path)
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
    time_budget_s={"quick": 10},
    case_keys=("dataset", "codec", "nbytes", "fsync_included"),
)


def ceiling_case(nbytes: int) -> Case:
    """The ceiling case a run of any suite measures first, sized like that run's data."""
    return Case("ceiling", "ceiling", {"nbytes": int(nbytes)})


def run_fio(directory: Path, nbytes: int, repeats: int = 3) -> dict[str, float]:
    """fio's sequential write (fsync at end) and cold read of ``nbytes``, in GB/s (median of repeats).

    fio works in a marked scratch directory it creates under ``directory`` (removed after), so
    its file is deleted only by ``remove_output``. Needs the ``fio`` binary (Debian package
    ``fio``); raises FileNotFoundError otherwise.
    """
    exe = find_program("fio")
    if exe is None:
        raise FileNotFoundError(not_installed("fio", "apt-get install fio"))
    work = create_marked_dir(Path(directory) / f"fio-{os.getpid()}")
    try:
        return _run_fio_in(exe, work, nbytes, repeats)
    finally:
        remove_tree(work, work)


#: fio's block: 8 MiB, or the whole size (in 4 KiB pages) when that is smaller (fio refuses a block above the size)
FIO_BLOCK = 8 << 20


class FioError(RuntimeError):
    """fio itself failed; the message is its first line of complaint."""


def _run_fio_in(exe: str, work: Path, nbytes: int, repeats: int) -> dict[str, float]:
    block = min(FIO_BLOCK, max(4096, nbytes // 4096 * 4096))
    common = [
        "--name=seq",
        f"--directory={work}",
        f"--size={nbytes}",
        f"--bs={block}",
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
                remove_output(work / "fio.bin")
            result = subprocess.run([exe, *common, *extra], capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                why = next((line.strip() for line in (result.stderr + result.stdout).splitlines() if line.strip()),
                           f"exit {result.returncode}")
                raise FioError(f"fio failed ({op}, {nbytes} bytes, block {block}): {why}")
            job = json.loads(result.stdout)["jobs"][0]
            if op == "write_fsync":  # job_runtime (ms) includes the final fsync; the write runtime does not
                rates.append(job["write"]["io_bytes"] / (job["job_runtime"] / 1000) / 1e9)
            else:
                rates.append(job["read"]["bw_bytes"] / 1e9)
            evict_page_cache(work / "fio.bin")
        out[op] = statistics.median(rates)
    return out
