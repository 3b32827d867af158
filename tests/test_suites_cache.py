"""The cache/prefetch chapter at tiny sizes: sample files, every read mode local and over both
servers, the client's counts against the server's, skip rows, parameter validation, figures."""

import importlib.util
import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from benchmarks_lib import servers
from benchmarks_lib.adapters import adapter_class, backend_status, library, participants
from benchmarks_lib.adapters.remote import zarr_http as zarr_reads
from benchmarks_lib.adapters.remote.fsspec_store import BlockCachedStore
from benchmarks_lib.base import scratch
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.chapters import cache as chapter
from benchmarks_lib.inputs import inputs_dir, root_sample, zarr_store
from benchmarks_lib.measure.fresh import FreshProcessError
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame
from benchmarks_lib.servers.nginx import nginx_path
from benchmarks_lib.servers.versitygw import VersityServer, versitygw_missing_reason
from benchmarks_lib.suites import CaseContext
from benchmarks_lib.suites import cache as suite

ROOT, UPROOT = backend_status("root", "remote"), backend_status("uproot", "remote")
HAVE_ROOT, HAVE_UPROOT = ROOT.available, UPROOT.available
needs_root = pytest.mark.skipif(not HAVE_ROOT, reason=str(ROOT.reason))
needs_uproot = pytest.mark.skipif(not HAVE_UPROOT, reason=str(UPROOT.reason))
RootReader = adapter_class("root", "remote")
SERVERS = ["builtin"] + (["nginx"] if nginx_path() else [])
TINY = {
    "entries": 60, "branches": 4, "auto_flush": 20, "sample_writer": "root", "cache_sizes": [0, "1MB"],
    "async_prefetch": [0, 1], "locations": ["local", "http"], "latencies_ms": [0], "bandwidth": None,
    "servers": ["builtin"],
    "uproot_sources": ["fsspec", "http", "multithreaded"], "uproot_steps": [30, "1MB"], "uproot_workers": 2,
    "zarr_clients": list(suite.ZARR_CLIENTS), "zarr_layouts": ["unsharded", "sharded"], "zarr_workloads": ["cutouts"],
    "zarr_cache": [False, True], "zarr_concurrency": [2], "zarr_dims": "z:8:4:8,y:32:16:32,x:32:16:32",
    "zarr_cutout": "4,12,12", "zarr_cutouts": 2, "read_timeout_s": 120,
}
# S3: the Zarr store copied to a real versitygw behind a 2 ms link, read by every client (one layout is enough)
S3 = {**TINY, "locations": ["s3"], "latencies_ms": [2], "zarr_layouts": ["sharded"]}
# nginx: one configuration per reader is enough to show the same counts through another server
NGINX = {**TINY, "servers": ["nginx"], "locations": ["http"], "cache_sizes": ["1MB"], "async_prefetch": [1],
         "uproot_steps": ["1MB"], "zarr_layouts": ["sharded"], "zarr_cache": [True]}


def _context(tmp_path) -> CaseContext:
    """A case context laid out as the runner does: a marked run scratch holding a marked case scratch."""
    run = tmp_path / "scratch"
    if not run.exists():
        scratch.create_marked_dir(run)
    case = run / "case"
    if not case.exists():
        scratch.create_marked_dir(case)
    return CaseContext(scratch=case, iterations=1, warmups=0, profile="quick", run_dir=tmp_path / "results")


def _run(params: dict, tmp_path, readers: list[str]) -> list[dict]:
    rows = []
    for case in suite.build_cases({**params, "readers": readers}, "quick"):
        for row in suite.run_case(case, _context(tmp_path)):
            rows.append({**row, "backend": case.backend, "suite": "cache"})
    return rows


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """Every reader over the tiny matrix on the builtin server (and a slice of it on nginx)."""
    tmp = tmp_path_factory.mktemp("cache-run")
    readers = [r for r, ok in (("root", HAVE_ROOT), ("uproot", HAVE_UPROOT and HAVE_ROOT), ("zarr", True)) if ok]
    out = _run(TINY, tmp, readers)
    if nginx_path():
        out += _run(NGINX, tmp, readers)
    if versitygw_missing_reason() is None:
        environment, started = dict(os.environ), []
        enter = VersityServer.__enter__

        def spy(self):  # remembers each start's credentials, to look for them in the rows
            started.append(enter(self).env)
            return self

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(VersityServer, "__enter__", spy)
            s3_rows = _run(S3, tmp, ["zarr"])
        assert dict(os.environ) == environment, "the S3 site left its credentials in the environment"
        text = json.dumps(s3_rows, default=str)
        assert started and not any(env[k] in text for env in started for k in ("AWS_ACCESS_KEY_ID",
                                                                               "AWS_SECRET_ACCESS_KEY"))
        out += s3_rows
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
    ({"read_timeout_s": "abc"}, "read_timeout_s 'abc' is not a number of seconds"),
    ({"read_timeout_s": True}, "read_timeout_s True is not a number"),
    ({"latencies_ms": 10}, "latencies_ms 10 must be a list"),
    ({"cache_sizes": 5}, "cache_sizes 5 must be a list"),
    ({"zarr_cutout": 4}, "zarr_cutout 4 must be a list"),
    ({"zarr_concurrency": {"a": 1}}, "zarr_concurrency .* must be a list"),
    ({"latencies_ms": [[1]]}, r"latencies_ms item \[1\] is not a string or number"),
    ({"entries": "abc"}, "entries 'abc' is not an integer"),
    ({"auto_flush": 1.5}, "auto_flush 1.5 is not an integer"),
    ({"zarr_dims": 5}, "zarr_dims 5 is not text"),
    ({"zarr_cache": ["maybe"]}, "zarr_cache value 'maybe' is not a flag"),
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
    assert readers == {"root", "zarr"}  # uproot: standard
    # quick's Zarr cases are standard's own (a quick run compares with the standard reference)
    def key(case):  # what is measured (the time limit of a read is not)
        return json.dumps([case.backend, {k: v for k, v in case.params.items() if k != "timeout_s"}], sort_keys=True)

    standard = {key(c) for c in suite.build_cases({}, "standard")}
    zarr = [c for c in quick if c.params["reader"] == "zarr"]
    assert zarr and all(key(c) in standard for c in zarr)
    # None means "profile default"
    assert len(suite.build_cases({"entries": None, "cache_sizes": None}, "quick")) == len(quick)


def test_zarr_selections_pan_and_stay_inside():
    sels = zarr_store.zarr_selections((8, 32, 32), (4, 16, 16), "cutouts", (4, 12, 12), 5)
    assert len(sels) == 5 and len({str(s) for s in sels}) > 1
    for sel in sels:
        assert all(0 <= s.start < s.stop <= n for s, n in zip(sel, (8, 32, 32), strict=True))
    assert zarr_store.zarr_selections((8, 32, 32), (4, 16, 16), "whole", (4, 12, 12), 5) == [
        (slice(0, 8), slice(0, 32), slice(0, 32))]


# -- sample files --------------------------------------------------------------------------------


@needs_root
@pytest.mark.parametrize("writer", ["root", pytest.param("uproot", marks=needs_uproot)])
def test_sample_file_layout(tmp_path, writer):
    info = root_sample.ensure_sample_file(tmp_path, 30, 6, 10, writer=writer)
    again = root_sample.ensure_sample_file(tmp_path, 30, 6, 10, writer=writer)
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
        root_sample.create_sample_file(tmp_path / "x.root", 10, 2, writer="h5py")
    with pytest.raises(SpecError, match="entries"):
        root_sample.create_sample_file(tmp_path / "x.root", 0, 2)


# -- ROOT ----------------------------------------------------------------------------------------


@needs_root
def test_root_reads_every_entry_in_every_mode(rows):
    expected = root_sample.entry_bytes(TINY["entries"], TINY["branches"])
    root_rows = _ok(rows, reader="root")
    assert len(root_rows) == 8 + (1 if "nginx" in SERVERS else 0)  # builtin: 2 places x 2 caches x 2; nginx: 1
    for r in root_rows:
        assert r["nbytes"] == expected and r["verified"] and r["entries"] == TINY["entries"]
        assert r["cache_state"] == "cold" and r["eviction_verified"]
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
    expected = root_sample.entry_bytes(TINY["entries"], TINY["branches"])
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


@pytest.mark.skipif(versitygw_missing_reason() is not None, reason=str(versitygw_missing_reason()))
def test_zarr_reads_through_s3_are_cold_counted_by_the_server_and_keep_no_secret(rows):
    """Through S3 (a real versitygw behind the emulated link): every client reads and verifies the store, the
    server's own disk reads prove each read cold, its counters and the link's connections are in the row,
    and the credentials are in no row (checked by the fixture)."""
    s3 = [r for r in rows if r.get("location") == "s3"]
    assert {r["client"] for r in s3 if r["status"] == "ok"} >= {"tensorstore", "zarr-obstore"}
    for r in (r for r in s3 if r["status"] == "ok"):
        assert r["verified"] and r["cache_state"] == "cold", r["config"]
        assert r["server"] == "versitygw" and r["latency_ms"] == 2 and r["s3_server"].startswith("versitygw v")
        assert r["server_requests"] > 0 and r["server_io_read_bytes"] > 0 and r["server_connections"] >= 1
        assert r["read_amplification"] == pytest.approx(r["server_payload_bytes"] / r["cutout_bytes"])


def test_s3_location_parameters_are_checked():
    cases = suite.build_cases({**S3, "readers": ["zarr"], "latencies_ms": [0, 5]}, "quick")
    assert {(c.params["server"], c.params["latency_ms"]) for c in cases} == {("versitygw", 0), ("versitygw", 5)}
    mine = suite.build_cases({**S3, "readers": ["zarr"], "s3_endpoint": "http://127.0.0.1:9", "latencies_ms": [0, 5],
                              "s3_target": "s3://my-bucket/x"}, "quick")
    assert {(c.params["server"], c.params["s3_target"]) for c in mine} == {("endpoint", "s3://my-bucket/x")}
    narrow = suite.build_cases({**S3, "readers": ["zarr"], "locations": ["http", "s3"], "zarr_concurrency": [1, 2],
                                "s3_concurrency": [2]}, "quick")
    assert {c.params["concurrency"] for c in narrow if c.params["location"] == "s3"} == {2}
    assert {c.params["concurrency"] for c in narrow if c.params["location"] == "http"} == {1, 2}
    for bad, message in (({"s3_target": "bucket"}, "S3 target"), ({"s3_endpoint": "ftp://x"}, "S3 endpoint"),
                         ({"locations": ["ftp"]}, "allowed: local, http, s3"), ({"s3_concurrency": [0]}, "s3_conc"),
                         ({"s3_workloads": ["all"]}, "allowed: whole, cutouts")):
        with pytest.raises(SpecError, match=message):
            suite.build_cases({**S3, **bad}, "quick")


# -- skips ---------------------------------------------------------------------------------------


def test_missing_libraries_and_servers_become_skip_rows(tmp_path, monkeypatch):
    real = library.missing_modules
    monkeypatch.setattr(library, "missing_modules", lambda modules: ["ROOT"] if "ROOT" in modules else real(modules))
    case = suite.build_cases({**TINY, "readers": ["root"], "locations": ["local"]}, "quick")[0]
    ctx = CaseContext(scratch=tmp_path, iterations=1, warmups=0, profile="quick", run_dir=tmp_path)
    (row,) = suite.run_case(case, ctx)
    assert row["status"] == "skip" and "pip install --pre root" in row["reason"] and row["operation"] == "root_read"
    monkeypatch.setattr("benchmarks_lib.servers.nginx.nginx_path", lambda: None)
    case = suite.build_cases({**NGINX, "readers": ["zarr"], "zarr_clients": ["tensorstore"]}, "quick")[0]
    if importlib.util.find_spec("tensorstore") and importlib.util.find_spec("zarr"):
        (row,) = suite.run_case(case, ctx)
        assert row["status"] == "skip" and "nginx" in row["reason"]
    assert not list(tmp_path.glob("*.root"))



def test_a_library_found_missing_at_the_first_read_is_the_cases_skip_row(tmp_path, monkeypatch):
    """A broken install shows only when the fresh reader starts (it replies "unavailable"): the case, set up and its
    server started, ends with a skip row saying why, measured whole as in rounds, and its server is stopped."""
    from benchmarks_lib.base.availability import Unavailable
    from benchmarks_lib.suites.cache import reads

    def broken(*args, **kwargs):
        raise Unavailable("tensorstore is broken here: pip install --force-reinstall tensorstore")

    monkeypatch.setattr(reads, "_read_once", broken)
    case = suite.build_cases({**TINY, "readers": ["zarr"], "zarr_clients": ["tensorstore"], "zarr_layouts": ["sharded"],
                              "zarr_cache": [False]}, "quick")[0]
    if suite.unavailable_reason(case):
        pytest.skip(suite.unavailable_reason(case))
    ctx = _context(tmp_path)
    (row,) = suite.run_case(case, replace(ctx, iterations=3))
    assert row["status"] == "skip" and "broken here" in row["reason"] and row["operation"] == "zarr_read_cutouts"
    steps = suite.rounds(case, ctx)
    assert next(steps) == []
    with pytest.raises(StopIteration) as end:
        next(steps)
    assert [r["status"] for r in end.value.value] == ["skip"]
    assert not _live_processes_mentioning(str(tmp_path))

# -- figures and conclusion ----------------------------------------------------------------------


def test_figures_table_and_conclusion(rows):
    import matplotlib.pyplot as plt

    df = to_frame([{"schema_version": SCHEMA_VERSION, **r} for r in rows])
    for figure in (chapter.transactions, chapter.times, chapter.time_vs_latency, chapter.memory,
                   chapter.zarr_amplification, chapter.zarr_s3_vs_http, chapter.server_cpu):
        fig = figure(df)
        assert fig.axes
        plt.close(fig)
    text = chapter.conclusion(df)
    assert "### What this run shows" in text  # after the chapter's answer
    assert "the server" in text.lower() and "bottleneck" in text  # the server's share is always stated
    shares = chapter.server_rows(df)["server_share"]
    assert not shares.empty and (shares >= 0).all()
    if HAVE_ROOT:
        table = chapter.summary(df)
        assert {"Avg RES memory", "Avg REAL time", "Avg CPU time", "Read"} <= set(table.columns)
        assert table["Read"].str.contains("transactions").all()
        assert "TTreeCache" in text and "Local files" in text
    assert chapter.conclusion(df.iloc[0:0]).startswith("No measurements")


@needs_root
def test_a_failing_fresh_read_reports_the_child_error(tmp_path):
    with pytest.raises(FreshProcessError, match=r"nothing\.root"):
        RootReader.read(tmp_path / "nothing.root", timeout_s=120, cache_bytes=0, async_prefetch=False)


# -- what the rows say about the server and the cache -------------------------------------------


def test_remote_rows_carry_the_server_cpu_and_its_disk_reads(rows):
    remote = [r for r in rows if r["status"] == "ok" and r["location"] == "http"]
    assert remote
    for r in remote:
        assert r["server_cpu_s"] is not None and r["server_cpu_s"] >= 0, r["config"]
        if r["server"] == "builtin":
            assert r["server_io_read_bytes"] is not None
        # a proven eviction and the server's disk reads make it cold (nothing may warm the input in between)
        assert r["cache_state"] == ("cold" if r["eviction_verified"] else "cold_unverified"), r["config"]


def test_a_read_whose_eviction_failed_is_cold_unverified(tmp_path, monkeypatch):
    eviction = importlib.import_module("benchmarks_lib.measure.eviction")  # where the suites evict

    def not_evicted(paths, drop_caches=True):
        report = real(paths, drop_caches=drop_caches)
        return type(report)(report.files, report.bytes, report.bytes, False)  # everything still resident

    real = eviction.evict_page_cache
    monkeypatch.setattr(eviction, "evict_page_cache", not_evicted)
    case = suite.build_cases({**TINY, "readers": ["zarr"], "zarr_clients": ["tensorstore"], "zarr_layouts": ["sharded"],
                              "zarr_cache": [False]}, "quick")[0]
    if suite.unavailable_reason(case):
        pytest.skip(suite.unavailable_reason(case))
    (row,) = suite.run_case(case, _context(tmp_path))
    assert row["status"] == "ok" and row["cache_state"] == "cold_unverified" and not row["eviction_verified"]


# -- inputs: in scratch, verified, regenerated ---------------------------------------------------


def test_inputs_live_in_the_run_scratch_not_the_results(tmp_path):
    ctx = _context(tmp_path)
    assert inputs_dir(ctx.scratch) == ctx.scratch.parent / "inputs"
    assert scratch.is_marked(ctx.scratch.parent)
    unmarked = CaseContext(scratch=tmp_path / "plain", iterations=1, warmups=0, profile="quick", run_dir=tmp_path)
    assert inputs_dir(unmarked.scratch) == tmp_path / "plain" / "inputs"
    cases = suite.build_cases({**TINY, "readers": ["root", "zarr"]}, "quick")
    stores = {json.dumps([c.params["store"], c.params["layout"]]) for c in cases if "store" in c.params}
    array_bytes = 2 * 8 * 32 * 32  # uint16 z:8,y:32,x:32
    sample_bytes = root_sample.entry_bytes(TINY["entries"], TINY["branches"])
    assert suite.scratch_bytes(cases) >= sample_bytes + len(stores) * array_bytes


@needs_root
def test_a_truncated_sample_is_written_again_and_the_case_succeeds(tmp_path):
    params = {**TINY, "readers": ["root"], "locations": ["local"], "cache_sizes": [0], "async_prefetch": [0]}
    (case,) = suite.build_cases(params, "quick")
    (first,) = suite.run_case(case, _context(tmp_path))
    assert first["status"] == "ok" and first["verified"]
    (sample,) = inputs_dir(_context(tmp_path).scratch).glob("*.root")
    size = sample.stat().st_size
    with open(sample, "r+b") as f:  # what a full disk left behind
        f.truncate(size // 2)
    (again,) = suite.run_case(case, _context(tmp_path))
    assert again["status"] == "ok" and again["verified"] and sample.stat().st_size == size
    assert not list(sample.parent.glob(".*.tmp"))


def test_a_damaged_zarr_store_is_written_again(tmp_path):
    pytest.importorskip("zarr")
    inputs = _context(tmp_path).scratch.parent / "inputs"
    store = zarr_store.ensure_zarr_store(inputs, TINY["zarr_dims"], "sharded")
    info = zarr_store.zarr_store_info(store)
    shard = next(p for p in store.rglob("*") if p.is_file() and p.parent.name != store.name)
    shard.write_bytes(shard.read_bytes()[:10])
    assert zarr_store.check_zarr_store(store, {"dims": TINY["zarr_dims"], "layout": "sharded"}) is None
    again = zarr_store.ensure_zarr_store(inputs, TINY["zarr_dims"], "sharded")
    assert again == store and zarr_store.zarr_store_info(store) == info
    assert not list(inputs.glob(".*.tmp"))


def test_a_failed_sample_write_leaves_nothing_behind(tmp_path, monkeypatch):
    inputs = _context(tmp_path).scratch.parent / "inputs"

    def disk_full(target, kwargs, timeout_s=None):
        with open(kwargs["path"], "wb") as f:  # a partial file, then the disk is full
            f.write(b"root" + b"\0" * 100)
        raise FreshProcessError("No space left on device")

    monkeypatch.setattr(root_sample.fresh, "call", disk_full)
    with pytest.raises(FreshProcessError, match="No space"):
        root_sample.ensure_sample_file(inputs, 30, 2, 10)
    assert sorted(p.name for p in inputs.iterdir()) == [".sample.lock"]


# -- verification that can fail ------------------------------------------------------------------


@needs_root
def test_branch_sums_catch_wrong_values(tmp_path):
    sample = root_sample.ensure_sample_file(tmp_path, 30, 4, 10)
    read = RootReader.read(sample.path, timeout_s=120, cache_bytes=0, async_prefetch=False)
    assert root_sample.sums_match(read["branch_sums"], sample)
    wrong = list(read["branch_sums"])
    wrong[2] += 1  # one int value off by one
    assert not root_sample.sums_match(wrong, sample)
    assert not root_sample.sums_match(read["branch_sums"][:-1], sample)


def test_zarr_reads_are_checked_against_the_written_crc(tmp_path):
    pytest.importorskip("zarr")
    if importlib.util.find_spec("tensorstore") is None:
        pytest.skip("tensorstore is not installed")
    inputs = _context(tmp_path).scratch.parent / "inputs"
    store = zarr_store.ensure_zarr_store(inputs, TINY["zarr_dims"], "unsharded")
    crc = zarr_store.zarr_store_info(store)["crc32"]
    kwargs = {"client": "tensorstore", "workload": "whole", "client_cache": False, "concurrency": 2,
              "cutout": [4, 12, 12], "cutouts": 1, "dims": TINY["zarr_dims"]}
    cutouts = {**kwargs, "workload": "cutouts", "cutouts": 3}
    expected = zarr_store.expected_crc32s(store, "cutouts", [4, 12, 12], 3)
    assert zarr_store.expected_crc32s(store, "cutouts", [4, 12, 12], 3) == expected  # kept beside the store
    assert zarr_store.expected_crc32s(store, "whole", [4, 12, 12], 1) == [crc]
    with servers.serve(inputs) as server:
        url = server.url_for(store)
        good = zarr_reads.measure_read(url, expected_crc32s=[crc], **kwargs)
        bad = zarr_reads.measure_read(url, expected_crc32s=[crc ^ 1], **kwargs)
        pan = zarr_reads.measure_read(url, expected_crc32s=expected, **cutouts)
        generated = zarr_reads.measure_read(url, **cutouts)  # against the generated data
        wrong = zarr_reads.measure_read(url, expected_crc32s=[*expected[:-1], expected[-1] ^ 1], **cutouts)
    assert good["verified"] and good["data_crc32"] == crc
    assert not bad["verified"]
    assert pan["verified"] and generated["verified"] and not wrong["verified"]


# -- the client cache does not serialise different keys ------------------------------------------


def test_block_cached_store_fetches_different_keys_concurrently(tmp_path):
    pytest.importorskip("zarr")
    pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    import asyncio

    from zarr.core.buffer import default_buffer_prototype

    root = tmp_path / "site"
    root.mkdir()
    for name in ("a", "b"):
        (root / name).write_bytes(name.encode() * 1000)
    # a long round trip, so that two fetches overlap on the server when the store lets them
    with servers.serve(root, latency_ms=300) as server:
        store = BlockCachedStore.from_url(server.url)

        async def both():
            prototype = default_buffer_prototype()
            return await asyncio.gather(store.get("a", prototype), store.get("b", prototype))

        server.reset()
        a, b = asyncio.run(both())
        counters = server.counters()
    assert a.to_bytes() == b"a" * 1000 and b.to_bytes() == b"b" * 1000
    assert counters.max_in_flight >= 2


# -- the registry ---------------------------------------------------------------------------------


def test_remote_readers_are_registered_and_listing_imports_no_library():
    import subprocess
    import sys

    for name in participants("remote"):
        cls = adapter_class(name, "remote")
        assert cls.kind == "remote" and cls.install_hint and cls.measure_target.count(":") == 1
        status = backend_status(name, "remote")
        assert status.available or "install:" in status.reason
    assert set(suite.ZARR_CLIENTS) | {"root", "uproot"} == set(participants("remote"))
    code = ("import sys; from benchmarks_lib.adapters import backend_status, participants; "
            "[backend_status(n, 'remote') for n in participants('remote')]; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'ROOT', 'uproot', 'zarr', 'tensorstore', "
            "'fsspec', 'obstore'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.skipif(versitygw_missing_reason() is not None, reason=str(versitygw_missing_reason()))
def test_zarr_reads_from_your_own_s3_endpoint_touch_only_their_prefix(tmp_path, monkeypatch):
    """s3_endpoint: the store goes to the user's server (here a versitygw this test starts, standing in for one),
    with the user's credentials from the AWS environment; the read is verified and labelled ``unknown`` (its
    caches are not ours), and afterwards the bucket holds the user's own object and nothing of ours."""
    import obstore

    from benchmarks_lib.adapters.obstore_s3 import s3_store
    from benchmarks_lib.data.storage import parse_s3

    with VersityServer(bucket="mine") as server:
        for key, value in server.env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("AWS_ENDPOINT_URL")
        bucket = s3_store(parse_s3("s3://mine", server.endpoint))
        obstore.put(bucket, "x/keep.txt", b"the user's")
        params = {**S3, "readers": ["zarr"], "zarr_clients": ["tensorstore"], "zarr_cache": [False],
                  "s3_endpoint": server.endpoint, "s3_target": "s3://mine/x"}
        (case,) = suite.build_cases(params, "quick")
        (row,) = suite.run_case(case, _context(tmp_path))
        assert row["status"] == "ok" and row["verified"] and row["cache_state"] == "unknown"
        assert row["server"] == "endpoint" and "server_requests" not in row
        left = [m["path"] for batch in obstore.list(bucket) for m in batch]
        assert left == ["x/keep.txt"]
        assert "AWS_ENDPOINT_URL" not in os.environ


def test_the_fresh_reads_timed_regions_count_as_the_cases_timed_time(tmp_path):
    """Each read runs in a fresh process; its timed region (CLOCK_MONOTONIC, shared) is handed back to the case's
    ledger, so the cache chapter's timed share counts its reads (it said 1-2% before)."""
    from benchmarks_lib.measure.ledger import LEDGER

    case = suite.build_cases({**TINY, "readers": ["zarr"]}, "quick")[0]
    LEDGER.reset()
    rows = [r for r in suite.run_case(case, _context(tmp_path)) if r["status"] == "ok"]
    timed = LEDGER.seconds()["timed"]
    reads = {r["iteration"]: r["elapsed_s"] for r in rows if r.get("elapsed_s")}
    assert reads and timed >= 0.99 * sum(reads.values()) and not any("_timed_span_ns" in r for r in rows)


# -- rounds --------------------------------------------------------------------------------------


def test_a_small_run_is_measured_in_rounds_each_case_set_up_once(workdir):
    """The smoke run's Zarr reads over HTTP by two clients, 9 rounds at most: every ok read carries its round,
    run.json states the question, each case's server was started once and served every round of it (its URL is one
    per case, none shared)."""
    from benchmarks_lib.run.runner import run_suite

    params = {**suite.SUITE.smoke, "readers": ["zarr"], "locations": ["http"],
              "zarr_clients": ["zarr-obstore", "tensorstore"], "iterations": 9}
    cases = suite.build_cases(params, "quick")
    if reason := next(filter(None, map(suite.unavailable_reason, cases)), None):
        pytest.skip(reason)
    result = run_suite("cache", params, results_dir=workdir / "results", run_id="rounds", ceiling=False,
                       progress=None, budget="30m")
    df = result.df
    ok = df[(df["status"] == "ok") & df["operation"].isin(suite.SUITE.questions)]
    assert set(ok["operation"]) == {"zarr_read_cutouts"} and ok["round"].notna().all()
    assert set(ok["case_id"]) == {c.case_id for c in cases} and ok["verified"].all()
    assert ok["cache_state"].isin(["cold", "cold_unverified"]).all()
    for _, rows in ok.groupby("case_id"):  # one read per round, numbered 0.. in order; one server for all of them
        assert sorted(rows["round"]) == list(range(len(rows))) and 8 <= len(rows) <= 9
        assert rows["server_url"].nunique() == 1
    assert ok.groupby("case_id")["server_url"].first().is_unique
    (question,) = result.meta["rounds"]["questions"]
    assert question["operation"] == "zarr_read_cutouts" and len(question["cases"]) == 2
    assert question["answer"] != "open" and question["rounds"] >= 8
    # closed, each case stopped its server: nothing serves the run's scratch any more, and the scratch is gone
    assert not _live_processes_mentioning(str(workdir / "scratch")) and not any((workdir / "scratch").iterdir())


def _live_processes_mentioning(text: str) -> list[str]:
    """Command lines of live (not zombie) processes that mention ``text``."""
    found = []
    for proc in filter(lambda p: p.name.isdigit(), Path("/proc").iterdir()):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            found.append(cmd)
    return found

