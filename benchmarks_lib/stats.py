"""The statistics every table and figure states: median, n and a seeded bootstrap 95% interval.

The interval is the percentile bootstrap of the median over the iterations of one point
(resampled with replacement, ``n_boot`` times, from a fixed seed, so a table is reproducible).
Two points are ranked only when their intervals do not overlap (``rankable``); otherwise the
text says "not separable".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

CONFIDENCE = 0.95
N_BOOT = 2000
#: resampled values held in memory at once (bounds the bootstrap's memory for long series)
_BATCH_VALUES = 2_000_000
#: the words figures and tables use for the interval
CI_LABEL = "95% bootstrap CI of the median"


def median_ci(values: Iterable[float], confidence: float = CONFIDENCE, n_boot: int = N_BOOT,
              seed: int = 0) -> tuple[float, float, float, int]:
    """``(median, lo, hi, n)`` of the finite ``values``; lo/hi bound the bootstrap ``confidence`` interval.

    With one value the interval is undefined (NaN); with none, everything is NaN and n is 0.
    The interval always contains the median (the percentile bounds are widened to it if needed).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence!r} must lie strictly between 0 and 1")
    if n_boot < 1:
        raise ValueError(f"n_boot {n_boot!r} must be at least 1")
    v = _finite(values)
    n = int(v.size)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    med = float(np.median(v))
    if n == 1:
        return med, float("nan"), float("nan"), 1
    medians = _boot_medians(v, n_boot, np.random.default_rng(seed))
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(medians, [alpha, 1 - alpha])
    return med, float(min(lo, med)), float(max(hi, med)), n


def _finite(values: Iterable[float]) -> np.ndarray:
    v = np.asarray(pd.to_numeric(pd.Series(list(values), dtype="object"), errors="coerce"), dtype=float)
    return v[np.isfinite(v)]


def _boot_medians(v: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    batch = max(1, _BATCH_VALUES // v.size)
    return np.concatenate([np.median(rng.choice(v, size=(min(batch, n_boot - start), v.size), replace=True), axis=1)
                           for start in range(0, n_boot, batch)])


def ratio_ci(a: Iterable[float], b: Iterable[float], confidence: float = CONFIDENCE, n_boot: int = N_BOOT,
             seed: int = 0) -> tuple[float, float, float, int, int]:
    """``(ratio, lo, hi, n_a, n_b)``: median(b) / median(a) of the finite values and its bootstrap interval.

    Each side's iterations are resampled on their own (seeded), the ratio of the resampled medians taken
    ``n_boot`` times; its percentiles bound the interval, widened to contain the ratio. With fewer than two
    values on a side the interval is NaN (the ratio too when a side is empty or its median is 0).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence!r} must lie strictly between 0 and 1")
    if n_boot < 1:
        raise ValueError(f"n_boot {n_boot!r} must be at least 1")
    va, vb = _finite(a), _finite(b)
    nan = float("nan")
    if va.size == 0 or vb.size == 0 or np.median(va) == 0:
        return nan, nan, nan, int(va.size), int(vb.size)
    ratio = float(np.median(vb) / np.median(va))
    if va.size < 2 or vb.size < 2:
        return ratio, nan, nan, int(va.size), int(vb.size)
    rng = np.random.default_rng(seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = _boot_medians(vb, n_boot, rng) / _boot_medians(va, n_boot, rng)
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:  # every resample of A had a median of 0
        return ratio, nan, nan, int(va.size), int(vb.size)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(ratios, [alpha, 1 - alpha])
    return ratio, float(min(lo, ratio)), float(max(hi, ratio)), int(va.size), int(vb.size)


def summarize(df: pd.DataFrame, by: str | Sequence[str], value: str, confidence: float = CONFIDENCE,
              n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """One row per group of ``by``: the group keys, ``median``, ``ci_lo``, ``ci_hi`` and ``n`` of ``value``."""
    keys = [by] if isinstance(by, str) else list(by)
    cols = [*keys, "median", "ci_lo", "ci_hi", "n"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for key, part in df.groupby(keys, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        med, lo, hi, n = median_ci(part[value], confidence, n_boot, seed)
        out.append((*key, med, lo, hi, n))
    return pd.DataFrame(out, columns=cols)


def _bounds(x) -> tuple[float, float]:
    if isinstance(x, (Mapping, pd.Series)):
        return float(x["ci_lo"]), float(x["ci_hi"])
    _, lo, hi, *_ = x
    return float(lo), float(hi)


def rankable(a, b) -> bool:
    """True when the intervals of ``a`` and ``b`` do not overlap, so one can be ranked above the other.

    ``a``/``b``: ``median_ci`` tuples or rows with ``ci_lo``/``ci_hi``. An undefined interval
    (fewer than two iterations) is never rankable.
    """
    (alo, ahi), (blo, bhi) = _bounds(a), _bounds(b)
    if not all(np.isfinite([alo, ahi, blo, bhi])):
        return False
    return ahi < blo or bhi < alo


def format_ci(median: float, lo: float, hi: float, n: int, fmt: str = "{:.3g}") -> str:
    """``median [lo, hi] (n=...)``; ``-`` when there is no value, no bracket when there is no interval."""
    if n == 0 or not np.isfinite(median):
        return "-"
    text = fmt.format(median)
    if np.isfinite(lo) and np.isfinite(hi):
        text += f" [{fmt.format(lo)}, {fmt.format(hi)}]"
    return f"{text} (n={n})"


def format_point(point, fmt: str = "{:.3g}", scale: float = 1.0) -> str:
    """``format_ci`` of a ``summarize`` row (``median``, ``ci_lo``, ``ci_hi``, ``n``), times ``scale``."""
    return format_ci(float(point["median"]) * scale, float(point["ci_lo"]) * scale, float(point["ci_hi"]) * scale,
                     int(point["n"]), fmt)


def format_values(values: Iterable[float], fmt: str = "{:.3g}", scale: float = 1.0) -> str:
    """``format_ci`` of ``median_ci(values)``, every number multiplied by ``scale`` first."""
    med, lo, hi, n = median_ci(values)
    return format_ci(med * scale, lo * scale, hi * scale, n, fmt)


__all__ = ["CI_LABEL", "CONFIDENCE", "N_BOOT", "format_ci", "format_point", "format_values", "median_ci", "rankable",
           "ratio_ci", "summarize"]
