"""The rule's words, the one place they are written: a median with its interval and n, an entry against the
leader, a group's verdict, the front page's clause, a change between runs. Record strings in them (the entries'
names) go through ``escape``: Markdown for the book (``markup.md``, the default), ``terminal.visible`` for the
terminal."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.stats import CONFIDENCE, MARGIN, TwoSample, coverage
from benchmarks_lib.rules.answers import Answer
from benchmarks_lib.rules.ranking import Entry, Ranking, Verdict

#: how a record string is made safe where the words are shown
Escape = Callable[[str], str]


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


def versus_text(entry: Entry, ranking: Ranking, worse: str = "slower", escape: Escape = md) -> str:
    """``2.00x slower than a [1.98x, 2.02x], separable``: the entry against the leader, never its neighbour."""
    t = entry.vs_leader
    if t is None:
        return "the best median"
    factor, lo, hi = entry.factor(ranking.higher)
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if np.isfinite(lo) and np.isfinite(hi) else ""
    verdict = t.verdict()
    if t.separable is False and not t.equivalent:
        verdict = f"not separable from {escape(ranking.leader.name)} (the interval of the ratio includes 1)"
    return f"{factor:.2f}x {worse} than {escape(ranking.leader.name)}{interval}, {verdict}"


def _too_few(ranking: Ranking) -> str:
    return f"too few {'rounds' if ranking.paired else 'iterations'} to rank (n={ranking.too_few_n})"


def _equivalent(ranking: Ranking, escape: Escape) -> str:
    """``a tie: a, b and c are equivalent (every interval within 5%)``, then the rest, separable from them."""
    names = [escape(ranking.leader.name), *(escape(e.name) for e in ranking.equivalent)]
    tie = f"{', '.join(names[:-1])} and {names[-1]}"
    rest = len(ranking.entries) - len(names)
    after = f"; the other {rest} are separable from them" if rest else ""
    return f"a tie: {tie} are equivalent (each interval within {MARGIN:.0%} of the best median){after}"


def why_text(ranking: Ranking) -> str:
    """`` (separated at round 12)``: why its rounds stopped, where measured in rounds ('' otherwise)."""
    return f" ({ranking.why})" if ranking.why else ""


def verdict_text(ranking: Ranking, what: str = "backends", escape: Escape = md) -> str:
    """The group's verdict: the winner in bold, or no separable winner with the group, or too few iterations; then
    why its rounds stopped, where measured in rounds."""
    return _verdict_text(ranking, what, escape) + why_text(ranking)


def _verdict_text(ranking: Ranking, what: str, escape: Escape) -> str:
    status, leader = ranking.status, escape(ranking.leader.name)
    if status is Verdict.ALONE:
        return f"not ranked: no other of the {what} measured this on these terms"
    if status is Verdict.WINNER:
        return f"**{leader}** is the fastest of {len(ranking.entries)} {what}, separable from every other"
    if status is Verdict.TOO_FEW:
        return f"{_too_few(ranking)}; the best median of {len(ranking.entries)} {what} is {leader}'s"
    if status is Verdict.EQUIVALENT:
        return _equivalent(ranking, escape)
    tied = ", ".join(escape(e.name) for e in ranking.tied)
    return (f"no separable winner among {len(ranking.entries)} {what}: not separable from the best median "
            f"({leader}): {tied}")


def answer_clause(r: Ranking, value: Callable[[Entry], str], what: str,
                  details: Callable[[Entry], Sequence[str]] = lambda e: (), escape: Escape = md) -> str:
    """The front page's clause for one group: ``**a** at 1.2 GB/s (...), the fastest of 3 writers, separable
    from every other (next: b, 1.50x slower [1.4x, 1.6x])``; "no separable winner among 3 writers: ..." with the
    entries not separable from the best median; "too few iterations to rank (n=2): ..."; a lone entry unranked;
    then why its rounds stopped, where measured in rounds."""
    return _answer_clause(r, value, what, details, escape) + why_text(r)


def _answer_clause(r: Ranking, value: Callable[[Entry], str], what: str, details: Callable[[Entry], Sequence[str]],
                   escape: Escape) -> str:
    best = r.leader
    extra = "; ".join(details(best))
    head = value(best) + (f" ({extra})" if extra else "")
    name = escape(best.name)
    if r.status is Verdict.ALONE:
        return f"{name} at {head}, the only one of the {what} on these terms, so it is not ranked"
    if r.status is Verdict.WINNER:
        nxt = r.others[0]
        return (f"**{name}** at {head}, the fastest of {len(r.entries)} {what}, separable from every other "
                f"(next: {escape(nxt.name)}, {_factor_only(nxt, r)})")
    if r.status is Verdict.TOO_FEW:
        return f"{_too_few(r)}: the best median of {len(r.entries)} {what} is {name}'s, {head}"
    if r.status is Verdict.EQUIVALENT:
        return f"{_equivalent(r, escape)}; the best median is {name}'s, {head}"
    tied = ", ".join(f"{escape(e.name)} ({_factor_only(e, r)})" for e in r.tied)
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


def unverified_text(ranking: Ranking, escape: Escape = md) -> str:
    """A clause naming the contenders left out because their verification failed or they were measured in fewer
    rounds ('' when none)."""
    out = ""
    if ranking.unverified:
        out += f"; rows that failed verification are not ranked: {', '.join(map(escape, ranking.unverified))}"
    if ranking.fewer_rounds:
        out += f"; measured in fewer rounds than the others (left out for the budget, or a failure), so not " \
               f"ranked: {', '.join(map(escape, ranking.fewer_rounds))}"
    return out


# -- iobench advise's words (plain text) ------------------------------------------------------------


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


def candidates_verdict(ranking: Ranking, escape: Escape = md) -> str:
    """``iobench advise``'s verdict on its candidates (the terminal passes ``terminal.visible``)."""
    status = ranking.status
    if status is Verdict.ALONE:
        return "the only candidate measured on these terms: not ranked, nothing to compare it with"
    if status is Verdict.WINNER:
        return f"separable from every other of the {len(ranking.entries)} candidates"
    if status is Verdict.TOO_FEW:
        return (f"{_too_few(ranking)}: the recommendation is the best median of {len(ranking.entries)}, not a "
                "separable winner")
    if status is Verdict.EQUIVALENT:
        return f"{_equivalent(ranking, escape)}: any of them will do"
    tied = "; ".join(escape(e.name) for e in ranking.tied)
    return (f"no separable winner: the best median of {len(ranking.entries)} candidates; not separable from it: "
            f"{tied}")


# -- one answer, the same words on every page --------------------------------------------------------------------
#: how sure the rule is, in a word
SURE = {Verdict.WINNER: "separated", Verdict.EQUIVALENT: f"equivalent for practical purposes (within {MARGIN:.0%})",
        Verdict.NO_WINNER: "not separable", Verdict.TOO_FEW: "too few", Verdict.ALONE: "only one measured"}


def _names(names: Sequence[str], escape: Escape, shown: int = 2) -> str:
    named = [escape(n) for n in names[:shown]]
    rest = len(names) - len(named)
    if rest:
        return f"{', '.join(named)} and {rest} more"
    return " and ".join(named) if len(named) == 2 else ", ".join(named)


def pick_text(a: Answer, escape: Escape = md) -> str:
    """What to take: ``**zarrs**``; ``tie between zarrs and tensorstore`` (and N more) where the rule cannot tell
    them apart; the best median where it cannot rank; ``not measured here`` without rows."""
    if a.question.key == "lost-data" and a.measured:
        return f"**{_names(a.lost, escape, 3)}** lost data" if a.lost else "none: every array came back right"
    if not a.measured:
        return "not measured here"
    note = f", {a.note}" if a.note else ""
    tied = a.tied if a.question.picks_leader else ()
    if tied:
        return f"tie between {_names([a.pick, *tied], escape)}{note}"
    if a.status is Verdict.TOO_FEW and a.pick_entry is a.ranking.leader:
        return f"{escape(a.pick)}, the best median{note}"
    if a.status is Verdict.ALONE:
        return f"{escape(a.pick)}{note}"
    return f"**{escape(a.pick)}**{note}"


def sure_text(a: Answer, escape: Escape = md) -> str:
    """How sure, with the factor and its 95% interval: ``separated: b 1.14x slower [1.04x, 1.21x]`` (the runner-up);
    ``not separable: b 1.07x slower [0.56x, 1.79x]``; a pick the rule takes below the leader (the fewest threads,
    the codec worth taking) against the leader."""
    if a.question.key == "lost-data" and a.measured:
        wrong, checked = a.checked
        return f"read back whole: {wrong} of {checked} unaligned arrays wrong"
    if not a.measured:
        return "-"
    r, status, e = a.ranking, a.status, a.versus
    if status is Verdict.TOO_FEW:
        return _too_few(r)
    if e is None:
        return SURE[status]
    factor, lo, hi = e.factor(r.higher)
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if np.isfinite(lo) and np.isfinite(hi) else ""
    if e.name == a.pick:  # the rule's pick is not the best median: stated against it
        t = e.vs_leader
        sure = SURE[Verdict.EQUIVALENT] if t.equivalent else "separated" if t.separable else "not separable"
        return f"{sure} from {escape(r.leader.name)}: {factor:.2f}x slower{interval}"
    return f"{SURE[status]}: {escape(e.name)} {factor:.2f}x slower{interval}"


def rests_text(a: Answer, escape: Escape = md, run: bool = True) -> str:
    """What the answer rests on: ``em_like, uint8 64x1080x1920, blosc-lz4:5:shuffle, 265 MB`` (with ``run``: the
    profile and machine, ``quick profile, vm``)."""
    parts = [escape(p) for p in a.rests_on]
    if run and a.profile:
        parts.append(f"{escape(a.profile)} profile")
    if run and a.machine:
        parts.append(escape(a.machine))
    return ", ".join(parts) or "-"


def verdict_line(a: Answer, escape: Escape = md, run: bool = False, label: bool = True) -> str:
    """The answer in one line, the same on every page: ``**Write**: tie between a and b (not separable: b 1.07x
    slower [0.56x, 1.79x]; em_like, uint8 64x1080x1920)`` (without ``label``: from the pick on)."""
    head = f"**{a.question.label}**: " if label else ""
    if not a.measured:
        return f"{head}not measured here"
    return f"{head}{pick_text(a, escape)} ({sure_text(a, escape)}; {rests_text(a, escape, run)})"


__all__ = ["SURE", "Escape", "answer_clause", "candidates_verdict", "change_text", "number", "pick_text", "rests_text",
           "sure_text", "unverified_text", "value_text", "value_words", "verdict_line", "verdict_text", "versus_text",
           "versus_words", "why_text"]
