"""The writer chapter's text: the conclusion computed from a run's numbers (writers ranked like for like) and the
front page's answer."""

from __future__ import annotations

import pandas as pd

from ..stats import format_point, rankable, summarize
from .common import (
    ALWAYS_SHARDED,
    equal_groups,
    error_warning,
    group_header,
    like_for_like_points,
    no_answer,
    ok_rows,
    rank_like_for_like,
    rows_of,
    with_ceiling_fraction,
)
from .flags import point_flags
from .markup import md


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
    reads the same cutout kind and cache state); ``raw`` is the uncompressed baseline. Neighbours
    are ranked only when their 95% intervals do not overlap.
    """
    df = with_ceiling_fraction(df)
    rows = ok_rows(df)
    rows = rows[rows["backend"] != "ceiling"]
    test = rows.get("test", pd.Series(None, index=rows.index, dtype=object))
    lines = ["Medians with their 95% bootstrap intervals and n; backends are compared only with the same "
             "codec, bytes and fsync policy; **not separable** means the intervals overlap."]
    lines += rank_like_for_like(rows[(rows["operation"] == "total") & (test == "write")], "write", "gbps", True,
                                "GB/s")
    lines += rank_like_for_like(rows[rows["operation"] == "append_total"], "append", "gbps", True, "GB/s")
    lines += rank_like_for_like(rows[(rows["operation"] == "read_cold") & (test == "read")], "cold full read",
                                "gbps", True, "GB/s")
    lines += rank_like_for_like(rows[(rows["operation"] == "read_region_cold") & (test == "read")], "cold cutout",
                                "elapsed_s", False, "ms", scale=1e3)
    lines += _sharding_lines(rows[test == "sharding"])
    lines += error_warning(df)
    return "\n".join(lines) if len(lines) > 1 else "No successful measurements to compare."


def _sharding_lines(rows: pd.DataFrame) -> list[str]:
    """Per writer and dataset: the fastest and slowest cold-cutout layout, and whether they separate."""
    cut = label_layouts(rows[rows["operation"] == "read_region_cold"])
    if cut.empty or "layout" not in cut:
        return []
    lines = []
    for (backend, dataset), part in cut.groupby(["backend", "dataset"], dropna=False):
        points = summarize(part, "layout", "elapsed_s").sort_values("median")
        if len(points) < 2:
            continue
        best, worst = points.iloc[0], points.iloc[-1]
        verdict = "separable" if rankable(best, worst) else "**not separable** (95% CIs overlap)"
        inodes = rows[(rows["backend"] == backend) & (rows["operation"] == "total")]["inodes"]
        lines.append(f"- **sharding** ({md(backend)}, {md(dataset)}, same cutout positions in every layout): fastest "
                     f"cold cutout *{md(best['layout'])}* "
                     f"{format_point(best, scale=1e3)} ms, "
                     f"slowest *{md(worst['layout'])}* "
                     f"{format_point(worst, scale=1e3)} ms: {verdict}"
                     + (f"; inodes {inodes.min():.0f} to {inodes.max():.0f}." if inodes.notna().any() else "."))
    return lines


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
    """The answer's line for one test ('' when no writer but raw finished it)."""
    part, keys, points = like_for_like_points(part, value)
    groups = equal_groups(points, keys, higher) if len(part) else []
    if not groups:
        return ""
    key, group = max(groups, key=lambda g: (len(g[1]), 0 if pd.isna(g[0].get("nbytes")) else g[0]["nbytes"]))
    best = group.iloc[0]
    rows = rows_of(part, best["backend"], key)
    pct = rows["pct_of_ceiling"].median() if value == "gbps" else float("nan")
    speed = f"{best['median']:.3g} GB/s" if value == "gbps" else f"{best['median'] * 1e3:.3g} ms per cutout"
    details = [f"median of n={best['n']}", *([] if pd.isna(pct) else [f"{pct:.0f}% of this machine's ceiling"]),
               *point_flags(rows)]
    line = f"{group_header(label, key)}: **{md(best['backend'])}** at {speed} ({'; '.join(details)})"
    if len(group) == 1:
        line += ", but no other writer used this codec on these bytes, so it is not ranked"
    else:
        ties = group.iloc[1:][[not rankable(best, other) for _, other in group.iloc[1:].iterrows()]]
        why = "95% CIs overlap" if (group["n"] >= 2).all() else "95% CIs overlap or undefined at n=1"
        second = group.iloc[1]
        factor = best["median"] / second["median"] if higher else second["median"] / best["median"]
        verdict = (f"not separable from {', '.join(map(md, ties['backend']))} ({why})" if len(ties) else
                   f"{factor:.2f}x ahead of {md(second['backend'])}")
        line += f", the fastest of {len(group)} writers; {verdict}"
    if len(groups) > 1:
        line += f" ({len(groups) - 1} more group(s) of equals: see the chapter)"
    return line + "."
