"""``iobench advise`` says when the recommended writer's version on this machine is separably slower than another
version the run measured (the Upgrades chapter's rule), and says nothing where it is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks_lib.adapters import backend_status
from benchmarks_lib.cli.main import main
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame, write_atomic_parquet, write_json_atomic

WORKLOAD = ["--shape", "256,256,256", "--dtype", "uint16", "--access", "cutout:32,32,32"]


def write_versions_run(results: Path, run_id: str, times: dict[str, float], rounds: int = 12) -> Path:
    """A writers run of zarr-python's unaligned cutouts at each version in ``times`` (its median time), measured in
    the same rounds, each round a little slower or faster for every version alike."""
    rows = []
    for version, median in times.items():
        for r in range(rounds):
            drift = 1 + 0.2 * ((r * 7) % 5 - 2) / 2
            rows.append({"schema_version": SCHEMA_VERSION, "run_id": run_id, "machine": "vm", "suite": "writers",
                         "test": "read", "operation": "read_region_cold", "backend": "zarr-python",
                         "backend_version": version, "zarr_format": 2, "codec": "lz4", "status": "ok",
                         "verified": True, "iteration": r, "round": r, "dataset": "labels", "dtype": "uint16",
                         "shape": [256, 256, 256], "chunks": [64, 64, 64], "cutout": 32.0, "cutout_kind": "unaligned",
                         "nbytes": 32 ** 3 * 2, "elapsed_s": median * drift * (1 + 0.01 * (r % 3))})
    run_dir = results / "vm" / run_id
    (run_dir / "records").mkdir(parents=True)
    write_atomic_parquet(to_frame(rows), run_dir / "records" / "case.parquet")
    write_json_atomic({"suite": "writers", "profile": "quick", "params": {}, "run_id": run_id,
                       "environment": {"machine": "vm", "cpu_model": "Test CPU", "cpu_count": 2}},
                      run_dir / "run.json")
    return run_dir


def _installed() -> str:
    version = backend_status("zarr-python").version
    if version is None:
        pytest.skip("zarr-python is not installed here")
    return version


def _advise(capsys, results: Path) -> list[str]:
    assert main(["advise", *WORKLOAD, "--results-dir", str(results)]) == 0
    return capsys.readouterr().out.strip().splitlines()


def test_the_installed_version_separably_slower_is_said(tmp_path: Path, capsys):
    here = _installed()
    write_versions_run(tmp_path / "results", "versions", {"0.0.1": 0.010, here: 0.018})  # here is the newest
    lines = _advise(capsys, tmp_path / "results")
    (line,) = [line for line in lines if line.startswith("Version:")]
    assert f"Version: zarr-python {here} (installed here) is 1.8" in line
    assert "x slower than 0.0.1 for cold cutouts of 64 KiB (unaligned) [" in line and "in run versions" in line
    assert "(Zarr v2 format on both)" in line


def test_an_installed_version_older_than_a_faster_newest_is_said(tmp_path: Path, capsys):
    here = _installed()
    write_versions_run(tmp_path / "results", "versions", {here: 0.018, "999.0": 0.010})
    (line,) = [line for line in _advise(capsys, tmp_path / "results") if line.startswith("Version:")]
    assert f"zarr-python {here} (installed here)" in line and "slower than 999.0" in line


def test_nothing_is_said_where_the_installed_version_is_not_slower_or_not_measured(tmp_path: Path, capsys):
    here = _installed()
    write_versions_run(tmp_path / "results", "faster", {"0.0.1": 0.018, here: 0.010})
    assert not [line for line in _advise(capsys, tmp_path / "results") if line.startswith("Version:")]
    write_versions_run(tmp_path / "other", "unmeasured", {"0.0.1": 0.010, "0.0.2": 0.018})
    assert not [line for line in _advise(capsys, tmp_path / "other") if line.startswith("Version:")]
