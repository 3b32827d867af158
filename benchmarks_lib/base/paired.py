"""The paired rule for contenders measured in rounds (``run.rounds``; the ranking uses it where rows were measured
in rounds: ``rules.ranking``): each round measures every contender once, in a fresh random order, and a contender
is compared with the leader by the per-round log ratios ``d_r = log(t_contender_r / t_leader_r)``.

- The estimate is the Hodges-Lehmann estimate (the median of the Walsh averages ``(d_i + d_j) / 2``, i <= j) and
  its interval the exact Wilcoxon signed-rank bounds: order statistics of the Walsh averages whose coverage is
  computed from the signed-rank statistic's exact null distribution at n. With the order of each round random,
  a round's ratio is as likely above as below its true value whatever the host does between rounds (a drift step,
  a burst of load), so the test keeps its level under any drift; two-sample rules on runs back to back do not.
- A question is looked at after ``LOOKS`` rounds (8, 12, 16, 20: an exact signed-rank test cannot separate
  anything at 5 rounds, its smallest two-sided p being 6.25%) and stops when it is answered. Every look and every
  comparison is paid for: 5% per question split over the K(K-1)/2 pairs (Bonferroni), the same level at every look
  (Pocock). The pairs, not only the K-1 comparisons with the leader: the leader is chosen on the same rounds (the
  best median), which tilts its comparisons (simulated with 5 identical contenders: 6.6-8% false "separable" when
  only K-1 were paid for). :func:`look_level` is that level, found on the exact null distribution of the
  signed-rank statistics at the looks, which is distribution-free (random signs on random ranks), so it holds for
  any shape of noise (:data:`CRITICAL_COUNTS`). The interval reported at a look is the one at that level, valid
  whenever the question stops.
- A difference whose whole interval lies within ``MARGIN`` (5%) is "equivalent", not "separable".

Simulated (``tests/test_base_paired.py``, 3,000 questions each, 10% lognormal noise): identical contenders are
falsely called separable in 4.8-5.5% of questions for 2, 3.9-4.6% for 3 and 3.0-3.6% for 5, with no drift, a 1.3x
step half-way, a 2x load burst over 20% of the run, AR(1) drift or 10% of iterations 2x slower. Two contenders 1.15x
apart are separated by the cap in 96% of questions at 10% CV and 22% at 30%; 1.3x apart in 100% and 64%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

import numpy as np

from benchmarks_lib.base.stats import MARGIN, TwoSample

#: the rounds after which a question is looked at; the last is the cap
LOOKS = (8, 12, 16, 20)
#: the false "separable" rate allowed per question, over all its comparisons and looks
ALPHA = 0.05
#: paths of the null simulation in :func:`look_level`
NULL_PATHS = 200_000
#: the critical counts (:func:`critical_count`) at each of ``LOOKS`` for 2..5 contenders, derived by
#: :func:`look_level` on 2,000,000 null paths: false "separable" over all looks 4.97%, 1.54%, 0.78% and 0.46% per
#: pair (targets 5%, 1.67%, 0.83%, 0.5%); ``tests/test_base_paired.py`` measures them again on other paths
CRITICAL_COUNTS = {2: (2, 11, 25, 44), 3: (0, 7, 19, 36), 4: (0, 5, 15, 31), 5: (0, 3, 13, 28)}


@cache
def signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t) for t = 0 .. n(n+1)/2, T+ the signed-rank statistic of n untied values under the null (each
    rank's sign a fair coin): the counts of subsets of {1..n} by their sum, over 2^n."""
    counts = np.zeros(n * (n + 1) // 2 + 1, dtype=np.float64)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return np.cumsum(counts) / 2.0**n


def critical_count(n: int, level: float) -> int:
    """k: the largest count with P(T+ <= k - 1) <= level / 2 (0 when no interval at that level exists at n). The
    interval is then the k-th smallest to the k-th largest Walsh average; it excludes 0 exactly when T+ <= k - 1
    or T+ >= n(n+1)/2 - k + 1."""
    cdf = signed_rank_cdf(n)
    return int(np.searchsorted(cdf, level / 2, side="right"))


def walsh_averages(d: np.ndarray) -> np.ndarray:
    d = np.asarray(d, dtype=float)
    i, j = np.triu_indices(len(d))
    return np.sort((d[i] + d[j]) / 2)


@dataclass(frozen=True)
class PairedInterval:
    """A contender against the leader: the Hodges-Lehmann ratio and its exact signed-rank interval (as ratios,
    ``exp`` of the log-ratio bounds), its coverage at n and the rounds it rests on."""

    ratio: float
    lo: float
    hi: float
    coverage: float
    n: int


def paired_interval(d: np.ndarray, k: int) -> PairedInterval:
    """The HL ratio of the per-round log ratios ``d`` and its exact interval between the ``k``-th smallest and the
    ``k``-th largest Walsh average (:func:`critical_count`; no interval when ``k`` is 0)."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    walsh = walsh_averages(d)
    center = float(np.exp(np.median(walsh)))
    if k == 0:
        return PairedInterval(center, 0.0, math.inf, 0.0, n)
    coverage = 1 - 2 * float(signed_rank_cdf(n)[k - 1])
    return PairedInterval(center, float(np.exp(walsh[k - 1])), float(np.exp(walsh[len(walsh) - k])), coverage, n)


def _statistics(paths: int, looks: tuple[int, ...], seed: int) -> np.ndarray:
    """T+ at each look for ``paths`` null paths (continuous values with random signs): shape (paths, len(looks))."""
    rng = np.random.default_rng(seed)
    values = rng.random((paths, looks[-1]))
    positive = rng.random((paths, looks[-1])) < 0.5
    out = np.empty((paths, len(looks)), dtype=np.int64)
    for column, n in enumerate(looks):
        ranks = values[:, :n].argsort(axis=1).argsort(axis=1) + 1
        out[:, column] = (ranks * positive[:, :n]).sum(axis=1)
    return out


def family_rate(counts: tuple[int, ...], looks: tuple[int, ...] = LOOKS, paths: int = NULL_PATHS,
                seed: int = 0) -> float:
    """The null probability that a comparison is called separable at some look, with critical ``counts`` at
    ``looks``, measured on ``paths`` null paths."""
    stats = _null_statistics(looks, paths, seed)
    reject = np.zeros(len(stats), dtype=bool)
    for column, (n, k) in enumerate(zip(looks, counts, strict=True)):
        if k:
            top = n * (n + 1) // 2
            reject |= (stats[:, column] <= k - 1) | (stats[:, column] >= top - k + 1)
    return float(reject.mean())


@cache
def _null_statistics(looks: tuple[int, ...], paths: int, seed: int) -> np.ndarray:
    return _statistics(paths, looks, seed)


@cache
def look_level(contenders: int, looks: tuple[int, ...] = LOOKS, alpha: float = ALPHA) -> float:
    """The two-sided level of each look (Pocock: the same at every look) at which a comparison's chance of a false
    "separable" over all ``looks`` is at most ``alpha`` over the number of pairs (Bonferroni). Found by bisection on
    the exact signed-rank critical values and the null paths (a level between two critical values changes nothing:
    the one found is the largest that keeps the rate)."""
    if contenders < 2:
        raise ValueError(f"contenders {contenders!r}: a comparison needs at least 2")
    # two Monte Carlo standard errors below the target: the rate of the chosen critical values, measured on paths of
    # another seed, stays within it
    target = alpha / (contenders * (contenders - 1) // 2)
    target -= 2 * math.sqrt(target * (1 - target) / NULL_PATHS)
    lo, hi = 0.0, target
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if family_rate(tuple(critical_count(n, mid) for n in looks), looks) <= target else (lo, mid)
    return lo


def critical_counts(contenders: int, looks: tuple[int, ...] = LOOKS) -> tuple[int, ...]:
    """The critical count at each look for a question of ``contenders`` (:data:`CRITICAL_COUNTS`, else derived)."""
    if looks == LOOKS and contenders in CRITICAL_COUNTS:
        return CRITICAL_COUNTS[contenders]
    level = look_level(contenders, looks)
    return tuple(critical_count(n, level) for n in looks)


class Answer(StrEnum):
    """Why a question stopped, or that it goes on."""

    SEPARATED = "separated"
    EQUIVALENT = "equivalent"
    OPEN = "open"
    NOT_SEPARABLE = "not separable"


@dataclass(frozen=True)
class Look:
    """A question at one look: the leader, each other contender's interval against it, and the answer."""

    leader: str
    intervals: dict[str, PairedInterval]
    answer: Answer
    rounds: int

    def why(self) -> str:
        """Why it stopped (or not), in words: "separated at round 8", "equivalent within 5%", ..."""
        if self.answer is Answer.SEPARATED:
            return f"separated at round {self.rounds}"
        if self.answer is Answer.EQUIVALENT:
            return f"equivalent within {MARGIN:.0%} at round {self.rounds}"
        if self.answer is Answer.NOT_SEPARABLE:
            return f"cap of {self.rounds} rounds reached: not separable"
        return f"open after {self.rounds} rounds"


def look(times: dict[str, np.ndarray], looks: tuple[int, ...] = LOOKS, margin: float = MARGIN) -> Look:
    """The question's state after its rounds: ``times`` holds each contender's time per round (the same rounds,
    in the same order; lower is better). The leader is the best median; each other contender is compared with it
    by its per-round log ratios, with the critical count of its look (:func:`critical_counts`). Answered when every
    other's interval lies within 1 +- ``margin`` (equivalent: a tie with the leader) or above 1 and not within it
    (separated): "equivalent" when any is equivalent, else "separated". At the last look anything else is not
    separable."""
    names = sorted(times)
    rounds = {len(np.asarray(times[name])) for name in names}
    if len(names) < 2 or len(rounds) != 1:
        raise ValueError("a look needs two or more contenders measured in the same rounds")
    n = rounds.pop()
    if n not in looks:
        raise ValueError(f"{n} rounds is not a look ({', '.join(map(str, looks))}): the level is paid at looks only")
    k = critical_counts(len(names), looks)[looks.index(n)]
    logs = {name: np.log(np.asarray(times[name], dtype=float)) for name in names}
    leader = min(names, key=lambda name: float(np.median(logs[name])))
    intervals = {name: paired_interval(logs[name] - logs[leader], k) for name in names if name != leader}
    equivalent = {name for name, iv in intervals.items() if 1 / (1 + margin) <= iv.lo and iv.hi <= 1 + margin}
    separated = {name for name, iv in intervals.items() if iv.lo > 1} - equivalent
    if len(equivalent) + len(separated) < len(intervals):
        answer = Answer.NOT_SEPARABLE if n >= looks[-1] else Answer.OPEN
    else:  # a difference within the margin is equivalent, never separated
        answer = Answer.EQUIVALENT if equivalent else Answer.SEPARATED
    return Look(leader, intervals, answer, n)


def rounds_count(n: int, contenders: int, looks: tuple[int, ...] = LOOKS) -> int:
    """The critical count for a comparison of ``n`` rounds in a question of ``contenders``: its look's (a question
    stopped at a look), else the count at the same per-look level (a budget or a cap that ended it between looks)."""
    if contenders < 2 or n < 1:
        return 0
    if n in looks:
        return critical_counts(contenders, looks)[looks.index(n)]
    return critical_count(n, look_level(contenders, looks))


def first_interval_look(contenders: int, looks: tuple[int, ...] = LOOKS) -> int | None:
    """The first look at which a question of ``contenders`` has an interval (a critical count above 0): 8 rounds for
    two, 12 for three to six; None where no look has one."""
    return next((n for n, k in zip(looks, critical_counts(contenders, looks), strict=True) if k > 0), None)


def versus_leader(leader: np.ndarray, other: np.ndarray, contenders: int, higher: bool = False) -> TwoSample:
    """``other`` against the leader from their values in the same rounds (positive numbers, round by round): the HL
    ratio other/leader with the exact interval at the level of a question of ``contenders``
    (:func:`rounds_count`), as the ranking's ``TwoSample`` (``paired``; n_a = n_b = the rounds)."""
    d = np.log(np.asarray(other, dtype=float)) - np.log(np.asarray(leader, dtype=float))
    n = len(d)
    k = rounds_count(n, contenders)
    if n == 0:
        return TwoSample(math.nan, math.nan, math.nan, 0, 0, None, higher, paired=True)
    iv = paired_interval(d, k)
    if k == 0:
        return TwoSample(iv.ratio, math.nan, math.nan, n, n, None, higher, paired=True)
    return TwoSample(iv.ratio, iv.lo, iv.hi, n, n, bool(iv.lo > 1 or iv.hi < 1), higher, iv.coverage, paired=True)


__all__ = ["ALPHA", "LOOKS", "MARGIN", "Answer", "Look", "PairedInterval", "critical_count", "critical_counts",
           "family_rate", "first_interval_look", "look", "look_level", "paired_interval", "rounds_count",
           "signed_rank_cdf", "versus_leader", "walsh_averages"]
