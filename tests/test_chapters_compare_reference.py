"""The compare chapter beside the reference machine: a lone run of a suite (the usual quick book) is set beside the
committed reference run of that suite case by case, two samples from two machines, labelled as such; the front
page's like-for-like tables link to the section listing those cases; case labels are words, no path of the
reader's machine is shown, and record strings are escaped.

The run here is real: the compression suite's in-memory codecs on the synthetic microscopy volume at the reference's
size and threads, two codecs (a few seconds), so that its cases are cases of the committed standard run."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_book_untrusted import UNSAFE, _render, _unsafe, payload

from benchmarks_lib.book.frontpage import anchor, comparison
from benchmarks_lib.book.pages import BESIDE, write_answers_page
from benchmarks_lib.chapters import compare
from benchmarks_lib.records.store import load_run, newest_runs, write_atomic_parquet, write_json_atomic
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites import get_suite

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference"
#: a key dump: a column name with its raw value ("bandwidth_bytes_s 50000000", "client_cache False"), a "k=v" pair,
#: or a Python constant in words
KEY_DUMP = re.compile(r"\b[a-z]+_[a-z_]+[ =](?:\d|True|False|None)|\b\w+=\S|\b(?:True|False|None|nan)\b")
#: an absolute path of a machine (the checkout, a temporary directory, a home)
ABSOLUTE = re.compile(r"(?<![\w.:/])/(?:tmp|home|work|root|Users|var|private|mnt)/")


@pytest.fixture(scope="module")
def mine(tmp_path_factory) -> Path:
    """A results directory with one real compression run: cases the reference measured too."""
    base = tmp_path_factory.mktemp("beside")
    params = {**get_suite("compression").profiles["standard"], "mesh_backends": [], "array_backends": ["numcodecs"],
              "datasets": ["microscopy"], "real_datasets": [], "codecs": ["lz4", "zstd:1"],
              "real_codecs": ["lz4", "zstd:1"], "threads": 2, "iterations": 6, "warmups": 1}
    # its 6 rounds whatever the load (the quick profile's 31 s held 2 of them beside a fresh clone's make test)
    run_suite("compression", params, profile="quick", results_dir=base / "results", scratch_dir=base / "scratch",
              run_id="mine", ceiling=False, progress=None, assume_yes=True, budget=3600)
    return base / "results"


def test_a_lone_run_is_set_beside_the_reference_machine_case_by_case(mine: Path):
    assert compare.resolve_runs(None, mine) == []  # no earlier run of its own: today's chapter had nothing
    pairs = compare.reference_pairs(mine)
    assert [(ref.parent.parent, here.name) for ref, here in pairs] == [(REFERENCE, "mine")]
    [c] = compare.compare_reference(pairs)
    ref_meta = load_run(pairs[0][0])[1]
    assert c.across == f"{ref_meta['environment']['cpu_model']}, {ref_meta['environment']['cpu_affinity']} usable cores"
    assert c.title == f"compression: this machine against the reference machine ({c.across})"
    matched = c.matched()
    assert len(matched) == 4  # 2 codecs x encode/decode, every one a case of the reference's standard run
    assert (matched["n A"] >= 5).all() and matched["n B"].between(5, 6).all() and matched["B/A time"].notna().all()
    assert not c.flagged()["verdict"].isin([*compare.ONE_SIDE, compare.TOO_FEW]).any()  # counted, or listed in full
    counts = c.counts()
    assert counts.startswith("4 case(s) measured on both machines: ")
    assert re.search(r"not compared: \d+ case\(s\) only the reference machine measured and 0 only this", counts)
    head = compare.header([], mine, pairs)
    assert f"**This machine against the reference machine ({c.across})**" in head and "`reference/`" in head
    assert "**Two machines**" in head and "part of every ratio" in head and "no row of one run is paired" in head
    assert "Nothing to compare" not in head
    # the published book, drawn from the reference itself, says why it compares nothing (no earlier reference kept)
    drawn = compare.header([], REFERENCE, [])
    assert drawn.startswith("**Nothing to compare**: this book is drawn from the reference run itself"), drawn
    assert "this book is drawn" not in compare.header([], mine, [])
    assert "across machines" in compare.environment_markdown(c)
    fig = compare.ratio_figure(c)
    assert "reference machine" in fig.axes[0].get_xlabel()
    assert compare.reference_pairs(mine, "") == []  # REFERENCE_DIR "": none
    assert compare.reference_pairs(REFERENCE) == []  # a book drawn from the reference has nothing to set beside it


def _outputs(nb: dict) -> str:
    """Every Markdown and HTML output of an executed notebook (stderr is not shown in the book)."""
    return "\n".join("".join(o.get("data", {}).get(kind, "")) for c in nb["cells"] for o in c.get("outputs", [])
                     for kind in ("text/markdown", "text/html"))


@pytest.mark.slow
def test_the_compare_chapter_of_a_lone_run_is_the_run_against_the_reference_machine(mine: Path, tmp_path: Path):
    papermill = Path(sys.executable).parent / "papermill"
    out = tmp_path / "compare.ipynb"
    done = subprocess.run([str(papermill), str(ROOT / "notebooks" / "compare.ipynb"), str(out), "-p", "RESULTS_DIR",
                           str(mine), "-k", "python3", "--cwd", str(ROOT), "--no-progress-bar"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    nb = json.loads(out.read_text())
    text = _outputs(nb)
    assert "Nothing to compare" not in text
    assert "this machine against the reference machine (AMD EPYC" in text and "Two machines" in text
    assert text.count("numcodecs</td>") >= 4  # every matched case listed (and the changed ones among them flagged)
    assert "image/png" in json.dumps(nb)
    cells = [cell for table in re.findall(r"<table.*?</table>", text, re.S) if "<th>case</th>" in table
             for cell in re.findall(r"<td>(.*?)</td>", table, re.S)]  # the case tables (the first part of each)
    assert "dataset microscopy, lz4, 134 MB, 2 threads" in cells
    assert not [c for c in cells if KEY_DUMP.search(c)], cells
    assert not ABSOLUTE.search(text), ABSOLUTE.search(text)
    assert str(mine) not in text and str(ROOT) not in text
    headings = [line for c in nb["cells"] if c["cell_type"] == "markdown" for line in "".join(c["source"]).splitlines()
                if line.startswith("## ")]
    assert f"## {compare.MATCHED_SECTION}" in headings


def test_the_front_pages_more_cases_link_to_the_section_that_lists_them(tmp_path: Path):
    """The reference's writers, threads and cache runs as this machine's (real rows): each "N more case(s)" of the
    beside page links to the compare chapter's section, which lists more than those cases for that suite (a case
    there is one contender's); the page names cases in words, never a key dump."""
    results = tmp_path / "results"
    newest = newest_runs(REFERENCE)
    ids = {suite: newest[suite].name for suite in ("writers", "threads", "cache")}
    for suite in ids:
        shutil.copytree(newest[suite], results / "here" / newest[suite].name)
    write_answers_page(ROOT, results, tmp_path, ids, reference=REFERENCE)
    page = (tmp_path / f"{BESIDE}.md").read_text()
    link = f"compare.ipynb#{anchor(compare.MATCHED_SECTION)}"
    listed = {c.suite: len(c.matched()) for c in compare.compare_reference(compare.reference_pairs(results))}
    for suite in ids:
        df = load_run(newest[suite])[0]
        table = comparison(df, df, suite, link)
        more = re.search(rf"\[(\d+) more case\(s\)\]\({re.escape(link)}\) both runs measured", table)
        assert more and more[0] in page, (suite, table[-400:])
        assert listed[suite] > int(more[1]), (suite, listed[suite], more[1])
    rows = [line.split(" | ")[0] for line in page.splitlines() if line.startswith("| ") and "question" not in line]
    assert len(rows) >= 3 and not [r for r in rows if KEY_DUMP.search(r.replace("\\_", "_"))], rows
    assert "50 MB/s" in page and "no client cache" in page  # the cache's case, in words
    assert not ABSOLUTE.search(page)
    # the same runs on both sides: every answer the front page states, beside the reference's, is the same one
    front = (tmp_path / "answers.md").read_text()
    said = re.search(r"\*\*Beside the reference machine:\*\* (\d+) of (\d+) answers the same; 0 differ where both "
                     r"machines decided \(so the machines differ\); 0 differ where one of them did not decide",
                     front)
    assert said and said[1] == said[2] and int(said[2]) >= 3, front[-1500:]
    assert "## The answers on both machines" in page and page.count("| the same |") == int(said[2])
    # and beside each answer of the box, the reference machine's: here the same one
    box = [line for line in front.splitlines() if line.startswith("| [")]
    assert sum("; *reference*: the same |" in line for line in box) == int(said[2]), box


def test_a_hostile_backend_and_cpu_are_shown_as_text(mine: Path, tmp_path: Path):
    """A backend name and the reference's CPU that are markup, in both runs: every text of the comparison renders
    them as text, and its tables escape them."""
    hostile = "numcodecs" + payload(20)
    dirs = {}
    for name, source in (("results", newest_runs(mine)["compression"]),
                         ("reference", newest_runs(REFERENCE)["compression"])):
        df, meta = load_run(source)
        target = tmp_path / name / "vm" / source.name
        (target / "records").mkdir(parents=True)
        write_atomic_parquet(df.assign(backend=df["backend"].where(df["backend"] != "numcodecs", hostile)),
                             target / "records" / "all.parquet")
        env = {**meta["environment"], "cpu_model": "CPU" + payload(2)}
        write_json_atomic({**meta, "environment": env}, target / "run.json")
        dirs[name] = tmp_path / name
    pairs = compare.reference_pairs(dirs["results"], dirs["reference"])
    [c] = compare.compare_reference(pairs)
    assert len(c.matched()) == 4
    texts = [compare.header([], dirs["results"], pairs), compare.environment_markdown(c), f"**{c.title}**\n\n"
             f"{c.counts()}."]
    for text in texts:
        html = _render(text)
        assert not _unsafe(html), (text, _unsafe(html))
    assert "alert(2)" in _render(texts[0]) and "alert(2)" in _render(texts[2])  # shown, not dropped
    for table in (t for t in (c.flagged(), c.shown(), c.folded()) if not hasattr(t, "__len__") or len(t)):
        html = table._repr_html_()  # pandas escapes the cells: a tag is text (its quotes need no escaping there)
        assert not UNSAFE["element"].search(html) and not UNSAFE["handler"].search(html)
        assert "alert(20)" in html and "&lt;script&gt;" in html
    folded = c.folded()._repr_html_()  # the whole table under one line: the line's CPU is text too
    assert folded.startswith("<details><summary>") and "alert(2)" in folded.partition("</summary>")[0]
    compare.ratio_figure(c).canvas.draw()
