"""Real data beside its synthetic twin: pyvista's packaged volumes named ``example:NAME`` (found without importing
pyvista), bad names refused in one line, a small compression run of both examples beside their twins (same dtype,
shape and chunks, verified, the files untouched, no directory recorded), and the chapter's section on it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.chapters import compression
from benchmarks_lib.cli.main import main
from benchmarks_lib.data.examples import EXAMPLES, Example, example_path
from benchmarks_lib.inputs.user_data import parse_dataset
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites import CaseContext
from benchmarks_lib.suites.compression import PROFILES, SUITE, build_cases
from benchmarks_lib.suites.kit.twins import parse_real_datasets

pytest.importorskip("pyvista")
pytest.importorskip("numcodecs")
SMALL = {"mesh_backends": [], "array_backends": [],
         "real_datasets": ["example:frog_tissues", "labels=example:channels"], "real_codecs": ["lz4", "zstd:3"],
         "dims": "z:8:4,y:64:32,x:64:32", "iterations": 5}


def _state(path: Path) -> tuple[str, int]:
    return hashlib.blake2b(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def test_examples_are_pyvistas_own_files_found_without_importing_it():
    from pyvista import examples

    assert example_path("example:frog_tissues") == Path(examples.frogtissuesfile)
    assert example_path("example:channels") == Path(examples.channelsfile)
    label, spec = parse_dataset("example:frog_tissues")
    assert label == spec.label == spec.source == "example:frog_tissues"
    assert (spec.source_shape, spec.dtype, spec.inner_read) == ((136, 470, 500), "uint8", "MetaImage")
    spec = parse_dataset("example:channels")[1]
    assert (spec.source_shape, spec.dtype, spec.inner_read) == ((100, 250, 250), "int64", "facies")
    code = ("import sys; from benchmarks_lib.data.examples import example_path; example_path('example:channels'); "
            "assert 'pyvista' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize("value", ["example:nope", "example:", "example:frog_tissues@0:0:0"])
def test_an_unknown_example_is_refused_naming_it_and_the_allowed(value: str):
    with pytest.raises(SpecError) as info:
        parse_dataset(value)
    message = str(info.value)
    assert repr(value) in message and "allowed" in message and "example:frog_tissues, example:channels" in message
    assert "\n" not in message


@pytest.mark.parametrize("args, says", [
    (["compression", "--param", 'real_datasets=["example:nope"]'], "'example:nope' is unknown; allowed examples"),
    (["compression", "--param", 'real_datasets=["file:seg.zarr"]'], "names no synthetic twin; give KIND=file:"),
    (["compression", "--param", 'real_datasets=["labels"]'], "'labels' is not real data"),
    (["writers", "--dataset", "example:nope"], "allowed examples: example:frog_tissues"),
])
def test_bad_real_data_is_one_line_exit_2_and_creates_nothing(workdir, capsys, args, says):
    assert main(["run", *args, "--profile", "quick", "--results-dir", "results"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err
    assert not (workdir / "results").exists() and not (workdir / "scratch").exists()


def test_a_missing_package_is_refused_when_named_and_a_skip_row_by_default(monkeypatch, tmp_path):
    from benchmarks_lib.base.scratch import create_marked_dir

    monkeypatch.setitem(EXAMPLES, "ghost", Example("iobench_no_such_package", "ghost.vti", "x", "labels", "absent",
                                                   "pip install ghost"))
    with pytest.raises(SpecError, match="needs iobench_no_such_package, which is not installed: pip install ghost"):
        parse_real_datasets(["example:ghost"])
    monkeypatch.setitem(PROFILES["quick"], "real_datasets", ["example:ghost"])  # a profile's default
    [case] = build_cases({**SMALL, "real_datasets": None}, "quick")
    rows = SUITE.run_case(case, CaseContext(scratch=create_marked_dir(tmp_path / "s"), iterations=1, warmups=0,
                                            profile="quick"))
    assert {r["status"] for r in rows} == {"skip"} and {r["dataset"] for r in rows} == {
        "example:ghost", "labels twin of example:ghost"}
    assert all("pip install ghost" in r["reason"] for r in rows)


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory):
    """Both examples beside their twins, in memory, at a small crop; the files' bytes and mtimes before and after."""
    files = [example_path("example:frog_tissues"), example_path("example:channels")]
    before = [_state(f) for f in files]
    results = tmp_path_factory.mktemp("pairs")
    result = run_suite("compression", SMALL, results_dir=results / "r", scratch_dir=results / "s", run_id="pairs",
                       ceiling=False, progress=None, assume_yes=True)
    return result, files, before, [_state(f) for f in files]


def test_real_data_and_its_twin_share_dtype_shape_and_chunks(pair_run):
    result, files, before, after = pair_run
    df = result.df
    assert (df["status"] == "ok").all() and df["verified"].all(), df[["dataset", "reason"]]
    assert set(df["pair_role"]) == {"real", "synthetic twin"} and set(df["pair_kind"]) == {"labels"}
    for real, dtype in (("example:frog_tissues", "uint8"), ("example:channels", "int64")):
        rows = df[df["pair_of"] == real]
        assert set(rows["dataset"]) == {real, f"labels twin of {real}"} and set(rows["dtype"]) == {dtype}
        assert {tuple(s) for s in rows["shape"]} == {(8, 64, 64)}
        assert {tuple(c) for c in rows["chunks"]} == {(4, 32, 32)}
        assert set(rows["codec"]) == {"lz4", "zstd:3"} and (rows["compression_ratio"] > 1).all()
        assert set(rows[rows["pair_role"] == "real"]["source"]) == {real}
    assert after == before  # pyvista's files are read, never written
    folder = str(files[0].parent)
    assert not any(folder in str(v) for v in df.astype(str).to_numpy().ravel())
    assert folder not in (result.run_dir / "run.json").read_text()
    assert json.loads((result.run_dir / "run.json").read_text())["params"]["real_datasets"] == SMALL["real_datasets"]


def test_the_chapter_sets_real_data_beside_synthetic(pair_run):
    df = pair_run[0].df
    table = compression.pairs_table(df)
    assert len(table) == 4 and set(table["real data"]) == {"example:frog_tissues", "example:channels"}
    assert set(table["twin"]) == {"labels"} and set(table["dtype"]) == {"uint8", "int64"}
    assert set(table["shape"]) == {"8x64x64"} and (table["n"] == 5).all()
    assert (table["twin / real"] == table["ratio twin"] / table["ratio real"]).all()
    text = compression.pairs_answer(df)
    assert "example:frog\\_tissues (uint8, 8x64x64)" in text and "example:channels (int64, 8x64x64)" in text
    assert text.count("**yes**") + text.count("**no**") == 2 and "`zstd:3`" in text
    fig = compression.pairs_figure(df)
    assert len(fig.axes) == 2 and fig.axes[0].get_title().startswith("example:channels")
    assert compression.summarize_points(compression.without_pairs(df)).empty  # not in the Pareto panels
    problems = compression.problems(df)  # their speeds last a few ms: said once, not a table of short points
    assert "The 8 in-memory points of \"Real data beside synthetic\"" in problems and "lasted under" not in problems


def _pair_frame(real: str, ratios: dict[str, tuple[float, float]]) -> pd.DataFrame:
    rows = []
    for codec, (ratio_real, ratio_twin) in ratios.items():
        for role, dataset, ratio in (("real", real, ratio_real), ("synthetic twin", f"labels twin of {real}",
                                                                   ratio_twin)):
            rows += [{"suite": "compression", "backend": "numcodecs", "operation": op, "iteration": i,
                      "status": "ok", "dataset": dataset, "codec": codec, "nbytes": 10**6, "elapsed_s": 0.01,
                      "compression_ratio": ratio, "verified": True, "dtype": "uint8", "shape": [1, 10, 10],
                      "pair_of": real, "pair_role": role, "pair_kind": "labels"}
                     for op in ("encode", "decode") for i in range(5)]
    return pd.DataFrame(rows)


def test_the_rule_and_every_record_string_escaped():
    hostile = "<b>seg</b>*[x](y)"
    df = pd.concat([_pair_frame(hostile, {"lz4": (30, 5), "zstd:3": (100, 20)}),
                    _pair_frame("example:channels", {"lz4": (30, 24), "zstd:3": (90, 63)})])
    text = compression.pairs_answer(df)
    assert "<b>" not in text and "\\<b\\>seg\\</b\\>\\*\\[x\\]\\(y\\)" in text
    assert "**no**, synthetic `labels` compresses 5-6x less" in text
    assert "**yes**, synthetic `labels` compresses 1.25-1.43x less" in text
    assert "<b>seg" not in compression.pairs_table(df)._repr_html_()


def test_a_run_without_pairs_says_why():
    assert "no real_datasets in this run" in compression.pairs_answer(pd.DataFrame({"status": ["ok"]}))
    skip = pd.DataFrame([{"status": "skip", "reason": "needs pyvista", "pair_of": "example:channels",
                          "operation": "encode", "backend": "numcodecs"}])
    assert "needs pyvista" in compression.pairs_answer(skip)
    assert len(compression.pairs_table(skip)) == 0
