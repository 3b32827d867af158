"""The compression suite at tiny sizes: mesh and array round trips, validation, Pareto front."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks_lib.records import to_frame
from benchmarks_lib.specs import SpecError
from benchmarks_lib.suites import CaseContext
from benchmarks_lib.suites.compression import SUITE, RoundTrip, build_cases, measure_round_trips
from benchmarks_lib.worker import finish_rows

pytest.importorskip("pyvista")
pytest.importorskip("zvtk")
MODULES = {"zvtk": "zvtk", "vtu": "pyvista", "zarr-python": "zarr", "tensorstore": "tensorstore",
           "numcodecs": "numcodecs"}
#: contenders whose library is installed here (the others must be recorded as skips)
AVAILABLE = {c for c, m in MODULES.items() if importlib.util.find_spec(m)}

TINY = {
    "mesh_n": 5, "levels": [-5, 3], "vtu_compressors": ["none", "zlib"], "datasets": ["em_like", "labels"],
    "dims": "z:4:2,y:32:16,x:32:16", "codecs": ["lz4", "zstd:1", "gzip:1", "blosc-lz4:5:shuffle"], "threads": 2,
    "time_cap_s": 5, "seed": 1,
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> pd.DataFrame:
    """Every case of a tiny sweep, run in-process (1 iteration, no warm-up), as a records frame."""
    rows = []
    for case in build_cases(TINY, "quick"):
        scratch = tmp_path_factory.mktemp(case.backend)
        out = SUITE.run_case(case, CaseContext(scratch=scratch, iterations=1, warmups=0, profile="quick"))
        assert not list(scratch.iterdir()), f"{case.backend} left files behind"
        rows += finish_rows(out, case, {"run_id": "test", "machine": "test", "profile": "quick"})
    return to_frame(rows)


# -- meshes --------------------------------------------------------------------------------
def test_mesh_size_is_stated_before_building():
    from benchmarks_lib.meshes import build_tet_mesh, mesh_nbytes, mesh_nbytes_estimate, mesh_shape

    mesh = build_tet_mesh(6, seed=3)
    assert (mesh.n_points, mesh.n_cells) == mesh_shape(6)
    assert mesh_nbytes(mesh) == mesh_nbytes_estimate(6)
    assert "vtkOriginalCellIds" not in mesh.cell_data
    assert 500e6 < mesh_nbytes_estimate(127) < 560e6  # seed 002's "500 MB" mesh


@pytest.mark.parametrize(("fmt", "setting"), [("zvtk", -5), ("zvtk", 19), ("vtu", "none"), ("vtu", "zlib"),
                                              ("vtu", "lz4")])
def test_mesh_round_trip_is_exact(tmp_path: Path, fmt: str, setting):
    from benchmarks_lib import meshes

    mesh = meshes.build_tet_mesh(5, seed=1)
    path = tmp_path / f"mesh.{fmt}"
    if fmt == "zvtk":
        meshes.write_zvtk(mesh, path, level=setting, threads=2)
        back = meshes.read_zvtk(path, threads=2)
    else:
        meshes.write_vtu(mesh, path, compressor=setting)
        back = meshes.read_vtu(path)
    assert meshes.mesh_mismatch(mesh, back) is None


def test_mesh_mismatch_finds_a_changed_value():
    from benchmarks_lib.meshes import build_tet_mesh, mesh_mismatch

    mesh = build_tet_mesh(4, seed=1)
    other = mesh.copy()
    other["cdata"] = np.asarray(other["cdata"]).copy()
    other["cdata"][3] += 1
    assert "cdata" in mesh_mismatch(mesh, other)
    assert "points" in mesh_mismatch(mesh, build_tet_mesh(5, seed=1))


def test_render_writes_a_png_or_says_why_not(tmp_path: Path):
    from benchmarks_lib.meshes import render_mesh_png

    rendering = render_mesh_png(tmp_path / "mesh.png", n=4, window_size=(200, 150))
    if rendering.ok:
        assert rendering.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert "not possible" in rendering.message


def test_render_fails_soft(tmp_path: Path, monkeypatch):
    import subprocess

    from benchmarks_lib import meshes

    def broken(*args, **kwargs):
        return subprocess.CompletedProcess(args, 1, "", "no OpenGL here")

    monkeypatch.setattr(meshes.subprocess, "run", broken)
    rendering = meshes.render_mesh_png(tmp_path / "mesh.png", n=3)
    assert not rendering.ok
    assert "no OpenGL here" in rendering.message


# -- the suite -----------------------------------------------------------------------------
def test_tiny_sweep_round_trips_are_verified(tiny_run: pd.DataFrame):
    ok = tiny_run[tiny_run["status"] == "ok"]
    assert set(ok["backend"]) == AVAILABLE
    assert ok["verified"].all()
    assert set(ok["operation"]) == {"write", "read", "encode", "decode"}
    assert (ok["elapsed_s"] > 0).all() and (ok["compression_ratio"] > 0).all()
    reads = ok[ok["operation"] == "read"]
    assert (reads["cache_state"] == "cold").all() and reads["eviction_verified"].all()
    zvtk = ok[ok["backend"] == "zvtk"]
    assert sorted(zvtk["level"].unique()) == [-5, 3] and set(zvtk["codec"]) == {"zstd:-5", "zstd:3"}
    labels = ok[(ok["dataset"] == "labels") & (ok["backend"] == "numcodecs") & (ok["codec"] == "zstd:1")]
    assert labels["compression_ratio"].iloc[0] > 5
    # TensorStore has no plain lz4: a recorded skip, not a missing row
    skipped = tiny_run[(tiny_run["status"] == "skip") & (tiny_run["backend"] == "tensorstore")]
    assert "lz4" in set(skipped["codec"])
    assert not (tiny_run["status"] == "error").any()


def test_failed_verification_is_an_error_row_and_ends_the_point():
    calls = []
    rt = RoundTrip(write=lambda: calls.append("w"), read=lambda: b"x", verify=lambda got: "bytes differ",
                   stored_bytes=lambda: 10)
    rows = measure_round_trips(rt, iterations=3, warmups=0, time_cap_s=60, nbytes=100, columns={"codec": "zstd:1"})
    assert calls == ["w"]
    assert [r["status"] for r in rows] == ["error", "error"]
    assert not rows[0]["verified"] and "bytes differ" in rows[0]["reason"]


def test_time_cap_stops_repeating_a_point():
    rt = RoundTrip(write=lambda: time.sleep(0.02), read=lambda: None, verify=lambda got: None, stored_bytes=lambda: 5)
    rows = measure_round_trips(rt, iterations=5, warmups=1, time_cap_s=0.01, nbytes=10, columns={})
    assert len(rows) == 2 and rows[0]["compression_ratio"] == 2


@pytest.mark.parametrize(("params", "message"), [
    ({"levels": [23]}, "23"),
    ({"levels": [-200000]}, "-200000"),
    ({"levels": []}, "levels is empty"),
    ({"codecs": ["zstd:99"]}, "zstd level 99"),
    ({"codecs": ["snappy"]}, "snappy"),
    ({"array_backends": ["h5py"]}, "h5py"),
    ({"mesh_backends": ["stl"]}, "stl"),
    ({"vtu_compressors": ["bzip2"]}, "bzip2"),
    ({"datasets": ["faces"]}, "faces"),
    ({"threads": 0}, "threads 0"),
    ({"mesh_n": 1}, "mesh_n 1"),
    ({"time_cap_s": 0}, "time_cap_s"),
    ({"dims": "z:4:8"}, "chunk 8"),
    ({"colour": "red"}, "colour"),
    ({"mesh_backends": [], "array_backends": []}, "nothing to measure"),
])
def test_bad_parameters_are_refused_in_one_line(params: dict, message: str):
    with pytest.raises(SpecError, match=message) as info:
        build_cases({**TINY, **params}, "quick")
    assert "\n" not in str(info.value)


def test_profiles_build_and_group_points():
    for profile in ("quick", "standard", "seed"):
        cases = build_cases({}, profile)
        assert {c.backend for c in cases} == {"zvtk", "vtu", "zarr-python", "tensorstore", "numcodecs"}
    seed = build_cases({}, "seed")
    levels = [lvl for c in seed if c.backend == "zvtk" for lvl in c.params["levels"]]
    assert levels == list(range(-22, 23))
    assert all(c.params["mesh_n"] == 127 and c.params["threads"] == 8 for c in seed if c.backend == "zvtk")
    assert len([c for c in build_cases({}, "quick") if c.backend == "zvtk"]) == 1


# -- figures and conclusions ----------------------------------------------------------------
def _points(rows: list[tuple]) -> pd.DataFrame:
    """Records for (backend, dataset, codec, write_s, read_s, ratio, operations) points of 1 MB."""
    out = []
    for backend, dataset, codec, write_s, read_s, ratio, ops in rows:
        for op, elapsed in zip(ops, (write_s, read_s), strict=True):
            out.append({"backend": backend, "dataset": dataset, "codec": codec, "operation": op, "status": "ok",
                        "elapsed_s": elapsed, "nbytes": 1_000_000, "compression_ratio": ratio, "verified": True,
                        "codec_family": codec.split(":")[0], "iteration": 0, "schema_version": 1})
    return to_frame(out)


def test_pareto_front_on_a_tiny_frame():
    from benchmarks_lib.plots_compression import pareto_front, pareto_table

    wr = ("write", "read")
    df = _points([
        ("zarr-python", "a", "lz4", 0.005, 0.01, 1.0, wr),        # 200 MB/s, ratio 1: fastest
        ("zarr-python", "a", "zstd:1", 0.01, 0.01, 2.0, wr),      # 100 MB/s, ratio 2
        ("zarr-python", "a", "zstd:3", 0.025, 0.01, 2.5, wr),     # 40 MB/s, ratio 2.5: dominated by zstd:9
        ("zarr-python", "a", "zstd:9", 0.02, 0.01, 3.0, wr),      # 50 MB/s, ratio 3: densest
        ("zarr-python", "b", "gzip:1", 0.1, 0.1, 5.0, wr),        # alone in its dataset
        ("numcodecs", "a", "zstd:1", 0.001, 0.001, 9.0, ("encode", "decode")),  # in memory: left out
    ])
    front = pareto_front(df, "write_mbps")
    assert list(zip(front["dataset"], front["codec"], strict=True)) == [
        ("a", "lz4"), ("a", "zstd:1"), ("a", "zstd:9"), ("b", "gzip:1")]
    assert front["write_mbps"].tolist() == pytest.approx([200, 100, 50, 10])
    with_memory = pareto_front(df, "write_mbps", in_memory=True)
    assert with_memory[with_memory["dataset"] == "a"]["backend"].tolist() == ["numcodecs"]
    table = pareto_table(df)
    a = table[table["dataset"] == "a"].set_index("codec")["Pareto front"].to_dict()
    assert a == {"lz4": "write", "zstd:1": "write", "zstd:9": "write+read"}  # equal read speeds: densest wins
    with pytest.raises(ValueError, match="speed"):
        pareto_front(df, "ratio")


def test_conclusion_and_figures_from_a_tiny_run(tiny_run: pd.DataFrame):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks_lib import plots_compression as pc

    text = pc.conclude_compression(tiny_run)
    assert "zvtk" in text and ".vtu" in text and "em_like" in text
    ceiling = {"memcpy": 10.0, "write_nofsync": 2.0, "read_cold": 1.0}
    for fig in (pc.plot_zvtk_time_and_ratio(tiny_run), pc.plot_zvtk_throughput(tiny_run, ceiling),
                pc.plot_pareto(tiny_run, ceiling), pc.plot_pareto(tiny_run, None, speed="read_mbps")):
        assert fig.axes
        plt.close(fig)
