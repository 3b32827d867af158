"""Chapters are declared once (``Chapter``, entry-point group ``iobench.chapters``) with their suites
(``iobench.suites``): a chapter from a package of its own (tests/plugins/toychapter: its suite, its chapter and its
notebook, nothing edited under benchmarks_lib) is in the book's table of contents, on its front page and parameters
page, in the explorer and on the command line, and the tests hold it to the built-ins' rules. A notebook hands its
parameters to its suite in one call; CONTRIBUTING.md's recipe of a new chapter counts the files it takes.

The toy is installed as an editable install leaves a package (a dist-info with its own pyproject.toml's entry
points, its source on the path) into a directory that only the child processes here see.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import install_distribution, python_path

from benchmarks_lib.base.entrypoints import CHAPTERS_GROUP, SUITES_GROUP
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.book.notebooks import EXECUTED, chapter_notebooks
from benchmarks_lib.chapters.chapter import chapters

ROOT = Path(__file__).resolve().parent.parent
TOY = Path(__file__).parent / "plugins" / "toychapter"
TOY_PROJECT = tomllib.loads((TOY / "pyproject.toml").read_text())["project"]


@pytest.fixture(scope="module")
def toy_env(tmp_path_factory) -> dict[str, str]:
    """The environment of a process in which the toy chapter's package is installed."""
    site = install_distribution(tmp_path_factory.mktemp("site"), TOY_PROJECT["name"], TOY_PROJECT["version"],
                                TOY_PROJECT["entry-points"])
    return {**os.environ, "PYTHONPATH": python_path(TOY, site), "COLUMNS": "200"}


def run(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_the_book_and_the_explorer_list_the_toy_chapter_after_the_built_ins(toy_env, tmp_path):
    code = """
import json, sys
from pathlib import Path
from benchmarks_lib.chapters import explore
from benchmarks_lib.book.notebooks import chapter_notebooks, table_of_contents
from benchmarks_lib.book.pages import parameters_table, write_answers_page, write_parameters_page
from benchmarks_lib.base.paths import ROOT

out = Path(sys.argv[1])
part = next(p for p in table_of_contents(ROOT)["parts"] if p["caption"] == "Chapters")
box = explore.explorer([out], "toy")  # the widgets: the chapter menu offers the toy's runs
menu = next(w for w in box.children[0].children[0].children if getattr(w, "description", "") == "chapter")
print(json.dumps({"toc": [c["file"] for c in part["chapters"]], "menu": explore.chapter_menu(),
                  "widget": [list(o) for o in menu.options],
                  "answers": write_answers_page(ROOT, out / "none", out, {}).read_text(),
                  "parameters": write_parameters_page(ROOT, chapter_notebooks(), out).read_text(),
                  "table": parameters_table("toy_copies", {"NBYTES": "64KiB"})}))
"""
    got = json.loads(run([sys.executable, "-c", code, str(tmp_path)], toy_env).stdout)
    assert got["toc"] == [EXECUTED + name for name in (*chapter_notebooks(), "toy_copies")]  # built-ins first
    builtin_menu = [[c.label, c.suite] for c in chapters() if c.suite]
    assert got["menu"] == got["widget"] == [*builtin_menu, ["Toy copies", "toy"]]
    answers = got["answers"]
    assert "[Toy copies](toy_copies.ipynb)" in answers  # under "Every chapter", after the built-ins
    assert answers.index("[Toy copies](toy_copies.ipynb)") > answers.index("[Writer comparison](writers.ipynb)")
    assert "from `tests/plugins/toychapter/iobench_toychapter/toy_copies.ipynb`" in got["parameters"]
    assert "| `NBYTES` | `None` | Bytes copied at a time" in got["parameters"]
    assert "| `NBYTES` | `'64KiB'` | Bytes copied at a time" in got["table"]


def test_the_command_line_lists_runs_and_shows_the_toy_suite(toy_env, tmp_path):
    iobench = [sys.executable, "-m", "benchmarks_lib"]
    assert "toy" in run([*iobench, "run", "--help"], toy_env).stdout
    assert "toy: Toy copies (one buffer copied in memory)" in run([*iobench, "suites"], toy_env).stdout
    args = ["run", "toy", "--param", "nbytes=64KiB", "--iterations", "1", "--warmups", "0", "--run-id", "toy",
            "--results-dir", "results", "--scratch-dir", "scratch"]
    shown = run([*iobench, *args], toy_env, cwd=tmp_path).stdout  # its workers find the suite too
    assert "toy — results" in shown and "copy" in shown
    code = """
import json
from benchmarks_lib.chapters import explore
from benchmarks_lib.records.store import find_run, load_run

runs = explore.find_runs(["results"])
df, meta = load_run(find_run("results", "toy"))
copies = df[df["operation"] == "copy"]
print(json.dumps({"figures": len(explore.figures(runs, "Copy time")), "names": explore.figure_names("toy"),
                  "ok": bool((copies["status"] == "ok").all() and copies["verified"].all()), "n": len(copies)}))
"""
    got = json.loads(run([sys.executable, "-c", code], toy_env, cwd=tmp_path).stdout)
    assert got == {"figures": 1, "names": ["Overview: a metric per backend, runs side by side", "Copy time"],
                   "ok": True, "n": 1}


def test_the_tests_hold_the_toy_chapter_to_the_built_ins_rules(toy_env):
    """The notebooks' and the front page's tests read the declared chapters: installed, the toy is among them."""
    args = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-rA",
            "tests/test_book_answers.py", "-k", "empty_or_all_skipped"]
    assert "[toy_copies]" in run(args, toy_env, cwd=ROOT).stdout
    args = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
            "tests/test_book_notebooks.py", "-m", "not slow", "-k", "documented or clean or no_code or meaning"]
    run(args, toy_env, cwd=ROOT)
    code = "from benchmarks_lib.book.notebooks import chapter_notebooks; print(chapter_notebooks()[-1])"
    assert run([sys.executable, "-c", code], toy_env).stdout.strip() == "toy_copies"


def test_a_notebook_hands_its_parameters_to_its_suite_in_one_call(workdir):
    """``run_or_load(suite, globals())``: the suite's parameters from their upper-case names (each one the notebook
    must assign), the run's settings from PROFILE, RESULTS_DIR, RUN_ID and LOAD_RUN; nothing else is read."""
    from benchmarks_lib.run.runner import run_or_load

    with pytest.raises(SpecError, match=r"the notebook assigns no BACKENDS: .*'writers' suite"):
        run_or_load("writers", {"PROFILE": "quick", "RESULTS_DIR": "results"})
    namespace = {"NBYTES": "1MiB", "PROFILE": "quick", "RESULTS_DIR": "results", "RUN_ID": "from-globals",
                 "LOAD_RUN": None, "nbytes": "not read", "__name__": "__main__"}
    measured = run_or_load("ceiling", namespace)
    assert measured.run_dir.name == "from-globals" and measured.run_dir.resolve().parents[1] == workdir / "results"
    assert measured.meta["params"]["nbytes"] == "1MiB" and (measured.df["nbytes"] == 2**20).all()
    loaded = run_or_load("ceiling", {**namespace, "NBYTES": None, "RUN_ID": None, "LOAD_RUN": "from-globals"})
    assert loaded.run_dir == measured.run_dir and len(loaded.df) == len(measured.df)


def test_the_recipe_counts_the_files_each_chapter_takes():
    """CONTRIBUTING.md's "a new chapter (N files)" holds for every built-in chapter that measures a suite (its suite
    module, its chapter module, its notebook, its lines in pyproject.toml and its test; no other module names its
    notebook, and _toc.yml lists no chapter) and for the toy package (the same files but the test)."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    recipe = re.search(r"^## Recipe: a new chapter \((\d+) files\)\n(.*?)^(## |\Z)", text, re.S | re.M)
    assert recipe, "CONTRIBUTING.md has no 'Recipe: a new chapter (N files)'"
    stated, steps = int(recipe.group(1)), re.findall(r"^\d+\. ", recipe.group(2), re.M)
    assert len(steps) == stated <= 5 and SUITES_GROUP in recipe.group(2) and CHAPTERS_GROUP in recipe.group(2)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    sources = {path: path.read_text() for path in (ROOT / "benchmarks_lib").rglob("*.py")}
    toc = (ROOT / "_toc.yml").read_text()

    def module_file(target: str, root: Path) -> Path:
        module = root / target.partition(":")[0].replace(".", "/")
        return module / "__init__.py" if module.is_dir() else module.with_suffix(".py")

    measuring = [c for c in chapters() if c.suite and c.notebook in declared[CHAPTERS_GROUP]]
    assert len(measuring) >= 6
    for chapter in measuring:
        own = module_file(declared[CHAPTERS_GROUP][chapter.notebook], ROOT)
        suite = module_file(declared[SUITES_GROUP][chapter.suite], ROOT)
        tests = sorted((ROOT / "tests").glob(f"test_suites_{chapter.suite}*.py"))
        files = {own, suite, chapter.template(ROOT), ROOT / "pyproject.toml", *tests[:1]}
        assert len(files) == stated and all(path.exists() for path in files), (chapter.notebook, files)
        # declared once, in its own module: no module names the notebook (its name is the suite's, which the suite's
        # own module and its callers say: the notebook is what a list of chapters would name)
        name = re.escape(chapter.notebook)
        declaring = re.compile(rf"Chapter\(\s*[\"']{name}[\"']|notebook\s*=\s*[\"']{name}[\"']|\b{name}\.ipynb")
        naming = {path for path, source in sources.items() if declaring.search(source)}
        assert naming == {own}, (chapter.notebook, naming)
        assert not re.search(rf"\b{re.escape(chapter.notebook)}\b", toc)
    toy_files = {p for p in TOY.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    toy = TOY_PROJECT["entry-points"]
    assert toy_files == {TOY / "pyproject.toml", module_file(toy[SUITES_GROUP]["toy"], TOY),
                         module_file(toy[CHAPTERS_GROUP]["toy_copies"], TOY),
                         TOY / "iobench_toychapter" / "toy_copies.ipynb"}
    assert len(toy_files) == stated - 1  # a package of its own: the recipe's files but the test


def test_a_chapter_has_one_name_and_its_old_notebook_name_still_finds_it():
    """Notebook, suite, chapter module and page share the suite's name; the old notebook names still work."""
    from benchmarks_lib.book.build import split_parameters
    from benchmarks_lib.chapters.chapter import RENAMED, chapter_named, chapters

    for chapter in chapters():
        if chapter.suite is not None and chapter.folder is None:  # the built-in measuring chapters
            assert chapter.notebook == chapter.suite
            assert (ROOT / "benchmarks_lib" / "chapters" / chapter.suite).exists() or \
                (ROOT / "benchmarks_lib" / "chapters" / f"{chapter.suite}.py").exists()
    for old, new in RENAMED.items():
        assert chapter_named(old).notebook == new
    assert split_parameters({"writer_comparison:ITERATIONS": 3}, ["writers"], ROOT) == {"writers": {"ITERATIONS": 3}}
