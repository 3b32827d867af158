"""The data a timed write receives: a pool of blocks generated and hashed before any clock starts.

A write is handed the dataset block by block along the first axis; :func:`block_step` sizes
the blocks (whole chunks/shards, about 64 MiB) and :class:`BlockSource` holds them, so that
nothing is generated or hashed while a write is timed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from benchmarks_lib.base.specs import ArraySpec, DimsSpec
from benchmarks_lib.data.datasets import FAST_CHECKSUM, Dataset, checksum_blocks
from benchmarks_lib.inputs.arrays import kept, stem_of
from benchmarks_lib.measure.ledger import phase

#: bytes of one generated block at most (whole chunks or shards round it up)
BLOCK_TARGET = 64 * 2**20
#: default size of the pool of generated blocks a write receives (beyond it the data is tiled)
POOL_BYTES = 512 * 2**20
#: pools up to this size are kept on disk for the rest of the run and reused by later cases (every
#: backend writes the same data): the standard profile's 512 MiB em_like pool took about 15 s to generate in
#: each of its cases (prep was 370 s of the writers chapter's 1573 s); loading and checking it takes about 1 s
POOL_CACHE_LIMIT = 1 << 30


def block_step(dims: DimsSpec, dtype: str, alignment: int = 1, target: int = BLOCK_TARGET) -> int:
    """Entries along axis 0 per generated block: whole shards/chunks (and the writer's
    alignment), about ``target`` bytes (64 MiB)."""
    unit = math.lcm((dims.shards or dims.chunks)[0], alignment)
    per_entry = math.prod(dims.shape[1:]) * np.dtype(dtype).itemsize
    return max(unit, (min(target, BLOCK_TARGET) // max(1, per_entry * unit)) * unit)


class BlockSource:
    """The blocks a timed write receives, all generated and hashed before the clock starts.

    ``prepare`` generates a pool of the dataset's first blocks, up to ``pool_bytes``. The
    array written is that pool repeated along the first axis: block k is
    ``pool[k % len(pool)]`` cut to the entries left, so data larger than the budget is
    ``tiled`` and memory stays bounded at any size. ``checksum`` covers exactly the bytes
    handed to the writer and ``region`` gives the expected content of any cutout, both taken
    from the same pool; iterating only slices the pool.
    """

    def __init__(self, dataset: Dataset, step: int, pool_bytes: int = POOL_BYTES) -> None:
        self.dataset, self.step, self.pool_bytes = dataset, step, pool_bytes
        self._pool: list[np.ndarray] | None = None
        self.checksum: str | None = None

    @property
    def tiled(self) -> bool:
        """The array repeats a part of itself: the pool, or a file's crop shorter than the array (``user_data``)."""
        return len(self._prepared_pool()) * self.step < self.dataset.shape[0] or getattr(self.dataset, "tiled", False)

    def _prepared_pool(self) -> list[np.ndarray]:
        if self._pool is None:
            raise RuntimeError("BlockSource.prepare() must run before the timed region")
        return self._pool

    @phase("prep")
    def prepare(self, cache: Path | None = None) -> BlockSource:
        """Generate the pool and hash the whole written sequence now (before any timed region).

        With ``cache`` (a directory kept for the run) a pool of at most ``POOL_CACHE_LIMIT`` is
        loaded from there when an earlier case made the same one, and saved there otherwise, with
        its checksum (:func:`inputs.arrays.kept`); a damaged file is regenerated.
        """
        if self._pool is not None:
            return self
        if cache is None or self.pool_bytes > POOL_CACHE_LIMIT:
            self._pool = self._split(self._generate())
            self.checksum = checksum_blocks((block for _, block in self), FAST_CHECKSUM)
            return self
        d = self.dataset
        # the checksum's algorithm too: a worker in a library version's own environment (no xxhash) makes its own
        key = [d.name, d.shape, d.seed, str(d.dtype), self.step, self.pool_bytes, FAST_CHECKSUM]
        data, meta = kept(cache, stem_of("pool", key), self._made)
        self._pool = self._split(data)
        self.checksum = meta["checksum"]
        return self

    def _generate(self) -> np.ndarray:
        """The dataset's first blocks, up to ``pool_bytes`` (whole blocks, at least one), as one array made in one
        go (its planes on every core: ``Dataset.region``)."""
        d = self.dataset
        block_bytes = self.step * math.prod(d.shape[1:]) * np.dtype(d.dtype).itemsize
        blocks = max(1, min(-(-d.shape[0] // self.step), -(-self.pool_bytes // max(1, block_bytes))))
        return d.region((slice(0, min(d.shape[0], blocks * self.step)), *(slice(0, n) for n in d.shape[1:])))

    def _split(self, data: np.ndarray) -> list[np.ndarray]:
        return [data[i:i + self.step] for i in range(0, data.shape[0], self.step)]

    def _made(self) -> tuple[np.ndarray, dict]:
        """The pool generated (as one array) and the checksum of the written sequence, for :func:`kept`."""
        data = self._generate()
        self._pool = self._split(data)
        return data, {"checksum": checksum_blocks((block for _, block in self), FAST_CHECKSUM)}

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        pool, n = self._prepared_pool(), self.dataset.shape[0]
        for k, offset in enumerate(range(0, n, self.step)):
            yield offset, pool[k % len(pool)][: min(self.step, n - offset)]

    def region(self, index: tuple[slice, ...]) -> np.ndarray:
        """The written array's values in ``index`` (slices, step 1), assembled from the pool."""
        pool = self._prepared_pool()
        index = tuple(slice(*sl.indices(n)[:2]) for sl, n in zip(index, self.dataset.shape, strict=True))
        first, rest = index[0], index[1:]
        parts, row = [], first.start
        while row < first.stop:
            k, within = divmod(row, self.step)
            take = min(self.step - within, first.stop - row)
            parts.append(pool[k % len(pool)][(slice(within, within + take), *rest)])
            row += take
        if not parts:
            return np.empty((0, *(sl.stop - sl.start for sl in rest)), dtype=self.dataset.dtype)
        return np.concatenate(parts)


def block_indices(spec: ArraySpec, step: int) -> list[tuple[slice, ...]]:
    """The full array as consecutive blocks of ``step`` entries along the first axis."""
    rest = tuple(slice(0, n) for n in spec.shape[1:])
    return [(slice(start, min(start + step, spec.shape[0])), *rest) for start in range(0, spec.shape[0], step)]
