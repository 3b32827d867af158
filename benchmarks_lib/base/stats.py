"""The statistics every table and figure states: median, n, and an interval whose coverage is true at that n.

- The interval of a median is the distribution-free order-statistic interval ``[x_(k), x_(n+1-k)]``: for any
  continuous distribution it covers the true median with probability ``1 - 2 P(B <= k-1)``, ``B ~ Bin(n, 1/2)``
  (``coverage``). It reaches 95% from n=6; below that the interval is the full range [min, max] and its coverage
  (n=2: 50%, n=5: 93.75%) is stated beside it (``format_ci``).
- Two sets of iterations are compared by ``two_sample``: the ratio of their medians with a distribution-free 95%
  interval (the Hodges-Lehmann shift of the log values, bounded by exact Mann-Whitney critical values; the
  normal approximation only for large samples). They are separable when that interval excludes 1, which is
  exactly the Mann-Whitney test at the 5% level: identical contenders are called separable at most 5% of the time.
  Below ``MIN_RANK_N`` iterations on either side nothing is ranked: "too few iterations to rank (n=k)".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas only where a frame is read: the measuring worker imports this module for MIN_RANK_N
    import pandas as pd

CONFIDENCE = 0.95
#: below this many iterations on either side nothing is ranked (at n=5 the median interval is the range, 94%)
MIN_RANK_N = 5
#: the words figures and tables use for the interval
CI_LABEL = "distribution-free 95% interval of the median (order statistics; its coverage stated where n < 6)"
#: exact binomial / Mann-Whitney distributions up to these sizes; the normal approximation beyond
_EXACT_BINOMIAL_N = 1000
_EXACT_MW_PRODUCT = 2500


def _check(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence!r} must lie strictly between 0 and 1")


def _finite(values: Iterable[float]) -> np.ndarray:
    """The finite values as floats (anything that is not a number dropped)."""
    v = values if isinstance(values, np.ndarray) or hasattr(values, "to_numpy") else list(values)
    raw = np.asarray(v)
    if raw.dtype.kind in "fiub":
        v = raw.astype(float)
    else:
        import pandas as pd

        v = np.asarray(pd.to_numeric(pd.Series(v, dtype="object"), errors="coerce"), dtype=float)
    return v[np.isfinite(v)]


@cache
def _median_rank(n: int, confidence: float) -> tuple[int, float]:
    """``(k, coverage)``: the largest k whose interval ``[x_(k), x_(n+1-k)]`` covers the median with probability
    at least ``confidence``, and that probability; ``k = 1`` (the range) when no k reaches it."""
    if n < 2:
        return 0, float("nan")
    if n > _EXACT_BINOMIAL_N:
        z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
        k = max(1, math.floor(n / 2 - z * math.sqrt(n) / 2 + 0.5))
        return k, 1 - 2 * NormalDist().cdf((k - 0.5 - n / 2) / (math.sqrt(n) / 2))
    total, tail, best = 2 ** n, 0, (1, 1 - 2 / 2 ** n)
    for k in range(1, n // 2 + 1):
        tail += math.comb(n, k - 1)  # P(B <= k-1) * 2**n
        cover = 1 - 2 * tail / total
        if cover < confidence:
            break
        best = (k, cover)
    return best


def coverage(n: int, confidence: float = CONFIDENCE) -> float:
    """The true coverage of the interval ``median_ci`` returns at ``n`` iterations (NaN below 2)."""
    _check(confidence)
    return _median_rank(int(n), confidence)[1]


def median_ci(values: Iterable[float], confidence: float = CONFIDENCE) -> tuple[float, float, float, int]:
    """``(median, lo, hi, n)`` of the finite ``values``; lo/hi are the order statistics that bound the median
    with at least ``confidence`` (the range [min, max] where n is too small for that: see ``coverage``).

    With one value the interval is undefined (NaN); with none, everything is NaN and n is 0.
    """
    _check(confidence)
    v = np.sort(_finite(values))
    n = int(v.size)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    med = float(np.median(v))
    if n == 1:
        return med, float("nan"), float("nan"), 1
    k, _ = _median_rank(n, confidence)
    return med, float(v[k - 1]), float(v[n - k]), n


@lru_cache(maxsize=256)
def _mann_whitney_cdf(m: int, n: int) -> tuple[float, ...]:
    """P(U <= u) for u = 0..m*n under the null, exact: the coefficients of the Gaussian binomial
    [m+n choose m]_q, built as prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i) in integers."""
    c = [1] + [0] * (m * n + m + n)
    deg = 0
    for i in range(1, m + 1):
        step = n + i
        for u in range(deg + step, step - 1, -1):  # times (1 - q^step)
            c[u] -= c[u - step]
        deg += step
        for u in range(i, deg + 1):  # divided by (1 - q^i), exact
            c[u] += c[u - i]
        deg -= i
    total = math.comb(m + n, m)
    return tuple(float(x) for x in np.cumsum(np.array(c[:m * n + 1], dtype=object)) / total)


def _shift_rank(m: int, n: int, confidence: float) -> tuple[int, float]:
    """``(k, coverage)``: the interval ``[d_(k), d_(mn+1-k)]`` of the sorted pairwise differences covers the
    shift with probability ``coverage >= confidence``; k = 0 where no k reaches it."""
    alpha = 1 - confidence
    if m * n <= _EXACT_MW_PRODUCT:
        cdf = _mann_whitney_cdf(min(m, n), max(m, n))
        k = 0
        while k < len(cdf) and 2 * cdf[k] <= alpha + 1e-12:
            k += 1  # P(U <= k-1) <= alpha/2 for the k reached
        return (k, 1 - 2 * cdf[k - 1]) if k else (0, float("nan"))
    mean, sd = m * n / 2, math.sqrt(m * n * (m + n + 1) / 12)
    k = max(0, math.floor(mean - NormalDist().inv_cdf(1 - alpha / 2) * sd + 0.5))
    return (k, 1 - 2 * NormalDist().cdf((k - 0.5 - mean) / sd)) if k else (0, float("nan"))


@dataclass(frozen=True)
class TwoSample:
    """B against A: ``ratio`` = median(b) / median(a) with its distribution-free interval ``[lo, hi]``.

    ``separable`` is None below ``MIN_RANK_N`` iterations on either side (or without an interval), else True iff
    the interval excludes 1. ``higher`` says whether a higher value is better (throughput) or worse (time).
    """

    ratio: float
    lo: float
    hi: float
    n_a: int
    n_b: int
    separable: bool | None
    higher: bool = False
    coverage: float = float("nan")
    #: the whole interval lies within the rule's margin (``rules.decision.MARGIN``): equivalent for practical purposes
    equivalent: bool = False
    #: from per-round pairs (``rules.decision``): n_a and n_b are then the rounds both were measured in
    paired: bool = False

    @property
    def b_better(self) -> bool:
        """True when B is separably better than A (faster time, or higher throughput when ``higher``)."""
        return bool(self.separable) and (self.ratio > 1) == self.higher


def two_sample(a: Iterable[float], b: Iterable[float], higher: bool = False,
               confidence: float = CONFIDENCE) -> TwoSample:
    """Compare the iterations ``b`` with ``a`` (see ``TwoSample``).

    The interval is the Hodges-Lehmann interval of the shift between log(b) and log(a): the sorted pairwise
    differences, cut at the exact Mann-Whitney critical rank (normal approximation beyond 2500 pairs),
    exponentiated, and widened to contain the ratio of the medians. Values that are not all positive are
    compared as plain differences, relative to median(a). NaN bounds where ``confidence`` cannot be reached.
    """
    _check(confidence)
    va, vb = _finite(a), _finite(b)
    m, n, nan = int(va.size), int(vb.size), float("nan")
    if m == 0 or n == 0:
        return TwoSample(nan, nan, nan, m, n, None, higher)
    ma, mb = float(np.median(va)), float(np.median(vb))
    ratio = mb / ma if ma != 0 else nan
    k, cover = _shift_rank(m, n, confidence)
    lo, hi = _shift_interval(va, vb, ma, k) if k else (nan, nan)
    if np.isfinite(ratio) and np.isfinite(lo):
        lo, hi = min(lo, ratio), max(hi, ratio)
    separable = None
    if min(m, n) >= MIN_RANK_N and np.isfinite(lo) and np.isfinite(hi):
        separable = bool(lo > 1 or hi < 1)
    return TwoSample(ratio, lo, hi, m, n, separable, higher, cover)


def _shift_interval(va: np.ndarray, vb: np.ndarray, ma: float, k: int) -> tuple[float, float]:
    """The ratio interval from the k-th smallest and largest pairwise differences of log(b) - log(a)
    (of b - a relative to median(a) where a value is not positive)."""
    m, n = va.size, vb.size
    if (va > 0).all() and (vb > 0).all():
        d = np.sort((np.log(vb)[None, :] - np.log(va)[:, None]).ravel())
        return math.exp(float(d[k - 1])), math.exp(float(d[m * n - k]))
    if ma <= 0:
        return float("nan"), float("nan")
    d = np.sort((vb[None, :] - va[:, None]).ravel())
    return (ma + float(d[k - 1])) / ma, (ma + float(d[m * n - k])) / ma


def ratio_ci(a: Iterable[float], b: Iterable[float],
             confidence: float = CONFIDENCE) -> tuple[float, float, float, int, int]:
    """``(ratio, lo, hi, n_a, n_b)`` of ``two_sample(a, b)``: median(b) / median(a) and its interval."""
    t = two_sample(a, b, confidence=confidence)
    return t.ratio, t.lo, t.hi, t.n_a, t.n_b


def summarize(df: pd.DataFrame, by: str | Sequence[str], value: str,
              confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per group of ``by``: the group keys, ``median``, ``ci_lo``, ``ci_hi`` and ``n`` of ``value``."""
    import pandas as pd

    keys = [by] if isinstance(by, str) else list(by)
    cols = [*keys, "median", "ci_lo", "ci_hi", "n"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for key, part in df.groupby(keys, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        out.append((*key, *median_ci(part[value], confidence)))
    return pd.DataFrame(out, columns=cols)


def plain(shown: str) -> str:
    """A number as a format showed it, out of exponent notation (``1.02e+03``: ``1020``; ``1e+06``: ``1000000``)."""
    return np.format_float_positional(float(shown), trim="-") if "e" in shown.lower() else shown


def format_ci(median: float, lo: float, hi: float, n: int, fmt: str = "{:.3g}",
              confidence: float = CONFIDENCE) -> str:
    """``median [lo, hi] (n=...)``, with the interval's coverage where it is below ``confidence``
    (``1.2 [1.1, 1.4] (n=5, 94% interval)``); ``-`` when there is no value, no bracket without an interval."""
    if n == 0 or not np.isfinite(median):
        return "-"
    text = plain(fmt.format(median))
    if np.isfinite(lo) and np.isfinite(hi):
        text += f" [{plain(fmt.format(lo))}, {plain(fmt.format(hi))}]"
        cover = coverage(n, confidence)
        if cover < confidence:
            return f"{text} (n={n}, {math.floor(100 * cover + 0.5)}% interval)"
    return f"{text} (n={n})"


def format_point(point, fmt: str = "{:.3g}", scale: float = 1.0) -> str:
    """``format_ci`` of a ``summarize`` row (``median``, ``ci_lo``, ``ci_hi``, ``n``), times ``scale``."""
    return format_ci(float(point["median"]) * scale, float(point["ci_lo"]) * scale, float(point["ci_hi"]) * scale,
                     int(point["n"]), fmt)


def format_values(values: Iterable[float], fmt: str = "{:.3g}", scale: float = 1.0) -> str:
    """``format_ci`` of ``median_ci(values)``, every number multiplied by ``scale`` first."""
    med, lo, hi, n = median_ci(values)
    return format_ci(med * scale, lo * scale, hi * scale, n, fmt)


__all__ = ["CI_LABEL", "CONFIDENCE", "MIN_RANK_N", "TwoSample", "coverage", "format_ci", "format_point",
           "format_values", "median_ci", "plain", "ratio_ci", "summarize", "two_sample"]
