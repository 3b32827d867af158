"""Nothing outlives a run: a real ``iobench run`` through the command line, stopped mid-case by kill -9, Ctrl-C
or SIGTERM, leaves no process (worker, reader, nginx, link proxy), no listening socket and nothing in $TMPDIR;
Ctrl-C and SIGTERM also remove the run's scratch and keep the finished cases."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from benchmarks_lib.servers.nginx import nginx_path

pytestmark = pytest.mark.skipif(nginx_path() is None, reason="nginx is not installed (apt-get install nginx-light)")

# one Zarr client over nginx behind an emulated link (so that a link proxy runs too), a tiny store, one read
TINY_NGINX = ['readers=["zarr"]', 'zarr_clients=["zarr-fsspec"]', 'locations=["http"]', 'servers=["nginx"]',
              'zarr_layouts=["sharded"]', "zarr_cache=[false]", "zarr_concurrency=[2]",
              'zarr_dims="z:8:4:8,y:32:16:32,x:32:16:32"', 'zarr_cutout="4,12,12"', "zarr_cutouts=2", "iterations=1"]
#: a link this slow keeps the read going (each request waits a round trip) while the test stops the run
SLOW_LINK_MS = 5000


@pytest.fixture
def base():
    """A working directory that ``nobody`` can enter (pytest's own is root's alone), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="iobench-lifetime-", dir="/tmp"))
    path.chmod(0o755)
    (path / "tmp").mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path)


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time, state) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[19]), fields[0]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _is_nginx(pid: int) -> bool:
    return Path(_cmdline(pid).split(" ")[0]).name.rstrip(":") == "nginx"  # "nginx: master process" too


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _descendants(root: int) -> dict[int, int]:
    """pid -> start time of every live descendant of ``root``."""
    parents = {pid: st[0] for pid in _pids() if (st := _stat(pid)) and st[2] != "Z"}
    found, todo = {}, [root]
    while todo:
        parent = todo.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found and (st := _stat(pid)):
                found[pid] = st[1]
                todo.append(pid)
    return found


def _alive(pid: int, started: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] == started and st[2] != "Z"


def _listening_ports(pids) -> set[int]:
    """The TCP ports these processes listen on (their socket inodes in /proc/net/tcp*, state LISTEN)."""
    inodes = set()
    for pid in pids:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        inodes.update(link[8:-1] for link in links if link.startswith("socket:["))
    return {port for port, inode in _listeners() if inode in inodes}


def _listeners() -> list[tuple[int, str]]:
    """(port, socket inode) of every listening TCP socket on this machine."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                out.append((int(fields[1].rsplit(":", 1)[1], 16), fields[9]))
    return out


def _uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[2])  # effective
    raise AssertionError(f"no Uid line for {pid}")


def _start_run(base: Path, latency_ms: float) -> subprocess.Popen:
    """``iobench run cache`` (the tiny nginx case) in ``base`` with a private $TMPDIR, Ctrl-C reaching it as in a
    terminal (SIGINT at its default, whatever this test runner set)."""
    params = [arg for p in [*TINY_NGINX, f"latencies_ms=[{latency_ms}]"] for arg in ("--param", p)]
    env = {**os.environ, "TMPDIR": str(base / "tmp"), "IOBENCH_YES": "1"}
    env.pop("IOBENCH_SCRATCH", None)
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks_lib", "run", "cache", *params, "--results-dir", str(base / "results"),
         "--scratch-dir", str(base / "scratch"), "--run-id", "life"],
        cwd=base, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_mid_case(run: subprocess.Popen, base: Path, timeout_s: float = 180) -> dict[int, int]:
    """Once nginx serves the case's input, the link proxy in front of it listens and the reader reads through
    them (a read's process, forked from the reader's server: ``measure.fresh.Forks``): the run's processes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and run.poll() is None:
        tree = _descendants(run.pid)
        nginx = [p for p in tree if _is_nginx(p)]
        proxy = [p for p in tree if "link:run_proxy" in _cmdline(p)]
        servers = {p for p in tree if "--serve" in _cmdline(p)}
        reader = [p for p in servers if (st := _stat(p)) and st[0] in servers]
        if nginx and proxy and reader and _listening_ports(nginx) and _listening_ports(proxy):
            return tree
        time.sleep(0.05)
    err = run.communicate(timeout=60)[1] if run.poll() is not None else ""
    raise AssertionError(f"nginx never served the case (exit {run.returncode}): {err[-2000:]}")


def _assert_nothing_left(tree: dict[int, int], ports: set[int], base: Path) -> None:
    """No process of the run, none that names its directories, and none of its listening ports (a few
    seconds allowed for the kernel to deliver the death signals)."""
    deadline = time.monotonic() + 15
    while True:
        alive = [p for p, started in tree.items() if _alive(p, started)]
        named = [p for p in _pids() if str(base) in _cmdline(p) and (st := _stat(p)) and st[2] != "Z"]
        listening = ports & {port for port, _ in _listeners()}
        if not (alive or named or listening) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not alive, [_cmdline(p) for p in alive]
    assert not named, [_cmdline(p) for p in named]
    assert not listening, listening


def _kill_left(run: subprocess.Popen, tree: dict[int, int]) -> None:
    """Whatever a failed test leaves: the runner's group and its descendants (ours, by pid and start time)."""
    if run.poll() is None:
        os.killpg(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)
    for pid, started in tree.items():
        if _alive(pid, started):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig,status", [(signal.SIGKILL, -signal.SIGKILL), (signal.SIGINT, 130),
                                        (signal.SIGTERM, 143)])
def test_a_run_stopped_mid_case_leaves_no_process_port_or_temporary_file(base, sig, status):
    run, tree = _start_run(base, SLOW_LINK_MS), {}
    try:
        tree = _wait_mid_case(run, base)
        ports = _listening_ports(tree)
        nginx = [p for p in tree if _is_nginx(p)]
        assert len(nginx) == 1  # one process: no worker of a master left behind when nginx is killed
        if os.geteuid() == 0:
            assert _uid(nginx[0]) != 0  # nginx dropped root: nobody can read the inputs here
        os.kill(run.pid, sig)
        _, err = run.communicate(timeout=120)
        assert run.returncode == status, err[-2000:]
        _assert_nothing_left(tree, ports, base)
        assert not list((base / "tmp").iterdir())
        if sig != signal.SIGKILL:  # a clean exit: the scratch is gone, the ceiling's record kept
            assert not list((base / "scratch").iterdir())
            assert len(err.strip().splitlines()[-1:]) == 1 and "finished cases are kept" in err
            records = list((base / "results").glob("*/life/records/*.parquet"))
            assert [p.stem for p in records if p.stem.startswith("ceiling")]
    finally:
        _kill_left(run, tree)


def test_a_finished_run_leaves_no_process_or_temporary_file(base):
    run = _start_run(base, 5)
    try:
        _, err = run.communicate(timeout=300)
    finally:
        _kill_left(run, {})
    assert run.returncode == 0, err[-2000:]
    assert not list((base / "tmp").iterdir())
    assert not list((base / "scratch").iterdir())
    assert not [p for p in _pids() if str(base) in _cmdline(p) and (st := _stat(p)) and st[2] != "Z"]


@pytest.mark.parametrize("when", ["starting", "measuring"])
@pytest.mark.parametrize("sig,status,words", [(signal.SIGINT, 130, "interrupted"),
                                              (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_a_run_on_a_local_dask_cluster_stopped_is_one_line_and_leaves_nothing(base, when, sig, status, words):
    """Ctrl-C or SIGTERM of ``run --cluster local:2``, while the cluster starts (its workers still starting: it failed
    its own close, and Dask's exit hook printed that traceback and a failed removal of its files) or while cases
    run on it: the one line of the command, its exit status, no Dask process, port or scratch left."""
    pytest.importorskip("distributed")
    env = {**os.environ, "TMPDIR": str(base / "tmp"), "IOBENCH_YES": "1"}
    env.pop("IOBENCH_SCRATCH", None)
    run = subprocess.Popen(
        [sys.executable, "-m", "benchmarks_lib", "run", "writers", "-d", "t:16,y:256,x:256", "--iterations", "3",
         "--test", "write", "--cluster", "local:2", "--results-dir", str(base / "results"), "--scratch-dir",
         str(base / "scratch"), "--run-id", "dask"],
        cwd=base, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    tree: dict[int, int] = {}
    try:
        shown = []
        for line in run.stderr:  # "[0/N]" is said before the cluster starts, "[1/N]" once a case has finished
            shown.append(line)
            if line.startswith("[0/" if when == "starting" else "[1/"):
                break
        tree = _descendants(run.pid)
        ports = _listening_ports(tree)
        os.kill(run.pid, sig)
        err = "".join(shown) + run.communicate(timeout=120)[1]
        if run.returncode == 0:  # it finished before the signal: nothing to check
            pytest.skip("the run finished before the signal")
        assert run.returncode == status, err[-3000:]
        assert "Traceback" not in err and "ERROR" not in err, err[-3000:]
        assert err.strip().splitlines()[-1] == f"iobench run: {words}; finished cases are kept (re-run with the same " \
                                                "--run-id to resume)", err[-3000:]
        _assert_nothing_left(tree, ports, base)
        assert not list((base / "scratch").iterdir())
        assert not [p for p in _pids() if str(base / "tmp") in _environ(p)]  # a worker started after the look
    finally:
        _kill_left(run, tree)


def _environ(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    except OSError:
        return ""
