"""The durability columns: one vocabulary built in one place, records made before it read in it, and the committed
reference runs consistent with it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from benchmarks_lib.records.durability import SYNC_METHODS, durability_columns, read_old_spellings, sync_method
from benchmarks_lib.records.store import SCHEMA_VERSION, load_run

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_RUNS = sorted(p for p in (ROOT / "reference" / "vm").iterdir() if (p / "run.json").is_file())
COLUMNS = {"sync_method", "writer_fsyncs", "fsync_comparable", "fsync_included"}


@pytest.mark.parametrize(("syncfs", "writer", "method"),
                         [(False, False, "none"), (True, False, "syncfs"), (False, True, "writer"),
                          (True, True, "syncfs+writer")])
def test_one_spelling_per_policy(syncfs: bool, writer: bool, method: str):
    assert sync_method(syncfs, writer) == method and method in SYNC_METHODS
    cols = durability_columns(syncfs, writer)
    assert set(cols) == COLUMNS and cols["sync_method"] == method
    assert cols["fsync_included"] == (syncfs or writer) and cols["fsync_comparable"] is not writer
    # a part timed before our syncfs holds only the writer's flushes; a create none; the syncfs row only ours
    assert durability_columns(syncfs, writer, "writer")["fsync_included"] == writer
    assert durability_columns(syncfs, writer, "syncfs")["fsync_included"] == syncfs
    assert durability_columns(syncfs, writer, "none")["fsync_included"] is False


def test_only_the_durability_module_spells_the_columns():
    """Every suite builds them with ``durability_columns``: no other module of the package writes them (the
    record schema names the type of one)."""
    found = subprocess.run(["grep", "-rlE", r"\"(sync_method|writer_fsyncs|fsync_comparable|fsync_included)\": [^\"]",
                            str(ROOT / "benchmarks_lib"), "--include=*.py"], capture_output=True, text=True).stdout
    assert [Path(f).name for f in found.split()] == ["durability.py"]


@pytest.mark.parametrize("run_dir", REFERENCE_RUNS, ids=lambda p: p.name)
def test_reference_runs_read_in_todays_vocabulary(run_dir: Path):
    df, _ = load_run(run_dir)
    assert (df["schema_version"] <= SCHEMA_VERSION).all()
    flushed = df[df["fsync_included"].notna()]
    assert not flushed.empty and set(flushed["sync_method"]) <= set(SYNC_METHODS)
    writer = flushed["writer_fsyncs"].astype(bool)
    assert flushed["sync_method"].str.contains("writer").eq(writer).all()
    assert flushed["fsync_comparable"].astype(bool).eq(~writer).all()


def test_old_spellings_map_to_the_new_ones():
    rows = pd.DataFrame([
        {"schema_version": 2, "operation": "write", "store": "s3", "fsync_included": False, "sync_method": None,
         "writer_fsyncs": None},
        {"schema_version": 2, "operation": "write", "store": "file", "fsync_included": True, "sync_method": None,
         "writer_fsyncs": None},
        {"schema_version": 2, "operation": "total", "fsync_included": True, "sync_method": "syncfs",
         "writer_fsyncs": True},
        {"schema_version": 2, "operation": "write", "fsync_included": True, "sync_method": "none",
         "writer_fsyncs": True},
        {"schema_version": 2, "operation": "read_cold", "fsync_included": None, "sync_method": None,
         "writer_fsyncs": None},
        {"schema_version": SCHEMA_VERSION, "operation": "write", "fsync_included": True, "sync_method": "syncfs",
         "writer_fsyncs": False},
    ]).astype({"fsync_included": "boolean"})
    out = read_old_spellings(rows)
    assert list(out["sync_method"].fillna("-")) == ["none", "syncfs", "syncfs+writer", "writer", "-", "syncfs"]
    assert list(out["fsync_comparable"].astype(object).fillna("-")) == [True, True, False, False, "-", "-"]
    assert read_old_spellings(rows.iloc[5:]).equals(rows.iloc[5:])  # today's rows: untouched
