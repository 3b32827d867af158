"""The one rule: how a question measured in rounds is decided, and the words that say what it decided.

A *question* compares K contenders measured in the same rounds, each round in a fresh random order (``run.rounds``).
:func:`decide` takes each contender's time per round (lower is better; NaN for a round it missed) and replays the
looks (:data:`LOOKS`) in order, as the runner makes them:

- At a look, the *paired leader* is the contender whose worst Hodges-Lehmann shift against every other still in the
  question is the smallest (the median of the per-round log ratios' Walsh averages); every other contender is
  compared with it alone (K-1 comparisons, never all pairs) by its per-round log ratios ``log(t_other / t_leader)``:
  the Hodges-Lehmann ratio and the exact Wilcoxon signed-rank interval at this look's critical count.
- The critical counts (:func:`critical_counts`) spend ``ALPHA / K`` one-sided per comparison over the looks up to
  the cap (:func:`spending`: linear in the rounds, the first look at least a Pocock-type share), found on the
  exact null distribution of the signed-rank statistic (the first look) and on null paths (the later ones). Naming a
  false leader needs some comparison of a fixed pair to reject in the wrong direction, so its chance is at most
  ``K * ALPHA / K = ALPHA`` (Hsu's argument for comparisons with the best); with the order of each round random the
  per-round log ratios are symmetric about their shift under any drift, so this holds whatever the host does. Six
  contenders still have an interval at the first look.
- A contender separated from the leader (its whole interval above 1) leaves the question at that look (a race:
  "out at round 8, 1.40x slower"); the rounds go to the contenders still close. The leader of a later look is
  compared with those still in; it is faster than those that left by transitivity.
- The question stops at the first look where: every other contender's interval lies above 1 (a leader is named:
  :attr:`Verdict.WINNER` when every one lies above ``1 + MARGIN``, else :attr:`Verdict.LEADER`, a lead that may be
  inside the margin); or every interval lies within ``1 +- MARGIN`` (:attr:`Verdict.EQUIVALENT`); at the cap
  otherwise, a :attr:`Verdict.TIE`. Before that the question is :attr:`Verdict.OPEN`.
- Each interval's coverage over every look is at least ``1 - 2 * ALPHA / K`` for its pair (95% for two contenders):
  :attr:`Decision.coverage`, the figure the pages state.

The decision is made once, at the run (``run.rounds`` records it in ``run.json``); a page that reads rows measured
in rounds replays the same looks with this same function and so prints the same decision. The words of every
verdict are here (:meth:`Decision.text`); record strings in them go through the caller's ``escape``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path

import numpy as np

#: the rounds after which a question is looked at, over every build that continues it (``run.continuation``)
LOOKS = (8, 12, 16, 20, 24, 28, 32, 36, 40)
#: the cap of rounds over all builds: a question still undecided here is a tie
CAP = LOOKS[-1]
#: the rounds one build without a time budget measures at most (a question undecided there stays open, for a later
#: build to go on with), and the rounds over which ``spending`` spends most of the error
BUILD_ROUNDS = 20
#: the share of each comparison's error kept for the looks past one build's rounds (``spending``)
LATER_SHARE = 0.2
#: the chance of naming a false leader (or a false "equivalent") allowed per question, over all its looks
ALPHA = 0.05
#: the practical margin: a lead within 5% is never a winner
MARGIN = 0.05
#: null paths for the later looks' critical counts (the first look's are exact)
NULL_PATHS = 200_000

Escape = Callable[[str], str]


def _plain(text: str) -> str:
    return text


class Verdict(StrEnum):
    """What the rule decided of a question: the one status type of every page, ``iobench advise`` and ``show``."""

    #: a leader named, every other contender more than the margin slower
    WINNER = "winner"
    #: a leader named, faster than every other, but a lead may be within the margin
    LEADER = "leader"
    #: every contender still in the question within the margin of the leader
    EQUIVALENT = "equivalent"
    #: the cap reached with none of the above
    TIE = "tie"
    #: not decided yet: fewer rounds than a decision needs (a build ended by its budget, or rows below a look)
    OPEN = "open"
    #: one contender: nothing to compare
    ALONE = "alone"

    @property
    def named(self) -> bool:
        """True where the verdict names a leader."""
        return self in (Verdict.WINNER, Verdict.LEADER)

    @property
    def picks(self) -> bool:
        """True where the verdict decides what the question picks: a leader named, or its contenders within the
        margin of each other (never re-opened; two machines that reach different ones differ, each holding its 5%)."""
        return self.named or self is Verdict.EQUIVALENT


# -- the signed-rank statistic and its critical counts -----------------------------------------------------------
@cache
def signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t) for t = 0 .. n(n+1)/2, T+ the signed-rank statistic of n untied values under the null (each
    rank's sign a fair coin): the counts of subsets of {1..n} by their sum, over 2^n."""
    counts = np.zeros(n * (n + 1) // 2 + 1, dtype=np.float64)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return np.cumsum(counts) / 2.0**n


def critical_count(n: int, one_sided: float) -> int:
    """k: the largest count with P(T+ <= k - 1) <= ``one_sided`` (0 where no interval exists at that level). The
    interval is the k-th smallest to the k-th largest Walsh average; its lower bound lies above 0 exactly when
    T+ >= n(n+1)/2 - k + 1."""
    if n < 1:
        return 0
    return int(np.searchsorted(signed_rank_cdf(n), one_sided, side="right"))


def spending(n: int, cap: int = CAP, first: int = LOOKS[0]) -> float:
    """The share of a comparison's error spent by round ``n`` of a question capped at ``cap`` rounds: over one
    build's rounds (``BUILD_ROUNDS``) linear in the rounds, but at least the share of Lan-DeMets' Pocock-type
    function at the first look (so that six contenders have an interval there; what the first look does not use is
    carried to the later ones); past them, ``LATER_SHARE`` kept for the looks of the builds that continue, spent
    linearly up to the cap. A cap within one build's rounds spends as that build's does (so that a run with fewer
    rounds is decided as before). Within one build, simulated against the Pocock-type function throughout: a true
    1.15x at 10% CV is found 96.4% against 95.3% of the time with two contenders, 82% against 80% with four, false
    leaders unchanged."""
    build = min(cap, BUILD_ROUNDS)
    floor = math.log(1 + (math.e - 1) * min(1.0, first / build))
    if cap <= BUILD_ROUNDS:
        return max(min(1.0, n / cap), floor)
    if n <= build:
        return max((1 - LATER_SHARE) * n / build, floor)
    return min(1.0, 1 - LATER_SHARE + LATER_SHARE * (n - build) / (cap - build))


def looks_to(cap: int, looks: Sequence[int] = LOOKS) -> tuple[int, ...]:
    """The looks a question capped at ``cap`` rounds spends its error over: those up to the cap, or up to one
    build's rounds for a smaller cap (whose question ends there, a tie)."""
    return tuple(look for look in looks if look <= max(cap, BUILD_ROUNDS))


@cache
def _null_statistics(looks: tuple[int, ...], paths: int, seed: int) -> np.ndarray:
    """T+ at each look for ``paths`` null paths (continuous values with random signs): shape (paths, len(looks))."""
    rng = np.random.default_rng(seed)
    values = rng.random((paths, looks[-1]))
    positive = rng.random((paths, looks[-1])) < 0.5
    out = np.empty((paths, len(looks)), dtype=np.int64)
    for column, n in enumerate(looks):
        ranks = np.empty((paths, n), dtype=np.int64)  # each value's rank among the first n of its path
        np.put_along_axis(ranks, values[:, :n].argsort(axis=1), np.arange(1, n + 1), axis=1)
        out[:, column] = (ranks * positive[:, :n]).sum(axis=1)
    return out


def rejections(counts: Sequence[int], looks: Sequence[int], stats: np.ndarray) -> np.ndarray:
    """Per null path, whether a comparison with critical ``counts`` at ``looks`` rejects (one side: the other
    slower) at some look, on ``stats`` (T+ per path and look)."""
    out = np.zeros(len(stats), dtype=bool)
    for column, (n, k) in enumerate(zip(looks, counts, strict=True)):
        if k:
            out |= stats[:, column] >= n * (n + 1) // 2 - k + 1
    return out


@cache
def _source_digest() -> str:
    """This module's own digest: a stored critical count (``base.memo``) is one this code computed."""
    import hashlib

    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


@cache
def critical_counts(contenders: int, looks: tuple[int, ...] = LOOKS, cap: int = CAP,
                    paths: int = NULL_PATHS) -> tuple[int, ...]:
    """The critical count at each look for a question of ``contenders``: at each look the largest count whose
    one-sided error over the looks so far stays within ``spending(n) * ALPHA / contenders`` (the first look's
    exact, the later ones' increments measured on ``paths`` null paths less two standard errors). Computed once
    per machine (a few seconds: every process that decides, each notebook's kernel and each run, would pay them)
    and kept in iobench's cache (``base.memo``), under this module's digest."""
    if contenders < 2:
        raise ValueError(f"contenders {contenders!r}: a comparison needs at least 2")
    from benchmarks_lib.base.memo import memo

    def valid(found: object) -> bool:
        return isinstance(found, list) and len(found) == len(looks) and all(
            type(k) is int and 0 <= k <= n * (n + 1) // 2 for k, n in zip(found, looks, strict=False))

    key = f"{_source_digest()}:{contenders}:{','.join(map(str, looks))}:{cap}:{paths}"
    return tuple(memo("critical-counts", key, lambda: list(_critical_counts(contenders, looks, cap, paths)), valid))


def _critical_counts(contenders: int, looks: tuple[int, ...], cap: int, paths: int) -> tuple[int, ...]:
    """:func:`critical_counts`, computed."""
    budget = ALPHA / contenders
    stats = _null_statistics(tuple(looks), paths, 0)
    counts: list[int] = []
    first_exact = 0.0
    for column, n in enumerate(looks):
        target = budget * spending(n, cap, looks[0])
        if column == 0:
            k = critical_count(n, target)
            first_exact = float(signed_rank_cdf(n)[k - 1]) if k else 0.0
            counts.append(k)
            continue
        k = critical_count(n, target)
        # the paths rejected after the first look: those a look between it and this one rejects, and those this
        # look's count k adds (T+ >= n(n+1)/2 - k + 1 among the rest), counted on the sorted T+ of the rest (the
        # same rates as testing every k on every path, at a search's cost)
        first = rejections(counts[:1], looks[:1], stats[:, :1])
        earlier = rejections(counts, looks[:column], stats[:, :column])
        already = int((earlier & ~first).sum())
        rest = np.sort(stats[~earlier & ~first, column])
        while k > 0:
            added = len(rest) - int(np.searchsorted(rest, n * (n + 1) // 2 - k + 1, side="left"))
            rate = (already + added) / len(stats)
            if first_exact + rate + 2 * math.sqrt(max(rate, 1 / paths) / paths) <= target:
                break
            k -= 1
        counts.append(k)
    return tuple(counts)


def level_at(contenders: int, n: int, looks: tuple[int, ...] = LOOKS, cap: int = CAP) -> int:
    """The critical count for a comparison over ``n`` paired rounds of a question capped at ``cap``: its look's;
    between looks (a contender that missed rounds, a build ended by its budget) the count at the one-sided level of
    the last look at or below n (the first look's below it)."""
    looks = looks_to(cap, looks)
    counts = critical_counts(contenders, looks, max(cap, BUILD_ROUNDS))
    if n in looks:
        return counts[looks.index(n)]
    at = max((i for i, look in enumerate(looks) if look <= n), default=0)
    k, base = counts[at], looks[at]
    level = float(signed_rank_cdf(base)[k - 1]) if k else 0.0
    return critical_count(n, level) if level else 0


@cache
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i <= j of n values (``np.triu_indices``), made once per n: a decision replays many looks."""
    i, j = np.triu_indices(n)
    i.setflags(write=False)
    j.setflags(write=False)
    return i, j


def walsh_averages(d: np.ndarray) -> np.ndarray:
    """The Walsh averages of ``d`` ((d_i + d_j) / 2 for every i <= j), sorted."""
    d = np.asarray(d, dtype=float)
    i, j = _pairs(len(d))
    return np.sort((d[i] + d[j]) / 2)


def _median_sorted(w: np.ndarray) -> float:
    """The median of the sorted ``w`` (what ``np.median`` gives, without sorting again)."""
    half = len(w) // 2
    return float(w[half]) if len(w) % 2 else float((w[half - 1] + w[half]) / 2)


# -- a decision --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """A contender against the paired leader: the ratio of its time to the leader's (Hodges-Lehmann) with its
    interval (NaN bounds where no interval exists yet), the rounds paired, and the round it left the question
    (``out``: its whole interval lay above 1, separated from the leader; None while it stayed in)."""

    name: str
    ratio: float
    lo: float
    hi: float
    rounds: int
    versus: str
    out: int | None = None

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    def record(self) -> dict:
        return {"name": self.name, "ratio": _num(self.ratio), "lo": _num(self.lo), "hi": _num(self.hi),
                "rounds": self.rounds, "versus": self.versus, "out": self.out}


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` decided of one question (see the module's docstring)."""

    verdict: Verdict
    #: the rounds at which the question ended (its deciding look, the cap), or the rounds it has while open
    stops: int
    #: the paired leader at the stop ('' for a lone or empty question); named only where ``verdict.named``
    best: str
    #: every other contender against ``best`` (or against the leader it left the question under), closest first
    comparisons: tuple[Comparison, ...]
    contenders: tuple[str, ...]
    #: each interval's coverage over every look (1 - 2 ALPHA / K)
    coverage: float
    higher: bool = False
    margin: float = MARGIN
    cap: int = CAP
    looks: tuple[int, ...] = LOOKS

    @property
    def leader(self) -> str | None:
        """The leader named: faster than every other contender, every interval on the right side of 1."""
        return self.best if self.verdict.named else None

    @property
    def decided(self) -> bool:
        return self.verdict not in (Verdict.OPEN, Verdict.ALONE)

    @property
    def ratios(self) -> dict[str, tuple[float, float, float]]:
        """Each other contender's (ratio, lo, hi) to the leader (its time over the leader's)."""
        return {c.name: (c.ratio, c.lo, c.hi) for c in self.comparisons}

    @property
    def within_margin(self) -> tuple[str, ...]:
        """The best and every contender still in whose whole interval lies within the margin above it (at most
        ``1 + margin`` times its time): the ones a reader may take instead at no practical cost."""
        near = [c.name for c in self.comparisons if c.out is None and c.has_interval and c.hi <= 1 + self.margin
                and c.lo >= 1 / (1 + self.margin)]
        return (self.best, *near) if self.best else ()

    @property
    def out(self) -> tuple[Comparison, ...]:
        return tuple(c for c in self.comparisons if c.out is not None)

    @property
    def runner_up(self) -> Comparison | None:
        """The closest other contender still in at the stop (else the closest that left)."""
        kept = [c for c in self.comparisons if c.out is None]
        return (kept or list(self.comparisons) or [None])[0]

    @property
    def words(self) -> str:
        return self.text()

    def text(self, escape: Escape = _plain) -> str:
        """The decision in one clause, the same on every page (``escape`` makes the record strings safe; plain text
        without one, Markdown with one)."""
        return decision_text(self, escape, markup=escape is not _plain)

    @property
    def would_need(self) -> str:
        """For a tie, about how many rounds a decision would need, in words (``; a decision would need about 400
        rounds``); for an open question past its first look with a comparison still without an interval, the look
        that gives the first one (``; with 9 contenders the first interval comes at round 12``: every comparison with
        the leader is paid for, so more contenders need more rounds; below the first look "open after 5 rounds" says
        it already); '' otherwise."""
        if self.verdict is Verdict.TIE:
            return _would_need(self)
        if self.verdict is Verdict.OPEN and self.stops >= self.looks[0] and any(not c.has_interval
                                                                                for c in self.comparisons):
            k = len(self.contenders)
            first = next((n for n in self.looks if n > self.stops and n <= self.cap
                          and level_at(k, n, self.looks, self.cap) > 0), None)
            if first is not None:
                return f"; with {k} contenders the first interval comes at round {first}"
        return ""

    def why(self) -> str:
        """Why it stopped, in words: ``decided at round 12``, ``cap of 20 rounds reached``, ``open after 9 rounds``."""
        if self.verdict is Verdict.ALONE:
            return "one contender"
        if self.verdict is Verdict.OPEN:
            return f"open after {self.stops} rounds"
        if self.verdict is Verdict.TIE:
            return f"cap of {self.stops} rounds reached"
        return f"decided at round {self.stops}"

    def record(self) -> dict:
        """The decision as ``run.json`` keeps it (numbers and names only, and its words)."""
        return {"verdict": str(self.verdict), "leader": self.leader, "best": self.best, "stops": self.stops,
                "contenders": list(self.contenders), "coverage": _num(self.coverage), "higher": self.higher,
                "margin": self.margin, "cap": self.cap, "looks": list(self.looks),
                "comparisons": [c.record() for c in self.comparisons], "words": self.words}


def _hl(d: np.ndarray) -> float:
    return _median_sorted(walsh_averages(d)) if len(d) else math.nan


def _compare(logs: Mapping[str, np.ndarray], name: str, leader: str, contenders: int,
             looks: tuple[int, ...], cap: int) -> Comparison:
    d = logs[name] - logs[leader]
    d = d[np.isfinite(d)]
    m = len(d)
    if m == 0:
        return Comparison(name, math.nan, math.nan, math.nan, 0, leader)
    walsh = walsh_averages(d)
    ratio = math.exp(_median_sorted(walsh))
    k = level_at(contenders, m, looks, cap)
    if k == 0 or k > len(walsh):
        return Comparison(name, ratio, math.nan, math.nan, m, leader)
    return Comparison(name, ratio, math.exp(walsh[k - 1]), math.exp(walsh[len(walsh) - k]), m, leader)


def _paired_leader(logs: Mapping[str, np.ndarray], active: Sequence[str]) -> str:
    """The contender whose worst Hodges-Lehmann shift against the others is the smallest (ties: by name)."""
    def worst(name: str) -> float:
        shifts = []
        for other in active:
            if other != name:
                d = logs[name] - logs[other]
                shifts.append(_hl(d[np.isfinite(d)]))
        finite = [s for s in shifts if math.isfinite(s)]
        return max(finite) if finite else math.inf
    return min(sorted(active), key=worst)


def decide(times: Mapping[str, Sequence[float]], higher: bool = False, looks: tuple[int, ...] = LOOKS,
           cap: int = CAP, margin: float = MARGIN) -> Decision:
    """Decide a question from each contender's value per round (equal lengths; NaN for a round a contender missed;
    times, lower better, unless ``higher``: then a throughput, higher better, compared as its inverse). Replays the
    looks up to the rounds given (see the module's docstring); rounds beyond the cap are not used."""
    lengths = {len(v) for v in times.values()}
    if len(lengths) > 1:
        raise ValueError(f"contenders measured in different numbers of rounds ({sorted(lengths)}): pad with NaN")
    n_rounds = min(lengths.pop() if lengths else 0, cap)
    logs: dict[str, np.ndarray] = {}
    for name, values in times.items():
        v = np.asarray(values, dtype=float)[:n_rounds]
        v = np.where(np.isfinite(v) & (v > 0), v, np.nan)
        if np.isfinite(v).any():
            logs[str(name)] = -np.log(v) if higher else np.log(v)
    names = tuple(sorted(logs))
    k_all = len(names)
    cover = 1 - 2 * ALPHA / k_all if k_all >= 2 else math.nan
    common = {"contenders": names, "coverage": cover, "higher": higher, "margin": margin, "cap": cap,
              "looks": tuple(looks)}
    if k_all < 2:
        return Decision(Verdict.ALONE, n_rounds, names[0] if names else "", (), **common)
    active = list(names)
    gone: dict[str, Comparison] = {}

    def state(n: int) -> tuple[str, list[Comparison]]:
        cut = {name: logs[name][:n] for name in names}
        leader = _paired_leader(cut, active)
        return leader, [_compare(cut, o, leader, k_all, tuple(looks), cap) for o in active if o != leader]

    def finish(verdict: Verdict, n: int, leader: str, kept: list[Comparison]) -> Decision:
        ordered = sorted(kept, key=lambda c: (c.ratio if math.isfinite(c.ratio) else math.inf, c.name))
        ordered += sorted(gone.values(), key=lambda c: (c.out or 0, c.ratio, c.name))
        return Decision(verdict, n, leader, tuple(ordered), **common)

    upper = 1 + margin
    # the looks the rounds reach, and the cap as the last look where a build's cap is not one of them
    for n in sorted({look for look in looks if look <= n_rounds} | ({n_rounds} if n_rounds >= cap else set())):
        leader, kept = state(n)
        intervals = all(c.has_interval for c in kept)
        if intervals and all(c.lo > 1 for c in kept):
            winner = all(c.lo > upper for c in kept) and all(c.lo > upper for c in gone.values())
            return finish(Verdict.WINNER if winner else Verdict.LEADER, n, leader, kept)
        if intervals and kept and all(1 / upper <= c.lo and c.hi <= upper for c in kept):
            return finish(Verdict.EQUIVALENT, n, leader, kept)
        if n >= cap:
            return finish(Verdict.TIE, n, leader, kept)
        for c in kept:  # the race: a contender separated from the leader leaves the question
            if c.has_interval and c.lo > 1:
                gone[c.name] = Comparison(c.name, c.ratio, c.lo, c.hi, c.rounds, c.versus, out=n)
                active.remove(c.name)
    leader, kept = state(n_rounds)
    return finish(Verdict.OPEN, n_rounds, leader, kept)


# -- the words ---------------------------------------------------------------------------------------------------
def ratio_text(ratio: float, lo: float, hi: float) -> str:
    """``1.40x slower [1.20x, 1.60x]`` (``faster`` below 1, its interval turned the same way; ``1.00x`` at 1)."""
    if not math.isfinite(ratio):
        return "no ratio"
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if math.isfinite(lo) and math.isfinite(hi) else " (no interval yet)"
    if ratio >= 1:
        return f"{ratio:.2f}x slower{interval}"
    flipped = f" [{1 / hi:.2f}x, {1 / lo:.2f}x]" if math.isfinite(lo) and math.isfinite(hi) and lo > 0 else interval
    return f"{1 / ratio:.2f}x faster{flipped}"


def _percent(x: float) -> str:
    return f"{100 * (x - 1):.0f}%"


def names_text(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _out_text(d: Decision, escape: Escape) -> str:
    gone = d.out
    if not gone:
        return ""
    parts = [f"{escape(c.name)} {ratio_text(c.ratio, c.lo, c.hi)} at round {c.out}" for c in gone]
    return f"; out: {'; '.join(parts)}"


def _would_need(d: Decision) -> str:
    """For a tie: about how many rounds a decision would need (``; a decision would need about 400 rounds``), the
    interval narrowing as one over the root of the rounds until it lies on one side of 1 (the ratio as measured) or
    within the margin, whichever comes first ('' where the interval says nothing of it)."""
    nxt = d.runner_up
    if nxt is None or not nxt.has_interval or not math.isfinite(nxt.ratio) or nxt.lo <= 0 or d.stops < 1:
        return ""
    half, shift, margin = math.log(nxt.hi / nxt.lo) / 2, abs(math.log(nxt.ratio)), math.log1p(d.margin)
    needs = [d.stops * (half / gap) ** 2 for gap in (shift, margin - shift) if gap > 0 and half > 0]
    rounds = min(needs, default=math.inf)
    return f"; a decision would need about {_round_up(rounds):,} rounds" if d.stops < rounds < 1e9 else ""


def _round_up(x: float) -> int:
    """``x`` rounded up to two significant figures (37 -> 37, 412 -> 420)."""
    step = 10 ** max(0, int(math.log10(x)) - 1)
    return int(math.ceil(x / step) * step)


def decision_text(d: Decision, escape: Escape = _plain, markup: bool = True) -> str:
    """The verdict in words: ``**a** fastest: b 1.40x slower [1.20x, 1.60x]``; ``**a** ahead of b by 3% [1%, 6%]:
    perhaps less than the 5% that matters``; ``equivalent: a and b within 5% (b 1.01x slower [0.98x, 1.03x])``;
    ``a tie: b 1.05x slower [0.96x, 1.39x], within 39% either way``; ``open after 9 rounds: ...`` (the leader in
    bold where ``markup``; a terminal's words have none)."""
    if d.verdict is Verdict.ALONE:
        return f"{escape(d.best)} alone: nothing to compare it with" if d.best else "nothing measured"
    best, nxt = escape(d.best), d.runner_up
    strong = f"**{best}**" if markup else best
    versus = f"{escape(nxt.name)} {ratio_text(nxt.ratio, nxt.lo, nxt.hi)}" if nxt is not None else ""
    out = _out_text(d, escape)
    pct = f"{MARGIN:.0%}" if d.margin == MARGIN else f"{d.margin:.0%}"
    if d.verdict is Verdict.WINNER:
        return f"{strong} fastest, by more than {pct}: {versus}{out}"
    if d.verdict is Verdict.LEADER:
        assert nxt is not None
        under = "less than" if nxt.hi <= 1 + d.margin else "perhaps less than"
        return (f"{strong} ahead of {escape(nxt.name)} by {_percent(nxt.ratio)} [{_percent(nxt.lo)}, "
                f"{_percent(nxt.hi)}]: {under} the {pct} that matters{out}")
    if d.verdict is Verdict.EQUIVALENT:
        kept = [escape(c.name) for c in d.comparisons if c.out is None]
        return f"equivalent: {names_text([best, *kept])} within {pct} of each other ({versus} than {best}){out}"
    wide = max([abs(math.log(x)) for c in d.comparisons if c.out is None and c.has_interval
                for x in (c.lo, c.hi)] or [math.nan])
    either = f", within {100 * (math.exp(wide) - 1):.0f}% either way" if math.isfinite(wide) else ""
    if d.verdict is Verdict.TIE:
        return f"a tie after {d.stops} rounds: {versus} than {best}{either}{d.would_need}{out}"
    first = next((look for look in d.looks if look > d.stops), None)
    more = f"; next look at round {first} (a later build goes on from here)" if first is not None else ""
    return f"open after {d.stops} rounds: {versus} than {best}{more}{out}" if versus else \
        f"open after {d.stops} rounds{more}"


def legend() -> str:
    """What each verdict means, for a page's key (Markdown)."""
    pct = f"{MARGIN:.0%}"
    return (f"*A winner*: faster than every other contender by more than {pct} (every interval of the ratio above "
            f"{1 + MARGIN:.2f}); *ahead*: faster than every other, but a lead may be under the {pct} that matters; "
            f"*equivalent*: every interval within {pct} of 1; *a tie*: the cap of {CAP} rounds reached with none of "
            f"these; *open*: not decided yet (a later build goes on). Each contender is compared with the leader "
            f"alone, round by round; each interval covers its ratio at every look with at least 95% for two "
            f"contenders ({100 * (1 - 2 * ALPHA / 4):.1f}% for four), and a false leader is named in at most "
            f"{ALPHA:.0%} of questions.")


def decision_from_record(record: Mapping) -> Decision | None:
    """A decision as ``run.json`` keeps it (data from a file: every field checked; None where it is not one)."""
    try:
        verdict = Verdict(str(record.get("verdict")))
        comps = tuple(Comparison(str(c["name"]), _float(c.get("ratio")), _float(c.get("lo")), _float(c.get("hi")),
                                 int(c.get("rounds") or 0), str(c.get("versus") or ""),
                                 int(c["out"]) if isinstance(c.get("out"), int) else None)
                      for c in record.get("comparisons") or [] if isinstance(c, Mapping))
        looks = tuple(int(x) for x in record.get("looks") or LOOKS)
        return Decision(verdict, int(record.get("stops") or 0), str(record.get("best") or ""), comps,
                        tuple(str(x) for x in record.get("contenders") or ()), _float(record.get("coverage")),
                        bool(record.get("higher")), _float(record.get("margin"), MARGIN),
                        int(record.get("cap") or CAP), looks)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError):
        return None


def _float(x: object, default: float = math.nan) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return default
    return float(x) if math.isfinite(x) else default


__all__ = ["ALPHA", "BUILD_ROUNDS", "CAP", "LATER_SHARE", "LOOKS", "MARGIN", "Comparison", "Decision", "Verdict",
           "critical_count", "critical_counts", "decide", "decision_from_record", "decision_text", "legend", "level_at",
           "looks_to", "names_text", "ratio_text", "rejections", "signed_rank_cdf", "spending", "walsh_averages"]
