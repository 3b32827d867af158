"""No code from where the reader stands: a ``numpy.py``, ``zarr.py``, ``h5py.py``, ``tensorstore.py``, a ``pyvista/``
and a ``multiprocessing/`` package planted in the working directory and in the data's directory are never imported,
by the command line or by anything it starts (case workers, Dask's workers, the book's kernel), even with empty and
relative ``PYTHONPATH`` entries (which name the working directory). Each planted module leaves a marker file when
imported and then fails, so a probe that imported one either fails or leaves its marker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import write_notebook

from benchmarks_lib.base.importpath import PACKAGE_PARENT, child_env, drop_working_directory, python_path

PLANTED = ("numpy", "zarr", "h5py", "tensorstore", "pyvista", "multiprocessing")
PACKAGES = ("pyvista", "multiprocessing")  # planted as folders
TINY = ["-d", "t:4,y:32:16,x:32", "--iterations", "1", "--warmups", "0", "--param", "multipliers=[1]",
        "--test", "write"]


def plant(directory: Path, markers: Path) -> None:
    """The planted modules in ``directory``: each writes ``markers/<module>-<directory name>`` and fails."""
    for name in PLANTED:
        target = directory / name / "__init__.py" if name in PACKAGES else directory / f"{name}.py"
        target.parent.mkdir(exist_ok=True)
        marker = markers / f"{name}-{directory.name}"
        target.write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('planted')\n")


#: probe -> (command line, its exit status); run in this order, with the data in ``data/`` (``{data}``)
PROBES: dict[str, tuple[list[str], int]] = {
    "run-hdf5-four-writers-on-a-dask-cluster": (["run", "writers", "--dataset", "file:{data}/data.h5", *TINY, "-b",
                                                 "raw", "-b", "h5py", "-b", "zarr-python", "-b", "tensorstore",
                                                 "--cluster", "local:1", "--run-id", "hdf5"], 0),
    "run-example-channels": (["run", "writers", "--dataset", "example:channels", *TINY, "-b", "raw", "--run-id",
                              "example"], 0),
    "advise-measure": (["advise", "--like", "{data}/data.npy", "--access", "cutout:8,8,8", "--measure", "--budget",
                        "20s", "--run-id", "advise", "--results-dir", "results"], 0),
    "show": (["show", "hdf5"], 0),
    "compare": (["compare", "hdf5", "example"], 0),
    # the explorer's kernel starts and imports; its drawing cell runs past 1 s and ends the book (exit 1) before
    # any page is written (as in test_book_guards)
    "book-from-recorded-runs": (["book", "--from", "results", "--notebook", "explorer", "--timeout", "1"], 1),
}


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[dict[str, subprocess.CompletedProcess], Path]:
    """ONE home with the modules planted in it and in its data directory, every probe run there in turn; the
    probes' results and the markers' directory."""
    import h5py
    from test_book_guards import checkout_notebook_kept

    base = tmp_path_factory.mktemp("planted")
    home, data, markers = base / "home", base / "data", base / "markers"
    for d in (home, data, markers):
        d.mkdir()
    array = np.arange(8 * 32 * 32, dtype="uint16").reshape(8, 32, 32)
    np.save(data / "data.npy", array)
    with h5py.File(data / "data.h5", "w") as f:
        f["x"] = array
    plant(home, markers)
    plant(data, markers)
    env = {**os.environ, "IOBENCH_SCRATCH": str(base / "scratch"),
           "PYTHONPATH": os.pathsep.join([os.environ.get("PYTHONPATH", ""), "", "."])}  # both name the home
    done = {}
    with checkout_notebook_kept("explorer"):
        for name, (args, _) in PROBES.items():
            if "example:channels" in args and not _has_pyvista_example():
                continue
            done[name] = subprocess.run([sys.executable, "-m", "benchmarks_lib", *(a.format(data=data) for a in args)],
                                        cwd=home, env=env, capture_output=True, text=True, timeout=600,
                                        stdin=subprocess.DEVNULL)
    return done, markers


def _has_pyvista_example() -> bool:
    from benchmarks_lib.data.examples import example_missing

    return example_missing("example:channels") is None


@pytest.mark.parametrize("name", list(PROBES))
def test_no_planted_module_is_imported(planted, name: str):
    done, markers = planted
    if name not in done:
        pytest.skip("pyvista's example volumes are not installed")
    proc = done[name]
    assert proc.returncode == PROBES[name][1], (proc.returncode, proc.stderr[-3000:])
    assert "planted" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if name.startswith("book"):
        assert "notebook explorer hung" in proc.stderr, proc.stderr[-3000:]
    assert not sorted(p.name for p in markers.iterdir())


def test_a_kernel_started_in_a_planted_directory_imports_the_real_modules(tmp_path):
    """The book's kernel runs in the directory papermill is given: planted there, nothing of it is imported."""
    import nbformat

    from benchmarks_lib.book.build import execute_notebook

    markers = tmp_path / "markers"
    markers.mkdir()
    plant(tmp_path, markers)
    notebook = write_notebook(tmp_path, "imports", "import sys, numpy, zarr, h5py\nprint(numpy.__file__, sys.path)")
    out = tmp_path / "executed"
    out.mkdir()
    executed = execute_notebook(notebook, profile=None, results_dir=tmp_path,
                                parameters={}, out_dir=out, root=tmp_path, timeout=120)
    printed = "".join(o.get("text", "") for o in nbformat.read(executed, as_version=4).cells[-1].outputs)
    assert str(tmp_path) not in printed.split()[0] and "'', " not in printed, printed
    assert not list(markers.iterdir())


def test_a_childs_path_holds_absolute_entries_after_this_package(monkeypatch, tmp_path):
    assert python_path(f"::.:rel:{tmp_path}:{tmp_path}") == os.pathsep.join([PACKAGE_PARENT, str(tmp_path)])
    env = child_env({"PYTHONPATH": "", "OTHER": "kept"})
    assert env == {"PYTHONPATH": PACKAGE_PARENT, "PYTHONSAFEPATH": "1", "OTHER": "kept"}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", f":lib:{tmp_path / 'kept'}")
    path = ["", str(tmp_path), str(tmp_path / "lib"), "/usr/lib/python3", str(tmp_path / "kept")]
    drop_working_directory(path)
    assert path == ["/usr/lib/python3", str(tmp_path / "kept")]


def test_the_iobench_command_imports_nothing_from_the_working_directory(tmp_path):
    """The installed ``iobench`` starts Python isolated: a ``sitecustomize.py``, a ``usercustomize.py`` and a
    ``benchmarks_lib/`` in the working directory, named by ``PYTHONPATH=.:`` (a relative and an empty entry), are
    not imported, not even as the interpreter starts."""
    command = Path(sys.executable).parent / "iobench"
    markers = tmp_path / "markers"
    markers.mkdir()
    home = tmp_path / "home"
    (home / "benchmarks_lib").mkdir(parents=True)
    for target in ("sitecustomize.py", "usercustomize.py", "benchmarks_lib/__init__.py"):
        (home / target).write_text(f"open({str(markers / target.replace('/', '-'))!r}, 'w').close()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([".", "", str(tmp_path / "absolute")])}
    proc = subprocess.run([str(command), "suites"], cwd=home, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "writers" in proc.stdout and not list(markers.iterdir())
