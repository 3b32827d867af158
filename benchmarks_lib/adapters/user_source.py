"""What every reader of a person's array shares (:mod:`benchmarks_lib.adapters.user_arrays` opens the file,
:mod:`benchmarks_lib.adapters.user_tiff` reads a TIFF): :class:`SourceArray`, the limit on a piece decoded whole
(:func:`piece_limit`, :func:`check_piece`), and the bound on what reading a region may decode
(:func:`decoded_within`)."""

from __future__ import annotations

import contextlib
import math
import resource
from abc import ABC
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks_lib.base.environment import machine_memory
from benchmarks_lib.base.specs import SpecError, format_bytes

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
    #: the shape of one such piece (None: none)
    piece_shape: tuple[int, ...] | None = None

    def check_first_piece(self) -> None:
        """Decode the first piece (the array's first chunk) within what it declares, when the file is opened: a
        chunk that inflates past it (a decompression bomb) or does not decode is then one line before anything is
        created, not an error row of every case. A later chunk that does is still caught by :meth:`read`."""
        if self.piece_shape:
            self.read(tuple(slice(0, min(c, n)) for c, n in zip(self.piece_shape, self.shape, strict=True)))

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        """The values in ``index`` (slices with bounds, step 1) as a new C-ordered array of the source's dtype,
        decoded within what the region and its pieces declare (:func:`decoded_within`)."""
        out = math.prod(s.stop - s.start for s in index) * self.dtype.itemsize
        with decoded_within(self.path, out, self.piece_bytes):
            return plain_array(self._array[index])

    def close(self) -> None:  # noqa: B027 (nothing to release by default)
        """Release the file; safe to call twice."""

    def __enter__(self) -> SourceArray:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def listing(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED]) + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
    return shown or "nothing"


def plain_array(values: Any) -> np.ndarray:
    """A C-ordered copy (never a view of a memory map or a library's buffer)."""
    return np.array(values, order="C", copy=True)


__all__ = ["LISTED", "PIECES_AT_ONCE", "PIECE_LIMIT", "PIECE_SHARE", "READ_SLACK", "SourceArray", "check_piece",
           "decoded_within", "listing", "piece_limit", "plain_array"]
