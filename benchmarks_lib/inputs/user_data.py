"""Bring your own data: a ``dataset`` given as ``file:PATH[:INNER][@ORIGIN]`` measures a person's own array
where a suite would generate a synthetic one.

- ``PATH``: a Zarr store, an HDF5, TIFF/OME-TIFF, NumPy ``.npy`` or VTK ``.vti`` file (:mod:`.adapters.user_arrays`);
  ``INNER``: the array inside it (an HDF5 path ``/group/data``, a Zarr array in a group, a TIFF series, a VTK
  array's name); an OME-Zarr image gives its full-resolution level by itself.
- The suite's shape (its ``dims``) is the crop that is measured: where the source is larger, the crop is centred
  in it; where it is smaller, the source's whole length is measured (the suite's dims shrink to it, chunks with
  them). ``@ORIGIN`` (``@0:512:512``, one number per axis) states the crop's corner instead: a crop that then
  reaches past the source is refused. Leading axes of length 1 (an OME-Zarr image's t and c) are dropped to the
  dims' rank. A suite that grows the first axis beyond the source (the writers' multipliers, long appends)
  repeats the crop's rows, as it repeats a synthetic pool (``data_tiled``).
- :class:`FileDataset` is a :class:`~benchmarks_lib.data.datasets.Dataset` for the suites: blocks along the first
  axis, any region re-read from the source for verification, nothing read while a clock runs (the suites read
  their data before it). Its ``columns`` go into every measured row: the source's name (its path only with
  ``file+path:``: a published run names no directory of the person's), format, shape and dtype, the crop's
  origin and shape, and ``source_digest``, the checksum of the crop's values (:func:`datasets.checksum_blocks`:
  dtype, shape, bytes), computed block by block before any clock, so that two runs can tell whether they
  measured the same data.
- ``example:NAME`` (:mod:`.example_data`) is a real volume that ships in an installed package, read as a file is;
  its rows name it by that label alone.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks_lib.adapters.user_arrays import open_source
from benchmarks_lib.adapters.user_files import check_store_tree, inspect
from benchmarks_lib.base.specs import DTYPES, DimsSpec, SpecError, parse_items, shape_text
from benchmarks_lib.data.datasets import DATASETS, Dataset, RegionBlocks, checksum_blocks, default_step
from benchmarks_lib.data.examples import ALLOWED_EXAMPLES, example_of, example_path, is_example
from benchmarks_lib.data.meshes import MESH_SUFFIXES, load_mesh, mesh_nbytes
from benchmarks_lib.measure.ledger import phase

#: ``file:`` records the file's name; ``file+path:`` its full path
SCHEMES = ("file:", "file+path:")
ALLOWED = (f"{', '.join(DATASETS)}, {ALLOWED_EXAMPLES} or file:PATH[:INNER][@ORIGIN] (a Zarr, HDF5, TIFF, .npy or "
           ".vti file)")


def is_file_dataset(value: object) -> bool:
    return isinstance(value, str) and value.startswith(SCHEMES)


def _split(text: str) -> tuple[bool, Path, str | None, tuple[int, ...] | None]:
    """(record the path, path, inner, origin) of ``file:PATH[:INNER][@ORIGIN]``; the path is the longest prefix
    before a ``:`` that exists (or all of it)."""
    record = text.startswith("file+path:")
    body = text.split(":", 1)[1]
    origin = None
    if "@" in body:
        body, _, corner = body.rpartition("@")
        try:
            origin = tuple(int(v) for v in corner.split(":"))
        except ValueError:
            raise SpecError(f"dataset {text!r}: crop origin {corner!r} is not integers, e.g. @0:512:512") from None
        if any(v < 0 for v in origin):
            raise SpecError(f"dataset {text!r}: crop origin {corner!r} must not be negative")
    if not body:
        raise SpecError(f"dataset {text!r} names no file; give file:PATH[:INNER]")
    path, inner = body, None
    if not os.path.lexists(body):
        for i, c in enumerate(body):
            if c == ":" and os.path.lexists(body[:i]):
                path, inner = body[:i], body[i + 1:] or None
                break
    return record, Path(os.path.expanduser(path)).absolute(), inner, origin  # an unknown ~user stays as written


@dataclass(frozen=True)
class FileSpec:
    """A file dataset as given, with what its metadata says (no values read). JSON-able: it travels in a case's
    parameters (``to_param``), never into a row or run.json (``label`` does)."""

    path: str
    inner: str | None
    origin: tuple[int, ...] | None
    record_path: bool
    format: str
    inner_read: str | None
    source_shape: tuple[int, ...]
    source_dtype: str
    #: ``example:NAME``'s name (a package's own file): rows say the label only
    example: str | None = None

    @property
    def source(self) -> str:
        """What a row says the data is: the file's name (``file+path:``: its full path) and inner array."""
        if self.example:
            return self.label
        where = self.path if self.record_path else Path(self.path).name
        return where + (f":{self.inner_read}" if self.inner_read else "")

    @property
    def label(self) -> str:
        """The ``dataset`` column: ``file:NAME[:INNER][@ORIGIN]`` (``example:NAME``)."""
        if self.example:
            return f"example:{self.example}"
        where = self.path if self.record_path else Path(self.path).name
        corner = "@" + ":".join(map(str, self.origin)) if self.origin is not None else ""
        return f"file:{where}" + (f":{self.inner}" if self.inner else "") + corner

    @property
    def dtype(self) -> str:
        return np.dtype(self.source_dtype).newbyteorder("=").name

    def to_param(self) -> dict:
        return asdict(self)

    @classmethod
    def from_param(cls, value: dict) -> FileSpec:
        fields = {**value, "source_shape": tuple(value["source_shape"]),
                  "origin": None if value["origin"] is None else tuple(value["origin"])}
        return cls(**fields)

    # -- fitting the suite's shape ------------------------------------------------------------------------
    def shape_for(self, ndim: int, what: str) -> tuple[int, ...]:
        """The source's shape at rank ``ndim`` (leading axes of length 1 dropped), or why it has another rank."""
        shape = self.source_shape
        while len(shape) > ndim and shape[0] == 1:
            shape = shape[1:]
        if len(shape) != ndim:
            raise SpecError(f"dataset {self.label} is {len(self.source_shape)}-D {shape_text(self.source_shape)}; "
                            f"{what} has {ndim} dimensions: give {what} with {len(shape)}, one per axis of the data")
        return shape

    def fit(self, dims: DimsSpec, what: str = "dims") -> DimsSpec:
        """``dims`` shrunk to the source where it is smaller (chunks and shards with it); with a stated origin,
        a crop that reaches past the source is refused."""
        source = self.shape_for(len(dims.dims), what)
        fitted = dims
        for axis, (size, have) in enumerate(zip(dims.shape, source, strict=True)):
            if size > have:
                fitted = fitted.with_size(axis, have)
        origin, _ = self.crop(fitted.shape)
        if any(o + n > have for o, n, have in zip(origin, fitted.shape, source, strict=True)):
            raise SpecError(f"dataset {self.label}: the crop {shape_text(fitted.shape)} at {shape_text(origin, ',')} "
                            f"is larger than the source {shape_text(source)}; give smaller {what} or another origin")
        return fitted

    def crop(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(origin, shape) in the source of the crop that an array of ``shape`` measures: centred, or at the stated
        origin. The first axis may be longer than the crop (its rows repeat); every other axis must fit."""
        source = self.shape_for(len(shape), "the array")
        if self.origin is not None and len(self.origin) != len(shape):
            raise SpecError(f"dataset {self.label}: crop origin has {len(self.origin)} numbers; the array has "
                            f"{len(shape)} axes")
        rows = min(shape[0], source[0] - (self.origin[0] if self.origin else 0))
        size = (rows, *shape[1:])
        origin = self.origin or tuple((have - n) // 2 for n, have in zip(size, source, strict=True))
        if rows < 1 or any(o + n > have for o, n, have in zip(origin, size, source, strict=True)):
            raise SpecError(f"dataset {self.label}: the crop {shape_text(shape)} at {shape_text(origin, ',')} is "
                            f"larger than the source {shape_text(source)}; give smaller dims or another origin")
        return origin, size


#: what an example's file said (:func:`parse_file_dataset`), by the dataset, the file and its identity
_EXAMPLES_READ: dict[tuple, dict] = {}


def parse_file_dataset(text: str) -> FileSpec:
    """A ``file:`` (or ``example:``) dataset, its file opened (read-only) for its metadata: it exists, is a format
    read here, holds the inner array, has a dtype of :data:`specs.DTYPES` and at least 2 dimensions. The file is
    read in a fresh process (``user_files.inspect``) that a stuck or crashing library cannot take this one with."""
    example = None
    if is_example(text):
        example, declared = example_of(text)
        record, path, inner, origin = False, example_path(text), declared.inner, None
    else:
        record, path, inner, origin = _split(text)
    key = None
    if example is not None:  # a package's own file: read once per process, while it is the same file
        info = os.stat(path)
        key = (text, str(path), inner, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    read = _EXAMPLES_READ.get(key) if key else None
    if read is None:
        read = inspect(f"{__name__}:_read_metadata", text, path=str(path), inner=inner)
        if key:
            _EXAMPLES_READ[key] = read
    return FileSpec(str(path), inner, origin, record, read["format"], read["inner"], tuple(read["shape"]),
                    read["dtype"], example)


def _read_metadata(text: str, path: str, inner: str | None) -> dict:
    """(In a fresh process) what :class:`FileSpec` takes from the file's metadata, checked (a store's every file),
    and its first chunk decoded within what it declares (``SourceArray.check_first_piece``)."""
    with open_source(path, inner) as source:
        dtype, shape, fmt, inner_read = source.dtype, source.shape, source.format, source.inner
        if fmt == "zarr":
            check_store_tree(Path(path))
        native = dtype.newbyteorder("=") if dtype.byteorder not in ("=", "|") else dtype
        if native.name not in DTYPES:
            raise SpecError(f"dataset {text!r} has dtype {dtype}; the writers take {', '.join(DTYPES)}")
        if len(shape) < 2 or 0 in shape:
            raise SpecError(f"dataset {text!r} has shape {shape}; the suites measure arrays of >= 2 non-empty "
                            "dimensions")
        source.check_first_piece()
    return {"format": fmt, "inner": inner_read, "shape": [int(n) for n in shape], "dtype": dtype.str}


@dataclass(frozen=True)
class MeshSpec:
    """A person's mesh file (the compression suite's ``datasets``: a suffix of ``meshes.MESH_SUFFIXES``), read
    once to check it; JSON-able like :class:`FileSpec`."""

    path: str
    record_path: bool
    points: int
    cells: int
    nbytes: int

    @property
    def source(self) -> str:
        return self.path if self.record_path else Path(self.path).name

    @property
    def label(self) -> str:
        return f"file:{self.source}"

    def to_param(self) -> dict:
        return asdict(self)


def parse_mesh_file(text: str) -> MeshSpec:
    """A ``file:`` mesh: a regular file from which pyvista reads a mesh with points (read whole, once, to know; in
    a fresh process, as :func:`parse_file_dataset`)."""
    record, path, inner, origin = _split(text)
    if inner or origin:
        raise SpecError(f"dataset {text!r} is a mesh file: it takes no inner path or crop origin")
    return MeshSpec(str(path), record, **inspect(f"{__name__}:_read_mesh", text, path=str(path)))


def _read_mesh(text: str, path: str) -> dict:
    mesh = load_mesh(path)
    return {"points": int(mesh.n_points), "cells": int(mesh.n_cells), "nbytes": mesh_nbytes(mesh)}


def is_mesh_file(value: object) -> bool:
    """A ``file:`` dataset whose file name says mesh (``meshes.MESH_SUFFIXES``)."""
    return is_file_dataset(value) and Path(_split(value)[1]).suffix.lower() in MESH_SUFFIXES


def parse_dataset(value: object, what: str = "dataset", *,
                  meshes: bool = False) -> tuple[str, FileSpec | MeshSpec | None]:
    """A suite's ``dataset``: (its name, None) for a synthetic one, (its label, spec) for a file; a mesh file
    (a :class:`MeshSpec`) where ``meshes`` (the compression suite), else refused."""
    if is_mesh_file(value):
        if not meshes:
            raise SpecError(f"{what} {value!r} is a mesh; only the compression suite's datasets measure a mesh file")
        spec = parse_mesh_file(value)
        return spec.label, spec
    if is_file_dataset(value) or is_example(value):
        spec = parse_file_dataset(value)
        return spec.label, spec
    if not isinstance(value, str) or value not in DATASETS:
        raise SpecError(f"{what} {value!r} is unknown; allowed: {ALLOWED}")
    return value, None


def parse_datasets(value: object, what: str = "datasets", *,
                   meshes: bool = False) -> list[tuple[str, FileSpec | MeshSpec | None]]:
    """A list of datasets (a list, or one comma-separated string), each as :func:`parse_dataset`; duplicates
    dropped."""
    items = [] if value is None else parse_items(value, what, '["labels", "file:/data/stack.zarr"]')
    if not items:
        raise SpecError(f"{what} is empty; allowed: {ALLOWED}")
    parsed = (parse_dataset(v, f"{what} item", meshes=meshes) for v in items)
    return list({label: (label, spec) for label, spec in parsed}.values())


def sources_param(specs: list[FileSpec | None]) -> dict:
    """The ``sources`` a case carries (label -> spec; empty without files): two files under one label are refused."""
    out: dict[str, dict] = {}
    for spec in specs:
        if spec is None:
            continue
        if spec.label in out and out[spec.label] != spec.to_param():
            raise SpecError(f"two datasets are both {spec.label}; give one of them as file+path: or rename it")
        out[spec.label] = spec.to_param()
    return out


def public_label(value: Any) -> Any:
    """A parameter value as a published run records it: each ``file:`` dataset by its label (its name, never
    its directory, unless ``file+path:``); anything else as it is."""
    if is_file_dataset(value):
        record, path, inner, origin = _split(value)
        where = str(path) if record else path.name
        return f"file:{where}" + (f":{inner}" if inner else "") + ("@" + shape_text(origin, ":") if origin else "")
    if isinstance(value, list | tuple):
        return [public_label(v) for v in value]
    if isinstance(value, str) and value.strip().startswith("[") and "file:" in value:
        return value if (items := _json_list(value)) is None else [public_label(v) for v in items]
    return value


def _json_list(text: str) -> list | None:
    import json

    try:
        items = json.loads(text)
    except ValueError:
        return None
    return items if isinstance(items, list) else None


def public_params(params: dict) -> dict:
    """Parameters as run.json records them (see :func:`public_label`)."""
    return {key: public_label(value) for key, value in params.items()}


# -- the dataset the suites measure ---------------------------------------------------------------------------
#: crop digests already computed in this process: (path, inner, size, mtime, origin, shape) -> digest
_DIGESTS: dict[tuple, str] = {}


class FileDataset(RegionBlocks):
    """A crop of a file as the suites' dataset (the interface of :class:`~benchmarks_lib.data.datasets.Dataset`).

    Making one reads nothing; the source is opened (read-only) at the first ``region`` and kept open."""

    def __init__(self, spec: FileSpec, shape: tuple[int, ...], seed: int = 0) -> None:
        self.spec, self.seed = spec, seed
        self.name, self.dtype = spec.label, spec.dtype
        self.shape = tuple(int(n) for n in shape)
        self.crop_origin, self.crop_shape = spec.crop(self.shape)
        self._source = None

    @property
    def description(self) -> str:
        return (f"{self.spec.source}: {self.spec.format} {shape_text(self.spec.source_shape)} {self.dtype}, crop "
                f"{shape_text(self.crop_shape)} at {shape_text(self.crop_origin, ',')}")

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    @property
    def tiled(self) -> bool:
        """The array repeats the crop's rows (it is longer than the source along the first axis)."""
        return self.shape[0] > self.crop_shape[0]

    def _read(self, index: tuple[slice, ...]) -> np.ndarray:
        if self._source is None:
            self._source = open_source(self.spec.path, self.spec.inner)
        lead = len(self.spec.source_shape) - len(self.shape)
        values = self._source.read((*(slice(0, 1) for _ in range(lead)), *index))
        values = values.reshape(values.shape[lead:])
        return values.astype(self.dtype, copy=False)

    def region(self, index: tuple[slice, ...]) -> np.ndarray:
        """The values in a region (slices with bounds, step 1), read from the source's crop; rows past the
        crop's repeat it."""
        index = tuple(slice(*sl.indices(n)[:2]) for sl, n in zip(index, self.shape, strict=True))
        rest = tuple(slice(o + s.start, o + s.stop) for o, s in zip(self.crop_origin[1:], index[1:], strict=True))
        rows, origin0 = self.crop_shape[0], self.crop_origin[0]
        parts, row = [], index[0].start
        while row < index[0].stop:
            within = row % rows
            take = min(rows - within, index[0].stop - row)
            parts.append(self._read((slice(origin0 + within, origin0 + within + take), *rest)))
            row += take
        if not parts:
            return np.empty((0, *(s.stop - s.start for s in index[1:])), dtype=self.dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @phase("prep")
    def digest(self) -> str:
        """The checksum of the crop's values (dtype, shape, bytes), read block by block; once per process."""
        st = os.stat(self.spec.path)
        key = (self.spec.path, self.spec.inner, st.st_size, st.st_mtime_ns, self.crop_origin, self.crop_shape)
        if key not in _DIGESTS:
            step = default_step(self.crop_shape, self.dtype)
            full = tuple(slice(0, n) for n in self.crop_shape[1:])
            _DIGESTS[key] = checksum_blocks(self.region((slice(start, min(start + step, self.crop_shape[0])), *full))
                                            for start in range(0, self.crop_shape[0], step))
        return _DIGESTS[key]

    def columns(self) -> dict:
        """What every row of this data records (the digest is computed here, before any clock)."""
        spec = self.spec
        return {"source": spec.source, "source_format": spec.format, "source_shape": list(spec.source_shape),
                "source_dtype": np.dtype(spec.source_dtype).name, "crop_origin": list(self.crop_origin),
                "crop_shape": list(self.crop_shape), "source_digest": self.digest()}

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None


def make_dataset(name: str, shape: tuple[int, ...], seed: int = 0,
                 sources: dict | None = None) -> Dataset | FileDataset:
    """The dataset a case measures: a file's crop when ``name`` is one of the case's ``sources`` (labels to
    :meth:`FileSpec.to_param`), else the synthetic dataset of that name."""
    if sources and name in sources:
        return FileDataset(FileSpec.from_param(sources[name]), shape, seed)
    return Dataset(name, shape, seed=seed)


def dataset_dtype(name: str, sources: dict | None = None) -> str:
    """The dtype of a dataset a case names (see :func:`make_dataset`), without reading anything."""
    if sources and name in sources:
        return FileSpec.from_param(sources[name]).dtype
    return DATASETS[name][0]


def dataset_columns(dataset: Dataset | FileDataset) -> dict:
    """The columns that say what a row's data is: a file's (:meth:`FileDataset.columns`); none for synthetic."""
    return dataset.columns() if isinstance(dataset, FileDataset) else {}


__all__ = ["ALLOWED", "SCHEMES", "FileDataset", "FileSpec", "MeshSpec", "dataset_columns", "dataset_dtype",
           "is_file_dataset", "is_mesh_file", "make_dataset", "parse_dataset", "parse_datasets", "parse_file_dataset",
           "parse_mesh_file", "public_label", "public_params", "sources_param"]
