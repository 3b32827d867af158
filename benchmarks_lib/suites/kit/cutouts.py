"""Where cutouts fall: aligned and unaligned positions, the same for every writer and layout."""

from __future__ import annotations

import numpy as np

#: cutout positions per kind when a test does not say (the sharding sweep)
MIN_CUTOUT_POSITIONS = 8


def _positions(rng: np.random.Generator, starts: list[np.ndarray], count: int) -> list[tuple[int, ...]]:
    """``count`` distinct combinations of per-dimension ``starts`` while there are enough, then repeated."""
    total = int(np.prod([len(s) for s in starts]))
    picks = rng.choice(total, size=min(count, total), replace=False)
    picks = np.resize(picks, count)
    return [tuple(int(s[i]) for s, i in zip(starts, idx, strict=True))
            for idx in zip(*np.unravel_index(picks, [len(s) for s in starts]), strict=True)]


def plan_cutouts(shape: tuple[int, ...], size: int, count: int) -> list[tuple[str, tuple[slice, ...]]]:
    """``count`` aligned and ``count`` unaligned cutouts of ``size`` per side.

    The positions depend on the array shape and the cutout size only (the seed is made from
    them), so every writer and every layout of a comparison reads the same cutouts. *aligned*
    cutouts start at multiples of the cutout size in every dimension: where chunks, inner chunks
    and shards divide the cutout size or are multiples of it (powers of two in every profile),
    such a cutout covers whole chunks or lies inside one chunk in every layout compared.
    *unaligned* cutouts start off those multiples wherever a dimension leaves room. Positions are
    distinct while the shape has enough of them, then repeat.
    """
    rng = np.random.default_rng([size, *shape])
    sides = [min(size, n) for n in shape]
    aligned = [np.arange(0, n - side + 1, size) for n, side in zip(shape, sides, strict=True)]
    unaligned = []
    for n, side in zip(shape, sides, strict=True):
        starts = np.arange(0, n - side + 1)
        off = starts[starts % size != 0]
        unaligned.append(off if off.size else starts[:1])
    out = []
    for kind, starts in (("aligned", aligned), ("unaligned", unaligned)):
        for origin in _positions(rng, starts, count):
            out.append((kind, tuple(slice(o, o + side) for o, side in zip(origin, sides, strict=True))))
    return out
