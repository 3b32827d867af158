"""The cache/prefetch chapter at tiny sizes: sample files, every read mode local and over both
servers, the client's counts against the server's, skip rows, parameter validation, figures."""

import importlib.util
import json

import numpy as np
import pytest

from benchmarks_lib import httpserver, plots_cache, rootio
from benchmarks_lib.records import SCHEMA_VERSION, to_frame
from benchmarks_lib.specs import SpecError
from benchmarks_lib.suites import CaseContext
from benchmarks_lib.suites import cache as suite

HAVE_ROOT = rootio.root_missing_reason() is None
HAVE_UPROOT = rootio.uproot_missing_reason() is None
needs_root = pytest.mark.skipif(not HAVE_ROOT, reason=f"ROOT is not installed ({rootio.ROOT_INSTALL_HINT})")
needs_uproot = pytest.mark.skipif(not HAVE_UPROOT, reason="uproot is not installed")
SERVERS = ["builtin"] + (["nginx"] if httpserver.nginx_path() else [])
TINY = {
    "entries": 60, "branches": 4, "auto_flush": 20, "sample_writer": "root", "cache_sizes": [0, "1MB"],
    "async_prefetch": [0, 1], "locations": ["local", "http"], "latencies_ms": [0], "servers": ["builtin"],
    "uproot_sources": ["fsspec", "http", "multithreaded"], "uproot_steps": [30, "1MB"], "uproot_workers": 2,
    "zarr_clients": list(suite.ZARR_CLIENTS), "zarr_layouts": ["unsharded", "sharded"], "zarr_workloads": ["cutouts"],
    "zarr_cache": [False, True], "zarr_concurrency": [2], "zarr_dims": "z:8:4:8,y:32:16:32,x:32:16:32",
    "zarr_cutout": "4,12,12", "zarr_cutouts": 2, "read_timeout_s": 120,
}
# nginx: one configuration per reader is enough to show the same counts through another server
NGINX = {**TINY, "servers": ["nginx"], "locations": ["http"], "cache_sizes": ["1MB"], "async_prefetch": [1],
         "uproot_steps": ["1MB"], "zarr_layouts": ["sharded"], "zarr_cache": [True]}


def _run(params: dict, tmp_path, readers: list[str]) -> list[dict]:
    rows = []
    for case in suite.build_cases({**params, "readers": readers}, "quick"):
        ctx = CaseContext(scratch=tmp_path / "scratch", iterations=1, warmups=0, profile="quick", run_dir=tmp_path)
        ctx.scratch.mkdir(exist_ok=True)
        for row in suite.run_case(case, ctx):
            rows.append({**row, "backend": case.backend, "suite": "cache"})
    return rows


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """Every reader over the tiny matrix on the builtin server (and a slice of it on nginx)."""
    tmp = tmp_path_factory.mktemp("cache-run")
    readers = [r for r, ok in (("root", HAVE_ROOT), ("uproot", HAVE_UPROOT and HAVE_ROOT), ("zarr", True)) if ok]
    out = _run(TINY, tmp, readers)
    if httpserver.nginx_path():
        out += _run(NGINX, tmp, readers)
    return out


def _ok(rows, **match):
    sel = [r for r in rows if r["status"] == "ok" and all(r.get(k) == v for k, v in match.items())]
    assert sel, f"no ok rows for {match}"
    return sel


# -- parameters ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("params", "message"), [
    ({"cache_sizes": ["lots"]}, "size 'lots'"),
    ({"async_prefetch": [2]}, "async_prefetch value 2"),
    ({"locations": ["ftp"]}, "allowed: local, http"),
    ({"servers": ["apache"]}, "allowed: builtin, nginx"),
    ({"latencies_ms": [-1]}, "latencies_ms value -1"),
    ({"uproot_steps": ["many"]}, "size 'many'"),
    ({"uproot_sources": ["xrootd"]}, "allowed: fsspec, http, multithreaded"),
    ({"zarr_clients": ["h5py"]}, "allowed: zarr-fsspec"),
    ({"zarr_cutout": "4,4"}, "has 2 sizes"),
    ({"zarr_concurrency": [0]}, "zarr_concurrency"),
    ({"entries": 0}, "entries"),
    ({"auto_flush": 0}, "auto_flush 0"),
    ({"readers": ["hdf5"]}, "allowed: root, uproot, zarr"),
    ({"cache_size": [0]}, "parameter 'cache_size' is unknown"),
])
def test_bad_parameters_fail_before_any_work(params, message):
    with pytest.raises(SpecError, match=message):
        suite.build_cases(params, "quick")


def test_profiles_build_serialisable_cases():
    for profile in suite.PROFILES:
        cases = suite.build_cases({}, profile)
        assert cases and len({c.case_id for c in cases}) == len(cases)
        for case in cases:
            json.loads(case.to_json())
    quick = suite.build_cases({}, "quick")
    readers = {c.params["reader"] for c in quick}
    assert readers == {"root", "uproot", "zarr"}
    # None means "profile default"
    assert len(suite.build_cases({"entries": None, "cache_sizes": None}, "quick")) == len(quick)


def test_zarr_selections_pan_and_stay_inside():
    sels = suite.zarr_selections((8, 32, 32), (4, 16, 16), "cutouts", (4, 12, 12), 5)
    assert len(sels) == 5 and len({str(s) for s in sels}) > 1
    for sel in sels:
        assert all(0 <= s.start < s.stop <= n for s, n in zip(sel, (8, 32, 32), strict=True))
    assert suite.zarr_selections((8, 32, 32), (4, 16, 16), "whole", (4, 12, 12), 5) == [
        (slice(0, 8), slice(0, 32), slice(0, 32))]


# -- sample files --------------------------------------------------------------------------------


@needs_root
@pytest.mark.parametrize("writer", ["root", pytest.param("uproot", marks=needs_uproot)])
def test_sample_file_layout(tmp_path, writer):
    info = rootio.ensure_sample_file(tmp_path, 30, 6, 10, writer=writer)
    again = rootio.ensure_sample_file(tmp_path, 30, 6, 10, writer=writer)
    assert info == again and info.file_bytes > 0
    assert info.entry_bytes == 30 * 100 * (4 + 8 + 4 + 2 + 4 + 8)
    if HAVE_UPROOT:
        import uproot

        with uproot.open(info.path) as f:
            tree = f["T"]
            assert tree.num_entries == 30 and list(tree.keys()) == [f"b{i}" for i in range(6)]
            arrays = tree.arrays(library="np")
            kinds = [arrays[f"b{i}"].dtype for i in range(6)]
            assert [k.kind + str(k.itemsize) for k in kinds] == ["f4", "f8", "i4", "i2", "f4", "f8"]
            assert arrays["b0"].shape == (30, 100) and np.ptp(arrays["b0"]) > 0
            if writer == "root":
                assert tree.member("fAutoFlush") == 10


def test_sample_arguments_are_checked(tmp_path):
    with pytest.raises(SpecError, match="sample writer"):
        rootio.create_sample_file(tmp_path / "x.root", 10, 2, writer="h5py")
    with pytest.raises(SpecError, match="entries"):
        rootio.create_sample_file(tmp_path / "x.root", 0, 2)


# -- ROOT ----------------------------------------------------------------------------------------


@needs_root
def test_root_reads_every_entry_in_every_mode(rows):
    expected = rootio.entry_bytes(TINY["entries"], TINY["branches"])
    root_rows = _ok(rows, reader="root")
    assert len(root_rows) == 8 + (1 if "nginx" in SERVERS else 0)  # builtin: 2 places x 2 caches x 2; nginx: 1
    for r in root_rows:
        assert r["nbytes"] == expected and r["verified"] and r["entries"] == TINY["entries"]
        assert r["cache_state"] == "cold"
        assert r["rss_baseline_bytes"] > 0 and r["cpu_s"] > 0
    no_cache = _ok(rows, reader="root", location="local", cache_bytes=0)
    cached = _ok(rows, reader="root", location="local", cache_bytes=1_000_000)
    assert no_cache[0]["root_read_calls"] > cached[0]["root_read_calls"]


@needs_root
def test_root_counts_match_the_server(rows):
    for r in _ok(rows, reader="root", location="http"):
        assert r["file_class"].endswith("TWebFile")
        assert r["server_head_requests"] == 1
        assert r["server_requests"] == r["root_read_calls"] + 1, r["config"]
        assert r["server_payload_bytes"] == r["root_bytes_read"]


@needs_root
def test_async_prefetch_is_off_for_local_files_and_on_over_http(rows):
    assert not any(r["async_active"] for r in _ok(rows, reader="root", location="local"))
    remote = _ok(rows, reader="root", location="http", async_prefetch=1, cache_bytes=1_000_000)
    assert all(r["async_active"] for r in remote)
    assert not any(r["async_active"] for r in _ok(rows, reader="root", location="http", async_prefetch=0))


# -- uproot --------------------------------------------------------------------------------------


@needs_root
@needs_uproot
def test_uproot_counts_match_the_server(rows):
    expected = rootio.entry_bytes(TINY["entries"], TINY["branches"])
    for r in _ok(rows, reader="uproot"):
        assert r["nbytes"] == expected and r["verified"]
    for r in _ok(rows, reader="uproot", location="http"):
        if r["client"] == "uproot-multithreaded":  # one connection and request per byte range
            assert r["server_requests"] == r["client_chunks"], r["config"]
        else:
            assert r["server_requests"] == r["client_requests"], r["config"]
        assert r["server_payload_bytes"] == r["client_bytes"]
    by_entries = _ok(rows, reader="uproot", client="uproot-http", step_unit="entries", server="builtin")[0]
    by_bytes = _ok(rows, reader="uproot", client="uproot-http", step_unit="bytes", server="builtin")[0]
    assert by_bytes["server_requests"] > by_entries["server_requests"]  # basket headers one by one


# -- zarr ----------------------------------------------------------------------------------------


def test_zarr_reads_are_verified_and_amplification_is_computed(rows):
    zarr_rows = [r for r in rows if r.get("reader") == "zarr"]
    skipped = [r for r in zarr_rows if r["status"] == "skip"]
    for r in skipped:
        assert "not installed" in r["reason"]
    ok = [r for r in zarr_rows if r["status"] == "ok"]
    assert ok, "no zarr client is installed"
    for r in ok:
        assert r["verified"], r["config"]
        assert r["read_amplification"] == pytest.approx(r["server_payload_bytes"] / r["cutout_bytes"])
        assert r["server_requests"] > 0
    sharded = [r for r in ok if r["layout"] == "sharded" and not r["client_cache"] and r["server"] == "builtin"]
    unsharded = [r for r in ok if r["layout"] == "unsharded" and not r["client_cache"] and r["server"] == "builtin"]
    if sharded and unsharded:
        assert min(r["server_requests"] for r in sharded) <= max(r["server_requests"] for r in unsharded)


# -- skips ---------------------------------------------------------------------------------------


def test_missing_libraries_and_servers_become_skip_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(rootio, "root_missing_reason", lambda: f"ROOT is not installed; {rootio.ROOT_INSTALL_HINT}")
    case = suite.build_cases({**TINY, "readers": ["root"], "locations": ["local"]}, "quick")[0]
    ctx = CaseContext(scratch=tmp_path, iterations=1, warmups=0, profile="quick", run_dir=tmp_path)
    (row,) = suite.run_case(case, ctx)
    assert row["status"] == "skip" and "pip install --pre root" in row["reason"] and row["operation"] == "root_read"
    monkeypatch.setattr(httpserver, "nginx_path", lambda: None)
    case = suite.build_cases({**NGINX, "readers": ["zarr"], "zarr_clients": ["tensorstore"]}, "quick")[0]
    if importlib.util.find_spec("tensorstore") and importlib.util.find_spec("zarr"):
        (row,) = suite.run_case(case, ctx)
        assert row["status"] == "skip" and "nginx" in row["reason"]
    assert not list(tmp_path.glob("*.root"))


# -- figures and conclusion ----------------------------------------------------------------------


def test_figures_table_and_conclusion(rows):
    import matplotlib.pyplot as plt

    df = to_frame([{"schema_version": SCHEMA_VERSION, **r} for r in rows])
    for figure in (plots_cache.transactions, plots_cache.times, plots_cache.time_vs_latency, plots_cache.memory,
                   plots_cache.zarr_amplification):
        fig = figure(df)
        assert fig.axes
        plt.close(fig)
    text = plots_cache.conclude(df)
    assert text.startswith("### What this run shows")
    if HAVE_ROOT:
        table = plots_cache.seed004_table(df)
        assert {"Avg RES memory", "Avg REAL time", "Avg CPU time", "Read"} <= set(table.columns)
        assert table["Read"].str.contains("transactions").all()
        assert "TTreeCache" in text and "Local files" in text
    assert plots_cache.conclude(df.iloc[0:0]).startswith("No measurements")


@needs_root
def test_a_failing_fresh_read_reports_the_child_error(tmp_path):
    with pytest.raises(rootio.FreshProcessError, match=r"nothing\.root"):
        rootio.read_with_root(tmp_path / "nothing.root", 0, False, timeout_s=120)
