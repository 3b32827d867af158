"""One home each: a chapter's title is its suite's ``title`` (the notebook's heading says the same), and every
call into a measured library or an S3 client is made in ``adapters/``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks_lib.chapters.explore import chapters
from benchmarks_lib.suites import SUITES, get_suite

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _measured_suite(nb: dict) -> str | None:
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    found = re.findall(r"run_or_load\(\s*[\"']([\w-]+)[\"']", code)
    return found[0] if found else None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_chapter_notebooks_heading_is_its_suites_title(path: Path):
    nb = json.loads(path.read_text())
    suite = _measured_suite(nb)
    if suite is None:
        pytest.skip(f"{path.name} measures nothing: its title is its own")
    heading = next(line for c in nb["cells"] if c["cell_type"] == "markdown"
                   for line in "".join(c["source"]).splitlines() if line.startswith("# "))
    assert heading == f"# {get_suite(suite).title}"


def test_the_explorer_names_each_chapter_by_its_suites_title():
    assert set(chapters()) == set(SUITES) - {"ceiling"}
    assert all(get_suite(name).title.startswith(title) for name, title in chapters().items())
