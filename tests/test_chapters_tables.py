"""Every table fits the book's 784 px column: a table wider than the column (estimated from its text as a browser
lays it out, ``tables.shown_px``) is shown as several tables, each with the columns that name a row, so no column
is hidden past the column's edge. Held on the chapters' own tables of the committed reference runs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from benchmarks_lib.chapters import tables
from benchmarks_lib.chapters.chapter import measuring
from benchmarks_lib.chapters.compression import real
from benchmarks_lib.records.store import load_run, run_dirs

ROOT = Path(__file__).resolve().parent.parent


def _wide(columns: int = 14) -> tables.Table:
    frame = pd.DataFrame({"backend": ["zarr-python", "tensorstore"], "operation": ["write", "read"],
                          **{f"measured quantity {i}": [f"{i}.25 [1.5, 2.5] (n=5)", "-"] for i in range(columns)}})
    return tables.table(frame, keys=["backend", "operation"])


def test_a_wide_table_is_shown_in_parts_that_fit_each_with_its_key_columns():
    table = _wide()
    assert tables.shown_px(table.shown()) > tables.COLUMN_PX
    parts = table.shown_parts()
    assert len(parts) > 1 and all(tables.shown_px(p) <= tables.COLUMN_PX for p in parts)
    assert all(list(p.columns[:2]) == ["backend", "operation"] for p in parts)
    shown = [c for p in parts for c in p.columns[2:]]
    assert shown == [c for c in table.columns if c not in ("backend", "operation")]  # each once, in order
    sizes = [len(p.columns) - 2 for p in parts]
    assert max(sizes) - min(sizes) <= 2  # as even as they can be, no lone last column
    html = table._repr_html_()
    assert html.count("<table") == len(parts) and "measured quantity 13" in html


def test_a_table_that_fits_is_one_table_and_its_first_column_is_the_key_by_default():
    narrow = tables.table(pd.DataFrame({"metric": ["a"], "x": [1.0]}))
    assert len(narrow.shown_parts()) == 1 and narrow._repr_html_().count("<table") == 1
    wide = tables.table(_wide().drop(columns="operation"))
    assert all(p.columns[0] == "backend" for p in wide.shown_parts())


def test_a_record_string_reaches_the_page_as_text_without_control_characters():
    """A results directory may come from anyone: ESC and BEL (a terminal's escapes) from ``run.json`` or a record
    never reach a page's HTML; markup is escaped."""
    shown = tables.table(pd.DataFrame({"machine": ["vm\x1b]8;;http://evil\x07x\x1b[2J", "<script>x</script>"],
                                       "n": [1, 2]}))._repr_html_()
    assert "\x1b" not in shown and "\x07" not in shown and "<script>" not in shown
    assert "&lt;script&gt;" in shown and "http://evil" in shown  # shown, as text


def test_the_width_of_text_breaks_only_at_spaces_and_hyphens():
    assert tables.text_px("blosc-lz4:5:shuffle") == tables.text_px("lz4:5:shuffle")
    assert tables.text_px("a b") == tables.text_px("a")
    assert tables.text_px("ABC") > tables.text_px("abc")
    assert tables.text_px("-1.5") == tables.text_px("x1.5")  # a leading minus sign is no break


def _reference_runs() -> dict[str, pd.DataFrame]:
    runs = {}
    for run in run_dirs(ROOT / "reference"):
        df, meta = load_run(run)
        runs.setdefault(str(meta.get("suite")), df)
    return runs


@pytest.fixture(scope="module")
def reference() -> dict[str, pd.DataFrame]:
    runs = _reference_runs()
    if not runs:
        pytest.skip("no committed reference run")
    return runs


def test_every_chapter_table_of_the_reference_runs_fits_the_column(reference):
    """The four tables that were wider than the column (the writers' summary, the real-data pairs, the S3 summary,
    the compare table) and every other chapter table: each part fits, the key columns in each."""
    from benchmarks_lib.chapters.compare import compare_runs

    shown = {f"{suite} summary": measuring()[suite].summary(df) for suite, df in reference.items()
             if suite in measuring()}
    shown["compression real-data pairs"] = real.pairs_table(reference["compression"])
    shown["compare"] = compare_runs(reference["writers"], reference["writers"])
    wrapped = []
    for name, table in shown.items():
        assert isinstance(table, tables.Table), name
        parts = table.shown_parts()
        assert all(tables.shown_px(p) <= tables.COLUMN_PX for p in parts), name
        keys = table.key_columns(table.shown())
        assert all(list(p.columns[:len(keys)]) == keys for p in parts), name
        wrapped += [name] if len(parts) > 1 else []
    assert {"writers summary", "s3 summary", "compression real-data pairs", "compare"} <= set(wrapped)
