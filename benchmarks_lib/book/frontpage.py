"""The front page: the verdict box (one line per question of :mod:`benchmarks_lib.rules.answers`, each linked to
the chapter section holding its evidence) and the like-for-like tables: this machine beside the reference run, over
the cases both measured.

The verdict box says each answer in :mod:`benchmarks_lib.rules.words`' words (``pick_text``, ``sure_text``,
``rests_text``): the same answer, in the same words, as the chapters' answers and conclusions.

A chapter's answer (``answer(df)``) is one sentence about one run. Two runs answer the same question only on the
same cases: the same suite case (every case key the runs record: bytes, codec, dataset, layout, fsync, cache
state ... and the question's own keys) and the same contenders. ``comparison`` keeps, per question of a chapter
(``QUESTIONS``), the groups of equals that both runs measured, restricted to the contenders both measured, and
gives per group each run's leader (the paired leader of ``rules.decision``), its interval and n, and what limits the
claim: the decision when it names no winner (open, a tie, equivalent, a lead maybe under 5%), or a point above
that run's own ceiling. What only one run measured is named in one line. Every string from a run is escaped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.stats import format_ci
from benchmarks_lib.chapters.seeds import CLAIMS_SECTION
from benchmarks_lib.chapters.style import CEILING_LABELS
from benchmarks_lib.rules.answers import Answer
from benchmarks_lib.rules.ceilings import ceiling_gbps, ceiling_reference, ok_rows
from benchmarks_lib.rules.ranking import Verdict, rank_parts
from benchmarks_lib.rules.seeds import Checked, Holds
from benchmarks_lib.rules.words import SAME, SURE, agreement, case_text, pick_text, rests_text, sure_text

#: what a heading's anchor keeps (MyST's ``myst_heading_anchors`` slug, GitHub's): word characters, CJK, -, space
_SLUG_DROPS = re.compile(r"[^\w\u4e00-\u9fff\- ]")


def anchor(heading: str) -> str:
    """A heading's anchor as MyST makes it (``myst_heading_anchors`` in ``_config.yml``): lower case, spaces as
    ``-``, punctuation dropped: ``Reads: full (cold and warm)`` -> ``reads-full-cold-and-warm``."""
    return _SLUG_DROPS.sub("", heading.lower().replace(" ", "-"))


def evidence_link(a: Answer) -> str:
    """``<chapter>.ipynb#<heading>`` (the writers chapter's write test, say): the section of the answer's chapter
    holding its evidence."""
    return f"{a.question.chapter}.ipynb#{anchor(a.anchor)}"


#: the verdict box's HTML class (its style: ``_static/verdicts.css``)
BOX_CLASS = "verdict-box"


def verdict_box(mine: list[Answer], reference: list[Answer] | None = None, linked: set[str] | None = None) -> str:
    """Markdown: the verdict box (a container of class ``BOX_CLASS``), one table row per question: the question
    (linked to its evidence where its chapter is in the book, ``linked``), the pick, how sure (the factor and its 95%
    interval) and what it rests on; with a ``reference`` run, the reference machine's answer beside this machine's
    in the answer's cell (:func:`reference_cell`). A question this machine did not measure says so, with the
    reference run's answer where it has one."""
    refs = {a.question.key: a for a in reference or []}
    rows = ["| question | answer | how sure (ratio and its interval) | rests on |", "|---|---|---|---|"]
    for a in mine:
        label = a.question.label
        if linked is None or a.question.chapter in linked:
            label = f"[{label}]({evidence_link(a)})"
        ref = refs.get(a.question.key)
        if a.measured and refs:  # the reference machine's answer beside this machine's, in the same cell
            rows.append(f"| {label} | {pick_text(a)}; *reference*: {reference_cell(a, ref)} | "
                        f"{sure_text(a, rule=True)} | {rests_text(a, run=False)} |")
        elif a.measured or ref is None or not ref.measured:
            rows.append(f"| {label} | {pick_text(a)} | {sure_text(a, rule=True)} | {rests_text(a, run=False)} |")
        else:
            rows.append(f"| {label} | not measured here; reference machine: {pick_text(ref)} | "
                        f"{sure_text(ref, rule=True)} | {rests_text(ref)} |")
    return "\n".join([f":::{{container}} {BOX_CLASS}", *rows, ":::"])


def reference_cell(mine: Answer, ref: Answer | None) -> str:
    """The reference machine's answer beside this machine's measured one (``words.agreement``): ``the same``, or
    its pick and whether the machines differ (both decided) or chance may explain it; ``not measured there`` where
    the reference did not measure it."""
    if ref is None or not ref.measured:
        return "not measured there"
    said = agreement(mine, ref)
    return said if said == SAME else f"{pick_text(ref)} ({said})"


def seed_lines(checked: list[Checked], answers: list[Answer]) -> list[str]:
    """Per front-page answer (``answers``, in the box's order) that a seed's claim (``checked``:
    ``rules.seeds.check_claims``) tests, one Markdown list line linking to the seeds chapter's claims, the claims
    grouped by their verdict here: ``- [Write](seeds.ipynb#the-claims): holds: 000 write; cannot be tested here:
    000 OME-Zarr, 003 zarrs``. Nothing for an answer no claim tests."""
    link = f"seeds.ipynb#{anchor(CLAIMS_SECTION)}"
    lines = []
    for a in answers:
        tested = [c for c in checked if c.claim.answer == a.question.key]
        said = ["**" + md(str(h)) + "**: " + ", ".join(md(f"{c.claim.seed} {c.claim.short}") for c in tested
                                                      if c.holds is h)
                for h in Holds if any(c.holds is h for c in tested)]
        if said:
            lines.append(f"- [{md(a.question.label)}]({link}): {'; '.join(said)}")
    return lines


@dataclass(frozen=True)
class Selection:
    """The rows of a chapter's run that one of its questions reads on both machines (``where``), the value
    compared, and who competes: what the beside-reference page sets side by side."""

    label: str
    where: dict
    value: str = "gbps"
    higher: bool = True
    unit: str = "GB/s"
    scale: float = 1.0
    contenders: tuple[str, ...] = ("backend",)
    #: keys that make a case besides the suite's case keys (columns a suite does not declare yet)
    keys: tuple[str, ...] = ()
    exclude: tuple[str, ...] = field(default=())
    #: among the shared cases with the most contenders and bytes, the headline has the most of this column
    prefer: str | None = None


QUESTIONS: dict[str, tuple[Selection, ...]] = {
    "writers": (
        Selection("write", {"test": "write", "operation": "total"}),
        Selection("append", {"test": "append", "operation": "append_total"}),
        Selection("cold full read", {"test": "read", "operation": "read_cold"}, keys=("read_by",)),
        Selection("cold cutout", {"test": "read", "operation": "read_region_cold"}, "elapsed_s", False, "ms", 1e3,
                 keys=("read_by",)),
    ),
    "compression": (
        Selection("fastest store write", {"operation": "write"}, "gbps", True, "MB/s", 1e3,
                 contenders=("backend", "codec"), exclude=("level",)),
    ),
    "threads": (
        Selection("write", {"operation": "write"}, "gbps", True, "MB/s", 1e3, keys=("threads",), prefer="threads"),
        Selection("cold read", {"operation": "read"}, "gbps", True, "MB/s", 1e3, keys=("threads",), prefer="threads"),
    ),
    "cache": (
        Selection("read time", {}, "elapsed_s", False, "s", contenders=("client",),
                 keys=("operation", "reader", "location", "latency_ms", "cache_bytes", "async_prefetch", "workload",
                       "server", "bandwidth", "step")),
    ),
    "parallel": (
        Selection("aggregate write", {"operation": "write"}, keys=("workers", "alignment", "store"), prefer="workers"),
    ),
    "s3": (
        Selection("write", {"operation": "write"}, keys=("latency_ms", "store", "target")),
        Selection("read", {"operation": "read"}, keys=("latency_ms", "store", "target")),
    ),
}
#: contenders that are baselines, never ranked
BASELINES = ("raw",)


def _text(value: object) -> str:
    from benchmarks_lib.chapters.compare.cases import _text as text

    return text(value)


def _case_columns(a: pd.DataFrame, b: pd.DataFrame, q: Selection) -> list[str]:
    """The columns that name a group of equals for ``q``: the suites' case keys and the question's own keys,
    those either run records, without the contenders."""
    from benchmarks_lib.base.specs import SpecError
    from benchmarks_lib.chapters.compare import declared_keys

    suites = sorted({str(s) for df in (a, b) if "suite" in df for s in df["suite"].dropna().unique()})
    try:
        keys, _ = declared_keys(suites)
    except SpecError:  # a suite iobench does not know: its cases cannot be told apart
        return []
    cols = dict.fromkeys([*keys, *q.keys])
    return [c for c in cols if c not in ("backend", *q.contenders, *q.exclude)
            and any(c in df and df[c].notna().any() for df in (a, b))]


def _rows(df: pd.DataFrame, q: Selection) -> pd.DataFrame:
    """The successful, not failed-verification rows of question ``q`` with a value."""
    rows = ok_rows(df)
    rows = rows[~rows["backend"].isin(["ceiling", *BASELINES])] if "backend" in rows else rows
    for col, want in q.where.items():
        if col not in rows:
            return rows.iloc[0:0]
        rows = rows[rows[col] == want]
    if "verified" in rows:
        rows = rows[rows["verified"].astype("boolean").fillna(True)]
    if q.value not in rows:
        return rows.iloc[0:0]
    return rows[rows[q.value].notna()]


def _keyed(rows: pd.DataFrame, cols: list[str], q: Selection) -> pd.DataFrame:
    """``rows`` with ``_group`` (the case, as text the same in both runs) and ``_who`` (the contender)."""
    def join(frame: pd.DataFrame, names: list[str] | tuple[str, ...]) -> pd.Series:
        if not len(frame):
            return pd.Series(dtype=object)
        return frame.apply(lambda r: "|".join(f"{c}={_text(r[c])}" if c in r and not pd.isna(r[c]) else f"{c}=-"
                                              for c in names), axis=1)

    frame = rows.reindex(columns=list(dict.fromkeys([*rows.columns, *cols, *q.contenders])))
    return rows.assign(_group=join(frame, cols), _who=join(frame, q.contenders))


def _describe(group: str, q: Selection) -> str:
    """A group of equals in words (``words.case_text``, the one wording of a case): ``write, dataset em_like,
    blosc-lz4:5:shuffle, 531 MB, fsync included``; never a column name with a raw value nor a Python ``False``."""
    key = dict(item.partition("=")[::2] for item in group.split("|"))
    return ", ".join(p for p in (md(q.label), case_text(key, escape=md)) if p)


def _who_text(who: str) -> str:
    return " ".join(md(item.partition("=")[2]) for item in who.split("|") if item.partition("=")[2] not in ("-", ""))


@dataclass(frozen=True)
class Side:
    """One run's answer to one group of equals."""

    leader: str
    median: float
    lo: float
    hi: float
    n: int
    caveats: tuple[str, ...]


def _side(rows: pd.DataFrame, q: Selection, ceiling: dict[str, float], own: str) -> Side:
    """The leader of ``rows`` (one group of equals, the shared contenders) and what limits the claim."""
    parts = {str(who): part for who, part in rows.groupby("_who", sort=True)}
    ranking = rank_parts(parts, q.value, q.higher)  # the one rule, round by round where measured in rounds
    best = ranking.leader
    leader, median, lo, hi, n = best.name, best.median, best.lo, best.hi, best.n
    d = ranking.decision
    caveats = [] if d is None or ranking.status is Verdict.WINNER else \
        [f"{SURE[ranking.status]} ({d.why()}, {len(d.contenders)} contenders)"]
    lead = rows[rows["_who"] == leader]
    if q.value == "gbps" and len(lead):
        first = lead.iloc[0]
        fsync = first.get("fsync_included")
        op = ceiling_reference(str(first.get("operation")), None if pd.isna(fsync) else bool(fsync),
                               first.get("cache_state") if isinstance(first.get("cache_state"), str) else None)
        if op and ceiling.get(op):
            pct = 100 * median / ceiling[op]
            caveats.append(f"{pct:.0f}% of {own} ceiling ({CEILING_LABELS.get(op, op)} {ceiling[op]:.3g} GB/s)"
                           + ("; above it: noise or caching" if pct > 105 else ""))
    if "elapsed_s" in lead and len(lead) and lead["elapsed_s"].median() < 0.1 and q.unit != "ms":
        caveats.append("under 100 ms: fixed costs weigh")
    return Side(leader, median, lo, hi, n, tuple(caveats))


def num3(value: float) -> str:
    """Three significant figures, never in exponent notation between 1e-4 and 1e9 (2810, 0.733, 0.000123)."""
    if not np.isfinite(value):
        return "-"
    if value == 0 or not 1e-4 <= abs(value) < 1e9:
        return f"{value:.3g}"
    text = np.format_float_positional(float(f"{value:.3g}"), trim="-")
    return text


def _value(side: Side, q: Selection) -> str:
    return f"**{_who_text(side.leader)}** {num3(side.median * q.scale)} {q.unit}"


def _interval(side: Side, q: Selection) -> str:
    text = format_ci(side.median * q.scale, side.lo * q.scale, side.hi * q.scale, side.n, fmt="{:.3g}")
    for token in set(re.findall(r"-?\d+(?:\.\d+)?e[+-]\d+", text)):  # no exponent notation in the book's tables
        text = text.replace(token, num3(float(token)))
    return text


def comparison(mine: pd.DataFrame, ref: pd.DataFrame, suite: str, more_link: str | None = None) -> str:
    """Markdown: the table of the questions of ``suite`` over the cases both runs measured, and one line naming
    what only one of them measured ('' when the suite has no declared questions). ``more_link``: the compare
    chapter's section listing every case both measured, where the cases the table leaves out are linked."""
    rows_out: list[str] = []
    only_mine: list[str] = []
    only_ref: list[str] = []
    ceil_mine, ceil_ref = ceiling_gbps(mine), ceiling_gbps(ref)
    more = 0
    for q in QUESTIONS.get(suite, ()):
        a, b = _rows(mine, q), _rows(ref, q)
        if a.empty and b.empty:
            continue
        cols = _case_columns(a, b, q)
        a, b = _keyed(a, cols, q), _keyed(b, cols, q)
        groups_a, groups_b = set(a["_group"]), set(b["_group"])
        only_mine += [_describe(g, q) for g in sorted(groups_a - groups_b)]
        only_ref += [_describe(g, q) for g in sorted(groups_b - groups_a)]
        candidates = []
        for group in sorted(groups_a & groups_b):
            ga, gb = a[a["_group"] == group], b[b["_group"] == group]
            shared = set(ga["_who"]) & set(gb["_who"])
            if not shared:
                only_mine.append(f"{_describe(group, q)} (other contenders)")
                continue
            both = pd.concat([ga, gb])
            nbytes = both["nbytes"].max() if "nbytes" in both else 0
            prefer = both[q.prefer].max() if q.prefer in both else 0
            candidates.append((len(shared), 0 if pd.isna(nbytes) else nbytes, 0 if pd.isna(prefer) else prefer,
                               group, ga, gb, shared))
        if not candidates:
            continue
        # the question's headline: the shared case with the most contenders (then the most bytes)
        count, _, _, group, ga, gb, shared = max(candidates, key=lambda c: c[:3])
        more += len(candidates) - 1
        dropped = (set(ga["_who"]) | set(gb["_who"])) - shared
        ga, gb = ga[ga["_who"].isin(shared)], gb[gb["_who"].isin(shared)]
        sa, sb = _side(ga, q, ceil_mine, "its"), _side(gb, q, ceil_ref, "its")
        caveat = [f"this machine: {'; '.join(sa.caveats)}" if sa.caveats else "",
                  f"reference: {'; '.join(sb.caveats)}" if sb.caveats else "",
                  f"{len(dropped)} contender(s) measured by one run only, not compared" if dropped else ""]
        rows_out.append(f"| {_describe(group, q)} ({count} contender{'s' if count > 1 else ''}) | {_value(sa, q)} | "
                        f"{_value(sb, q)} | this: {md(_interval(sa, q))}; reference: {md(_interval(sb, q))} | "
                        f"{md('. '.join(c for c in caveat if c)) or '-'} |")
    if not rows_out and not only_mine and not only_ref:
        return ""
    lines = []
    if rows_out:
        lines += ["| question (one case both runs measured) | this machine | reference | median [interval] (n) | "
                  "caveat |", "|---|---|---|---|---|", *rows_out]
        if more and more_link:
            lines += ["", f"[{more} more case(s)]({more_link}) both runs measured (other sizes, codecs, settings): the "
                      "compare chapter sets them side by side case by case, across the two machines."]
        elif more:
            lines += ["", f"{more} more case(s) both runs measured (other sizes, codecs, settings): `iobench compare "
                      "REFERENCE_RUN THIS_RUN` sets them side by side case by case, across the two machines."]
    else:
        lines.append("No case was measured by both runs (different sizes, codecs or contenders), so the two machines "
                     "are not compared here.")
    one_side = []
    if only_mine:
        one_side.append(f"only this machine measured {_listed(only_mine)}")
    if only_ref:
        one_side.append(f"only the reference measured {_listed(only_ref)}")
    if one_side:
        lines += ["", "Not compared: " + "; ".join(one_side) + "."]
    return "\n".join(lines)


def _listed(items: list[str], limit: int = 2) -> str:
    items = list(dict.fromkeys(items))
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return "; ".join(items[:limit]) + more


__all__ = ["BOX_CLASS", "QUESTIONS", "Selection", "anchor", "comparison", "evidence_link", "verdict_box"]
