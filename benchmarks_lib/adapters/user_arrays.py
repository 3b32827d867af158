"""A person's own array, read from a file without writing to it: Zarr (v2 or v3; an OME-Zarr image gives its
full-resolution level), HDF5 (a dataset inside the file), TIFF/OME-TIFF (a series of pages), NumPy ``.npy``
and VTK ``.vti`` images (an array of point or cell data).

:func:`open_source` names the format from the file's first bytes (a directory must be a Zarr store), opens it
read-only and returns a :class:`SourceArray`: its shape and dtype (from metadata alone), and ``read(index)``,
which reads only what the region needs (Zarr, HDF5 and NumPy read the chunks or bytes under it, TIFF one page
at a time), except a ``.vti``, which VTK reads whole. Nothing here writes, moves or deletes the source: Zarr
through a read-only store, HDF5 with mode ``r``, NumPy through a read-only memory map. Every file a library opens
is checked first (:mod:`benchmarks_lib.user_files`: regular files only, none outside the store or the file's
directory). Every bad input (a missing file, an unknown format, an inner path that does not exist, a file its
library cannot read) is a one-line :class:`~benchmarks_lib.specs.SpecError`.
"""

from __future__ import annotations

import math
import struct
import tokenize
from abc import ABC
from pathlib import Path
from typing import Any

import numpy as np

from ..availability import missing_modules, not_installed
from ..specs import SpecError
from ..user_files import checked_store, hdf5_dataset, ome_other_files, open_alone, read_head, source_kind

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
#: what a reader library raises on a file it cannot read (a lying header, a truncated file, an impossible dtype;
#: ``struct.error`` from tifffile, ``TokenError`` from a NumPy header); not AttributeError, NameError, ImportError
#: and the like, which are bugs
READ_ERRORS = (OSError, ValueError, LookupError, TypeError, RuntimeError, ArithmeticError, EOFError, MemoryError,
               struct.error, tokenize.TokenError)


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

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        """The values in ``index`` (slices with bounds, step 1) as a new C-ordered array of the source's dtype."""
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
    is refused before it is opened: ``user_files.source_kind``)."""
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


class NpySource(SourceArray):
    format = "npy"

    def __init__(self, path: Path, inner: str | None) -> None:
        super().__init__(path)
        if inner:
            raise SpecError(f"dataset file {str(path)!r} is a NumPy .npy array: it has no inner path {inner!r}")
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
        except BaseException:
            self.close()
            raise
        self.inner, self._array = inner, node

    def close(self) -> None:
        for f in (*self._linked, self._file):
            f.close()


class TiffSource(SourceArray):
    """A TIFF or OME-TIFF series (``inner``: its index, default 0) at full resolution, read page by page."""

    format = "tiff"

    def __init__(self, path: Path, inner: str | None) -> None:
        import tifffile

        super().__init__(path)
        self._fh = open_alone(path)  # tifffile opens no other file a TIFF names
        try:
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
        except BaseException:
            self.close()
            raise
        self.inner, self._array = inner, self._series  # shape and dtype from the series; read page by page

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        lead, rest = index[:len(self._lead)], index[len(self._lead):]
        out = np.empty(tuple(s.stop - s.start for s in index), dtype=self.dtype)
        for pos in np.ndindex(*(s.stop - s.start for s in lead)):
            at = tuple(p + s.start for p, s in zip(pos, lead, strict=True))
            page = self._series.pages[int(np.ravel_multi_index(at, self._lead)) if self._lead else 0]
            out[pos] = page.asarray()[rest]
        return out

    def close(self) -> None:
        self._tif.close()
        self._fh.close()


class VtiSource(SourceArray):
    """A VTK image (``.vti``): one point- or cell-data array (``inner``: its name; default the active scalars, or
    the only array) as (z, y, x[, components]). VTK reads the file whole."""

    format = "vti"

    def __init__(self, path: Path, inner: str | None) -> None:
        import pyvista as pv

        super().__init__(path)
        image = pv.read(path)
        arrays = {**{k: ("point", v) for k, v in image.point_data.items()},
                  **{k: ("cell", v) for k, v in image.cell_data.items()}}
        name = inner or image.active_scalars_name or (next(iter(arrays)) if len(arrays) == 1 else None)
        if name not in arrays:
            raise SpecError(f"VTK image {str(path)!r} has no array {inner or ''!r}; name one (file:PATH:NAME): "
                            f"{_listing(sorted(arrays))}")
        where, values = arrays[name]
        nx, ny, nz = (max(1, d - 1) for d in image.dimensions) if where == "cell" else image.dimensions
        values = np.asarray(values)
        self.inner = name
        self._array = values.reshape((nz, ny, nx, *values.shape[1:]))


__all__ = ["FORMATS", "SourceArray", "detect_format", "open_source"]
