"""The tree is the architecture: ARCHITECTURE.md names only what exists, the top of the package holds only packages,
no module is named by a sibling's prefix, and each concept has one home (see also test_tree_one_home.py and
test_tree_structure.py)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "benchmarks_lib"
ARCHITECTURE = (ROOT / "ARCHITECTURE.md").read_text()
SOURCES = {path: path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}


def _defined(name: str) -> bool:
    """A function, class, constant or dataclass field of that name is defined somewhere in the package."""
    pattern = re.compile(rf"^\s*(def {name}\b|class {name}\b|{name}\s*[:=]|{name}, \w+ = )", re.M)
    return any(pattern.search(source) for source in SOURCES.values())


def test_every_path_architecture_names_exists():
    paths = set(re.findall(r"`((?:benchmarks_lib|notebooks|tests)/[\w/.]+)`", ARCHITECTURE))
    assert len(paths) > 20
    missing = [p for p in sorted(paths) if not (ROOT / p).exists()]
    assert not missing, missing


def test_every_name_the_trace_of_iterations_mentions_exists():
    trace = ARCHITECTURE.split("## One parameter", 1)[1].split("\n## ", 1)[0]
    names = {n for n in re.findall(r"`(\w+)`", trace) if not n.isupper() or n in ("PROFILES", "LOOKS", "CAP")}
    names -= {"iterations", "warmups", "parameters", "iteration", "ctx", "round", "round_position"}  # columns
    assert {"notebook_arguments", "run_suite", "CaseContext", "run_case", "rank_samples", "LOOKS", "CAP"} <= names
    missing = sorted(n for n in names if not _defined(n))
    assert not missing, missing
    notebook = json.loads((ROOT / "notebooks" / "writers.ipynb").read_text())
    parameters = next(c for c in notebook["cells"] if "parameters" in c["metadata"].get("tags", []))
    assert re.search(r"^ITERATIONS = ", "".join(parameters["source"]), re.M)


def test_the_top_of_the_package_holds_only_packages():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in {"__init__.py", "__main__.py"})
    assert not loose, loose
    for table_row in re.findall(r"^\| [\w, ]+ \| (`benchmarks_lib/\w+/`)", ARCHITECTURE, re.M):
        assert (ROOT / table_row.strip("`")).is_dir()


def test_no_module_is_named_by_a_siblings_prefix():
    found = []
    for folder in {p.parent for p in SOURCES}:
        names = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if p.is_dir()}
        found += [f"{folder.relative_to(ROOT)}: {a} and {b}" for a in names for b in names
                  if a != b and not a.startswith("_") and b.startswith(a + "_")]
    assert not found, found


def _assigned(name: str) -> list[str]:
    return [str(p.relative_to(ROOT)) for p, source in SOURCES.items()
            if re.search(rf"^{name}\b[^=\n]*= ", source, re.M)]


def test_one_home_each():
    # the verdicts: one module declares them and says them (rules/decision.py), every other compares with them
    declared = [p for p, s in SOURCES.items() if re.search(r"^class Verdict\b", s, re.M)]
    assert declared == [PACKAGE / "rules" / "decision.py"], declared
    said = [p for p, s in SOURCES.items() if re.search(r"[\"'](no separable winner|separable from every other|"
                                                         r"a tie after|the \{pct\} that matters)", s)]
    assert said == [PACKAGE / "rules" / "decision.py"], said
    # the looks, the cap and the margin: one module
    for name in ("LOOKS", "CAP", "MARGIN"):
        assert _assigned(name) == ["benchmarks_lib/rules/decision.py"], name
    # page-cache eviction: posix_fadvise is called in one module
    calls = [p for p, s in SOURCES.items() if "os.posix_fadvise(" in s]
    assert calls == [PACKAGE / "measure" / "eviction.py"], calls
    # the n a ranking needs; the run's own settings; run.json's keys; the roles of a real array and its twin
    assert _assigned(r"MIN_RANK\w*") == ["benchmarks_lib/base/stats.py"]
    assert _assigned("RUN_KEYS") == ["benchmarks_lib/suites/kit/common.py"]
    assert _assigned("RUN_JSON_KEYS") == ["benchmarks_lib/records/store.py"]
    assert [p for p, s in SOURCES.items() if '"synthetic twin"' in s] == [PACKAGE / "suites" / "kit" / "twins.py"]
    assert not [p for p, s in SOURCES.items() if '("iterations", "warmups")' in s and p.name != "common.py"]
    # a shape as text: one function
    joins = [str(p.relative_to(ROOT)) for p, s in SOURCES.items() if re.search(r'"x"\.join\(', s)]
    assert joins == [], joins
    # advise's writers come from what the adapters declare: no list of names
    plan = ast.parse(SOURCES[PACKAGE / "advise" / "plan.py"])
    tuples = [n for n in ast.walk(plan) if isinstance(n, ast.Tuple) and len(n.elts) > 3
              and all(isinstance(e, ast.Constant) and e.value in {"tensorstore", "zarr-python", "zarrs", "h5py", "raw"}
                      for e in n.elts)]
    assert not tuples
    # advise imports no chapter
    imports = [node.module for p in (PACKAGE / "advise").rglob("*.py") for node in ast.walk(ast.parse(SOURCES[p]))
               if isinstance(node, ast.ImportFrom) and node.module]
    assert not [m for m in imports if m.startswith("benchmarks_lib.chapters")]


def test_every_test_file_says_its_layer():
    layers = {"base", "measure", "data", "records", "adapters", "inputs", "servers", "suites", "run", "rules", "advise",
              "chapters", "book", "cli", "tree"}
    unnamed = [p.name for p in (ROOT / "tests").glob("test_*.py") if p.stem.split("_")[1] not in layers]
    assert not unnamed, unnamed
