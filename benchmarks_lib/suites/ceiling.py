"""The machine's own ceilings, measured in the same run as the backends.

Single stream (one file, one ``write``/``readinto`` at a time: queue depth 1): raw sequential
write of the same number of bytes into a file that does not exist yet (the last one is removed
off the clock): ``write_nofsync`` ends at close, ``write_fsync`` ends with the suites' own fsync
policy, one ``syncfs`` of the store (``measure.sync_store``), so that a backend's write with fsync
is divided by a ceiling that paid the same flush. Then a cold sequential read of that file
(``cold`` only when the eviction and the read's disk bytes prove it, else ``cold_unverified``),
a warm read, and memcpy bandwidth.

Parallel (``*_parallel``): the same total bytes in as many streams as usable cores, one file and one
thread each (queue depth 1 per stream), released together: ``write_nofsync_parallel``,
``write_fsync_parallel`` (one ``syncfs`` after the last stream closed) and ``read_cold_parallel``. A
library with several threads or processes can pass the single-stream ceiling, not this one. Every
row says ``streams`` and ``queue_depth`` (per stream). An optional cross-check runs ``fio`` on the
same size, with one job and with ``numjobs`` = the same streams.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks_lib.base.availability import find_program, not_installed
from benchmarks_lib.base.environment import usable_cores
from benchmarks_lib.base.scratch import create_marked_dir, remove_tree
from benchmarks_lib.base.specs import parse_size
from benchmarks_lib.measure import cold_read_state, disk_usage, evict_page_cache, measure, sync_store
from benchmarks_lib.records.durability import durability_columns
from benchmarks_lib.suites import Case, CaseContext, Suite
from benchmarks_lib.suites.kit.common import remove_output

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


def run_streams(jobs: list[Callable[[], int]]) -> Callable[[], int]:
    """One thread per job, started now and held at a barrier; returns the part to time: release them all at
    once, wait for the last, the sum of what they returned (the first error, if any, raised)."""
    barrier = threading.Barrier(len(jobs) + 1)
    results = [0] * len(jobs)
    errors: list[BaseException] = []

    def body(i: int, job: Callable[[], int]) -> None:
        try:
            barrier.wait()
            results[i] = job()
        except BaseException as exc:  # raised again in the timing thread
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i, job), daemon=True) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()

    def release_and_join() -> int:
        barrier.wait()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return sum(results)

    return release_and_join


def stream_sizes(nbytes: int, streams: int) -> list[int]:
    """``nbytes`` split over ``streams`` (the total exact; no stream empty when there are enough bytes)."""
    streams = max(1, min(streams, nbytes))
    return [nbytes // streams + (1 if i < nbytes % streams else 0) for i in range(streams)]


def parallel_write(paths: list[Path], sizes: list[int], buf: np.ndarray, *, fsync: bool) -> Callable[[], int]:
    """The timed part of a parallel raw write: every stream writes its own new file; with ``fsync``, one
    syncfs of the store after the last one closed (the single-stream write's flush)."""
    streams = run_streams([lambda p=p, n=n: raw_write(p, n, buf, fsync=False) or n
                           for p, n in zip(paths, sizes, strict=True)])

    def write_all() -> int:
        total = streams()
        if fsync:
            sync_store(paths[0])
        return total

    return write_all


def parallel_read(paths: list[Path]) -> Callable[[], int]:
    """The timed part of a parallel raw read: every stream reads its own file; the bytes read."""
    return run_streams([lambda p=p: raw_read(p) for p in paths])


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


#: what each ceiling operation is, where a table shows it
SINGLE_STREAM = "single stream, queue depth 1"


def describe_ceiling(operation: str, streams: int | None = None) -> str:
    """What a ceiling operation measured: ``single stream, queue depth 1``, ``4 parallel streams (one file each,
    queue depth 1 each)``, ``memcpy, one thread``."""
    if operation == "memcpy":
        return "memory copy, one thread"
    if operation.endswith(PARALLEL_SUFFIX):
        try:  # a count from a record: any value, shown only when it is a whole positive number
            count = f"{int(streams)} " if float(streams) == int(streams) > 0 else ""  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            count = ""
        return f"{count}parallel streams (one file each, queue depth 1 each)"
    return SINGLE_STREAM


PARALLEL_SUFFIX = "_parallel"


def run_ceiling(case: Case, ctx: CaseContext) -> list[dict]:
    nbytes = int(case.params["nbytes"])
    path = ctx.scratch / "ceiling.bin"
    sizes = stream_sizes(nbytes, usable_cores())
    parallel_dir = ctx.scratch / "ceiling-parallel"
    parallel_dir.mkdir(exist_ok=True)
    paths = [parallel_dir / f"stream-{k}.bin" for k in range(len(sizes))]
    rows: list[dict] = []

    def record(op: str, i: int, m, streams: int = 1, **extra) -> None:
        if i >= ctx.warmups:
            rows.append(
                {
                    "operation": op,
                    "iteration": i - ctx.warmups,
                    "status": "ok",
                    "nbytes": nbytes,
                    "dataset": "random",
                    "codec": "none",
                    "streams": streams,
                    "queue_depth": 1,
                    **m.as_row(),
                    **extra,
                }
            )

    def write(fsync: bool):
        remove_output(path)  # off the clock: every timed write creates its file
        return measure(lambda: raw_write(path, nbytes, buf, fsync=fsync))

    def write_parallel(fsync: bool):
        for p in paths:
            remove_output(p)
        return measure(parallel_write(paths, sizes, buf, fsync=fsync))

    def rows_of_parallel(i: int) -> None:
        """The parallel ceiling of iteration ``i``: writes without and with the flush, then the cold read."""
        record("write_nofsync_parallel", i, write_parallel(fsync=False), len(paths), **no_sync)
        record("write_fsync_parallel", i, write_parallel(fsync=True), len(paths), **with_sync)
        on_disk = disk_usage(parallel_dir).allocated_bytes
        report = evict_page_cache(paths)
        cold = measure(parallel_read(paths))
        io_read = cold.io.read_bytes if cold.io is not None else None
        record("read_cold_parallel", i, cold, len(paths), cache_state=cold_read_state(report, io_read, on_disk),
               **report.as_row(), verified=cold.value == nbytes)
        for p in paths:
            remove_output(p)

    buf = write_buffer(nbytes)
    buffers = memcpy_buffers(nbytes)  # once: touching 2 x 256 MiB anew each iteration cost about 0.1 s a time
    no_sync, with_sync = durability_columns(False, False), durability_columns(True, False)
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
        record("memcpy", i, measure(lambda b=buffers: memcpy(nbytes, *b)))
        remove_output(path)  # off the clock: one copy of the bytes on disk at a time
        rows_of_parallel(i)
    remove_output(parallel_dir)
    return rows


def build_ceiling_cases(params: dict, profile: str) -> list[Case]:
    return [Case("ceiling", "ceiling", {"nbytes": parse_size(params.get("nbytes", "256MiB"))})]


SUITE = Suite(
    name="ceiling",
    title="Machine ceiling",
    measures="raw sequential write/read and memcpy",
    build_cases=build_ceiling_cases,
    run_case=run_ceiling,
    profiles={"quick": {"nbytes": "64MiB"}, "standard": {"nbytes": "1GiB"}, "seed": {"nbytes": "4GiB"}},
    scratch_bytes=lambda cases: max(c.params["nbytes"] for c in cases),
    time_budget_s={"quick": 15},  # single-stream and parallel ceilings
    case_keys=("dataset", "codec", "nbytes", "fsync_included", "streams"),
)


def ceiling_case(nbytes: int) -> Case:
    """The ceiling case a run of any suite measures first, sized like that run's data."""
    return Case("ceiling", "ceiling", {"nbytes": int(nbytes)})


def run_fio(directory: Path, nbytes: int, repeats: int = 3, streams: int | None = None) -> dict[str, float]:
    """fio's sequential write (fsync at end) and cold read of ``nbytes``, in GB/s (median of repeats): one job
    (``write_fsync``, ``read_cold``: the single-stream ceiling's twins) and ``streams`` jobs (default: the usable
    cores), each on its own file of ``nbytes / streams`` (``write_fsync_parallel``, ``read_cold_parallel``: the
    parallel ceiling's twins; left out with one stream).

    fio works in a marked scratch directory it creates under ``directory`` (removed after), so
    its file is deleted only by ``remove_output``. Needs the ``fio`` binary (Debian package
    ``fio``); raises FileNotFoundError otherwise.
    """
    exe = find_program("fio")
    if exe is None:
        raise FileNotFoundError(not_installed("fio", "apt-get install fio"))
    streams = usable_cores() if streams is None else streams
    work = create_marked_dir(Path(directory) / f"fio-{os.getpid()}")
    try:
        out = _run_fio_in(exe, work, nbytes, repeats, jobs=1)
        per_job = nbytes // streams // 4096 * 4096
        if streams > 1 and per_job >= 4096:
            parallel = _run_fio_in(exe, work, per_job, repeats, jobs=streams)
            out |= {f"{op}{PARALLEL_SUFFIX}": value for op, value in parallel.items()}
        return out
    finally:
        remove_tree(work, work)


#: fio's block: 8 MiB, or the whole size (in 4 KiB pages) when that is smaller (fio refuses a block above the size)
FIO_BLOCK = 8 << 20


def fio_block(nbytes: int) -> int:
    """fio's block for a job of ``nbytes``: ``FIO_BLOCK``, or the size in whole 4 KiB pages when smaller."""
    return min(FIO_BLOCK, max(4096, nbytes // 4096 * 4096))


class FioError(RuntimeError):
    """fio itself failed; the message is its first line of complaint."""


def _run_fio_in(exe: str, work: Path, nbytes: int, repeats: int, jobs: int = 1) -> dict[str, float]:
    """``jobs`` fio jobs of ``nbytes`` each, one file each (psync: queue depth 1 per job, as our streams), all
    started together; GB/s = all jobs' bytes over the slowest job's runtime (its final fsync included)."""
    block = fio_block(nbytes)
    name = "seq" if jobs == 1 else "par"
    common = [
        f"--name={name}",
        f"--directory={work}",
        f"--size={nbytes}",
        f"--bs={block}",
        "--ioengine=psync",
        "--iodepth=1",
        f"--numjobs={jobs}",
        "--output-format=json",
    ]
    files = [work / f"{name}.{j}.0" for j in range(jobs)]  # fio's own name for job j's file
    # like our raw write: a new file each time, blocks allocated while writing (no fallocate)
    write = ["--rw=write", "--end_fsync=1", "--fallocate=none"]
    out = {}
    for op, extra in (("write_fsync", write), ("read_cold", ["--rw=read", "--invalidate=1"])):
        rates = []
        for _ in range(repeats):
            if op == "write_fsync":
                for f in files:
                    remove_output(f)
            result = subprocess.run([exe, *common, *extra], capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                why = next((line.strip() for line in (result.stderr + result.stdout).splitlines() if line.strip()),
                           f"exit {result.returncode}")
                raise FioError(f"fio failed ({op}, {jobs} job(s) of {nbytes} bytes, block {block}): {why}")
            done = json.loads(result.stdout)["jobs"]
            side = "write" if op == "write_fsync" else "read"
            # job_runtime (ms) includes the final fsync; the write runtime does not
            slowest = max(job["job_runtime"] for job in done) / 1000
            rates.append(sum(job[side]["io_bytes"] for job in done) / slowest / 1e9)
            evict_page_cache(files)
        out[op] = statistics.median(rates)
    return out
