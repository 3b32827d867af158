"""The numbers in ``iobench advise``'s words: a median with its interval and n, and an entry against the best
(``chapters.ranking``'s rule), as plain text (record strings in them go through ``terminal.visible``)."""

from __future__ import annotations

import math

from benchmarks_lib.base.stats import CONFIDENCE, coverage
from benchmarks_lib.rules.ranking import Entry, Ranking, number


def value_words(entry: Entry, unit: str) -> str:
    """``0.92 [0.82, 1.4] ms per cutout (n=8)``: the median, its interval and n (its coverage where below 95%)."""
    scale, unit = (1e3, "ms per cutout") if unit == "s per cutout" else (1.0, unit)
    text = f"{number(entry.median * scale)}"
    if math.isfinite(entry.lo) and math.isfinite(entry.hi):
        text += f" [{number(entry.lo * scale)}, {number(entry.hi * scale)}]"
    cover = coverage(entry.n)
    note = "" if cover >= CONFIDENCE else f", {math.floor(100 * cover + 0.5)}% interval" if cover > 0 else \
        ", too few for an interval"
    return f"{text} {unit} (n={entry.n}{note})"


def versus_words(entry: Entry, ranking: Ranking, than: str = "the recommendation") -> str:
    """``1.53x worse than the recommendation [1.09x, 2.24x], separable``: against the leader, never a neighbour."""
    factor, lo, hi = entry.factor(ranking.higher)
    t = entry.vs_leader
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if math.isfinite(lo) and math.isfinite(hi) else ""
    verdict = "no interval" if t is None else t.verdict()
    return f"{factor:.2f}x worse than {than}{interval}, {verdict}"


__all__ = ["value_words", "versus_words"]
