"""The one ranking rule every chapter states its answers with: against the leader, among equals.

Within a group of equals (``EQUALS``: the same codec, bytes, fsync policy, writer fsyncs, cutout kind, cache
state and dataset), only rows with status ``ok`` whose verification did not fail count. The leader is the
best median; every other entry is stated against the leader (never against its neighbour): its factor to the
leader with its interval and whether it is separable from the leader. Rows measured in rounds (a ``round`` on
every row) are compared round by round (``base.paired``: exact signed-rank bounds at the level of the question's
looks and pairs); others by ``stats.two_sample`` (95%). A comparison whose whole interval lies within 1 +- ``MARGIN``
(5%) is equivalent, never separable. The leader is the winner only when every other entry is separable from it;
when the rest are equivalent to it, :attr:`Verdict.EQUIVALENT`; otherwise :attr:`Verdict.NO_WINNER`, with the
entries not separable from it. Below ``MIN_RANK_N`` iterations (or rounds too few for an interval):
:attr:`Verdict.TOO_FEW`. Reads are named by the library that read (``read_by``) and the layout, where recorded. The
words are in :mod:`.words`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np
import pandas as pd

from benchmarks_lib.base.paired import versus_leader
from benchmarks_lib.base.stats import MIN_RANK_N, TwoSample, median_ci, two_sample
from benchmarks_lib.records.questions import (
    EQUALS,
    countable,
    entry_names,
    equals_keys,
    failed_verification,
    per_round,
    question_groups,
)


class Verdict(StrEnum):
    """What the rule says of a group: the one status type of every page, ``iobench advise`` and ``compare``."""

    #: one contender: nothing to rank it against
    ALONE = "alone"
    #: the best median is separable from every other contender
    WINNER = "winner"
    #: some contender is not separable from the best median
    NO_WINNER = "no separable winner"
    #: a comparison had fewer than ``MIN_RANK_N`` iterations (or too few rounds for an interval)
    TOO_FEW = "too few"
    #: every contender not separable from the leader is within the margin of it: equivalent for practical purposes
    EQUIVALENT = "equivalent"


@dataclass(frozen=True, eq=False)
class Entry:
    """One contender of a group: its name (a record string: escape it), iterations, median interval and rows."""

    name: str
    values: np.ndarray
    median: float
    lo: float
    hi: float
    n: int
    vs_leader: TwoSample | None = None  # None for the leader itself
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)

    def factor(self, higher: bool) -> tuple[float, float, float]:
        """``(factor, lo, hi)``: how many times worse than the leader (>= 1 at the median), with its interval."""
        t = self.vs_leader
        if t is None:
            return 1.0, 1.0, 1.0
        return (1 / t.ratio, 1 / t.hi, 1 / t.lo) if higher else (t.ratio, t.lo, t.hi)


@dataclass(frozen=True, eq=False)
class Ranking:
    """A group of equals ranked against its leader: ``entries`` best median first."""

    entries: tuple[Entry, ...]
    higher: bool
    key: dict = field(default_factory=dict)
    #: names whose rows failed verification: never ranked
    unverified: tuple[str, ...] = ()

    @property
    def leader(self) -> Entry:
        return self.entries[0]

    @property
    def others(self) -> tuple[Entry, ...]:
        return self.entries[1:]

    #: from per-round pairs (rows measured in rounds: ``base.paired``), else the two-sample rule
    paired: bool = False
    #: why its rounds stopped ("separated at round 12", "budget spent at round 8"); "" when not measured in rounds
    why: str = ""
    #: names measured in fewer of its rounds than the others (left out for the budget, or ended by a failure): not
    #: ranked, since they cannot be paired on the same rounds
    fewer_rounds: tuple[str, ...] = ()

    @property
    def tied(self) -> tuple[Entry, ...]:
        """The entries not separable from the leader, and not shown equivalent to it either."""
        return tuple(e for e in self.others if e.vs_leader is not None and e.vs_leader.separable is False
                     and not e.vs_leader.equivalent)

    @property
    def equivalent(self) -> tuple[Entry, ...]:
        """The entries equivalent to the leader: the whole interval within 1 +- ``MARGIN``."""
        return tuple(e for e in self.others if e.vs_leader is not None and e.vs_leader.equivalent)

    @property
    def too_few_n(self) -> int | None:
        """The smallest n of a comparison with too few iterations (None when every comparison had enough)."""
        ns = [min(e.vs_leader.n_a, e.vs_leader.n_b) for e in self.others
              if e.vs_leader is not None and e.vs_leader.separable is None]
        return min(ns) if ns else None

    @property
    def status(self) -> Verdict:
        """The rule's verdict on the group."""
        if not self.others:
            return Verdict.ALONE
        if self.tied:
            return Verdict.NO_WINNER
        if self.too_few_n is not None:
            return Verdict.TOO_FEW
        return Verdict.EQUIVALENT if self.equivalent else Verdict.WINNER

    @property
    def winner(self) -> Entry | None:
        return self.leader if self.status is Verdict.WINNER else None


def rank_samples(samples: Mapping[str, Iterable[float]], higher: bool, key: dict | None = None,
                 rows: Mapping[str, pd.DataFrame] | None = None, unverified: Sequence[str] = (),
                 rounds: Mapping[str, Mapping[int, float]] | None = None, why: str = "") -> Ranking:
    """The rule for named samples: the best median leads, every other sample is compared with it.

    With ``rounds`` (each name's value per round, all measured in the same rounds in a shuffled order), the values
    ranked are the per-round ones and each comparison is paired round by round (``base.paired.versus_leader``);
    otherwise it is the two-sample rule (``stats.two_sample``). Either way a comparison whose whole interval lies
    within 1 +- ``MARGIN`` is equivalent, not separable."""
    paired = rounds is not None and len(rounds) >= 2
    if paired:
        shared = sorted(set.intersection(*(set(v) for v in rounds.values())))
        samples = {name: [rounds[name][r] for r in shared] for name in rounds}
    points = []
    for name, values in samples.items():
        v = np.asarray([x for x in np.asarray(values, dtype=float) if np.isfinite(x)])
        if v.size:
            points.append((name, v, *median_ci(v)))
    points.sort(key=lambda p: -p[2] if higher else p[2])
    frames = rows or {}
    entries = []
    for i, (name, v, med, lo, hi, n) in enumerate(points):
        vs = None
        if i:
            vs = versus_leader(points[0][1], v, len(points), higher) if paired \
                else two_sample(points[0][1], v, higher=higher)
            if vs.separable is not None and vs.within():
                vs = replace(vs, separable=False, equivalent=True)
        entries.append(Entry(name, v, med, lo, hi, n, vs, frames.get(name, pd.DataFrame())))
    return Ranking(tuple(entries), higher, dict(key or {}), tuple(unverified), paired, why)


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
    unverified = failed_verification(group, group["_entry"])
    paired = per_round(parts, value)
    rounds, why, fewer = None, "", ()
    if paired is not None:
        rounds, fewer = paired
        parts = {n: p for n, p in parts.items() if n not in fewer}
        ranked = ok[ok["_entry"].astype(str).isin(list(parts))]
        stops = ranked["rounds_stop"].dropna().astype(str).unique() if "rounds_stop" in ranked else []
        n = len(set.intersection(*(set(v) for v in rounds.values())))
        why = "; ".join(sorted(stops)) if len(stops) else f"{n} rounds"
    ranking = rank_samples({n: p[value].astype("float64") for n, p in parts.items()}, higher, key, parts, unverified,
                           rounds, why)
    return replace(ranking, fewer_rounds=tuple(fewer)) if fewer else ranking


__all__ = ["EQUALS", "MIN_RANK_N", "Entry", "Ranking", "Verdict", "countable", "entry_names", "failed_verification",
           "rank_against_leader", "rank_samples"]
