"""Cases as Dask tasks on a real LocalCluster: records in the one run directory, tagged with their worker's host
and the worker count; a worker killed mid-case becomes that case's error row and the sweep goes on. An address
where no Dask scheduler answers is refused in one line, within seconds, before anything is created."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from benchmarks_lib.base.dask_scheduler import parse_cluster, start_local_cluster
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.cli.main import main
from benchmarks_lib.run.cluster import WORKER_SCRATCH
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.servers import free_port

pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

TINY = {"tests": ["write"], "dims": "t:2,y:32:16,x:48", "multipliers": [1, 2], "iterations": 2, "warmups": 0}


@pytest.mark.parametrize("bad", ["", "locale", "local:0", "local:x", "http://h:8786", "tcp://host", "tcp://h:99999",
                                 "tcp://h:0", 3, None, ["local"]])
def test_a_bad_cluster_is_refused_before_anything_is_created(bad, workdir, capsys):
    with pytest.raises(SpecError, match="cluster"):
        parse_cluster(bad)
    if isinstance(bad, str):
        assert main(["run", "ceiling", "--cluster", bad, "--results-dir", "results"]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
        assert not (workdir / "results").exists() and not (workdir / "scratch").exists()


@pytest.fixture
def http_port():
    """A plain HTTP server on 127.0.0.1 (in a thread): something that answers, but not a Dask scheduler."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _run_cli(*args: str) -> subprocess.CompletedProcess:
    """The real command line in a fresh process; the time limit guards against a hang (it measures nothing)."""
    return subprocess.run([sys.executable, "-m", "benchmarks_lib", *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("via", ["--cluster", "parallel's cluster parameter"])
@pytest.mark.parametrize("target,says", [("http", "answered but is not a Dask scheduler"),
                                         ("closed", "nothing listens at"), ("99999", "allowed 1-65535")])
def test_an_address_without_a_dask_scheduler_is_refused_in_one_line_before_anything_is_created(
        workdir, http_port, via, target, says):
    port = {"http": http_port, "closed": free_port(), "99999": 99999}[target]
    address = f"tcp://127.0.0.1:{port}"
    args = (["ceiling", "--cluster", address] if via == "--cluster" else
            ["parallel", "--param", f"cluster={address}"])
    done = _run_cli("run", *args, "--results-dir", "results")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and address in lines[0], lines
    if target == "http":
        assert "HTTP" in lines[0]
    assert not (workdir / "results").exists() and not (workdir / "scratch").exists()


def test_a_scheduler_without_workers_is_refused_before_anything_is_created(workdir, capsys):
    with start_local_cluster(0, workdir / "dask") as cluster:
        assert main(["run", "ceiling", "--cluster", cluster.scheduler_address, "--results-dir", "results"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "has no workers" in lines[0]
    assert not (workdir / "results").exists() and not (workdir / "scratch").exists()


def test_cases_run_as_dask_tasks_and_a_lost_worker_is_an_error_row(workdir, plugin_env, monkeypatch):
    private_tmp = workdir / "tmp"  # the cluster's and the workers' files go in the run's scratch, not here
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    killed: list[int] = []

    def kill_the_slow_case_worker() -> None:
        """SIGKILL the Dask worker process whose case is the slow backend, while it measures."""
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            for proc in psutil.process_iter(["cmdline"]):
                cmd = proc.info["cmdline"] or []
                if "benchmarks_lib.run.worker:main" in cmd:
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
    assert not list(private_tmp.iterdir())



ABANDON = """
import json, multiprocessing, os, shutil, sys, threading, time
from pathlib import Path
from distributed import Client
from benchmarks_lib.base.dask_scheduler import abandon_local_clusters, start_local_cluster
if __name__ == "__main__":
    directory = Path(sys.argv[1])
    cluster = start_local_cluster(2, directory)
    client = Client(cluster)
    cluster.loop.add_callback(time.sleep, 6)  # the cluster's event loop busy past its close's 5 s, as under load
    abandon_local_clusters()
    shutil.rmtree(directory)  # as the run removes its scratch
    time.sleep(2)
    print(json.dumps({"client": client.status, "threads": [t.name for t in threading.enumerate() if t.is_alive()],
                      "children": [child.pid for child in multiprocessing.active_children()],
                      "made_again": directory.exists()}), flush=True)
    os._exit(0)  # as a stopped run ends: its workers' queues never released
"""


def test_an_abandoned_local_cluster_leaves_nothing_running_and_nothing_said(workdir):
    """What a stopped run does with its cluster (Ctrl-C, SIGTERM), here one whose close times out (its event loop
    busy, as on a loaded machine): its event loop and the threads that start its workers are stopped (a nanny
    would start its worker again, which makes its folder after the run removed its scratch and speaks after the
    run's one line), no worker process is left, and multiprocessing's resource tracker removes the semaphores of the
    workers' queues without a word."""
    script = workdir / "abandon.py"
    script.write_text(ABANDON)
    done = subprocess.run([sys.executable, str(script), str(workdir / "dask")], capture_output=True, text=True,
                          timeout=300, cwd=workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    left = json.loads(done.stdout)
    assert not [name for name in left["threads"] if name.startswith("AsyncProcess ") or name == "IO loop"], left
    assert not left["children"] and not left["made_again"], left
    assert left["client"] == "closed", left  # its __del__ at exit would wait 60 s on the stopped loop, and say so
    assert done.stderr == "", done.stderr[-3000:]
