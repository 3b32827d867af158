"""Every registered writer round-trips a tiny synthetic volume, and a second library agrees.

Correctness only, never timings: write in blocks, finalize twice, read back whole, block by
block and as a cutout, compare with ``Dataset.region`` and the checksums; append, a codec and
a sharded case where the writer offers them. Zarr outputs are read by a *different* library
(tensorstore for zarr-python's, zarr-python for the others); formats with no second library
(HDF5, wkw, raw) are also decoded by the adapter's ``independent_read``. Missing backends skip
with the registry's reason.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks_lib.adapters import (
    KINDS,
    adapter_class,
    backend_status,
    expand_backends,
    make_adapter,
    registered,
)
from benchmarks_lib.adapters.base import Adapter, IndependentRead
from benchmarks_lib.base.specs import ArraySpec, parse_codec, parse_dims
from benchmarks_lib.data.datasets import Dataset, checksum_array, checksum_blocks
from benchmarks_lib.measure.disk import disk_usage

OME_WRITERS = [f"ome-writers:{option}" for option in adapter_class("ome-writers").options]
NAMES = expand_backends(["all", "tensorstore:zarr2", *OME_WRITERS])
# wkw needs cubic, power-of-two chunks; everyone else gets the same layout.
DIMS = {"write": "z:8:4,y:64:32,x:96:32", "append": "z:8:1,y:64:32,x:96:32", "codec": "z:8:4,y:64:32,x:96:32",
        "sharded": "z:8:4:8,y:64:32:64,x:96:32:96"}
WKW_DIMS = {"write": "z:8:8,y:64:8,x:96:8", "append": "z:8:8,y:64:8,x:96:8", "codec": "z:16:8,y:64:8,x:96:8",
            "sharded": "z:16:8:16,y:64:8:16,x:96:8:16"}
CUTOUT = (slice(1, 6), slice(10, 40), slice(20, 70))
DEFAULT_PIPELINE = "zarr.core.codec_pipeline.BatchedCodecPipeline"


def available_adapter(name: str, threads: int | None = None) -> Adapter:
    status = backend_status(name)
    if not status.available:
        pytest.skip(f"{name}: {status.reason}")
    return make_adapter(name, threads=threads)


def make_spec(name: str, case: str, dataset: str = "em_like", codec: str = "none") -> tuple[ArraySpec, Dataset]:
    dims = parse_dims((WKW_DIMS if name == "wkw" else DIMS)[case])
    data = Dataset(dataset, dims.shape)
    return ArraySpec(dims, data.dtype, parse_codec(codec)), data


def runnable(adapter: Adapter, spec: ArraySpec, operation: str) -> None:
    if reason := adapter.is_incompatible(spec, operation):
        pytest.skip(reason)


def write_all(adapter: Adapter, path: Path, spec: ArraySpec, data: Dataset, *, append: bool = False) -> None:
    alignment = getattr(adapter, "write_alignment", lambda spec: 1)(spec)
    adapter.create(path, spec, append=append)
    for offset, block in data.blocks(alignment if alignment > 1 else 3):
        if append:
            adapter.append(block)
        else:
            adapter.write(offset, block)
    adapter.finalize()
    adapter.finalize()


def array_path_of(adapter: Adapter, path: Path) -> Path:
    """The array inside the output (the image inside an OME-Zarr group)."""
    return getattr(adapter, "array_path", lambda path: path)(path)


def read_other_library(adapter: Adapter, path: Path, spec: ArraySpec) -> np.ndarray | None:
    """The whole array read by a library other than the writer's, or None where none can.

    Only Zarr has a second library here; zarr-python's ``lz4`` is the non-spec
    ``numcodecs.lz4`` codec, which neither tensorstore nor zarrs reads.
    """
    if adapter.format not in ("zarr2", "zarr3", "ome-zarr") or spec.codec.family == "lz4":
        return None
    array_path = array_path_of(adapter, path)
    if adapter.name == "zarr-python" or adapter.option == "zarr-python":
        ts = pytest.importorskip("tensorstore")
        driver = "zarr" if adapter.format == "zarr2" else "zarr3"
        store = ts.open({"driver": driver, "kvstore": {"driver": "file", "path": str(array_path)}}, read=True).result()
        return store.read().result()
    zarr = pytest.importorskip("zarr")
    with zarr.config.set({"codec_pipeline.path": DEFAULT_PIPELINE}):
        return zarr.open_array(str(array_path), mode="r")[...]


def check_round_trip(adapter: Adapter, path: Path, spec: ArraySpec, data: Dataset) -> None:
    full = tuple(slice(0, n) for n in spec.shape)
    expected = data.region(full)
    other = read_other_library(adapter, path, spec)
    if other is not None:
        np.testing.assert_array_equal(other, expected)
    independent = adapter.independent_read(path, spec)
    if isinstance(independent, IndependentRead):
        blocks = list(independent.blocks)
        np.testing.assert_array_equal(np.concatenate(blocks), expected)
        assert checksum_blocks(blocks) == data.checksum()
    else:
        assert independent and adapter.format not in ("hdf5", "wkw", "raw"), independent
    if not adapter.supports_read:
        assert other is not None, f"{adapter.label} cannot read and no other library verified it"
        return
    adapter.open_reader(path, spec)
    try:
        whole = adapter.read(full)
        n = spec.shape[0]
        blocks = [adapter.read((slice(start, min(start + 3, n)), *full[1:])) for start in range(0, n, 3)]
        cutout = adapter.read(CUTOUT)
    finally:
        adapter.close_reader()
        adapter.close_reader()
    np.testing.assert_array_equal(whole, expected)
    assert checksum_array(whole) == data.checksum() == checksum_blocks(blocks)
    np.testing.assert_array_equal(cutout, data.region(CUTOUT))


@pytest.mark.parametrize("name", NAMES)
def test_write_then_read(name: str, tmp_path: Path) -> None:
    adapter = available_adapter(name)
    spec, data = make_spec(name, "write")
    runnable(adapter, spec, "write")
    write_all(adapter, tmp_path / "out", spec, data)
    assert adapter.output_files(tmp_path / "out")
    check_round_trip(adapter, tmp_path / "out", spec, data)


@pytest.mark.parametrize("name", NAMES)
def test_append_then_read(name: str, tmp_path: Path) -> None:
    adapter = available_adapter(name)
    spec, data = make_spec(name, "append")
    runnable(adapter, spec, "append")
    write_all(adapter, tmp_path / "out", spec, data, append=True)
    check_round_trip(adapter, tmp_path / "out", spec, data)


@pytest.mark.parametrize("codec", ["blosc-lz4", "zstd", "lz4"])
@pytest.mark.parametrize("name", NAMES)
def test_codec_is_applied(name: str, codec: str, tmp_path: Path) -> None:
    adapter = available_adapter(name)
    if not adapter.applies_codec:
        pytest.skip(f"{name} does not apply codecs")
    spec, data = make_spec(name, "codec", dataset="labels", codec=codec)
    runnable(adapter, spec, "write")
    write_all(adapter, tmp_path / "out", spec, data)
    # labels compress well (2.5x even with blosc-lz4 on these tiny chunks): half the raw size proves the codec ran.
    assert disk_usage(tmp_path / "out").logical_bytes < spec.nbytes / 2
    check_round_trip(adapter, tmp_path / "out", spec, data)


@pytest.mark.parametrize("name", NAMES)
def test_sharded(name: str, tmp_path: Path) -> None:
    adapter = available_adapter(name)
    spec, data = make_spec(name, "sharded")
    runnable(adapter, spec, "write")
    write_all(adapter, tmp_path / "out", spec, data)
    check_round_trip(adapter, tmp_path / "out", spec, data)
    if adapter.format in ("zarr3", "ome-zarr"):
        zarr = pytest.importorskip("zarr")
        array = zarr.open_array(str(array_path_of(adapter, tmp_path / "out")), mode="r")
        assert array.shards == spec.dims.shards


@pytest.mark.parametrize("name", NAMES)
def test_unsupported_codec_is_a_reason(name: str) -> None:
    cls = adapter_class(name)
    if not cls.applies_codec:
        pytest.skip(f"{name} does not apply codecs")
    dims = parse_dims(WKW_DIMS["write"] if name == "wkw" else DIMS["write"])
    for text in ("lz4", "gzip", "zstd", "blosc-blosclz", "blosc-zlib"):
        codec = parse_codec(text)
        if codec.family not in cls.codecs or (codec.family == "blosc" and codec.cname not in cls.blosc_cnames):
            reason = make_adapter(name).is_incompatible(ArraySpec(dims, "uint8", codec), "write")
            assert isinstance(reason, str) and reason
            return
    pytest.skip(f"{name} offers every codec family")


@pytest.mark.parametrize("name", ["acquire-zarr", "ome-writers:zarr-python"])
def test_streaming_writers_refuse_out_of_order_writes(name: str, tmp_path: Path) -> None:
    adapter = available_adapter(name)
    spec, data = make_spec(name, "write")
    adapter.create(tmp_path / "out", spec)
    with pytest.raises(ValueError, match="in order"):
        adapter.write(3, data.region((slice(3, 6), slice(0, 64), slice(0, 96))))
    adapter.write(0, data.region((slice(0, 8), slice(0, 64), slice(0, 96))))
    adapter.finalize()


def test_wkw_lz4_needs_whole_files(tmp_path: Path) -> None:
    adapter = available_adapter("wkw")
    spec = ArraySpec(parse_dims("z:8:8,y:60:8,x:96:8"), "uint8", parse_codec("lz4"))
    assert "whole" in adapter.is_incompatible(spec, "write")
    assert "cubic" in adapter.is_incompatible(ArraySpec(parse_dims(DIMS["write"]), "uint8"), "write")
    # seed 001's unsharded 512^3 chunks: a block wkw's one-byte header cannot hold is refused, not a crash in create
    big = ArraySpec(parse_dims("z:512:256,y:512:256,x:512:256"), "uint8")
    assert adapter.is_incompatible(big, "write") == (
        "wkw's blocks are at most 128 voxels a side and its files at most 128 blocks (its header holds each in a "
        "byte), not 256 and 1")
    assert adapter.is_incompatible(ArraySpec(parse_dims("z:256:128,y:256:128,x:256:128"), "uint8"), "write") is None
    spec, data = make_spec("wkw", "codec", codec="lz4")
    assert adapter.write_alignment(spec) == 8
    adapter.create(tmp_path / "out", spec)
    with pytest.raises(ValueError, match="whole"):
        adapter.write(0, data.region((slice(0, 3), slice(0, 64), slice(0, 96))))
    adapter.finalize()


def test_ome_writers_names_and_reasons() -> None:
    cls = adapter_class("ome-writers")
    assert all(n.partition(":")[2] in cls.options for n in cls.expand_all())
    spec = ArraySpec(parse_dims(DIMS["write"]), "uint8", parse_codec("blosc-zstd"))
    assert "fixed" in make_adapter("ome-writers:zarr-python").is_incompatible(spec, "write")
    assert "chunk > 1" in make_adapter("ome-writers:tensorstore").is_incompatible(
        ArraySpec(parse_dims(DIMS["write"]), "uint8"), "append")


@pytest.mark.parametrize("name", NAMES)
def test_threads_are_applied_or_refused(name: str, tmp_path: Path) -> None:
    adapter = available_adapter(name, threads=2)
    spec, data = make_spec(name, "write")
    reason = adapter.is_incompatible(spec, "write")
    if adapter.threads_setting is None:
        if reason is None:
            pytest.skip(f"{name} has no threads setting and does not refuse one")
        assert "threads" in reason
        return
    assert reason is None
    write_all(adapter, tmp_path / "out", spec, data)
    check_round_trip(adapter, tmp_path / "out", spec, data)


def test_zarrs_uses_the_rust_pipeline_then_restores_config(tmp_path: Path) -> None:
    adapter = available_adapter("zarrs")
    zarr = pytest.importorskip("zarr")
    spec, _ = make_spec("zarrs", "write")
    adapter.create(tmp_path / "out", spec)
    assert type(adapter.array._async_array.codec_pipeline).__module__.startswith("zarrs")
    adapter.finalize()
    assert zarr.config.get("codec_pipeline.path") == DEFAULT_PIPELINE


# -- every kind: the declared data, mesh writers and in-memory codecs -------------------------
KIND_NAMES = [(kind, name) for kind in KINDS for name in registered(kind)]


@pytest.mark.parametrize(("kind", "name"), KIND_NAMES)
def test_every_adapter_declares_what_the_registry_shows(kind: str, name: str) -> None:
    cls = adapter_class(name, kind)
    assert (cls.name, cls.kind) == (name, kind)
    assert cls.module and cls.distribution and cls.install_hint
    status = backend_status(name, kind)
    assert status.available == (status.reason is None)
    assert status.available or "install" in status.reason
    assert status.capabilities.get("threads_setting") == cls.threads_setting


def test_a_missing_library_is_a_reason_with_the_install_hint(monkeypatch) -> None:
    from benchmarks_lib.adapters import library

    monkeypatch.setattr(library, "missing_modules", lambda modules: list(modules[:1]))
    for kind, name in KIND_NAMES:
        status = backend_status(name, kind)
        assert not status.available and adapter_class(name, kind).install_hint in status.reason


@pytest.mark.parametrize("name", list(registered("mesh")))
def test_mesh_writers_round_trip_exactly(name: str, tmp_path: Path) -> None:
    if reason := backend_status(name, "mesh").reason:
        pytest.skip(reason)
    from benchmarks_lib.data.meshes import build_tet_mesh, mesh_mismatch

    cls = adapter_class(name, "mesh")
    writer = make_adapter(name, threads=2 if cls.threads_setting else None, kind="mesh")
    mesh = build_tet_mesh(4, seed=2)
    for compressor in cls.compressors:
        level = cls.level_range[0] + 1 if cls.level_range else None
        path = tmp_path / f"{compressor}{cls.extension}"
        assert writer.is_incompatible(compressor, level) is None
        writer.write(mesh, path, compressor=compressor, level=level)
        assert mesh_mismatch(mesh, writer.read(path)) is None
    assert "bzip2" in writer.is_incompatible("bzip2", None)
    if cls.level_range is None:
        assert "levels" in writer.is_incompatible(cls.compressors[0], 3)
    else:
        assert "out of range" in writer.is_incompatible(cls.compressors[0], cls.level_range[1] + 1)
    if cls.threads_setting is None:
        assert "threads" in make_adapter(name, threads=2, kind="mesh").is_incompatible(cls.compressors[0], None)


@pytest.mark.parametrize("name", list(registered("codec")))
def test_codecs_round_trip_every_family_they_offer(name: str) -> None:
    if reason := backend_status(name, "codec").reason:
        pytest.skip(reason)
    cls = adapter_class(name, "codec")
    adapter = make_adapter(name, threads=2 if cls.threads_setting else None, kind="codec")
    chunk = Dataset("labels", (4, 32, 32)).region((slice(0, 4), slice(0, 32), slice(0, 32)))
    for text in ("lz4", "zstd:3", "gzip:1", "blosc-zstd:5:bitshuffle"):
        codec = parse_codec(text)
        if codec.family not in cls.codecs:
            assert text in adapter.is_incompatible(codec)
            continue
        assert adapter.is_incompatible(codec) is None
        impl = adapter.make_codec(codec, str(chunk.dtype))
        encoded = impl.encode(chunk)
        assert len(encoded) < chunk.nbytes
        back = np.frombuffer(impl.decode(encoded), dtype=chunk.dtype).reshape(chunk.shape)
        np.testing.assert_array_equal(back, chunk)
    assert "no in-memory codec" in adapter.is_incompatible(parse_codec("none"))


def test_blosc_turns_blosc_threads_and_numcodecs_leaves_them_to_the_caller() -> None:
    if reason := backend_status("blosc", "codec").reason:
        pytest.skip(reason)
    import numcodecs.blosc

    codec = parse_codec("blosc-lz4:5:shuffle")
    before = numcodecs.blosc.use_threads, numcodecs.blosc.get_nthreads()
    try:
        make_adapter("blosc", threads=3, kind="codec").make_codec(codec, "uint8")
        assert numcodecs.blosc.use_threads and numcodecs.blosc.get_nthreads() == 3
        make_adapter("numcodecs", kind="codec").make_codec(codec, "uint8")
        assert numcodecs.blosc.use_threads is False
    finally:
        numcodecs.blosc.use_threads = before[0]
        numcodecs.blosc.set_nthreads(before[1])
    assert "threads" in make_adapter("numcodecs", threads=2, kind="codec").is_incompatible(codec)
