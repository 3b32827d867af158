"""The writer chapter's text: the conclusion computed from a run's numbers (writers ranked like for like) and the
front page's answer."""

from __future__ import annotations

import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.stats import format_point
from benchmarks_lib.chapters.common import (
    ALWAYS_SHARDED,
    answer_first,
    error_warning,
    no_answer,
    ok_rows,
    rank_against_leader,
    ranking_lines,
    verdict_text,
    versus_text,
    with_ceiling_fraction,
)
from benchmarks_lib.chapters.flags import point_flags
from benchmarks_lib.rules.answers import WRITERS, Answer, chapter_answers
from benchmarks_lib.rules.ranking import countable
from benchmarks_lib.rules.words import number, verdict_line


def label_layouts(rows: pd.DataFrame) -> pd.DataFrame:
    """``layout`` with ``(1 chunk per shard)`` added where an always-sharding writer wrote "unsharded"."""
    if "layout" not in rows or rows.empty:
        return rows
    mask = rows["backend"].isin(list(ALWAYS_SHARDED)) & rows["layout"].astype(str).str.startswith("unsharded")
    return rows.assign(layout=rows["layout"].where(~mask, rows["layout"].astype(str) + " (1 chunk per shard)"))


def verified_text(rows: pd.DataFrame) -> str:
    """"yes" when every checked row was verified by a second library, else says it was not; "-" when none was."""
    v = rows["verified"].dropna()
    if v.empty:
        return "-"
    return "yes" if bool(v.all()) else "NO (checksum mismatch)"


def conclusion(df: pd.DataFrame) -> str:
    """A short conclusion computed from the data: backends ranked only among equals.

    Equal means the same codec (shuffle included), the same bytes, the same fsync policy (and for
    reads the same cutout kind and cache state, named by the library that read); ``raw`` is the uncompressed
    baseline. Every entry is stated against the group's leader (``chapters.ranking``). It opens with the chapter's
    answer (``answer``).
    """
    df = with_ceiling_fraction(df)
    rows = ok_rows(df)
    rows = rows[rows["backend"] != "ceiling"]
    test = rows.get("test", pd.Series(None, index=rows.index, dtype=object))
    lines = ["Medians with their order-statistic intervals and n; backends are compared only with the same "
             "codec, bytes and fsync policy, every one against the best median of its group (its factor with the 95% "
             "interval of the ratio); **not told apart** means that interval includes 1."]
    for label, op, t, value, higher in RANKED:
        part = rows[(rows["operation"] == op) & ((test == t) if t else True)]
        lines += ranking_lines(part, label, value, higher, "ms" if value == "elapsed_s" else "GB/s",
                               scale=1e3 if value == "elapsed_s" else 1.0)
    lines += _sharding_lines(rows[test == "sharding"])
    lines += error_warning(df)
    if len(lines) == 1:
        return "No successful measurements to compare."
    return answer_first(answer(df), "\n".join(lines))


#: the conclusion's rankings: label, operation, test (None: any), value ranked on, higher is better
RANKED = (("write", "total", "write", "gbps", True), ("append", "append_total", None, "gbps", True),
          ("cold full read", "read_cold", "read", "gbps", True),
          ("cold cutout", "read_region_cold", "read", "elapsed_s", False))


def _sharding_lines(rows: pd.DataFrame) -> list[str]:
    """Per dataset and cutout kind (never pooled: the answer's cutouts are one kind), the question the run asked
    (``suites.writers.questions``): every writer with every layout, ranked against the fastest."""
    cut = label_layouts(countable(rows[rows["operation"] == "read_region_cold"]))
    if cut.empty or "layout" not in cut:
        return []
    if "cutout_kind" not in cut:
        cut = cut.assign(cutout_kind=None)
    lines = []
    for (dataset, kind), part in cut.groupby(["dataset", "cutout_kind"], dropna=False):
        found = rank_against_leader(part, "elapsed_s", False, keys=[], largest_shared_size=False,
                                    names=lambda r: r["backend"].astype(str) + ", " + r["layout"].astype(str))
        if not found or len(found[0].entries) < 2:  # raw, the baseline, is not ranked
            continue
        r = found[0]
        inodes = rows[rows["dataset"] == dataset]["inodes"] if "inodes" in rows else pd.Series(dtype="float64")
        entries = "; ".join(f"*{md(e.name)}* {format_point(_point(e), scale=1e3)} ms: {versus_text(e, r)}"
                            for e in r.entries)
        kind = f"{md(kind)} cutouts, " if isinstance(kind, str) else ""
        lines.append(f"- **sharding** (dataset {md(dataset)}, {kind}the same positions in every writer and "
                     f"layout): {verdict_text(r, 'writers and layouts')}; {entries}"
                     + (f"; inodes {inodes.min():.0f} to {inodes.max():.0f}." if inodes.notna().any() else "."))
    return lines


def _point(entry) -> dict:
    return {"median": entry.median, "ci_lo": entry.lo, "ci_hi": entry.hi, "n": entry.n}


# -- the answers (the front page's verdict box says the same) ------------------------------------------------------


def answer(df: pd.DataFrame) -> str:
    """Markdown, one line per question the writers run answers (:func:`benchmarks_lib.rules.answers.answer`:
    write, append, cold full read, cutouts aligned and unaligned, sharding), in the verdict box's words, with the
    pick's median, its share of this machine's ceiling and its flags. ``raw``, the uncompressed baseline, never
    competes."""
    lines = [answer_line(a) for a in chapter_answers("writers", df) if a.measured]
    return "\n".join(lines) or no_answer("writer measurements")


def answer_line(a: Answer) -> str:
    """``- **Write**: ... (the verdict box's words); best median 0.839 GB/s (n=5; 45% of this machine's
    ceiling)``."""
    e = a.pick_entry
    details = []
    if e is not None:
        gbps = a.question.key in WRITERS and WRITERS[a.question.key][2] == "gbps"
        speed = f"{number(e.median)} GB/s" if gbps else f"{number(e.median * 1e3)} ms per cutout"
        pct = e.rows["pct_of_ceiling"].median() if gbps and "pct_of_ceiling" in e.rows else float("nan")
        details.append(f"{'best median' if e is a.ranking.leader else 'median'} {speed} (n={e.n}"
                       + ("" if pd.isna(pct) else f"; {pct:.0f}% of this machine's ceiling") + ")")
        details += point_flags(e.rows)
    if a.groups > 1:
        details.append(f"{a.groups - 1} more group(s) of equals in the chapter")
    return f"- {verdict_line(a)}" + (f"; {'; '.join(details)}" if details else "") + "."
