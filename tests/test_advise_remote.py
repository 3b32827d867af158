"""``iobench advise`` for remote reads over a link of a given latency: answered from a real s3 run through versitygw
(skipped where versitygw is absent) and from a cache run written with the records writer, at that latency only (the
"not covered" line names the latencies measured), bad values refused in one line (exit 2), and ``--measure`` on a
tiny file through the s3 suite."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks_lib.advise.evidence import parse_workload
from benchmarks_lib.cli.main import main
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame, write_atomic_parquet, write_json_atomic
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.servers.versitygw import versitygw_missing_reason
from benchmarks_lib.suites.s3 import SUITE as S3

needs_versitygw = pytest.mark.skipif(versitygw_missing_reason() is not None, reason=str(versitygw_missing_reason()))
DIMS = "z:128:32:64,y:512:128:256,x:512:128:256"


def _cache_rows(client: str, layout: str, cache: bool, latency: float, workload: str, times: list[float]) -> list:
    whole = workload == "whole"
    return [{"schema_version": SCHEMA_VERSION, "run_id": "cache-tiny", "machine": "vm", "suite": "cache",
             "backend": client, "client": client, "reader": "zarr", "status": "ok", "verified": True, "iteration": i,
             "operation": f"zarr_read_{workload}", "workload": workload, "dataset": "microscopy", "dtype": "uint16",
             "codec": "zstd:0", "elapsed_s": t, "nbytes": 67108864 if whole else 28311552, "location": "http",
             "latency_ms": latency, "bandwidth_bytes_s": 50e6, "server": "builtin", "client_cache": cache,
             "concurrency": 8.0, "layout": layout, "zarr_dims": DIMS, "cutout": "whole" if whole else "48x192x192",
             "cutouts": 8.0, "server_requests": 9.0 if layout == "sharded" else 65.0, "server_bytes": 34e6}
            for i, t in enumerate(times)]


@pytest.fixture(scope="module")
def cache_run(tmp_path_factory) -> str:
    """A cache run's Zarr reads, written as the suite writes them (records writer, run.json): n=8 per point (each
    iteration a round: the rule's first look), the sharded store read with tensorstore's cache clearly fastest at
    10 ms; measured at 0 and 10 ms only."""
    results = tmp_path_factory.mktemp("advise-remote") / "results"
    fast = [0.50, 0.51, 0.52, 0.50, 0.51, 0.53, 0.52, 0.50]
    slow = [0.90, 0.92, 0.91, 0.93, 0.90, 0.94, 0.91, 0.92]
    rows = []
    for latency in (0.0, 10.0):
        for workload in ("whole", "cutouts"):
            rows += _cache_rows("tensorstore", "sharded", True, latency, workload, fast)
            rows += _cache_rows("tensorstore", "unsharded", True, latency, workload, slow)
            rows += _cache_rows("zarr-fsspec", "sharded", False, latency, workload, [t * 1.5 for t in slow])
    run_dir = results / "vm" / "cache-tiny"
    (run_dir / "records").mkdir(parents=True)
    write_atomic_parquet(to_frame(rows), run_dir / "records" / "case.parquet")
    write_json_atomic({"suite": "cache", "profile": "standard", "params": {}, "run_id": "cache-tiny",
                       "environment": {"machine": "vm", "cpu_model": "Test CPU", "cpu_count": 2}}, run_dir / "run.json")
    return str(results)


def test_remote_full_reads_at_the_latency_asked(cache_run, capsys):
    argv = ["advise", "--shape", "128,512,512", "--dtype", "uint16", "--results-dir", cache_run]
    assert main([*argv, "--access", "remote-read:10ms"]) == 0
    out = capsys.readouterr().out
    assert "Workload: 128x512x512 uint16, remote full reads over a 10 ms link" in out
    assert ("Recommendation: library tensorstore, codec zstd:0, chunks 32x128x128, shards 64x256x256, over HTTP, "
            "client cache on, 8 requests at once, threads: the library's default (not varied by the cache "
            "suite)") in out
    assert "fastest, by more than 5%: " in out and "(3 candidates) (decided at round 8)" in out
    assert "Evidence: run cache-tiny on machine vm" in out and "rows: zarr read whole, " in out
    assert "link: 10 ms per round trip (emulated), 50 MB/s, server builtin" in out
    assert "GB/s (remote full read) (n=8)" in out and "runner-up: tensorstore | zstd:0 | chunks 32x128x128 | " \
        "shards none" in out and "], separated" in out
    assert "(the same library, codec and chunks, unsharded)" in out and "requests per read: 9 vs 65" in out
    # remote cutouts: the time per cutout (8 cutouts per read), the cutout named in the rows line
    assert main([*argv, "--access", "remote-cutout:48,192,192@10"]) == 0
    out = capsys.readouterr().out
    assert "remote cutouts of 48x192x192 over a 10 ms link" in out and "cutouts of 48x192x192" in out
    assert "recommended: tensorstore | zstd:0 | chunks 32x128x128 | shards 64x256x256 | over HTTP, client cache " \
        "on, 8 requests at once: " in out and "ms per cutout (n=8)" in out


def test_another_latency_is_not_covered_and_the_measured_ones_are_named(cache_run, capsys):
    argv = ["advise", "--shape", "128,512,512", "--dtype", "uint16", "--results-dir", cache_run]
    assert main([*argv, "--access", "remote-read:20ms"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("Not covered: none of the 1 s3 or cache run read") and "over a 20 ms link" in out[0]
    assert "  nearest measured: remote full reads of uint16 over a 10 ms link, dataset microscopy" in out[1]
    assert out[1].endswith("it differs in: a 10 ms link, not 20 ms")
    assert out[2] == "  measured latencies: 0 ms, 10 ms (run cache-tiny) (no interpolation between them)"
    assert main([*argv, "--access", "remote-cutout:64,64,64@10ms"]) == 0  # a cutout it never measured
    out = capsys.readouterr().out
    assert out.startswith("Not covered: ") and "at no latency" in out and "iobench run cache" in out
    assert "it differs in: cutouts of 48x192x192, not 64x64x64" in out
    assert main(["advise", "--shape", "8,8", "--dtype", "uint8", "--access", "remote-read:10",
                 "--results-dir", cache_run]) == 0  # another dtype
    out = capsys.readouterr().out
    assert "at no latency" in out and "it differs in: dtype uint16, not uint8" in out


@pytest.mark.parametrize("access, says", [
    ("remote-read:abc", "--access 'remote-read:abc' latency 'abc' is not a number of ms; allowed 0..10000 ms"),
    ("remote-read:-5ms", "latency -5 is out of range; allowed 0..10000 ms"),
    ("remote-read:99999", "latency 99999 is out of range; allowed 0..10000 ms"),
    ("remote-read", "gives no link latency; e.g. remote-read:10ms"),
    ("remote-cutout:8,8,8", "gives no link latency; e.g. remote-cutout:48,192,192@10ms"),
    ("remote-cutout:@5", "gives no cutout shape"),
    ("remote-cutout:8,8@5", "has 2 sizes"),
    ("remote-write:5", "is unknown; allowed: cutout:Z,Y,X, full-read, write, append, remote-read:MS"),
])
def test_bad_remote_values_are_one_line_and_exit_2(cache_run, capsys, access, says):
    assert main(["advise", "--shape", "16,16,16", "--dtype", "uint16", "--access", access,
                 "--results-dir", cache_run]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_measure_refuses_what_it_cannot_measure_in_one_line(tmp_path, capsys, monkeypatch):
    data = tmp_path / "cube.npy"
    np.save(data, np.zeros((16, 16, 16), "uint16"))
    argv = ["advise", "--like", str(data), "--measure", "--results-dir", str(tmp_path / "results")]
    assert main([*argv, "--access", "remote-cutout:8,8,8@5ms"]) == 2
    err = capsys.readouterr().err
    assert "cannot measure remote cutouts on your file" in err and err.count("\n") == 1
    # no versitygw anywhere it is looked for: said in one line, nothing measured
    monkeypatch.delenv("IOBENCH_VERSITYGW", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert main([*argv, "--access", "remote-read:5ms"]) == 2
    err = capsys.readouterr().err
    assert "--measure remote-read reads through an S3 server on this machine" in err and "versitygw" in err
    assert err.count("\n") == 1 and not (tmp_path / "results").exists()


def test_the_workload_keeps_its_latency():
    w = parse_workload(None, "64,64,64", "uint16", "remote-cutout:16,16,16@2.5ms")
    assert (w.access, w.cutout, w.latency_ms, w.remote) == ("remote-cutout", (16, 16, 16), 2.5, True)
    assert parse_workload(None, "64,64", "uint8", "remote-read:0").latency_ms == 0


@pytest.fixture(scope="module")
def s3_run(tmp_path_factory) -> str:
    """A small real s3 run: two writers through versitygw, at 0 ms and behind a 5 ms link, n=2."""
    base = tmp_path_factory.mktemp("advise-s3")
    run_suite("s3", {**S3.smoke, "backends": ["tensorstore", "zarr-python"], "latencies_ms": [0, 5],
                     "iterations": 2}, profile="quick", results_dir=base / "results", run_id="s3-tiny",
              scratch_dir=base / "scratch", progress=None)
    return str(base / "results")


@needs_versitygw
def test_remote_reads_from_a_real_s3_run(s3_run, capsys):
    argv = ["advise", "--shape", "8,64,64", "--dtype", "uint8", "--results-dir", s3_run]
    assert main([*argv, "--access", "remote-read:5ms"]) == 0
    out = capsys.readouterr().out
    assert "Evidence: run s3-tiny" in out and "rows: read, " in out and "over S3" in out
    assert "link: 5 ms per round trip (emulated), bandwidth not limited, server versitygw v" in out
    # the rule's words: two rounds (or iterations, each standing for a round) are below its first look, round 8
    assert "(n=2, 50% interval)" in out and "Best median (no winner claimed): library " in out
    assert re.search(r"open after 2 rounds: .+ \(no interval yet\) than .+; next look at round 8", out)
    assert "no interval yet (n=2)" in out
    assert "S3 requests at once" in out  # the client's concurrency, from the rows
    assert main([*argv, "--access", "remote-read:10ms"]) == 0
    assert "measured latencies: 0 ms, 5 ms (run s3-tiny)" in capsys.readouterr().out


@needs_versitygw
def test_measure_reads_your_file_through_versitygw_behind_the_link(tmp_path, capsys):
    data = tmp_path / "cube.npy"
    np.save(data, (np.random.default_rng(0).integers(0, 4, (16, 32, 32)) * 40).astype("uint16"))
    assert main(["advise", "--like", str(data), "--access", "remote-read:5ms", "--measure", "--budget", "90s",
                 "--results-dir", str(tmp_path / "results"), "--scratch-dir", str(tmp_path / "scratch"),
                 "--run-id", "advise-s3"]) == 0
    out = capsys.readouterr().out
    assert "plan: about" in out and "Evidence: run advise-s3" in out and "(your data)" in out
    assert "link: 5 ms per round trip" in out and "over S3" in out
    assert list(Path(tmp_path / "results").glob("*/advise-s3/run.json"))
