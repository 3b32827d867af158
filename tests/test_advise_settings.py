"""``iobench advise``'s threads and codec: the fewest threads within 5% of the fastest, from a small real
threads run of the same writer, dtype and operation (never more than --threads; none for another fsync policy),
and the codec's ratio with the compression chapter's pick, from a small real compression run of the same data."""

from __future__ import annotations

import re

import pytest

from benchmarks_lib.cli.main import main
from benchmarks_lib.run.runner import run_suite

DIMS = "z:32:16,y:64:32,x:64:32"
WRITERS = ["tensorstore", "zarr-python"]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> str:
    """One results directory: a writers run (full reads, durable writes), a threads run (1 and 2 threads, n=5) and
    a compression run (two codecs), all of em_like uint8 at small sizes."""
    base = tmp_path_factory.mktemp("advise-settings")
    common = {"results_dir": base / "results", "scratch_dir": base / "scratch", "ceiling": False, "progress": None}
    run_suite("writers", {"backends": WRITERS, "tests": ["read", "write"], "dataset": "em_like", "read_dims": DIMS,
                          "dims": DIMS, "multipliers": [1], "fsync": True, "cutout": 8, "cutout_positions": 1,
                          "iterations": 3, "warmups": 0}, run_id="w", **common)
    run_suite("threads", {"backends": WRITERS, "threads": [1, 2], "dataset": "em_like", "dims": DIMS,
                          "iterations": 5, "warmups": 0}, run_id="th", **common)
    run_suite("compression", {"mesh_backends": [], "array_backends": WRITERS, "datasets": ["em_like"], "dims": DIMS,
                              "codecs": ["blosc-lz4:5:shuffle", "zstd:3"], "iterations": 2,
                              "warmups": 0}, run_id="co", **common)
    return str(base / "results")


def _advise(results: str, capsys, *extra: str) -> str:
    assert main(["advise", "--shape", "32,64,64", "--dtype", "uint8", "--results-dir", results, *extra]) == 0
    return capsys.readouterr().out


def test_threads_are_the_fewest_not_separable_from_the_best(results, capsys):
    out = _advise(results, capsys, "--access", "full-read")
    writer = re.search(r": writer (\S+),", out).group(1)
    threads = re.search(r", threads: (\d+)", out)
    assert threads and threads.group(1) in ("1", "2"), out
    assert re.search(rf"^Threads: {threads.group(1)}, (the fewest threads within 5% of the fastest \(\d threads, "
                     r"[^)]*\)|the fastest so far; open after \d+ rounds[^;]*); measured at 1, 2$", out, re.M), out
    assert re.search(rf"^  run th on machine \S+ \(\d+ cores\): {writer} read of em_like uint8, 32x64x64 "
                     r"\(blosc-zstd:3:shuffle\), set by ", out, re.M), out
    assert "  1 thread: " in out and "  2 threads: " in out and "(n=5, 94% interval)" in out
    # never more than the threads available
    out = _advise(results, capsys, "--access", "full-read", "--threads", "1")
    assert ", threads: 1" in out and "Threads: 1, the only thread count measured up to --threads 1" in out
    assert "  2 threads: " not in out


def test_no_threads_run_of_the_same_kind_says_what_it_said(results, capsys):
    # the threads run writes without fsync: a durable write is another workload
    out = _advise(results, capsys, "--access", "write")
    assert "Evidence: run w " in out and "threads: the library's default (not varied by the writers suite)" in out
    assert "Threads:" not in out


def test_the_codec_line_gives_its_ratio_and_the_chapters_pick(results, capsys):
    out = _advise(results, capsys, "--access", "full-read")
    line = next(x for x in out.splitlines() if x.startswith("Codec: "))
    assert re.match(r"Codec: blosc-lz4:5:shuffle stores em_like uint8 at ratio \d+\.\d\d \(\S+, compression run "
                    r"co\); the best ratio there among the settings writing no more than 2x slower than the fastest: "
                    r"\S+ (zstd:3|blosc-lz4:5:shuffle), ratio \d+\.\d\d at \S+ MB/s written", line), line
