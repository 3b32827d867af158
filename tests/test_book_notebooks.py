"""Every notebook under papermill at tiny parameters, then the book build with -W (warnings fail)."""

import contextlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks_lib.book.build import build_book
from benchmarks_lib.book.notebooks import (
    chapter_notebooks,
    notebook_parameters,
    notebook_suite,
    tagged_source,
    template,
)
from benchmarks_lib.book.pages import parameter_docs
from benchmarks_lib.chapters.chapter import chapter_named
from benchmarks_lib.suites import get_suite

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = chapter_notebooks()


def suite_of(notebook: str) -> str | None:
    return chapter_named(notebook).suite


#: the chapters that measure a suite (the others read recorded runs: compare)
MEASURING = [name for name in NOTEBOOKS if suite_of(name)]


def _copy_project(dest: Path) -> None:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "_static", dest / "_static")  # the book's style (the verdict box's)
    shutil.copytree(ROOT / "book", dest / "book", ignore=shutil.ignore_patterns("executed"))
    shutil.copytree(ROOT / "notebooks", dest / "notebooks")


def test_notebooks_are_committed_clean_and_parameterized():
    for name in NOTEBOOKS:
        nb = json.loads(template(name, ROOT).read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert not any(c.get("outputs") or c.get("execution_count") for c in code), name
        params = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(params) == 1, name
        lines = "".join(params[0]["source"]).splitlines()
        for i, line in enumerate(lines):  # every parameter is documented by the comment that heads its group
            if line and not line.startswith("#") and "=" in line:
                j = i - 1
                while j >= 0 and lines[j] and not lines[j].startswith("#"):
                    j -= 1
                assert "#" in line or (j >= 0 and lines[j].startswith("#")), (name, line)
        assert "sys.path" not in json.dumps(nb) and "!pip" not in json.dumps(nb)
        ids = [c.get("id") for c in nb["cells"]]  # nbformat 4.5: a cell without an id warns in every book build
        assert all(ids) and len(set(ids)) == len(ids), (name, ids)


@pytest.fixture(scope="module")
def built_book(tmp_path_factory) -> Path:
    """ONE book build (~2 minutes) for the slow tests below: every chapter at its suite's tiny parameters."""
    tmp_path = tmp_path_factory.mktemp("book")
    _copy_project(tmp_path)
    # each chapter at its suite's tiny parameters ("<notebook>:<NAME>" keys go to that notebook only)
    params = {f"{nb}:{k.upper()}": v for nb in MEASURING for k, v in get_suite(suite_of(nb)).smoke.items()}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IOBENCH_SCRATCH", str(tmp_path / "scratch"))
        build_book(profile="quick", results_dir=tmp_path / "results", parameters=params, root=tmp_path)
    return tmp_path


@pytest.mark.slow
def test_notebooks_execute_and_the_book_builds(built_book, monkeypatch):
    tmp_path = built_book
    monkeypatch.setenv("IOBENCH_SCRATCH", str(tmp_path / "scratch"))
    index = tmp_path / "_build" / "html" / "index.html"
    assert index.exists()
    html = index.parent
    for name in NOTEBOOKS:
        page = (html / "book" / "executed" / f"{name}.html").read_text()
        assert "Traceback (most recent call last)" not in page and 'class="output traceback' not in page, name
        assert "cell_input" not in page and "highlight-ipython3" not in page, f"{name}: code shown in the book"
        assert "Parameters of this run" in page and '<th class="head"><p>meaning</p></th>' in page, name
        assert "<p>| " not in page, f"{name}: a markdown table left unrendered"
    writers = (html / "book" / "executed" / "writers.html").read_text()
    assert "Conclusion" in writers and "<img" in writers
    # the method's tables folded under a line that says what they are (the answers first)
    assert writers.index("Conclusion") < writers.index("Show the parameters this run used") < \
        writers.index("Show this machine")
    assert "APPEND_FRAMES" in writers and "Append test: total frames" in writers  # the parameters table
    # the compare chapter reads the runs this build just made: one per suite, so nothing to compare yet, and it
    # says so in a sentence, not with a figure of no data
    compared = (html / "book" / "executed" / "compare.html").read_text()
    assert compared.count("Nothing to compare") == 1 and "<img" not in compared
    assert 'id="flagged-cases"' not in compared and 'id="what-moved"' in compared  # no section that shows nothing
    reference = (html / "book" / "executed" / "parameters.html").read_text()
    for name in NOTEBOOKS:
        assert all(p in reference for p in notebook_parameters(template(name, ROOT))), name
    machine = (html / "book" / "executed" / "machine.html").read_text()
    assert "cpu_model" in machine and "raw write + fsync, 1 stream" in machine  # each ceiling named in words
    # each ceiling measured once per build: a later chapter of the same bytes takes it (``run.shared_ceiling``)
    assert "and taken by the" in machine
    assert "book/executed/answers.html" in index.read_text()  # the front page is what a reader sees first
    front = (html / "book" / "executed" / "answers.html").read_text()
    assert "No run was found" not in front and "Not measured in this build" not in front
    for name in NOTEBOOKS:  # each chapter's answer, linked to its chapter
        assert f'href="{name}.html"' in front, name
    (tmp_path / "book" / "executed" / "answers.md").write_text("stale")
    (tmp_path / "results").rename(tmp_path / "moved")  # the runs are gone: the page says so, the book builds
    build_book(profile="quick", results_dir=tmp_path / "results", execute=False, root=tmp_path, html=False)
    assert "No run was found" in (tmp_path / "book" / "executed" / "answers.md").read_text()

    # the same book drawn from recorded runs without measuring again: tests/test_book_untrusted.py (from reference/)

    # a committed reference run: the front page gives its answers beside this machine's
    shutil.copytree(tmp_path / "moved", tmp_path / "reference")
    build_book(results_dir=tmp_path / "moved", execute=False, root=tmp_path)  # the HTML the browser test sees
    front = (tmp_path / "book" / "executed" / "answers.md").read_text()
    beside = (tmp_path / "book" / "executed" / "beside-reference.md").read_text()
    assert "[This machine beside the reference](beside-reference.md)" in front
    assert "The **reference run** committed with the book" in beside
    from benchmarks_lib.book.frontpage import QUESTIONS as COMPARED  # upgrades compares versions within its run

    assert beside.count("| question (one case both runs measured) |") == len(
        [name for name in MEASURING if suite_of(name) in COMPARED])
    build_book(from_runs=tmp_path / "reference", execute=False, root=tmp_path, html=False)  # alone: no pair
    assert "beside the reference" not in (tmp_path / "book" / "executed" / "answers.md").read_text()
    shutil.rmtree(tmp_path / "reference")


def _book_pages(html: Path) -> list[Path]:
    """Every HTML page of a built book (not the theme's and Sphinx's own files)."""
    return sorted(p for p in html.rglob("*.html") if not {"_static", "_sources", "_images"} & set(p.parts))


def _goto(page, path: Path):
    """Open a book page and wait until it has arrived: the root index.html is a meta refresh to the front page,
    and a page evaluated while that redirect is under way has no body yet (a race CI lost once)."""
    url = path.as_uri()
    response = page.goto(url, wait_until="load")
    if 'http-equiv="refresh"' in path.read_text().lower():
        page.wait_for_url(lambda u: u != url)
        page.wait_for_load_state("load")
    return response


@contextlib.contextmanager
def _chromium():
    """Headless Chromium (the system's, driven by Playwright; no browser is downloaded), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
        try:
            yield browser
        finally:
            browser.close()


def _browser_problem() -> str | None:
    if not shutil.which("chromium"):
        return "no chromium on PATH (`make test` installs it as root on Debian: apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (it is in the test extra: pip install -e '.[test]')"
    return None


@pytest.mark.slow
def test_every_page_of_the_book_in_a_browser(built_book):
    """As a reader sees it, offline: every HTML page opens in headless Chromium (Playwright drives the system
    browser; no browser is downloaded) with no console error, no failed request, no request off the machine
    (file:// only), and every image decoded; at a phone's 390 px no page scrolls sideways, no table reaches past
    the column and no figure is shrunk below 65% (its text at least 9 CSS px: ``_static/figures.js``); no text
    outside code says a record's code (``read_region_cold``, ``zarr-python:zarr2``), a number in exponent notation
    or the build's own path. Screenshots of the front page, one chapter and the explorer for a human to look at,
    kept in the checkout's _build/screenshots/."""
    if problem := _browser_problem():
        pytest.skip(problem)
    html = built_book / "_build" / "html"
    shots = built_book / "_build" / "screenshots"
    shots.mkdir(exist_ok=True)
    pages = _book_pages(html)
    assert len(pages) >= len(NOTEBOOKS) + 2
    problems: dict[str, list[str]] = {}
    with _chromium() as browser:
        for path in pages:  # each page as on a first visit: a fresh context (no local storage, no cache)
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            seen: list[str] = []
            page.on("console", lambda m, seen=seen: m.type == "error" and seen.append(f"console error: {m.text}"))
            page.on("pageerror", lambda e, seen=seen: seen.append(f"page error: {e}"))
            page.on("requestfailed", lambda r, seen=seen: seen.append(f"failed request: {r.url} ({r.failure})"))
            page.on("request", lambda r, seen=seen: r.url.startswith(("file://", "data:", "blob:", "about:"))
                    or seen.append(f"request off the machine: {r.url}"))
            url = path.as_uri()
            response = _goto(page, path)  # the root index.html arrives at the front page
            if response is None or not response.ok:
                seen.append(f"did not load: {url}")
            broken = page.evaluate("""async () => {
                const imgs = Array.from(document.images);
                imgs.forEach(i => { i.loading = "eager"; });
                await Promise.all(imgs.map(i => i.decode().catch(() => null)));
                return imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src);
            }""")
            seen.extend(f"image not shown: {src}" for src in broken)
            if path == html / "index.html":
                assert page.url.endswith("book/executed/answers.html"), page.url
                page.screenshot(path=shots / "front_page.png", full_page=True)
            elif path.name == "writers.html":
                page.screenshot(path=shots / "writers.png", full_page=True)
            elif path.name == "explorer.html":  # the chart is drawn by the browser, without a kernel
                page.wait_for_selector(".iobench-charts-view[data-drawn] svg", timeout=30_000)
                assert page.locator(".iobench-charts select").count() == 5
                assert int(page.locator(".iobench-charts-view").get_attribute("data-drawn")) > 0
                page.screenshot(path=shots / "explorer.png", full_page=True)
            page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing wider than the screen
            wide = page.evaluate(PHONE_OVERFLOW)
            if wide["page"] > 390 or wide["tables"]:
                seen.append(f"at 390 px the page is {wide['page']} px wide; {wide['tables']} table(s) past the column")
            # and every figure's smallest text (10 pt at 100 dpi) at least 9 CSS px: 65% of its natural width
            seen.extend(f"at 390 px a figure is shown {shown} of its {natural} px" for natural, shown in wide["figures"]
                        if shown < 0.65 * natural - 1)
            if path.name in ("writers.html", "answers.html") and not wide["figures"]:  # the selector finds them
                seen.append("at 390 px no figure was measured")
            # the words a reader sees, code spans aside (a value the reader types): no record code, no exponent, no
            # path of the machine that built it
            words = page.evaluate(READER_TEXT)
            seen.extend(f"shows {found!r}" for code in (*RECORD_CODES, re.escape(str(built_book)))
                        for found in list(dict.fromkeys(re.findall(code, words)))[:3])
            page.context.close()
            if seen:
                problems[str(path.relative_to(html))] = seen
    assert not problems, json.dumps(problems, indent=1)
    assert all((shots / f"{name}.png").stat().st_size for name in ("front_page", "writers", "explorer"))
    kept = ROOT / "_build" / "screenshots"  # where a person looks for them after `make test` (ignored by git)
    kept.mkdir(parents=True, exist_ok=True)
    for png in shots.glob("*.png"):
        shutil.copy(png, kept / png.name)


#: how wide a page is, how many of its tables reach past the article's column (a phone's screen), and each
#: figure's own width (a retina PNG's half its pixels) and shown width, every folded part opened
PHONE_OVERFLOW = """async () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });  // what is folded, as a reader opens it
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));  // the resize handled
  const art = document.querySelector('.bd-article') || document.body;
  const right = art.getBoundingClientRect().right + 1;
  const tables = [...art.querySelectorAll('table')].filter(t => t.getBoundingClientRect().right > right).length;
  const figures = [...art.querySelectorAll('.cell_output img, img.iobench-figure')].filter(i => i.naturalWidth > 0)
    .map(i => [parseFloat(i.dataset.ownWidth) || i.naturalWidth,  // a retina figure's own width, not its pixels
               Math.round(i.getBoundingClientRect().width)]);
  return {page: document.documentElement.scrollWidth, tables, figures};
}"""
#: the article's text a reader sees, without its code spans and blocks (what a reader types is code)
READER_TEXT = """() => {
  const art = (document.querySelector('article.bd-article') || document.body).cloneNode(true);
  art.querySelectorAll('code, pre, script, style, .headerlink').forEach(e => e.remove());
  return art.textContent;
}"""
#: what records call by code, never shown as a reader's word (``rules.names``), and numbers in exponent notation
RECORD_CODES = (r"\bread_region_cold\b", r"\w*_nofsync\w*", r"\bcold_unverified\b", r"\w+:zarr[23]\b",
                r"\b\d(?:\.\d+)?e[-+]\d+\b")
#: the verdict box's rows (the first table of the front page's article), its links and the article's words
VERDICT_BOX = """() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const box = art.querySelector('.verdict-box table');
  const rect = box.getBoundingClientRect();
  return {bottom: rect.bottom + window.scrollY, rows: box.querySelectorAll('tbody tr').length,
          links: [...box.querySelectorAll('tbody tr td:first-child a')].map(a => a.href),
          words: art.innerText.split(/\\s+/).filter(w => /\\w/.test(w)).length};
}"""


@pytest.mark.slow
def test_the_verdict_box_is_the_first_screen_of_the_front_page(built_book):
    """As a reader at 1400x900 sees the quick book's front page in Chromium: the verdict box is in the first screen,
    one row per question, each row linking to a section its chapter page has; the page has at most 900 words. A
    screenshot of that first screen is kept in the checkout's _build/screenshots/."""
    from benchmarks_lib.rules.answers import QUESTIONS

    if problem := _browser_problem():
        pytest.skip(problem)
    html = built_book / "_build" / "html"
    with _chromium() as browser:
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        _goto(page, html / "book" / "executed" / "answers.html")
        box = page.evaluate(VERDICT_BOX)
        kept = ROOT / "_build" / "screenshots"  # beside the other test's (ignored by git)
        kept.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=kept / "front_page_first_screen.png")
        assert box["rows"] == len(QUESTIONS) == len(box["links"]), box
        assert box["bottom"] <= 900, f"the verdict box ends at {box['bottom']:.0f} px, below the first screen"
        assert box["words"] <= 900, f"the front page has {box['words']} words"
        for href in box["links"]:
            page.goto(href, wait_until="load")
            fragment = href.partition("#")[2]
            assert fragment and page.evaluate(f"() => document.getElementById({fragment!r}) !== null"), href


def test_book_from_a_directory_without_runs_is_refused_before_anything_runs(tmp_path):
    from benchmarks_lib.base.specs import SpecError

    _copy_project(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpecError, match="no 'writers' run there"):
        build_book(from_runs=tmp_path / "empty", notebooks=["writers"], root=tmp_path)
    assert not (tmp_path / "book" / "executed").exists()


def test_every_suite_parameter_is_a_documented_notebook_parameter():
    """A notebook spells its parameters once, in its parameters cell: every parameter of its chapter's suite in upper
    case and the run's settings, each documented, and nothing else; its one ``run_or_load("<suite>", globals())``
    hands them all to the suite (no cell spells them again as a dict of lower-case names)."""
    from benchmarks_lib.book.build import BOOK_PARAMETERS
    from benchmarks_lib.run.runner import NOTEBOOK_SETTINGS

    for name in NOTEBOOKS:
        path = template(name, ROOT)
        documented = {p.name for p in parameter_docs(path) if p.meaning}
        declared = set(notebook_parameters(path))
        if suite_of(name) is None:  # reads recorded runs: it takes no profile and names no run of its own
            assert "RESULTS_DIR" in declared and not declared & {"PROFILE", "RUN_ID", "LOAD_RUN"}, name
            assert notebook_suite(path) is None, name
            continue
        suite = get_suite(suite_of(name))
        assert notebook_suite(path) == suite.name, name  # the suite its chapter declares
        assert suite.smoke and set(suite.smoke) <= set(suite.parameters), name
        expected = {k.upper() for k in suite.parameters} | set(NOTEBOOK_SETTINGS)
        assert set(BOOK_PARAMETERS) <= set(NOTEBOOK_SETTINGS)
        assert declared == expected, (name, sorted(expected - declared), sorted(declared - expected))
        assert documented == declared, (name, sorted(declared - documented))
        nb = json.loads(path.read_text())
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
                         and "parameters" not in c["metadata"].get("tags", []))
        assert code.count(f'ib.run_or_load("{suite.name}", globals())') == 1 and code.count("run_or_load(") == 1, name
        spelled = [k for k in suite.parameters if re.search(rf"[\"']{k}[\"']\s*:", code)]  # a dict of them
        assert not spelled, (name, spelled)
    assert tagged_source(template("writers", ROOT), "parameters").count("BACKENDS = ") == 1


def test_the_book_shows_no_code():
    """Every code cell is hidden in the book (MyST-NB tags): removed, or only its output shown."""
    for name in NOTEBOOKS:
        nb = json.loads(template(name, ROOT).read_text())
        for cell in nb["cells"]:
            tags = cell["metadata"].get("tags", [])
            if cell["cell_type"] == "code":
                assert "remove-cell" in tags or "remove-input" in tags, (name, cell["id"])
            if "parameters" in tags:
                assert "remove-cell" in tags, name
            if "hide-output" in tags:  # folded under a line that says what it folds, never "Show code cell outputs"
                show = cell["metadata"]["mystnb"]["code_prompt_show"]
                assert show.startswith("Show ") and "code cell" not in show, (name, cell["id"])
        code = "".join("".join(c["source"]) for c in nb["cells"])
        assert code.count(f'ib.parameters_table("{name}", globals()') == 1, name


def test_hide_injected_parameters(tmp_path):
    import nbformat

    from benchmarks_lib.book.build import hide_injected_parameters

    cells = [nbformat.v4.new_code_cell("X = 1", metadata={"tags": ["parameters"]}),
             nbformat.v4.new_code_cell("X = 2", metadata={"tags": ["injected-parameters"]})]
    nb = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(nb, tmp_path / "n.ipynb")
    hide_injected_parameters(tmp_path / "n.ipynb")
    cells = nbformat.read(tmp_path / "n.ipynb", as_version=4).cells
    assert [c.metadata["tags"] for c in cells] == [["parameters"], ["injected-parameters", "remove-cell"]]


def test_a_section_that_shows_nothing_is_left_out_of_the_page(tmp_path):
    """A heading whose code cells printed nothing is hidden with them (kept in the downloaded notebook); a section
    with an output, with prose of its own or with a subsection that shows something stays."""
    import nbformat

    from benchmarks_lib.book.build import hide_empty_sections

    new_md, new_code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    shown = new_code("x", outputs=[nbformat.v4.new_output("stream", text="seen")])
    cells = [new_md("# Title"), new_code("setup", metadata={"tags": ["remove-cell"]}),
             new_md("## Empty\nits prose"), new_code("a"), new_code("b", metadata={"tags": ["hide-output"]}),
             new_md("## Shown"), new_code("c"), shown,
             new_md("## Prose"), new_md("a paragraph"), new_code("d"),
             new_md("## Parent"), new_md("### Empty child"), new_code("e"), new_md("### Child"), shown,
             new_md("## Setup only"), new_code("f", metadata={"tags": ["remove-cell"]})]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), tmp_path / "n.ipynb")
    hide_empty_sections(tmp_path / "n.ipynb")
    cells = nbformat.read(tmp_path / "n.ipynb", as_version=4).cells
    hidden = [c.source.split("\n")[0] for c in cells if "remove-cell" in c.metadata.get("tags", [])]
    assert hidden == ["setup", "## Empty", "a", "b", "### Empty child", "e", "f"]
    assert len(cells) == 18  # every cell kept in the notebook


def test_an_executed_notebook_carries_no_path_of_the_build_machine(tmp_path):
    """What a reader downloads names ``results/...``, ``./notebooks/...`` and ``~``, never the build machine's
    directories; a longer name that merely starts like one of them is left as it is."""
    import nbformat

    from benchmarks_lib.book.build import without_local_paths

    root, home = tmp_path / "checkout", tmp_path / "home"
    results = root / "results"
    cells = [nbformat.v4.new_code_cell(f'RESULTS_DIR = "{results}"', metadata={"tags": ["injected-parameters"]}),
             nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output(
                 "stream", text=f"run {results}/vm/r1 of {home}/data.zarr beside {root}2/x and {root}\n")])]
    source = str(root / "notebooks" / "a.ipynb")
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"papermill": {"input_path": source}})
    nbformat.write(nb, tmp_path / "n.ipynb")
    without_local_paths(tmp_path / "n.ipynb", {str(results): "results", str(root): ".", str(home): "~"})
    back = nbformat.read(tmp_path / "n.ipynb", as_version=4)
    assert back.cells[0].source == 'RESULTS_DIR = "results"'
    assert back.cells[1].outputs[0].text == f"run results/vm/r1 of ~/data.zarr beside {root}2/x and .\n"
    assert back.metadata["papermill"]["input_path"] == "./notebooks/a.ipynb"


def test_every_parameter_has_its_meaning():
    for name in NOTEBOOKS:
        path = template(name, ROOT)
        docs = parameter_docs(path)
        assert [p.name for p in docs] == notebook_parameters(path), name
        for p in docs:
            assert p.meaning and p.default and "Every parameter below" not in p.meaning, (name, p)
    by_name = {p.name: p for p in parameter_docs(ROOT / "notebooks" / "writers.ipynb")}
    assert by_name["PROFILE"].default == '"quick"' and by_name["APPEND_STEP"].meaning.startswith("Append test")
    assert by_name["APPEND_STEP"].group == by_name["APPEND_FRAMES"].group != by_name["FSYNC"].group


def test_parameters_table_shows_the_values_used():
    from benchmarks_lib import parameters_table

    run = SimpleNamespace(meta={"profile": "quick", "run_id": "r1", "params": {"backends": "raw,zarrs",
                                                                                "tests": ["write"]}})
    table = parameters_table("writers", {"BACKENDS": "raw,zarrs", "TESTS": None, "RUN_ID": None}, run)
    rows = {line.split(" | ")[0].strip("| `"): line for line in table.splitlines() if line.startswith("| `")}
    assert "`['raw', 'zarrs']` |" in rows["BACKENDS"] and "`['write']` *(profile)*" in rows["TESTS"]
    assert "`'r1'` |" in rows["RUN_ID"] and "blosc-\\<lz4\\|zstd" in rows["CODEC"]  # escaped: not HTML, not a column
    assert "`APPEND_FRAMES`, `APPEND_STEP`" in table
    loaded = parameters_table("writers", {"LOAD_RUN": "r1", "TESTS": None}, run)
    assert "*(profile)*" not in loaded and "loaded" in loaded
    # no path of the reader's machine: the results directory relative or by its last part, a run by its run id
    private = "/private/home/alice"
    run.meta["params"] = {}
    shown = parameters_table("writers", {"RESULTS_DIR": f"{private}/results",
                                         "LOAD_RUN": f"{private}/results/vm/writers-quick-1"}, run)
    assert private not in shown and "`'…/results'`" in shown and "`'…/writers-quick-1'`" in shown
    explorer = parameters_table("explorer", {"OTHER_DIRS": [f"{private}/a", "reference"], "RESULTS_DIR": None})
    assert private not in explorer and "`['…/a', 'reference']`" in explorer


def _papermill(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    papermill = Path(sys.executable).parent / "papermill"
    return subprocess.run([str(papermill), *args, "-k", "python3", "--cwd", str(cwd), "--no-progress-bar"],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_papermill_cli_takes_lists_as_text_and_from_yaml(tmp_path, monkeypatch):
    """`papermill -p` passes lists as text, comma-separated or JSON; `-f params.yaml` passes real lists."""
    import yaml

    from benchmarks_lib.records.store import find_run, load_run

    monkeypatch.setenv("IOBENCH_SCRATCH", str(tmp_path / "scratch"))
    smoke = get_suite("writers").smoke
    lists = [k for k, v in smoke.items() if isinstance(v, list) and k != "backends"]
    yaml_part = {k.upper(): v for k, v in smoke.items() if k not in lists and k != "backends"}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(
        {**yaml_part, "TESTS": ["write", "read"], "RESULTS_DIR": str(tmp_path / "results"), "RUN_ID": "cli"}))
    args = ["-f", str(tmp_path / "params.yaml"), "-p", "BACKENDS", "raw,tensorstore"]
    for i, key in enumerate(lists):  # alternately "a,b" and '["a", "b"]'
        value = smoke[key]
        args += ["-p", key.upper(), ",".join(map(str, value)) if i % 2 else json.dumps(value)]
    source = "notebooks/writers.ipynb"
    done = _papermill(source, str(tmp_path / "out.ipynb"), *args, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    df, meta = load_run(find_run(tmp_path / "results", "cli"))
    assert set(df.loc[df["status"] == "ok", "backend"]) == {"ceiling", "raw", "tensorstore"}
    assert meta["params"]["backends"] == "raw,tensorstore" and set(df["test"].dropna()) == {"write", "read"}

    bad = _papermill(source, str(tmp_path / "bad.ipynb"), "-p", "BACKENDS", '["raw", "tensorstore"', "-p",
                     "RESULTS_DIR", str(tmp_path / "results"), "-p", "LOAD_RUN", "None", cwd=ROOT)
    assert bad.returncode != 0
    errors = [o for c in json.loads((tmp_path / "bad.ipynb").read_text())["cells"] for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert [e["ename"] for e in errors] == ["SpecError"]
    assert errors[0]["evalue"] == ("backends '[\"raw\", \"tensorstore\"' is not a JSON list (Expecting ',' "
                                   "delimiter); e.g. backends = [\"name\"] or a comma-separated string")


@pytest.mark.slow
def test_offline_without_chart_scripts_the_book_builds_with_the_explorers_static_figures(built_book, monkeypatch,
                                                                                       capsys):
    """No npm registry and nothing cached: one line says what is missing and how to fetch it, before anything
    runs; the explorer draws its first selection as static images and the book builds."""
    vendor, hidden = built_book / ".iobench-vendor", built_book / ".iobench-vendor-kept"
    vendor.rename(hidden)
    monkeypatch.setenv("XDG_CACHE_HOME", str(built_book / "empty-cache"))
    monkeypatch.setenv("IOBENCH_NPM_REGISTRY", "http://127.0.0.1:9")  # the discard port: nothing answers
    monkeypatch.setenv("IOBENCH_SCRATCH", str(built_book / "scratch"))
    results = next(d for d in (built_book / "results", built_book / "moved") if d.is_dir())
    try:
        build_book(results_dir=results, notebooks=["explorer"], root=built_book)
        err = capsys.readouterr().err
        notes = [line for line in err.splitlines() if line.startswith("note:")]
        assert len(notes) == 1 and "IOBENCH_NPM_REGISTRY" in notes[0] and "static figure" in notes[0], err
        assert err.index("note:") < err.index("executing explorer")
        page = (built_book / "_build" / "html" / "book" / "executed" / "explorer.html").read_text()
        assert "<img" in page and "iobench-charts" not in page and "vendor/vega" not in page
    finally:
        shutil.rmtree(vendor, ignore_errors=True)  # only what this build made of it
        hidden.rename(vendor)
