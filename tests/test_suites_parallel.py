"""Parallel writes: W real Dask workers write one real Zarr array; regions cover it exactly once; the whole
array is verified by the other library; bad parameters are refused before any work."""

from __future__ import annotations

import json

import pytest
from conftest import assert_refused_naming_the_value

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.servers.versitygw import versitygw_missing_reason
from benchmarks_lib.suites.parallel import SUITE, assignments, build_cases

pytest.importorskip("distributed")


@pytest.mark.parametrize("length,workers,step,stripe", [(64, 1, 8, None), (64, 4, 8, None), (64, 2, 8, 4),
                                                         (64, 4, 32, 4), (10, 3, 1, 3)])
def test_assignments_cover_the_axis_exactly_once(length, workers, step, stripe):
    work = assignments(length, workers, step, stripe)
    assert len(work) == workers
    rows = sorted(r for ranges in work for a, b in ranges for r in range(a, b))
    assert rows == list(range(length))
    if stripe is None:  # aligned: one range each, on multiples of step
        assert all(len(r) == 1 and r[0][0] % step == 0 for r in work)
    with pytest.raises(SpecError, match="multiples"):
        assignments(60, 8, 8)


@pytest.mark.parametrize("bad", [{"workers": [0]}, {"workers": "two"}, {"alignments": ["diagonal"]},
                                 {"backends": ["h5py"]}, {"dims": "z:64:8,y:64:32,x:64:32"},
                                 {"dims": "z:60:4:12,y:64:32:64,x:64:32:64"}, {"codec": ["lz4"]},
                                 {"fsync": "yes"}, {"dataset": "noise"}, {"cluster": "http://host:8786"},
                                 {"targets": ["s3://No_Bucket/x"]}, {"targets": ["/tmp/x"]}])
def test_bad_parameters_are_refused_naming_the_value(bad):
    assert_refused_naming_the_value(build_cases, {}, bad)


def test_workers_write_one_array_and_it_is_verified_by_the_other_library(workdir, monkeypatch):
    private_tmp = workdir / "tmp"  # the case's LocalCluster keeps its files in the case's scratch, not here
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    params = {**SUITE.smoke, "backends": ["zarr-python", "tensorstore"], "alignments": ["chunk", "shard", "unaligned"],
              "iterations": 2}
    result = run_suite("parallel", params, profile="quick", results_dir=workdir / "results", run_id="par",
                       progress=None)
    df = result.df
    rows = df[(df["backend"] != "ceiling") & (df["status"] == "ok")]
    assert set(rows["backend"]) == {"zarr-python", "tensorstore"}
    assert set(rows["alignment"]) == {"chunk", "shard", "unaligned"} and set(rows["workers"]) == {1, 2}
    assert len(rows) == 2 * 3 * 2 * 2  # backends x alignments x workers x iterations
    assert (rows["gbps"] > 0).all() and (rows["worker_gbps_median"] > 0).all()
    assert set(rows["verified_by"]) == {"zarr-python", "tensorstore"}
    assert (rows["verified_by"] != rows["backend"]).all()  # always the other library
    safe = rows[rows["alignment"] != "unaligned"]
    assert safe["verified"].all() and (safe["slabs_wrong"] == 0).all()
    assert set(rows.loc[rows["alignment"] == "shard", "layout"]) == {"sharded"}
    assert rows["fsync_included"].all() and set(rows["sync_method"]) == {"syncfs"}
    assert not [p for p in (workdir / "scratch").iterdir()]
    assert not list(private_tmp.iterdir())


def test_the_workers_of_a_scheduler_of_ones_own_write(workdir):
    """``cluster`` a scheduler address: that cluster's workers write (here a LocalCluster the test starts,
    standing in for a cluster of several hosts on a shared filesystem)."""
    from benchmarks_lib.base.dask_scheduler import start_local_cluster

    with start_local_cluster(2, workdir / "dask") as cluster:
        params = {**SUITE.smoke, "alignments": ["chunk"], "backends": ["tensorstore"],
                  "cluster": cluster.scheduler_address}
        result = run_suite("parallel", params, profile="quick", results_dir=workdir / "results", run_id="ext",
                           progress=None)
        rows = result.df[(result.df["backend"] == "tensorstore") & (result.df["status"] == "ok")]
        assert set(rows["workers"]) == {1, 2} and rows["verified"].all()
        small = {**params, "workers": [1, 2, 4]}  # more workers than the cluster has: a skip row that says so
        result = run_suite("parallel", small, profile="quick", results_dir=workdir / "results", run_id="ext4",
                           progress=None)
        skipped = result.df[result.df["backend"] == "tensorstore"]
        assert set(skipped["status"]) == {"skip"} and "fewer than 4" in skipped["reason"].iloc[0]


@pytest.mark.skipif(versitygw_missing_reason() is not None, reason=str(versitygw_missing_reason()))
def test_workers_write_one_array_through_s3(workdir):
    """targets s3://: the workers write one array as objects on a real versitygw (started by the case; the workers
    get its credentials from the environment they start with); it is verified by the other library, the
    server's request counts are in the rows, and no credential is."""
    params = {**SUITE.smoke, "alignments": ["chunk", "unaligned"], "targets": ["s3://iobench/parallel"]}
    result = run_suite("parallel", params, profile="quick", results_dir=workdir / "results", run_id="par-s3",
                       progress=None)
    rows = result.df[(result.df["backend"] != "ceiling")]
    assert (rows["status"] == "ok").all(), rows.get("error")
    assert set(rows["store"]) == {"s3"} and not rows["fsync_included"].any()
    assert (rows["s3_put_requests"] > 0).all()
    chunk = rows[rows["alignment"] == "chunk"]
    assert chunk["verified"].all() and set(chunk["workers"]) == {1, 2}
    text = (result.df.to_json() + json.dumps(result.meta)).lower()
    assert "secret" not in text and rows["s3_server"].str.startswith("versitygw v").all()


def test_s3_targets_on_a_scheduler_of_ones_own_need_an_endpoint():
    with pytest.raises(SpecError, match="needs an endpoint"):
        build_cases({"cluster": "tcp://10.0.0.5:8786", "targets": ["s3://iobench/parallel"]}, "quick")
    cases = build_cases({"targets": ["file", "s3://iobench/p"], "backends": ["tensorstore"], "alignments": ["chunk"]},
                        "quick")
    assert [c.params.get("target") for c in cases] == [None, "s3://iobench/p"]
