"""Every notebook under papermill at tiny parameters, then the book build with -W (warnings fail)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks_lib.book import NOTEBOOKS, build_book
from benchmarks_lib.suites import get_suite

ROOT = Path(__file__).resolve().parent.parent


def suite_of(notebook: str) -> str:
    """The suite a chapter notebook measures: the name in its one ``run_or_load("<suite>", ...)`` call."""
    nb = json.loads((ROOT / "notebooks" / f"{notebook}.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    names = set(re.findall(r"run_or_load\(\s*[\"']([\w-]+)[\"']", code))
    assert len(names) == 1, (notebook, names)
    return names.pop()


def _copy_project(dest: Path) -> None:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "book", dest / "book", ignore=shutil.ignore_patterns("executed"))
    shutil.copytree(ROOT / "notebooks", dest / "notebooks")


def test_notebooks_are_committed_clean_and_parameterized():
    for name in NOTEBOOKS:
        nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
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


@pytest.mark.slow
def test_notebooks_execute_and_the_book_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("IOBENCH_SCRATCH", str(tmp_path / "scratch"))
    _copy_project(tmp_path)
    # each chapter at its suite's tiny parameters ("<notebook>:<NAME>" keys go to that notebook only)
    params = {f"{nb}:{k.upper()}": v for nb in NOTEBOOKS for k, v in get_suite(suite_of(nb)).smoke.items()}
    index = build_book(profile="quick", results_dir=tmp_path / "results", parameters=params, root=tmp_path)
    assert index.exists()
    html = index.parent
    for name in NOTEBOOKS:
        page = (html / "book" / "executed" / f"{name}.html").read_text()
        assert "Traceback (most recent call last)" not in page and 'class="output traceback' not in page, name
    writers = (html / "book" / "executed" / "writer_comparison.html").read_text()
    assert "Conclusion" in writers and "<img" in writers
    machine = (html / "book" / "executed" / "machine.html").read_text()
    assert "cpu_model" in machine and "write_fsync" in machine


def test_every_suite_parameter_is_a_documented_notebook_parameter():
    from benchmarks_lib.book import BOOK_PARAMETERS, notebook_parameters

    for name in NOTEBOOKS:
        suite = get_suite(suite_of(name))
        assert suite.smoke and set(suite.smoke) <= set(suite.profiles["quick"]) | {"iterations", "warmups"}, name
        declared = set(notebook_parameters(ROOT / "notebooks" / f"{name}.ipynb"))
        expected = {k.upper() for k in suite.profiles["quick"]} | {*BOOK_PARAMETERS, "LOAD_RUN"}
        assert declared == expected, (name, sorted(expected - declared), sorted(declared - expected))
