"""How each case changed between two runs of it (``iobench compare``), with the variance that matters, and the
words of its verdicts.

Per case the quantity is one log ratio, ``d = mean log t_B - mean log t_A``; its point and its interval are of that
one quantity, and the table shows ``exp`` of both. The times are first taken relative to their round's run-wide
level where a run measured in rounds (``round``) holds ``LEVEL_MIN_CASES`` cases or more: the level of round r is the
median over the run's cases (the ceiling's rows aside) of ``log t[c, r] - median_r log t[c, r]``, so drift and steps
shared by the whole run leave the cases' values (and their spread) without moving any case against another.

The interval's variance adds, in quadrature:

- each side's standard error of the case's mean log time (its sample SD over sqrt(n));
- the between-run component ``tau``: a case-specific run factor (a case 6% slower in one run, 4% faster in the next,
  for reasons that hold for the whole run) is scattered around the run-wide drift ``D`` (the median of ``d`` over
  the cases); ``tau^2`` is the value at which the median of ``(d - D)^2 / (se_a^2 + se_b^2 + tau^2)`` is the median of
  a chi-square with 1 degree of freedom (0, where the scatter is no more than the cases' own noise). It needs
  ``DRIFT_MIN_CASES`` cases in both runs; below that it is not estimated (0), and the comparison says so. From
  ``2 x STRATUM_CASES`` cases, each stratum of like duration (equal counts, cut by the sum of the case's mean log
  times) has a tau of its own, around the one drift: on a busy machine a case of 0.1 ms scatters between runs twice
  as much as one of 1 ms (a lost time slice is a larger part of it), and one tau for all let the short cases'
  scatter pass for changes (an A/A test beside two CPU-bound loops: 10 of 1,344 cases flagged, all shorter than
  0.2 ms; with strata, 2);
- each run's level uncertainty where its rounds were levelled: the batch-means variance of the run's mean level
  (``(mean level of the second half of its rounds - mean level of the first)^2 / 4``), the machine wandering within
  a run, which makes the level it sat at uncertain against another run's.

The interval is ``d +- t * s`` with the Welch-Satterthwaite degrees of freedom of the standard errors (n - 1 each)
and of tau^2 (0.37 x (cases of its stratum - 1): the efficiency of a median-based scale), the level terms taken as
known.

The verdict needs the whole interval of ``exp(d)`` against the band ``1 / (1 + threshold)`` to ``1 + threshold``
(``judge``). A case "slower" or "faster" there is checked against the run: its own change ``d - D`` (the level terms
cancel, D's own standard error is added). When the run's drift itself lies beyond the threshold the same way and the
case's own change does not, the case "moved with the run" (``WITH_RUN``): a case beyond the threshold on its own is
never that, and nothing moves with a run that did not move. A ceiling row (the machine, no library) beyond the
threshold reads "ceiling moved" (``MACHINE``) and takes no part in the run's drift, tau, or the levels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from benchmarks_lib.base.stats import CONFIDENCE, MIN_RANK_N

DEFAULT_THRESHOLD = 0.1
SLOWER = "slower"
FASTER = "faster"
SAME = "same"
ONLY_A = "only in A"
ONLY_B = "only in B"
TOO_FEW = "too few iterations"
#: neither beyond the threshold nor within it: the interval reaches both sides of one of its bounds
NOT_SEPARABLE = "not separable"
#: beyond the threshold, as the run's drift is, and not beyond it against the run
WITH_RUN = "moved with the run"
#: the verdict of a ceiling row (the machine's raw write, read and memcpy, no library) beyond the threshold: the
#: machine itself moved, which may explain a case that moved with it; context, not a change of a case
MACHINE = "ceiling moved"
#: verdicts in the order a table lists them (flagged first, "same" last)
VERDICTS = (SLOWER, FASTER, MACHINE, WITH_RUN, ONLY_A, ONLY_B, TOO_FEW, NOT_SEPARABLE, SAME)
#: the verdicts a comparison lists: a change, or a case that could not be judged
FLAGGED = (SLOWER, FASTER, ONLY_A, ONLY_B, TOO_FEW)
#: the verdicts of a case one run alone measured
ONE_SIDE = (ONLY_A, ONLY_B)
#: the verdicts of a case that moved
MOVED = (SLOWER, FASTER, MACHINE, WITH_RUN)
#: cases in both runs from which the run's drift and the between-run component are estimated
DRIFT_MIN_CASES = 10
#: cases a stratum of like duration holds at least: from twice as many cases in both runs, each stratum has its
#: own between-run component tau (``case_changes``)
STRATUM_CASES = 16
#: cases a round of a run needs for its run-wide level (below it the round is not levelled)
LEVEL_MIN_CASES = 5
#: the median of a chi-square with 1 degree of freedom: (d - D)^2 / var has it where var is right
_CHI2_1_MEDIAN = 0.454936
#: the asymptotic efficiency of a scale from the median absolute deviation (tau's degrees of freedom: this x cases)
_MAD_EFFICIENCY = 0.37
#: the asymptotic variance of a median relative to a mean's (pi / 2)
_MEDIAN_EFFICIENCY = math.pi / 2

Case = Hashable


def bounds(threshold: float) -> tuple[float, float]:
    """The band of "same" for a threshold stated as a factor either way: ``(1 / (1 + t), 1 + t)``."""
    return 1 / (1 + threshold), 1 + threshold


def threshold_words(threshold: float) -> str:
    """The threshold as the factor it is: "a factor of 1.1 either way, 0.909-1.1"."""
    down, up = bounds(threshold)
    return f"a factor of {up:.3g} either way, {down:.3g}-{up:.3g}"


def judge(result: object, threshold: float = DEFAULT_THRESHOLD) -> tuple[str, str]:
    """``(verdict, why)`` of an interval ``result.lo``-``result.hi`` of B/A (with ``n_a``, ``n_b``: a ``CaseChange``,
    or a ``stats.TwoSample``) against the band ``bounds(threshold)``: "slower" above it, "faster" below it, "same"
    within it, "not separable" when it reaches both inside and outside it; "too few iterations" below
    ``MIN_RANK_N`` a side or without an interval."""
    n_a, n_b, lo, hi = result.n_a, result.n_b, result.lo, result.hi
    if n_a == 0:
        return ONLY_B, "not measured in A"
    if n_b == 0:
        return ONLY_A, "not measured in B"
    if min(n_a, n_b) < MIN_RANK_N or not (np.isfinite(lo) and np.isfinite(hi)):
        return TOO_FEW, f"n={n_a} and {n_b}: {MIN_RANK_N} a side needed"
    return _band(lo, hi, threshold)


def verdict(result: object, threshold: float = DEFAULT_THRESHOLD) -> str:
    """The verdict of :func:`judge`."""
    return judge(result, threshold)[0]


def _band(lo: float, hi: float, threshold: float) -> tuple[str, str]:
    down, up = bounds(threshold)
    if lo > up:
        return SLOWER, f"whole interval above {up:.3g}"
    if hi < down:
        return FASTER, f"whole interval below {down:.3g}"
    if down <= lo and hi <= up:
        return SAME, f"whole interval within {down:.3g}-{up:.3g}"
    return NOT_SEPARABLE, f"interval partly within, partly beyond {down:.3g}-{up:.3g}"


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile at ``p`` (> 0.5) for ``df`` degrees of freedom (real; at least 1): the Cornish-Fisher
    expansion in 1/df (Abramowitz & Stegun 26.7.5; within 1% of the exact value from df=2, exact as df grows)."""
    z = NormalDist().inv_cdf(p)
    if not math.isfinite(df):
        return z
    v = max(df, 1.0)
    g = ((z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96, (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
         (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160)
    return z + sum(gi / v ** (i + 1) for i, gi in enumerate(g))


@dataclass(frozen=True)
class CaseChange:
    """One case, B against A: ``ratio`` = exp(d), d the difference of its mean log times (round-levelled), with the
    interval ``[lo, hi]`` of the same quantity; ``own`` and ``[own_lo, own_hi]`` the change against the run's drift
    (NaN where the drift is not estimated); the verdict and why."""

    case: Case
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    ratio: float
    lo: float
    hi: float
    own: float
    own_lo: float
    own_hi: float
    verdict: str
    why: str


@dataclass(frozen=True)
class RunChanges:
    """Every case's change, and what the cases say of the runs: the drift exp(D) (None below ``DRIFT_MIN_CASES``),
    the between-run component tau (a log SD: a case-specific run factor) of each stratum of like duration, shortest
    first (none below ``DRIFT_MIN_CASES``), and each run's level SD."""

    cases: dict[Case, CaseChange]
    drift: float | None
    between_sd: tuple[float, ...]
    level_sd_a: float
    level_sd_b: float
    n_cases: int


@dataclass(frozen=True)
class _Side:
    """One run's values of one case: mean and variance of its mean log time, n, median time."""

    mean: float
    var: float
    n: int
    median: float


def levelled(rows: pd.DataFrame, machine: Callable[[Case], bool]) -> tuple[pd.DataFrame, float]:
    """``rows`` (``case``, ``round``, ``log``) with ``log`` taken relative to its round's run-wide level, and the
    batch-means variance of the run's mean level; unchanged (and 0) where the run has no rounds or fewer than
    ``LEVEL_MIN_CASES`` cases (the machine's rows are never levelled)."""
    if "round" not in rows or rows["round"].isna().all():
        return rows, 0.0
    cases = rows[rows["round"].notna() & ~rows["case"].map(machine).astype(bool)]
    if cases["case"].nunique() < LEVEL_MIN_CASES:
        return rows, 0.0
    centred = cases["log"] - cases.groupby("case")["log"].transform("median")
    per_round = centred.groupby(cases["round"]).agg(["median", "size"])
    level = per_round["median"].where(per_round["size"] >= LEVEL_MIN_CASES, 0.0).sort_index()
    shift = rows["round"].map(level).where(rows.index.isin(cases.index), 0.0).fillna(0.0)
    half = len(level) // 2
    var = (float(level.iloc[-half:].mean() - level.iloc[:half].mean()) ** 2 / 4) if half >= 2 else 0.0
    return rows.assign(log=rows["log"] - shift), var


def _sides(rows: pd.DataFrame) -> dict[Case, _Side]:
    out = {}
    for case, part in rows.groupby("case", sort=False):
        logs = part["log"].to_numpy(dtype="float64")
        n = logs.size
        var = float(np.var(logs, ddof=1)) / n if n >= 2 else float("nan")
        out[case] = _Side(float(np.mean(logs)), var, n, float(np.median(part["value"])))
    return out


def between_run_variance(d: np.ndarray, within: np.ndarray, drift: float) -> float:
    """tau^2: the variance that makes ``(d - drift)^2 / (within + tau^2)`` have the median of chi-square(1), or 0
    where the scatter is no more than ``within`` accounts for (bisection; the median is robust to changed cases)."""
    dev = (d - drift) ** 2

    def excess(tau2: float) -> float:
        return float(np.median(dev / np.maximum(within + tau2, 1e-300))) - _CHI2_1_MEDIAN

    if excess(0.0) <= 0:
        return 0.0
    lo, hi = 0.0, float(np.max(dev)) + 1e-12
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return (lo + hi) / 2


def case_changes(a: pd.DataFrame, b: pd.DataFrame, machine: Callable[[Case], bool] = lambda case: False,
                 threshold: float = DEFAULT_THRESHOLD, confidence: float = CONFIDENCE) -> RunChanges:
    """Each case of runs ``a`` and ``b`` (rows of ``case``: a hashable key, ``value``: a time in seconds, and
    ``round`` where measured in rounds), B against A, judged (see the module's docstring). ``machine(case)``: the
    case is the machine's own ceiling. Values that are not finite and positive are left out."""
    sides, variances = [], []
    for rows in (a, b):
        rows = rows[np.isfinite(rows["value"]) & (rows["value"] > 0)].reset_index(drop=True)
        rows, var = levelled(rows.assign(log=np.log(rows["value"].to_numpy(dtype="float64"))), machine)
        sides.append(_sides(rows))
        variances.append(var)
    (sa, sb), (wa, wb) = sides, variances
    both = [c for c in sa if c in sb and not machine(c) and sa[c].n >= 2 and sb[c].n >= 2]
    drift, strata, drift_var = None, [], 0.0
    if len(both) >= DRIFT_MIN_CASES:
        d = np.array([sb[c].mean - sa[c].mean for c in both])
        within = np.array([sa[c].var + sb[c].var for c in both])
        drift = float(np.median(d))
        strata = _strata(np.array([sa[c].mean + sb[c].mean for c in both]), d, within, drift)
        tau2s = np.array([_tau2_at(strata, sa[c].mean + sb[c].mean)[0] for c in both])
        drift_var = _MEDIAN_EFFICIENCY * float(np.median(within + tau2s)) / len(both)
    p = 1 - (1 - confidence) / 2
    out = {}
    for case in sorted(set(sa) | set(sb), key=repr):
        xa, xb = sa.get(case), sb.get(case)
        if xa is None or xb is None:
            n_a, n_b = (xa.n if xa else 0), (xb.n if xb else 0)
            out[case] = CaseChange(case, n_a, n_b, xa.median if xa else math.nan, xb.median if xb else math.nan,
                                   *[math.nan] * 6, *judge(_Counts(n_a, n_b), threshold))
            continue
        d = xb.mean - xa.mean
        lo = hi = own = own_lo = own_hi = math.nan
        if xa.n >= 2 and xb.n >= 2:
            tau2, cases = _tau2_at(strata, xa.mean + xb.mean)
            parts = [(xa.var, xa.n - 1), (xb.var, xb.n - 1), (tau2, _MAD_EFFICIENCY * (cases - 1))]
            core = sum(v for v, _ in parts)
            df = core**2 / sum(v**2 / k for v, k in parts if v > 0) if core > 0 else math.inf
            q = t_quantile(p, df)
            half = q * math.sqrt(core + (0.0 if machine(case) else wa + wb))
            lo, hi = math.exp(d - half), math.exp(d + half)
            if drift is not None:
                own_half = q * math.sqrt(core + drift_var)
                own, own_lo, own_hi = (math.exp(x) for x in (d - drift, d - drift - own_half, d - drift + own_half))
        change = CaseChange(case, xa.n, xb.n, xa.median, xb.median, math.exp(d), lo, hi, own, own_lo, own_hi, "", "")
        verdict, why = _verdict(change, None if drift is None else math.exp(drift), machine(case), threshold)
        out[case] = CaseChange(**{**change.__dict__, "verdict": verdict, "why": why})
    return RunChanges(out, None if drift is None else math.exp(drift), tuple(math.sqrt(s.tau2) for s in strata),
                      math.sqrt(wa), math.sqrt(wb), len(both))


@dataclass(frozen=True)
class _Stratum:
    """Cases of like duration: the longest of them (a sum of the two runs' mean log times), their between-run
    variance tau^2 and how many they are."""

    upto: float
    tau2: float
    cases: int


def _strata(duration: np.ndarray, d: np.ndarray, within: np.ndarray, drift: float) -> list[_Stratum]:
    """The cases in both runs cut by duration into ``len // STRATUM_CASES`` strata of equal counts (one below
    ``2 x STRATUM_CASES``), shortest first, each with its own tau^2 around the run's drift: a short case's time
    moves more between runs on a busy machine (a time slice lost is a larger part of it)."""
    order = np.argsort(duration, kind="stable")
    return [_Stratum(float(duration[g[-1]]), between_run_variance(d[g], within[g], drift), len(g))
            for g in np.array_split(order, max(1, len(order) // STRATUM_CASES))]


def _tau2_at(strata: list[_Stratum], duration: float) -> tuple[float, int]:
    """tau^2 and the count of cases it rests on for a case (or a ceiling's row) of ``duration``: the stratum's
    that holds its duration (beyond the longest case, the longest stratum's); (0, 1) where tau is not estimated."""
    for stratum in strata:
        if duration <= stratum.upto:
            return stratum.tau2, stratum.cases
    return (strata[-1].tau2, strata[-1].cases) if strata else (0.0, 1)


@dataclass(frozen=True)
class _Counts:
    n_a: int
    n_b: int
    lo: float = math.nan
    hi: float = math.nan


def _verdict(change: CaseChange, drift: float | None, machine: bool, threshold: float) -> tuple[str, str]:
    """The case's verdict and why: ``judge`` on its interval; a machine's row beyond the threshold is
    ``MACHINE``; a case beyond it is checked against the run's drift ``drift`` (a ratio: ``WITH_RUN``)."""
    verdict, why = judge(change, threshold)
    if verdict not in (SLOWER, FASTER):
        return verdict, why
    if machine:
        return MACHINE, (f"{verdict} ({why}): the machine's own ceiling, no library; cases using the same resource "
                         "may have moved with it")
    if drift is None:
        return verdict, why
    own, _ = _band(change.own_lo, change.own_hi, threshold)
    against = (f"against the run's drift ({drift:.3g}): {change.own:.3g} [{change.own_lo:.3g}, "
               f"{change.own_hi:.3g}]")
    run_moved = _band(drift, drift, threshold)[0] == verdict
    if own != verdict and run_moved:
        return WITH_RUN, f"{verdict} ({why}), as the run; {against}, not beyond the threshold on its own"
    return verdict, f"{why}; {against}, " + ("beyond the threshold on its own" if own == verdict else own)


def per_case_rows(values: dict[Case, Sequence[float]]) -> pd.DataFrame:
    """Rows for ``case_changes`` from case -> its times (not measured in rounds)."""
    return pd.DataFrame([(case, v) for case, vs in values.items() for v in vs], columns=["case", "value"])


__all__ = ["DEFAULT_THRESHOLD", "DRIFT_MIN_CASES", "FASTER", "FLAGGED", "LEVEL_MIN_CASES", "MACHINE", "MOVED",
           "NOT_SEPARABLE", "ONE_SIDE", "ONLY_A", "ONLY_B", "SAME", "SLOWER", "TOO_FEW", "VERDICTS", "WITH_RUN",
           "CaseChange", "RunChanges", "between_run_variance", "bounds", "case_changes", "judge", "levelled",
           "per_case_rows", "t_quantile", "threshold_words", "verdict"]
