"""The book's advise page (``notebooks/advise.ipynb``): the command's answer, word for word, from a small recorded
writers run; its table and trade-off figure; bad parameters as one line naming the parameter; a hostile record
string escaped on the page; and the papermill route, measuring a tiny file within a short budget."""

from __future__ import annotations

import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest
from test_book_untrusted import UNSAFE, _render, _unsafe, payload

from benchmarks_lib.advise.command import advise
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.chapters import advise as advise_page
from benchmarks_lib.chapters.style import plt
from benchmarks_lib.records.store import load_run, run_dirs, write_atomic_parquet, write_json_atomic
from benchmarks_lib.run.runner import run_suite

ROOT = Path(__file__).resolve().parent.parent
#: the tiny workload the recorded run answers: the sharding test's labels cube and its cutouts
WORKLOAD = {"shape": "32,32,32", "dtype": "uint32", "access": "cutout:8,8,8"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A small recorded writers run (its sharding test on the labels cube, 32^3), as the quick run records one:
    its results directory."""
    base = tmp_path_factory.mktemp("advise-page")
    run_suite("writers", {"backends": ["zarr-python", "tensorstore"], "tests": ["sharding"],
                          "shard_datasets": ["labels"], "shard_volume": 32, "shard": 32, "inner_chunks": [16],
                          "cutout": 8, "cutout_positions": 2, "iterations": 2, "warmups": 0},
              results_dir=base / "results", run_id="page-recorded", scratch_dir=base / "scratch", ceiling=False,
              progress=None)
    return base / "results"


@pytest.fixture(scope="module")
def poisoned(recorded, tmp_path_factory) -> Path:
    """The recorded run with a payload in its backend and dataset labels (script, HTML, Markdown, MyST)."""
    dest = tmp_path_factory.mktemp("advise-poisoned") / "results"
    source = run_dirs(recorded)[0]
    df, meta = load_run(source)
    df = df.assign(backend=df["backend"].astype(str) + payload(20), dataset=df["dataset"].astype(str) + payload(8))
    target = dest / source.parent.name / source.name
    (target / "records").mkdir(parents=True)
    write_atomic_parquet(df, target / "records" / "all.parquet")
    write_json_atomic(meta, target / "run.json")
    return dest


def test_the_page_shows_the_commands_answer_word_for_word(recorded):
    page = advise_page.page(**WORKLOAD, results_dir=str(recorded), other_dirs=[])
    args = Namespace(like=None, shape="32,32,32", dtype="uint32", access="cutout:8,8,8", fsync=True, threads=None,
                     budget="3m", results_dir=[str(recorded)], measure=False, run_id=None, scratch_dir=None)
    assert page.answer.lines == advise(args)  # one implementation: the command's lines are the page's
    text = page.answer_markdown()
    assert "**Workload:** 32x32x32 uint32, cutouts of 8x8x8, fsync" in text and "- recommended: " in text
    assert "**The evidence is synthetic data** (dataset labels)" in page.header()
    frame = page.candidates()
    assert len(frame) >= 4 and frame["recommended"].tolist() == [True] + [False] * (len(frame) - 1)
    assert set(frame["shards"]) == {"none", "32^3"} and (frame["files"] >= 1).all() and (frame["ratio"] > 1).all()
    table = page.table()
    assert list(table["writer"]) == list(frame["writer"]) and "median (ms)" in table and "ratio" in table
    assert (table["separable"].iloc[1:] == "too few iterations").all()  # n=2: the rule says so
    fig = page.figure()
    fig.canvas.draw()
    assert "files on disk" in fig.axes[0].get_ylabel()
    plt.close(fig)


def test_a_workload_no_run_covers_says_so(recorded):
    page = advise_page.page(shape="32,32,32", dtype="uint32", access="write", results_dir=str(recorded),
                            other_dirs=[])
    assert page.answer.evidence is None and page.answer.lines[0].startswith("Not covered:")
    assert "No recorded run covers this workload" in page.header() and page.candidates().empty
    fig = page.figure()  # a figure that says so, no empty axes
    assert "no recorded run covers" in fig.axes[0].texts[0].get_text()


@pytest.mark.parametrize("given, says", [
    ({"access": "scan"}, "ACCESS 'scan' is unknown"),
    ({"access": "cutout:8,8"}, "ACCESS cutout:8,8 has 2 sizes"),
    ({"access": None}, "ACCESS None is not allowed"),
    ({"like": "x.npy"}, "give LIKE PATH or SHAPE with DTYPE, not both"),
    ({"shape": "8,8,8", "dtype": None}, "give the workload's data: LIKE PATH, or SHAPE 512,512,512 with DTYPE uint16"),
    ({"shape": {"z": 8}}, "SHAPE {'z': 8} is not allowed"),
    ({"fsync": "no"}, "FSYNC 'no' must be true or false"),
    ({"measure": 1}, "MEASURE 1 must be true or false"),
    ({"budget": "3x"}, "BUDGET '3x' is not a time"),
    ({"threads": 0}, "THREADS"),
    ({"run_id": "mine"}, "MEASURE_RUN_ID 'mine' names the run MEASURE True makes"),
    ({"measure": True, "run_id": "../up"}, "run id '../up' is not allowed"),
    ({"other_dirs": ["/nonexistent-h2"]}, "/nonexistent-h2"),
])
def test_a_bad_parameter_is_one_line_naming_it(given, says, tmp_path):
    with pytest.raises(SpecError) as caught:
        advise_page.page(**{**WORKLOAD, "results_dir": str(tmp_path), **given})
    message = str(caught.value)
    assert says in message and "\n" not in message and "--" not in message, message


def test_measure_needs_a_file(tmp_path):
    with pytest.raises(SpecError, match="MEASURE True measures your data: give LIKE PATH"):
        advise_page.page(**WORKLOAD, measure=True, budget="60s", results_dir=str(tmp_path), other_dirs=[])


def test_hostile_record_strings_are_escaped_on_the_page(poisoned):
    page = advise_page.page(**WORKLOAD, results_dir=str(poisoned), other_dirs=[])
    for text in (page.header(), page.answer_markdown()):
        html = _render(text)
        assert not _unsafe(html), _unsafe(html)
    assert "alert(20)" in _render(page.answer_markdown())  # shown as text, not dropped
    table = page.table()._repr_html_()
    assert "&lt;script&gt;alert(20)" in table and not UNSAFE["element"].search(table)  # quotes in text are text
    fig = page.figure()  # names in a figure never reach mathtext
    fig.canvas.draw()
    plt.close(fig)


def _papermill(*args: str) -> subprocess.CompletedProcess:
    papermill = Path(sys.executable).parent / "papermill"
    return subprocess.run([str(papermill), str(ROOT / "notebooks" / "advise.ipynb"), *args, "-k", "python3",
                           "--cwd", str(ROOT), "--no-progress-bar"], capture_output=True, text=True, timeout=600)


def _outputs(path: Path) -> list[dict]:
    return [o for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", [])]


@pytest.mark.slow
def test_the_notebook_renders_from_a_recorded_run_and_escapes_it(poisoned, tmp_path):
    out = tmp_path / "advise.ipynb"
    done = _papermill(str(out), "-p", "SHAPE", "32,32,32", "-p", "DTYPE", "uint32", "-p", "ACCESS", "cutout:8,8,8",
                      "-p", "RESULTS_DIR", str(poisoned), "-p", "OTHER_DIRS", "[]")
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = _outputs(out)
    markdown = "\n\n".join("".join(o["data"]["text/markdown"]) for o in outputs if "text/markdown" in o.get("data", {}))
    assert "**Workload:** 32x32x32 uint32" in markdown and "`'cutout:8,8,8'`" in markdown  # text, not a list
    html = "".join("".join(o["data"]["text/html"]) for o in outputs if "text/html" in o.get("data", {}))
    assert not _unsafe(_render(markdown)) and not UNSAFE["element"].search(html) and "alert(20)" in html
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 1

    bad = _papermill(str(tmp_path / "bad.ipynb"), "-p", "ACCESS", "scan", "-p", "RESULTS_DIR", str(poisoned))
    assert bad.returncode != 0
    errors = [o for o in _outputs(tmp_path / "bad.ipynb") if o.get("output_type") == "error"]
    assert [e["traceback"] for e in errors] == [[f"SpecError: {errors[0]['evalue']}"]]  # one line, no traceback
    assert errors[0]["evalue"].startswith("ACCESS 'scan' is unknown")


@pytest.mark.slow
def test_papermill_measures_the_file_within_its_budget(tmp_path, monkeypatch):
    """``papermill notebooks/advise.ipynb out.ipynb -p LIKE FILE -p ACCESS cutout:... -p MEASURE True -p BUDGET ...``:
    the writers suite runs on the file in a run of its own, and the page answers from it (your data)."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "tiny.npy", (rng.integers(0, 4, (24, 24, 24)) * 40).astype("uint16"))
    monkeypatch.setenv("IOBENCH_SCRATCH", str(tmp_path / "scratch"))
    out = tmp_path / "advise.ipynb"
    done = _papermill(str(out), "-p", "LIKE", str(tmp_path / "tiny.npy"), "-p", "ACCESS", "cutout:8,8,8", "-p",
                      "MEASURE", "True", "-p", "BUDGET", "60s", "-p", "RESULTS_DIR", str(tmp_path / "results"),
                      "-p", "MEASURE_RUN_ID", "page-tiny")
    assert done.returncode == 0, done.stderr[-3000:]
    markdown = "\n".join("".join(o["data"]["text/markdown"]) for o in _outputs(out)
                         if "text/markdown" in o.get("data", {}))
    assert "Measured for this page within a budget of 60 s" in markdown and "synthetic" not in markdown
    assert "**plan:** about" in markdown and "**Evidence:** run page-tiny" in markdown
    assert list((tmp_path / "results").glob("*/page-tiny/run.json"))


def test_a_remote_answer_names_how_each_candidate_reads(tmp_path):
    """Remote candidates differ in how they read (protocol, client cache, requests at once) as well as in writer,
    codec and layout: the table says so, from the committed reference's cache run."""
    from benchmarks_lib.base.paths import REFERENCE

    found = advise_page.page(shape="128,512,512", dtype="uint16", access="remote-cutout:48,192,192@10ms",
                             results_dir=str(tmp_path), other_dirs=[str(REFERENCE)])
    frame = found.candidates()
    assert len(frame) > 1 and (frame["reads"] != "").all()
    assert "reads" in found.table().columns
    assert "Answered from the runs recorded in" in found.header()
    plt.close(found.figure())
