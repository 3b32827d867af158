"""Bring your own data: every input format, the crop, the source left untouched, every bad input refused in one line
(exit 2, nothing created), and real writers and compression runs on a person's files, verified."""

import hashlib
import json
import math
import zlib
from pathlib import Path

import numpy as np
import pytest

from benchmarks_lib.base.specs import SpecError, parse_dims
from benchmarks_lib.cli.main import main
from benchmarks_lib.data.datasets import checksum_array
from benchmarks_lib.inputs.user_data import FileDataset, parse_dataset, parse_file_dataset, public_params
from benchmarks_lib.run.runner import run_suite

#: a small stack with structure (so a wrong crop or axis order shows), uint16 like microscopy frames
STACK = ((np.arange(10)[:, None, None] * 1000 + np.arange(40)[None, :, None] * 40 + np.arange(48)[None, None, :])
         % 65521).astype(np.uint16)
WRITERS_SMOKE = {"backends": ["raw", "zarr-python", "tensorstore"], "tests": ["write", "append", "read"],
                 "dims": "t:4,y:64:32,x:96", "multipliers": [1, 4], "append_frames": 6, "append_step": 3,
                 "read_dims": "z:8:4,y:32:16,x:32:16", "cutout": 8, "cutout_positions": 1,
                 "iterations": 1, "warmups": 0}


def _write_npy(d: Path) -> str:
    np.save(d / "stack.npy", STACK)
    return "stack.npy"


def _write_zarr2(d: Path) -> str:
    import zarr

    zarr.save_array(str(d / "v2.zarr"), STACK, zarr_format=2)
    return "v2.zarr"


def _write_zarr3(d: Path) -> str:
    import zarr

    zarr.create_array(str(d / "v3.zarr"), shape=STACK.shape, chunks=(3, 16, 16), dtype=STACK.dtype)[:] = STACK
    return "v3.zarr"


def _write_ome_zarr(d: Path) -> str:
    import zarr

    group = zarr.open_group(str(d / "image.ome.zarr"), mode="w")
    group.attrs["multiscales"] = [{"version": "0.4", "datasets": [{"path": "0"}, {"path": "1"}]}]
    group.create_array("0", shape=(1, *STACK.shape), chunks=(1, 5, 20, 24), dtype=STACK.dtype)[:] = STACK[None]
    group.create_array("1", shape=(1, 10, 20, 24), dtype=STACK.dtype)[:] = STACK[None, :, ::2, ::2]
    return "image.ome.zarr"


def _write_hdf5(d: Path) -> str:
    import h5py

    with h5py.File(d / "scan.h5", "w") as f:
        f.create_dataset("/entry/data", data=STACK, chunks=(2, 20, 24))
        f.create_dataset("/entry/dark", data=STACK[0])
    return "scan.h5:/entry/data"


def _write_tiff(d: Path) -> str:
    tifffile = pytest.importorskip("tifffile")
    tifffile.imwrite(d / "stack.tif", STACK)
    return "stack.tif"


def _write_ome_tiff(d: Path) -> str:
    tifffile = pytest.importorskip("tifffile")
    tifffile.imwrite(d / "stack.ome.tif", STACK[:, None], ome=True, metadata={"axes": "ZCYX"})
    return "stack.ome.tif"


def _write_vti(d: Path) -> str:
    pv = pytest.importorskip("pyvista")
    image = pv.ImageData(dimensions=STACK.shape[::-1])  # VTK's x, y, z
    image.point_data["values"] = STACK.ravel()  # x fastest: C order of (z, y, x)
    image.save(d / "stack.vti")
    return "stack.vti"


FORMATS = {"npy": _write_npy, "zarr2": _write_zarr2, "zarr3": _write_zarr3, "ome-zarr": _write_ome_zarr,
           "hdf5": _write_hdf5, "tiff": _write_tiff, "ome-tiff": _write_ome_tiff, "vti": _write_vti}


def _state(path: Path) -> dict[str, tuple[str, int]]:
    """Every file of a source (a file, or a store's files): its bytes' digest and mtime."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(f): (hashlib.blake2b(f.read_bytes()).hexdigest(), f.stat().st_mtime_ns) for f in files}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_gives_its_crop(tmp_path, fmt):
    name = FORMATS[fmt](tmp_path)
    spec = parse_file_dataset(f"file:{tmp_path / name}")
    assert spec.dtype == "uint16" and spec.source_shape[-3:] == STACK.shape
    dims = spec.fit(parse_dims("z:4:2,y:64:32,x:32:16"))  # y is larger than the source: measured whole
    assert dims.shape == (4, 40, 32) and dims.chunks == (2, 32, 16)
    data = FileDataset(spec, dims.shape)
    assert data.crop_origin == (3, 0, 8) and data.crop_shape == (4, 40, 32)  # centred where the source is larger
    want = STACK[3:7, :, 8:40]
    assert np.array_equal(data.region((slice(0, 4), slice(0, 40), slice(0, 32))), want)
    assert np.array_equal(np.concatenate([b for _, b in data.blocks(3)]), want)
    columns = data.columns()
    assert columns["source_digest"] == checksum_array(want) and columns["crop_origin"] == [3, 0, 8]
    assert columns["source"].startswith(Path(name.split(":")[0]).name) and str(tmp_path) not in columns["source"]
    data.close()


def test_a_stated_origin_and_rows_beyond_the_source(tmp_path):
    path = tmp_path / _write_npy(tmp_path)
    spec = parse_file_dataset(f"file:{path}@2:4:8")
    assert spec.label == "file:stack.npy@2:4:8"
    data = FileDataset(spec, (20, 16, 16))  # 20 rows of an 8-row crop (10 - 2): the crop repeats
    assert data.crop_origin == (2, 4, 8) and data.crop_shape == (8, 16, 16) and data.tiled
    whole = data.region(tuple(slice(None) for _ in range(3)))
    crop = STACK[2:10, 4:20, 8:24]
    assert np.array_equal(whole, np.concatenate([crop, crop, crop[:4]]))


def test_a_big_endian_file_gives_native_values_and_the_same_digest(tmp_path):
    np.save(tmp_path / "big.npy", STACK.astype(">u2"))
    spec = parse_file_dataset(f"file:{tmp_path / 'big.npy'}")
    data = FileDataset(spec, STACK.shape)
    assert spec.dtype == "uint16" and data.columns()["source_dtype"] == "uint16"
    got = data.region(tuple(slice(None) for _ in STACK.shape))
    assert got.dtype == np.dtype("uint16") and np.array_equal(got, STACK)
    assert data.digest() == checksum_array(STACK)


def test_leading_axes_of_length_one_are_dropped_to_the_dims_rank(tmp_path):
    spec = parse_file_dataset(f"file:{tmp_path / _write_ome_zarr(tmp_path)}")  # (1, 10, 40, 48): its level 0
    assert spec.source_shape == (1, *STACK.shape) and spec.inner_read == "0"
    assert spec.fit(parse_dims("z:10,y:40,x:48")).shape == STACK.shape
    with pytest.raises(SpecError, match="4-D 1x10x40x48; dims has 2 dimensions: give dims with 3"):
        spec.fit(parse_dims("y:40,x:48"))


def test_run_json_and_rows_name_no_directory(tmp_path):
    path = tmp_path / "data" / "stack.npy"
    path.parent.mkdir()
    np.save(path, STACK)
    assert public_params({"dataset": f"file:{path}", "datasets": ["labels", f"file:{path}@0:0:0"], "seed": 1}) == {
        "dataset": "file:stack.npy", "datasets": ["labels", "file:stack.npy@0:0:0"], "seed": 1}
    asked = parse_dataset(f"file+path:{path}")[1]  # the path recorded, because asked for
    assert asked.label == f"file:{path}" and asked.source == str(path)


def _run_cli(*args: str) -> int:
    return main(["run", *args, "--results-dir", "results", "--iterations", "1", "--warmups", "0"])


@pytest.fixture
def sources(workdir):
    d = workdir / "data"
    d.mkdir()
    np.save(d / "stack.npy", STACK)
    np.save(d / "half.npy", STACK.astype(np.float16))
    np.save(d / "frame.npy", STACK[0])
    (d / "notes.txt").write_text("not an array\n")
    _write_hdf5(d)
    _write_zarr3(d)
    return d


@pytest.mark.parametrize("args, says", [
    (["writers", "--dataset", "file:data/missing.npy"], "does not exist"),
    (["writers", "--dataset", "file:data/notes.txt"], "of no format iobench reads"),
    (["writers", "--dataset", "file:data/scan.h5:/entry/nothing"], "HDF5 path '/entry/nothing'"),
    (["writers", "--dataset", "file:data/scan.h5"], "holds 2 HDF5 datasets"),
    (["compression", "--dataset", "file:data/v3.zarr:missing"], "holds no array or group 'missing'"),
    (["writers", "--dataset", "file:data/half.npy"], "dtype float16"),
    (["writers", "--dataset", "file:data/frame.npy", "-d", "y:32:16,x:32:16", "--test", "write", "-b", "raw",
      "-b", "wkw"],
     "wkw writes 3-D arrays, not 2-D"),
    (["threads", "--dataset", "file:data/stack.npy", "-d", "y:32:16,x:32:16"], "give dims with 3"),
    (["writers", "--dataset", "file:data/stack.npy@8:0:0", "-d", "t:4,y:32,x:32"], "larger than the source"),
])
def test_bad_input_is_one_line_exit_2_and_creates_nothing(sources, capsys, args, says):
    before = _state(sources)
    assert _run_cli(*args) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err
    assert not (sources.parent / "results").exists() and not (sources.parent / "scratch").exists()
    assert _state(sources) == before


def _check_writers_run(df, name: str, crop_origin: list[int]) -> None:
    measured = df[df["operation"].isin(["total", "append_total", "read_cold"])]
    assert set(measured["backend"]) == {"raw", "zarr-python", "tensorstore"}
    assert (measured["status"] == "ok").all() and measured["verified"].all(), measured[["backend", "reason"]]
    assert (df["status"] != "error").all()
    assert set(df["dataset"]) == {f"file:{name}"} and set(df["source"]) == {name}
    writes = measured[measured["operation"] == "total"]
    assert sorted(writes["crop_shape"].map(tuple).unique()) == [(4, 40, 48), (10, 40, 48)]
    first = writes[writes["multiplier"] == 1].iloc[0]
    assert list(first["crop_origin"]) == crop_origin
    assert first["source_digest"] == checksum_array(STACK[crop_origin[0]:crop_origin[0] + 4])
    assert set(writes[writes["multiplier"] == 4]["data_tiled"]) == {True}  # 16 rows of a 10-row source


@pytest.mark.parametrize("fmt", ["npy", "zarr3"])
def test_a_writers_run_on_a_persons_file_is_verified_and_leaves_it_untouched(workdir, fmt):
    d = workdir / "data"
    d.mkdir()
    name = FORMATS[fmt](d)
    before = _state(d / name)
    result = run_suite("writers", {**WRITERS_SMOKE, "dataset": f"file:{d / name}"}, results_dir=workdir / "results",
                       run_id=f"own-{fmt}", ceiling=False, progress=None)
    _check_writers_run(result.df, name, [3, 0, 0])
    assert _state(d / name) == before
    meta = json.loads((result.run_dir / "run.json").read_text())
    assert meta["params"]["dataset"] == f"file:{name}" and str(d) not in json.dumps(meta)
    assert not any(str(d) in str(v) for v in result.df.astype(str).to_numpy().ravel())


def test_compression_on_a_real_segmentation_from_pyvista(workdir):
    """pyvista ships frog_tissues.vti (a real 500x470x136 uint8 tissue segmentation): a crop of it, beside the
    synthetic labels, through a Zarr writer and an in-memory codec, verified."""
    examples = pytest.importorskip("pyvista.examples")
    frog = Path(examples.frogtissuesfile)
    before = _state(frog)
    params = {"mesh_backends": [], "array_backends": ["zarr-python", "numcodecs"], "codecs": ["zstd:3"],
              "datasets": ["labels", f"file:{frog}"], "real_datasets": [], "dims": "z:8:8,y:64:32,x:64:32",
              "iterations": 2}
    result = run_suite("compression", params, results_dir=workdir / "results", run_id="frog", ceiling=False,
                       progress=None, assume_yes=True)
    df = result.df
    rows = df[df["dataset"] == "file:frog_tissues.vti"]
    assert set(rows["backend"]) == {"zarr-python", "numcodecs"} and (rows["status"] == "ok").all()
    assert rows["verified"].all() and set(rows["dtype"]) == {"uint8"}
    assert list(rows["source_shape"].iloc[0]) == [136, 470, 500] and list(rows["crop_shape"].iloc[0]) == [8, 64, 64]
    assert (rows["compression_ratio"] > 1).all() and set(df["dataset"]) == {"labels", "file:frog_tissues.vti"}
    assert _state(frog) == before


def test_an_examples_file_is_read_once_a_process_while_it_is_the_same_file(tmp_path, monkeypatch):
    """``example:`` names a package's own file: its metadata are read in a child once, and again only when the file
    is another (a changed size or time)."""
    import shutil

    from benchmarks_lib.adapters import user_files
    from benchmarks_lib.inputs import user_data

    examples = pytest.importorskip("pyvista.examples")
    copy = tmp_path / "frog_tissues.vti"
    shutil.copyfile(examples.frogtissuesfile, copy)
    monkeypatch.setattr(user_data, "example_path", lambda text: copy)
    monkeypatch.setattr(user_data, "_EXAMPLES_READ", {})
    reads = []
    monkeypatch.setattr(user_data, "inspect", lambda *a, **k: reads.append(a) or user_files.inspect(*a, **k))
    first, again = parse_file_dataset("example:frog_tissues"), parse_file_dataset("example:frog_tissues")
    assert first == again and first.source_shape == (136, 470, 500) and len(reads) == 1
    with copy.open("ab") as changed:  # another file at the same path (one more byte): read again
        changed.write(b"\n")
    parse_file_dataset("example:frog_tissues")
    assert len(reads) == 2


@pytest.mark.parametrize("suite, extra", [
    ("threads", {"backends": ["tensorstore", "blosc"]}),
    ("parallel", {"dims": "z:8:2:4,y:64:32:64,x:64:32:64"}),  # shards of 64 in y shrink to the source's 40
])
def test_threads_and_parallel_measure_a_persons_file(workdir, suite, extra):
    from benchmarks_lib.suites import get_suite

    if suite == "parallel":
        pytest.importorskip("distributed")
    d = workdir / "data"
    d.mkdir()
    np.save(d / "stack.npy", STACK)
    before = _state(d / "stack.npy")
    params = {**get_suite(suite).smoke, **extra, "dataset": f"file:{d / 'stack.npy'}"}
    df = run_suite(suite, params, results_dir=workdir / "results", run_id=suite, ceiling=False, progress=None,
                   assume_yes=True).df
    assert (df["status"] == "ok").all() and df["verified"].all(), df[["backend", "reason"]]
    assert set(df["dataset"]) == {"file:stack.npy"} and df["source_digest"].notna().all()
    assert _state(d / "stack.npy") == before


def test_the_s3_suite_plans_a_persons_file(tmp_path):
    from benchmarks_lib.suites.s3 import build_cases

    np.save(tmp_path / "stack.npy", STACK)
    cases = build_cases({"dataset": f"file:{tmp_path / 'stack.npy'}", "dims": "z:4:2:4,y:64:32:64,x:64:32:64"},
                        "quick")
    assert {c.params["dims"] for c in cases} == {"z:4:2:4,y:40:32:32,x:48:32:32"}
    assert {c.params["dataset"] for c in cases} == {"file:stack.npy"}
    assert all(c.params["sources"]["file:stack.npy"]["path"] == str(tmp_path / "stack.npy") for c in cases)


def test_a_shrunk_axis_keeps_its_shard_a_whole_number_of_chunks():
    dims = parse_dims("z:64:8:32,y:1024:256:512")
    assert str(dims.with_size(1, 600)) == "z:64:8:32,y:600:256:512"
    assert str(dims.with_size(1, 300)) == "z:64:8:32,y:300:256:256"
    assert str(dims.with_size(1, 100)) == "z:64:8:32,y:100:100:100"


def test_compression_measures_a_persons_mesh_file(workdir):
    """A mesh from a file pyvista reads (a .ply surface, cast to an unstructured grid) beside the tetrahedral mesh,
    through both mesh writers, verified exactly; the file left untouched."""
    examples = pytest.importorskip("pyvista.examples")
    ant = Path(examples.__file__).parent / "ant.ply"
    before = _state(ant)
    params = {"array_backends": [], "real_datasets": [], "datasets": [f"file:{ant}"], "mesh_n": 8, "levels": [3],
              "vtu_compressors": ["zlib"], "iterations": 2}
    df = run_suite("compression", params, results_dir=workdir / "results", run_id="ant", ceiling=False,
                   progress=None, assume_yes=True).df
    rows = df[df["dataset"] == "file:ant.ply"]
    assert set(rows["backend"]) == {"zvtk", "vtu"} and (rows["status"] == "ok").all() and rows["verified"].all()
    assert set(rows["source"]) == {"ant.ply"} and rows["source_digest"].notna().all() and rows["mesh_n"].isna().all()
    assert set(df["dataset"]) == {"tet_mesh", "file:ant.ply"}
    assert _state(ant) == before


def test_a_mesh_is_refused_where_arrays_are_measured_and_when_unreadable(sources, capsys):
    (sources / "broken.vtu").write_text("<VTKFile type='UnstructuredGrid'>nonsense")
    assert _run_cli("writers", "--dataset", "file:data/broken.vtu") == 2
    assert "only the compression suite's datasets measure a mesh file" in capsys.readouterr().err
    assert _run_cli("compression", "--dataset", "file:data/broken.vtu") == 2
    err = capsys.readouterr().err
    assert "cannot be read by pyvista" in err and err.count("\n") == 1
    assert not (sources.parent / "results").exists() and not (sources.parent / "scratch").exists()


@pytest.mark.parametrize("layout", [
    {"tile": (32, 48), "compression": "zlib"}, {"rowsperstrip": 7, "compression": "zlib", "predictor": True},
    {"tile": (16, 16), "compression": "lzma", "byteorder": ">"}, {"rowsperstrip": 10},  # uncompressed: memory-mapped
    {"tile": (16, 16), "photometric": "rgb", "planarconfig": "separate"},
    {"tile": (4, 16, 16), "volumetric": True, "compression": "zlib", "photometric": "minisblack"},
], ids=["tiles", "strips-predictor", "lzma-big-endian", "mapped", "rgb-planes", "volume-tiles"])
def test_a_tiff_region_is_read_from_the_segments_under_it(tmp_path, layout):
    """Every TIFF layout a region is read from (tiles, strips, planes, volumes; compressed or memory-mapped) gives
    the values tifffile gives for the whole file."""
    tifffile = pytest.importorskip("tifffile")
    from benchmarks_lib.adapters.user_arrays import open_source

    shape = (3, 70, 90, 3) if "photometric" in layout else (3, 12, 70, 90) if "volumetric" in layout else STACK.shape
    values = (np.arange(math.prod(shape)) % 65521).astype(np.uint16).reshape(shape)
    tifffile.imwrite(tmp_path / "x.tif", values, **layout)
    with open_source(tmp_path / "x.tif") as source:
        assert source.shape == shape and source._mapped == ("compression" not in layout and "tile" not in layout)
        index = tuple(slice(1, n - 2) for n in shape)
        assert np.array_equal(source.read(index), values[index])


def test_a_tiff_segment_that_inflates_past_its_tile_is_refused(tmp_path):
    """A 64x64 tile whose zlib stream inflates to 16 MiB: refused after its tile's bytes, never inflated whole."""
    tifffile = pytest.importorskip("tifffile")
    from benchmarks_lib.adapters.user_arrays import open_source

    bomb = zlib.compress(bytes(16 << 20))
    tifffile.imwrite(tmp_path / "x.tif", iter([bomb] * 4), shape=(128, 128), dtype=np.uint8, tile=(64, 64),
                     compression="zlib")
    with open_source(tmp_path / "x.tif") as source, pytest.raises(SpecError, match=r"inflates to more than 4\.1 kB"):
        source.read((slice(0, 8), slice(0, 8)))
