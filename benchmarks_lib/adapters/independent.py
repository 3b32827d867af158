"""Readers that do not use the writer's library, for formats that no second library reads.

They back :meth:`Adapter.independent_read`, so that an HDF5, wkw or raw write is verified by
code that shares nothing with the writer's read path:

- raw: the file read with plain file I/O; the number of rows comes from the file size.
- HDF5: only the metadata (dtype, shape, filters and the chunk index: offset, size and filter
  mask of each chunk) comes from libhdf5 through h5py's low-level API. The chunk bytes are
  read with plain file I/O and decoded with zlib / numcodecs, never through HDF5's filter
  pipeline; a contiguous dataset is read at ``get_offset()``.
- Zarr v2 (zarr-python 2.x and 3.x writing the v2 format; no other library here reads it): ``.zarray``
  parsed as JSON, each chunk file read with file I/O and decoded with its numcodecs compressor.
- wkw: the header, the jump table and the Morton-ordered blocks are parsed as the format
  specification describes (scalableminds/webknossos-wrap, ``SPECIFICATION.md``); LZ4 blocks
  are decoded with numcodecs' LZ4. wkw stores no shape, so the spec's shape is read.

Every reader yields the array as consecutive blocks along axis 0 (one block in memory at a
time); decoding errors surface while iterating, so a corrupt store fails verification.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import IndependentRead
from benchmarks_lib.base.specs import ArraySpec
from benchmarks_lib.data.datasets import default_step

# -- raw ---------------------------------------------------------------------------------


def raw_read(path: Path, spec: ArraySpec) -> IndependentRead:
    """A flat C-order file: rows of ``spec.shape[1:]``, as many as the file holds."""
    return IndependentRead("file I/O", _raw_blocks(Path(path), np.dtype(spec.dtype), tuple(spec.shape)))


def _raw_blocks(path: Path, dtype: np.dtype, shape: tuple[int, ...]) -> Iterator[np.ndarray]:
    row_bytes = math.prod(shape[1:]) * dtype.itemsize
    size = path.stat().st_size
    if size % row_bytes:
        raise ValueError(f"{path} holds {size} bytes, not a whole number of {row_bytes}-byte rows")
    rows = size // row_bytes
    step = default_step((max(rows, 1), *shape[1:]), dtype.str)
    with open(path, "rb") as f:
        for start in range(0, rows, step):
            block = np.empty((min(step, rows - start), *shape[1:]), dtype=dtype)
            if f.readinto(memoryview(block).cast("B")) != block.nbytes:
                raise ValueError(f"{path} ended early at row {start}")
            yield block


# -- codecs ------------------------------------------------------------------------------


def _numcodecs_missing() -> str | None:
    return None if importlib.util.find_spec("numcodecs") else "numcodecs is not installed (pip install numcodecs)"


def lz4_block_decompress(data: bytes, size: int) -> bytes:
    """One raw LZ4 block (no frame) of ``size`` decoded bytes, decoded by numcodecs' liblz4."""
    from numcodecs import LZ4

    out = LZ4().decode(struct.pack("<I", size) + bytes(data))  # numcodecs prefixes the size (LE u32)
    if len(out) != size:
        raise ValueError(f"LZ4 block decoded to {len(out)} bytes, expected {size}")
    return bytes(out)


def _hdf5_lz4(data: bytes) -> bytes:
    """The HDF5 LZ4 filter (32004): u64 BE total size, u32 BE block size, then per block a u32 BE
    compressed size and the block (stored as is when it did not shrink)."""
    total, block = struct.unpack_from(">QI", data, 0)
    pos, out = 12, bytearray()
    while len(out) < total:
        want = min(block, total - len(out))
        (n,) = struct.unpack_from(">I", data, pos)
        chunk = data[pos + 4:pos + 4 + n]
        pos += 4 + n
        out += chunk if n == want else lz4_block_decompress(chunk, want)
    return bytes(out)


def _unshuffle(itemsize: int) -> Callable[[bytes], bytes]:
    def decode(data: bytes) -> bytes:
        n = len(data) // itemsize
        planes = np.frombuffer(data, np.uint8, n * itemsize).reshape(itemsize, n)
        return planes.T.tobytes() + data[n * itemsize:]
    return decode


def _numcodecs_decoder(name: str) -> Callable[[bytes], bytes]:
    def decode(data: bytes) -> bytes:
        import numcodecs

        return bytes(getattr(numcodecs, name)().decode(data))
    return decode


#: HDF5 filter id -> (label, needs numcodecs, decoder factory taking the filter's cd_values)
HDF5_FILTERS: dict[int, tuple[str, bool, Callable[[tuple], Callable[[bytes], bytes]]]] = {
    1: ("zlib", False, lambda cd: zlib.decompress),
    2: ("numpy unshuffle", False, lambda cd: _unshuffle(int(cd[0]) if cd else 1)),
    32001: ("numcodecs.Blosc", True, lambda cd: _numcodecs_decoder("Blosc")),
    32004: ("numcodecs.LZ4", True, lambda cd: _hdf5_lz4),
    32015: ("numcodecs.Zstd", True, lambda cd: _numcodecs_decoder("Zstd")),
}


# -- HDF5 --------------------------------------------------------------------------------


def hdf5_read(path: Path, dataset: str) -> IndependentRead | str:
    """One HDF5 dataset; a chunked one chunk by chunk. Says why when a filter has no decoder here."""
    import h5py

    with h5py.File(path, "r") as f:
        ds = f[dataset]
        plist = ds.id.get_create_plist()
        filters = [plist.get_filter(i) for i in range(plist.get_nfilters())]
        layout = plist.get_layout()
        dtype, shape, fill = ds.dtype, tuple(ds.shape), ds.fillvalue
        if layout == h5py.h5d.CONTIGUOUS:
            offset = ds.id.get_offset()
            return IndependentRead("h5py offset + file I/O", _hdf5_contiguous(Path(path), offset, dtype, shape, fill))
        if layout != h5py.h5d.CHUNKED:
            return "HDF5 compact datasets have no byte offset to read independently"
        decoders, labels = [], []
        for code, _flags, cd_values, name in filters:
            if code not in HDF5_FILTERS:
                return f"HDF5 filter {code} ({name.decode(errors='replace')}) has no independent decoder here"
            label, needs_numcodecs, factory = HDF5_FILTERS[code]
            if needs_numcodecs and (missing := _numcodecs_missing()):
                return f"HDF5 filter {code} needs {missing}"
            decoders.append(factory(tuple(cd_values)))
            labels.append(label)
        index = _chunk_index(ds)
        chunks = tuple(ds.chunks)
    by = " + ".join(["h5py chunk index", "file I/O", *dict.fromkeys(labels)])
    return IndependentRead(by, _hdf5_chunked(Path(path), index, decoders, dtype, shape, chunks, fill))


def _chunk_index(ds) -> dict[int, list[tuple[tuple[int, ...], int, int, int]]]:
    """Chunks grouped by their offset along axis 0: (offset, byte offset, size, filter mask)."""
    index: dict[int, list] = {}

    def add(info) -> None:
        index.setdefault(info.chunk_offset[0], []).append(
            (tuple(info.chunk_offset), info.byte_offset, info.size, info.filter_mask))

    try:
        ds.id.chunk_iter(add)
    except (AttributeError, NotImplementedError):  # HDF5 < 1.12.3: one call per chunk
        index.clear()
        for i in range(ds.id.get_num_chunks()):
            add(ds.id.get_chunk_info(i))
    return index


def _hdf5_contiguous(path: Path, offset: int | None, dtype: np.dtype, shape: tuple[int, ...],
                     fill) -> Iterator[np.ndarray]:
    step = default_step(shape, dtype.str)
    row_bytes = math.prod(shape[1:]) * dtype.itemsize
    with open(path, "rb") as f:
        for start in range(0, shape[0], step):
            block = np.full((min(step, shape[0] - start), *shape[1:]), fill, dtype=dtype)
            if offset is not None:  # None: never written, all fill value
                f.seek(offset + start * row_bytes)
                if f.readinto(memoryview(block).cast("B")) != block.nbytes:
                    raise ValueError(f"{path} ended inside the dataset at row {start}")
            yield block


def _hdf5_chunked(path: Path, index: dict, decoders: list, dtype: np.dtype, shape: tuple[int, ...],
                  chunks: tuple[int, ...], fill) -> Iterator[np.ndarray]:
    chunk_bytes = math.prod(chunks) * dtype.itemsize
    with open(path, "rb") as f:
        for start in range(0, shape[0], chunks[0]):
            slab = np.full((min(chunks[0], shape[0] - start), *shape[1:]), fill, dtype=dtype)
            for offset, byte_offset, size, mask in index.get(start, ()):
                f.seek(byte_offset)
                data = f.read(size)
                for i in reversed(range(len(decoders))):
                    if not mask & (1 << i):  # a set bit: that filter was skipped for this chunk
                        data = decoders[i](data)
                if len(data) != chunk_bytes:
                    raise ValueError(f"chunk at {offset} decoded to {len(data)} bytes, expected {chunk_bytes}")
                chunk = np.frombuffer(data, dtype=dtype).reshape(chunks)
                local = (0, *offset[1:])  # edge chunks are stored whole: cut them to the slab
                dst = tuple(slice(o, min(o + c, n)) for o, c, n in zip(local, chunks, slab.shape, strict=True))
                slab[dst] = chunk[tuple(slice(0, s.stop - s.start) for s in dst)]
            yield slab


# -- wkw ---------------------------------------------------------------------------------

WKW_VOXEL_TYPES = {1: "u1", 2: "u2", 3: "u4", 4: "u8", 5: "f4", 6: "f8"}
WKW_RAW, WKW_LZ4, WKW_LZ4HC = 1, 2, 3


def _wkw_header(data: bytes, where: Path) -> tuple[int, int, int, np.dtype, int]:
    """(block_len, file_len, block_type, dtype, data_offset) from the 16-byte header."""
    if len(data) < 16 or data[:3] != b"WKW" or data[3] != 1:
        raise ValueError(f"{where} does not start with a wkw version-1 header")
    lengths, block_type, voxel_type, voxel_size, data_offset = struct.unpack_from("<BBBBQ", data, 4)
    if voxel_type not in WKW_VOXEL_TYPES or block_type not in (WKW_RAW, WKW_LZ4, WKW_LZ4HC):
        raise ValueError(f"{where}: unknown voxel type {voxel_type} or block type {block_type}")
    dtype = np.dtype("<" + WKW_VOXEL_TYPES[voxel_type])
    if voxel_size != dtype.itemsize:
        raise ValueError(f"{where}: {voxel_size}-byte voxels of {dtype} (multi-channel) are not read here")
    return 1 << (lengths & 0x0F), 1 << (lengths >> 4), block_type, dtype, data_offset


def _morton_3d(index: int) -> tuple[int, int, int]:
    """(x, y, z) of a Morton index whose bits interleave x, y, z from the lowest bit."""
    xyz = [0, 0, 0]
    bit = 0
    while index:
        for axis in range(3):
            xyz[axis] |= (index & 1) << bit
            index >>= 1
        bit += 1
    return xyz[0], xyz[1], xyz[2]


def wkw_read(path: Path, spec: ArraySpec) -> IndependentRead | str:
    """A wkw dataset parsed from its files, one layer of files (along axis 0 = wkw z) at a time."""
    path = Path(path)
    header = (path / "header.wkw").read_bytes()[:16]
    block_len, file_len, block_type, dtype, _ = _wkw_header(header, path / "header.wkw")
    if len(spec.shape) != 3:
        return f"wkw volumes are 3-D, the spec is {len(spec.shape)}-D"
    by = "wkw spec parser + file I/O"
    if block_type != WKW_RAW:
        if missing := _numcodecs_missing():
            return f"wkw LZ4 blocks need {missing}"
        by += " + numcodecs.LZ4"
    return IndependentRead(by, _wkw_blocks(path, tuple(spec.shape), block_len, file_len, dtype))


def _wkw_file(path: Path, block_len: int, file_len: int, dtype: np.dtype) -> np.ndarray:
    """One wkw file as a C-order cube indexed [z, y, x] (wkw stores x fastest)."""
    data = path.read_bytes()
    b_len, f_len, block_type, f_dtype, data_offset = _wkw_header(data, path)
    if (b_len, f_len, f_dtype) != (block_len, file_len, dtype):
        raise ValueError(f"{path}: header disagrees with header.wkw")
    n_blocks = file_len ** 3
    block_bytes = block_len ** 3 * dtype.itemsize
    if block_type == WKW_RAW:
        ends = [data_offset + (i + 1) * block_bytes for i in range(n_blocks)]
    else:
        ends = list(struct.unpack_from(f"<{n_blocks}Q", data, 16))  # jump table: end offset of each block
    cube = np.empty((block_len * file_len,) * 3, dtype=dtype)
    start = data_offset
    for i, end in enumerate(ends):
        raw = data[start:end]
        if block_type != WKW_RAW:
            raw = lz4_block_decompress(raw, block_bytes)
        if len(raw) != block_bytes:
            raise ValueError(f"{path}: block {i} has {len(raw)} bytes, expected {block_bytes}")
        x, y, z = (c * block_len for c in _morton_3d(i))
        cube[z:z + block_len, y:y + block_len, x:x + block_len] = np.frombuffer(raw, dtype).reshape((block_len,) * 3)
        start = end
    return cube


def _wkw_blocks(path: Path, shape: tuple[int, ...], block_len: int, file_len: int,
                dtype: np.dtype) -> Iterator[np.ndarray]:
    side = block_len * file_len
    for z0 in range(0, shape[0], side):
        layer = np.zeros((min(side, shape[0] - z0), *shape[1:]), dtype=dtype)  # files never written: zeros
        for y0 in range(0, shape[1], side):
            for x0 in range(0, shape[2], side):
                file = path / f"z{z0 // side}" / f"y{y0 // side}" / f"x{x0 // side}.wkw"
                if not file.exists():
                    continue
                cube = _wkw_file(file, block_len, file_len, dtype)
                dst = layer[:, y0:y0 + side, x0:x0 + side]
                dst[...] = cube[:dst.shape[0], :dst.shape[1], :dst.shape[2]]
        yield layer


# -- Zarr v2 -----------------------------------------------------------------------------

#: the largest ``.zarray`` read (a metadata file: a few hundred bytes)
ZARRAY_MAX_BYTES = 1 << 20


def zarr2_read(path: Path, spec: ArraySpec) -> IndependentRead | str:
    """A Zarr v2 array parsed as the v2 specification describes: ``.zarray`` (JSON) gives the shape, chunks, dtype,
    compressor and chunk-key separator; each chunk file is read with file I/O and decoded with the numcodecs codec
    its ``compressor`` names (absent chunks are the fill value). Says why where filters or Fortran order are used."""
    path = Path(path)
    meta_file = path / ".zarray"
    if not meta_file.is_file() or meta_file.stat().st_size > ZARRAY_MAX_BYTES:
        return f"{meta_file} is not a regular file of at most {ZARRAY_MAX_BYTES} bytes"
    meta = json.loads(meta_file.read_bytes())
    if meta.get("zarr_format") != 2:
        return f"{meta_file} is not Zarr format 2"
    if meta.get("filters"):
        return "Zarr v2 filters are not decoded by the independent reader"
    if meta.get("order", "C") != "C":
        return "Fortran-ordered Zarr v2 chunks are not decoded by the independent reader"
    compressor = meta.get("compressor")
    by = "Zarr v2 spec parser + file I/O"
    if compressor is not None:
        if missing := _numcodecs_missing():
            return f"the Zarr v2 compressor {compressor.get('id')!r} needs {missing}"
        by += f" + numcodecs.{compressor.get('id')}"
    dtype, shape, chunks = np.dtype(meta["dtype"]), tuple(meta["shape"]), tuple(meta["chunks"])
    if shape != tuple(spec.shape) or len(chunks) != len(shape):
        return f"{meta_file} holds shape {shape} with chunks {chunks}, not the written {tuple(spec.shape)}"
    fill = meta.get("fill_value") or 0
    return IndependentRead(by, _zarr2_blocks(path, meta.get("dimension_separator") or ".", compressor, dtype, shape,
                                             chunks, fill))


def _zarr2_blocks(path: Path, separator: str, compressor: dict | None, dtype: np.dtype, shape: tuple[int, ...],
                  chunks: tuple[int, ...], fill) -> Iterator[np.ndarray]:
    decode = None
    if compressor is not None:
        import numcodecs

        decode = numcodecs.get_codec(dict(compressor)).decode
    chunk_bytes = math.prod(chunks) * dtype.itemsize
    grid = [range(-(-n // c)) for n, c in zip(shape[1:], chunks[1:], strict=True)]
    for i0, start in enumerate(range(0, shape[0], chunks[0])):
        slab = np.full((min(chunks[0], shape[0] - start), *shape[1:]), fill, dtype=dtype)
        for rest in itertools.product(*grid):
            key = separator.join(str(i) for i in (i0, *rest))
            file = path / key
            if not file.is_file():  # never written: the fill value
                continue
            data = file.read_bytes()
            data = bytes(decode(data)) if decode else data
            if len(data) != chunk_bytes:
                raise ValueError(f"chunk {key} decoded to {len(data)} bytes, expected {chunk_bytes}")
            chunk = np.frombuffer(data, dtype=dtype).reshape(chunks)
            origin = (0, *(i * c for i, c in zip(rest, chunks[1:], strict=True)))
            dst = tuple(slice(o, min(o + c, n)) for o, c, n in zip(origin, chunks, slab.shape, strict=True))
            slab[dst] = chunk[tuple(slice(0, s.stop - s.start) for s in dst)]
        yield slab
