"""The adapter contract: one small class per writer/format.

Lifecycle of a write (each phase is timed separately by the suite, never by the adapter)::

    adapter = Adapter(threads=None)
    reason = adapter.is_incompatible(spec, "write")   # None, or why this case cannot run
    adapter.create(path, spec)                         # open/create the store (empty)
    adapter.write(offset, block)                       # block lands at [offset:offset+len] on axis 0
    adapter.finalize()                                 # flush + close; safe to call twice

Appending (``create(..., append=True)`` then ``append(block)`` repeatedly) streams frames
into one store whose final length is ``spec.shape[0]``; writers with a native streaming or
resizing API use it, the default writes at a running offset.

Reading: ``open_reader(path, spec)`` then ``read(index)`` for a full read (block by block)
or a cutout; ``close_reader()``. ``output_files(path)`` lists what to evict and measure.

Verifying: a write is read back by a different library where one reads the format (its ``format``
or one of its ``reads``; :func:`benchmarks_lib.adapters.readers_of`). Where none
does (HDF5, wkw, raw), ``independent_read(path, spec)`` decodes the files without the writer's
library (plain file I/O and the codec library) and returns an :class:`IndependentRead`, or
says why it cannot; the default says there is no such reader.

Capabilities are class variables (data, not code), so the registry, the CLI and the
book can show them without importing the writer library.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from benchmarks_lib.adapters.library import Library
from benchmarks_lib.base.specs import BLOSC_CNAMES, DTYPES, ArraySpec
from benchmarks_lib.measure.disk import list_files

OPERATIONS = ("write", "append", "read", "read_region")


@dataclass(frozen=True)
class IndependentRead:
    """A store decoded without its writer's library: the whole array as consecutive blocks
    along axis 0 (read lazily, one block in memory at a time)."""

    #: what read and decoded the bytes, e.g. "mmap" or "file I/O + numcodecs.Blosc"
    by: str
    blocks: Iterator[np.ndarray]


class Adapter(Library, ABC):
    """An array writer/reader (kind ``array``); see :class:`Library` for what every adapter declares."""

    #: on-disk format, used to pick a *different* library to verify with
    format: ClassVar[str]
    #: formats it also reads, besides its own (zarr-python reads Zarr v2 and the array inside an OME-Zarr group):
    #: a writer of any of them may be verified with it
    reads: ClassVar[tuple[str, ...]] = ()
    #: codec families it can write ("none", "lz4", "zstd", "gzip", "blosc")
    codecs: ClassVar[frozenset[str]] = frozenset({"none"})
    #: blosc compressors it can write, when "blosc" is in codecs (default: every one ``specs`` knows)
    blosc_cnames: ClassVar[frozenset[str]] = frozenset(BLOSC_CNAMES)
    applies_codec: ClassVar[bool] = True
    supports_sharding: ClassVar[bool] = False
    requires_sharding: ClassVar[bool] = False
    supports_append: ClassVar[bool] = True
    supports_read: ClassVar[bool] = True
    #: opens an array another process created and writes its own region (``open_writer``): parallel writes
    writes_regions: ClassVar[bool] = False
    #: where it can write and read: "file" (a local path), "s3" (a ``storage.S3Target`` given as the path)
    stores: ClassVar[tuple[str, ...]] = ("file",)
    native_order: ClassVar[str] = "C"
    #: True when the writer fsyncs its files itself (so its write time always includes fsync)
    fsyncs: ClassVar[bool] = False
    #: the array ranks (fewest, most dimensions) and the dtypes it writes: a person's own data outside them is
    #: refused before a run (``refuses_data``)
    ranks: ClassVar[tuple[int, int]] = (1, 32)
    dtypes: ClassVar[frozenset[str]] = frozenset(DTYPES)
    #: True when it writes through other adapters' libraries (ome-writers): ``advise --measure`` measures those
    #: libraries themselves, not the wrapper a second time
    wraps_others: ClassVar[bool] = False

    def __init__(self, threads: int | None = None, option: str | None = None) -> None:
        self.threads = threads
        self.option = option
        self.spec: ArraySpec | None = None
        self.path: Path | None = None
        self._next = 0

    @classmethod
    def reads_format(cls, format: str) -> bool:
        """It reads stores of ``format`` (with ``open_reader``)."""
        return cls.supports_read and (format == cls.format or format in cls.reads)

    @classmethod
    def writes_format(cls, option: str | None) -> str:
        """The format it writes with ``option`` (what a listing shows, and an instance's ``format``): its declared
        ``format`` unless an option picks another (``tensorstore:zarr2``)."""
        return cls.format

    @classmethod
    def refuses_data(cls, dtype: str, ndim: int) -> str | None:
        """Why it cannot write an array of ``dtype`` with ``ndim`` dimensions (its declared ``ranks`` and
        ``dtypes``), or None."""
        low, high = cls.ranks
        if not low <= ndim <= high:
            ranks = f"{low}-D" if low == high else f"{low}-D to {high}-D"
            return f"{cls.name} writes {ranks} arrays, not {ndim}-D"
        if dtype not in cls.dtypes:
            return f"{cls.name} does not write {dtype}; it writes {', '.join(sorted(cls.dtypes))}"
        return None

    @property
    def label(self) -> str:
        return f"{self.name}:{self.option}" if self.option else self.name

    def is_incompatible(self, spec: ArraySpec, operation: str) -> str | None:
        """Why this writer cannot run ``operation`` on ``spec``, or None when it can."""
        if operation not in OPERATIONS:
            return f"unknown operation {operation!r}"
        if operation == "append" and not self.supports_append:
            return f"{self.name} cannot append"
        if operation.startswith("read") and not self.supports_read:
            return f"{self.name} cannot read"
        codec = spec.codec
        if self.applies_codec and codec.family not in self.codecs:
            return f"{self.name} does not offer codec {codec}; it offers {', '.join(sorted(self.codecs))}"
        if self.applies_codec and codec.family == "blosc" and codec.cname not in self.blosc_cnames:
            return f"{self.name} offers blosc with {', '.join(sorted(self.blosc_cnames))} only, not {codec.cname}"
        if spec.dims.shards and not self.supports_sharding:
            return f"{self.name} does not support sharding"
        if self.threads is not None and self.threads_setting is None and not self.ignores_threads:
            return f"{self.name} has no threads setting"
        return None

    def row_columns(self) -> dict:
        """Columns every row of its cases carries: the Zarr format it writes (``zarr_format``, 2 or 3) where it
        writes Zarr, so a table can say which format each row measured (zarr-python writes v2 or v3 by version)."""
        return {"zarr_format": int(self.format[-1])} if self.format in ("zarr2", "zarr3") else {}

    def write_alignment(self, spec: ArraySpec) -> int:
        """Blocks written along axis 0 must start and end on multiples of this (1: any)."""
        return 1

    def array_path(self, path: Path) -> Path:
        """Where the array itself lives inside the output (e.g. ``<path>/0`` in an OME-Zarr group)."""
        return path

    def output_files(self, path: Path) -> list[Path]:
        return list_files(path)

    # -- writing ------------------------------------------------------------------------
    @abstractmethod
    def create(self, path: Path, spec: ArraySpec, *, append: bool = False) -> None: ...

    @abstractmethod
    def write(self, offset: int, block: np.ndarray) -> None: ...

    def append(self, block: np.ndarray) -> None:
        self.write(self._next, block)
        self._next += block.shape[0]

    @abstractmethod
    def finalize(self) -> None:
        """Flush and close; must be safe to call twice."""

    def open_writer(self, path: Path, spec: ArraySpec) -> None:
        """Open the existing array at ``path`` for ``write`` (no create): one of several writers of one array."""
        raise NotImplementedError(f"{self.name} does not write regions of an existing array")

    # -- reading ------------------------------------------------------------------------
    @abstractmethod
    def open_reader(self, path: Path, spec: ArraySpec) -> None: ...

    @abstractmethod
    def read(self, index: tuple[slice, ...]) -> np.ndarray: ...

    def close_reader(self) -> None:
        """Release the reader; safe to call twice."""

    def s3_concurrency(self) -> tuple[int, str] | None:
        """At most how many S3 requests it keeps in flight, and the setting that says so (recorded per S3 case;
        call after ``create`` or ``open_reader``); None where it does not say."""
        return None

    # -- verifying ------------------------------------------------------------------------
    def independent_read(self, path: Path, spec: ArraySpec) -> IndependentRead | str:
        """The written array decoded without this adapter's library, or why that cannot be done.

        Used to verify a write when no second library reads the format. Decoding errors are
        raised when the blocks are read, so a corrupt store fails verification.
        """
        return f"no reader independent of {self.name} is known for the {self.format} format"


class FrameStream(Adapter):
    """A writer that only streams, in order (acquire-zarr, ome-writers): ``create`` opens ``self.stream``,
    ``write(offset, block)`` is accepted at the next offset only, ``finalize`` closes the stream (safe twice)."""

    stream: Any = None

    @abstractmethod
    def push(self, block: np.ndarray) -> None:
        """Hand ``block`` (whole frames along axis 0) to the open stream."""

    def write(self, offset: int, block: np.ndarray) -> None:
        if offset != self._next:
            raise ValueError(f"{self.name} only appends in order: next offset is {self._next}, got {offset}")
        self.push(block)
        self._next += block.shape[0]

    def append(self, block: np.ndarray) -> None:
        self.write(self._next, block)

    def finalize(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None
