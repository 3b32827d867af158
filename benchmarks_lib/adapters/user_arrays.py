"""A person's own array, read from a file without writing to it: Zarr (v2 or v3; an OME-Zarr image gives its
full-resolution level), HDF5 (a dataset inside the file), TIFF/OME-TIFF (a series of pages), NumPy ``.npy``
and VTK ``.vti`` images (an array of point or cell data).

:func:`open_source` names the format from the file's first bytes (a directory must be a Zarr store), opens it
read-only and returns a :class:`SourceArray`: its shape and dtype (from metadata alone), and ``read(index)``,
which reads only what the region needs (Zarr and HDF5 the chunks under it, NumPy and an uncompressed TIFF the bytes
under it through a memory map, any other TIFF the tiles or strips under it), except a ``.vti``, which VTK reads
whole. Nothing here writes, moves or deletes the source: Zarr through a read-only store, HDF5 with mode ``r``,
NumPy through a read-only memory map. Every file a library opens is checked first
(:mod:`benchmarks_lib.adapters.user_files`: regular files only, none outside the store or the file's directory).
Every bad input (a missing file, an unknown format, an inner path that does not exist, a file its library cannot
read) is a one-line :class:`~benchmarks_lib.base.specs.SpecError`. A TIFF is read by
:mod:`benchmarks_lib.adapters.user_tiff`; what every reader shares is in :mod:`benchmarks_lib.adapters.user_source`.

Memory is planned from what the file declares, before anything is allocated: a piece that has to be decoded whole (a
Zarr or HDF5 chunk, a Zarr shard's index, a TIFF tile or strip, a ``.vti`` image) may declare at most
:func:`~benchmarks_lib.adapters.user_source.piece_limit` bytes, and a ``.npy`` header may not declare more data than
its file holds; a file that does is refused in one line when it is opened. Reading a region then decodes the region
and, at a time, one piece (Zarr: the few chunks it reads at once), whatever size the whole array declares; a zlib or
LZMA TIFF segment is inflated at most to its declared size, and a region of a Zarr or HDF5 array is decoded within
what the region and its chunks declare (:func:`~benchmarks_lib.adapters.user_source.decoded_within`: a chunk that
inflates past its declared size is one line, not gigabytes). The worker that reads a case's data runs under a memory
limit (``run.worker.memory_limit``) that stops what a library would still over-allocate (a codec trusting its own
header, VTK).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import struct
import tokenize
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks_lib.adapters.user_files import checked_store, hdf5_dataset
from benchmarks_lib.adapters.user_source import SourceArray, check_piece, listing
from benchmarks_lib.adapters.user_tiff import TiffSource
from benchmarks_lib.base.availability import missing_modules, not_installed
from benchmarks_lib.base.specs import SpecError, format_bytes
from benchmarks_lib.base.untrusted import read_head, source_kind

#: what a file's first bytes say it is (HDF5's signature may also sit at 512, 1024, ... bytes: see ``_sniff``)
MAGIC = {b"\x93NUMPY": "npy", b"\x89HDF\r\n\x1a\n": "hdf5", b"II*\x00": "tiff", b"MM\x00*": "tiff",
         b"II+\x00": "tiff", b"MM\x00+": "tiff"}
FORMATS = ("zarr", "hdf5", "tiff", "npy", "vti")
ZARR_MARKERS = ("zarr.json", ".zarray", ".zgroup")
#: the library that reads each format, and how to install it
READERS = {"zarr": ("zarr", "pip install 'iobench-book[zarr]'"), "hdf5": ("h5py", "pip install 'iobench-book[h5py]'"),
           "tiff": ("tifffile", "pip install 'iobench-book[tiff]'"), "npy": ("numpy", "pip install numpy"),
           "vti": ("pyvista", "pip install 'iobench-book[zvtk]'")}
#: a store of more chunks than this, each smaller than ``SMALL_CHUNK_BYTES``, is refused: reading it would mean a
#: chunk read (and a task, a file open, a decode) per few bytes, millions of them (1x1x1 chunks: 33 M for 128 MB)
MAX_SMALL_CHUNKS, SMALL_CHUNK_BYTES = 1 << 20, 64 << 10


def check_chunk_count(path: Path, what: str, shape: tuple[int, ...], chunks: tuple[int, ...], itemsize: int) -> None:
    """Refuse (one line, naming the limit) an array declared in more than ``MAX_SMALL_CHUNKS`` chunks of less than
    ``SMALL_CHUNK_BYTES`` each: the work its read would schedule, from its declarations, before any is done."""
    count = math.prod(-(-s // max(c, 1)) for s, c in zip(shape, chunks, strict=True))
    nbytes = math.prod(chunks) * itemsize
    if count > MAX_SMALL_CHUNKS and nbytes < SMALL_CHUNK_BYTES:
        raise SpecError(f"dataset file {str(path)!r} declares {count:,} {what}s of {'x'.join(map(str, chunks))} "
                        f"({format_bytes(nbytes)} each): reading it would take a read per chunk; at most "
                        f"{MAX_SMALL_CHUNKS:,} chunks under {SMALL_CHUNK_BYTES >> 10} KiB are read (rechunk it, "
                        "e.g. with zarr or h5repack, to chunks of at least 64 KiB)")


#: what a reader library raises on a file it cannot read (a lying header, a truncated file, an impossible dtype;
#: ``struct.error`` from tifffile, ``TokenError`` from a NumPy header); not AttributeError, NameError, ImportError
#: and the like, which are bugs
READ_ERRORS = (OSError, ValueError, LookupError, TypeError, RuntimeError, ArithmeticError, EOFError, MemoryError,
               struct.error, tokenize.TokenError)


def _sniff(path: Path) -> str | None:
    """The format a file's first bytes name, or None (the file opened without blocking: ``user_files``)."""
    head = read_head(path, 2048 + 8)
    if head.lstrip().startswith((b"<?xml", b"<VTKFile")):
        return "vti" if b"ImageData" in head[:576] else "vtk-xml"
    for magic, name in MAGIC.items():
        if head.startswith(magic):
            return name
    for offset in (512, 1024, 2048):  # HDF5's user block: the signature at a power of two from 512
        if head[offset:offset + 8] == b"\x89HDF\r\n\x1a\n":
            return "hdf5"
    return None


def detect_format(path: Path) -> str:
    """One of :data:`FORMATS` for ``path``, or a SpecError that says what it is not (a FIFO, a device or a socket
    is refused before it is opened: ``base.untrusted.source_kind``)."""
    if source_kind(path) == "directory":
        if any((path / m).exists() for m in ZARR_MARKERS):
            return "zarr"
        raise SpecError(f"dataset {str(path)!r} is a directory but not a Zarr store (no zarr.json, .zarray or "
                        ".zgroup in it)")
    kind = _sniff(path)
    if kind in FORMATS:
        return kind
    what = "a VTK XML file that is not an image (.vti)" if kind else "of no format iobench reads"
    raise SpecError(f"dataset file {str(path)!r} is {what}; allowed: a Zarr store, HDF5, TIFF/OME-TIFF, "
                    "NumPy .npy or VTK .vti")


def open_source(path: str | Path, inner: str | None = None) -> SourceArray:
    """The array at ``path`` (and ``inner`` inside it), opened read-only.

    The one place a person's file meets its reader library: what the library raises on a file it cannot read
    (:data:`READ_ERRORS`) becomes one line naming the file; anything else is a bug of ours and stays a traceback.
    """
    path = Path(path)
    kind = detect_format(path)
    module, hint = READERS[kind]
    if missing_modules([module]):
        raise SpecError(f"dataset {str(path)!r} is {kind}: reading it needs " + not_installed(module, hint))
    cls = {"zarr": ZarrSource, "hdf5": Hdf5Source, "tiff": TiffSource, "npy": NpySource, "vti": VtiSource}[kind]
    try:
        return cls(path, inner)
    except SpecError:
        raise
    except READ_ERRORS as exc:
        lines = str(exc).strip().splitlines()
        why = f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__
        raise SpecError(f"dataset {str(path)!r} cannot be read as {kind}: {why}") from None


def _check_npy_header(path: Path) -> None:
    """Refuse (one line) a ``.npy`` whose header declares what the file cannot hold: a negative axis, or more bytes
    than follow the header (a lying header: the memory map would reach past the file)."""
    from numpy.lib import format as npy

    try:
        with open(path, "rb") as f:
            version = npy.read_magic(f)
            read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape, _, dtype = read(f)
            offset = f.tell()
    except (ValueError, OSError, SyntaxError, TypeError) as exc:
        raise SpecError(f"dataset file {str(path)!r} has no readable .npy header: {exc}") from None
    if any(n < 0 for n in shape):
        raise SpecError(f"dataset file {str(path)!r}: its .npy header declares shape {shape}, with a negative axis")
    nbytes, size = math.prod(shape) * dtype.itemsize, os.stat(path).st_size - offset
    if nbytes > size:
        raise SpecError(f"dataset file {str(path)!r}: its .npy header declares shape {shape} of {dtype} "
                        f"({format_bytes(nbytes)}), but the file holds {format_bytes(size)} after its header")


class NpySource(SourceArray):
    format = "npy"

    def __init__(self, path: Path, inner: str | None) -> None:
        super().__init__(path)
        if inner:
            raise SpecError(f"dataset file {str(path)!r} is a NumPy .npy array: it has no inner path {inner!r}")
        _check_npy_header(path)
        try:
            self._array = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:  # object arrays need pickle: not data a writer takes
            raise SpecError(f"dataset file {str(path)!r} cannot be read as an array: {exc}") from None

    def close(self) -> None:
        mm = getattr(self._array, "_mmap", None)
        if mm is not None:
            mm.close()


class ZarrSource(SourceArray):
    """A Zarr v2 or v3 array; a group's ``inner`` array, or an OME-Zarr image's first (full-resolution) level."""

    format = "zarr"

    def __init__(self, path: Path, inner: str | None) -> None:
        import zarr

        super().__init__(path)
        store = checked_store(path)  # every file regular and inside the store, metadata at most 1 MiB
        try:
            node = zarr.open(store=store, mode="r", path=inner or "")
        except SpecError:  # a file of the store that is not read (user_files): it names the file
            raise
        except (FileNotFoundError, KeyError, ValueError) as exc:
            if inner:
                raise SpecError(f"dataset {str(path)!r} holds no array or group {inner!r}") from None
            raise SpecError(f"dataset {str(path)!r} cannot be opened as Zarr: {exc}") from None
        if isinstance(node, zarr.Group):
            if first := _first_level(path, node.attrs):
                try:
                    node = node[first]
                except KeyError:
                    raise SpecError(f"OME-Zarr {str(path)!r}: its multiscales name level {first!r}, which is not in "
                                    "the store") from None
                inner = f"{inner}/{first}" if inner else first
            else:
                arrays = sorted(name for name, _ in node.arrays())
                raise SpecError(f"dataset {str(path)!r}{':' + inner if inner else ''} is a Zarr group, not an array; "
                                f"name one inside it (file:PATH:NAME): it holds {listing(arrays)}")
        if not isinstance(node, zarr.Array) or any(n < 1 for n in node.chunks):
            raise SpecError(f"dataset {str(path)!r}{':' + inner if inner else ''} is not a Zarr array of chunks of at "
                            f"least one element (chunks {getattr(node, 'chunks', None)})")
        self.inner, self._array = inner, node
        self._check_pieces()

    def _check_pieces(self) -> None:
        """A chunk (a shard's inner chunk) and a shard's index (16 bytes per inner chunk) are decoded whole."""
        chunks, shards = tuple(self._array.chunks), getattr(self._array, "shards", None)
        check_piece(self.path, "Zarr chunk", chunks, self.dtype.itemsize)
        self.piece_bytes, self.piece_shape = math.prod(chunks) * self.dtype.itemsize, chunks
        if shards:
            per_shard = tuple(-(-s // max(c, 1)) for s, c in zip(shards, chunks, strict=True))
            check_piece(self.path, "Zarr shard index", per_shard, 16)
        check_chunk_count(self.path, "Zarr chunk", tuple(self._array.shape), chunks, self.dtype.itemsize)


def _first_level(path: Path, attrs: Any) -> str | None:
    """The path of an OME-Zarr image's first (full-resolution) level, or None for a group that is no image; one
    that is not a relative path inside the group is refused."""
    ome = attrs.get("ome")
    levels = attrs.get("multiscales") or (ome.get("multiscales") if isinstance(ome, dict) else None)
    if not levels:
        return None
    try:
        first = levels[0]["datasets"][0]["path"]
    except (LookupError, TypeError):
        first = None
    if not isinstance(first, str) or not first:
        raise SpecError(f"OME-Zarr {str(path)!r}: its multiscales name no level (multiscales[0].datasets[0].path)")
    if first.startswith("/") or any(part in ("", ".", "..") for part in first.split("/")):
        raise SpecError(f"OME-Zarr {str(path)!r}: its first level's path {first!r} leads out of the image; a "
                        "level is a relative path inside it")
    return first


def _check_filters(path: Path, inner: str, node: Any) -> None:
    """Every filter an HDF5 dataset's chunks need is there (hdf5plugin's registered where it is installed): a missing
    one is one line when the file is opened, not an error row when a case first reads it."""
    import h5py

    with contextlib.suppress(ImportError):
        import hdf5plugin  # noqa: F401 - registers LZ4, Zstd, Blosc and the others with HDF5
    plist = node.id.get_create_plist()
    for i in range(plist.get_nfilters()):
        code, _flags, _values, name = plist.get_filter(i)
        if not h5py.h5z.filter_avail(code):
            label = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
            raise SpecError(f"HDF5 dataset {inner!r} in {str(path)!r} needs filter {code} ({label or 'unnamed'}), "
                            "which this HDF5 does not have; install hdf5plugin (pip install hdf5plugin) or the "
                            "filter's plugin")


class Hdf5Source(SourceArray):
    """A dataset inside an HDF5 file (``file.h5:/path``); a file holding one dataset needs no path."""

    format = "hdf5"

    def __init__(self, path: Path, inner: str | None) -> None:
        import h5py

        super().__init__(path)
        self._file = h5py.File(path, "r")
        #: files opened through external links (every file the path leads to is checked: ``user_files``)
        self._linked: list[h5py.File] = []
        try:
            if inner is None:
                found: list[str] = []
                self._file.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
                if len(found) != 1:
                    raise SpecError(f"dataset file {str(path)!r} holds {len(found)} HDF5 datasets; name one "
                                    f"(file:PATH:/NAME): {listing(['/' + n for n in found])}")
                inner = "/" + found[0]
            node = hdf5_dataset(self._file, inner, self._linked)
            if not isinstance(node, h5py.Dataset):
                what = "a group, not a dataset" if node is not None else "not there"
                raise SpecError(f"HDF5 path {inner!r} in {str(path)!r} is {what}")
            if node.chunks:  # a chunk is decoded whole; contiguous data is read by hyperslab
                check_piece(path, "HDF5 chunk", node.chunks, node.dtype.itemsize)
                self.piece_bytes, self.piece_shape = math.prod(node.chunks) * node.dtype.itemsize, tuple(node.chunks)
                check_chunk_count(path, "HDF5 chunk", node.shape, node.chunks, node.dtype.itemsize)
                _check_filters(path, inner, node)
        except BaseException:
            self.close()
            raise
        self.inner, self._array = inner, node

    def close(self) -> None:
        for f in (*self._linked, self._file):
            f.close()


#: how much of a ``.vti`` is searched for its extents and arrays (they precede the data, or sit between inline arrays)
VTI_HEADER_BYTES = 1 << 20
#: bytes per value of VTK's XML type names (anything else counted as 8)
VTK_TYPES = {"Int8": 1, "UInt8": 1, "Int16": 2, "UInt16": 2, "Int32": 4, "UInt32": 4, "Float32": 4, "Int64": 8,
             "UInt64": 8, "Float64": 8}


def _check_vti_extents(path: Path) -> None:
    """Refuse (one line), before VTK allocates anything, a ``.vti`` whose extents declare no points or more bytes
    (points times the bytes per point of the arrays its header names; at least 1) than :func:`piece_limit`: VTK
    reads an image whole."""
    with open(path, "rb") as f:
        head = f.read(VTI_HEADER_BYTES).split(b"<AppendedData", 1)[0].decode("latin-1")
    per_point = 0
    for attributes in re.findall(r"<DataArray\b([^>]*)>", head):
        kind = re.search(r'\btype\s*=\s*"([^"]*)"', attributes)
        parts = re.search(r'\bNumberOfComponents\s*=\s*"(\d{1,6})"', attributes)
        per_point += VTK_TYPES.get(kind.group(1) if kind else "", 8) * (int(parts.group(1)) if parts else 1)
    for name, text in re.findall(r'\b(WholeExtent|Extent)\s*=\s*"([^"]*)"', head):
        bounds = [int(v) for v in re.findall(r"-?\d{1,30}", text)]
        sides = [hi - lo + 1 for lo, hi in zip(bounds[0::2], bounds[1::2], strict=False)]
        if len(sides) != 3 or min(sides) < 1:
            raise SpecError(f"VTK image {str(path)!r}: its {name} {text.strip()[:60]!r} is not 3 ranges lo..hi "
                            "with hi >= lo")
        check_piece(path, f"VTK image ({name})", tuple(sides[::-1]), max(per_point, 1))


class VtiSource(SourceArray):
    """A VTK image (``.vti``): one point- or cell-data array (``inner``: its name; default the active scalars, or
    the only array) as (z, y, x[, components]). VTK reads the file whole."""

    format = "vti"

    def __init__(self, path: Path, inner: str | None) -> None:
        import pyvista as pv

        from benchmarks_lib.data.meshes import vtk_message_line, vtk_messages

        super().__init__(path)
        _check_vti_extents(path)
        with vtk_messages() as said:  # what VTK says about a person's file is quoted escaped, never printed
            image = pv.read(path)
        arrays = {**{k: ("point", v) for k, v in image.point_data.items()},
                  **{k: ("cell", v) for k, v in image.cell_data.items()}}
        name = inner or image.active_scalars_name or (next(iter(arrays)) if len(arrays) == 1 else None)
        if name not in arrays:
            raise SpecError(f"VTK image {str(path)!r} has no array {inner or ''!r}; name one (file:PATH:NAME): "
                            f"{listing(sorted(arrays))}" + (f" (VTK: {vtk_message_line(said)})" if said else ""))
        where, values = arrays[name]
        nx, ny, nz = (max(1, d - 1) for d in image.dimensions) if where == "cell" else image.dimensions
        values = np.asarray(values)
        self.inner = name
        self._array = values.reshape((nz, ny, nx, *values.shape[1:]))


__all__ = ["FORMATS", "SourceArray", "detect_format", "open_source"]
