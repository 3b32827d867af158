"""One home each: a chapter's title is its suite's ``title`` (the notebook's heading says the same), and every
call into a measured library or an S3 client is made in ``adapters/``."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from benchmarks_lib.chapters.explore import chapter_menu
from benchmarks_lib.suites import get_suite, suite_names

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: the measured libraries and the S3/HTTP clients: imported in ``adapters/`` only (Dask, the executor, and pyvista,
#: which makes the mesh data, are neither)
LIBRARIES = {"zarr", "zarrs", "tensorstore", "h5py", "hdf5plugin", "wkw", "acquire_zarr", "ome_writers", "zvtk",
             "numcodecs", "blosc", "ROOT", "uproot", "obstore", "s3fs", "botocore", "boto3", "aiobotocore", "fsspec",
             "aiohttp", "requests"}


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
    menu = dict((suite, label) for label, suite in chapter_menu())
    assert set(menu) == set(suite_names()) - {"ceiling"}
    assert all(get_suite(suite).title.startswith(label) for suite, label in menu.items())


def _imported(path: Path) -> set[str]:
    """The top-level packages a module imports, at any depth (inside functions too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_adapters_import_a_measured_library_or_an_s3_client():
    package = ROOT / "benchmarks_lib"
    outside = {str(path.relative_to(package)): found for path in sorted(package.rglob("*.py"))
               if path.relative_to(package).parts[0] != "adapters" and (found := _imported(path) & LIBRARIES)}
    assert outside == {}
