"""Verification that can fail: checksums cover dtype and shape, formats with no second library
are decoded by an independent reader, and a corrupted byte is caught.

Real libraries at small sizes; a missing backend skips with the registry's reason.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks_lib.adapters import backend_status, make_adapter
from benchmarks_lib.adapters.base import Adapter, IndependentRead
from benchmarks_lib.base.specs import ArraySpec, parse_codec, parse_dims
from benchmarks_lib.data.datasets import ArrayDigest, Dataset, checksum_array, checksum_blocks, checksum_header
from benchmarks_lib.suites.kit.verification import verify

# (backend, codec, dims): edge chunks on y and x, a partial last chunk/file along z
CASES = [
    ("raw", "none", "z:7:4,y:60:32,x:90:32"),
    *[("h5py", c, "z:7:4,y:60:32,x:90:32")
      for c in ("none", "gzip", "lz4", "zstd", "blosc-lz4:5:shuffle", "blosc-zstd:3:bitshuffle")],
    *[("zarr-python:zarr2", c, "z:7:4,y:60:32,x:90:32") for c in ("none", "zstd", "lz4", "blosc-lz4:5:shuffle")],
    ("wkw", "none", "z:12:8,y:60:8,x:90:8"),
    ("wkw", "none", "z:16:8:16,y:64:8:16,x:96:8:16"),
    ("wkw", "lz4", "z:16:8:16,y:64:8:16,x:96:8:16"),
]


def available(name: str) -> Adapter:
    status = backend_status(name)
    if not status.available:
        pytest.skip(f"{name}: {status.reason}")
    return make_adapter(name)


def written(name: str, codec: str, dims: str, path: Path, dataset: str = "microscopy") -> tuple[Adapter, ArraySpec,
                                                                                                   Dataset]:
    adapter = available(name)
    d = parse_dims(dims)
    data = Dataset(dataset, d.shape)
    spec = ArraySpec(d, data.dtype, parse_codec(codec))
    if reason := adapter.is_incompatible(spec, "write"):
        pytest.skip(reason)
    adapter.create(path, spec)
    adapter.write(0, data.region(tuple(slice(0, n) for n in d.shape)))
    adapter.finalize()
    return adapter, spec, data


def flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


# -- checksums ---------------------------------------------------------------------------
def test_checksum_covers_dtype_and_shape():
    a = Dataset("microscopy", (4, 6, 10)).region((slice(0, 4), slice(0, 6), slice(0, 10)))
    assert a.dtype == np.uint16
    same_bytes = [a.view(np.uint8), a.reshape(4, 10, 6), a.reshape(24, 10), a.view(np.int16)]
    assert len({checksum_array(a), *(checksum_array(b) for b in same_bytes)}) == 5
    assert checksum_array(a[:3]) != checksum_array(a)


def test_checksum_ignores_blocking_and_byte_order():
    a = Dataset("labels", (5, 8, 9)).region((slice(0, 5), slice(0, 8), slice(0, 9)))
    assert checksum_blocks([a[:1], a[1:4], a[4:]]) == checksum_array(a) == checksum_array(a.astype(">u4"))
    assert checksum_blocks([a[:2], a[2:].astype(np.int64)]) != checksum_array(a)  # mixed dtypes
    assert checksum_header(a.dtype, a.shape) == b"iobench-array-v1|<u4|5,8,9"
    digest = ArrayDigest()
    digest.update(a)
    assert digest.hexdigest() == checksum_array(a) != ArrayDigest().hexdigest()


def test_fast_checksums_name_their_algorithm_and_verify_what_either_made(tmp_path: Path):
    """A run's writes are verified by xxh3 checksums (``xxh3:`` first); a checksum made by blake2b (a library
    version's own environment, without xxhash) is checked by blake2b; a flipped byte fails either."""
    from benchmarks_lib.data.datasets import FAST_CHECKSUM, checksum_algorithm

    a = Dataset("microscopy", (5, 8, 9)).region((slice(0, 5), slice(0, 8), slice(0, 9)))
    fast = checksum_blocks([a[:2], a[2:]], "xxh3")
    assert fast.startswith("xxh3:") and fast == checksum_blocks([a], "xxh3") != "xxh3:" + checksum_array(a)
    assert checksum_algorithm(fast) == "xxh3" and checksum_algorithm(checksum_array(a)) == "blake2b"
    assert checksum_blocks([a.view(np.int16)], "xxh3") != fast  # the dtype is covered as before
    assert FAST_CHECKSUM == "xxh3"  # a core dependency
    with pytest.raises(ValueError, match="blake2b or xxh3"):
        ArrayDigest("md5")
    adapter, spec, data = written("raw", "none", "z:4:4,y:30:30,x:40:40", tmp_path / "out")
    for algorithm in ("xxh3", "blake2b"):
        assert verify(tmp_path / "out", spec, adapter, data.checksum(algorithm=algorithm), 3)["verified"]
    flip_byte(*_data_offset("raw", tmp_path / "out"))
    for algorithm in ("xxh3", "blake2b"):
        check = verify(tmp_path / "out", spec, adapter, data.checksum(algorithm=algorithm), 3)
        assert not check["verified"] and "checksum mismatch" in check["verify_detail"]


def test_same_array_compares_every_byte_dtype_and_shape():
    from benchmarks_lib.data.datasets import same_array

    a = Dataset("microscopy", (3, 40, 50)).region((slice(0, 3), slice(0, 40), slice(0, 50)))
    b = a.copy()
    assert same_array(b, a) and same_array(a[:, 3:9], b[:, 3:9].copy())  # C order, and a strided view
    b[2, 39, 49] ^= 1
    assert not same_array(b, a) and not same_array(b[:, 1::2], a[:, 1::2])
    assert not same_array(a.astype(np.int16), a) and not same_array(a.reshape(3, 50, 40), a)
    assert same_array(np.empty((0, 4), np.uint8), np.empty((0, 4), np.uint8))
    f = np.array([0.0, np.nan])
    assert same_array(f.copy(), f) and not same_array(np.array([-0.0, np.nan]), f)  # the bytes, exactly


# -- independent readers -----------------------------------------------------------------
@pytest.mark.parametrize(("name", "codec", "dims"), CASES)
def test_independent_reader_returns_the_array(name: str, codec: str, dims: str, tmp_path: Path):
    adapter, spec, data = written(name, codec, dims, tmp_path / "out")
    independent = adapter.independent_read(tmp_path / "out", spec)
    assert isinstance(independent, IndependentRead), independent
    blocks = list(independent.blocks)
    np.testing.assert_array_equal(np.concatenate(blocks), data.region(tuple(slice(0, n) for n in spec.shape)))
    assert checksum_blocks(blocks) == data.checksum()
    check = verify(tmp_path / "out", spec, adapter, data.checksum(), 3)
    assert check["verified"] and check["verified_independently"], check
    assert check["verified_by"] == independent.by and "file I/O" in independent.by and not check["verify_note"]


def test_hdf5_contiguous_and_multi_block_lz4(tmp_path: Path):
    available("h5py")
    h5py = pytest.importorskip("h5py")
    hdf5plugin = pytest.importorskip("hdf5plugin")
    from benchmarks_lib.adapters.independent import hdf5_read

    a = Dataset("labels", (6, 40, 50)).region((slice(0, 6), slice(0, 40), slice(0, 50)))
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("contiguous", data=a)
        f.create_dataset("lz4", data=a, chunks=(4, 32, 32), **hdf5plugin.LZ4(nbytes=1000))
        f.create_dataset("shuffle_gzip", data=a, chunks=(4, 32, 32), shuffle=True, compression="gzip")
    for name in ("contiguous", "lz4", "shuffle_gzip"):
        independent = hdf5_read(tmp_path / "f.h5", name)
        assert isinstance(independent, IndependentRead), independent
        assert checksum_blocks(independent.blocks) == checksum_array(a), name


def test_hdf5_filter_without_decoder_is_said_and_read_by_h5py(tmp_path: Path):
    adapter, spec, data = written("h5py", "none", "z:7:4,y:60:32,x:90:32", tmp_path / "out")
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "out", "w") as f:  # the same data with a Fletcher-32 checksum filter
        f.create_dataset("data", data=data.region(tuple(slice(0, n) for n in spec.shape)), chunks=(4, 32, 32),
                         fletcher32=True)
    reason = adapter.independent_read(tmp_path / "out", spec)
    assert isinstance(reason, str) and "filter 3" in reason
    check = verify(tmp_path / "out", spec, adapter, data.checksum(), 3)
    assert check["verified"] and not check["verified_independently"]
    assert check["verified_by"] == "h5py" and reason in check["verify_note"]


# -- verification fails when it should ---------------------------------------------------
def _data_offset(name: str, path: Path) -> tuple[Path, int]:
    """A file and a byte offset inside the stored array data (not metadata)."""
    if name == "raw":
        return path, path.stat().st_size // 2
    if name == "h5py":
        import h5py

        with h5py.File(path, "r") as f:
            info = f["data"].id.get_chunk_info(1)
        return path, info.byte_offset + info.size // 2
    if name.startswith("zarr-python"):
        file = path / "1" / "0" / "0"
        return file, file.stat().st_size // 2
    file = path / "z0" / "y0" / "x0.wkw"
    return file, (16 + file.stat().st_size) // 2


@pytest.mark.parametrize(("name", "codec", "dims"), [CASES[0], CASES[1], CASES[2], CASES[-3], CASES[-1],
                                                       ("zarr-python:zarr2", "none", "z:7:4,y:60:32,x:90:32")])
def test_a_corrupted_byte_fails_verification(name: str, codec: str, dims: str, tmp_path: Path):
    adapter, spec, data = written(name, codec, dims, tmp_path / "out")
    assert verify(tmp_path / "out", spec, adapter, data.checksum(), 3)["verified"]
    flip_byte(*_data_offset(name, tmp_path / "out"))
    check = verify(tmp_path / "out", spec, adapter, data.checksum(), 3)
    assert not check["verified"] and check["verified_independently"]
    # uncompressed: the bytes differ; compressed: the codec refuses the stream or the bytes differ
    assert "checksum mismatch" in check["verify_detail"] or "could not read it back" in check["verify_detail"]
    if codec == "none":
        assert "checksum mismatch" in check["verify_detail"]


def test_a_dtype_or_shape_mismatch_fails_verification(tmp_path: Path):
    adapter, spec, data = written("raw", "none", "z:4:4,y:30:30,x:40:40", tmp_path / "out")
    as_bytes = ArraySpec(parse_dims("z:4:4,y:30:30,x:80:80"), "uint8", spec.codec)  # same bytes, uint8
    transposed = ArraySpec(parse_dims("z:4:4,y:40:40,x:30:30"), "uint16", spec.codec)  # same bytes, other shape
    for wrong in (as_bytes, transposed):
        check = verify(tmp_path / "out", wrong, make_adapter("raw"), data.checksum(), 2)
        assert not check["verified"] and "checksum mismatch" in check["verify_detail"]
    assert verify(tmp_path / "out", spec, adapter, data.checksum(), 2)["verified"]


def test_a_truncated_raw_file_fails_verification(tmp_path: Path):
    adapter, spec, data = written("raw", "none", "z:4:4,y:30:30,x:40:40", tmp_path / "out")
    with open(tmp_path / "out", "r+b") as f:
        f.truncate(3 * 30 * 40 * 2)  # one frame lost: a whole number of rows, so only the shape differs
    check = verify(tmp_path / "out", spec, adapter, data.checksum(), 2)
    assert not check["verified"] and "checksum mismatch" in check["verify_detail"]


# -- a later write proven identical -------------------------------------------------------
@pytest.mark.parametrize(("name", "codec", "dims"), [("h5py", "blosc-lz4:5:shuffle", "z:7:4,y:60:32,x:90:32"),
                                                     ("zarr-python", "blosc-lz4:5:shuffle", "z:7:4,y:60:32,x:90:32"),
                                                     ("raw", "none", "z:7:4,y:60:32,x:90:32")])
def test_a_later_write_is_verified_by_its_digest_and_a_different_one_is_read_back(name: str, codec: str, dims: str,
                                                                                   tmp_path: Path):
    from benchmarks_lib.suites.kit.verification import Proven, store_digest

    proven = Proven()
    adapter, spec, data = written(name, codec, dims, tmp_path / "a")
    first = verify(tmp_path / "a", spec, adapter, data.checksum(), 3, scope="identical", proven=proven)
    assert first["verified"] and first["verified_scope"] == "full" and proven.digest, first
    adapter, spec, data = written(name, codec, dims, tmp_path / "b")  # the same data written the same way
    assert store_digest(tmp_path / "b") == proven.digest  # h5py without modification times, too
    second = verify(tmp_path / "b", spec, adapter, data.checksum(), 3, scope="identical", proven=proven)
    assert second == {**first, "verified_scope": "identical"}
    adapter, spec, data = written(name, codec, dims, tmp_path / "c")
    files = [p for p in sorted((tmp_path / "c").rglob("*")) if p.is_file()] if (tmp_path / "c").is_dir() \
        else [tmp_path / "c"]
    flip_byte(max(files, key=lambda p: p.stat().st_size), 200)  # the digest differs: read back whole
    third = verify(tmp_path / "c", spec, adapter, data.checksum(), 3, scope="identical", proven=proven)
    assert third["verified_scope"] == "full", third
    assert name != "raw" or not third["verified"]  # a raw file's byte 200 is the array's


def test_a_store_holding_a_symlink_has_no_digest(tmp_path: Path):
    from benchmarks_lib.suites.kit.verification import store_digest

    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "c0").write_bytes(b"x")
    assert store_digest(tmp_path / "s")
    (tmp_path / "s" / "link").symlink_to(tmp_path / "s" / "c0")
    assert store_digest(tmp_path / "s") == ""
