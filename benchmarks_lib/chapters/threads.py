"""The thread-scaling chapter: do more threads make writing and reading faster (seed 002)?

Per (backend, side, threads) the time is the median over iterations; speed-up is relative to
the fewest threads measured; efficiency is speed-up / (threads / fewest threads). Amdahl's law
``T(p) = T1 * (s + (1 - s) / p)`` is fitted only where threads <= cores, since it has no term
for oversubscription, and only on three or more distinct thread counts: its two parameters
pass exactly through any two points, so such a "fit" would say nothing. Without a fit the
curve is still drawn and the table says why (``reason``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import md, md_code
from benchmarks_lib.base.stats import summarize
from benchmarks_lib.chapters import tables
from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.chapters.common import (
    MB,
    answer_first,
    digits3,
    error_warning,
    no_answer,
    ok_rows,
    problems,
    run_header,
    with_ceiling_fraction,
    write_ceiling_op,
)
from benchmarks_lib.chapters.flags import ceiling_mark, point_flags
from benchmarks_lib.chapters.style import (
    CI95,
    draw_ceilings,
    empty_figure,
    legend_under_figure,
    log_axis,
    median_table,
    plt,
    sns,
    subplots,
    too_few,
    whiskers,
)
from benchmarks_lib.rules.amdahl import MIN_FIT_COUNTS, amdahl_speedup, fit_amdahl
from benchmarks_lib.rules.answers import answer as question_answer
from benchmarks_lib.rules.ceilings import ceiling_gbps
from benchmarks_lib.rules.compression import SIDE
from benchmarks_lib.rules.decision import MARGIN
from benchmarks_lib.rules.ranking import countable, rank_parts
from benchmarks_lib.rules.words import verdict_line, verdict_text, versus_text

TIMES = ("write: the store written (or the codec run in memory) at each thread count; read: back cold, after a "
         "checked page-cache eviction; one write and read of every thread count per round")


def header(result) -> str:
    """The run header of this chapter (markdown)."""
    return run_header(result, TIMES)

#: distinct thread counts (up to the cores) a two-parameter Amdahl fit needs to be more than exact
def point_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The OK rows of the thread suite with ``side``, integer ``threads`` and per-iteration ``mbps``."""
    rows = ok_rows(df)
    rows = rows[(rows["backend"] != "ceiling") & rows["operation"].isin(list(SIDE)) & rows["threads"].notna()]
    return rows.assign(side=rows["operation"].map(SIDE), threads=rows["threads"].astype(int),
                       in_memory=rows["operation"].isin(["encode", "decode"]),
                       mbps=rows["nbytes"].astype(float) / rows["elapsed_s"] / MB)


def scaling_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median time with its order-statistic interval and n, MB/s, speed-up and efficiency per
    (backend, side, threads).

    ``spread`` is (max - min) / median of the repeated times: differences smaller than it are noise.
    """
    rows = point_rows(df)
    cols = ["backend", "side", "threads", "median_s", "ci_lo_s", "ci_hi_s", "n", "mbps", "spread", "speedup",
            "efficiency", "cores"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    g = rows.groupby(["backend", "side", "threads"])
    ci = summarize(rows, ["backend", "side", "threads"], "elapsed_s").set_index(["backend", "side", "threads"])
    out = pd.DataFrame({"median_s": g["elapsed_s"].median(), "ci_lo_s": ci["ci_lo"], "ci_hi_s": ci["ci_hi"],
                        "n": g.size(), "nbytes": g["nbytes"].first().astype(float),
                        "codec": g["codec"].first() if "codec" in rows else None,
                        "in_memory": g["in_memory"].all()}).reset_index()
    out["cores"] = g["cores"].first().to_numpy() if "cores" in rows else np.nan
    out["mbps"] = out["nbytes"] / out["median_s"] / MB
    base = out.loc[out.groupby(["backend", "side"])["threads"].idxmin(), ["backend", "side", "threads", "median_s"]]
    base = base.rename(columns={"threads": "base_threads", "median_s": "base_s"})
    out = out.merge(base, on=["backend", "side"])
    out["spread"] = ((g["elapsed_s"].max() - g["elapsed_s"].min()) / g["elapsed_s"].median()).to_numpy()
    out["speedup"] = out["base_s"] / out["median_s"]
    out["efficiency"] = out["speedup"] / (out["threads"] / out["base_threads"])
    return out


def cores_of(df: pd.DataFrame) -> int | None:
    """The usable cores the cases ran on (recorded per row), or None."""
    if "cores" not in df or df["cores"].dropna().empty:
        return None
    return int(df["cores"].dropna().max())


def amdahl_table(df: pd.DataFrame) -> pd.DataFrame:
    """Fitted serial fraction per backend and side (threads <= cores), with the ceiling it implies.

    A fit needs ``MIN_FIT_COUNTS`` distinct thread counts up to the core count; otherwise the
    serial fraction is NaN and ``reason`` says why.
    """
    summary = scaling_table(df)
    cores = cores_of(df)
    own_fsyncs = _not_comparable(df)
    out = []
    for (backend, side), part in summary.groupby(["backend", "side"]):
        fit = part if cores is None else part[part["threads"] <= cores]
        row = {"backend": backend, "side": side, "threads fitted": ",".join(map(str, fit["threads"])),
               "best speed-up": part["speedup"].max(), "at threads": int(part.loc[part["speedup"].idxmax(), "threads"])}
        counts = fit["threads"].nunique()
        s, reason = np.nan, ""
        if counts < MIN_FIT_COUNTS:
            within = f"up to the {cores} cores" if cores else "(cores not recorded)"
            reason = (f"no fit: {counts} distinct thread count(s) {within}; Amdahl's two parameters need "
                      f"{MIN_FIT_COUNTS} or more (through two points any fit is exact)")
        else:
            try:
                s = fit_amdahl(fit["threads"], fit["median_s"])
            except ValueError as exc:
                reason = f"no fit: {exc}"
        if side == "write" and backend in own_fsyncs:
            reason = ("not comparable: the writer fsyncs every file itself, so its serial fraction includes "
                      "those fsyncs" + (f"; {reason}" if reason else ""))
        row["serial fraction"] = s
        row["max speed-up (1/s)"] = (1 / s if s > 0 else np.inf) if np.isfinite(s) else np.nan
        row["reason"] = reason
        out.append(row)
    return pd.DataFrame(out, columns=["backend", "side", "threads fitted", "best speed-up", "at threads",
                                      "serial fraction", "max speed-up (1/s)", "reason"])


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """The chapter's table: ``amdahl_table`` plus, per backend and side, the thread counts whose median
    throughput passed this machine's ceiling (noise or caching, not a result)."""
    table = amdahl_table(df)
    rows = point_rows(with_ceiling_fraction(df)) if len(df) else point_rows(df)
    above: dict[tuple, list[str]] = {}
    if not rows.empty:
        for (backend, side, threads), part in rows.groupby(["backend", "side", "threads"]):
            if ceiling_mark(part):
                above.setdefault((backend, side), []).append(str(threads))
    table["above ceiling (threads)"] = [", ".join(above.get((c, s), [])) or "-"
                                        for c, s in zip(table["backend"], table["side"], strict=True)]
    return tables.table(table, {"serial fraction": "no Amdahl fit (the reason column says why)",
                                "max speed-up (1/s)": "no Amdahl fit (the reason column says why)",
                                "reason": "fitted", "above ceiling (threads)": "none above the ceiling"})


def _sides(summary: pd.DataFrame) -> list[str]:
    return [s for s in ("write", "read") if s in set(summary["side"])]


def _palette(summary: pd.DataFrame) -> dict:
    """One colour per backend, the same in every panel."""
    backends = sorted(summary["backend"].unique())
    return dict(zip(backends, sns.color_palette("tab10", len(backends)), strict=False))


def _thread_axis(ax: plt.Axes, threads: pd.Series, cores: int | None) -> None:
    """Integer ticks at the measured thread counts and a dotted line at the core count."""
    values = sorted(set(int(t) for t in threads))
    if len(values) <= 16:
        ax.set_xticks(values)
    if cores:
        ax.axvline(cores, color="gray", lw=1, ls=":", label=f"{cores} cores")


def _threads_label(threads: float) -> str:
    return f"{threads:g} thread{'s' if threads != 1 else ''}"


def _per_side(df: pd.DataFrame, y: str, ylabel: str, title: str, unit: str, ceiling: bool = False) -> plt.Figure:
    """One panel per side (write, read): the median of ``y`` (a column of ``point_rows``) vs threads, a line
    per backend, whiskers the median's order-statistic interval (their n and coverage on the axis), log y; a small
    table where fewer than three thread counts were measured."""
    rows = point_rows(df)
    if rows.empty:
        return empty_figure("thread scaling")
    what = title.format(side="").strip()
    numbers = median_table(rows, "threads", y, ["backend", "side"], _threads_label, unit)
    if (few := too_few(rows, "threads", what[0].upper() + what[1:], "thread count", numbers)) is not None:
        return few
    ylabel = f"{ylabel} ({whiskers(rows, ['backend', 'side', 'threads'], y)})"
    sides = _sides(rows)
    fig, axes = subplots(1, len(sides), figsize=(7.2, 4.2), squeeze=False)
    for ax, side in zip(axes.flat, sides, strict=True):
        sns.lineplot(data=rows[rows["side"] == side], estimator="median", **CI95, x="threads", y=y, hue="backend",
                     marker="o", palette=_palette(rows), ax=ax)
        if ceiling:
            draw_ceilings(ax, ceiling_gbps(df), (write_ceiling_op(df),) if side == "write" else ("read_cold",),
                          unit="MB/s")
        _thread_axis(ax, rows["threads"], cores_of(df))
        log_axis(ax, "y")
        ax.set(xlabel="threads", ylabel=ylabel if ax is axes.flat[0] else "", title=title.format(side=side))
    legend_under_figure(fig, list(axes.flat))
    return fig


def time_vs_threads(df: pd.DataFrame) -> plt.Figure:
    """Median write and read time vs threads (log), one line per backend (seed 002, figure 3)."""
    return _per_side(df, "elapsed_s", "time, s (log)", "{side} time vs threads", "time, s")


def throughput_vs_threads(df: pd.DataFrame) -> plt.Figure:
    """Write and read MB/s vs threads (seed 002, figure 4), with this machine's ceilings from the same run."""
    return _per_side(df, "mbps", "MB/s of uncompressed data (log)", "{side} speed vs threads", "MB/s", ceiling=True)


def speedup(df: pd.DataFrame) -> plt.Figure:
    """Speed-up (with ideal and fitted-Amdahl curves) and parallel efficiency, per side."""
    summary = scaling_table(df)
    if summary.empty:
        return empty_figure("thread scaling")
    speedups = pd.DataFrame({_threads_label(t): {f"{b} {side}": f"{x:.2f}x (efficiency {e:.0%})"
                                                 for b, side, x, e in part[["backend", "side", "speedup",
                                                                            "efficiency"]].itertuples(index=False)}
                             for t, part in summary.groupby("threads")})
    speedups.index.name = "backend / side"
    numbers = tables.table(speedups, {c: "not measured at this thread count" for c in speedups.columns})
    if (few := too_few(summary, "threads", "Speed-up of the median time", "thread count", numbers)) is not None:
        return few
    fits = amdahl_table(df).set_index(["backend", "side"])["serial fraction"]
    fitted = bool(np.isfinite(fits.to_numpy(dtype=float)).any())
    sides = _sides(summary)
    palette = _palette(summary)
    fig, axes = subplots(2, len(sides), figsize=(7.2, 7), squeeze=False)
    cores = cores_of(df)
    for col, side in enumerate(sides):
        part = summary[summary["side"] == side]
        top, bottom = axes[0, col], axes[1, col]
        grid = np.linspace(part["threads"].min(), part["threads"].max(), 100)
        top.plot(grid, grid / part["threads"].min(), color="black", lw=1, ls="--", label="ideal")
        for backend, b in part.groupby("backend"):
            b = b.sort_values("threads")
            s = fits.get((backend, side), np.nan)
            top.plot(b["threads"], b["speedup"], marker="o", color=palette[backend],
                     label=f"{backend} (s={s:.2f})" if np.isfinite(s) else f"{backend} (no Amdahl fit)")
            if np.isfinite(s):
                top.plot(grid, amdahl_speedup(grid, s, b["threads"].min()), color=palette[backend], lw=1, ls=":")
            bottom.plot(b["threads"], b["efficiency"], marker="o", color=palette[backend], label=backend)
        for ax in (top, bottom):
            _thread_axis(ax, part["threads"], cores)
        why = "dotted: Amdahl fit, s = serial fraction" if fitted else \
            f"no Amdahl fit: fewer than {MIN_FIT_COUNTS} thread counts up to the cores"
        top.set(xlabel="threads", ylabel="speed-up of the median time" if col == 0 else "", title=f"{side}: speed-up"
                + ("" if fitted else " (no Amdahl fit)"))
        bottom.set(xlabel="threads", ylabel="parallel efficiency" if col == 0 else "", ylim=(0, 1.2),
                   title=f"{side}: efficiency")
    fig.suptitle(why)
    legend_under_figure(fig, [axes[0, c] for c in range(len(sides))])
    return fig


def _codec_text(point: pd.Series) -> str:
    codec = point.get("codec")
    return f" ({md_code(codec)})" if isinstance(codec, str) and codec else ""


def conclusion(df: pd.DataFrame) -> str:
    """A short markdown conclusion computed from the run: who scales, the serial fractions, the cores. It opens with
    the chapter's answer (``answer``)."""
    return answer_first(answer(df), _findings(df))


def _findings(df: pd.DataFrame) -> str:
    summary = scaling_table(df)
    if summary.empty:
        return "No successful measurements to compare."
    table = amdahl_table(df)
    cores = cores_of(df)
    lines = [f"- Measured on **{cores} usable cores**; threads above that are oversubscribed and not in the "
             "Amdahl fit." if cores else "- The core count was not recorded."]
    unfitted = table[table["serial fraction"].isna()]
    if len(unfitted):
        names = (f"{md(b)} {md(s)}" for b, s in zip(unfitted["backend"], unfitted["side"], strict=True))
        lines.append(f"- No Amdahl fit for {', '.join(names)}: "
                     f"{unfitted['reason'].iloc[0].removeprefix('no fit: ')}.")
    for side in _sides(summary):
        ranked = summary[summary["side"] == side].sort_values("mbps", ascending=False)
        stores = ranked[~ranked["in_memory"]]
        stores = stores if len(stores) else ranked
        fastest = stores.iloc[0]
        text = (f"- **{md(side)}**: the fastest store is {md(fastest['backend'])}{_codec_text(fastest)} with "
                f"{fastest['threads']} thread(s) ({fastest['mbps']:.0f} MB/s, median of n={fastest['n']})")
        others = stores[(stores["backend"] != fastest["backend"]) & (stores["nbytes"] == fastest["nbytes"])]
        if "codec" in others:  # rank only among the same codec and bytes
            others = others[others["codec"] == fastest["codec"]]
        if others.empty:
            text += "; no other store used the same codec on the same bytes, so it is not ranked"
        else:
            text += "; " + _against_leader(df, side, stores, fastest)
        part = table[table["side"] == side].dropna(subset=["serial fraction"]).sort_values("serial fraction")
        if not part.empty:
            best = part.iloc[0]
            text += (f"; the best scaling is {md(best['backend'])} (serial fraction {best['serial fraction']:.2f}, "
                     f"best speed-up {best['best speed-up']:.2f}x with {best['at threads']} threads)")
        lines.append(text + ".")
        flat = part[part["serial fraction"] >= 0.9]
        if len(flat):
            lines.append(f"  Barely helped by threads here (serial fraction >= 0.9): "
                         f"{', '.join(map(md, flat['backend']))}.")
    text = ", ".join(f"{md(r['backend'])} {md(r['side'])} {r['serial fraction']:.2f}" for _, r in table.iterrows()
                     if np.isfinite(r["serial fraction"]))
    if text:
        lines.append(f"- Serial fractions: {text}.")
    spread = summary["spread"].median()
    if np.isfinite(spread) and spread > 0.1:
        lines.append(f"- Repeated timings of one point varied by {100 * spread:.0f}% (median of max-min over median); "
                     "speed-ups within that are not significant on this machine.")
    lines += error_warning(df)
    return "\n".join(lines)


def _against_leader(df: pd.DataFrame, side: str, stores: pd.DataFrame, fastest: pd.Series) -> str:
    """Every store's best thread count (same codec and bytes as the fastest) against the fastest, by the rule."""
    rows = countable(point_rows(df))
    same = stores[(stores["nbytes"] == fastest["nbytes"])
                  & ((stores["codec"] == fastest["codec"]) if "codec" in stores else True)]
    best = same.sort_values("mbps", ascending=False).drop_duplicates("backend")
    frames = {}
    for _, p in best.iterrows():
        frames[f"{p['backend']} at {p['threads']} threads"] = rows[
            (rows["backend"] == p["backend"]) & (rows["side"] == side) & (rows["threads"] == p["threads"])]
    r = rank_parts(frames, "mbps", True)
    return verdict_text(r, "stores") + "".join(f"; {md(e.name)}: {versus_text(e, r)}" for e in r.others)


def _not_comparable(df: pd.DataFrame) -> set:
    """Writers that fsync every file themselves: their write times are not comparable with the others'."""
    return set(df[df["fsync_comparable"].eq(False)]["backend"]) if "fsync_comparable" in df else set()


def answer(df: pd.DataFrame) -> str:
    """Markdown: per side and backend (stores, not codecs in memory, where measured), the threads the ranking
    rule takes: the fewest within the margin of the fastest (:func:`benchmarks_lib.rules.answers.answer`, the
    verdict box's answer and words), with its throughput."""
    found = question_answer("threads", df)
    if not found.measured:
        return no_answer("thread-scaling measurements")
    own_fsyncs = _not_comparable(df)
    lines = []
    for a in (found, *found.more):
        pick, counts = a.pick_entry, sorted(int(e.name.split()[0]) for e in a.ranking.entries)
        first = pick.rows.iloc[0]
        details = [f"{digits3(float(first['nbytes']) / pick.median / MB)} MB/s",
                   *(["only one thread count measured"] if len(counts) == 1 else
                     ["still gaining at the most threads measured"] if int(first["threads"]) == counts[-1] else []),
                   *(["not comparable: the writer fsyncs every file itself"]
                     if first["side"] == "write" and first["backend"] in own_fsyncs else []),
                   *point_flags(pick.rows)]
        lines.append(f"- {verdict_line(a, label=False)}; {'; '.join(details)}.")
    cores = cores_of(df)
    return ("More threads stop paying at these counts (per side and backend, the fewest threads within "
            f"{MARGIN:.0%} of the fastest by the ranking rule" + (f", on {cores} usable cores" if cores else "")
            + "):\n"
            + "\n".join(lines))


__all__ = ["CHAPTER",
    "amdahl_speedup",
    "amdahl_table",
    "answer",
    "conclusion",
    "cores_of",
    "fit_amdahl",
    "header",
    "point_rows",
    "problems",
    "scaling_table",
    "speedup",
    "summary",
    "throughput_vs_threads",
    "time_vs_threads",
]


#: the chapter's standard figures, by title (the explorer draws them for any run)
FIGURES = {
    "Time vs threads": time_vs_threads,
    "Throughput vs threads": throughput_vs_threads,
    "Speed-up (Amdahl)": speedup,
}

CHAPTER = Chapter("threads", suite="threads", answer=answer, summary=summary,
                  conclusion=conclusion, problems=problems, figures=FIGURES, order=30)
