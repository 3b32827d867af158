"""How much the writers suite writes: the bytes of a case, the scratch a run needs at once, the ceiling's size, and
the sharding layouts those depend on."""

from __future__ import annotations

import math

import numpy as np

from benchmarks_lib.base.specs import parse_dims
from benchmarks_lib.inputs.user_data import dataset_dtype
from benchmarks_lib.suites import Case
from benchmarks_lib.suites.kit.blocks import POOL_CACHE_LIMIT


def shard_layouts(volume: int, shard: int, inner: list[int]) -> list[tuple[str, int, int | None]]:
    """(label, chunk, shard) per layout: sharded with each inner chunk, unsharded at each size."""
    layouts = [(f"sharded {shard}/{c}", c, shard) for c in inner]
    layouts += [(f"unsharded {c}", c, None) for c in sorted({*inner, shard})]
    return layouts


def _case_bytes(case: Case) -> int:
    """The bytes of the case's largest store (its data before compression)."""
    p = case.params
    if p["test"] == "sharding":
        return p["shard_volume"] ** 3 * 4
    shape, itemsize = parse_dims(p["dims"]).shape, np.dtype(dataset_dtype(p["dataset"], p.get("sources"))).itemsize
    if p["test"] == "write":
        return math.prod(shape) * max(p["multipliers"]) * itemsize
    if p["test"] == "append":
        return math.prod(shape[1:]) * p["append_frames"] * itemsize
    return math.prod(shape) * itemsize


def _pool_bytes(case: Case) -> int:
    """What the case's data pools keep on disk for the rest of the run (see ``BlockSource.prepare``)."""
    p = case.params
    if p["pool_bytes"] > POOL_CACHE_LIMIT:
        return 0
    if p["test"] == "sharding":
        pools = len(p["datasets"]) * len(shard_layouts(p["shard_volume"], p["shard"], p["inner_chunks"]))
    else:
        pools = len(p.get("multipliers", [1]))
    return pools * min(p["pool_bytes"], _case_bytes(case))  # a pool is at most the data it repeats


def scratch_bytes(cases: list[Case]) -> int:
    """Three stores of the largest case at once, plus the pools kept for the run (one set per test)."""
    pools = {c.params["test"]: _pool_bytes(c) for c in cases}
    return 3 * max((_case_bytes(c) for c in cases), default=0) + sum(pools.values())


def work_bytes(case: Case) -> int:
    """The bytes one run of a case writes: its largest store, once per dataset and layout of a sharding case."""
    p = case.params
    if p["test"] != "sharding":
        return _case_bytes(case)
    return _case_bytes(case) * len(p["datasets"]) * len(shard_layouts(p["shard_volume"], p["shard"], p["inner_chunks"]))


def ceiling_bytes(cases: list[Case]) -> int:
    """The ceiling is measured on the bytes of the largest case (at most 2 GiB)."""
    return min(max((_case_bytes(c) for c in cases), default=64 * 2**20), 2 * 2**30)
