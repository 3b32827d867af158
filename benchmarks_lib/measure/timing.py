"""Summary statistics of repeated timings (median and spread)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    mean: float
    std: float
    minimum: float
    maximum: float
    iqr: float


def summarize(values: list[float]) -> Stats:
    if not values:
        raise ValueError("no values to summarize")
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else [ordered[0]] * 3
    return Stats(
        n=len(ordered),
        median=statistics.median(ordered),
        mean=statistics.fmean(ordered),
        std=statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        minimum=ordered[0],
        maximum=ordered[-1],
        iqr=q[2] - q[0],
    )
