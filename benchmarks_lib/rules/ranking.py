"""A group of equals ranked by the one rule (:mod:`.decision`): the decision, with each contender's rows.

Within a group of equals (``EQUALS``: the same codec, bytes, fsync policy, writer fsyncs, cutout kind, cache
state and dataset), only rows with status ``ok`` whose verification did not fail count. Each contender's value per
round (rows measured in rounds: a ``round`` on every row; others by their order, each iteration a round) goes to
:func:`.decision.decide`, which the runner called on the same rows when it measured them: so a page that ranks the
rows prints the decision the run made. A contender measured in fewer rounds (it left the question, or failed) is
compared on the rounds it has. Every other entry is stated against the paired leader (never its neighbour). Reads
are named by the library that read (``read_by``) and the layout, where recorded. The words are
:mod:`.decision`'s and :mod:`.words`'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchmarks_lib.base.stats import MIN_RANK_N, TwoSample, median_ci
from benchmarks_lib.records.questions import (
    BUILD_COLUMN,
    CAP_COLUMN,
    EQUALS,
    countable,
    entry_names,
    equals_keys,
    failed_verification,
    per_round,
    question_groups,
)
from benchmarks_lib.rules.decision import CAP, LOOKS, MARGIN, Comparison, Decision, Verdict, decide


@dataclass(frozen=True, eq=False)
class Entry:
    """One contender of a group: its name (a record string: escape it), its values, median interval and rows."""

    name: str
    values: np.ndarray
    median: float
    lo: float
    hi: float
    n: int
    vs_leader: TwoSample | None = None  # None for the leader itself
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: its comparison in the decision (None for the leader)
    comparison: Comparison | None = None

    def factor(self, higher: bool) -> tuple[float, float, float]:
        """``(factor, lo, hi)``: its time over the leader's (>= 1: slower), with its interval."""
        c = self.comparison
        if c is None:
            return 1.0, 1.0, 1.0
        return c.ratio, c.lo, c.hi


@dataclass(frozen=True, eq=False)
class Ranking:
    """A group of equals as decided: ``entries`` the paired leader first, then the others as the decision orders
    them (closest first, those that left the question last)."""

    entries: tuple[Entry, ...]
    higher: bool
    key: dict = field(default_factory=dict)
    #: names whose rows failed verification: never ranked
    unverified: tuple[str, ...] = ()
    #: from rows measured in rounds (else each iteration stood for a round)
    paired: bool = False
    decision: Decision | None = None

    @property
    def decided(self) -> bool:
        """The decision is made (a leader, equivalent or a tie); False while it is open. Without a decision: True."""
        return self.decision is None or self.decision.decided

    @property
    def builds(self) -> int:
        """How many builds measured its rounds (``BUILD_COLUMN``: a run that continued earlier builds carries their
        rows); 1 for a run of its own."""
        names: set[str] = set()
        for e in self.entries:
            rows = e.rows
            if BUILD_COLUMN in rows:
                names |= set(rows[BUILD_COLUMN].dropna().astype(str))
                if rows[BUILD_COLUMN].isna().any():
                    names.add("")
            elif len(rows):
                names.add("")
        return max(1, len(names))

    @property
    def leader(self) -> Entry:
        return self.entries[0]

    @property
    def others(self) -> tuple[Entry, ...]:
        return self.entries[1:]

    @property
    def why(self) -> str:
        """Why its rounds stopped, in words ('' without a decision)."""
        return self.decision.why() if self.decision is not None else ""

    @property
    def tied(self) -> tuple[Entry, ...]:
        """The entries still in the question whose interval reaches 1 and beyond the margin (not told apart)."""
        return tuple(e for e in self.others if e.comparison is not None and e.comparison.out is None
                     and not (e.vs_leader and (e.vs_leader.separable or e.vs_leader.equivalent)))

    @property
    def equivalent(self) -> tuple[Entry, ...]:
        """The entries within the margin of the leader (the whole interval within 1 +- ``MARGIN``)."""
        return tuple(e for e in self.others if e.vs_leader is not None and e.vs_leader.equivalent)

    @property
    def too_few_n(self) -> int | None:
        """The rounds of an open decision (None when decided)."""
        return self.decision.stops if self.decision is not None and self.status is Verdict.OPEN else None

    @property
    def status(self) -> Verdict:
        """The rule's verdict on the group."""
        return self.decision.verdict if self.decision is not None else Verdict.ALONE

    @property
    def winner(self) -> Entry | None:
        """The leader where the decision names one (a winner, or a leader whose lead may be within the margin)."""
        return self.leader if self.status.named else None


def _two_sample(c: Comparison, higher: bool, coverage: float) -> TwoSample:
    """A comparison as the pages' ``TwoSample`` (the value's ratio: for a throughput, the leader's time over its)."""
    ratio, lo, hi = (1 / c.ratio, 1 / c.hi, 1 / c.lo) if higher else (c.ratio, c.lo, c.hi)
    equivalent = bool(c.has_interval and c.lo >= 1 / (1 + MARGIN) and c.hi <= 1 + MARGIN)
    separable = None if not c.has_interval else bool(not equivalent and (c.lo > 1 or c.hi < 1))
    return TwoSample(ratio, lo, hi, c.rounds, c.rounds, separable, higher, coverage, equivalent, paired=True)


def rank_samples(samples: Mapping[str, Iterable[float]], higher: bool, key: dict | None = None,
                 rows: Mapping[str, pd.DataFrame] | None = None, unverified: Sequence[str] = (),
                 rounds: Mapping[str, Mapping[int, float]] | None = None, cap: int = CAP) -> Ranking:
    """The rule for named samples: :func:`.decision.decide` on each name's value per round (``rounds``: each
    name's value by round number, all measured in the same rounds in a shuffled order; without it each sample's
    values in their order, one per round), at the run's ``cap`` of rounds."""
    paired = rounds is not None and len(rounds) >= 2
    if paired:  # round r is the run's r-th round, as the runner asked the rule: a round none measured stays a gap
        numbers = range(max(max(v) for v in rounds.values()) + 1)
        series = {name: np.array([v.get(r, math.nan) for r in numbers], dtype=float) for name, v in rounds.items()}
    else:
        series = {name: np.asarray(list(values), dtype=float) for name, values in samples.items()}
        longest = max((len(v) for v in series.values()), default=0)
        series = {n: np.concatenate([v, np.full(longest - len(v), math.nan)]) for n, v in series.items()}
    series = {n: v for n, v in series.items() if np.isfinite(v).any()}
    if not series:
        return Ranking((), higher, dict(key or {}), tuple(unverified), paired)
    decision = decide(series, higher=higher, cap=cap)
    frames = rows or {}
    comps = {c.name: c for c in decision.comparisons}
    order = [decision.best, *(c.name for c in decision.comparisons)]
    entries = []
    for name in order:
        v = series[name][np.isfinite(series[name])]
        med, lo, hi, n = median_ci(v)
        c = comps.get(name)
        vs = _two_sample(c, higher, decision.coverage) if c is not None else None
        entries.append(Entry(name, v, med, lo, hi, n, vs, frames.get(name, pd.DataFrame()), c))
    return Ranking(tuple(entries), higher, dict(key or {}), tuple(unverified), paired, decision)


def rank_against_leader(rows: pd.DataFrame, value: str, higher: bool, keys: Sequence[str] | None = None,
                        names: Callable[[pd.DataFrame], pd.Series] = entry_names,
                        largest_shared_size: bool = True) -> list[Ranking]:
    """One ``Ranking`` of ``value`` per group of equals among ``rows`` (``raw``, the uncompressed baseline, and
    the ceiling left out). ``keys``: what makes equals (default: ``codec`` and the ``EQUALS`` recorded). With
    ``largest_shared_size``, per group only the largest ``nbytes`` that at least two contenders finished."""
    rows = rows[~rows["backend"].isin(["raw", "ceiling"])] if "backend" in rows else rows
    rows = rows.dropna(subset=[value]) if value in rows else rows.iloc[0:0]
    if rows.empty:
        return []
    keys = list(keys) if keys is not None else equals_keys(rows)
    by_size = largest_shared_size and "nbytes" in keys
    outer = [k for k in keys if k != "nbytes"] if by_size else keys
    out = []
    for key, group in question_groups(rows, outer, names):
        if by_size:
            group, size = _largest_shared(group)
            key["nbytes"] = size
        out.append(_rank_group(group, value, higher, key))
    return [r for r in out if r.entries]


def _largest_shared(group: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """The rows of the largest size at least two contenders finished (else of the largest size)."""
    counts = group.groupby("nbytes", dropna=False)["_entry"].nunique()
    shared = counts[counts >= 2]
    size = shared.index.max() if len(shared) else counts.index.max()
    return (group[group["nbytes"] == size] if not pd.isna(size) else group[group["nbytes"].isna()]), size


def _rank_group(group: pd.DataFrame, value: str, higher: bool, key: dict) -> Ranking:
    ok = countable(group)
    parts = {str(name): part for name, part in ok.groupby("_entry", sort=True)}
    return rank_parts(parts, value, higher, key, failed_verification(group, group["_entry"]))


def rank_parts(parts: Mapping[str, pd.DataFrame], value: str, higher: bool, key: dict | None = None,
               unverified: Sequence[str] = ()) -> Ranking:
    """The rule on each contender's countable rows (name -> rows, of one group of equals): by round where they were
    measured in rounds, else each iteration a round; at the cap the rows' run decided at (``CAP_COLUMN``, where
    they agree on one at or above the first look: below it the run looked at nothing, and the rows are open)."""
    rounds = per_round(parts, value)
    caps = {int(c) for p in parts.values() if CAP_COLUMN in p for c in pd.to_numeric(p[CAP_COLUMN], errors="coerce")
            .dropna() if LOOKS[0] <= c <= 10_000}
    return rank_samples({n: p[value].astype("float64") for n, p in parts.items()}, higher, key, parts, unverified,
                        rounds, caps.pop() if len(caps) == 1 else CAP)


__all__ = ["EQUALS", "MIN_RANK_N", "Decision", "Entry", "Ranking", "Verdict", "countable", "entry_names",
           "failed_verification", "rank_against_leader", "rank_parts", "rank_samples"]
