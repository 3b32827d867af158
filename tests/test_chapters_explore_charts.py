"""The explorer in the HTML book: rows carried within the declared limit (and the page says when rows were cut),
every string of a record kept as data inside the page, and in headless Chromium, offline, the chart redrawn by its
menus: another chapter changes the figure, the round can go along x, a hostile backend name shows as text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks_lib.chapters import explore
from benchmarks_lib.chapters.explore import charts as explore_charts
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame, write_atomic_parquet, write_json_atomic

HOSTILE = "</script><img src=x onerror=alert(1)>"
#: a backend name that would run script if a page took it as markup, and one that would break the JSON it travels in
NAMES = (HOSTILE, 'zarr\u2028"&<!--')


def record(results: Path, run_id: str, suite: str, backends: tuple[str, ...], rounds: int = 4,
           operation: str = "write") -> Path:
    """A run of ``suite``: each backend measured in ``rounds`` rounds (elapsed grows with the round: drift)."""
    rows = [{"backend": b, "operation": operation, "dataset": "em_like", "codec": "lz4", "nbytes": 10**8,
             "elapsed_s": (1 + k) * (1 + r / 10), "gbps": 0.1 / ((1 + k) * (1 + r / 10)), "round": r,
             "iteration": r, "peak_rss_bytes": 2e8, "fsync_included": True}
            for k, b in enumerate(backends) for r in range(1, rounds + 1)]
    rows.append({"backend": "ceiling", "operation": "write_fsync", "nbytes": 10**8, "elapsed_s": 0.05,
                 "gbps": 2.0, "iteration": 0})
    df = to_frame([{"schema_version": SCHEMA_VERSION, "run_id": run_id, "suite": suite, "status": "ok", **r}
                   for r in rows])
    run_dir = results / "vm" / run_id
    write_atomic_parquet(df, run_dir / "records" / "case.parquet")
    write_json_atomic({"run_id": run_id, "suite": suite, "profile": "quick", "started_at": "2026-11-27T10:00:00",
                       "params": {}, "environment": {"machine": "vm"}}, run_dir / "run.json")
    return run_dir


def page_of(results: Path, chapter: str = "writers") -> str:
    runs = explore.find_runs([results])
    return explore_charts.chart_page(runs, explore.chapter_menu(), chapter, "time (s)")


def carried(page: str) -> dict:
    """The JSON the page carries (what its script reads)."""
    found = re.search(r'<script type="application/json" class="iobench-charts-data">(.*?)</script>', page, re.S)
    return json.loads(found.group(1))


def test_every_string_of_a_record_stays_data_in_the_page(tmp_path):
    pytest.importorskip("altair")
    record(tmp_path / "r", "w", "writers", ("zarrs", *NAMES))
    page = page_of(tmp_path / "r")
    # two script elements (the rows, the page's script) and nothing a record opened: no tag, no comment
    assert page.count("<script") == 2 and page.count("</script>") == 2 and "<img" not in page
    assert "<!--" not in page and "\u2028" not in page
    data = carried(page)
    # the same strings, decoded as they were (on one line: a line separator is a space in a label)
    assert {HOSTILE, 'zarr "&<!--'} <= set(data["columns"]["backend"]["names"])
    assert data["spec"]["$schema"].startswith("https://vega.github.io/schema/vega-lite/v6")  # only a name: not fetched
    assert {p["name"] for p in data["spec"]["params"]} == {"chapter", "operation", "measure", "xcol", "colour",
                                                          "heading"}
    assert "round" in dict(data["groups"]) and data["columns"]["round"]["values"][:4] == [1, 2, 3, 4]
    assert data["columns"]["fsync_included"]["names"] == ["yes"]  # not Python's True


def test_the_rows_are_bounded_and_the_page_says_how_many_were_left_out(tmp_path, monkeypatch):
    pytest.importorskip("altair")
    record(tmp_path / "r", "w", "writers", tuple(f"b{i}" for i in range(10)), rounds=20)  # 201 rows
    record(tmp_path / "r", "t", "threads", ("zarrs",), rounds=10)  # 11 rows
    assert "left out" not in page_of(tmp_path / "r")
    monkeypatch.setattr(explore_charts, "ROW_LIMIT", 100)
    page = page_of(tmp_path / "r")
    data = carried(page)
    chapters = data["columns"]["chapter"]
    kept = [chapters["names"][c] for c in chapters["codes"]]
    assert data["length"] == len(kept) == 100 and kept.count("threads") == 11  # the small chapter keeps all its rows
    assert "112 of the 212 rows were left out" in page and "at most 100 rows" in page
    rounds = data["columns"]["round"]["values"]
    assert min(r for r in rounds if r is not None) == 1 and max(r for r in rounds if r is not None) == 20  # spread


def test_the_charts_view_draws_the_rows_or_says_there_are_none(tmp_path, monkeypatch):
    pytest.importorskip("altair")
    from benchmarks_lib.base.specs import SpecError

    record(tmp_path / "r", "w", "writers", ("zarrs",))
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, *a, **k: shown.append(obj))
    assert explore.explorer([tmp_path / "r"], view="charts") is None
    assert explore_charts.MARK in shown[0].data
    explore.explorer([tmp_path / "nowhere"], view="charts")  # nothing to draw: a sentence, no chart scripts
    assert "No measured row" in shown[1].data and explore_charts.MARK not in shown[1].data
    with pytest.raises(SpecError, match="VIEW 'live' is unknown; allowed: widgets, charts, static"):
        explore.explorer([tmp_path / "r"], view="live")


def test_in_a_browser_offline_another_chapter_redraws_the_chart(tmp_path):
    """A page of the chart (its scripts served beside it, as the book serves them) in headless Chromium: no request
    leaves the machine, no console error; choosing another chapter changes the figure (its SVG and the rows drawn);
    the round goes along x; a hostile backend name is text in the figure and the table, and runs nothing."""
    pytest.importorskip("altair")
    from test_book_notebooks import _browser_problem, _chromium

    from benchmarks_lib.book.vendor import VendorError, install, scripts

    if problem := _browser_problem():
        pytest.skip(problem)
    try:
        install(tmp_path / "static")
    except VendorError as exc:
        pytest.skip(f"the chart scripts are not here: {exc}")
    record(tmp_path / "r", "w", "writers", ("zarrs", HOSTILE))
    record(tmp_path / "r", "t", "threads", ("tensorstore",), rounds=3, operation="read")
    tags = "".join(f'<script src="static/{s}"></script>' for s in scripts())
    path = tmp_path / "explorer.html"
    path.write_text(f'<!doctype html><html><head><meta charset="utf-8">{tags}</head>'
                    f"<body>{page_of(tmp_path / 'r')}</body></html>")
    drawn = ".iobench-charts-view[data-drawn]"
    with _chromium() as browser:
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        seen: list[str] = []
        page.on("console", lambda m: m.type in ("error", "warning") and seen.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: seen.append(f"page error: {e}"))
        page.on("dialog", lambda d: (seen.append(f"dialog: {d.message}"), d.dismiss()))
        page.on("request", lambda r: r.url.startswith("file://") or seen.append(f"request off the machine: {r.url}"))
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_selector(drawn, timeout=30_000)
        svg = page.locator(".iobench-charts-view svg")
        before, texts = svg.inner_html(), svg.locator("text").all_text_contents()
        assert page.locator(drawn).get_attribute("data-drawn") == "8"  # two backends, four rounds
        assert HOSTILE in texts and "zarrs" in texts  # the x axis: backends, as text
        assert HOSTILE in page.locator(".iobench-charts-table").inner_text()
        tips = ""
        for point in svg.locator(".mark-symbol path").all():  # each point's tooltip: the names as text too
            box = point.bounding_box()  # (Vega listens on the whole SVG: the mouse goes to the point)
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.wait_for_timeout(50)
            tips += page.locator("#vg-tooltip-element").inner_text()
        assert HOSTILE in tips
        assert page.locator("select[name=chapter]").input_value() == "writers"

        page.select_option("select[name=chapter]", "threads")
        page.wait_for_selector(f"{drawn}[data-drawn='3']", timeout=10_000)
        after, texts = svg.inner_html(), svg.locator("text").all_text_contents()
        assert after != before and "tensorstore" in texts and "zarrs" not in texts
        assert page.locator("select[name=operation]").input_value() == "read"  # the menus follow the chapter

        page.select_option("select[name=chapter]", "writers")
        page.select_option("select[name=xcol]", "round")
        page.wait_for_selector(f"{drawn}[data-drawn='8']", timeout=10_000)
        texts = svg.locator("text").all_text_contents()
        assert {"1", "2", "3", "4"} <= set(texts) and "time (s) of write against round" in " ".join(texts)
        assert page.locator(".iobench-charts-table th").all_text_contents()[:4] == ["run", "backend", "dataset",
                                                                                 "round"]
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        page.screenshot(path=tmp_path / "explorer.png")
    assert not seen, seen
