"""The bundled S3 server's faults, each through the command line (``iobench run s3``): its binary missing (or its
build failed), its port taken between the choice and the start, its data directory on a filesystem without user
extended attributes, and the server killed in the middle of a case."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks_lib.records.store import find_run, load_run
from benchmarks_lib.servers.versitygw import versitygw_missing_reason, versitygw_path

needs_versitygw = pytest.mark.skipif(versitygw_missing_reason() is not None, reason=str(versitygw_missing_reason()))
#: the s3 suite's smoke array with two shards (each client writes 3 objects)
DIMS = "z:16:4:8,y:64:32:64,x:64:32:64"


def run_s3(tmp_path: Path, run_id: str, *args: str, env: dict[str, str] | None = None,
           wait: bool = True, iterations: int = 1) -> subprocess.CompletedProcess | subprocess.Popen:
    """``iobench run s3`` on the small array in ``tmp_path`` (its own scratch and results), one round (or
    ``iterations``: an option is given once)."""
    cmd = [sys.executable, "-m", "benchmarks_lib", "run", "s3", "-d", DIMS, "--iterations", str(iterations),
           "--warmups", "0",
           "--run-id", run_id, "--results-dir", str(tmp_path / "results"), "--scratch-dir", str(tmp_path / "scratch"),
           *args]
    environ = {**os.environ, **(env or {})}
    if not wait:
        return subprocess.Popen(cmd, cwd=tmp_path, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    return subprocess.run(cmd, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=600)


def s3_rows(tmp_path: Path, run_id: str):
    df, _ = load_run(find_run(tmp_path / "results", run_id))
    return df[df["backend"] != "ceiling"], df[df["backend"] == "ceiling"]


def test_without_the_binary_the_s3_cases_skip_with_the_reason_and_the_rest_goes_on(tmp_path):
    """No versitygw anywhere it is looked for, and ``make versitygw`` left the log of a failed build: each S3 case
    is a skip row saying so in one line, the run (its ceiling) goes on and ends with status 0."""
    cache = tmp_path / "cache"
    (cache / "iobench-book" / "versitygw").mkdir(parents=True)
    (cache / "iobench-book" / "versitygw" / "build.log").write_text("go: no route to proxy.golang.org\n")
    env = {k: v for k, v in os.environ.items() if k != "IOBENCH_VERSITYGW"}
    env |= {"XDG_CACHE_HOME": str(cache), "PATH": str(tmp_path / "empty-bin")}
    proc = subprocess.run([sys.executable, "-m", "benchmarks_lib", "run", "s3", "-d", DIMS, "-b", "tensorstore",
                           "-b", "zarr-python", "--iterations", "1", "--warmups", "0", "--run-id", "none",
                           "--results-dir", str(tmp_path / "results"), "--scratch-dir", str(tmp_path / "scratch")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows, ceiling = s3_rows(tmp_path, "none")
    assert set(rows["backend"]) == {"tensorstore", "zarr-python"} and set(rows["status"]) == {"skip"}
    reason = rows["reason"].iloc[0]
    assert reason.startswith("versitygw (the S3 server; its last build failed, see ") and "\n" not in reason
    assert "make versitygw" in reason and (rows["s3_server"] == "versitygw (not installed)").all()
    assert (ceiling["status"] == "ok").all() and len(ceiling)


@needs_versitygw
def test_a_port_taken_before_the_server_binds_it_is_tried_again_on_another(tmp_path):
    """The port chosen for the server is taken before it binds it (here: its first start is handed a port this
    test holds): that start fails with "address already in use", the next start gets another port, and the case
    measures as usual."""
    import socket

    real, starts = versitygw_path(), tmp_path / "starts.txt"
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        wrapper = tmp_path / "versitygw"
        wrapper.write_text(
            f"#!{sys.executable}\n"
            "import os, sys\n"
            "args = sys.argv[1:]\n"
            "if '--port' in args:\n"
            f"    first = not os.path.exists({str(starts)!r})\n"
            f"    with open({str(starts)!r}, 'a') as f:\n"
            "        f.write(args[args.index('--port') + 1] + '\\n')\n"
            "    if first:\n"
            f"        args[args.index('--port') + 1] = '127.0.0.1:{held.getsockname()[1]}'\n"
            f"os.execv({real!r}, [{real!r}, *args])\n")
        wrapper.chmod(0o755)
        proc = run_s3(tmp_path, "port", "-b", "tensorstore", env={"IOBENCH_VERSITYGW": str(wrapper)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows, _ = s3_rows(tmp_path, "port")
    assert (rows["status"] == "ok").all() and rows["verified"].all(), rows[["status", "reason"]].to_string()
    assert len(starts.read_text().split()) == 2  # the start on the taken port, then one on a fresh port


@pytest.mark.skipif(shutil.which("unshare") is None or subprocess.run(
    ["unshare", "-rm", "true"], capture_output=True).returncode != 0,
    reason="needs unshare -rm (a user and mount namespace) to mount a ramfs")
@needs_versitygw
def test_on_a_filesystem_without_user_xattrs_the_metadata_goes_to_a_sidecar(tmp_path):
    """The scratch on a ramfs (no ``user.*`` extended attributes; mounted in a namespace of the test's own): the
    server keeps its metadata in a sidecar directory, every client writes, reads and verifies, and each row says
    so."""
    ram = tmp_path / "ram"
    ram.mkdir()
    cmd = [sys.executable, "-m", "benchmarks_lib", "run", "s3", "-d", DIMS, "-b", "tensorstore", "-b",
           "zarr-python", "--iterations", "1", "--warmups", "0", "--run-id", "ramfs",
           "--results-dir", str(tmp_path / "results"), "--scratch-dir", str(ram / "scratch")]
    script = f'mount -t ramfs iobench "{ram}" && exec "$@"'
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", *cmd], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows, _ = s3_rows(tmp_path, "ramfs")
    assert (rows["status"] == "ok").all() and rows["verified"].all(), rows[["status", "reason"]].to_string()
    assert rows["s3_server"].str.endswith("(posix, sidecar metadata)").all()
    assert set(rows["operation"]) == {"write", "read"}


def _servers_under(path: Path) -> dict[int, Path]:
    """The versitygw processes serving a directory under ``path``: pid -> its data directory (its last argument)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z" and Path(argv[0].decode(errors="replace")).name == "versitygw" and \
                    any(str(path) in a.decode(errors="replace") for a in argv):
                found[int(entry.name)] = Path(argv[-2].decode(errors="replace") if argv[-1] == b"" else argv[-1])
    return found


def _objects_in(data: Path) -> bool:
    """True once a client has written an object into the server's bucket directory."""
    return any(f.is_file() and not any(p.startswith(".") for p in f.relative_to(data).parts)
               for f in data.rglob("*")) if data.is_dir() else False


@needs_versitygw
def test_a_server_killed_mid_case_fails_that_case_with_the_reason_and_the_next_gets_a_fresh_one(tmp_path):
    """SIGKILL to the case's server once its client has written through it: that case ends at once
    with one line naming the server and the signal (its client would retry for minutes), nothing it started
    is left, and the next case starts a server of its own and measures."""
    proc = run_s3(tmp_path, "kill", "-b", "tensorstore", "-b", "zarr-python", wait=False, iterations=15)
    scratch = tmp_path / "scratch"
    try:
        deadline, victim = time.monotonic() + 120, None
        while victim is None and time.monotonic() < deadline and proc.poll() is None:
            for pid, data in _servers_under(scratch).items():
                if _objects_in(data):  # the case is under way: a client has written through the server
                    victim = pid
                    os.kill(victim, signal.SIGKILL)
                    break
            time.sleep(0.05)
        assert victim is not None, "no server was seen"
        proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0  # a case failed
    rows, _ = s3_rows(tmp_path, "kill")
    failed = rows[rows["status"] == "error"]
    assert len(set(failed["backend"])) == 1, rows[["backend", "status", "reason"]].to_string()
    reason = failed["reason"].iloc[0]
    assert reason.startswith(f"the case's S3 server (versitygw, pid {victim}) died during the case: killed by "
                             "signal 9 (SIGKILL)"), reason
    other = rows[rows["backend"] != failed["backend"].iloc[0]]
    assert len(other) and (other["status"] == "ok").all() and other["verified"].all()
    assert _servers_under(tmp_path) == {} and not list(scratch.rglob("versitygw-*"))

