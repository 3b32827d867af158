"""Every notebook as JupyterLab runs it (a file of its own: ``make test`` runs it beside the book build)."""

import json
import shutil

import pytest
from test_book_notebooks import MEASURING, NOTEBOOKS, ROOT, suite_of

from benchmarks_lib.suites import get_suite

#: beyond the smoke sizes, one or two contenders a chapter and the fewest cases that still run it top to bottom
#: (what this test checks is how the notebooks run, not what they measure): the book build
#: (``test_book_notebooks``) measures every chapter at its smoke sizes whole
FEWER = {"cache": {"readers": ["zarr"], "locations": ["local"], "zarr_clients": ["tensorstore"]},
         "compression": {"codecs": ["zstd:1"], "datasets": ["em_like"], "real_datasets": [], "mesh_backends": ["zvtk"],
                         "levels": [1]},
         "threads": {"backends": ["tensorstore"]}, "parallel": {"alignments": ["chunk"]},
         "s3": {"backends": ["zarr-python"]},
         "writers": {"backends": ["raw", "zarr-python"], "tests": ["write", "read"]}}
#: an IPython startup file in the kernel's own IPYTHONDIR (where a user's profile keeps one): every suite's "quick"
#: profile takes the suite's smoke sizes (and ``FEWER``), so that a chapter runs end to end in seconds; no cell is
#: changed
SMOKE_STARTUP = f"""from benchmarks_lib.suites import get_suite, suite_names
for _name in suite_names():
    get_suite(_name).profiles["quick"].update(get_suite(_name).smoke, **{FEWER!r}.get(_name, {{}}))
del _name, suite_names, get_suite
"""


@pytest.mark.slow
def test_each_notebook_runs_as_jupyterlab_runs_it(tmp_path, monkeypatch):
    """Top to bottom with its default parameters, working directory notebooks/ (as JupyterLab starts a kernel),
    nothing injected into the notebook: the runs land in the repository's results/. The quick profile's sizes are
    the suites' smoke sizes in the kernel (``SMOKE_STARTUP``; the full quick sizes run in ``make book``). The run
    directories this test created are removed afterwards (only those). The explorer keeps its widget state, as
    the book embeds it."""
    import nbformat
    from nbclient import NotebookClient

    from benchmarks_lib.records.store import read_run_json, run_dirs

    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-smoke-sizes.py").write_text(SMOKE_STARTUP)
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    results = ROOT / "results"
    before = set(run_dirs(results))
    try:
        for name in NOTEBOOKS:
            nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
            NotebookClient(nb, timeout=1200, kernel_name="python3",
                           resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
            assert not [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"], name
            if name == "explorer":
                state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
                models = {m["model_name"] for m in state.values()}
                assert {"DropdownModel", "SelectMultipleModel", "ImageModel"} <= models
                drawn = [m for m in state.values() if m["model_name"] == "ImageModel"]
                assert any(b["path"] == ["value"] and b["data"] for m in drawn for b in m.get("buffers", []))  # drawn
        created = [read_run_json(d / "run.json") for d in set(run_dirs(results)) - before]
        assert {meta["suite"] for meta in created} == {suite_of(n) for n in MEASURING}
        for meta in created:  # at the smoke sizes: the startup file reached the kernel
            smoke = {**get_suite(meta["suite"]).smoke, **FEWER.get(meta["suite"], {})}
            assert {k: meta["params"].get(k) for k in smoke} == json.loads(json.dumps(smoke)), meta["suite"]
    finally:
        for run_dir in set(run_dirs(results)) - before:
            shutil.rmtree(run_dir)
