"""No path of the reader's machine in the book: ``paths.shown_path`` shows a directory relative to where the book
is built (or the checkout), else by its last part (a run directory by its run id)."""

from __future__ import annotations

from pathlib import Path

from benchmarks_lib.base.paths import ROOT, shown_path


def test_a_path_is_shown_relative_or_by_its_last_part(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert shown_path(tmp_path / "results") == "results"
    assert shown_path(tmp_path / "runs" / "vm" / "writers-quick-1") == "runs/vm/writers-quick-1"
    assert shown_path(tmp_path) == "."
    assert shown_path(ROOT / "reference") == "reference"  # the checkout's own, from anywhere
    elsewhere = Path("/somewhere/private/home/alice/runs-from-node42")
    assert shown_path(elsewhere) == "\u2026/runs-from-node42" and "alice" not in shown_path(elsewhere)
    assert shown_path(str(elsewhere / "vm" / "writers-quick-1")) == "\u2026/writers-quick-1"  # by its run id
    for given in ("reference", "~/runs", "results/vm/r1", "writers-quick-20260101-000000"):  # as given
        assert shown_path(given) == given


def test_the_filesystems_root_is_no_base(monkeypatch):
    monkeypatch.chdir("/")
    assert shown_path("/somewhere/private/runs") == "\u2026/runs"
