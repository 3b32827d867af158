"""``--versions``: a library measured at several versions, each in an environment of its own (``run.versions``,
``run.environments``).

The toy library (``tests/plugins/toyversions``) is built here into wheels of versions 1.0 and 2.0, and numpy (the
harness's own pin) is packed again from this interpreter's install, into a folder uv installs from with no index
(``UV_NO_INDEX``) and a cache of the tests' own: no test needs the network. Every bad request is one line, exit 2,
with nothing created; two versions are measured in one run, interleaved in its rounds, each verified and its rows
carrying its version, run.json recording the environments; a second run reuses them.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from conftest import declare_adapters, python_path

from benchmarks_lib.adapters import forget_discovered

TOY = Path(__file__).parent / "plugins" / "toyversions"
TOY_DIST, TOY_BACKEND = "iobench-toyversions", "toyv"


def _wheel(folder: Path, name: str, version: str, tag: str, files: dict[str, bytes],
           entry_points: str = "") -> Path:
    """A wheel of ``files`` (archive path -> bytes) with its dist-info (METADATA, WHEEL, entry points, RECORD)."""
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {**files, f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: iobench-tests\nRoot-Is-Purelib: "
                              f"{'true' if tag.startswith('py3') else 'false'}\nTag: {tag}\n".encode()}
    if entry_points:
        files[f"{info}/entry_points.txt"] = entry_points.encode()
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([path, f"sha256={digest}", len(data)])
    writer.writerow([f"{info}/RECORD", "", ""])
    out = folder / f"{name.replace('-', '_')}-{version}-{tag}.whl"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr(f"{info}/RECORD", record.getvalue())
    return out


def _repack(folder: Path, name: str) -> Path:
    """The installed distribution ``name`` packed again as a wheel (its files as its RECORD lists them, its own tag)."""
    dist = metadata.distribution(name)
    tag = next(line.split(":", 1)[1].strip() for line in dist.read_text("WHEEL").splitlines()
               if line.startswith("Tag:"))
    files = {}
    for item in dist.files:
        path = dist.locate_file(item)
        if ".." not in item.parts and "__pycache__" not in item.parts and path.is_file() \
                and ".dist-info" not in str(item):
            files[str(item)] = path.read_bytes()
    return _wheel(folder, dist.metadata["Name"], dist.version, tag, files)


@pytest.fixture(scope="module")
def toy_index(tmp_path_factory):
    """A folder of wheels (the toy at 1.0 and 2.0, numpy) and the environment that makes uv install from it alone,
    into a cache of the tests'; iobench's cache is the tests' too (kept across this module: the second run reuses)."""
    try:
        from benchmarks_lib.run.environments import uv_binary

        uv_binary()
    except Exception as exc:  # the versions extra is not installed
        pytest.skip(str(exc))
    wheels = tmp_path_factory.mktemp("wheels")
    source = (TOY / "iobench_toyversions.py").read_bytes()
    entry = f"[iobench.adapters]\n{TOY_BACKEND} = iobench_toyversions:ToyVersionsWriter\n"
    for version in ("1.0", "2.0"):
        _wheel(wheels, TOY_DIST, version, "py3-none-any", {"iobench_toyversions.py": source}, entry)
    broken = b'raise ImportError("this release of the toy is broken")\n'  # installs, never imports
    _wheel(wheels, TOY_DIST, "1.5", "py3-none-any", {"iobench_toyversions.py": broken}, entry)
    _repack(wheels, "numpy")
    cache = tmp_path_factory.mktemp("cache")
    return {"UV_NO_INDEX": "1", "UV_FIND_LINKS": str(wheels), "UV_CACHE_DIR": str(cache / "uv"),
            "XDG_CACHE_HOME": str(cache / "xdg")}


@pytest.fixture
def toy_env(toy_index, monkeypatch, tmp_path_factory, workdir):
    """This process (and the command line it starts) knows the toy's writer, as a plug-in installed here would be;
    uv finds only the toy folder."""
    site = declare_adapters(tmp_path_factory.mktemp("site"), {TOY_BACKEND: "iobench_toyversions:ToyVersionsWriter"})
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", python_path(TOY, site, *_uv_path()))
    for key, value in toy_index.items():
        monkeypatch.setenv(key, value)
    forget_discovered()
    yield {**os.environ}
    forget_discovered()


def _uv_path() -> list[str]:
    """Where this process found the ``uv`` package (when not in the interpreter's site), for the command line."""
    import site

    try:
        import uv
    except ImportError:
        return []
    where = str(Path(uv.__file__).parent.parent)
    return [] if where in site.getsitepackages() else [where]


def iobench(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks_lib", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


BAD = {
    "a version the index lacks": ("iobench-toyversions==2.5", "no such version"),
    "not NAME==VERSION": ("iobench-toyversions>=", "NAME==VERSION"),
    "not a version": ("iobench-toyversions==1.0,abc", "not a version"),
    "no adapter's library": ("pandas==3.1.1", "no adapter's library"),
    "the harness's own": ("numpy==2.3.0", "harness"),
    "outside the adapter's range": ("iobench-toyversions==3.0", "supports"),
    "outside zarr-python's range": ("zarr==99", "zarr"),
    "a library no case measures": ("tensorstore==0.1.86", "no case of this run"),
}


@pytest.mark.parametrize("label", list(BAD))
def test_a_bad_request_is_one_line_and_creates_nothing(toy_env, workdir, label):
    value, words = BAD[label]
    before = sorted(p.name for p in workdir.iterdir())
    proc = iobench(["run", "writers", "-b", TOY_BACKEND, "--versions", value, "--profile", "quick", "--yes"],
                   toy_env, workdir)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and value.partition("==")[0].partition(">")[0] in lines[0] and words in lines[0], lines
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in workdir.iterdir()) == before  # no results/, no scratch


def test_no_network_and_no_cache_is_one_line(toy_env, workdir, tmp_path):
    env = {**toy_env, "UV_NO_INDEX": "", "UV_FIND_LINKS": "", "UV_DEFAULT_INDEX": "http://127.0.0.1:9/simple",
           "UV_HTTP_RETRIES": "0", "UV_CACHE_DIR": str(tmp_path / "empty-uv"), "XDG_CACHE_HOME": str(tmp_path / "x")}
    proc = iobench(["run", "writers", "-b", TOY_BACKEND, "--versions", f"{TOY_DIST}==1.0", "--yes"], env, workdir)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{TOY_DIST}==1.0" in lines[0] and "no network and nothing cached" in lines[0], lines
    assert not (workdir / "results").exists()


def _toy_run(base: Path, run_id: str, versions: str = "1.0,2.0"):
    from benchmarks_lib.run.runner import run_suite
    from benchmarks_lib.suites import get_suite

    suite = get_suite("writers")
    lines: list[str] = []
    result = run_suite("writers", {**suite.smoke, "backends": [TOY_BACKEND], "tests": ["write"], "iterations": 8,
                                   "warmups": 1, "versions": [f"{TOY_DIST}=={versions}"]},
                       profile="quick", results_dir=base / "results", scratch_dir=base / "scratch", run_id=run_id,
                       ceiling=False, progress=lambda done, total, message, finished: lines.append(message),
                       assume_yes=True, budget="10m")
    return result, json.loads((result.run_dir / "run.json").read_text()), lines


def test_two_versions_are_measured_in_one_run_interleaved_and_the_second_run_reuses_them(toy_env, workdir,
                                                                                          monkeypatch, tmp_path):
    result, meta, lines = _toy_run(workdir, "two")
    df = result.df
    assert not (df["status"] == "error").any(), df[df["status"] == "error"]["reason"].tolist()
    writes = df[(df["operation"] == "write") & (df["status"] == "ok")]
    # each version's own environment: its rows carry it, and the worker there found that version installed
    assert set(writes["environment"]) == {f"{TOY_DIST}==1.0", f"{TOY_DIST}==2.0"}
    assert set(zip(writes["environment"], writes["backend_version"], strict=True)) == {
        (f"{TOY_DIST}==1.0", "1.0"), (f"{TOY_DIST}==2.0", "2.0")}
    totals = df[df["operation"] == "total"]  # a write's verification is on its total row
    assert len(totals) == len(writes) and totals["verified"].eq(True).all()
    print(meta["rounds"]["questions"])
    # interleaved: the same rounds, each version once per round
    rounds = writes.groupby("round")["backend_version"].nunique()
    assert len(rounds) >= 8 and (rounds == 2).all()
    assert set(writes.groupby("backend_version")["round_position"].unique().explode()) <= {0, 1}
    # contenders of one question, named by their version
    from benchmarks_lib.records.questions import entry_names

    assert set(entry_names(writes)) == {f"{TOY_BACKEND} 1.0", f"{TOY_BACKEND} 2.0"}
    # the terminal: a column per version, then each version against the newest with its interval
    from benchmarks_lib.cli.common import console, print_run

    with console.capture() as shown:
        print_run(df, "writers", "writers")
    said = shown.get()
    assert f"{TOY_BACKEND} 1.0" in said and f"{TOY_BACKEND} 2.0" in said, said
    assert f"{TOY_BACKEND} 1.0 → 2.0: " in said and "**" not in said, said
    envs = meta["environments"]
    assert set(envs) == {f"{TOY_DIST}==1.0", f"{TOY_DIST}==2.0"}
    for key, env in envs.items():
        assert env["packages"][TOY_DIST] == key.rpartition("==")[2] and env["packages"]["numpy"]
        assert env["failed"] is None and env["build_s"] > 0
        assert not {"zarr", "tensorstore", "h5py", "pandas"} & set(env["packages"])  # no rival, no harness extra
    cold = {k: e["setup_s"] for k, e in envs.items()}
    # the second run offline: no wheels where uv found them, an empty uv cache; nothing is asked of uv
    wheels = Path(os.environ["UV_FIND_LINKS"])
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "no-uv-cache"))
    wheels.rename(wheels.with_name(wheels.name + "-gone"))
    try:
        second, meta2, lines2 = _toy_run(workdir, "again")
    finally:
        wheels.with_name(wheels.name + "-gone").rename(wheels)
    assert all(e["reused"] for e in meta2["environments"].values())
    assert {k: e["digest"] for k, e in meta2["environments"].items()} == {k: e["digest"] for k, e in envs.items()}
    assert not (second.df["status"] == "error").any()
    warm = {k: e["setup_s"] for k, e in meta2["environments"].items()}
    print(f"environments: cold {cold}, warm {warm}")
    assert any("reused" in line for line in lines2) and any("built in" in line for line in lines)


def test_a_version_that_does_not_import_is_a_skip_row_and_the_other_goes_on(toy_env, workdir):
    result, meta, _ = _toy_run(workdir, "broken", "1.0,1.5")
    rows = result.df
    broken = rows[rows["environment"] == f"{TOY_DIST}==1.5"]
    assert len(broken) and (broken["status"] == "skip").all()
    words = "1.5 installs but does not import: ImportError: this release of the toy is broken"
    assert broken["reason"].str.contains(words, regex=False).all(), broken["reason"].tolist()
    good = rows[rows["environment"] == f"{TOY_DIST}==1.0"]
    assert (good["status"] == "ok").all() and (good["operation"] == "write").any()
    assert meta["environments"][f"{TOY_DIST}==1.5"]["failed"] and not meta["environments"][f"{TOY_DIST}==1.0"]["failed"]


def test_a_notebook_says_versions_with_VERSIONS():
    from benchmarks_lib.run.runner import notebook_arguments
    from benchmarks_lib.suites import get_suite

    names = {name.upper(): None for name in get_suite("writers").parameters}
    params, _ = notebook_arguments("writers", {**names, "VERSIONS": ["zarr==2.18.7,3.1.6"]})
    assert params["versions"] == ["zarr==2.18.7,3.1.6"]
    assert "versions" not in notebook_arguments("writers", {**names, "VERSIONS": None})[0]


def test_a_store_is_read_back_in_another_interpreter(tmp_path):
    """The read-back of a worker in an environment of its own (``verify_elsewhere``): the store and what was written
    handed to a process of the run's interpreter, which verifies it as a worker there would."""
    import numpy as np

    from benchmarks_lib.adapters import make_adapter
    from benchmarks_lib.base.specs import ArraySpec, parse_codec, parse_dims
    from benchmarks_lib.data.datasets import checksum_blocks
    from benchmarks_lib.suites.kit.verification import verify_elsewhere

    spec = ArraySpec(parse_dims("z:8:4,y:16:16"), "uint16", parse_codec("none"))
    data = np.arange(8 * 16, dtype="uint16").reshape(8, 16)
    writer = make_adapter("raw")
    writer.create(tmp_path / "a.raw", spec)
    writer.write(0, data)
    writer.finalize()
    expected = checksum_blocks([data[:4], data[4:]])
    check = verify_elsewhere(sys.executable, tmp_path / "a.raw", spec, writer, expected, 4)
    assert check["verified"] is True and check["verified_scope"] == "full", check
    wrong = verify_elsewhere(sys.executable, tmp_path / "a.raw", spec, writer, "0" * len(expected), 4)
    assert wrong["verified"] is False and "mismatch" in wrong["verify_detail"]
    unknown = make_adapter("raw")
    unknown.name = "no-such-writer"
    assert "no read-back in the run's own environment" in verify_elsewhere(
        sys.executable, tmp_path / "a.raw", spec, unknown, expected, 4)
