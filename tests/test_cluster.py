"""Cases as Dask tasks on a real LocalCluster: records in the one run directory, tagged with their worker's host
and the worker count; a worker killed mid-case becomes that case's error row and the sweep goes on."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from benchmarks_lib.cli import main
from benchmarks_lib.cluster import WORKER_SCRATCH, parse_cluster
from benchmarks_lib.runner import run_suite
from benchmarks_lib.specs import SpecError

pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

TINY = {"tests": ["write"], "dims": "t:2,y:32:16,x:48", "multipliers": [1, 2], "iterations": 2, "warmups": 0}


@pytest.mark.parametrize("bad", ["", "locale", "local:0", "local:x", "http://h:8786", "tcp://host", 3, None, ["local"]])
def test_a_bad_cluster_is_refused_before_anything_is_created(bad, workdir, capsys):
    with pytest.raises(SpecError, match="cluster"):
        parse_cluster(bad)
    if isinstance(bad, str):
        assert main(["run", "ceiling", "--cluster", bad, "--results-dir", "results"]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
        assert not (workdir / "results").exists() and not (workdir / "scratch").exists()


def test_cases_run_as_dask_tasks_and_a_lost_worker_is_an_error_row(workdir, plugin_env, monkeypatch):
    monkeypatch.setenv("IOBENCH_PLUGINS", "slow=crashing_adapter:SlowAdapter")
    killed: list[int] = []

    def kill_the_slow_case_worker() -> None:
        """SIGKILL the Dask worker process whose case is the slow backend, while it measures."""
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            for proc in psutil.process_iter(["cmdline"]):
                cmd = proc.info["cmdline"] or []
                if "benchmarks_lib.worker:main" in cmd:
                    try:
                        job = json.loads(Path(cmd[-1]).read_text())
                    except (OSError, ValueError):
                        continue
                    if json.loads(job["case"])["backend"] == "slow":
                        time.sleep(0.3)  # mid-case
                        parent = proc.parent()
                        os.kill(parent.pid, signal.SIGKILL)
                        killed.append(parent.pid)
                        return
            time.sleep(0.05)

    watcher = threading.Thread(target=kill_the_slow_case_worker, daemon=True)
    watcher.start()
    params = {**TINY, "multipliers": [1, 2, 3, 4, 5, 6], "backends": ["raw", "slow", "zarr-python"]}
    result = run_suite("writers", params, profile="quick", results_dir=workdir / "results", run_id="dask",
                       progress=None, cluster="local:2")
    watcher.join(5)
    assert killed, "the slow case was never seen running"
    df = result.df
    lost = df[df["backend"] == "slow"]
    assert len(lost) == 1 and lost["status"].iloc[0] == "error" and "Dask worker lost" in lost["reason"].iloc[0]
    for backend in ("raw", "zarr-python"):
        ok = df[(df["backend"] == backend) & (df["operation"] == "total")]
        assert len(ok) == 12 and (ok["status"] == "ok").all() and ok["verified"].all()
        assert set(ok["worker_host"]) == {socket.gethostname()} and set(ok["cluster_workers"]) == {2}
    assert sorted(p.stem for p in (result.run_dir / "records").glob("*.parquet")) == sorted(result.meta["cases"])
    scratch = workdir / "scratch"
    assert not [p for p in scratch.iterdir() if WORKER_SCRATCH in p.name]  # the killed worker's scratch removed
