"""A results directory may come from anyone: every string in it is data, escaped wherever the book shows it.

The committed ``reference/`` runs are copied and poisoned: every string of their run.json files and their records
carries a payload that would run ``alert(N)`` in a browser, N naming the field (``FIELDS``). The fast tests render
the escaping helpers and every chapter's and page's Markdown with the book's own parser (MyST); the slow ones
build the whole book from the poisoned copy once (nothing measured again: every chapter drawn from the records)
and open every page in headless Chromium at a desktop window's width: no payload runs, and the pages read as a
reader needs them (no figure shrunk below 60% of its natural width, no table cell saying NaN), hostile strings
and all.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from benchmarks_lib.base.markup import html_text, markdown_table, md, md_code

ROOT = Path(__file__).resolve().parent.parent

#: alert number -> the field that carries it (a failure names the field)
FIELDS = {
    1: "run.json environment.hostname", 2: "run.json environment.cpu_model", 3: "run.json environment.machine",
    4: "run.json environment.fs_type", 5: "run.json environment.kernel (several lines, a MyST directive)",
    6: "run.json environment.fs_device", 7: "run.json environment.os", 8: "records: dataset",
    9: "run.json environment.python", 10: "run.json environment.version_*", 11: "run.json environment.git_commit",
    12: "run.json run_id (and the records' run_id)", 13: "run.json profile (and the records' profile)",
    14: "run.json started_at", 15: "run.json params (every string)", 16: "run.json environment: a key",
    17: "run.json environment.fs_mount", 18: "run.json environment.hostname of the second s3 run",
    20: "records: backend", 21: "records: codec", 22: "records: reason (an error row and a skip row added)",
    23: "records: config", 24: "records: client", 25: "records: layout", 26: "records: cutout_kind",
    27: "records: server", 28: "records: alignment", 29: "records: machine", 30: "records: any other string column",
    31: "records: operation of the added error row", 40: "directory name: machine", 41: "directory name: run",
}
#: record columns whose values the chapters match against constants (left as they are: the rows must still count)
MATCHED = {"suite", "status", "operation", "test", "reader", "location", "store", "cache_state", "workload",
           "step_unit", "side", "case_id", "source", "cutout", "dtype", "sync_method"}
#: values the chapters match against constants, in any column
KEPT = {"ceiling", "raw", "zvtk", "vtu", "none", "unaligned", "sharded", "unsharded", "endpoint"}
#: records columns with their own number (the others share 30)
COLUMN_NUMBER = {"dataset": 8, "backend": 20, "codec": 21, "reason": 22, "config": 23, "client": 24, "layout": 25,
                 "cutout_kind": 26, "server": 27, "alignment": 28, "machine": 29, "run_id": 12, "profile": 13}


def link_payload(n: int) -> str:
    """Text that linkify (on in the notebooks' GFM Markdown) makes a live link, and a right-to-left override."""
    return f"https://evil.example/{n} www.evil.example m{n}@evil.example \u202e{n} "


def payload(n: int, img: str = "x") -> str:
    """Markup that runs ``alert(n)`` wherever it is not escaped: HTML (closing a table cell, a tag, a script
    element in any spelling), Markdown links and images, MyST roles, substitutions and math, mathtext for figures.
    Bare links and a direction change (``link_payload``) follow its first elements: a record string read is cut
    at 256 characters (``base.untrusted``), and a figure's label or a table's cell at fewer, so what matters most
    comes first."""
    return (f"<img src={img} onerror=alert({n})></td></tr></table></Script ><script>alert({n})</script>"
            f"{link_payload(n)}"
            f'<iframe src="javascript:alert({n})"></iframe>[l{n}](javascript:alert({n})) '
            f"![i{n}](javascript:alert({n})) <javascript:alert({n})> `c{n}` {{eval-rst}}`r{n}` $\\alert{n}$ "
            f'{{{{ "zq" ~ "jx{n}" }}}} {{{n}}} | *e* _u_ \\ &lt; %s')


def directory_payload(n: int) -> str:
    """A payload that fits in a directory name (no ``/``)."""
    return f"<img src=x onerror=alert({n})>"


def _poison_value(value: object, n: int) -> object:
    if isinstance(value, str):
        return value if value in KEPT else value + payload(n)
    if isinstance(value, list):
        return [_poison_value(v, n) for v in value]
    return value


def _poison_meta(meta: dict, hostname_n: int = 1) -> dict:
    env = dict(meta["environment"])
    numbers = {"hostname": hostname_n, "cpu_model": 2, "machine": 3, "fs_type": 4, "fs_device": 6, "os": 7,
               "python": 9, "git_commit": 11, "fs_mount": 17}
    for key, value in list(env.items()):
        if isinstance(value, str):
            n = numbers.get(key, 10 if key.startswith("version_") else 30)
            env[key] = value + payload(n)
    env["kernel"] = f"{env.get('kernel', '')}\n\n```{{eval-rst}}\n.. raw:: html\n\n   <script>alert(5)</script>\n```\n"
    env[directory_payload(16)] = "a key"
    return {**meta, "environment": env, "run_id": meta["run_id"] + payload(12),
            "profile": meta["profile"] + payload(13), "started_at": payload(14),
            "params": {k: _poison_value(v, 15) for k, v in meta["params"].items()}}


def _poison_records(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    for col in df.columns:
        values = df[col].dropna()
        if col in MATCHED or values.empty or not values.map(lambda v: isinstance(v, str)).all():
            continue
        n = COLUMN_NUMBER.get(col, 30)
        img = "y" if col == "dataset" else "x"
        df[col] = df[col].map(lambda v, n=n, img=img: v + payload(n, img) if isinstance(v, str) and v not in KEPT
                              else v)
    template = df[df["backend"] != "ceiling"].iloc[0]
    error = {**template.to_dict(), "status": "error", "operation": "write" + payload(31),
             "reason": "\n\nTraceback (most recent call last):\n" + payload(22)}
    skip = {**template.to_dict(), "status": "skip", "reason": payload(22)}
    return pd.concat([df, pd.DataFrame([error, skip]).astype(df.dtypes.to_dict())], ignore_index=True)


def poison_results(source: Path, dest: Path) -> Path:
    """A copy of the results directory ``source`` in ``dest`` with a payload in every string (``FIELDS``), an
    error and a skip row per run, and a second run of the s3 suite (the compare chapter has two runs to set side
    by side). Returns ``dest``."""
    from benchmarks_lib.records.store import load_run, run_dirs, write_atomic_parquet, write_json_atomic

    for run_dir in reversed(run_dirs(source)):  # oldest first: the newest stays newest
        df, meta = load_run(run_dir)
        copies = [(run_dir.name, 1)] + ([(run_dir.name + "-again", 18)] if meta["suite"] == "s3" else [])
        for name, hostname_n in copies:
            target = dest / (run_dir.parent.name + directory_payload(40)) / (name + directory_payload(41))
            (target / "records").mkdir(parents=True)
            write_atomic_parquet(_poison_records(df), target / "records" / "all.parquet")
            write_json_atomic(_poison_meta(meta, hostname_n), target / "run.json")
    return dest


# -- rendering as the book renders -------------------------------------------------------------------------

#: what must never come out of a rendered page: elements that run script, handlers, javascript: URLs
UNSAFE = {"element": re.compile(r"<(img|script|iframe|svg|object|embed)\b", re.I),
          "handler": re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.I),
          "javascript URL": re.compile(r"""(href|src)\s*=\s*["']?\s*javascript:""", re.I),
          "link from a record": re.compile(r"""<a\b[^>]*href\s*=\s*["']?[^"'>]*evil\.example""", re.I),
          "direction change": re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")}


def _render(text: str, *, page: bool = False) -> str:
    """HTML of ``text`` as the book renders it: notebook Markdown outputs as GFM (``nb_render_markdown_format``),
    generated pages as MyST with Jupyter Book's extensions."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = (MdParserConfig(enable_extensions={"colon_fence", "dollarmath", "linkify", "substitution", "tasklist"})
              if page else MdParserConfig(gfm_only=True))
    return create_md_parser(config, RendererHTML).render(text)


def _unsafe(html: str) -> list[str]:
    """The script-running markup in rendered HTML: what ``UNSAFE`` finds, by name."""
    return [name for name, pattern in UNSAFE.items() if pattern.search(html)]


def test_md_shows_every_payload_as_text_in_gfm_and_myst():
    for page in (False, True):
        for n in (1, 2):
            for context in ("{}", "- **{}**, x", "| a | b |\n|---|---|\n| {} | x |", "{} and more"):
                html = _render(context.format(md(payload(n))), page=page)
                assert not _unsafe(html), (context, html)
                assert "alert(" in html and "&lt;script&gt;" in html  # shown, not dropped
    assert _render(md("*e* _u_ [a](b) `c` {r}`x` $m$ {{ s }} \\ & | #"), page=True) == (
        "<p>*e* _u_ [a](b) `c` {r}`x` $m$ {{ s }} \\ &amp; | #</p>\n")  # every character shows as itself
    for start in ("- item", "+ item", "# heading", "> quote", "1. item", "12) item", ":::{note}", "% comment", "=x"):
        assert _render(md(start), page=True) == f"<p>{html_text(start)}</p>\n".replace("&#x27;", "'"), start
    assert md("a\nb\r\nc\u2028d\x00e") == "a b c d e"  # one line: no value opens a block


def test_md_code_spans_hold_any_backticks_and_pipes():
    for value in ("plain", "`", "a`b", "``two``", " x ", payload(3), "a|b"):
        html = _render(f"- {md_code(value)}")
        assert not _unsafe(html) and html.count("<code>") == 1, (value, html)
        row = _render(f"| a |\n|---|\n| {md_code(value, in_table=True)} |")
        assert row.count("<td>") == 1 and not _unsafe(row), (value, row)
    assert _render(f"- {md_code('a`b|c')}") == "<ul>\n<li><code>a`b|c</code></li>\n</ul>\n"
    assert md_code("x") == "`x`"


def test_markdown_table_escapes_headers_and_cells():
    table = pd.DataFrame({payload(4): [payload(5), None, 1.5], "n": [1, 2, float("nan")]})
    html = _render(markdown_table(table))
    assert not _unsafe(html)
    assert html.count("<tr>") == 4 and html.count("<td>") == 6  # one row per row: no cell broke out
    assert "<td>-</td>" in html and "<td>1.5</td>" in html


def test_html_text_escapes_quotes_and_tags():
    assert html_text('<b a="1">\'') == "&lt;b a=&quot;1&quot;&gt;&#x27;"


def test_bare_links_stay_text_and_format_characters_show_as_escapes():
    """linkify (GFM, and the pages' MyST) finds no link in a record string, and a direction change is shown as its
    escape, the same in Markdown, in HTML and on the terminal (one definition: ``base.terminal.HIDDEN``)."""
    import sys
    import unicodedata

    from benchmarks_lib.base.terminal import HIDDEN, visible

    for value in ("https://evil.example/fix.sh", "<https://evil.example>", "mailto:m@evil.example", "HTTPS://E.X",
                  "www.evil.example", "evil.example/fix.sh", "m@evil.example", "ftp://x.org", "see http://x.org.",
                  "x //127.0.0.1/a", "http://localhost:8000/a", "mailto:m@localhost"):
        for page in (False, True):
            for context in ("{}", "| a |\n|---|\n| {} |"):
                html = _render(context.format(md(value)), page=page)
                assert "<a" not in html and html_text(value).replace("&#x27;", "'") in html, (value, html)
    assert md("recommended: 1.5 GB/s at 14:31") == "recommended: 1.5 GB/s at 14:31"  # no needless escapes
    for value in ("a\u202eb", "\u2066x\u2069", "\u200ez\u200f", "\ufeff", "\U000e0041"):
        shown = visible(value)
        assert not HIDDEN.search(shown) and shown in _render(md(value)) and shown in html_text(value)
        assert f"<code>{shown}</code>" in _render(md_code(value))
    hidden = {c for c in range(sys.maxunicode + 1) if HIDDEN.match(chr(c))}
    kinds = {c: unicodedata.category(chr(c)) for c in range(sys.maxunicode + 1)}
    assert {c for c, k in kinds.items() if k in ("Cc", "Cf", "Zl", "Zp")} <= hidden
    assert {kinds[c] for c in hidden} <= {"Cc", "Cf", "Zl", "Zp", "Cn"}  # Cn: assigned by a later Unicode


# -- every chapter and page from the poisoned reference runs --------------------------------------------------

@pytest.fixture(scope="module")
def poisoned(tmp_path_factory) -> Path:
    """The reference runs, poisoned (a few MB; seconds)."""
    return poison_results(ROOT / "reference", tmp_path_factory.mktemp("poisoned") / "results")


def _chapter_texts(run_dir: Path) -> dict[str, str]:
    """Every Markdown text a chapter shows for one run (``header``, ``conclusion``, ``problems``, ``answer``)."""
    import importlib
    from types import SimpleNamespace

    from benchmarks_lib.records.store import load_run

    df, meta = load_run(run_dir)
    chapter = importlib.import_module(f"benchmarks_lib.chapters.{meta['suite']}")
    result = SimpleNamespace(meta=meta, df=df, path=run_dir)
    return {"header": chapter.header(result), "conclusion": chapter.conclusion(df), "problems": chapter.problems(df),
            "answer": chapter.answer(df)}


def test_every_chapter_text_from_poisoned_runs_is_escaped(poisoned):
    from benchmarks_lib.records.store import run_dirs

    runs = run_dirs(poisoned)
    assert len(runs) == len(run_dirs(ROOT / "reference")) + 1
    shown = set()
    for run_dir in runs:
        for what, text in _chapter_texts(run_dir).items():
            html = _render(text)
            assert not _unsafe(html), (run_dir.name, what, _unsafe(html))
            shown |= {n for n in FIELDS if f"alert({n})" in html}
    assert {2, 3, 4, 8, 12, 13, 20, 21, 22} <= shown  # the payloads were shown (as text), not dropped


def test_pages_from_poisoned_runs_are_escaped(poisoned, tmp_path):
    from types import SimpleNamespace

    from benchmarks_lib.book.notebooks import chapter_notebooks
    from benchmarks_lib.book.pages import parameters_table, write_answers_page, write_machine_page
    from benchmarks_lib.chapters.chapter import chapters
    from benchmarks_lib.records.store import load_run, newest_runs

    suites = {c.notebook: c.suite for c in chapters()}
    newest = newest_runs(poisoned)
    run_ids = {n: newest[s].name for n, s in suites.items() if s in newest}
    machine = write_machine_page(poisoned, tmp_path, list(run_ids.values())).read_text()
    answers = write_answers_page(ROOT, poisoned, tmp_path, run_ids, chapter_notebooks(), reference=poisoned).read_text()
    beside = (tmp_path / "beside-reference.md").read_text()
    for name, text in (("machine", machine), ("answers", answers), ("beside", beside)):
        html = _render(text, page=True)
        assert not _unsafe(html), (name, _unsafe(html))
        assert "&lt;script&gt;alert(1)" in html or name != "machine"
    assert "Not measured" not in answers
    assert "The **reference run** committed with the book" in beside
    for name, suite in suites.items():
        if suite in newest:
            meta = load_run(newest[suite])[1]
            values = {k.upper(): v for k, v in meta["params"].items()} | {"LOAD_RUN": str(newest[suite])}
            table = parameters_table(name, values, SimpleNamespace(meta=meta))
            html = _render(table)
            assert not _unsafe(html) and "alert(15)" in html, name
            assert html.count("<tr>") == table.count("\n| "), name  # no value broke out of its row
            assert "alert(" not in re.sub(r"<code>.*?</code>", "", html), name  # nor out of its code span


def test_figures_with_hostile_names_draw():
    """A ``$`` in a name never reaches mathtext: a chapter's figure and the explorer's draw with poisoned names."""
    from benchmarks_lib.chapters import explore, style, writers
    from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame

    rows = [{"schema_version": SCHEMA_VERSION, "run_id": "r", "suite": "writers", "status": "ok", "test": "write",
             "operation": "total", "backend": "a" + payload(20), "codec": "lz4" + payload(21), "iteration": i,
             "nbytes": 10**8, "elapsed_s": t, "fsync_included": True} for i, t in enumerate([1.0, 1.1, 0.9])]
    df = to_frame(rows)
    for fig in (writers.median_bars(df), writers.write_gbps_vs_size(df),
                explore.overview(df.assign(run_label="$\\x" + payload(12)))):
        fig.canvas.draw()
        style.plt.close(fig)


def test_compare_and_explorer_text_from_poisoned_runs_is_escaped(poisoned):
    from benchmarks_lib.chapters import compare, explore

    runs = compare.resolve_runs(None, poisoned)
    assert len(runs) == 2
    comparison = compare.Comparison.load(*runs)
    for text in (compare.header(runs, poisoned), compare.environment_markdown(comparison),
                 f"**{comparison.title}**", explore.found_text([poisoned])):
        html = _render(text)
        assert not _unsafe(html), (text, _unsafe(html))
    assert "alert(18)" in comparison.environment.to_html()  # a difference between the runs: pandas escapes it
    assert "<img" not in comparison.environment.to_html()
    fig = compare.ratio_figure(comparison)
    fig.canvas.draw()
    # a label as long as a payload is cut to a few lines (the table has it whole): the figure stays a page long
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels and max(label.count("\n") + 1 for label in labels) == compare.LABEL_LINES
    assert all(label.endswith("…") for label in labels)


def test_the_explorers_chart_page_carries_poisoned_runs_as_data(poisoned):
    """The HTML book's explorer (rows as JSON in the page, drawn by the browser): no payload becomes markup; they
    are all there, as the strings they were, for the page's script to show as text."""
    pytest.importorskip("altair")
    from benchmarks_lib.chapters import explore
    from benchmarks_lib.chapters.explore import charts as explore_charts

    runs = explore.find_runs([poisoned])
    page = explore_charts.chart_page(runs, explore.chapter_menu(), "writers", "time (s)")
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the rows and the page's own script
    assert not [name for name, pattern in UNSAFE.items() if name != "element" and pattern.search(page)]
    assert not re.search(r"<(img|iframe|svg|object|embed)\b", page, re.I)
    rows = json.loads(re.search(r'class="iobench-charts-data">(.*?)</script>', page, re.S).group(1))
    texts = " ".join(n for column in rows["columns"].values() for n in column.get("names", ()))
    assert {n for n in FIELDS if f"alert({n})" in texts} >= {20, 21, 40}  # backend, codec, machine (in a label)


# -- the whole book, in a browser ----------------------------------------------------------------------------

#: run in every page after it loaded: the markup of a payload that made it into the page as markup
FIND_PAYLOADS = """() => {
    const found = [];
    for (const el of document.querySelectorAll("*")) {
        for (const a of el.attributes) {
            if (a.name.startsWith("on") && a.value.includes("alert(")) found.push(`${el.tagName} ${a.name}=${a.value}`);
            if (/^(href|src|action|formaction|data)$/.test(a.name) && /^\\s*javascript:/i.test(a.value))
                found.push(`${el.tagName} ${a.name}=${a.value}`);
        }
    }
    document.querySelectorAll('img[src="x"], img[src="y"], iframe')
        .forEach(el => found.push(el.outerHTML.slice(0, 120)));
    document.querySelectorAll('a[href*="evil.example"]')
        .forEach(el => found.push("link " + el.outerHTML.slice(0, 120)));
    if (document.body.innerText.includes("\u202e")) found.push("a right-to-left override in the text");
    document.querySelectorAll("script").forEach(s => {
        const type = (s.type || "").toLowerCase();
        if ((type === "" || type.includes("javascript") || type === "module") && s.textContent.includes("alert("))
            found.push("script: " + s.textContent.slice(0, 120));
    });
    return found;
}"""
#: the text a page shows (options of the explorer's menus included)
SHOWN_TEXT = """() => {
    document.querySelectorAll("details").forEach(d => { d.open = true; });  // what is folded, as a reader opens it
    return document.body.innerText + Array.from(document.querySelectorAll("option")).map(o => o.text).join(" ");
}"""
#: page -> payloads it must show as text (proof that the poisoned fields reached it, escaped, not dropped)
MUST_SHOW = {"machine.html": (1, 2, 4, 16), "answers.html": (3, 8, 20),
             "writers.html": (12, 13, 15, 20, 22), "compression.html": (8, 21),
             "compare.html": (12, 18), "explorer.html": (20, 40)}


def _names(numbers) -> list[str]:
    return sorted({f"alert({n}): {FIELDS.get(n, '?')}" for n in numbers})


#: the least fraction of its natural width a figure may be displayed at
MIN_SCALE = 0.6
#: run in every page after it loaded: each content image's natural and displayed width, and the table cells that
#: say a missing value in pandas' or Python's words: the whole cell (``None``, ``nan %``), or NaN inside it (``[nan,
#: nan]``); a cell of code spans (a parameter's value as Python) is not a missing value, nor prose that says "None:"
MEASURE = r"""() => {
    document.querySelectorAll("details").forEach(d => { d.open = true; });  // what is folded, opened
    const images = Array.from(document.querySelectorAll("main img, article img"))
        .filter(i => i.complete && i.naturalWidth > 0)
        .map(i => ({src: i.getAttribute("src").split("/").pop().slice(0, 16),
                    natural: parseFloat(i.dataset.ownWidth) || i.naturalWidth,  // a retina figure's own width
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
def poisoned_book(tmp_path_factory) -> dict[str, dict]:
    """ONE book build (``--from`` the poisoned copy of reference/, which is also the book's reference run; minutes),
    then every page in headless Chromium: page -> its dialogs, payload elements, payloads not shown as text, and
    what ``MEASURE`` finds (its figures' widths, its cells that say NaN)."""
    from test_book_notebooks import _book_pages, _browser_problem, _chromium, _copy_project, _goto

    from benchmarks_lib.book.build import build_book
    from benchmarks_lib.book.notebooks import chapter_notebooks

    if problem := _browser_problem():
        pytest.skip(problem)
    tmp_path = tmp_path_factory.mktemp("poisoned-book")
    _copy_project(tmp_path)
    poison_results(ROOT / "reference", tmp_path / "poisoned")
    shutil.copytree(tmp_path / "poisoned", tmp_path / "reference")  # the front page's reference machine too
    recorded = {p: p.stat().st_mtime_ns for p in sorted((tmp_path / "poisoned").rglob("*.parquet"))}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IOBENCH_SCRATCH", str(tmp_path / "scratch"))
        # the explorer draws the poisoned runs only, not the checkout's reference/ as well
        build_book(from_runs=tmp_path / "poisoned", root=tmp_path,
                   parameters={"explorer:OTHER_DIRS": str(tmp_path / "poisoned")})
    html = tmp_path / "_build" / "html"
    # drawn from the recorded runs, nothing is measured again: the records untouched, every chapter drawn
    assert {p: p.stat().st_mtime_ns for p in sorted((tmp_path / "poisoned").rglob("*.parquet"))} == recorded
    assert not (tmp_path / "results").exists()
    for name in chapter_notebooks():  # the explorer's chart is drawn by the browser from the rows the page carries;
        page = (html / "book" / "executed" / f"{name}.html").read_text()  # compare: the runs beside the reference
        assert 'class="output traceback' not in page, name  # (an error row's reason may say "Traceback")
        drawn = {"explorer": "iobench-charts-data", "compare": "against the reference machine"}.get(name, "<img")
        assert drawn in page or "a line needs 3" in page, name  # a sweep of two values is a small table
    assert "No run was found" not in (tmp_path / "book" / "executed" / "answers.md").read_text()
    downloads = sorted((html / "_sources").rglob("*.ipynb"))  # what a reader downloads names no path of this build
    assert downloads and not [p.name for p in downloads if str(tmp_path) in p.read_text()]
    numbers = sorted((html / "_downloads").rglob("*.csv"))  # each chapter's rows: no cell a spreadsheet runs
    assert numbers and not [(p.name, c) for p in numbers for row in csv.reader(io.StringIO(p.read_text()))
                            for c in row if c[:1] in ("=", "+", "@")]
    report: dict[str, dict] = {}
    with _chromium() as browser:
        for path in _book_pages(html):
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            dialogs: list[str] = []
            page.on("dialog", lambda d, dialogs=dialogs: (dialogs.append(d.message), d.dismiss()))
            _goto(page, path)  # the root index.html: its dialogs counted, its target evaluated
            if path.name == "explorer.html":  # the browser draws the chart from the rows the page carries
                page.wait_for_selector(".iobench-charts-view[data-drawn] svg", timeout=30_000)
            page.wait_for_timeout(300)  # a failing image's onerror
            shown = page.evaluate(SHOWN_TEXT)
            report[str(path.relative_to(html))] = {
                "dialogs": _names(int(m) if m.isdigit() else -1 for m in dialogs),
                "payload elements": page.evaluate(FIND_PAYLOADS),
                "not shown as text": _names(n for n in MUST_SHOW.get(path.name, ()) if f"alert({n})" not in shown),
                "redirect": page.url != path.as_uri(), **page.evaluate(MEASURE)}
            page.context.close()
    return report


@pytest.mark.slow
def test_a_book_from_poisoned_runs_runs_no_script_in_a_browser(poisoned_book):
    """No dialog opens and no element of a payload exists, page by page."""
    report = poisoned_book
    print("\npage: dialogs, payload elements")
    for name, found in report.items():
        print(f"{name}: {len(found['dialogs'])}, {len(found['payload elements'])}")
    assert len(report) >= 10 and set(MUST_SHOW) <= {Path(p).name for p in report}
    keys = ("dialogs", "payload elements", "not shown as text")
    bad = {name: {k: found[k] for k in keys if found[k]} for name, found in report.items()
           if any(found[k] for k in keys)}
    assert not bad, json.dumps(bad, indent=1)


# -- the same pages as a reader sees them ----------------------------------------------------------------------
@pytest.mark.slow
def test_no_figure_is_shrunk_below_60_percent(poisoned_book):
    """No figure is displayed below 60% of its natural width at a desktop window's width (a figure wider than the
    book's column is scaled down, its text with it); a redirect (index.html to the front page) is not a page."""
    pages = {page: found for page, found in poisoned_book.items() if not found["redirect"]}
    shrunk = {page: [f"{i['src']}: {i['shown']:.0f} of {i['natural']} px" for i in found["images"]
                     if i["shown"] < MIN_SCALE * i["natural"]]
              for page, found in pages.items()}
    shrunk = {page: images for page, images in shrunk.items() if images}
    assert sum(len(found["images"]) for found in pages.values()) >= 20  # the chapters' figures were measured
    assert not shrunk, json.dumps(shrunk, indent=1)


@pytest.mark.slow
def test_no_table_cell_says_nan(poisoned_book):
    """No table cell says NaN, nan, None, <NA> or NaT (a missing value is a dash with its reason); a parameter's
    value written as Python (a code span: ``None`` there is the value the reader types) is not a missing value."""
    bad = {page: found["missing"][:10] for page, found in poisoned_book.items() if found["missing"]}
    assert any(page.endswith("answers.html") for page in poisoned_book)
    assert not bad, json.dumps(bad, indent=1)
