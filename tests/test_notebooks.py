"""Every notebook under papermill at tiny parameters, then the book build with -W (warnings fail)."""

import json
import shutil
from pathlib import Path

import pytest

from benchmarks_lib.book import NOTEBOOKS, build_book

ROOT = Path(__file__).resolve().parent.parent

# Tiny parameters per notebook ("<notebook>:<NAME>" keys go to that notebook only).
TINY = {
    "writer_comparison": {
        "BACKENDS": ["raw", "zarr-python", "tensorstore"], "DIMS": "t:2,y:64:32,x:96", "MULTIPLIERS": [1, 2],
        "APPEND_FRAMES": 6, "APPEND_STEP": 3, "APPEND_REPEATS": 1, "READ_DIMS": "z:8:4,y:32:16,x:32:16", "CUTOUT": 8,
        "CUTOUT_POSITIONS": 1, "SHARD_DATASETS": ["labels"], "SHARD_VOLUME": 32, "SHARD": 32, "INNER_CHUNKS": [16],
        "ITERATIONS": 1, "WARMUPS": 0,
    },
    "compression_sweep": {
        "MESH_N": 8, "LEVELS": [1, 3], "VTU_COMPRESSORS": ["zlib"], "DATASETS": ["em_like", "labels"],
        "DIMS": "z:4:4,y:32:16,x:32:16", "CODECS": ["zstd:1", "blosc-lz4:5:shuffle"], "TIME_CAP_S": 0.2,
        "ITERATIONS": 1, "WARMUPS": 0,
    },
    "cache_prefetch": {
        "READERS": ["root", "uproot", "zarr"], "ENTRIES": 50, "BRANCHES": 4, "CACHE_SIZES": [0, "10MB"],
        "ASYNC_PREFETCH": [0], "LOCATIONS": ["local", "http"], "LATENCIES_MS": [0], "UPROOT_SOURCES": ["fsspec"],
        "UPROOT_STEPS": [25], "ZARR_CLIENTS": ["zarr-fsspec", "tensorstore"], "ZARR_LAYOUTS": ["sharded"],
        "ZARR_CACHE": [False], "ZARR_CONCURRENCY": [2], "ZARR_DIMS": "z:8:4:8,y:32:16:32,x:32:16:32",
        "ZARR_CUTOUT": "4,8,8", "ZARR_CUTOUTS": 2, "ITERATIONS": 1,
    },
    "thread_scaling": {
        "THREADS": [1, 2], "MESH_N": 8, "DIMS": "z:4:2,y:32:16,x:32:16", "TIME_CAP_S": 0.2, "ITERATIONS": 1,
        "WARMUPS": 0,
    },
}


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
    params = {f"{nb}:{k}": v for nb, values in TINY.items() for k, v in values.items()}
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


SUITE_OF = {"writer_comparison": "writers", "compression_sweep": "compression", "thread_scaling": "threads",
            "cache_prefetch": "cache"}


def test_every_suite_parameter_is_a_documented_notebook_parameter():
    from benchmarks_lib.book import BOOK_PARAMETERS, notebook_parameters
    from benchmarks_lib.suites import get_suite

    assert set(SUITE_OF) == set(NOTEBOOKS)
    for name, suite in SUITE_OF.items():
        declared = set(notebook_parameters(ROOT / "notebooks" / f"{name}.ipynb"))
        expected = {k.upper() for k in get_suite(suite).profiles["quick"]} | {*BOOK_PARAMETERS, "LOAD_RUN"}
        assert declared == expected, (name, sorted(expected - declared), sorted(declared - expected))
