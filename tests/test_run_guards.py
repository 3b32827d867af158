"""Guards through the real CLI: one iobench per run and per scratch directory, runs far too long or starting too
many processes refused before anything is created, and no credential in a message or a record."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import forked_cli
import pytest
from conftest import declare_adapters, python_path
from test_cli_hostile import tree_digest

from benchmarks_lib.base.environment import machine_name
from benchmarks_lib.base.redact import redact

TINY = ["writers", "-d", "t:2,y:32:16,x:48", "--iterations", "1", "--warmups", "0", "--param", "multipliers=[1]",
        "--test", "write", "-b", "raw"]
#: the shape of an AWS key pair (AWS's documented example values)
KEY, SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "benchmarks_lib", "run", *args]


def iobench(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``iobench run ARGS`` in ``cwd`` (a process of its own, forked: ``forked_cli``)."""
    return forked_cli.iobench(["run", *args], cwd, env)


def refused(proc: subprocess.CompletedProcess) -> str:
    """The one line of a refusal (exit 2, no traceback)."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def _state(pid: int) -> str:
    """A process's state letter (R, S, T stopped, Z zombie ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _alive_children(pid: int) -> list[int]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    alive = []
    for child in children:
        try:  # a worker started ahead, waiting on its pipe for a case, holds still too
            waiting = Path(f"/proc/{child}/wchan").read_text().endswith("pipe_read")
            if _state(int(child)) != "Z" and not waiting:
                alive.append(int(child))
        except OSError:
            pass
    return alive


def stopped_while_measuring(cwd: Path, *args: str) -> subprocess.Popen:
    """A run started in the background and stopped (SIGSTOP) once it measures: its run.json written, its locks
    held, and the worker it had started finished, so that its files hold still."""
    proc = subprocess.Popen(command(*args), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    run_id = args[args.index("--run-id") + 1]
    results = Path(cwd, args[args.index("--results-dir") + 1])
    deadline = time.time() + 120
    while not (results / machine_name() / run_id / "run.json").exists():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()[1]
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGSTOP)
    while _state(proc.pid) != "T" and time.time() < deadline:  # the signal is delivered later than kill returns:
        time.sleep(0.01)  # until then the runner may still start a worker
    while _alive_children(proc.pid) and time.time() < deadline:
        time.sleep(0.05)
    return proc


def finish(proc: subprocess.Popen) -> int:
    os.kill(proc.pid, signal.SIGCONT)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-2000:]
    return proc.returncode


def test_a_second_iobench_on_a_run_or_its_scratch_is_refused_and_the_first_finishes(tmp_path):
    """The same run id and results directory, or the same run id and scratch directory with other results: the
    second gets one line naming the first's pid and exit 2, before it writes anything; the first's files are
    untouched and it finishes. Another run id in the same scratch directory gets a directory of its own."""
    first = ["--run-id", "r1", "--results-dir", "results", "--scratch-dir", "scratch", *TINY]
    proc = stopped_while_measuring(tmp_path, *first)
    try:
        before = tree_digest(tmp_path)
        line = refused(iobench(tmp_path, *first))
        assert "'r1'" in line and "being measured by another iobench" in line and f"pid {proc.pid}" in line
        line = refused(iobench(tmp_path, "--run-id", "r1", "--results-dir", "other", "--scratch-dir", "scratch",
                               *TINY))
        assert "scratch directory" in line and "in use by another iobench" in line and f"pid {proc.pid}" in line
        assert tree_digest(tmp_path) == before  # nothing written, nothing emptied: no "other" results either
        beside = iobench(tmp_path, "--run-id", "r2", "--results-dir", "results", "--scratch-dir", "scratch", *TINY)
        assert beside.returncode == 0, beside.stderr[-2000:]
        assert {k: v for k, v in tree_digest(tmp_path).items() if k in before and "r2" not in k} == before
    finally:
        finish(proc)
    assert not any((tmp_path / "scratch").iterdir())
    again = iobench(tmp_path, *first)  # resumed once the first is done (the lock died with it): nothing left to do
    assert again.returncode == 0 and "2 cases already recorded" in again.stderr


def test_a_lock_dies_with_its_holder(tmp_path):
    """kill -9 leaves no stale lock: the kernel drops it with the process."""
    from benchmarks_lib.base.scratch import hold_lock
    from benchmarks_lib.base.specs import SpecError

    path = tmp_path / "held"
    code = f"from benchmarks_lib.base.scratch import hold_lock; hold_lock({str(path)!r}, 'x'); print(1, flush=True); " \
           "import time; time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "1"
        with pytest.raises(SpecError, match=f"run x is busy by another iobench \\(pid {holder.pid}\\)"):
            hold_lock(path, "run x is busy")
    finally:
        holder.kill()
        holder.wait()
    os.close(hold_lock(path, "run x is busy"))


@pytest.mark.parametrize("args, words", [
    (["--iterations", "10000", "--warmups", "1000", "--param", "multipliers=[1,2,3]"], ("would take about", "--yes")),
    (["--param", "workers=[32]", "-d", "z:128:2:4,y:8:8:8,x:8:8:8", "--iterations", "1", "--warmups", "0"],
     ("32 worker processes", "per core", "--yes")),
    (["--cluster", "local:64", "--iterations", "1"], ("--cluster local:64", "64 worker processes", "--yes")),
])
def test_resource_bombs_are_refused_before_anything_is_created(tmp_path, args, words):
    """Hours of work, or dozens of processes on a few cores: one line naming the estimate or the count and
    --yes, exit 2, and no file or directory created."""
    suite = "parallel" if "workers=[32]" in args else "writers"
    proc = iobench(tmp_path, suite, *args, "--results-dir", "results", "--scratch-dir", "scratch",
                   env={"IOBENCH_YES": "0"})
    line = refused(proc)
    assert all(word in line for word in words), line
    assert list(tmp_path.iterdir()) == []


def test_a_run_states_its_estimate(tmp_path):
    """A suite measured in rounds states its time budget (the suite's own for the profile, or ``--budget``)."""
    proc = iobench(tmp_path, "--run-id", "e", "--results-dir", "results", "--scratch-dir", "scratch", *TINY)
    from benchmarks_lib.run.preflight import format_seconds
    from benchmarks_lib.suites import get_suite

    own = format_seconds(get_suite("writers").time_budget_s["quick"])
    assert proc.returncode == 0 and f"time budget: {own}" in proc.stderr
    proc = iobench(tmp_path, "--run-id", "f", "--results-dir", "results", "--scratch-dir", "scratch", *TINY,
                   "--budget", "90s")
    assert proc.returncode == 0 and "time budget: 90 s" in proc.stderr


def test_a_secret_in_an_endpoint_is_not_repeated(tmp_path):
    proc = iobench(tmp_path, "s3", "--param", f"endpoint=http://{KEY}:{SECRET}@example.com:9000")
    line = refused(proc)
    assert "http://***@example.com:9000" in line and KEY not in proc.stderr and SECRET not in proc.stderr
    assert "SECRET" not in proc.stderr.replace("***", "")
    assert list(tmp_path.iterdir()) == []


LEAKY = f'''
from benchmarks_lib.adapters.raw import RawAdapter


class LeakyAdapter(RawAdapter):
    name = "leaky"

    def write(self, offset, block):
        raise RuntimeError("PUT http://{KEY}:{SECRET}@s3.example.com/b?X-Amz-Signature=abc123&x=1 failed: "
                           "aws_secret_access_key={SECRET} token: FQoGZXIvYXdzEBYaDK")
'''


def test_a_secret_in_a_librarys_error_is_redacted_in_the_record(tmp_path):
    """A library's error message that quotes credentials becomes an error row without them."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "leaky_adapter.py").write_text(LEAKY)
    env = {"PYTHONPATH": python_path(declare_adapters(plugins, {"leaky": "leaky_adapter:LeakyAdapter"}))}
    tiny = [a if a != "raw" else "leaky" for a in TINY]
    proc = iobench(tmp_path, *tiny, "--run-id", "leak", "--results-dir", "results", "--scratch-dir", "scratch",
                   env=env)
    assert proc.returncode == 1
    from benchmarks_lib.records.store import find_run, load_run

    df, _ = load_run(find_run(tmp_path / "results", "leak"))
    reason = " ".join(df[df["backend"] == "leaky"]["reason"].dropna())
    assert "RuntimeError" in reason and "http://***@s3.example.com" in reason
    for secret in (KEY, SECRET, "abc123", "FQoGZXIvYXdzEBYaDK"):
        assert secret not in reason and secret not in df.to_json()


@pytest.mark.parametrize("text, shown", [
    (f"http://{KEY}:{SECRET}@host:9000/x", "http://***@host:9000/x"),
    ("https://user:p@ss@host/x", "https://***@host/x"),
    (f"key {KEY} denied", "key *** denied"),
    ("GET /b?X-Amz-Credential=abc&X-Amz-Signature=def&part=2",
     "GET /b?X-Amz-Credential=***&X-Amz-Signature=***&part=2"),
    ('{"secret_access_key": "abc", "region": "us-east-1"}', '{"secret_access_key": "***", "region": "us-east-1"}'),
    (f"AWS_SECRET_ACCESS_KEY={SECRET}", "AWS_SECRET_ACCESS_KEY=***"),
    (f"the key was {SECRET}.", "the key was ***."),
    ("commit 0e84ecc0e84ecc0e84ecc0e84ecc0e84ecc0e84e, path /work/h4/benchmarks/lib/adapters/foo/barbaz",
     "commit 0e84ecc0e84ecc0e84ecc0e84ecc0e84ecc0e84e, path /work/h4/benchmarks/lib/adapters/foo/barbaz"),
    # a file named like a secret is a path, and its message stays whole
    ("pack target /etc/passwd: not a directory", "pack target /etc/passwd: not a directory"),
    ("db_password = hunter2", "db_password = ***"),
])
def test_redact(text, shown):
    assert redact(text) == shown


def test_a_resumed_run_is_unfinished_until_it_ends_again(tmp_path):
    """``book --from`` and ``show`` trust ``finished_at``: a resume with cases to measure drops it until it ends."""
    args = [*TINY, "--run-id", "again", "--results-dir", "results", "--scratch-dir", "scratch"]
    assert iobench(tmp_path, *args).returncode == 0
    meta_path = tmp_path / "results" / machine_name() / "again" / "run.json"
    assert "finished_at" in json.loads(meta_path.read_text())
    record = next((meta_path.parent / "records").glob("writers-raw-*.parquet"))
    record.write_bytes(record.read_bytes()[:40])  # torn: the resume measures it again
    proc = subprocess.Popen(command(*args), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen_unfinished = False
    while proc.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            seen_unfinished |= "finished_at" not in json.loads(meta_path.read_text())
        time.sleep(0.01)
    assert proc.returncode == 0, proc.stderr.read()
    assert seen_unfinished and "finished_at" in json.loads(meta_path.read_text())
