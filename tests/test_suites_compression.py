"""The compression suite at tiny sizes: mesh and array round trips, validation, Pareto front."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import (
    assert_refused_naming_the_value,
    case_in_rounds,
    count_calls,
    count_round_trip_writes,
    small_run_in_rounds,
)

from benchmarks_lib.base.scratch import create_marked_dir
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.records.store import to_frame
from benchmarks_lib.run.worker import finish_rows
from benchmarks_lib.suites import CaseContext
from benchmarks_lib.suites.compression import SUITE, build_cases
from benchmarks_lib.suites.kit.roundtrip import RoundTrip, round_trip_point

pytest.importorskip("pyvista")
pytest.importorskip("zvtk")
MODULES = {"zvtk": "zvtk", "vtu": "pyvista", "zarr-python": "zarr", "tensorstore": "tensorstore",
           "numcodecs": "numcodecs"}
#: backends whose library is installed here (the others must be recorded as skips)
AVAILABLE = {c for c, m in MODULES.items() if importlib.util.find_spec(m)}

TINY = {
    "mesh_backends": ["zvtk", "vtu"], "array_backends": ["zarr-python", "tensorstore", "numcodecs"],
    "mesh_n": 5, "levels": [-5, 3], "vtu_compressors": ["none", "zlib"], "datasets": ["em_like", "labels"],
    "dims": "z:4:2,y:32:16,x:32:16", "codecs": ["lz4", "zstd:1", "gzip:1", "blosc-lz4:5:shuffle"], "threads": 2,
    "seed": 1,
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> pd.DataFrame:
    """Every case of a tiny sweep, run in-process (1 iteration, no warm-up), as a records frame."""
    rows = []
    for case in build_cases(TINY, "quick"):
        scratch = create_marked_dir(tmp_path_factory.mktemp(case.backend) / "scratch")
        out = SUITE.run_case(case, CaseContext(scratch=scratch, iterations=1, warmups=0, profile="quick"))
        assert [p.name for p in scratch.iterdir()] == [".iobench-scratch"], f"{case.backend} left files behind"
        rows += finish_rows(out, case, {"run_id": "test", "machine": "test", "profile": "quick"})
    return to_frame(rows)


# -- meshes --------------------------------------------------------------------------------
def test_mesh_size_is_stated_before_building():
    from benchmarks_lib.data.meshes import build_tet_mesh, mesh_nbytes, mesh_nbytes_estimate, mesh_shape

    mesh = build_tet_mesh(6, seed=3)
    assert (mesh.n_points, mesh.n_cells) == mesh_shape(6)
    assert mesh_nbytes(mesh) == mesh_nbytes_estimate(6)
    assert "vtkOriginalCellIds" not in mesh.cell_data
    assert 500e6 < mesh_nbytes_estimate(127) < 560e6  # seed 002's "500 MB" mesh


@pytest.mark.parametrize(("fmt", "compressor", "level", "threads"), [
    ("zvtk", "zstd", -5, 2), ("zvtk", "zstd", 19, 2), ("vtu", "none", None, None), ("vtu", "zlib", None, None),
    ("vtu", "lz4", None, None)])
def test_mesh_round_trip_is_exact(tmp_path: Path, fmt: str, compressor: str, level, threads):
    from benchmarks_lib.adapters import make_adapter
    from benchmarks_lib.data import meshes

    mesh = meshes.build_tet_mesh(5, seed=1)
    writer = make_adapter(fmt, threads=threads, kind="mesh")
    path = tmp_path / f"mesh{writer.extension}"
    assert writer.is_incompatible(compressor, level) is None
    writer.write(mesh, path, compressor=compressor, level=level)
    assert writer.output_files(path) == [path]
    assert meshes.mesh_mismatch(mesh, writer.read(path)) is None


def test_mesh_mismatch_finds_a_changed_value():
    from benchmarks_lib.data.meshes import build_tet_mesh, mesh_mismatch

    mesh = build_tet_mesh(4, seed=1)
    other = mesh.copy()
    other["cdata"] = np.asarray(other["cdata"]).copy()
    other["cdata"][3] += 1
    assert "cdata" in mesh_mismatch(mesh, other)
    assert "points" in mesh_mismatch(mesh, build_tet_mesh(5, seed=1))


def test_render_writes_a_png_or_says_why_not(tmp_path: Path):
    from benchmarks_lib.data.meshes import render_mesh_png

    rendering = render_mesh_png(tmp_path / "mesh.png", n=4)
    if rendering.ok:
        assert rendering.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        import matplotlib.image

        # nothing cut by the picture's sides (the colour bar's title was cut to "pdata (rando" at the right edge):
        # its top, left and right borders are background, as its corner is (the cube's lowest corner may touch the
        # bottom)
        image = matplotlib.image.imread(rendering.path)[..., :3]
        border = np.concatenate([image[:3].reshape(-1, 3), image[:, :3].reshape(-1, 3),
                                 image[:, -3:].reshape(-1, 3)])
        assert np.abs(border - image[0, 0]).max() < 0.05
    else:
        assert "not possible" in rendering.message


def test_render_fails_soft(tmp_path: Path, monkeypatch):
    from benchmarks_lib.data import meshes

    def broken(*args, **kwargs):
        raise meshes.fresh.FreshProcessError("render failed (exit 1): no OpenGL here")

    monkeypatch.setattr(meshes.fresh, "call", broken)
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
    assert (reads["io_read_bytes"] > 0).all() and reads["resident_bytes_before_read"].notna().all()
    writes = ok[ok["operation"].isin(["write", "encode"])]
    # the suite's policy here is no fsync, and none of these writers fsyncs by itself
    assert not writes["fsync_included"].any() and set(writes["sync_method"]) == {"none"}
    assert writes["fsync_comparable"].all() and not writes["writer_fsyncs"].any()
    zvtk = ok[ok["backend"] == "zvtk"]
    assert sorted(zvtk["level"].unique()) == [-5, 3] and set(zvtk["codec"]) == {"zstd:-5", "zstd:3"}
    labels = ok[(ok["dataset"] == "labels") & (ok["backend"] == "numcodecs") & (ok["codec"] == "zstd:1")]
    assert labels["compression_ratio"].iloc[0] > 5
    # TensorStore has no plain lz4: a recorded skip, not a missing row
    skipped = tiny_run[(tiny_run["status"] == "skip") & (tiny_run["backend"] == "tensorstore")]
    assert "lz4" in set(skipped["codec"])
    assert not (tiny_run["status"] == "error").any()


def in_rounds(rt: RoundTrip, rounds: int, *, warmups: int = 0, nbytes: int = 8192, fsync: bool = False,
              columns: dict | None = None) -> list[dict]:
    """``rounds`` rounds of the point of ``rt`` (set up with ``warmups``), as the runner steps them, then its end."""
    point = round_trip_point(rt, warmups=warmups, nbytes=nbytes, columns=columns or {}, fsync=fsync)
    try:
        return [row for r in range(rounds) for row in point.measure(r)]
    finally:
        point.cleanup()


def test_failed_verification_is_an_error_row_and_ends_the_point():
    calls = []
    rt = RoundTrip(write=lambda: calls.append("w"), read=lambda: b"x", verify=lambda got: "bytes differ",
                   stored_bytes=lambda: 10)
    rows = in_rounds(rt, 3, nbytes=100, columns={"codec": "zstd:1"})
    assert calls == ["w"]  # its later rounds measure nothing
    assert [r["status"] for r in rows] == ["error", "error"]
    assert not rows[0]["verified"] and "bytes differ" in rows[0]["reason"]


def test_a_point_is_set_up_once_and_measures_one_round_trip_per_round():
    calls: list[str] = []
    rt = RoundTrip(write=lambda: calls.append("w"), read=lambda: calls.append("r"), verify=lambda got: None,
                   stored_bytes=lambda: 5, reset=lambda: calls.append("clear"))
    point = round_trip_point(rt, warmups=2, nbytes=10, columns={"codec": "zstd:1"})
    assert calls.count("w") == calls.count("r") == 2 and calls[-1] == "clear"  # the warm-ups, before any round
    for r in range(3):
        del calls[:]
        rows = point.measure(r)
        # one write and one read, each a row of this round; what was written dropped once verified
        assert calls == ["clear", "w", "r", "clear"]
        assert [(row["operation"], row["iteration"]) for row in rows] == [("write", r), ("read", r)]
        assert rows[0]["compression_ratio"] == 2 and {row["verified_scope"] for row in rows} == {"full"}


def _events_round_trip(scratch: Path, events: list, monkeypatch, *, writer_fsyncs: bool = False) -> RoundTrip:
    """A file round trip that logs clear / enter / write / sync / exit, so the order can be checked."""
    from contextlib import contextmanager

    from benchmarks_lib.suites.kit import roundtrip

    real_timed = roundtrip.timed

    @contextmanager
    def logged_timed(**kwargs):
        events.append("enter")
        with real_timed(**kwargs) as region:
            yield region
        events.append("exit")

    monkeypatch.setattr(roundtrip, "timed", logged_timed)
    monkeypatch.setattr(roundtrip, "sync_store", lambda path: events.append("sync"))
    path = scratch / "out.bin"

    def write() -> None:
        events.append("write on an old file" if path.exists() else "write")
        path.write_bytes(b"x" * 8192)

    return RoundTrip(write=write, read=lambda: path.read_bytes(), verify=lambda got: None,
                     stored_bytes=lambda: path.stat().st_size, files=lambda: [path], path=path,
                     reset=lambda: events.append("clear"), writer_fsyncs=writer_fsyncs)


def test_old_output_is_removed_off_the_clock_and_syncfs_is_on_it(tmp_path: Path, monkeypatch):
    events: list[str] = []
    rt = _events_round_trip(create_marked_dir(tmp_path / "scratch"), events, monkeypatch)
    rows = in_rounds(rt, 3, warmups=1, fsync=True)
    # 1 warm-up + 3 rounds, each: clear (off the clock), then write + syncfs in one timed region
    assert events.count("write") == 4 and "write on an old file" not in events
    starts = [i - 1 for i, e in enumerate(events) if e == "enter"]
    assert len(starts) == 4
    for start in starts:
        assert events[start:start + 5] == ["clear", "enter", "write", "sync", "exit"]
    assert events[-1] == "clear" and not rt.path.exists()  # the last output removed once verified
    write_rows = [r for r in rows if r["operation"] == "write"]
    assert len(write_rows) == 3
    assert all(r["fsync_included"] and r["sync_method"] == "syncfs" and r["fsync_comparable"] for r in write_rows)


@pytest.mark.parametrize(("fsync", "writer", "included", "method"), [
    (False, False, False, "none"), (True, False, True, "syncfs"),
    (False, True, True, "writer"), (True, True, True, "syncfs+writer"),
])
def test_write_rows_say_what_their_time_includes(tmp_path: Path, monkeypatch, fsync, writer, included, method):
    rt = _events_round_trip(create_marked_dir(tmp_path / "scratch"), [], monkeypatch, writer_fsyncs=writer)
    rows = in_rounds(rt, 1, fsync=fsync)
    write = next(r for r in rows if r["operation"] == "write")
    assert (write["fsync_included"], write["writer_fsyncs"], write["sync_method"]) == (included, writer, method)
    assert write["fsync_comparable"] is (not writer)


def test_a_failed_eviction_is_labelled_cold_unverified(tmp_path: Path, monkeypatch):
    from benchmarks_lib.measure import EvictionReport, eviction

    monkeypatch.setattr(eviction, "evict_page_cache",
                        lambda files, **kw: EvictionReport(1, 8192, resident_bytes_after=8192, dropped_caches=False))
    rt = _events_round_trip(create_marked_dir(tmp_path / "scratch"), [], monkeypatch)
    rows = in_rounds(rt, 1)
    read = next(r for r in rows if r["operation"] == "read")
    assert read["cache_state"] == "cold_unverified"
    assert read["eviction_verified"] is False and read["resident_bytes_before_read"] == 8192


def test_the_suite_writes_zvtk_and_zarr_on_paths_that_do_not_exist(tmp_path: Path, monkeypatch):
    """The writers' own overwrite (zarr-python overwrite=True, zvtk truncation) must never run on the clock."""
    from benchmarks_lib.adapters import adapter_class

    seen: list[tuple[str, bool]] = []
    zvtk = adapter_class("zvtk", "mesh")
    real_zvtk = zvtk.write
    monkeypatch.setattr(zvtk, "write", lambda self, mesh, path, **kw: (seen.append(("zvtk", path.exists())),
                                                                       real_zvtk(self, mesh, path, **kw)))
    cls = adapter_class("zarr-python")
    real_create = cls.create
    monkeypatch.setattr(cls, "create",
                        lambda self, path, spec, **kw: (seen.append(("zarr", path.exists())),
                                                        real_create(self, path, spec, **kw)))
    params = {**TINY, "levels": [3], "mesh_backends": ["zvtk"], "array_backends": ["zarr-python"],
              "datasets": ["labels"], "codecs": ["zstd:1"]}
    for case in build_cases(params, "quick"):
        scratch = create_marked_dir(tmp_path / case.case_id)
        rows = SUITE.run_case(case, CaseContext(scratch=scratch, iterations=2, warmups=1, profile="quick"))
        assert {r["status"] for r in rows} == {"ok"}
    assert sorted(set(seen)) == [("zarr", False), ("zvtk", False)] and len(seen) == 6


def test_the_ceiling_labels_its_rows(tmp_path: Path):
    from benchmarks_lib.suites.ceiling import ceiling_case, run_ceiling

    scratch = create_marked_dir(tmp_path / "scratch")
    rows = run_ceiling(ceiling_case(2 * 2**20), CaseContext(scratch=scratch, iterations=2, warmups=1, profile="quick"))
    by_op = {r["operation"]: r for r in rows}
    assert [r["operation"] for r in rows].count("read_cold") == 2
    assert by_op["write_fsync"]["sync_method"] == "syncfs" and by_op["write_fsync"]["fsync_included"]
    assert by_op["write_nofsync"]["sync_method"] == "none" and not by_op["write_nofsync"]["fsync_included"]
    cold = by_op["read_cold"]
    assert cold["cache_state"] in ("cold", "cold_unverified") and cold["verified"]
    assert cold["cache_state"] == ("cold" if cold["eviction_verified"] else "cold_unverified")
    assert {"resident_bytes_before_read", "evicted_bytes", "drop_caches"} <= set(cold)
    assert [p.name for p in scratch.iterdir()] == [".iobench-scratch"]


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
    ({"dims": "z:4:8"}, "chunk 8"),
    ({"colour": "red"}, "colour"),
    ({"mesh_backends": [], "array_backends": [], "real_datasets": []}, "nothing to measure"),
    ({"real_datasets": ["example:nope"]}, "example:nope' is unknown; allowed examples: example:frog_tissues"),
    ({"real_datasets": ["labels"]}, "'labels' is not real data"),
    ({"real_datasets": ["file:/data/seg.zarr"]}, "names no synthetic twin; give KIND=file:/data/seg.zarr"),
    ({"real_datasets": ["blobs=example:channels"]}, "'blobs' is no synthetic dataset; allowed: em_like"),
    ({"real_datasets": [5]}, "real_datasets item 5"),
    ({"real_codecs": []}, "real_codecs is empty"),
    ({"real_codecs": ["zstd:99"]}, "zstd level 99"),
    # wrong JSON types: refused in one line, never iterated or coerced
    ({"codecs": 5}, "codecs 5 must be a list"),
    ({"codecs": {"zstd": 1}}, "must be a list"),
    ({"codecs": [5]}, "codecs item 5"),
    ({"threads": "abc"}, "threads 'abc'"),
    ({"threads": [2]}, "threads \\[2\\]"),
    ({"threads": True}, "threads True"),
    ({"levels": "x"}, "levels 'x'"),
    ({"levels": 3.5}, "levels 3.5"),
    ({"levels": [True]}, "levels True"),
    ({"datasets": 5}, "datasets 5"),
    ({"array_backends": [["zarr-python"]]}, "array_backends item"),
    ({"fsync": "yes"}, "fsync 'yes'"),
    ({"time_cap_s": 5}, "parameter 'time_cap_s' is unknown"),  # rounds and the run's budget replaced it
    ({"mesh_n": 2.5}, "mesh_n 2.5"),
    ({"points_per_case": "many"}, "points_per_case"),
    ({"generate_bytes": "lots"}, "lots"),
    ({"generate_bytes": [1]}, "generate_bytes"),
])
def test_bad_parameters_are_refused_in_one_line(params: dict, message: str):
    with pytest.raises(SpecError, match=message) as info:
        build_cases({**TINY, **params}, "quick")
    assert "\n" not in str(info.value)


def test_a_single_codec_string_is_a_one_item_list():
    cases = build_cases({**TINY, "mesh_backends": [], "array_backends": ["zarr-python"], "codecs": "lz4"}, "quick")
    assert {codec for c in cases if c.backend == "zarr-python" for _, codec in c.params["points"]} == {"lz4"}
    cases = build_cases({**TINY, "mesh_backends": [], "array_backends": ["zarr-python"], "codecs": "zstd:1, lz4",
                         "levels": 3, "real_codecs": "zstd:3"}, "quick")
    assert {codec for c in cases if c.backend == "zarr-python" for _, codec in c.params["points"]} == {"zstd:1", "lz4"}
    assert {codec for c in cases if c.backend == "numcodecs" for _, codec, _ in c.params["points"]} == {"zstd:3"}


def test_profiles_build_and_group_points():
    # standard: the codecs in memory and through one writer (zarr-python's array path is the seed's)
    assert {c.backend for c in build_cases({}, "standard")} == {"zvtk", "vtu", "tensorstore", "numcodecs"}
    assert {c.backend for c in build_cases({}, "seed")} == {"zvtk", "vtu", "zarr-python", "tensorstore", "numcodecs"}
    # quick: few, big points on disk (the codecs alone in memory last a few ms at its sizes), and in memory only the
    # real data beside its synthetic twins, every pair in one case
    quick = build_cases({}, "quick")
    assert {c.backend for c in quick} == {"zvtk", "vtu", "tensorstore", "numcodecs"}
    pairs = [c for c in quick if c.backend == "numcodecs"]
    assert [c for c in quick if SUITE.optional(c)] == pairs  # a run short of time may leave them out
    assert len(pairs) == 1 and {name for name, _, _ in pairs[0].params["points"]} == {
        "example:frog_tissues", "labels twin of example:frog_tissues", "example:channels",
        "labels twin of example:channels"}
    seed = build_cases({}, "seed")
    levels = [lvl for c in seed if c.backend == "zvtk" for lvl in c.params["levels"]]
    assert levels == list(range(-22, 23))
    assert all(c.params["mesh_n"] == 127 and c.params["threads"] == 8 for c in seed if c.backend == "zvtk")
    assert len([c for c in build_cases({}, "quick") if c.backend == "zvtk"]) == 1


def test_data_beyond_generate_bytes_is_whole_chunks_repeated():
    from benchmarks_lib.data.datasets import Dataset
    from benchmarks_lib.suites.kit.roundtrip import suite_data

    dataset = Dataset("microscopy", (10, 16, 16), seed=1)
    full, tiled = suite_data(dataset, (2, 8, 8), None)
    assert not tiled and full.shape == (10, 16, 16)
    data, tiled = suite_data(dataset, (2, 8, 8), 4 * 16 * 16 * 2)  # room for 4 planes: 2 chunks of 2
    assert tiled and data.shape == (10, 16, 16) and data.flags.c_contiguous
    assert np.array_equal(data[:4], full[:4]) and np.array_equal(data[4:8], full[:4])
    assert np.array_equal(data[8:], full[:2])
    small, tiled = suite_data(dataset, (2, 8, 8), 1)  # less than one chunk: one chunk's planes
    assert tiled and np.array_equal(small[2:4], full[:2])
    assert not suite_data(dataset, (2, 8, 8), 10**9)[1]


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
    from benchmarks_lib.chapters.compression import pareto_front, summary

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
    table = summary(df)
    a = table[table["dataset"] == "a"].set_index("codec")["Pareto front"].to_dict()
    assert a == {"lz4": "write", "zstd:1": "write", "zstd:9": "write+read"}  # equal read speeds: densest wins
    with pytest.raises(ValueError, match="speed"):
        pareto_front(df, "ratio")


def test_conclusion_and_figures_from_a_tiny_run(tiny_run: pd.DataFrame):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks_lib.chapters import compression as pc

    text = pc.conclusion(tiny_run).replace("\\", "")  # names are Markdown-escaped (em\_like)
    assert "zvtk" in text and ".vtu" in text and "em_like" in text
    for fig in (pc.zvtk_time_and_ratio(tiny_run), pc.zvtk_throughput(tiny_run), pc.pareto(tiny_run),
                pc.pareto(tiny_run, speed="read_mbps")):
        assert fig.axes
        plt.close(fig)


@pytest.mark.parametrize("params", [{"codecs": 5}, {"codecs": [5]}, {"threads": "abc"}, {"threads": [2]},
                                    {"levels": "x"}, {"levels": 3.5}, {"datasets": 5}, {"fsync": "yes"},
                                    {"generate_bytes": [1]}])
def test_a_wrong_type_names_the_value_and_what_is_allowed(params: dict):
    assert_refused_naming_the_value(build_cases, TINY, params)


def test_backends_come_from_declared_capabilities(tmp_path: Path):
    """Any Zarr writer that compresses plain chunks and reads them back, and any in-memory codec, may take part."""
    from benchmarks_lib.suites.compression import ARRAY_BACKENDS, MESH_BACKENDS

    assert set(MESH_BACKENDS) == {"zvtk", "vtu"}
    assert {"zarr-python", "tensorstore", "zarrs", "numcodecs", "blosc"} == set(ARRAY_BACKENDS)
    params = {**TINY, "mesh_backends": [], "array_backends": ["zarrs", "blosc"], "datasets": ["labels"],
              "codecs": ["zstd:1", "blosc-lz4:5:shuffle"]}
    rows = []
    for case in build_cases(params, "quick"):
        scratch = create_marked_dir(tmp_path / case.case_id)
        out = SUITE.run_case(case, CaseContext(scratch=scratch, iterations=1, warmups=0, profile="quick"))
        rows += finish_rows(out, case, {"run_id": "test", "machine": "test", "profile": "quick"})
    status = {(r["backend"], r["codec"], r["operation"]): r["status"] for r in rows}
    assert status[("blosc", "zstd:1", "encode")] == "skip"
    assert status[("blosc", "blosc-lz4:5:shuffle", "decode")] == "ok"
    if importlib.util.find_spec("zarrs"):
        assert status[("zarrs", "zstd:1", "read")] == "ok"


# -- rounds --------------------------------------------------------------------------------
def test_a_case_is_set_up_once_and_each_round_measures_each_point_once(tmp_path: Path, monkeypatch):
    """The mesh built, the arrays made and the warm-ups run once, in the case's set-up; then each round one write and
    one read of every point, numbered by the round."""
    from benchmarks_lib.suites import compression
    from benchmarks_lib.suites.kit import backends

    made: Counter = Counter()
    count_calls(monkeypatch, compression, "array_data", made)
    count_calls(monkeypatch, backends, "build_tet_mesh", made)
    count_round_trip_writes(monkeypatch, made)
    params = {**TINY, "mesh_backends": ["zvtk"], "array_backends": ["zarr-python"], "real_datasets": [],
              "datasets": ["em_like", "labels"], "codecs": ["zstd:1", "gzip:1"]}
    for case in build_cases(params, "quick"):
        made.clear()
        setup, *rounds = case_in_rounds(SUITE, case, tmp_path / case.case_id, 9)
        mesh = case.backend == "zvtk"
        points = 2 if mesh else 4  # two levels; two datasets x two codecs
        assert setup == [] and len(rounds) == 9
        assert made == {"warm-up": 1, "write": 9 * points, **({"build_tet_mesh": 1} if mesh else {"array_data": 2})}
        for r, rows in enumerate(rounds):
            assert len(rows) == 2 * points and {row["iteration"] for row in rows} == {r}
            assert {row["status"] for row in rows} == {"ok"} and all(row["verified"] for row in rows)


def test_a_small_run_is_measured_in_rounds(tmp_path: Path):
    df, _ = small_run_in_rounds("compression", tmp_path)
    writes = df[df["operation"] == "write"]
    # every point of a case once per round: the case's rows of one round are one per point
    per_round = writes.groupby(["case_id", "round"]).size().groupby("case_id").nunique()
    assert (per_round == 1).all()
    assert set(writes["backend"]) == {"zvtk", "vtu", "tensorstore"} & AVAILABLE
