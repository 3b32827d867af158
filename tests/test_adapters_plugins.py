"""A writer from a package of its own (tests/plugins/toywriter) is found through its entry point, with no edit
under benchmarks_lib: ``iobench backends`` lists it, the writers suite runs it, the threads and compression
suites take it from what it declares, a run records its version, and another library verifies its output.

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
from conftest import declare_adapters, install_distribution, python_path

from benchmarks_lib.adapters import adapter_class, backend_status
from benchmarks_lib.adapters.library import ENTRY_POINT_GROUPS

ROOT = Path(__file__).resolve().parent.parent
TOY = Path(__file__).parent / "plugins" / "toywriter"
MEASURED = ("zarr", "tensorstore", "h5py", "wkw", "acquire_zarr", "ome_writers", "zarrs", "zvtk", "numcodecs",
            "ROOT", "uproot")


@pytest.fixture(scope="module")
def toy_env(tmp_path_factory) -> dict[str, str]:
    """The environment of a process in which the toy package is installed."""
    project = tomllib.loads((TOY / "pyproject.toml").read_text())["project"]
    site = install_distribution(tmp_path_factory.mktemp("site"), project["name"], project["version"],
                                project["entry-points"])
    return {**os.environ, "PYTHONPATH": python_path(TOY, site), "COLUMNS": "200"}


def python(code: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


def test_iobench_backends_lists_the_toy_after_the_built_ins(toy_env):
    proc = subprocess.run([sys.executable, "-m", "benchmarks_lib", "backends"], env=toy_env, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in proc.stdout.splitlines() if "│" in line]
    array = [row for row in rows if row and row[0] == "array"]
    toy = next(row for row in array if row[1] == "toy")
    toys = [row for row in array if row[1].partition(":")[0] == "toy"]  # the toy and its options (Zarr formats)
    assert array[-len(toys):] == toys and toys[0] == toy and array[0][1] == "raw"
    if backend_status("zarr-python").available:
        assert toy[2:5] == ["yes", "0.1.0", "zarr3"]  # its own distribution's version
    else:
        assert toy[2] == "no" and "tests/plugins/toywriter" in toy[-1]


def test_the_suites_take_the_toy_from_what_it_declares_and_listing_imports_no_library(toy_env):
    code = f"""
import json, sys
from benchmarks_lib.adapters import KINDS, backend_status, make_adapter, readers_of, registered, tracked_packages
from benchmarks_lib.suites import get_suite

listed = {{kind: [backend_status(n, kind).name for n in registered(kind)] for kind in KINDS}}
imported = sorted({{m.split(".")[0] for m in sys.modules}} & set({MEASURED!r}))
suites = {{name: get_suite(name) for name in ("writers", "threads", "compression")}}
params = {{name: {{**suite.profiles["quick"], **suite.smoke}} for name, suite in suites.items()}}
writers = suites["writers"].build_cases({{**params["writers"], "backends": ["all"], "tests": ["write"]}}, "quick")
threads = suites["threads"].build_cases({{**params["threads"], "backends": ["toy"]}}, "quick")
compression = suites["compression"].build_cases({{**params["compression"], "array_backends": ["toy"],
                                                  "mesh_backends": [], "real_datasets": []}}, "quick")
from benchmarks_lib.suites import compression as c, threads as t
from benchmarks_lib.advise.evidence import parse_workload
from benchmarks_lib.advise.plan import writers_for
advised = writers_for(parse_workload(None, "64,64,64", "uint8", "write"))
print(json.dumps({{"advised": advised, "listed": listed, "imported": imported,
                  "writers": sorted({{case.backend for case in writers}}),
                  "threads": sorted({{case.backend for case in threads}}), "threads_backends": list(t.BACKENDS),
                  "compression": sorted({{case.backend for case in compression}}),
                  "compression_backends": list(c.ARRAY_BACKENDS), "readers": readers_of(make_adapter("toy")),
                  "tracked": tracked_packages()}}))
"""
    proc = python(code, toy_env)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["listed"]["array"][-1] == "toy" and "toy" not in got["listed"]["mesh"] + got["listed"]["codec"]
    assert got["imported"] == []  # listing and every status: no measured library imported
    assert "toy" in got["writers"] and {"raw", "zarr-python"} <= set(got["writers"])
    assert got["threads"] == ["toy"] and "toy" in got["threads_backends"]  # it declares a threads_setting
    assert got["compression"] == ["toy"] and "toy" in got["compression_backends"]  # compressed Zarr chunks
    assert got["readers"] == ["tensorstore"]  # another library: neither zarr-python nor its subclass zarrs
    assert "iobench-toywriter" in got["tracked"]
    # advise --measure tries every installed writer from what it declares: the toy too, the raw baseline last
    assert ("toy" in got["advised"]) == backend_status("zarr-python").available and got["advised"][-1] == "raw"
    assert "ome-writers" not in got["advised"]  # it wraps the others' libraries, which advise measures themselves


def test_a_small_writers_run_of_the_toy_is_verified_by_another_library(toy_env, tmp_path):
    for name in ("zarr-python", "tensorstore"):
        if reason := backend_status(name).reason:
            pytest.skip(reason)
    args = ["run", "writers", "--test", "write", "-d", "t:2,y:32:16,x:48", "--param", "multipliers=[1]",
            "--iterations", "1", "--warmups", "0", "--codec", "zstd:1", "-b", "toy", "--run-id", "toy",
            "--results-dir", "results", "--scratch-dir", "scratch"]
    proc = subprocess.run([sys.executable, "-m", "benchmarks_lib", *args], env=toy_env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    from benchmarks_lib.records.store import find_run, load_run

    df, meta = load_run(find_run(tmp_path / "results", "toy"))
    totals = df[(df["backend"] == "toy") & (df["operation"] == "total")]
    assert len(totals) == 1 and (totals["status"] == "ok").all()
    assert totals["verified"].all() and set(totals["verified_by"]) == {"tensorstore"}
    assert totals["verified_independently"].all()
    assert meta["environment"]["version_iobench_toywriter"] == "0.1.0"



def test_a_broken_plug_in_is_listed_with_its_reason_and_breaks_nothing(tmp_path):
    """A plug-in whose module fails to import (it imports its library at the top, which is missing here) is listed
    last with the reason; the suites, their participants and ``all`` go on (it becomes a skip row)."""
    (tmp_path / "broken_writer.py").write_text("import not_a_module_anywhere  # noqa\n")
    env = {**os.environ, "PYTHONPATH": python_path(declare_adapters(tmp_path, {"broken": "broken_writer:Broken"}))}
    code = """
import json
from benchmarks_lib.adapters import backend_status, expand_backends, registered
from benchmarks_lib.suites import threads
status = backend_status("broken")
print(json.dumps({"listed": registered("array"), "available": status.available, "reason": status.reason,
                  "all": expand_backends(["all"]), "threads": list(threads.BACKENDS)}))
"""
    proc = python(code, env)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["listed"][-1] == "broken" and got["all"][-1] == "broken" and "broken" not in got["threads"]
    assert not got["available"] and "failed to import" in got["reason"] and "not_a_module_anywhere" in got["reason"]


def test_the_recipe_counts_the_files_each_writer_takes():
    """CONTRIBUTING.md's "a new writer (N files, M with a new dependency)" holds for every built-in writer (its module
    in adapters/, one entry-point line in pyproject.toml, no module outside adapters/ naming its class; its library's
    pin in an extra of pyproject.toml and the same pin in environment.yml) and for the toy package (its own files)."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    recipe = re.search(r"^## Recipe: a new writer \((\d+) files, (\d+) with a new dependency\)\n(.*?)^## ", text,
                       re.S | re.M)
    assert recipe, "CONTRIBUTING.md has no 'Recipe: a new writer (N files, M with a new dependency)'"
    stated, with_dependency = int(recipe.group(1)), int(recipe.group(2))
    steps = re.findall(r"^\d+\. `([^`]+)`", recipe.group(3), re.M)
    assert len(steps) == with_dependency and ENTRY_POINT_GROUPS["array"] in recipe.group(3)
    assert steps[stated - 1:] == ["pyproject.toml", "environment.yml"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    project = tomllib.loads(pyproject)["project"]
    pinned = [*project["dependencies"], *(pin for extra in project["optional-dependencies"].values() for pin in extra)]
    environment = (ROOT / "environment.yml").read_text()
    declared = project["entry-points"][ENTRY_POINT_GROUPS["array"]]
    sources = {path: path.read_text() for path in (ROOT / "benchmarks_lib").rglob("*.py")}
    for name, target in declared.items():
        module, _, cls = target.partition(":")
        own = ROOT / (module.replace(".", "/") + ".py")
        assert own.parent == ROOT / "benchmarks_lib" / "adapters" and re.search(rf"^class {cls}\b", sources[own], re.M)
        assert len(re.findall(rf"^{re.escape(name)} = \"{re.escape(target)}\"$", pyproject, re.M)) == 1, name
        naming = {path for path, source in sources.items() if re.search(rf"\b{cls}\b", source)}
        assert all(own.parent in path.parents for path in naming), (name, naming)  # its own and adapters built on it
        assert len({own, ROOT / "pyproject.toml"}) == stated
        # its library pinned once (an extra; numpy, the raw baseline's, a dependency), the same pin in environment.yml
        pins = {pin for pin in pinned if pin.split("==")[0] == adapter_class(name).distribution}
        assert len(pins) == 1 and f"- {pins.pop()}" in environment, name
    assert len([p for p in TOY.iterdir() if p.is_file()]) == stated  # a package of its own: the same files
