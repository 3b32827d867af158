"""The one ranking rule every chapter states its answers with: against the leader, among equals.

Within a group of equals (``EQUALS``: the same codec, bytes, fsync policy, writer fsyncs, cutout kind, cache
state and dataset), only rows with status ``ok`` whose verification did not fail count. The leader is the
best median; every other entry is stated against the leader (never against its neighbour): its factor to the
leader with the 95% interval of ``stats.two_sample`` and whether it is separable from the leader. The leader
is the winner only when every other entry is separable from it; otherwise the verdict is
:attr:`Verdict.NO_WINNER`, with the entries not separable from it. Below ``MIN_RANK_N`` iterations:
:attr:`Verdict.TOO_FEW`. Reads are named by the library that read (``read_by``) and the layout, where recorded. The
words are in :mod:`.words`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import pandas as pd

from benchmarks_lib.base.stats import MIN_RANK_N, TwoSample, median_ci, two_sample


class Verdict(StrEnum):
    """What the rule says of a group: the one status type of every page, ``iobench advise`` and ``compare``."""

    #: one contender: nothing to rank it against
    ALONE = "alone"
    #: the best median is separable from every other contender
    WINNER = "winner"
    #: some contender is not separable from the best median
    NO_WINNER = "no separable winner"
    #: a comparison had fewer than ``MIN_RANK_N`` iterations
    TOO_FEW = "too few"
    #: every other contender lies within the practical margin of the leader: equivalent for practical purposes
    EQUIVALENT = "equivalent"


#: what a group of equals holds fixed besides the codec (the ones recorded in the rows)
EQUALS = ("nbytes", "fsync_included", "writer_fsyncs", "cutout_kind", "cache_state", "dataset")


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

    @property
    def tied(self) -> tuple[Entry, ...]:
        """The entries not separable from the leader."""
        return tuple(e for e in self.others if e.vs_leader is not None and e.vs_leader.separable is False)

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
        return Verdict.TOO_FEW if self.too_few_n is not None else Verdict.WINNER

    @property
    def winner(self) -> Entry | None:
        return self.leader if self.status is Verdict.WINNER else None


def rank_samples(samples: Mapping[str, Iterable[float]], higher: bool, key: dict | None = None,
                 rows: Mapping[str, pd.DataFrame] | None = None, unverified: Sequence[str] = ()) -> Ranking:
    """The rule for named samples: the best median leads, every other sample is compared with it."""
    points = []
    for name, values in samples.items():
        v = np.asarray([x for x in np.asarray(values, dtype=float) if np.isfinite(x)])
        if v.size:
            points.append((name, v, *median_ci(v)))
    points.sort(key=lambda p: -p[2] if higher else p[2])
    frames = rows or {}
    entries = []
    for i, (name, v, med, lo, hi, n) in enumerate(points):
        vs = two_sample(points[0][1], v, higher=higher) if i else None
        entries.append(Entry(name, v, med, lo, hi, n, vs, frames.get(name, pd.DataFrame())))
    return Ranking(tuple(entries), higher, dict(key or {}), tuple(unverified))


def countable(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows that may rank: status ``ok`` and a verification that did not fail."""
    rows = rows[rows["status"] == "ok"] if "status" in rows else rows
    if "verified" in rows:
        rows = rows[~rows["verified"].astype("boolean").eq(False).fillna(False)]
    return rows


def failed_verification(rows: pd.DataFrame, names: pd.Series) -> list[str]:
    """The names whose ok rows include a failed verification (sorted)."""
    if "verified" not in rows:
        return []
    bad = rows["verified"].astype("boolean").eq(False).fillna(False) & (rows.get("status", "ok") == "ok")
    return sorted(set(names[bad].astype(str)))


def entry_names(rows: pd.DataFrame) -> pd.Series:
    """What a row's contender is called: its backend; for a read, the library that read it (``read_by``) with
    the writer's name where another library wrote the store, and the layout where recorded."""
    names = rows["backend"].astype(str)
    if "read_by" in rows:
        by = rows["read_by"].astype("string")
        is_read = by.notna() & rows["operation"].astype(str).str.startswith("read")
        other = is_read & (by != names)
        names = names.where(~is_read, by.fillna("").astype(str))
        names = names.where(~other, names + " (reading " + rows["backend"].astype(str) + "'s store)")
    if "layout" in rows and rows["layout"].nunique() > 1:
        layout = rows["layout"].astype("string")
        has = layout.notna() & rows["operation"].astype(str).str.startswith("read")
        names = names.where(~has, names + ", " + layout.fillna("").astype(str))
    return names


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
    rows = _normalized(rows)
    keys = list(keys) if keys is not None else ["codec", *(k for k in EQUALS if k in rows)]
    named = rows.assign(_entry=names(rows))
    by_size = largest_shared_size and "nbytes" in keys
    outer = [k for k in keys if k != "nbytes"] if by_size else keys
    out = []
    for key, group in (named.groupby(outer, dropna=False, sort=True) if outer else [((), named)]):
        key = dict(zip(outer, key if isinstance(key, tuple) else (key,), strict=True))
        if by_size:
            group, size = _largest_shared(group)
            key["nbytes"] = size
        out.append(_rank_group(group, value, higher, key))
    return [r for r in out if r.entries]


def _normalized(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows.assign(codec=rows["codec"].fillna("none") if "codec" in rows else "none")
    for col in ("fsync_included", "writer_fsyncs"):
        if col in rows:
            rows = rows.assign(**{col: rows[col].astype("boolean")})
    return rows


def _largest_shared(group: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """The rows of the largest size at least two contenders finished (else of the largest size)."""
    counts = group.groupby("nbytes", dropna=False)["_entry"].nunique()
    shared = counts[counts >= 2]
    size = shared.index.max() if len(shared) else counts.index.max()
    return (group[group["nbytes"] == size] if not pd.isna(size) else group[group["nbytes"].isna()]), size


def _rank_group(group: pd.DataFrame, value: str, higher: bool, key: dict) -> Ranking:
    ok = countable(group)
    parts = {str(name): part for name, part in ok.groupby("_entry", sort=True)}
    return rank_samples({n: p[value].astype("float64") for n, p in parts.items()}, higher, key, parts,
                        failed_verification(group, group["_entry"]))


__all__ = ["EQUALS", "MIN_RANK_N", "Entry", "Ranking", "Verdict", "countable", "entry_names", "failed_verification",
           "rank_against_leader", "rank_samples"]
