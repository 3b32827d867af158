"""Bad inputs and faults through the real CLI (a subprocess each), as a hostile user would try them.

Each probe must end with exit 2 and one line on stderr (no traceback) and leave the file tree
untouched: results, scratch and a decoy directory of the user's are hashed before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks_lib.environment import machine_name

TINY = ["-d", "t:2,y:32:16,x:48", "--iterations", "1", "--warmups", "0", "--param", "multipliers=[1]",
        "--test", "write", "-b", "raw"]
LONG = "n" * 300


def iobench(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "IOBENCH_SCRATCH": str(cwd / "scratch"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "benchmarks_lib", *args], cwd=cwd, capture_output=True, text=True,
                          env=full_env, timeout=600, stdin=subprocess.DEVNULL)


def tree_digest(root: Path) -> dict[str, str]:
    """Every path under ``root`` with its kind and content hash (links by their target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def make_run(results: Path, run_id: str, *, meta: dict | str | None = None, record: bytes | None = None) -> Path:
    """A run directory written by hand: a valid writers run.json (or ``meta``) and one record file."""
    run_dir = results / machine_name() / run_id
    (run_dir / "records").mkdir(parents=True)
    default = {"suite": "writers", "profile": "quick", "params": {"dims": "t:1,y:1,x:1"}, "run_id": run_id,
               "environment": {"machine": machine_name()}, "schema_version": 2}
    text = meta if isinstance(meta, str) else json.dumps(meta if meta is not None else default)
    (run_dir / "run.json").write_text(text)
    if record is not None:
        (run_dir / "records" / "writers-raw-0000000000.parquet").write_bytes(record)
    else:
        pd.DataFrame({"status": ["ok"], "operation": ["total"], "backend": ["raw"], "suite": ["writers"],
                      "run_id": [run_id], "elapsed_s": [1.0], "gbps": [1.0]}).to_parquet(
            run_dir / "records" / "writers-raw-0000000000.parquet", index=False)
    return run_dir


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user's working directory: earlier results, a decoy folder of theirs, files in the way."""
    results = tmp_path / "results"
    make_run(results, "good")
    make_run(results, "good2")
    make_run(results, "other", meta={"suite": "writers", "profile": "quick", "params": {"seed": 99},
                                     "environment": {}, "run_id": "other"})
    make_run(results, "badjson", meta="{not json")
    make_run(results, "nometa", meta={"hello": 1})
    make_run(results, "listmeta", meta="[1, 2]")
    make_run(results, "badparquet", record=b"PAR1 this is not parquet")
    make_run(results, "emptyparquet", record=b"")
    make_run(results, "foreign", record=pd.DataFrame({"a": [1]}).to_parquet())
    decoy = tmp_path / "mydata"
    decoy.mkdir()
    (decoy / "thesis.txt").write_text("years of work")
    (decoy / "fio").mkdir()
    (decoy / "fio" / "fio.bin").write_text("not ours")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "userrun").mkdir()
    (tmp_path / "scratch" / "userrun" / "keep.txt").write_text("the user's")
    (tmp_path / "scratch" / "linked").symlink_to(decoy, target_is_directory=True)
    (tmp_path / "afile").write_text("a file, not a directory")
    (tmp_path / "existing.csv").write_text("the user's csv")
    return tmp_path


PROBES: dict[str, list[str]] = {
    # -- data loss: a directory that iobench did not create is never adopted as scratch
    "scratch-takeover-user-folder": ["run", "writers", *TINY, "--scratch-dir", "mydata", "--run-id", "fio"],
    "scratch-takeover-results": ["run", "writers", *TINY, "--scratch-dir", ".", "--run-id", "results"],
    "scratch-takeover-default-root": ["run", "writers", *TINY, "--run-id", "userrun"],
    "scratch-takeover-symlink": ["run", "writers", *TINY, "--run-id", "linked"],
    "scratch-inside-results": ["run", "writers", *TINY, "--scratch-dir", "results", "--run-id", "new"],
    "scratch-is-file": ["run", "writers", *TINY, "--scratch-dir", "afile"],
    "scratch-under-file": ["run", "writers", *TINY, "--scratch-dir", "afile/sub"],
    "scratch-name-too-long": ["run", "writers", *TINY, "--scratch-dir", LONG],
    "results-is-file": ["run", "writers", *TINY, "--results-dir", "afile"],
    "results-under-file": ["run", "writers", *TINY, "--results-dir", "afile/r"],
    "results-name-too-long": ["run", "writers", *TINY, "--results-dir", LONG],
    "run-exists-other-params": ["run", "writers", *TINY, "--run-id", "other"],
    "resume-corrupt-run-json": ["run", "writers", *TINY, "--run-id", "badjson"],
    "too-large-without-yes": ["run", "writers", "-d", "t:20000,y:1024,x:1024", "--test", "write", "-b", "raw",
                              "--param", "multipliers=[1]"],
    "too-large-for-disk": ["run", "writers", "-d", "t:100000,y:4096,x:4096", "--test", "write", "-b", "raw"],
    # -- code injection: book parameters are names from the parameters cell; values stay data
    "book-set-injected-key": ["book", "--set", "__import__('os').system('touch pwned');X=1"],
    "book-set-injected-key2": ["book", "--set", "X=1;import os"],
    "book-set-unknown-key": ["book", "--set", "NOT_A_PARAMETER=1"],
    "book-set-reserved-key": ["book", "--set", "PROFILE=seed"],
    "book-set-unknown-notebook": ["book", "--set", "nope:BACKENDS=[\"raw\"]"],
    "book-set-key-not-in-notebook": ["book", "--set", "cache_prefetch:BACKENDS=[\"raw\"]"],
    "book-set-no-equals": ["book", "--set", "BACKENDS"],
    "book-set-twice": ["book", "--set", "BACKENDS=1", "--set", "BACKENDS=2"],
    "book-unknown-notebook": ["book", "--notebook", "../../etc/passwd"],
    "book-results-is-file": ["book", "--results-dir", "afile"],
    "book-bad-profile": ["book", "--profile", "everything"],
    "book-from-missing-dir": ["book", "--from", "no-such-dir"],
    "book-from-a-file": ["book", "--from", "afile"],
    "book-from-no-runs": ["book", "--from", "mydata"],
    "book-from-and-load-run": ["book", "--from", "mydata", "--set", "LOAD_RUN=\"x\""],
    # -- wrong JSON types in --param
    "param-seed-text": ["run", "writers", *TINY, "--param", 'seed="abc"'],
    "param-seed-inf": ["run", "writers", *TINY, "--param", "seed=1e400"],
    "param-seed-negative": ["run", "writers", *TINY, "--param", "seed=-1"],
    "param-seed-bool": ["run", "writers", *TINY, "--param", "seed=true"],
    "param-shard-float": ["run", "writers", *TINY, "--param", "shard=32.5"],
    "param-shard-list": ["run", "writers", *TINY, "--param", "shard=[32]"],
    "param-backends-number": ["run", "writers", "--param", "backends=5"],
    "param-backends-unknown": ["run", "writers", "--param", 'backends=["nope"]'],
    "param-tests-number": ["run", "writers", "--param", "tests=5"],
    "param-tests-unknown": ["run", "writers", "--param", 'tests=["write","nope"]'],
    "param-codec-number": ["run", "writers", "--param", "codec=5"],
    "param-codec-bad": ["run", "writers", "--codec", "zstd:99"],
    "param-dataset-list-unknown": ["run", "writers", "--param", 'dataset=["x"]'],
    "param-dataset-two": ["run", "writers", "--param", 'dataset=["em_like","labels"]'],
    "param-shard-datasets-unknown": ["run", "writers", "--param", 'shard_datasets="nope"'],
    "param-fsync-text": ["run", "writers", "--param", 'fsync="no"'],
    "param-multipliers-text": ["run", "writers", "--param", 'multipliers="a,b"'],
    "param-multipliers-dict": ["run", "writers", "--param", 'multipliers={"a":1}'],
    "param-dims-number": ["run", "writers", "--param", "dims=5"],
    "param-dims-empty": ["run", "writers", "-d", ""],
    "param-dims-bad-chunk": ["run", "writers", "-d", "t:4:8"],
    "param-unknown": ["run", "writers", "--param", "colour=5"],
    "param-not-key-value": ["run", "writers", "--param", "seed"],
    "param-twice": ["run", "writers", "--param", "seed=1", "--param", "seed=2"],
    "param-iterations-zero": ["run", "writers", "--iterations", "0"],
    "param-iterations-text": ["run", "writers", "--iterations", "many"],
    "param-warmups-negative": ["run", "writers", "--warmups", "-1"],
    "compression-codecs-number": ["run", "compression", "--param", "codecs=5"],
    "compression-threads-text": ["run", "compression", "--param", 'threads="abc"'],
    "compression-levels-text": ["run", "compression", "--param", 'levels="x"'],
    "compression-time-cap-text": ["run", "compression", "--param", 'time_cap_s="abc"'],
    "threads-backends-number": ["run", "threads", "--param", "backends=5"],
    "threads-threads-list-text": ["run", "threads", "--param", 'threads=["a"]'],
    "cache-read-timeout-text": ["run", "cache", "--param", 'read_timeout_s="abc"'],
    "cache-readers-unknown": ["run", "cache", "--param", 'readers=["nope"]'],
    "cache-entries-text": ["run", "cache", "--param", 'entries="many"'],
    "ceiling-size-zero": ["ceiling", "--size", "0"],
    "ceiling-size-text": ["ceiling", "--size", "lots"],
    "ceiling-iterations-text": ["ceiling", "--iterations", "x"],
    # -- shortcut flag and --param for the same key
    "conflict-dims": ["run", "writers", "-d", "t:2,y:4,x:4", "--param", 'dims="t:2,y:4,x:4"'],
    "conflict-backend": ["run", "writers", "-b", "raw", "--param", 'backends=["raw"]'],
    "conflict-test": ["run", "writers", "--test", "write", "--param", 'tests=["write"]'],
    "conflict-iterations": ["run", "writers", "--iterations", "2", "--param", "iterations=3"],
    # -- run ids
    "run-id-slash": ["run", "writers", *TINY, "--run-id", "a/b"],
    "run-id-dotdot": ["run", "writers", *TINY, "--run-id", ".."],
    "run-id-newline": ["run", "writers", *TINY, "--run-id", "a\nb"],
    "run-id-control": ["run", "writers", *TINY, "--run-id", "a\x1bb"],
    "run-id-space": ["run", "writers", *TINY, "--run-id", "a b"],
    "run-id-too-long": ["run", "writers", *TINY, "--run-id", "r" * 101],
    "run-id-empty": ["run", "writers", *TINY, "--run-id", ""],
    # -- argparse
    "unknown-suite": ["run", "everything"],
    "unknown-profile": ["run", "writers", "--profile", "huge"],
    "unknown-command": ["destroy"],
    "unknown-flag": ["run", "writers", "--force-it"],
    "missing-argument": ["show"],
    # -- show / compare / export of damaged or missing records
    "show-missing": ["show", "nope"],
    "show-corrupt-run-json": ["show", "badjson"],
    "show-incomplete-run-json": ["show", "nometa"],
    "show-list-run-json": ["show", "listmeta"],
    "show-corrupt-parquet": ["show", "badparquet"],
    "show-empty-parquet": ["show", "emptyparquet"],
    "show-foreign-parquet": ["show", "foreign"],
    "compare-corrupt": ["compare", "good", "badparquet"],
    "compare-missing": ["compare", "good", "nope"],
    "compare-threshold-text": ["compare", "good", "good2", "--threshold", "abc"],
    "compare-threshold-zero": ["compare", "good", "good2", "--threshold", "0"],
    "compare-threshold-one": ["compare", "good", "good2", "--threshold", "1"],
    "compare-threshold-negative": ["compare", "good", "good2", "--threshold", "-0.1"],
    "compare-threshold-nan": ["compare", "good", "good2", "--threshold", "nan"],
    "compare-threshold-percent": ["compare", "good", "good2", "--threshold", "10%"],
    "compare-threshold-empty": ["compare", "good", "good2", "--threshold", ""],
    "export-corrupt": ["export", "badjson", "-o", "x.csv"],
    "export-to-directory": ["export", "good", "-o", "mydata"],
    "export-over-existing": ["export", "good", "-o", "existing.csv"],
    "export-missing-dir": ["export", "good", "-o", "nodir/x.csv"],
    "export-name-too-long": ["export", "good", "-o", LONG + ".csv"],
    "export-results-is-file": ["export", "good", "--results-dir", "afile"],
    # -- crosscheck options
    "crosscheck-iterations-text": ["crosscheck", "--iterations", "abc"],
    "crosscheck-iterations-zero": ["crosscheck", "--iterations", "0"],
    "crosscheck-backend-unknown": ["crosscheck", "-b", "nope"],
    "crosscheck-backend-injection": ["crosscheck", "-b", "x'); import os; os.system('touch pwned'); ('"],
    "crosscheck-dims-bad": ["crosscheck", "-d", "t:0"],
}


@pytest.mark.parametrize("name", list(PROBES))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(home: Path, name: str):
    before = tree_digest(home)
    proc = iobench(PROBES[name], home)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("iobench"), lines
    assert tree_digest(home) == before
    assert not (home / "pwned").exists()


def test_at_least_sixty_probes():
    assert len(PROBES) >= 60


def test_a_damaged_record_is_measured_again_on_resume(home: Path):
    args = ["run", "writers", *TINY, "--run-id", "resume"]
    assert iobench(args, home).returncode == 0
    records = home / "results" / machine_name() / "resume" / "records"
    victim = next(p for p in sorted(records.glob("*.parquet")) if "raw" in p.name)
    victim.write_bytes(victim.read_bytes()[:40])  # a torn file
    proc = iobench(args, home)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert pd.read_parquet(victim)["status"].eq("ok").any()  # re-measured
    assert list(records.glob(f"{victim.name}.damaged-*"))  # set aside, not deleted
    assert (home / "mydata" / "thesis.txt").read_text() == "years of work"
    assert (home / "scratch" / "userrun" / "keep.txt").read_text() == "the user's"
    assert not (home / "scratch" / "resume").exists()  # our own scratch is removed at the end


def test_ceiling_fio_leaves_a_users_fio_directory_alone(home: Path):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (apt-get install fio)")
    (home / "scratch" / "fio").mkdir()
    (home / "scratch" / "fio" / "fio.bin").write_text("the user's")
    proc = iobench(["ceiling", "--size", "8MiB", "--iterations", "1", "--fio"], home)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (home / "scratch" / "fio" / "fio.bin").read_text() == "the user's"
    assert sorted(p.name for p in (home / "scratch").iterdir()) == ["fio", "linked", "userrun"]


def _small_tmpfs(path: Path, size: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    path.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def test_a_full_disk_keeps_the_old_record_and_leaves_no_partial_file(tmp_path: Path):
    from benchmarks_lib.records import write_atomic_parquet, write_json_atomic

    disk = tmp_path / "disk"
    if not _small_tmpfs(disk, "1m"):
        pytest.skip("needs root and mount to make a small full filesystem")
    try:
        small = pd.DataFrame({"status": ["ok"], "operation": ["total"]})
        write_atomic_parquet(small, disk / "case.parquet")
        write_json_atomic({"a": 1}, disk / "run.json")
        big = pd.DataFrame({"status": [os.urandom(64).hex() for _ in range(40_000)], "operation": "total"})
        with pytest.raises(OSError):
            write_atomic_parquet(big, disk / "case.parquet")
        with pytest.raises(OSError):
            write_json_atomic({"a": "x" * 2_000_000}, disk / "run.json")
        assert pd.read_parquet(disk / "case.parquet").equals(small)
        assert json.loads((disk / "run.json").read_text()) == {"a": 1}
        assert sorted(p.name for p in disk.iterdir()) == ["case.parquet", "run.json"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)
