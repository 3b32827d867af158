"""Adapters that know their versions: each declares the versions it measures (``supported_versions``), and
zarr-python's 2.x path writes and reads the Zarr v2 format that zarr-python 3 writes and reads, on the same bytes.

The 2.x path runs for real in an environment with zarr 2.x (numpy, zarr and numcodecs are all it needs, with this
checkout on its PYTHONPATH): ``IOBENCH_ZARR2_PYTHON`` names its interpreter, else one ``run --versions`` built and
cached is used; without either the cross-version test skips and says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from benchmarks_lib.adapters import KINDS, adapter_class, backend_status, make_adapter, registered
from benchmarks_lib.base.specs import ArraySpec, parse_codec, parse_dims
from benchmarks_lib.data.datasets import Dataset

ROOT = Path(__file__).resolve().parent.parent
DIMS = "z:7:4,y:60:32,x:90:32"
CODECS = ("blosc-lz4:5:shuffle", "zstd:3", "lz4", "none")


def test_every_adapter_declares_a_valid_range_that_holds_its_installed_version():
    for kind in KINDS:
        for name in registered(kind):
            cls = adapter_class(name, kind)
            spec = SpecifierSet(cls.supported_versions)  # raises on a malformed specifier
            status = backend_status(name, kind)
            if status.version and cls.supported_versions:
                assert Version(status.version) in spec, (name, status.version, cls.supported_versions)
    assert adapter_class("zarr-python").supported_versions == ">=2.18,<4"
    assert adapter_class("tensorstore").supported_versions


def _zarr3():
    status = backend_status("zarr-python")
    if not status.available or not status.version.startswith("3."):
        pytest.skip(f"zarr-python 3 is needed here: {status.reason or status.version}")


def test_the_format_is_the_option_and_every_row_says_which():
    _zarr3()
    assert make_adapter("zarr-python").row_columns() == {"zarr_format": 3}
    assert make_adapter("zarr-python:zarr3").row_columns() == {"zarr_format": 3}
    v2 = make_adapter("zarr-python:zarr2")
    assert v2.format == "zarr2" and v2.row_columns() == {"zarr_format": 2}
    sharded = ArraySpec(parse_dims("z:8:4:8,y:8:4:8"), "uint16", parse_codec("none"))
    assert "no sharding" in v2.is_incompatible(sharded, "write")
    assert make_adapter("raw").row_columns() == {}
    # the listing shows the format an option picks
    assert backend_status("zarr-python:zarr2").capabilities["format"] == "zarr2"
    assert backend_status("zarr-python").capabilities["format"] == "zarr3"
    assert backend_status("tensorstore:zarr2").capabilities["format"] == "zarr2"


#: run in the zarr 2.x interpreter: write (plain ``zarr-python`` there: the v2 format), append, read back, read the
#: store zarr 3 wrote, and say what it saw
CHILD = r"""
import hashlib, json, sys
from pathlib import Path
import numpy as np
import zarr
from benchmarks_lib.adapters.zarr_python import ZarrPythonAdapter
from benchmarks_lib.base.specs import ArraySpec, parse_codec, parse_dims
from benchmarks_lib.data.datasets import Dataset

base, dims, codecs = Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
out = {"zarr": zarr.__version__}
for codec in codecs:
    d = parse_dims(dims)
    data = Dataset("microscopy", d.shape)
    spec = ArraySpec(d, data.dtype, parse_codec(codec))
    array = data.region(tuple(slice(0, n) for n in d.shape))
    a = ZarrPythonAdapter()
    assert a.is_incompatible(spec, "write") is None
    path = base / f"two-{codec}"
    a.create(path, spec); a.write(0, array[:4]); a.write(4, array[4:]); a.finalize()
    appended = base / f"two-append-{codec}"
    b = ZarrPythonAdapter(); b.create(appended, spec, append=True)
    for f in range(d.shape[0]):
        b.append(array[f:f + 1])
    b.finalize()
    seen = {}
    for label, store in (("own", path), ("appended", appended), ("three", base / f"three-{codec}")):
        r = ZarrPythonAdapter(); r.open_reader(store, spec)
        seen[label] = bool(np.array_equal(r.read(tuple(slice(0, n) for n in d.shape)), array))
        r.close_reader()
    independent = a.independent_read(path, spec)
    seen["independent"] = bool(np.array_equal(np.concatenate(list(independent.blocks)), array))
    chunks = {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
              for p in sorted(path.rglob("*")) if p.is_file() and not p.name.startswith(".z")}
    out[codec] = {"format": a.format, "columns": a.row_columns(), "seen": seen, "by": independent.by,
                  "chunks": chunks}
print(json.dumps(out))
"""


def _built_zarr2() -> str | None:
    """The interpreter of an environment ``iobench run --versions 'zarr==2.x'`` built and cached (its
    ``iobench-env.json`` names the library and version, and no failure), or None."""
    try:
        from benchmarks_lib.base.paths import cache_dir  # where run --versions keeps its environments
    except ImportError:  # a tree without --versions
        return None
    for record in sorted((cache_dir() / "envs").glob("*/iobench-env.json")):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            env = json.loads(record.read_text())
            python = record.parent / "bin" / "python"
            if env.get("distribution") == "zarr" and str(env.get("version", "")).startswith("2.") \
                    and not env.get("failed") and python.is_file():
                return str(python)
    return None


def _zarr2_python() -> str:
    """``IOBENCH_ZARR2_PYTHON``, else a cached ``--versions`` environment of zarr 2.x; skips without either."""
    python = os.environ.get("IOBENCH_ZARR2_PYTHON", "") or _built_zarr2() or ""
    if not python or not Path(python).is_file():
        pytest.skip("no zarr 2.x environment: run `iobench run writers -b zarr-python:zarr2 --versions "
                    "'zarr==2.18.7,3.1.6'` once (its environment is cached), or set IOBENCH_ZARR2_PYTHON to an "
                    "interpreter with zarr==2.18.* and numcodecs")
    return python


def _chunk_digests(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and not p.name.startswith(".z")}


def test_zarr2_path_writes_and_reads_the_bytes_zarr3_writes(tmp_path: Path):
    """zarr-python 2.x (its own interpreter) and 3.x (this one, ``zarr_format=2``) write the same chunk bytes for
    each codec, each reads what the other wrote, appends land, and the independent reader decodes both."""
    _zarr3()
    python = _zarr2_python()
    d = parse_dims(DIMS)
    data = Dataset("microscopy", d.shape)
    array = data.region(tuple(slice(0, n) for n in d.shape))
    for codec in CODECS:
        spec = ArraySpec(d, data.dtype, parse_codec(codec))
        three = make_adapter("zarr-python:zarr2")
        three.create(tmp_path / f"three-{codec}", spec)
        three.write(0, array)
        three.finalize()
    child = subprocess.run([python, "-c", CHILD, str(tmp_path), DIMS, ",".join(CODECS)], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONSAFEPATH": "1"})
    assert child.returncode == 0, child.stderr[-2000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    assert report["zarr"].startswith("2.")
    for codec in CODECS:
        got = report[codec]
        assert got["format"] == "zarr2" and got["columns"] == {"zarr_format": 2}
        assert all(got["seen"].values()), (codec, got["seen"])
        assert got["chunks"] == _chunk_digests(tmp_path / f"three-{codec}"), f"{codec}: the chunk bytes differ"
        spec = ArraySpec(d, data.dtype, parse_codec(codec))
        for store in (f"two-{codec}", f"two-append-{codec}"):  # zarr 3 reads what 2.x wrote
            reader = make_adapter("zarr-python")
            reader.open_reader(tmp_path / store, spec)
            np.testing.assert_array_equal(reader.read(tuple(slice(0, n) for n in d.shape)), array)
            reader.close_reader()


def test_zarr2_path_runs_in_this_interpreter_when_it_has_zarr2():
    """Where this interpreter itself has zarr 2.x (a worker of a --versions environment), the plain adapter writes
    v2 and refuses what 2.x lacks; the v3 option is unavailable with the reason."""
    status = backend_status("zarr-python")
    if not status.available or not status.version.startswith("2."):
        pytest.skip(f"this interpreter's zarr is {status.version}, not 2.x")
    assert make_adapter("zarr-python").format == "zarr2"
    assert backend_status("zarr-python").capabilities["format"] == "zarr2"
    assert "writes no Zarr v3" in backend_status("zarr-python:zarr3").reason
    spec = ArraySpec(parse_dims(DIMS), "uint16", parse_codec("none"))
    assert "no threads setting" in make_adapter("zarr-python", threads=2).is_incompatible(spec, "write")
