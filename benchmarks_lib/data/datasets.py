"""Seeded synthetic datasets with stated compressibility.

Every value is a deterministic function of (dataset, seed, coordinates), so any block or cutout can be regenerated for
verification without holding the whole array in memory, and the data is produced step by step along the first axis
(one step in memory at a time).

The ratios stated are measured, chunk by chunk, at the quick and standard profiles' array (64x1024x1024, chunks
32x256x256, seeds 0 and 42; the compression chapter's standard reference run agrees):

- ``em_like`` (uint8): smooth 3-D structures plus Gaussian noise, like an EM "color" volume; barely compressible:
  lz4 1.0x, zstd 1.2x (blosc 1.0-1.15x, gzip:6 1.2x).
- ``labels`` (uint32): piecewise-constant regions with wobbly boundaries, like a segmentation: lz4 23x, zstd:1/3
  77x (zstd:9 98x, blosc 11-66x). At another dtype the label ids wrap modulo it. Beside a real segmentation of the
  same dtype and shape (the compression chapter's "Real data beside synthetic"), it compresses 5-6x less than
  pyvista's frog tissues (uint8, 95% background) and 1.2-1.5x less than its facies model (int64).
- ``microscopy`` (uint16): sparse bright blobs on a dim background with Poisson shot noise, like fluorescence
  frames: lz4 1.3x, zstd:1/3 1.9-2.0x (blosc 1.9-2.5x).
- ``random``: uniformly random bits, the labelled worst case that no codec can compress (1.0x).
"""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import math
import os
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from benchmarks_lib.base.specs import SpecError

DATASETS = {
    "em_like": ("uint8", "smooth 3-D structures + Gaussian noise (EM-like), ~1.0x with lz4, ~1.2x with zstd"),
    "labels": ("uint32", "piecewise-constant regions (segmentation-like), ~23x with lz4, ~77x with zstd:3"),
    "microscopy": ("uint16", "blobs + Poisson noise (fluorescence-like frames), ~1.3x with lz4, ~2x with zstd:3"),
    "random": ("uint8", "uniform random bits: labelled worst case, incompressible"),
}
_COMPONENTS = 4
#: a region of at least this many bytes is generated plane by plane on every core this process may use (numpy's
#: generators and ufuncs let go of the GIL: 2 cores generated 16 microscopy frames in 0.72 s, one in 1.30 s)
PARALLEL_BYTES = 8 << 20


def _plane_seed(seed: int, name: str, lead: tuple[int, ...]) -> np.random.Generator:
    key = zlib.crc32(name.encode())
    return np.random.default_rng([seed, key, *lead])


class RegionBlocks:
    """What any dataset derives from its ``shape``, ``dtype`` and ``region``: blocks along the first axis, the
    checksum, the stated compressibility (:class:`Dataset`; a person's own file, ``user_data.FileDataset``)."""

    shape: tuple[int, ...]
    dtype: str | None

    def region(self, index: tuple[slice, ...]) -> np.ndarray:
        raise NotImplementedError

    def blocks(self, step: int) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(offset, block)`` along the first axis, ``step`` entries at a time."""
        if step < 1:
            raise SpecError(f"step {step} must be >= 1")
        full = tuple(slice(0, n) for n in self.shape[1:])
        for start in range(0, self.shape[0], step):
            stop = min(start + step, self.shape[0])
            yield start, self.region((slice(start, stop), *full))

    def checksum(self, step: int | None = None, algorithm: str = "blake2b") -> str:
        """The checksum (dtype, shape and bytes) of the whole array, computed block by block."""
        return checksum_blocks((block for _, block in self.blocks(step or default_step(self.shape, self.dtype))),
                               algorithm)

    def compressibility(self) -> float:
        """zlib-1 ratio of the first plane: the stated compressibility of this data."""
        plane = self.region((*(slice(0, 1) for _ in self.shape[:-2]), slice(None), slice(None)))
        raw = np.ascontiguousarray(plane).tobytes()
        return len(raw) / max(1, len(zlib.compress(raw, 1)))


@dataclass(frozen=True)
class Dataset(RegionBlocks):
    """A synthetic N-D array (N >= 2) defined by its name, shape, dtype and seed."""

    name: str
    shape: tuple[int, ...]
    dtype: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.name not in DATASETS:
            raise SpecError(f"dataset {self.name!r} is unknown; allowed: {', '.join(DATASETS)}")
        if len(self.shape) < 2 or any(int(s) < 1 for s in self.shape):
            raise SpecError(f"dataset shape {self.shape} must have >= 2 positive dimensions")
        if self.dtype is None:
            object.__setattr__(self, "dtype", DATASETS[self.name][0])
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))

    @property
    def description(self) -> str:
        return DATASETS[self.name][1]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    # -- generation -------------------------------------------------------------------
    def _field(self, index: tuple[slice, ...]) -> np.ndarray:
        """A smooth field in [-1, 1] over the region: a sum of separable sinusoids."""
        rng = np.random.default_rng([self.seed, 7])
        out = None
        for _ in range(_COMPONENTS):
            term = None
            for axis, sl in enumerate(index):
                n = self.shape[axis]
                freq = rng.uniform(1.5, 6.0) * 2 * np.pi / max(n, 64)
                phase = rng.uniform(0, 2 * np.pi)
                coords = np.arange(sl.start, sl.stop, dtype=np.float32)
                vec = np.sin(coords * np.float32(freq) + np.float32(phase)).astype(np.float32)
                shape = [1] * len(index)
                shape[axis] = vec.size
                vec = vec.reshape(shape)
                term = vec if term is None else term * vec
            out = term if out is None else out + term
        return out / np.float32(_COMPONENTS / 2)

    def _plane(self, lead: tuple[int, ...], rows: slice, cols: slice) -> np.ndarray:
        """One 2-D plane (the last two axes) at leading index ``lead``, cut to rows x cols."""
        dt = np.dtype(self.dtype)
        region = (*(slice(i, i + 1) for i in lead), rows, cols)
        h, w = self.shape[-2], self.shape[-1]
        if self.name == "labels":
            warp = self._field(region)[(0,) * len(lead)] * np.float32(24)
            cell = 48
            idx = [np.float32(i) for i in lead]
            z = (idx[-1] if idx else np.float32(0)) + warp
            y = np.arange(rows.start, rows.stop, dtype=np.float32)[:, None] + warp
            x = np.arange(cols.start, cols.stop, dtype=np.float32)[None, :] + warp
            cz, cy, cx = (np.floor(v / cell).astype(np.int64) + 4 for v in (z, y, x))
            label = (cz * 7919 + cy) * 104729 + cx + 1
            return (label % np.iinfo(np.uint32).max).astype(dt)
        rng = _plane_seed(self.seed, self.name, lead)
        if self.name == "random":
            if dt.kind == "f":
                full = rng.random((h, w), dtype=np.float64).astype(dt)
            else:
                full = np.frombuffer(rng.bytes(h * w * dt.itemsize), dtype=dt).reshape(h, w)
            return full[rows, cols].copy()
        # Noise is drawn for the whole plane, so a cutout equals the same cut of a full read.
        full = (*(slice(i, i + 1) for i in lead), slice(0, h), slice(0, w))
        field = self._field(full)[(0,) * len(lead)]
        if self.name == "em_like":
            noise = rng.standard_normal((h, w), dtype=np.float32)
            value = np.float32(128) + np.float32(70) * field + np.float32(10) * noise
        else:  # microscopy
            bright = np.maximum(field - np.float32(0.35), 0) ** 2 * np.float32(6000)
            value = rng.poisson(np.float64(100) + bright)
        value = value[rows, cols]
        if dt.kind == "f":
            return np.asarray(value, dtype=dt)
        info = np.iinfo(dt)
        return np.clip(value, info.min, info.max).astype(dt)

    def region(self, index: tuple[slice, ...]) -> np.ndarray:
        """The values in a region (a tuple of slices with explicit bounds, step 1)."""
        index = tuple(slice(*sl.indices(n)[:2]) for sl, n in zip(index, self.shape, strict=True))
        lead_ranges = [range(sl.start, sl.stop) for sl in index[:-2]]
        out = np.empty(tuple(sl.stop - sl.start for sl in index), dtype=self.dtype)

        def fill(lead: tuple[int, ...]) -> None:
            pos = tuple(i - sl.start for i, sl in zip(lead, index, strict=False))
            out[pos] = self._plane(lead, index[-2], index[-1])

        leads = list(itertools.product(*lead_ranges))
        workers = min(len(leads), len(os.sched_getaffinity(0)))
        if workers < 2 or out.nbytes < PARALLEL_BYTES:
            for lead in leads:
                fill(lead)
        else:  # each plane has its own generator (seeded by its index), so the values are the same in any order
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(fill, leads))
        return out


def checksum_header(dtype, shape: tuple[int, ...]) -> bytes:
    """The dtype and shape that every checksum covers, as the bytes hashed before the data.

    The dtype is written little-endian (``<u2``, ``|u1``), the byte order the data is hashed in,
    so equal values in either byte order give one checksum.
    """
    dt = np.dtype(dtype).newbyteorder("<")
    return f"iobench-array-v1|{dt.str}|{','.join(str(int(n)) for n in shape)}".encode()


class ArrayDigest:
    """A checksum of an array fed as consecutive blocks along the first axis: blake2b over
    :func:`checksum_header` (dtype and shape) followed by the blake2b of the C-order,
    little-endian bytes. How the array is cut into blocks does not change it.

    The dtype and the shape are taken from the blocks themselves (the dtype and trailing shape
    of the first block, the rows summed), so an array read back as another dtype, with its axes
    swapped or with rows missing gets a different checksum even when its bytes agree. Blocks
    that disagree with the first block's dtype or trailing shape make the header say so.

    ``algorithm`` ``xxh3`` hashes the bytes with xxh3-128 instead (2 ms for 67 MB, where blake2b took 51 ms; the
    read-back verification of what a run wrote, :data:`FAST_CHECKSUM`); its checksums start with ``xxh3:``
    (:func:`checksum_algorithm`), so a checksum made elsewhere is compared with one made the same way.
    """

    def __init__(self, algorithm: str = "blake2b") -> None:
        if algorithm == "xxh3":
            from xxhash import xxh3_128

            self._bytes, self._prefix = xxh3_128(), "xxh3:"
        elif algorithm == "blake2b":
            self._bytes, self._prefix = hashlib.blake2b(digest_size=32), ""
        else:
            raise ValueError(f"checksum algorithm {algorithm!r}: use blake2b or xxh3")
        self._dtype: np.dtype | None = None
        self._trailing: tuple[int, ...] | None = None
        self._rows = 0
        self._mixed = False

    def update(self, block: np.ndarray) -> None:
        block = np.asarray(block)
        if block.ndim == 0:
            block = block.reshape(1)
        if self._dtype is None:
            self._dtype, self._trailing = block.dtype, block.shape[1:]
        elif block.dtype != self._dtype or block.shape[1:] != self._trailing:
            self._mixed = True
        little = block.dtype.newbyteorder("<")
        if block.dtype != little:
            block = block.astype(little)
        self._rows += block.shape[0]
        self._bytes.update(np.ascontiguousarray(block).data)

    def hexdigest(self) -> str:
        if self._dtype is None:
            header = b"iobench-array-v1|empty"
        elif self._mixed:
            header = b"iobench-array-v1|mixed blocks"
        else:
            header = checksum_header(self._dtype, (self._rows, *self._trailing))
        h = hashlib.blake2b(header, digest_size=16)
        h.update(self._bytes.digest())
        return self._prefix + h.hexdigest()


def _fast_checksum() -> str:
    try:  # a core dependency; a library version's own environment (``run.environments``) holds numpy alone
        import xxhash  # noqa: F401
    except ImportError:  # pragma: no cover - there
        return "blake2b"
    return "xxh3"


#: the algorithm of the checksums that verify a run's writes (those of a person's data, ``source_digest``, stay
#: blake2b, comparable across versions of iobench)
FAST_CHECKSUM = _fast_checksum()


def checksum_algorithm(checksum: str) -> str:
    """The algorithm that made ``checksum`` (:class:`ArrayDigest`), to make another one the same way."""
    return "xxh3" if checksum.startswith("xxh3:") else "blake2b"


def checksum_blocks(blocks: Iterable[np.ndarray], algorithm: str = "blake2b") -> str:
    """The :class:`ArrayDigest` of consecutive blocks along the first axis (dtype, shape, bytes)."""
    digest = ArrayDigest(algorithm)
    for block in blocks:
        digest.update(block)
    return digest.hexdigest()


def checksum_array(array: np.ndarray) -> str:
    """The checksum of a whole array: equal to ``checksum_blocks`` of any split along axis 0."""
    return checksum_blocks([array])


_libc = ctypes.CDLL(None)
_libc.memcmp.restype = ctypes.c_int
_libc.memcmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]


def same_array(got, want: np.ndarray) -> bool:
    """``got`` is exactly ``want``: the same dtype, shape and values. Numbers in C order are compared byte for byte
    (``memcmp``: 3 ms for 67 MB, where ``np.array_equal`` took 94 ms and a temporary as large as the data);
    anything else element by element."""
    got = np.asarray(got)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind in "biufc" and got.flags.c_contiguous and want.flags.c_contiguous:
        return got.nbytes == 0 or _libc.memcmp(got.ctypes.data, want.ctypes.data, got.nbytes) == 0
    return bool(np.array_equal(got, want))


def default_step(shape: tuple[int, ...], dtype: str, target_bytes: int = 64 * 2**20) -> int:
    """Entries of the first axis per block so that one block is about ``target_bytes``."""
    per_entry = math.prod(shape[1:]) * np.dtype(dtype).itemsize
    return max(1, min(shape[0], target_bytes // max(1, per_entry)))
