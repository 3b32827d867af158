"""The seeds, checked here: each headline of the five benchmarks this book was made from (``rules.seeds.CLAIMS``)
held against this machine's newest runs of the chapters that measure it, with its verdict (holds, does not hold,
cannot be tested here) and why. The chapter measures nothing: it reads the runs the book just made (or any results
directory), so it costs the book no measuring time. Every string from a run is escaped.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pandas as pd

from benchmarks_lib.base.environment import machine_name
from benchmarks_lib.base.markup import md
from benchmarks_lib.base.paths import RESULTS_DIR
from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.records.store import load_run, newest_run
from benchmarks_lib.rules.seeds import CLAIMS, Checked, Holds, check_claims

#: the suites whose runs the claims are checked against
SUITES = tuple(dict.fromkeys(c.suite for c in CLAIMS))


def runs_here(results_dir: str | Path | None = None) -> dict[str, tuple[pd.DataFrame, str]]:
    """Per suite of the claims, the newest finished run under ``results_dir`` (None: the repository's results/):
    this machine's where it has one, else any machine's; its rows and run id."""
    results = Path(results_dir) if results_dir else RESULTS_DIR
    out = {}
    for suite in SUITES:
        found = newest_run(results, suite, machine=machine_name()) or newest_run(results, suite)
        if found is not None:
            df, meta = load_run(found[0])
            out[suite] = (df, str(meta.get("run_id") or found[0].name))
    return out


def check(results_dir: str | Path | None = None) -> list[Checked]:
    """Every claim held against this machine's newest runs (:func:`runs_here`)."""
    return check_claims(runs_here(results_dir))


def counts_line(checked: list[Checked]) -> str:
    """``5 of 12 hold here, 2 do not, 5 cannot be tested here``."""
    counts = Counter(c.holds for c in checked)
    return (f"{counts[Holds.HOLDS]} of {len(checked)} hold here, {counts[Holds.DOES_NOT_HOLD]} "
            f"{'does' if counts[Holds.DOES_NOT_HOLD] == 1 else 'do'} not, {counts[Holds.CANNOT]} cannot be tested here")


def conclusion(checked: list[Checked]) -> str:
    """The chapter's answer, first: how many claims hold here, how many do not, how many cannot be tested."""
    counts = Counter(c.holds for c in checked)
    held = [f"{c.claim.seed}" for c in checked if c.holds is Holds.HOLDS]
    not_held = [f"{c.claim.seed}" for c in checked if c.holds is Holds.DOES_NOT_HOLD]
    parts = [f"**{counts[Holds.HOLDS]} of {len(checked)} claims hold here**"
             + (f" (seeds {', '.join(dict.fromkeys(held))})" if held else ""),
             f"**{counts[Holds.DOES_NOT_HOLD]} {'does' if counts[Holds.DOES_NOT_HOLD] == 1 else 'do'} not**"
             + (f" (seeds {', '.join(dict.fromkeys(not_held))})"
                                                             if not_held else ""),
             f"{counts[Holds.CANNOT]} cannot be tested here (the reasons are in the table)"]
    return "; ".join(parts) + ". Orderings and ratios carry across machines, absolute speeds do not: each check " \
        "compares the seed's two contenders on this machine, round by round, by the book's one rule."


#: the section of the chapter holding every claim's row (its heading in ``notebooks/seeds.ipynb``)
CLAIMS_SECTION = "The claims"


def claims_table(checked: list[Checked]) -> str:
    """One row per claim: the seed, its claim as stated, what this machine measured, the verdict and why
    (Markdown; every string escaped)."""
    head = "| seed | the claim | here | verdict |\n|---|---|---|---|"
    rows = []
    for c in checked:
        here = md(c.measured) if c.measured else "-"
        rows.append(f"| {md(c.claim.seed)} {md(c.claim.source)} | {md(c.claim.claim)} | {here} | "
                    f"**{md(str(c.holds))}**: {md(c.why)} |")
    return "\n".join([head, *rows])


def claims_figure(checked: list[Checked]):
    """Each claim decided as a pair here: the seed's slower contender's time over its faster one's with its 95%
    interval (a line), coloured by the verdict, and the seed's own factor (a cross), on a log axis; 1 is "as fast".
    Where no pair was decided, a sentence says so."""
    from benchmarks_lib.chapters.style import empty_figure, ratio_log_axis, subplots

    shown = [c for c in checked if math.isfinite(c.ratio)]
    if not shown:
        return empty_figure("The seeds' claims here", "no claim was decided as a pair in these runs")
    colours = {Holds.HOLDS: "C2", Holds.DOES_NOT_HOLD: "C3", Holds.CANNOT: "0.5"}
    fig, ax = subplots(figsize=(7.0, 0.55 * len(shown) + 1.4))
    for y, c in enumerate(shown):
        if math.isfinite(c.lo) and math.isfinite(c.hi):
            ax.plot([c.lo, c.hi], [y, y], color=colours[c.holds], lw=3, solid_capstyle="butt")
        ax.plot([c.ratio], [y], "o", color=colours[c.holds])
        if math.isfinite(c.claim.factor):
            ax.plot([c.claim.factor], [y], "x", color="k", ms=8)
    ax.axvline(1, color="0.6", lw=1, ls="--")
    ax.set_yticks(range(len(shown)), [f"{c.claim.seed} {c.claim.short}" for c in shown])
    ax.invert_yaxis()
    ratio_log_axis(ax, "x")
    ax.set_xlabel("time of the seed's slower one / its faster one, here (x: the seed's factor)")
    handles = [_key(colours[h], str(h)) for h in Holds if any(c.holds is h for c in shown)]
    ax.legend(handles=[*handles, _key("k", "the seed's factor", marker="x")], loc="best", fontsize="small")
    ax.set_title("The seeds' claims here: above 1, the seed's ordering")
    return fig


def _key(colour: str, label: str, marker: str = "o"):
    from matplotlib.lines import Line2D

    return Line2D([], [], color=colour, marker=marker, lw=0 if marker == "x" else 3, label=label)


def methods_list(checked: list[Checked]) -> str:
    """Per claim, what the seed measured it on and where its method differs from this book's (Markdown)."""
    lines = []
    for c in checked:
        method = f"; its method: {md(c.claim.method)}" if c.claim.method else ""
        run = f" (checked on run {md(c.run_id)})" if c.run_id else ""
        # seed_way: made of claim constants, numbers and a verdict's own Markdown (no record string)
        way = f" Measured here {c.seed_way}." if c.seed_way else ""
        lines.append(f"- **{md(c.claim.seed)}**, {md(c.claim.claim)}: {md(c.claim.setting)}{method}{run}.{way}")
    return "\n".join(lines)


CHAPTER = Chapter("seeds", title="The seeds, checked here", order=87,
                  answer="This chapter measures nothing: it holds each headline of the five benchmarks this book was "
                  "made from against this machine's runs, with its verdict (holds, does not hold, cannot be tested "
                  "here) and why.")

__all__ = ["CHAPTER", "CLAIMS_SECTION", "SUITES", "check", "claims_figure", "claims_table",
           "conclusion", "counts_line", "methods_list", "runs_here"]
