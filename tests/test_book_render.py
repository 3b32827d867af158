"""The book as a reader sees it: every page of a book built from the committed reference runs, in headless
Chromium, at a desktop window's width.

ONE build (``--from`` a copy of ``reference/``, the copy also the book's reference run, so the front page sets
the two side by side): nothing is measured again (the records untouched, every chapter drawn). Then every page:
no figure is displayed below 60% of its natural width (a figure wider than the book's column is scaled down, its
text with it), and no table cell says NaN, nan, None, <NA> or NaT (a missing value is a dash with its reason). A
parameter's value written as Python (a code span, ``None`` there is the value the reader types) is not a missing
value.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the least fraction of its natural width a figure may be displayed at
MIN_SCALE = 0.6
#: run in every page after it loaded: each content image's natural and displayed width, and the table cells that
#: say a missing value in pandas' or Python's words: the whole cell (``None``, ``nan %``), or NaN inside it (``[nan,
#: nan]``); a cell of code spans (a parameter's value as Python) is not a missing value, nor prose that says "None:"
MEASURE = r"""() => {
    const images = Array.from(document.querySelectorAll("main img, article img"))
        .filter(i => i.complete && i.naturalWidth > 0)
        .map(i => ({src: i.getAttribute("src").split("/").pop().slice(0, 16), natural: i.naturalWidth,
                    shown: i.getBoundingClientRect().width}));
    const onlyCode = c => {
        const el = c.children.length === 1 && c.children[0].tagName === "P" ? c.children[0] : c;
        return el.querySelector("code") !== null && Array.from(el.childNodes).every(
            n => (n.nodeType === 1 && n.tagName === "CODE") || (n.nodeType === 3 && /^[\s,]*$/.test(n.textContent)));
    };
    const missing = Array.from(document.querySelectorAll("td, th"))
        .filter(c => !onlyCode(c))
        .map(c => c.innerText.trim())
        .filter(t => /^(nan|NaN|None|<NA>|NaT)(\s*\S{0,6})?$/.test(t)
            || /(^|[^\w])(nan|NaN|<NA>|NaT)([^\w]|$)/.test(t));
    return {images, missing};
}"""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, dict]:
    """Page -> what ``MEASURE`` found in it, for one book built from the reference runs (minutes: one build)."""
    from test_book_notebooks import _book_pages, _browser_problem, _chromium, _copy_project, _goto

    from benchmarks_lib.book.build import build_book
    from benchmarks_lib.book.notebooks import chapter_notebooks

    if problem := _browser_problem():
        pytest.skip(problem)
    root = tmp_path_factory.mktemp("book")
    _copy_project(root)
    shutil.copytree(ROOT / "reference", root / "reference")  # the front page's reference machine
    shutil.copytree(ROOT / "reference", root / "runs")  # this machine's runs (a copy: another directory)
    recorded = sorted((root / "runs").rglob("*.parquet"))
    stamps = [p.stat().st_mtime_ns for p in recorded]
    mp = pytest.MonkeyPatch()
    mp.setenv("IOBENCH_SCRATCH", str(root / "scratch"))
    try:
        build_book(from_runs=root / "runs", root=root)
    finally:
        mp.undo()
    html = root / "_build" / "html"
    # drawn from the recorded runs, nothing is measured again: the records are untouched and every chapter is back
    assert sorted((root / "runs").rglob("*.parquet")) == recorded
    assert [p.stat().st_mtime_ns for p in recorded] == stamps
    assert not (root / "results").exists()
    for name in chapter_notebooks():  # the explorer's chart is drawn by the browser from the rows the page carries;
        page = (html / "book" / "executed" / f"{name}.html").read_text()  # compare: the runs (a copy of the
        assert "Traceback (most recent call last)" not in page, name  # reference elsewhere) beside the reference
        drawn = {"explorer": "iobench-charts-data", "compare": "against the reference machine"}.get(name, "<img")
        assert drawn in page or "a line needs 3" in page, name  # a sweep of two values is a small table
    assert "No run was found" not in (root / "book" / "executed" / "answers.md").read_text()
    found = {}
    with _chromium() as browser:
        for path in _book_pages(html):
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            _goto(page, path)
            if page.url != path.as_uri():  # a redirect (index.html to the front page): measured as itself
                page.context.close()
                continue
            if path.name == "explorer.html":  # the browser draws the chart
                page.wait_for_selector(".iobench-charts-view[data-drawn] svg", timeout=30_000)
            found[str(path.relative_to(html))] = page.evaluate(MEASURE)
            page.context.close()
    return found


@pytest.mark.slow
def test_no_figure_is_shrunk_below_60_percent(rendered):
    shrunk = {page: [f"{i['src']}: {i['shown']:.0f} of {i['natural']} px" for i in found["images"]
                     if i["shown"] < MIN_SCALE * i["natural"]]
              for page, found in rendered.items()}
    shrunk = {page: images for page, images in shrunk.items() if images}
    assert sum(len(found["images"]) for found in rendered.values()) >= 20  # the chapters' figures were measured
    assert not shrunk, json.dumps(shrunk, indent=1)


@pytest.mark.slow
def test_no_table_cell_says_nan(rendered):
    bad = {page: found["missing"][:10] for page, found in rendered.items() if found["missing"]}
    assert any(page.endswith("answers.html") for page in rendered)
    assert not bad, json.dumps(bad, indent=1)
