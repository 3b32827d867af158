"""The command line, end to end at tiny sizes."""

import json
import shutil

import pandas as pd
import pytest

from benchmarks_lib.cli.main import main
from benchmarks_lib.records.store import run_dirs

TINY = ["-d", "t:2,y:32:16,x:48", "--iterations", "2", "--warmups", "1", "--param", "multipliers=[1,2]",
        "--test", "write", "--test", "read", "--param", 'read_dims="z:8:4,y:32:16,x:32:16"', "--param", "cutout=8",
        "--param", "cutout_positions=1"]


def test_every_help_renders(capsys):
    """argparse formats help strings with %: a stray percent sign crashes --help."""
    from benchmarks_lib.cli.main import build_parser
    sub = next(a for a in build_parser()._actions if a.choices)
    for argv in [[], *([name] for name in sub.choices)]:
        with pytest.raises(SystemExit) as exit_:
            main([*argv, "--help"])
        assert exit_.value.code == 0, argv
    assert "usage: iobench" in capsys.readouterr().out


def test_backends_lists_every_writer_with_status(capsys):
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    for name in ("raw", "zarr-python", "tensorstore", "acquire-zarr", "ome-writers", "wkw", "h5py", "zarrs"):
        assert name in out


def test_run_show_compare_export(workdir, capsys):
    argv = ["run", "writers", *TINY, "-b", "zarr-python", "-b", "raw", "--codec", "lz4", "--results-dir", "results"]
    assert main([*argv, "--run-id", "a"]) == 0
    out = capsys.readouterr().out
    for metric in ("create (ms, median [95% CI])", "bandwidth", "% of raw write ceiling", "peak-memory ratio",
                   "threads", "MB on disk", "inodes", "Ceiling"):
        assert metric in out
    assert main([*argv, "--run-id", "b"]) == 0
    runs = {d.name for d in run_dirs("results")}
    assert runs == {"a", "b"}
    capsys.readouterr()
    assert main(["show", "a", "--results-dir", "results"]) == 0
    assert "zarr-python" in capsys.readouterr().out
    assert main(["compare", "a", "b", "--results-dir", "results"]) == 0
    assert "ratio" in capsys.readouterr().out
    assert main(["export", "a", "--results-dir", "results", "-o", "a.csv"]) == 0
    csv = pd.read_csv("a.csv")
    assert {"zarr-python", "raw", "ceiling"} <= set(csv["backend"])
    # raw never compresses; zarr-python used lz4 and was verified by another library
    zp = csv[(csv["backend"] == "zarr-python") & (csv["operation"] == "total")]
    assert (zp["codec"] == "lz4").all() and zp["verified"].all()
    assert (csv[(csv["backend"] == "raw") & (csv["operation"] == "total")]["codec"] == "none").all()
    meta = json.loads(next(d for d in run_dirs("results") if d.name == "a").joinpath("run.json").read_text())
    assert meta["params"]["codec"] == "lz4" and meta["environment"]["cpu_count"] >= 1
    # pack: the run into another results directory (as reference/ holds runs), one parquet file, same rows
    assert main(["pack", "a", "packed", "--results-dir", "results"]) == 0
    packed = run_dirs("packed")[0]
    assert [p.name for p in (packed / "records").iterdir()] == ["all.parquet"]
    from benchmarks_lib.records.store import load_run

    original, _ = load_run(next(d for d in run_dirs("results") if d.name == "a"))
    again, meta_again = load_run(packed)
    assert len(again) == len(original) and meta_again["run_id"] == "a"
    stamp = (packed / "run.json").stat().st_mtime_ns
    capsys.readouterr()
    assert main(["pack", "a", "packed", "--results-dir", "results"]) == 2  # never written over
    assert "exists" in capsys.readouterr().err and (packed / "run.json").stat().st_mtime_ns == stamp


def test_fio_cross_check(workdir):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (apt-get install fio)")
    from benchmarks_lib.rules.ceilings import ceiling_gbps
    from benchmarks_lib.run.runner import run_suite
    from benchmarks_lib.suites.ceiling import run_fio

    size = 64 * 2**20
    ours = run_suite("ceiling", {"nbytes": size, "iterations": 3, "warmups": 1}, results_dir="results",
                     progress=None)
    table = ceiling_gbps(ours.df)
    (workdir / "fio").mkdir()
    fio = run_fio(workdir / "fio", size)
    for op in ("write_fsync", "read_cold"):
        ratio = table[op] / fio[op]
        print(f"{op}: iobench {table[op]:.3f} GB/s, fio {fio[op]:.3f} GB/s, ratio {ratio:.2f}")
        # a units check, not a timing assertion: a unit slip is a factor of 1000; a busy disk moved one side 5.7x
        assert 0.02 < ratio < 50


def test_ome_writers_crosscheck_reports_both_timings(workdir):
    pytest.importorskip("ome_writers")
    from benchmarks_lib.run.crosscheck import ome_writers_crosscheck

    table = ome_writers_crosscheck(["zarr-python"], dims="t:4:1,y:64:32,x:64:32", warmups=0, iterations=2,
                                   results_dir="results")
    assert list(table["backend"]) == ["ome-writers:zarr-python"]
    assert (table[["ours_gbps", "theirs_gbps"]] > 0).all().all()


@pytest.mark.parametrize("terminal", [False, True])
def test_progress_shows_a_message_as_text(capsys, monkeypatch, terminal):
    """Progress lines (plain in a log, a rich bar on a terminal) never read a message as markup or send its escapes."""
    import io
    import sys

    from rich.console import Console

    from benchmarks_lib.cli import common as cli

    out = io.StringIO()
    monkeypatch.setattr(cli, "err", Console(file=out, force_terminal=True, width=200))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    with cli.progress_reporter() as progress:
        progress(1, 2, "writers [link=https://evil]x[/link] \x1b[2J: error", True)
    shown = out.getvalue() if terminal else capsys.readouterr().err
    assert "[link=https://evil]x[/link] \\x1b[2J" in shown
    assert "\x1b]" not in shown and "\x1b[2J" not in shown


def test_ceiling_fio_at_a_size_below_fios_block(workdir, capsys):
    """`ceiling --fio --size 4MiB` once failed with a traceback (fio's 8 MiB block exceeds the size)."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (apt-get install fio)")
    from benchmarks_lib.cli.main import main

    assert main(["ceiling", "--fio", "--size", "4MiB", "--iterations", "1"]) == 0
    out = capsys.readouterr().out
    assert "write_fsync: iobench" in out and "read_cold: iobench" in out and "fio" in out


def test_the_machine_records_roots_own_release():
    pytest.importorskip("ROOT")
    from benchmarks_lib.adapters import tracked_packages
    from benchmarks_lib.base.environment import collect_versions

    versions = collect_versions(tracked_packages())
    assert versions["version_root"].startswith("6.") and versions["version_root_pip"] != versions["version_root"]
    assert "version_blosc2" not in versions  # not a dependency: no empty row on the machine page
