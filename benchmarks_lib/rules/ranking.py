"""The one ranking rule every chapter states its answers with: against the leader, among equals.

Within a group of equals (``EQUALS``: the same codec, bytes, fsync policy, writer fsyncs, cutout kind, cache
state and dataset), only rows with status ``ok`` whose verification did not fail count. The leader is the
best median; every other entry is stated against the leader (never against its neighbour): its factor to the
leader with the 95% interval of ``stats.two_sample`` and whether it is separable from the leader. The leader
is the winner only when every other entry is separable from it; otherwise the text says "no separable winner"
and lists the entries not separable from it. Below ``MIN_RANK_N`` iterations: "too few iterations to rank
(n=k)". Reads are named by the library that read (``read_by``) and the layout, where recorded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.stats import CONFIDENCE, MIN_RANK_N, TwoSample, coverage, median_ci, two_sample

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
    def status(self) -> str:
        """``alone``, ``winner``, ``no separable winner`` or ``too few``."""
        if not self.others:
            return "alone"
        if self.tied:
            return "no separable winner"
        return "too few" if self.too_few_n is not None else "winner"

    @property
    def winner(self) -> Entry | None:
        return self.leader if self.status == "winner" else None


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


# -- the words --------------------------------------------------------------------------------------------


def number(value: float) -> str:
    """About three significant digits, never in exponent notation (1337, 596, 2.31, 0.0123)."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def value_text(entry: Entry, unit: str, scale: float = 1.0) -> str:
    """``0.1 [0.099, 0.101] GB/s (n=5, 94% interval)``: the entry's median with its interval and its coverage
    where that is below 95%."""
    text = f"{number(entry.median * scale)}"
    if np.isfinite(entry.lo) and np.isfinite(entry.hi):
        text += f" [{number(entry.lo * scale)}, {number(entry.hi * scale)}]"
        cover = coverage(entry.n)
        if cover < CONFIDENCE:
            return f"{text} {unit} (n={entry.n}, {math.floor(100 * cover + 0.5)}% interval)"
    return f"{text} {unit} (n={entry.n})"


def versus_text(entry: Entry, ranking: Ranking, worse: str = "slower") -> str:
    """``2.00x slower than a [1.98x, 2.02x], separable``: the entry against the leader, never its neighbour."""
    t = entry.vs_leader
    if t is None:
        return "the best median"
    factor, lo, hi = entry.factor(ranking.higher)
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if np.isfinite(lo) and np.isfinite(hi) else ""
    verdict = t.verdict()
    if t.separable is False:
        verdict = f"not separable from {md(ranking.leader.name)} (95% interval of the ratio includes 1)"
    return f"{factor:.2f}x {worse} than {md(ranking.leader.name)}{interval}, {verdict}"


def verdict_text(ranking: Ranking, what: str = "backends") -> str:
    """The group's verdict: the winner in bold, or "no separable winner" with the group, or too few iterations."""
    status, leader = ranking.status, md(ranking.leader.name)
    if status == "alone":
        return f"not ranked: no other of the {what} measured this on these terms"
    if status == "winner":
        return f"**{leader}** is the fastest of {len(ranking.entries)} {what}, separable from every other"
    if status == "too few":
        return f"too few iterations to rank (n={ranking.too_few_n}); the best median of {len(ranking.entries)} " \
               f"{what} is {leader}'s"
    tied = ", ".join(md(e.name) for e in ranking.tied)
    return (f"no separable winner among {len(ranking.entries)} {what}: not separable from the best median "
            f"({leader}): {tied}")


def answer_clause(r: Ranking, value: Callable[[Entry], str], what: str,
                  details: Callable[[Entry], Sequence[str]] = lambda e: ()) -> str:
    """The front page's clause for one group: ``**a** at 1.2 GB/s (...), the fastest of 3 writers, separable
    from every other (next: b, 1.50x slower [1.4x, 1.6x])``; "no separable winner among 3 writers: ..." with the
    entries not separable from the best median; "too few iterations to rank (n=2): ..."; a lone entry unranked."""
    best = r.leader
    extra = "; ".join(details(best))
    head = value(best) + (f" ({extra})" if extra else "")
    name = md(best.name)
    if r.status == "alone":
        return f"{name} at {head}, the only one of the {what} on these terms, so it is not ranked"
    if r.status == "winner":
        nxt = r.others[0]
        return (f"**{name}** at {head}, the fastest of {len(r.entries)} {what}, separable from every other "
                f"(next: {md(nxt.name)}, {_factor_only(nxt, r)})")
    if r.status == "too few":
        return f"too few iterations to rank (n={r.too_few_n}): the best median of {len(r.entries)} {what} is " \
               f"{name}'s, {head}"
    tied = ", ".join(f"{md(e.name)} ({_factor_only(e, r)})" for e in r.tied)
    return (f"no separable winner among {len(r.entries)} {what}: the best median is {name}'s, {head}; not "
            f"separable from it: {tied}")


def _factor_only(entry: Entry, r: Ranking, worse: str = "slower") -> str:
    factor, lo, hi = entry.factor(r.higher)
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if np.isfinite(lo) and np.isfinite(hi) else ""
    return f"{factor:.2f}x {worse}{interval}"


def change_text(t: TwoSample, better: str = "faster", worse: str = "slower") -> str:
    """What B did against A (``two_sample(a, b)`` of times): ``**4.0x faster** [3.9x, 4.1x], separable`` when
    separable, else the verdict alone (never a factor as a claim the data cannot make)."""
    if not t.separable:
        return t.verdict()
    gain = t.ratio < 1 if not t.higher else t.ratio > 1
    factor, lo, hi = (1 / t.ratio, 1 / t.hi, 1 / t.lo) if t.ratio < 1 else (t.ratio, t.lo, t.hi)
    return f"**{factor:.1f}x {better if gain else worse}** [{lo:.2f}x, {hi:.2f}x], separable"


def unverified_text(ranking: Ranking) -> str:
    """A clause naming the contenders left out because their verification failed ('' when none)."""
    if not ranking.unverified:
        return ""
    return f"; rows that failed verification are not ranked: {', '.join(map(md, ranking.unverified))}"


__all__ = ["EQUALS", "MIN_RANK_N", "Entry", "Ranking", "answer_clause", "change_text", "countable", "entry_names",
           "failed_verification", "number", "rank_against_leader", "rank_samples", "unverified_text", "value_text",
           "verdict_text", "versus_text"]
