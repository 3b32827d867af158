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
read) is a one-line :class:`~benchmarks_lib.base.specs.SpecError`.

Memory is planned from what the file declares, before anything is allocated: a piece that has to be decoded whole
(a Zarr or HDF5 chunk, a Zarr shard's index, a TIFF tile or strip, a ``.vti`` image) may declare at most
:func:`piece_limit` bytes, and a ``.npy`` header may not declare more data than its file holds; a file that does is
refused in one line when it is opened. Reading a region then decodes the region and, at a time, one piece (Zarr: the
few chunks it reads at once), whatever size the whole array declares; a zlib or LZMA TIFF segment is inflated at most
to its declared size, and a region of a Zarr or HDF5 array is decoded within what the region and its chunks
declare (:func:`decoded_within`: a chunk that inflates past its declared size is one line, not gigabytes). The
worker that reads a case's data runs under a memory limit (``run.worker.memory_limit``) that stops what a library
would still over-allocate (a codec trusting its own header, VTK).
"""

from __future__ import annotations

import contextlib
import lzma
import math
import os
import re
import resource
import struct
import tokenize
import zlib
from abc import ABC
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks_lib.adapters.user_files import checked_store, hdf5_dataset, ome_other_files, open_alone
from benchmarks_lib.base.availability import missing_modules, not_installed
from benchmarks_lib.base.environment import machine_memory
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
#: how many names a message about a missing inner path lists at most
LISTED = 8
#: the most bytes one piece of a file that is decoded whole (a chunk, tile, strip, shard index, .vti image) may
#: declare: an eighth of this machine's memory (``base.environment.machine_memory``), at most PIECE_LIMIT
PIECE_LIMIT, PIECE_SHARE = 1 << 30, 8


def piece_limit() -> int:
    """The most bytes one piece of a person's file may declare here (see :data:`PIECE_LIMIT`)."""
    memory = machine_memory()
    return min(PIECE_LIMIT, memory // PIECE_SHARE) if memory else PIECE_LIMIT


def check_piece(path: Path, what: str, shape: tuple[int, ...], itemsize: int) -> None:
    """Refuse (one line) a file whose ``what`` (a piece decoded whole) declares more than :func:`piece_limit`."""
    nbytes, limit = math.prod(shape) * itemsize, piece_limit()
    if nbytes > limit:
        raise SpecError(f"dataset file {str(path)!r} declares a {what} of {'x'.join(map(str, shape))} "
                        f"({format_bytes(nbytes)}), more than the {format_bytes(limit)} a piece read whole may take "
                        f"here (1/{PIECE_SHARE} of this machine's memory, at most {PIECE_LIMIT >> 30} GiB)")


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


#: what reading a region may hold beyond its output and its pieces (a library's threads, buffers and indexes), and
#: how many pieces a library decodes at once (zarr-python's ``async.concurrency`` is 10)
READ_SLACK, PIECES_AT_ONCE = 128 << 20, 16


def _data_bytes() -> int | None:
    """What this process holds now as ``RLIMIT_DATA`` counts it (``VmData``), None where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@contextlib.contextmanager
def decoded_within(path: Path, out: int, piece: int):
    """Read a region of ``out`` bytes, in pieces of ``piece`` bytes, holding at most what they declare: while it is
    read, this process's ``RLIMIT_DATA`` is what it holds now plus twice the output, ``PIECES_AT_ONCE`` pieces twice
    over and ``READ_SLACK`` (never above the limit it had). A chunk whose codec inflates it past what its array
    declares (a decompression bomb: 4 KiB declared, gigabytes inflated) then fails here, in one line, before it
    takes the machine's memory; a library's own limit error (HDF5's "filter returned failure") is taken as the
    same. The limit is put back however the read ends."""
    held = _data_bytes()
    if held is None:  # no /proc: the case's memory limit (``run.worker``) still holds
        yield
        return
    bound = 2 * out + 2 * PIECES_AT_ONCE * piece + READ_SLACK
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    ours = soft == resource.RLIM_INFINITY or held + bound < soft  # else the limit it had binds: its own words
    resource.setrlimit(resource.RLIMIT_DATA, (held + bound if ours else soft, hard))
    bomb = (f"dataset file {str(path)!r}: decoding a region of {format_bytes(out)} in chunks of "
            f"{format_bytes(piece)} took more than {format_bytes(bound)}: a chunk inflates beyond its declared size "
            "(a decompression bomb) or does not decode")
    try:
        yield
    except MemoryError:
        if not ours:
            raise
        raise SpecError(bomb) from None
    except OSError as exc:
        if not ours or "filter" not in str(exc):
            raise
        raise SpecError(f"{bomb} ({exc})") from None
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


class SourceArray(ABC):
    """An array inside a file, opened read-only: shape and dtype from metadata; ``read`` a region."""

    format: str
    #: the array inside the file that is read (an HDF5 path, a Zarr array's path, a TIFF series, a VTK array)
    inner: str | None = None

    def __init__(self, path: Path) -> None:
        self.path = path

    #: what the file's array is opened as (a memory map, a ``zarr.Array``, an ``h5py.Dataset``, ...)
    _array: Any

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._array.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._array.dtype)

    #: the bytes one piece decoded whole declares (a Zarr or HDF5 chunk; 0: none, the data read in place)
    piece_bytes = 0

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        """The values in ``index`` (slices with bounds, step 1) as a new C-ordered array of the source's dtype,
        decoded within what the region and its pieces declare (:func:`decoded_within`)."""
        out = math.prod(s.stop - s.start for s in index) * self.dtype.itemsize
        with decoded_within(self.path, out, self.piece_bytes):
            return _plain(self._array[index])

    def close(self) -> None:  # noqa: B027 (nothing to release by default)
        """Release the file; safe to call twice."""

    def __enter__(self) -> SourceArray:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED]) + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
    return shown or "nothing"


def _plain(values: Any) -> np.ndarray:
    """A C-ordered copy (never a view of a memory map or a library's buffer)."""
    return np.array(values, order="C", copy=True)


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
                                f"name one inside it (file:PATH:NAME): it holds {_listing(arrays)}")
        if not isinstance(node, zarr.Array) or any(n < 1 for n in node.chunks):
            raise SpecError(f"dataset {str(path)!r}{':' + inner if inner else ''} is not a Zarr array of chunks of at "
                            f"least one element (chunks {getattr(node, 'chunks', None)})")
        self.inner, self._array = inner, node
        self._check_pieces()

    def _check_pieces(self) -> None:
        """A chunk (a shard's inner chunk) and a shard's index (16 bytes per inner chunk) are decoded whole."""
        chunks, shards = tuple(self._array.chunks), getattr(self._array, "shards", None)
        check_piece(self.path, "Zarr chunk", chunks, self.dtype.itemsize)
        self.piece_bytes = math.prod(chunks) * self.dtype.itemsize
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
                                    f"(file:PATH:/NAME): {_listing(['/' + n for n in found])}")
                inner = "/" + found[0]
            node = hdf5_dataset(self._file, inner, self._linked)
            if not isinstance(node, h5py.Dataset):
                what = "a group, not a dataset" if node is not None else "not there"
                raise SpecError(f"HDF5 path {inner!r} in {str(path)!r} is {what}")
            if node.chunks:  # a chunk is decoded whole; contiguous data is read by hyperslab
                check_piece(path, "HDF5 chunk", node.chunks, node.dtype.itemsize)
                self.piece_bytes = math.prod(node.chunks) * node.dtype.itemsize
                check_chunk_count(path, "HDF5 chunk", node.shape, node.chunks, node.dtype.itemsize)
                _check_filters(path, inner, node)
        except BaseException:
            self.close()
            raise
        self.inner, self._array = inner, node

    def close(self) -> None:
        for f in (*self._linked, self._file):
            f.close()


#: TIFF compressions whose segments are inflated here first, at most to their segment's declared size (zlib,
#: LZMA): tifffile's own inflating has no bound, so a lying segment of a few MB could inflate to gigabytes
_INFLATERS = {8: zlib.decompressobj, 32946: zlib.decompressobj, 34925: lzma.LZMADecompressor}
#: JPEG compressions (their segments are decoded with the page's tables)
_JPEG = (6, 7, 33007, 34892)


#: the most pages (IFDs) a TIFF may hold: tifffile reads every page's header to make its series (200,000 pages of
#: a few bytes each took more than two minutes), and a person's stack of more is better read as Zarr or HDF5
MAX_TIFF_PAGES = 100_000


def count_pages(fh: Any, path: Path) -> int:
    """The pages of the TIFF open in ``fh``, counted along its chain of IFDs before tifffile reads them (a few
    bytes each); more than :data:`MAX_TIFF_PAGES`, or a chain that loops or leaves the file, is refused in one
    line."""
    size = fh.seek(0, os.SEEK_END)
    fh.seek(0)
    head = fh.read(16)
    order = "<" if head[:2] == b"II" else ">"
    big = struct.unpack(order + "H", head[2:4])[0] == 43
    offset = struct.unpack(order + ("Q" if big else "I"), head[8:16] if big else head[4:8])[0]
    count_format, entry, next_format = ("Q", 20, "Q") if big else ("H", 12, "I")
    smallest = struct.calcsize(count_format) + struct.calcsize(next_format)  # an IFD of no entry
    seen: set[int] = set()
    while offset:
        if offset in seen or offset + smallest > size:
            how = "loops" if offset in seen else "leaves the file"
            raise SpecError(f"TIFF {str(path)!r}: its chain of pages (IFDs) {how} at byte {offset}")
        seen.add(offset)
        if len(seen) > MAX_TIFF_PAGES:
            raise SpecError(f"TIFF {str(path)!r} holds more than {MAX_TIFF_PAGES:,} pages; iobench reads a TIFF of at "
                            "most that many (convert a longer stack to Zarr or HDF5)")
        fh.seek(offset)
        raw = fh.read(struct.calcsize(count_format))
        if len(raw) < struct.calcsize(count_format):
            break
        entries = struct.unpack(order + count_format, raw)[0]
        fh.seek(offset + len(raw) + entries * entry)
        raw = fh.read(struct.calcsize(next_format))
        offset = struct.unpack(order + next_format, raw)[0] if len(raw) == struct.calcsize(next_format) else 0
    fh.seek(0)
    return len(seen)


class TiffSource(SourceArray):
    """A TIFF or OME-TIFF series (``inner``: its index, default 0) at full resolution, read by region: an
    uncompressed page through a memory map, any other through the tiles or strips under the region, one at a time.

    Coordinates within a page are tifffile's normalized ones, (separate samples, depth, length, width, contiguous
    samples): the page's shape is that with its axes of length 1 dropped."""

    format = "tiff"

    def __init__(self, path: Path, inner: str | None) -> None:
        import tifffile

        super().__init__(path)
        self._fh = open_alone(path)  # tifffile opens no other file a TIFF names
        try:
            count_pages(self._fh, path)
            self._tif = tifffile.TiffFile(self._fh, name=path.name)
        except BaseException:
            self._fh.close()
            raise
        try:
            if others := ome_other_files(self._tif.ome_metadata, path.name):
                raise SpecError(f"OME-TIFF {str(path)!r} spreads its image over other files too "
                                f"({_listing(others)}); iobench reads a TIFF that holds its whole image")
            series = self._tif.series
            if inner is not None and not (inner.isdigit() and int(inner) < len(series)):
                raise SpecError(f"TIFF {str(path)!r} has no series {inner!r}; it has {len(series)} "
                                f"(0..{len(series) - 1})")
            self._series = series[int(inner or 0)].levels[0]
            self._page_shape = tuple(self._series.keyframe.shape)
            self._lead = self._series.shape[:len(self._series.shape) - len(self._page_shape)]
            if (tuple(self._series.shape[len(self._lead):]) != self._page_shape
                    or len(self._series.pages) != math.prod(self._lead)):
                raise SpecError(f"TIFF {str(path)!r}: series of shape {self._series.shape} is not a stack of "
                                f"{self._page_shape} pages; it cannot be read page by page")
            self._plan_pieces()
        except BaseException:
            self.close()
            raise
        self.inner, self._array = inner, self._series  # shape and dtype from the series; read by region

    def _plan_pieces(self) -> None:
        """The page's normalized shape, its segments' shape and grid, and whether it is memory-mapped; a segment
        larger than :func:`piece_limit`, or a mapped page reaching past the file, refused."""
        key = self._series.keyframe
        self._shaped = tuple(key.shaped)
        self._axes = _page_axes(self._page_shape, self._shaped)
        if self._axes is None:
            raise SpecError(f"TIFF {str(self.path)!r}: pages of shape {self._page_shape} do not match their layout "
                            f"{self._shaped}; they cannot be read by region")
        self._mapped = bool(key.is_final and key.dtype is not None and key.dtype.itemsize * 8 == key.bitspersample)
        if self._mapped:
            self._check_mapped(self._series.pages[0])
            return
        self._check_codec(key)
        _, _, length, width, samples = self._shaped
        if key.is_tiled:
            segment = (1, key.tiledepth, key.tilelength, key.tilewidth, samples)
        else:
            segment = (1, 1, max(1, min(key.rowsperstrip, length)), width, samples)
        self._segment = segment
        self._grid = tuple(-(-n // s) for n, s in zip(self._shaped[:4], segment[:4], strict=True))
        check_piece(self.path, "TIFF tile" if key.is_tiled else "TIFF strip",
                    tuple(n for n in segment[1:] if n > 1) or (1,), key.dtype.itemsize)
        if math.prod(self._grid) != len(key.dataoffsets):
            raise SpecError(f"TIFF {str(self.path)!r}: pages of {self._page_shape} in segments of {segment[1:4]} need "
                            f"{math.prod(self._grid)} segments; the file lists {len(key.dataoffsets)}")

    def _check_codec(self, key: Any) -> None:
        """The codec the pages are compressed with is there (tifffile names it and imports it only when a segment is
        decoded: a ZSTD or JPEG XL page needs imagecodecs): one line when the file is opened, not an error row."""
        import tifffile

        code = int(key.compression)
        name = getattr(key.compression, "name", str(code))
        try:
            tifffile.TIFF.DECOMPRESSORS[code](b"")
        except ImportError as exc:
            raise SpecError(f"TIFF {str(self.path)!r} is compressed with {name} ({code}), whose codec is not "
                            f"installed here ({exc}); install imagecodecs (pip install imagecodecs)") from None
        except KeyError:
            raise SpecError(f"TIFF {str(self.path)!r} is compressed with {name} ({code}), which tifffile cannot "
                            "decode") from None
        except Exception:  # the codec is there: an empty segment is no stream (its own error)
            pass

    def _check_mapped(self, page: Any) -> None:
        """An uncompressed page whose data lies in one run of bytes inside the file."""
        offsets, counts = page.dataoffsets, page.databytecounts
        nbytes = math.prod(self._shaped) * self._series.keyframe.dtype.itemsize
        if (sum(counts) != nbytes or any(o + c != n for o, c, n in zip(offsets, counts, offsets[1:], strict=False))
                or offsets[0] + nbytes > self._tif.filehandle.size):
            raise SpecError(f"TIFF {str(self.path)!r}: an uncompressed page of {self._page_shape} "
                            f"({format_bytes(nbytes)}) is not stored whole inside the file")

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        lead, rest = index[:len(self._lead)], index[len(self._lead):]
        out = np.empty(tuple(s.stop - s.start for s in index), dtype=self.dtype)
        region = [slice(0, 1)] * 5
        for axis, sl in zip(self._axes, rest, strict=True):
            region[axis] = sl
        for pos in np.ndindex(*(s.stop - s.start for s in lead)):
            at = tuple(p + s.start for p, s in zip(pos, lead, strict=True))
            page = self._series.pages[int(np.ravel_multi_index(at, self._lead)) if self._lead else 0]
            values = self._mapped_region(page, region) if self._mapped else self._segments_region(page, region)
            out[pos] = values.reshape(out.shape[len(lead):])
        return out

    def _mapped_region(self, page: Any, region: list[slice]) -> np.ndarray:
        self._check_mapped(page)
        key = self._series.keyframe
        # the file we opened ourselves (tifffile holds it without a descriptor: its raw file has one)
        mapped = np.memmap(self._fh.raw, dtype=key.dtype.newbyteorder(self._tif.byteorder), mode="r",
                           offset=page.dataoffsets[0], shape=self._shaped)
        try:
            return np.array(mapped[tuple(region)], dtype=self.dtype)
        finally:
            mapped._mmap.close()

    def _segments_region(self, page: Any, region: list[slice]) -> np.ndarray:
        """The region of a page from the segments (tiles, strips) under it, decoded one at a time."""
        key = self._series.keyframe
        out = np.zeros(tuple(s.stop - s.start for s in region), dtype=self.dtype)  # an empty segment reads as 0
        decode_args: dict[str, Any] = {"_fullsize": key.is_tiled}
        if key.compression in _JPEG:
            decode_args.update(jpegtables=getattr(page, "jpegtables", None), jpegheader=key.jpegheader)
        ranges = [range(s.start // n, -(-s.stop // n)) for s, n in zip(region[:4], self._segment[:4], strict=True)]
        for cell in np.ndindex(*(len(r) for r in ranges)):
            number = int(np.ravel_multi_index(tuple(r[i] for r, i in zip(ranges, cell, strict=True)), self._grid))
            values, at, shape = key.decode(self._segment_bytes(page, number), number, **decode_args)
            if values is None:
                continue
            values = values.reshape((1, *shape))
            piece, target = [], []
            for start, length, want in zip(at, values.shape, region, strict=True):
                lo, hi = max(start, want.start), min(start + length, want.stop)
                piece.append(slice(lo - start, hi - start))
                target.append(slice(lo - want.start, hi - want.start))
            out[tuple(target)] = values[tuple(piece)]
        return out

    def _segment_bytes(self, page: Any, number: int) -> bytes | None:
        """A segment's encoded bytes (None: not stored); refused when they declare, or inflate to, more than the
        segment holds."""
        offset, count = page.dataoffsets[number], page.databytecounts[number]
        if not offset or not count:
            return None
        key, limit = self._series.keyframe, piece_limit()
        if count > limit:
            raise SpecError(f"TIFF {str(self.path)!r}: a segment of {format_bytes(count)} is more than the "
                            f"{format_bytes(limit)} a piece read whole may take here")
        fh = self._tif.filehandle
        with fh.lock:
            fh.seek(offset)
            data = fh.read(count)
        inflater = _INFLATERS.get(int(key.compression))
        if inflater is not None:
            size = math.prod(self._segment) * key.dtype.itemsize
            if len(inflater().decompress(data, size + 1)) > size:
                raise SpecError(f"TIFF {str(self.path)!r}: a segment inflates to more than {format_bytes(size)}, "
                                "the size its page's layout declares")
        return data

    def close(self) -> None:
        self._tif.close()
        self._fh.close()


def _page_axes(shape: tuple[int, ...], shaped: tuple[int, ...]) -> tuple[int, ...] | None:
    """Which of tifffile's 5 normalized axes each axis of a page's ``shape`` is (its axes of length 1 dropped);
    None where ``shape`` is not ``shaped`` so."""
    axes, at = [], 0
    for axis, n in enumerate(shaped):
        if at < len(shape) and shape[at] == n:
            axes.append(axis)
            at += 1
        elif n != 1:
            return None
    return tuple(axes) if at == len(shape) else None


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
                            f"{_listing(sorted(arrays))}" + (f" (VTK: {vtk_message_line(said)})" if said else ""))
        where, values = arrays[name]
        nx, ny, nz = (max(1, d - 1) for d in image.dimensions) if where == "cell" else image.dimensions
        values = np.asarray(values)
        self.inner = name
        self._array = values.reshape((nz, ny, nx, *values.shape[1:]))


__all__ = ["FORMATS", "SourceArray", "detect_format", "open_source"]
