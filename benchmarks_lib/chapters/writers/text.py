"""The writer chapter's text: the conclusion computed from a run's numbers (writers ranked like for like) and the
front page's answer."""

from __future__ import annotations

import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.stats import format_point
from benchmarks_lib.chapters.common import (
    ALWAYS_SHARDED,
    error_warning,
    group_header,
    no_answer,
    ok_rows,
    rank_against_leader,
    rank_samples,
    ranking_lines,
    verdict_text,
    versus_text,
    with_ceiling_fraction,
)
from benchmarks_lib.chapters.flags import point_flags
from benchmarks_lib.rules.ranking import countable
from benchmarks_lib.rules.words import answer_clause, number


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
    baseline. Every entry is stated against the group's leader (``chapters.ranking``).
    """
    df = with_ceiling_fraction(df)
    rows = ok_rows(df)
    rows = rows[rows["backend"] != "ceiling"]
    test = rows.get("test", pd.Series(None, index=rows.index, dtype=object))
    lines = ["Medians with their order-statistic intervals and n; backends are compared only with the same "
             "codec, bytes and fsync policy, every one against the best median of its group (its factor with the 95% "
             "interval of the ratio); **not separable** means that interval includes 1."]
    for label, op, t, value, higher in ANSWERED:
        part = rows[(rows["operation"] == op) & ((test == t) if t else True)]
        lines += ranking_lines(part, label, value, higher, "ms" if value == "elapsed_s" else "GB/s",
                               scale=1e3 if value == "elapsed_s" else 1.0)
    lines += _sharding_lines(rows[test == "sharding"])
    lines += error_warning(df)
    return "\n".join(lines) if len(lines) > 1 else "No successful measurements to compare."


def _sharding_lines(rows: pd.DataFrame) -> list[str]:
    """Per writer and dataset (never pooled): the cold-cutout layouts ranked against the fastest."""
    cut = label_layouts(countable(rows[rows["operation"] == "read_region_cold"]))
    if cut.empty or "layout" not in cut:
        return []
    lines = []
    for (backend, dataset), part in cut.groupby(["backend", "dataset"], dropna=False):
        layouts = {str(k): p["elapsed_s"].astype("float64") for k, p in part.groupby("layout")}
        if len(layouts) < 2:
            continue
        r = rank_samples(layouts, higher=False)
        inodes = rows[(rows["backend"] == backend) & (rows["dataset"] == dataset)]["inodes"] if "inodes" in rows \
            else pd.Series(dtype="float64")
        entries = "; ".join(f"*{md(e.name)}* {format_point(_point(e), scale=1e3)} ms: {versus_text(e, r)}"
                            for e in r.entries)
        lines.append(f"- **sharding** ({md(backend)}, dataset {md(dataset)}, same cutout positions in every layout):"
                     f" {verdict_text(r, 'layouts')}; {entries}"
                     + (f"; inodes {inodes.min():.0f} to {inodes.max():.0f}." if inodes.notna().any() else "."))
    return lines


def _point(entry) -> dict:
    return {"median": entry.median, "ci_lo": entry.lo, "ci_hi": entry.hi, "n": entry.n}


# -- the front page's answer ------------------------------------------------------------------

#: the tests the front page answers: label, operation, test, value ranked on, higher is better
ANSWERED = (("write", "total", "write", "gbps", True), ("append", "append_total", None, "gbps", True),
            ("cold full read", "read_cold", "read", "gbps", True),
            ("cold cutout", "read_region_cold", "read", "elapsed_s", False))


def answer(df: pd.DataFrame) -> str:
    """Markdown, one line per test: the fastest writer among equals (same codec with its shuffle, same bytes,
    fsync policy, cutout kind) in the most contested group, its speed and share of this machine's ceiling.
    ``raw``, the uncompressed baseline, never competes."""
    rows = ok_rows(with_ceiling_fraction(df))
    rows = rows[rows["backend"] != "ceiling"]
    test = rows["test"] if "test" in rows else pd.Series(None, index=rows.index, dtype=object)
    lines = [_fastest(rows[(rows["operation"] == op) & (test == t if t else True)], label, value, higher)
             for label, op, t, value, higher in ANSWERED]
    return "\n".join(line for line in lines if line) or no_answer("writer measurements")


def _fastest(part: pd.DataFrame, label: str, value: str, higher: bool) -> str:
    """The answer's line for one test ('' when no writer but raw finished it): the most contested group of
    equals, its verdict against the leader (a bold name only for a separable winner)."""
    rankings = rank_against_leader(part, value, higher)
    if not rankings:
        return ""
    r = max(rankings, key=lambda g: (len(g.entries), 0 if pd.isna(g.key.get("nbytes")) else g.key["nbytes"]))
    pct = r.leader.rows["pct_of_ceiling"].median() if value == "gbps" and "pct_of_ceiling" in r.leader.rows \
        else float("nan")

    def speed(e) -> str:
        return f"{number(e.median)} GB/s" if value == "gbps" else f"{number(e.median * 1e3)} ms per cutout"

    def details(e) -> list[str]:
        return [f"median of n={e.n}", *([] if pd.isna(pct) else [f"{pct:.0f}% of this machine's ceiling"]),
                *point_flags(e.rows)]

    line = f"{group_header(label, r.key)}: {answer_clause(r, speed, 'writers', details)}"
    if len(rankings) > 1:
        line += f" ({len(rankings) - 1} more group(s) of equals: see the chapter)"
    return line + "."
