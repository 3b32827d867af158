"""The writer suite's cutout positions: the same for every writer and layout, aligned where they say so."""

from __future__ import annotations

import pytest

from benchmarks_lib.base.specs import parse_dims
from benchmarks_lib.suites.kit.cutouts import MIN_CUTOUT_POSITIONS, plan_cutouts


def _origins(cutouts, kind):
    return [tuple(s.start for s in index) for k, index in cutouts if k == kind]


@pytest.mark.parametrize("shape", [(256, 512, 512), (64, 64, 64), (8, 1080, 1920)])
def test_cutouts_are_distinct_in_bounds_and_aligned_to_the_cutout_size(shape):
    size = 32
    cutouts = plan_cutouts(shape, size, MIN_CUTOUT_POSITIONS)
    for kind in ("aligned", "unaligned"):
        origins = _origins(cutouts, kind)
        assert len(origins) == len(set(origins)) == MIN_CUTOUT_POSITIONS
    for _, index in cutouts:
        for s, n in zip(index, shape, strict=True):
            assert s.start >= 0 and s.stop <= n and s.stop - s.start == min(size, n)
    assert all(o % size == 0 for origin in _origins(cutouts, "aligned") for o in origin)
    roomy = [d for d, n in enumerate(shape) if n > size]
    assert all(origin[d] % size for origin in _origins(cutouts, "unaligned") for d in roomy)


def test_cutouts_depend_on_shape_and_size_only():
    """Every layout of the sharding sweep (and every writer) gets the same positions."""
    layouts = [parse_dims(f"z:256:{c},y:256:{c},x:256:{c}") for c in (32, 64, 128)]
    first = plan_cutouts(layouts[0].shape, 32, 8)
    assert all(plan_cutouts(d.shape, 32, 8) == first for d in layouts[1:])
    assert plan_cutouts((256, 256, 256), 16, 8) != first


def test_cutouts_repeat_only_when_the_shape_has_too_few_positions():
    cutouts = plan_cutouts((64, 64), 32, 8)  # 2 x 2 aligned positions
    aligned = _origins(cutouts, "aligned")
    assert len(aligned) == 8 and len(set(aligned)) == 4
