"""Bad inputs and faults through the real CLI (a process each, forked from one that imported it: ``forked_cli``),
as a hostile user would try them.

Each probe must end with exit 2 and one line on stderr (no traceback) and leave the file tree
untouched: results, scratch and a decoy directory of the user's are hashed before and after.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import forked_cli
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import declare_adapters, python_path

from benchmarks_lib.base.environment import machine_name
from benchmarks_lib.base.terminal import HIDDEN

TINY = ["-d", "t:2,y:32:16,x:48", "--iterations", "1", "--warmups", "0", "--param", "multipliers=[1]",
        "--test", "write", "-b", "raw"]
LONG = "n" * 300


def iobench(args: list[str], cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """The command line in ``cwd``, its scratch under it (a process of its own each, forked: ``forked_cli``)."""
    return forked_cli.iobench(args, cwd, {"IOBENCH_SCRATCH": str(cwd / "scratch"), **(env or {})}, timeout=timeout)


def tree_digest(root: Path) -> dict[str, str]:
    """Every path under ``root`` with its kind and content hash (links by their target; a FIFO is never opened)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            mode = p.lstat().st_mode
            if stat.S_ISLNK(mode):
                out[rel] = "link:" + os.readlink(p)
            elif stat.S_ISDIR(mode):
                out[rel] = "dir"
            elif stat.S_ISREG(mode):
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = f"mode:{stat.filemode(mode)}"
    return out


def make_run(results: Path, run_id: str, *, meta: dict | str | None = None, record: bytes | None = None) -> Path:
    """A run directory written by hand: a valid writers run.json (or ``meta``) and one record file."""
    run_dir = results / machine_name() / run_id
    (run_dir / "records").mkdir(parents=True)
    default = {"suite": "writers", "profile": "quick", "params": {"dims": "t:1,y:1,x:1"}, "run_id": run_id,
               "environment": {"machine": machine_name()}, "schema_version": 2, "finished_at": "2026-01-01T00:00:00"}
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
    return _home(tmp_path)


def _home(tmp_path: Path) -> Path:
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
    "book-set-key-not-in-notebook": ["book", "--set", "cache:BACKENDS=[\"raw\"]"],
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
    "compression-points-per-case-text": ["run", "compression", "--param", 'points_per_case="abc"'],
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
    # -- places that are not results directories
    "pack-into-a-file": ["pack", "good", "mydata/thesis.txt"],
    "pack-into-etc-passwd": ["pack", "good", "/etc/passwd"],
    "run-results-dir-in-sysfs": ["run", "writers", *TINY, "--results-dir", "/sys/iobench"],
    "run-results-dir-in-proc": ["run", "writers", *TINY, "--results-dir", "/proc/self/iobench"],
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


# -- a results directory from someone else: files that are not what they say, and files too large to read
RUN = f"results/{machine_name()}"
RECORD = "writers-raw-0000000000.parquet"


def _write_table(path: Path, columns: dict) -> None:
    """A record file with ``status``/``operation`` and ``columns`` (pyarrow arrays or lists)."""
    n = len(next(iter(columns.values())))
    pq.write_table(pa.table({"status": ["ok"] * n, "operation": ["total"] * n, **columns}), path)


def _hostile_runs(home: Path) -> None:
    """Runs that no iobench wrote: links out of the run, a FIFO, oversized and decompression-bomb records."""
    results, outside = home / "results", home / "outside"
    outside.mkdir()
    pd.DataFrame({"status": ["ok"], "operation": ["total"], "secret": ["not part of any run"]}).to_parquet(
        outside / "secret.parquet")
    make_run(outside, "elsewhere")
    big_meta = {"suite": "writers", "profile": "quick", "params": {}, "environment": {}, "pad": "x" * 2**21}
    for run_id, meta in {"hugejson": json.dumps(big_meta), "deepjson": "[" * 200_000,
                         "longint": '{"suite": ' + "1" * 5000 + "}",
                         "wrongtypes": json.dumps({"suite": "writers", "profile": "quick", "params": {},
                                                   "environment": ["a list"]})}.items():
        make_run(results, run_id, meta=meta)
    devzero, fifo = make_run(results, "devzero"), make_run(results, "fifo")
    (devzero / "run.json").unlink()
    (devzero / "run.json").symlink_to("/dev/zero")
    (fifo / "run.json").unlink()
    os.mkfifo(fifo / "run.json")
    linked = make_run(results, "linkedrecord") / "records" / RECORD
    linked.unlink()
    linked.symlink_to(outside / "secret.parquet")
    shutil.rmtree(make_run(results, "linkedrecords") / "records")
    (results / machine_name() / "linkedrecords" / "records").symlink_to(outside, target_is_directory=True)
    (results / machine_name() / "linkedrun").symlink_to(outside / machine_name() / "elsewhere")
    fiforecord = make_run(results, "fiforecord") / "records" / RECORD
    fiforecord.unlink()
    os.mkfifo(fiforecord)
    with open(make_run(results, "bigrecord") / "records" / RECORD, "r+b") as fh:
        fh.truncate(64 * 2**20 + 1)  # sparse: 64 MiB and a byte, nothing written
    _write_table(make_run(results, "manyrows") / "records" / RECORD, {"x": pa.array([0] * 1_000_001, pa.int8())})
    one_mib = pa.DictionaryArray.from_arrays(pa.array([0] * 1100, pa.int32()), pa.array(["y" * 2**20]))
    _write_table(make_run(results, "bomb") / "records" / RECORD, {"backend": one_mib})  # 1.1 GiB decoded, 1 MB stored
    _write_table(make_run(results, "structcol") / "records" / RECORD, {"x": [{"a": 1}]})
    _write_table(make_run(results, "wrongcol") / "records" / RECORD, {"gbps": ["fast"]})
    make_run(home / "inprogress", "running", meta={"suite": "writers", "profile": "quick", "params": {},
                                                   "environment": {}, "run_id": "running"})
    _write_table(make_run(results, "manynames") / "records" / RECORD, {"backend": [f"b{i}" for i in range(257)]})
    (home / "crafted.vtu").write_text(CRAFTED_VTU)


#: a mesh whose point-data array (too short: VTK warns about it, quoting its name) is named with a right-to-left
#: override, a C1 control (NEL) and a line of its own that pretends all went well
CRAFTED_VTU = """<?xml version="1.0"?>
<VTKFile type="UnstructuredGrid" version="0.1" byte_order="LittleEndian"><UnstructuredGrid>
<Piece NumberOfPoints="4" NumberOfCells="1"><PointData>
<DataArray type="Float32" Name="&#x202E;evil&#x85;C1&#10;iobench: all good, exit 0" format="ascii">0 1</DataArray>
</PointData><Points><DataArray type="Float32" NumberOfComponents="3" format="ascii">0 0 0 1 0 0 0 1 0 0 0 1</DataArray>
</Points><Cells><DataArray type="Int32" Name="connectivity" format="ascii">0 1 2 3</DataArray>
<DataArray type="Int32" Name="offsets" format="ascii">4</DataArray>
<DataArray type="UInt8" Name="types" format="ascii">10</DataArray></Cells></Piece></UnstructuredGrid></VTKFile>
"""


RECORD_PROBES: dict[str, list[str]] = {
    # -- run.json: a regular file of at most 1 MiB holding an object with the run's keys
    "show-run-json-link-to-dev-zero": ["show", f"{RUN}/devzero"],
    "show-run-json-fifo": ["show", f"{RUN}/fifo"],
    "show-run-json-over-1mib": ["show", "hugejson"],
    "show-run-json-nested-200000-deep": ["show", "deepjson"],
    "show-run-json-5000-digit-number": ["show", "longint"],
    "show-run-json-environment-a-list": ["show", "wrongtypes"],
    # -- records: regular files inside the run directory, never a link out of it
    "show-record-link-out-of-run": ["show", "linkedrecord"],
    "pack-record-link-out-of-run": ["pack", "linkedrecord", "packed"],
    "export-record-link-out-of-run": ["export", "linkedrecord", "-o", "x.csv"],
    "show-records-dir-link-out-of-run": ["show", "linkedrecords"],
    "show-run-dir-link-not-listed": ["show", "linkedrun"],
    "show-record-fifo": ["show", "fiforecord"],
    "pack-record-fifo": ["pack", "fiforecord", "packed"],
    # -- records too large: refused from the file size and the footer, before they are decoded
    "show-record-over-64mib": ["show", "bigrecord"],
    "show-record-over-a-million-rows": ["show", "manyrows"],
    "show-record-decodes-past-1gib": ["show", "bomb"],
    "compare-record-decodes-past-1gib": ["compare", "good", "bomb"],
    "export-record-decodes-past-1gib": ["export", "bomb", "-o", "x.csv"],
    "show-record-struct-column": ["show", "structcol"],
    "show-record-text-where-numbers-go": ["show", "wrongcol"],
    # -- a run still in progress is not drawn from as if it were finished
    "book-from-incomplete-run": ["book", "--from", "inprogress", "--notebook", "writers"],
    # -- every summary groups by the names: more distinct values of one than a run holds are refused, not summed up
    "show-257-distinct-backends": ["show", "manynames"],
    "compare-257-distinct-backends": ["compare", "good", "manynames"],
    "export-257-distinct-backends": ["export", "manynames", "-o", "x.csv"],
    # -- what VTK says about a person's file reaches the terminal as one escaped line
    "compression-crafted-mesh-vtk-message": ["run", "compression", "--dataset", "file:crafted.vtu"],
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """ONE hostile home for every probe (each probe proves it left the tree as it was), and its digest."""
    home = _home(tmp_path_factory.mktemp("hostile"))
    _hostile_runs(home)
    return home, tree_digest(home)


#: probe -> what its one line must say (the file at fault and the limit)
SAID = {"show-run-json-link-to-dev-zero": ["is a symbolic link"], "show-run-json-fifo": ["is a FIFO"],
        "show-run-json-over-1mib": ["at most 1 MiB is read"], "show-record-over-64mib": ["at most 64 MiB is read"],
        "show-record-over-a-million-rows": ["1,000,001 rows; at most 1,000,000 rows"],
        "show-record-decodes-past-1gib": ["at most 1 GiB of a run is read"],
        "pack-record-link-out-of-run": [RECORD, "symbolic link"],
        "book-from-incomplete-run": ["'inprogress/", "incomplete"],
        "show-257-distinct-backends": [RECORD, "column 'backend'", "more than 256 distinct values"],
        "compression-crafted-mesh-vtk-message": ["(VTK: Cannot read point data array",
                                                 '"\\u202eevil\\x85C1\\niobench: all good, exit 0"']}


@pytest.mark.parametrize("name", list(RECORD_PROBES))
def test_a_hostile_results_directory_is_refused_in_one_line(hostile: tuple[Path, dict[str, str]], name: str):
    home, before = hostile
    proc = iobench(RECORD_PROBES[name], home)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert not HIDDEN.search(proc.stderr.rstrip("\n")), ascii(proc.stderr)  # no control or direction change
    assert lines[0].startswith("iobench"), lines
    assert tree_digest(home) == before  # nothing packed, exported or renamed
    assert "not part of any run" not in proc.stdout
    assert all(word in lines[0] for word in SAID.get(name, ())), lines  # the refusals name the file and the limit


def test_a_run_of_more_than_ten_thousand_record_files_is_refused_before_reading_them(tmp_path: Path):
    records = make_run(tmp_path / "results", "many") / "records"
    for i in range(10_001):
        (records / f"case-{i:05d}.parquet").touch()
    proc = iobench(["show", "many"], tmp_path)
    assert proc.returncode == 2 and "more than 10,000 .parquet files; at most 10,000 are read" in proc.stderr


def _peak_rss_mb(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    """``iobench args`` through the real command line, and its peak RSS (MB) as the kernel counted it."""
    script = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
              "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr); "
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(p.returncode)")
    full_env = {**os.environ, "IOBENCH_SCRATCH": str(cwd / "scratch")}
    proc = subprocess.run([sys.executable, "-c", script, sys.executable, "-m", "benchmarks_lib", *args], cwd=cwd,
                          capture_output=True, text=True, env=full_env, timeout=600, stdin=subprocess.DEVNULL)
    *err, peak = proc.stderr.splitlines() or ["0"]
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, "\n".join(err)), int(peak) / 1024


def test_a_long_name_is_cut_where_read_in_bounded_memory(tmp_path: Path):
    """834 rows with one backend name of 1 MiB (834 MiB once decoded, under the 1 GiB a run may decode; a parquet
    file of kilobytes): read as one dictionary value, cut to 256 characters before it is repeated per row."""
    name = "y" * 2**20
    _write_table(make_run(tmp_path / "results", "longname") / "records" / RECORD,
                 {"backend": [name] * 834, "elapsed_s": [1.0] * 834})
    shown, peak = _peak_rss_mb(["show", "longname"], tmp_path)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr[-2000:]
    assert peak < 500, peak  # 1.96 GB before names were cut where read
    assert "y" * 256 not in shown.stdout and len(shown.stdout) < 20_000
    exported = iobench(["export", "longname", "-o", "out.csv"], tmp_path)
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert {r["backend"] for r in csv.DictReader((tmp_path / "out.csv").open())} == {"y" * 255 + "\u2026"}


def test_a_time_that_is_not_a_positive_finite_number_is_never_ranked(tmp_path: Path):
    """Forged times (-5000 s, an infinity, zero) make their rows error rows saying so: shown as failures, never in
    a summary or a comparison."""
    for run_id, forged in (("forged", [-5000.0, float("inf"), 0.0]), ("honest", [1.2, 1.3, 1.1])):
        n = 6
        pd.DataFrame({"status": ["ok"] * n, "operation": ["total"] * n, "backend": ["fast"] * 3 + ["slow"] * 3,
                      "suite": ["writers"] * n, "test": ["write"] * n, "run_id": [run_id] * n, "dataset": ["d"] * n,
                      "elapsed_s": [*forged, 1.0, 1.1, 0.9], "nbytes": [10**8] * n, "iteration": [0, 1, 2] * 2}
                     ).to_parquet(make_run(tmp_path / "results", run_id) / "records" / RECORD, index=False)
    for command in (["show", "forged"], ["compare", "honest", "forged"]):
        proc = iobench(command, tmp_path)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        for bad in ("-5000", "inf"):
            assert all("not a positive finite number" in line for line in proc.stdout.splitlines() if bad in line)
    assert "elapsed_s -5000 is not a positive finite number; the row is not counted" in iobench(
        ["show", "forged"], tmp_path).stdout


def test_an_infinite_parameter_in_a_record_makes_an_error_row_and_the_rest_is_read():
    """A cutout's side or a step recorded as an infinity (no run records one) makes its row an error row saying so,
    the value dropped: a chapter that draws or words it never meets an infinity (``book --from`` stopped on
    ``int(inf)``); the other rows stay as they were."""
    from benchmarks_lib.records.store import invalid_as_errors

    df = pd.DataFrame({"status": ["ok", "ok", "ok"], "operation": ["read_region_cold"] * 3, "elapsed_s": [1.0] * 3,
                       "cutout": [32.0, float("inf"), 64.0], "step": [float("-inf"), 2.0, 4.0]})
    out = invalid_as_errors(df)
    assert list(out["status"]) == ["error", "error", "ok"]
    assert out["reason"][0] == "the record's step -inf is not a finite number; the row is not counted"
    assert out["reason"][1] == "the record's cutout inf is not a finite number; the row is not counted"
    assert not np.isinf(out[["cutout", "step"]].to_numpy()).any() and out["cutout"][2] == 64.0


def test_a_record_with_forged_pandas_metadata_is_read_by_its_columns(tmp_path: Path):
    """A parquet record whose pandas metadata names an index column that is not there and calls a column
    categorical: ``show``, ``compare`` and ``export`` read its columns as they are, no traceback."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for run_id in ("forged", "honest"):
        make_run(tmp_path / "results", run_id)
    path = tmp_path / "results" / machine_name() / "forged" / "records" / "writers-raw-0000000000.parquet"
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"pandas"])
    meta["index_columns"] = ["no_such_column"]
    meta["columns"][0].update(pandas_type="categorical", metadata={"num_categories": 5, "ordered": "x"})
    pq.write_table(table.replace_schema_metadata({b"pandas": json.dumps(meta).encode()}), path)
    with pytest.raises(KeyError):  # what pandas itself makes of it
        pa.parquet.read_table(path).to_pandas()
    for command in (["show", "forged"], ["compare", "honest", "forged"], ["export", "forged", "-o", "out.csv"]):
        proc = iobench(command, tmp_path)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (command, proc.stderr[-2000:])
    assert "raw" in (tmp_path / "out.csv").read_text()


def test_at_least_141_probes():
    """The count SECURITY.md states: every bad input and fault tried through the real command line."""
    assert len(PROBES) + len(RECORD_PROBES) >= 141


def test_a_pack_that_fails_half_way_leaves_nothing_in_the_way_of_the_next(home: Path):
    """A full disk, as a file size limit (``RLIMIT_FSIZE``: the write fails, as on a full disk) while the parquet
    file is written: one line naming the command (no advice of another command's), exit 1, nothing left under the
    destination but its machine folder; the same pack without the limit then succeeds."""
    import resource

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    args = [sys.executable, "-m", "benchmarks_lib", "pack", "good", "packed"]
    env = {**os.environ, "IOBENCH_SCRATCH": str(home / "scratch")}
    proc = subprocess.run(args, cwd=home, capture_output=True, text=True, env=env, preexec_fn=small_files,
                          stdin=subprocess.DEVNULL, timeout=600)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("iobench pack: error: File too large") and "--run-id" not in lines[0], lines
    assert [p.name for p in (home / "packed").rglob("*")] == [machine_name()]
    again = iobench(["pack", "good", "packed"], home)
    assert again.returncode == 0, again.stderr
    assert (home / "packed" / machine_name() / "good" / "run.json").is_file()


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
    from benchmarks_lib.records.store import write_atomic_parquet, write_json_atomic

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


# -- strings from a record are printed as text: never markup, never a terminal escape
MARKUP = {"backend": ["[/]x", "[link=https://evil]y[/link]", '=HYPERLINK("http://evil","z")', "+x\x1b[2J"],
          "reason": [None, None, "[/red]boom \x1b]8;;http://evil\x07click\x1b]8;;\x07", None]}
SGR = re.compile("\x1b\\[[0-9;]*m")


def _markup_run(results: Path, run_id: str) -> None:
    meta = {"suite": "writers", "profile": "quick", "params": {}, "run_id": run_id + "\x1b[2J",
            "finished_at": "2026-01-01T00:00:00",
            "environment": {"machine": "[link=https://evil]m[/link]", "cpu_model": "[/bold]",
                            "fs_type": "\x1b]8;;http://evil\x07fs\x1b]8;;\x07"}}
    run_dir = make_run(results, run_id, meta=meta)
    pd.DataFrame({**MARKUP, "status": ["ok", "ok", "error", "ok"], "operation": ["total"] * 3 + ["write"],
                  "suite": "writers", "run_id": run_id, "iteration": [0, 1, 0, 0],
                  "elapsed_s": [1.0, 2.0, None, 1.5], "gbps": [1.0, 0.5, None, 2.0],
                  "rss_growth_bytes": [-5, 1, None, 2],
                  "shape": [[32, 540, 1920], [1], None, [4, 5]]}).to_parquet(run_dir / "records" / RECORD, index=False)


@pytest.mark.parametrize("command", [["show", "markup"], ["compare", "markup", "markup2"]])
def test_record_strings_are_printed_as_text_never_as_markup(home: Path, command: list[str]):
    _markup_run(home / "results", "markup")
    _markup_run(home / "results", "markup2")
    piped = iobench(command, home)
    assert piped.returncode == 0 and "Traceback" not in piped.stderr, piped.stderr[-2000:]
    assert "\x1b" not in piped.stdout and "\x07" not in piped.stdout  # control characters are shown, not sent
    for shown in ("[/]x", "[link=https://evil]y[/link]", "+x\\x1b[2J", "markup\\x1b[2J"):
        assert shown in piped.stdout, shown
    if command[0] == "show":
        for shown in ("[/bold]", "[link=https://evil]m[/link]", "\\x1b]8;;http://evil\\x07fs", "[/red]boom \\x1b]8;;"):
            assert shown in piped.stdout, shown
    coloured = iobench(command, home, env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"})
    assert coloured.returncode == 0, coloured.stderr[-2000:]
    assert "\x1b]" not in coloured.stdout  # no hyperlink (OSC 8) or any other OSC sequence
    assert "[link=https://evil]y[/link]" in SGR.sub("", coloured.stdout)


def test_export_neutralises_spreadsheet_formulas_and_keeps_numbers(home: Path):
    _markup_run(home / "results", "markup")
    proc = iobench(["export", "markup", "-o", "out.csv"], home)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = list(csv.DictReader((home / "out.csv").open(newline="")))
    assert [r["backend"] for r in rows] == ["[/]x", "[link=https://evil]y[/link]", "'" + MARKUP["backend"][2],
                                             "'+x\x1b[2J"]
    assert rows[-1]["elapsed_s"] == "1.5" and float(rows[0]["rss_growth_bytes"]) == -5  # numbers stay numbers
    assert [r["shape"] for r in rows] == ["[32, 540, 1920]", "[1]", "", "[4, 5]"]  # a list as its JSON text


def test_export_force_never_replaces_what_is_not_a_regular_file(home: Path):
    """``--force`` replaces a regular file only: a FIFO, a symbolic link (to a file of the user's) and a device are
    refused in one line (exit 2) and stay what they were."""
    _markup_run(home / "results", "markup")
    os.mkfifo(home / "fifo")
    (home / "theirs.txt").write_text("theirs")
    (home / "link").symlink_to(home / "theirs.txt")
    for target in (home / "fifo", home / "link", Path("/dev/null")):
        proc = iobench(["export", "markup", "-o", str(target), "--force"], home)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert proc.stderr.count("\n") == 1 and "not a regular file" in proc.stderr, proc.stderr
    assert stat.S_ISFIFO(os.lstat(home / "fifo").st_mode) and (home / "link").is_symlink()
    assert (home / "theirs.txt").read_text() == "theirs" and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    (home / "old.csv").write_text("old")
    assert iobench(["export", "markup", "-o", "old.csv", "--force"], home).returncode == 0
    assert "backend" in (home / "old.csv").read_text()  # a regular file of its own: replaced


def test_show_says_when_a_run_is_incomplete(home: Path):
    make_run(home / "results", "running", meta={"suite": "writers", "profile": "quick", "params": {},
                                                "environment": {}, "run_id": "running"})
    running, done = iobench(["show", "running"], home), iobench(["show", "good"], home)
    assert running.returncode == done.returncode == 0, running.stderr[-2000:] + done.stderr[-2000:]
    assert "(incomplete: still running or interrupted)" in running.stdout
    assert "incomplete" not in done.stdout


def test_book_from_passes_over_an_incomplete_run_for_an_older_finished_one(tmp_path: Path):
    from benchmarks_lib.book.build import recorded_runs

    finished = make_run(tmp_path, "finished")
    make_run(tmp_path, "running", meta={"suite": "writers", "profile": "quick", "params": {}, "environment": {},
                                        "run_id": "running"})
    os.utime(finished / "run.json", (1, 1))  # the finished run is the older one
    assert recorded_runs(tmp_path, ["writers"]) == {"writers": finished}


XML_ADAPTER = '''
from benchmarks_lib.adapters.raw import RawAdapter


class XmlErrorAdapter(RawAdapter):
    name = "xmlerror"

    def write(self, offset, block):
        raise RuntimeError('<?xml version="1.0" encoding="UTF-8"?>\\n<Error><Code>SlowDown</Code><Message>'
                           + "please reduce your request rate " * 300 + "</Message></Error>")
'''


def test_a_failure_shows_the_exception_line_not_the_tail_of_its_message(home: Path):
    plugins = home / "plugins"
    plugins.mkdir()
    (plugins / "xml_error_adapter.py").write_text(XML_ADAPTER)
    declare_adapters(plugins, {"xmlerror": "xml_error_adapter:XmlErrorAdapter"})
    env = {"PYTHONPATH": python_path(plugins)}
    args = [*TINY[:-1], "xmlerror", "--run-id", "xml"]
    run = iobench(["run", "writers", *args], home, env=env)
    assert run.returncode == 1, run.stderr[-2000:]  # the case failed, the run finished
    first_line = 'RuntimeError: <?xml version="1.0" encoding="UTF-8"?>'
    assert first_line in run.stdout
    records = pd.concat(pd.read_parquet(p) for p in (home / "results" / machine_name() / "xml" / "records").iterdir())
    reason = records[records["status"] == "error"]["reason"].iloc[0]
    assert reason.startswith(first_line + "\n") and len(reason) <= 4000
    assert "raise RuntimeError" in reason  # and where it was raised, from the end of the traceback
    assert first_line in iobench(["show", "xml"], home, env=env).stdout


@pytest.mark.parametrize("args", [["run", "writers", "--budget", "soon"], ["show", "nothing-here"], ["suites"]])
def test_the_forked_command_line_answers_as_the_command_does(home: Path, args: list[str]):
    """What the probes above see (``forked_cli``) is what a fresh ``iobench`` prints and returns."""
    fresh = subprocess.run([sys.executable, "-m", "benchmarks_lib", *args], cwd=home, capture_output=True, text=True,
                           env={**os.environ, "IOBENCH_SCRATCH": str(home / "scratch")}, stdin=subprocess.DEVNULL)
    forked = iobench(args, home)
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert fresh.stdout or fresh.stderr
    with pytest.raises(subprocess.TimeoutExpired):  # past its time the call is killed, as subprocess.run's is
        iobench(args, home, timeout=0.001)
