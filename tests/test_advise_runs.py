"""Which recorded run ``iobench advise`` answers from, and what it says about the others: the same answer from every
working directory (this checkout's results/ and reference/, never the working directory's results/ by accident);
runs that disagree (another pick, or one a winner and the other not) named with their candidates and n, the answer
resting on the one with more candidates, then more rounds or iterations; "not covered" naming the nearest measured
case and how it differs; a hostile run's strings shown escaped. The runs are written with the records writer as the
writers suite writes its cutout rows (the selection is under test here, not the measurement)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks_lib.base.paths import REFERENCE
from benchmarks_lib.cli.main import main
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame, write_atomic_parquet, write_json_atomic

#: the reference's read test: microscopy 128x512x512 uint16, cutouts of 32^3 (and 64^3)
REFERENCE_WORKLOAD = ["--shape", "128,512,512", "--dtype", "uint16", "--access", "cutout:32,32,32"]
WORKLOAD = ["--shape", "256,256,256", "--dtype", "uint16", "--access", "cutout:32,32,32"]


def write_run(results: Path, run_id: str, times: dict[str, list[float]], *, dtype: str = "uint16",
              shape: tuple[int, ...] = (256, 256, 256), cutout: int = 32, age_s: float = 0, rounds: bool = False,
              dataset: str = "labels") -> Path:
    """A writers run of cutout rows (``read_region_cold``, unaligned), one candidate per writer name in ``times``
    (chunks 64^3, unsharded, codec lz4), its run.json ``age_s`` seconds old; ``rounds``: rows carry ``round``."""
    rows = []
    for backend, values in times.items():
        for i, t in enumerate(values):
            rows.append({"schema_version": SCHEMA_VERSION, "run_id": run_id, "machine": "vm", "suite": "writers",
                         "test": "read", "operation": "read_region_cold", "backend": backend, "codec": "lz4",
                         "status": "ok", "verified": True, "iteration": i, "dataset": dataset, "dtype": dtype,
                         "shape": list(shape), "chunks": [64] * len(shape), "cutout": float(cutout),
                         "cutout_kind": "unaligned", "nbytes": cutout ** len(shape) * 2, "elapsed_s": t,
                         **({"round": i} if rounds else {})})
    run_dir = results / "vm" / run_id
    (run_dir / "records").mkdir(parents=True)
    write_atomic_parquet(to_frame(rows), run_dir / "records" / "case.parquet")
    write_json_atomic({"suite": "writers", "profile": "quick", "params": {}, "run_id": run_id,
                       "environment": {"machine": "vm", "cpu_model": "Test CPU", "cpu_count": 2}},
                      run_dir / "run.json")
    stamp = (run_dir / "run.json").stat().st_mtime - age_s
    os.utime(run_dir / "run.json", (stamp, stamp))
    return run_dir


def spread(median: float, n: int, width: float = 0.02) -> list[float]:
    """``n`` times around ``median``, ``width`` apart (relative)."""
    return [median * (1 + width * (i - n // 2)) for i in range(n)]


def _advise(capsys, *argv: str) -> tuple[list[str], str]:
    assert main(["advise", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out.strip().splitlines(), captured.err


def test_the_same_answer_from_every_working_directory(tmp_path, monkeypatch, capsys):
    """A run in the working directory's results/ that would win if read (12 candidates to the reference's 9, its
    writers of one codec as the book ranks them) is not read by accident: from that directory and from an empty one
    the answer is the same, and the first says what it left out; named with --results-dir it is read, and the
    disagreement with the reference is named."""
    here, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    elsewhere.mkdir()
    # 12 iterations: twelve contenders have no interval at the rule's first look (round 8), one at round 12
    write_run(here / "results", "mine", {f"w{i:02d}": spread(1e-3 * (1 + i), 12) for i in range(12)}, dtype="uint16",
              shape=(128, 512, 512), dataset="microscopy")
    monkeypatch.chdir(here)
    from_project, note = _advise(capsys, *REFERENCE_WORKLOAD)
    monkeypatch.chdir(elsewhere)
    from_elsewhere, quiet = _advise(capsys, *REFERENCE_WORKLOAD)
    assert from_project == from_elsewhere
    assert "mine" not in "\n".join(from_project) and "w00" not in "\n".join(from_project)
    assert "the 1 run in" in note and "were not read" in note and "--results-dir results" in note and not quiet
    assert any(line.startswith("Evidence: run ") for line in from_project)
    # asked for, the working directory's run is read (a relative --results-dir is the reader's own choice)
    monkeypatch.chdir(here)
    lines, _ = _advise(capsys, *REFERENCE_WORKLOAD, "--results-dir", "results", "--results-dir", str(REFERENCE))
    text = "\n".join(lines)
    assert "Evidence: run mine" in text and "Runs disagree: 1 other run answers this workload otherwise" in text
    assert "Recommendation: writer w00" in text
    assert "run mine (dataset microscopy, 128x512x512; 12 candidates, n=12): picks w00 | lz4 | chunks 64x64x64 | " \
           "shards none, a winner (by more than 5%)" in text
    assert "otherwise: run book-standard-20261127-182342-writers (dataset microscopy, 128x512x512; 9 candidates" \
        in text and "(not preferred: fewer candidates)" in text


def test_runs_that_disagree_are_named_and_the_stronger_one_answers(tmp_path, capsys):
    """A newer run of two candidates picks another writer than an older one of four: the answer rests on the four
    (more candidates), names both; one a winner and another open (the same pick, too few iterations for the rule's
    first look, round 8) is a disagreement too; a run that agrees (a winner too, fewer iterations) is counted; rounds
    outweigh iterations."""
    results = tmp_path / "results"
    full = {"alpha": spread(1.0e-3, 12), "beta": spread(2.0e-3, 12), "gamma": spread(3.0e-3, 12),
            "delta": spread(4.0e-3, 12)}
    write_run(results, "full", full, age_s=300)
    write_run(results, "agrees", {name: values[:8] for name, values in full.items()}, age_s=200)
    write_run(results, "noisy", {"alpha": spread(1.0e-3, 5, 0.4), "beta": spread(1.05e-3, 5, 0.4),
                                 "gamma": spread(3e-3, 5), "delta": spread(4e-3, 5)}, age_s=100)
    write_run(results, "quick", {"beta": spread(0.5e-3, 8), "gamma": spread(3.0e-3, 8)})
    lines, _ = _advise(capsys, *WORKLOAD, "--results-dir", str(results))
    text = "\n".join(lines)
    assert lines[1].startswith("Recommendation: writer alpha") and "Evidence: run full" in text
    head = next(line for line in lines if line.startswith("Runs disagree:"))
    assert "2 other runs answer this workload otherwise; 1 agrees with it" in head
    assert "This answer rests on run full (preferred: your data, then more candidates, then more rounds" in head
    assert "  this answer: run full (dataset labels, 256x256x256; 4 candidates, n=12): picks alpha | lz4 | chunks " \
           "64x64x64 | shards none, a winner (by more than 5%)" in lines
    assert "  otherwise: run quick (dataset labels, 256x256x256; 2 candidates, n=8): picks beta | lz4 | chunks " \
           "64x64x64 | shards none, a winner (by more than 5%) (not preferred: fewer candidates)" in lines
    assert "  otherwise: run noisy (dataset labels, 256x256x256; 4 candidates, n=5): picks alpha | lz4 | chunks " \
           "64x64x64 | shards none, open (not preferred: fewer iterations)" in lines
    assert "agrees" not in text.replace("1 agrees with it", "")
    # the same candidates in rounds: the rounds outweigh the iterations, and the reason says so
    write_run(results, "paired", {"alpha": spread(1.5e-3, 16), "beta": spread(1.0e-3, 16), "gamma": spread(3e-3, 16),
                                  "delta": spread(4e-3, 16)}, rounds=True, age_s=400)
    lines, _ = _advise(capsys, *WORKLOAD, "--results-dir", str(results))
    text = "\n".join(lines)
    assert "Evidence: run paired" in text and "(not preferred: fewer rounds)" in text
    assert "run paired (dataset labels, 256x256x256; 4 candidates, n=16, 16 rounds): picks beta" in text


def test_not_covered_names_the_nearest_measured_case_and_how_it_differs(tmp_path, capsys):
    """No run measured the workload: the answer counts the runs read in each directory, names the nearest case (the
    same dtype before another cutout size before another dtype) and what differs, and never reads as if a run had
    the rows."""
    results, empty = tmp_path / "results", tmp_path / "empty"
    empty.mkdir()
    write_run(results, "other-dtype", {"alpha": spread(1e-3, 5)}, dtype="uint8", cutout=64, age_s=10)
    write_run(results, "other-size", {"alpha": spread(1e-3, 5)}, cutout=32)
    lines, _ = _advise(capsys, "--shape", "256,256,256", "--dtype", "uint16", "--access", "cutout:64,64,64",
                       "--results-dir", str(results), "--results-dir", str(empty))
    assert lines[0] == (f"Not covered: none of the 2 writers runs read (2 in {results}, 0 in {empty}) measured "
                        "cutouts of 64x64x64 of uint16")
    assert lines[1] == (f"  nearest measured: cutouts of 32x32x32 of uint16, dataset labels 256x256x256, run "
                        f"other-size in {results}; it differs in: cutouts of 32x32x32, not 64x64x64")
    assert lines[-1].startswith("  measure it on your data: ") and len(lines) == 3
    # writes: the fsync policy and the array's shape are named where they differ; the reference's writes are uint16
    lines, _ = _advise(capsys, "--shape", "512,512,512", "--dtype", "uint8", "--access", "write", "--no-fsync",
                       "--results-dir", str(REFERENCE))
    assert lines[0] == "Not covered: none of the 1 writers run read (1 in reference) measured writes of uint8 " \
                       "without fsync"
    assert "nearest measured: writes of uint16 with fsync, dataset microscopy " in lines[1]
    assert "it differs in: dtype uint16, not uint8; array " in lines[1] and "with fsync, not without" in lines[1]
    # nothing of the operation anywhere
    lines, _ = _advise(capsys, *WORKLOAD, "--results-dir", str(empty))
    assert lines[0].startswith("Not covered: none of the 0 writers runs read (0 in ")
    assert lines[1] == "  nearest measured: nothing; none of them holds rows of read_region_cold"


def test_a_hostile_run_is_shown_as_data(tmp_path, capsys):
    """Every string a results directory holds (a writer's name, a dataset, a run id) is shown escaped: no escape
    sequence or line break of theirs reaches the terminal, in the disagreement lines and the nearest case alike."""
    results = tmp_path / "results"
    evil = "\x1b[2J\x1b]8;;http://x\x07w\nFAKE: line\u202e"
    write_run(results, "good", {"alpha": spread(1e-3, 8), "beta": spread(2e-3, 8), "gamma": spread(3e-3, 8)},
              age_s=10)
    write_run(results, "evil\x1b[31m", {evil: spread(0.5e-3, 5), "beta": spread(2e-3, 5)}, dataset=evil)
    lines, _ = _advise(capsys, *WORKLOAD, "--results-dir", str(results))
    text = "\n".join(lines)
    assert "Runs disagree" in text and "\\x1b[2J" in text and "\\nFAKE: line\\u202e" in text
    assert "\x1b" not in text and "\u202e" not in text and not any(line.startswith("FAKE") for line in lines)
    lines, _ = _advise(capsys, "--shape", "256,256,256", "--dtype", "uint8", "--access", "cutout:32,32,32",
                       "--results-dir", str(results))
    text = "\n".join(lines)
    assert lines[0].startswith("Not covered:") and "\x1b" not in text and "\u202e" not in text


@pytest.mark.parametrize("shape, cutout, measured", [
    ((256, 256, 256), 32, (32, 32, 32)),
    ((8, 256, 256), 64, (8, 64, 64)),  # a thin stack's cutouts are clipped to its planes
    ((512, 512), 64, (64, 64)),
    ((256, 256, 256), None, None),
])
def test_the_cutout_a_row_read(shape, cutout, measured):
    from benchmarks_lib.advise.evidence import measured_cutout

    assert measured_cutout(cutout, shape) == measured
