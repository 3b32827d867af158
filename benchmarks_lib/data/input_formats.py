"""What the cache chapter's inputs hold, which their writers (:mod:`benchmarks_lib.inputs`) and their readers
(the remote adapters) both need: the TTree sample's tree, branch types and bytes per entry, and the Zarr store's
dataset and the selections a workload reads."""

from __future__ import annotations

# -- the TTree sample file (:mod:`benchmarks_lib.inputs.root_sample` writes it) -------------------------

TREE_NAME = "T"
ARRAY_LENGTH = 100
#: (ROOT leaf type code, numpy dtype) cycling over branches: float, double, int, short
ELEMENT_TYPES = (("F", "float32"), ("D", "float64"), ("I", "int32"), ("S", "int16"))


def entry_bytes(entries: int, branches: int) -> int:
    """Uncompressed bytes of ``entries`` entries of all branches (what a full read unpacks)."""
    sizes = [4, 8, 4, 2]
    return entries * ARRAY_LENGTH * sum(sizes[b % 4] for b in range(branches))


# -- the Zarr v3 store (:mod:`benchmarks_lib.inputs.zarr_store` writes it) ----------------------------

ZARR_DATASET = "microscopy"


def zarr_selections(shape: tuple[int, ...], chunks: tuple[int, ...], workload: str, cutout: tuple[int, ...],
                    count: int) -> list[tuple[slice, ...]]:
    """``whole``: the full array. ``cutouts``: a pan of ``count`` boxes starting half a chunk in,
    each shifted by half the cutout along the last axis (wrapping), so neighbours overlap."""
    if workload == "whole":
        return [tuple(slice(0, n) for n in shape)]
    out = []
    starts = [min(c // 2, n - s) for c, n, s in zip(chunks, shape, cutout, strict=True)]
    span = shape[-1] - cutout[-1]
    for i in range(count):
        pos = list(starts)
        pos[-1] = (starts[-1] + i * max(1, cutout[-1] // 2)) % (span + 1) if span > 0 else 0
        out.append(tuple(slice(a, a + s) for a, s in zip(pos, cutout, strict=True)))
    return out
