"""``iobench advise``: the answer from a recorded writers run, the "not covered" line, bad inputs (exit 2, one
line), and ``--measure`` on a tiny file within its budget (real runs of the writers suite at tiny sizes)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks_lib.advise.evidence import parse_budget, parse_workload
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.cli.main import main
from benchmarks_lib.run.runner import run_suite


def _npy(path, side: int) -> str:
    rng = np.random.default_rng(0)
    np.save(path, (rng.integers(0, 4, (side, side, side)) * 40).astype("uint16"))
    return str(path)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A small recorded writers run (read and sharding tests) on a 32^3 .npy: (file, results dir, run id)."""
    base = tmp_path_factory.mktemp("advise")
    data = _npy(base / "cube.npy", 32)
    run_suite("writers", {"backends": ["zarr-python", "tensorstore"], "tests": ["read", "sharding"],
                          "dataset": f"file:{data}", "shard_datasets": [f"file:{data}"],
                          "read_dims": "z:32:16,y:32:16,x:32:16", "shard_volume": 32, "shard": 32,
                          "inner_chunks": [16], "cutout": 8, "cutout_positions": 2, "iterations": 2, "warmups": 0},
              results_dir=base / "results", run_id="advise-recorded", scratch_dir=base / "scratch", ceiling=False,
              progress=None)
    return data, str(base / "results"), "advise-recorded"


def test_the_answer_rests_on_the_recorded_rows(recorded, capsys):
    data, results, run_id = recorded
    assert main(["advise", "--like", data, "--access", "cutout:8,8,8", "--results-dir", results]) == 0
    out = capsys.readouterr().out
    assert "Best median (no winner claimed): writer " in out
    assert "chunks " in out and "shards " in out and "threads:" in out
    assert f"Evidence: run {run_id}" in out and "(your data)" in out and "n=2" in out
    # n=2 rounds, paired as the book pairs them: below the rule's first look the question is open, no winner claimed
    assert "runner-up: " in out and "open after 2 rounds" in out and "next look at round 8" in out
    assert "than the recommendation, no interval yet" in out and "separated" not in out
    assert "Cost against " in out and "files on disk:" in out


def test_a_workload_no_run_covers_says_so_and_names_the_nearest(recorded, capsys):
    data, results, run_id = recorded
    assert main(["advise", "--like", data, "--access", "write", "--results-dir", results]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("Not covered: none of the 1 writers run read (1 in ") and "--measure" in out[-1]
    assert out[1].startswith("  nearest measured: nothing; none of them holds rows of total")  # no write test ran
    # cutouts of another size are another workload: not covered either, the measured size named
    assert main(["advise", "--like", data, "--access", "cutout:16,16,16", "--results-dir", results]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("Not covered:") and out[0].endswith("measured cutouts of 16x16x16 of uint16")
    assert f"nearest measured: cutouts of 8x8x8 of uint16, dataset file:cube.npy 32x32x32, run {run_id}" in out[1]
    assert out[1].endswith("it differs in: cutouts of 8x8x8, not 16x16x16")


@pytest.mark.parametrize("argv, says", [
    (["--access", "cutout:a,b,c"], "cutout size"),
    (["--access", "cutout"], "no cutout shape"),
    (["--access", "scan"], "--access"),
    (["--access", "cutout:8,8"], "has 2 sizes"),
    (["--access", "write", "--budget", "3x"], "--budget '3x' is not a time"),
    (["--access", "write", "--budget", "1s"], "--budget 1 is out of range"),
])
def test_bad_input_is_one_line_and_exit_2(recorded, capsys, argv, says):
    data, results, _ = recorded
    assert main(["advise", "--like", data, "--results-dir", results, *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_a_missing_like_file_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["advise", "--like", str(tmp_path / "nope.npy"), "--access", "write"]) == 2
    err = capsys.readouterr().err
    assert "--like" in err and "does not exist" in err and err.count("\n") == 1


def test_the_workload_vocabulary():
    assert parse_budget("3m") == 180 and parse_budget("90s") == 90 and parse_budget("1h") == 3600
    w = parse_workload(None, "512,512,512", "uint16", "cutout:64,64,64", fsync=False, threads="4")
    assert (w.shape, w.dtype, w.access, w.cutout, w.fsync, w.threads) == ((512,) * 3, "uint16", "cutout",
                                                                          (64,) * 3, False, 4)
    with pytest.raises(SpecError, match="not both"):
        parse_workload("x.npy", "8,8", "uint8", "write")
    with pytest.raises(SpecError, match="larger than the data"):
        parse_workload(None, "8,8", "uint8", "cutout:16,16")


def test_measure_answers_within_its_budget(tmp_path, capsys):
    """--measure runs the writers suite itself on the file (a resumable run of its own) and answers from it."""
    data = _npy(tmp_path / "tiny.npy", 24)
    argv = ["advise", "--like", data, "--access", "cutout:8,8,8", "--measure", "--budget", "60s",
            "--results-dir", str(tmp_path / "results"), "--scratch-dir", str(tmp_path / "scratch"),
            "--run-id", "advise-tiny"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "plan: about" in out and "--run-id advise-tiny" in out
    assert ": writer " in out and "Evidence: run advise-tiny" in out and "(your data)" in out
    assert list((tmp_path / "results").glob("*/advise-tiny/run.json"))


def _frames(path, shape: tuple[int, ...]) -> str:
    rng = np.random.default_rng(1)
    np.save(path, (rng.integers(0, 4, shape) * 40).astype("uint16"))
    return str(path)


@pytest.mark.parametrize("shape, access, says", [
    # a thin stack: 8 planes, no 64-cube (refused before: "has no 64-cube to cut out of"); its own planes whole
    ((8, 256, 256), "cutout:8,64,64", "layout: chunks 8x64x64 on a 8x256x256 crop of your data"),
    # a short series of 2-D frames: a region of every frame (a time course of a region)
    ((12, 128, 128), "cutout:12,32,32", "layout: chunks 12x32x32 on a 12x128x128 crop of your data"),
])
def test_measure_fits_its_layout_to_the_datas_own_shape(tmp_path, capsys, shape, access, says):
    """--measure on a thin stack and on a frame series: the cutouts measured are the cutouts asked (the suite cuts
    cubes clipped to the array), in a layout that fits the data, and the answer rests on them."""
    data = _frames(tmp_path / "stack.npy", shape)
    cutout = access.partition(":")[2].replace(",", "x")
    argv = ["advise", "--like", data, "--access", access, "--measure", "--budget", "60s",
            "--results-dir", str(tmp_path / "results"), "--scratch-dir", str(tmp_path / "scratch"),
            "--run-id", "fitted"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert says in out and f"cutouts of {cutout}" in out and "no sharding sweep" in out
    assert ": writer " in out and "Evidence: run fitted" in out and "(your data)" in out
    assert f"cutouts of {cutout}" in next(line for line in out.splitlines() if line.startswith("  rows: "))
    assert "Not covered" not in out


@pytest.mark.parametrize("shape", [(8, 256, 256), (12, 128, 128)])
@pytest.mark.parametrize("access", ["full-read", "write", "append", "cutout:1,64,64", "cutout:8,8,8"])
def test_every_access_plans_a_fitting_run_on_anisotropic_data(tmp_path, shape, access):
    """The plan (checked by the suite's own parameter checks, nothing measured) fits a thin stack and a frame
    series for every access pattern: crops no larger than the data, cutouts thinner than a cube on a crop as deep
    as the cutout, a cube the data does not hold twice on the data's own planes."""
    from benchmarks_lib.advise.plan import fit_to_budget
    from benchmarks_lib.base.specs import parse_dims

    data = _frames(tmp_path / "stack.npy", shape)
    params, notes = fit_to_budget(parse_workload(data, None, None, access), 600)
    dims = parse_dims(params.get("read_dims") or params["dims"])
    assert all(n <= have for n, have in zip(dims.shape[1:], shape[1:], strict=True)), (dims, shape)
    if access.startswith("cutout"):
        cutout = tuple(int(c) for c in access.partition(":")[2].split(","))
        assert params["tests"] == ["read"] and notes[-1].startswith("  layout: ")
        assert tuple(min(params["cutout"], n) for n in dims.shape) == cutout  # the cutouts the suite will cut


def test_a_cube_the_data_holds_twice_is_swept(tmp_path):
    """Cube cutouts of data holding a cube of twice their side: the sharding sweep, its layouts stated."""
    from benchmarks_lib.advise.plan import fit_to_budget

    data = _frames(tmp_path / "stack.npy", (40, 64, 64))
    params, notes = fit_to_budget(parse_workload(data, None, None, "cutout:16,16,16"), 600)
    assert params["tests"] == ["sharding"] and (params["shard"], params["shard_volume"]) == (32, 32)
    assert notes[-1].startswith("  layouts: a 32^3 crop of your data, sharded 32^3 with inner chunks of 16, 8")


def test_a_case_still_running_when_the_budget_ends_is_stopped(tmp_path):
    """The budget's end stops the case in flight (its worker killed, as on Ctrl-C), wherever the runner waits: the
    run is left unfinished (resumable) and its scratch removed. In a process of its own: the alarm interrupts
    whatever it lands in (a lock held by logging, say), which must not outlive the run in the test's process."""
    import json
    import subprocess
    import sys

    data = _npy(tmp_path / "tiny.npy", 24)
    params = {"backends": ["raw", "zarr-python", "tensorstore"], "tests": ["write"], "dims": "t:8,y:24:8,x:24",
              "multipliers": [1], "dataset": f"file:{data}", "iterations": 3, "warmups": 1}
    # the budget ends once a case is in flight, however long a loaded machine takes to get there
    script = f"""
import signal
from benchmarks_lib.advise.plan import BudgetSpent, budget_alarm
from benchmarks_lib.run.runner import run_suite

def end_once_a_case_runs(done, total, line, final):
    if not final:
        signal.setitimer(signal.ITIMER_REAL, 0.05)

try:
    with budget_alarm(3600):
        run_suite("writers", {params!r}, results_dir={str(tmp_path / "results")!r}, run_id="stopped",
                  scratch_dir={str(tmp_path / "scratch")!r}, ceiling=False, progress=end_once_a_case_runs)
except BudgetSpent as exc:
    print("stopped:", exc)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and "stopped:" in proc.stdout and "during a case" in proc.stdout, proc.stderr[-2000:]
    run_json = next((tmp_path / "results").glob("*/stopped/run.json"))
    assert "finished_at" not in json.loads(run_json.read_text())
    assert not (tmp_path / "scratch" / "stopped").exists()


def test_a_frame_stream_keeps_its_frames_whole():
    """Appends measure the file's own frames (a frame stream's speed depends on the frame's size), up to 32 MiB
    a frame, about 256 MiB a repeat, never more frames than the file holds."""
    from benchmarks_lib.advise.plan import append_plan

    assert append_plan((1000, 2048, 2048), "uint16") == ("t:32,y:2048:1024,x:2048:2048", 32)
    assert append_plan((10, 8192, 8192), "uint16") == ("t:8,y:4096:2048,x:4096:4096", 8)
    assert append_plan((5, 100, 200), "uint8") == ("t:5,y:100:50,x:200:200", 5)


def test_the_raw_baseline_is_shown_beside_the_answer_not_ranked(tmp_path, capsys):
    """The raw flat file stores no format and applies no codec: it is the machine's ceiling for the access, stated
    as such, and the recommendation is among the real writers."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "frames.npy", (rng.integers(0, 4, (8, 64, 64)) * 40).astype("uint16"))
    results = tmp_path / "results"
    run_suite("writers", {"backends": ["raw", "tensorstore"], "tests": ["append"],
                          "dataset": f"file:{tmp_path / 'frames.npy'}", "dims": "t:8,y:64:32,x:64",
                          "append_frames": 8, "append_step": 4, "iterations": 2, "warmups": 0},
              results_dir=results, run_id="frames", scratch_dir=tmp_path / "scratch", ceiling=False, progress=None)
    assert main(["advise", "--like", str(tmp_path / "frames.npy"), "--access", "append",
                 "--results-dir", str(results)]) == 0
    out = capsys.readouterr().out
    answer = next(line for line in out.splitlines() if ": writer " in line)
    assert "writer tensorstore" in answer and "raw" not in answer
    assert "Baseline (raw: a flat file of the raw bytes" in out and "x the baseline's time" in out
    # raw is not a candidate: tensorstore stands alone
    assert "not ranked: no other of the candidates measured this on these terms" in out
