"""The compression chapter: what a higher level or another codec costs and buys (seed 002).

A *point* is one (backend, dataset, codec setting); its time is the median over its
iterations, its speed the uncompressed bytes over that time (MB = 10^6 bytes), its ratio
uncompressed / compressed bytes. ``encode``/``decode`` (codecs in memory) count as the
write/read side of a point, flagged ``in_memory``: they bound what a store using that codec can
reach, so they are drawn but take no part in the Pareto front unless asked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import md, md_code, short
from benchmarks_lib.chapters import tables
from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.chapters.common import (
    MB,
    answer_first,
    digits3,
    error_warning,
    no_answer,
    ok_rows,
    run_header,
    with_ceiling_fraction,
    write_ceiling_op,
)
from benchmarks_lib.chapters.compression.real import pairs_answer, pairs_figure, pairs_table, problems, without_pairs
from benchmarks_lib.chapters.flags import ceiling_mark, point_flags
from benchmarks_lib.chapters.style import (
    MIN_LINE_POINTS,
    SMALL,
    draw_ceilings,
    empty_figure,
    label_points,
    legend_outside,
    log_axis,
    median_table,
    plt,
    ratio_log_axis,
    sns,
    subplots,
    too_few,
)
from benchmarks_lib.data.meshes import MESH_DATASET
from benchmarks_lib.rules.answers import answer as question_answer
from benchmarks_lib.rules.ceilings import ceiling_gbps
from benchmarks_lib.rules.compression import (
    POINT_KEYS,
    SIDE,
    SLOWDOWN,
    pareto_front,
    summarize_points,
    worth_taking,
)
from benchmarks_lib.rules.words import verdict_line

#: ceiling operations drawn on throughput axes, per side
CEILING_OPS = {"write_mbps": ("memcpy", "write_nofsync", "write_fsync"), "read_mbps": ("memcpy", "read_cold")}


TIMES = ("write: the store (or the .vtu / zvtk file) written to the page cache, no fsync unless FSYNC; read: "
         "back cold after a checked page-cache eviction, verified; one write and read of every point per round")


def header(result) -> str:
    """The run header of this chapter (markdown)."""
    return run_header(result, TIMES)


# -- seed 002's two figures -----------------------------------------------------------------
def zvtk_levels(df: pd.DataFrame) -> pd.DataFrame:
    """zvtk points on the tetrahedral mesh, ordered by level (a person's mesh file is in the tables only)."""
    points = summarize_points(df)
    return points[(points["backend"] == "zvtk") & (points["dataset"] == MESH_DATASET)].sort_values(
        "level").reset_index(drop=True)


def _level_rows(df: pd.DataFrame) -> pd.DataFrame:
    """zvtk's timed rows on the tetrahedral mesh, with ``side`` (write, read) and ``mbps``."""
    rows = ok_rows(df)
    rows = rows[(rows["backend"] == "zvtk") & (rows["dataset"] == MESH_DATASET) & rows["operation"].isin(list(SIDE))]
    return rows.assign(side=rows["operation"].map(SIDE),
                       mbps=rows["nbytes"].astype(float) / rows["elapsed_s"].astype(float) / MB)


def _levels_table(df: pd.DataFrame, z: pd.DataFrame, value: str, unit: str, sides=("write",)):
    """The few levels measured as a table (a line needs three): each side's median ``value`` with its interval and
    n per level, and the compression ratio."""
    rows = _level_rows(df)
    numbers = median_table(rows[rows["side"].isin(sides)], "level", value, "side", lambda v: f"level {v:g}", unit)
    ratio = pd.DataFrame([{f"level {lv:g}": f"{r:.2f}" for lv, r in zip(z["level"], z["compression_ratio"],
                                                                        strict=True)}], index=["compression ratio"])
    return tables.table(pd.concat([numbers, ratio]).rename_axis(numbers.index.name),
                        {c: "not measured at this level" for c in numbers.columns})


def zvtk_time_and_ratio(df: pd.DataFrame) -> plt.Figure:
    """Seed 002, figure 1: write time (log) and compression ratio vs zstd level, on twin axes."""
    z = zvtk_levels(df)
    if z.empty:
        return empty_figure("zvtk levels")
    numbers = _levels_table(df, z, "elapsed_s", "time, s") if z["level"].nunique() < MIN_LINE_POINTS else None
    if (few := too_few(z, "level", "zvtk: time and ratio per level", "level", numbers)) is not None:
        return few
    fig, ax1 = subplots(figsize=(7.2, 4.5))
    ax1.plot(z["level"], z["write_s"], marker="o", color="tab:blue", label="write time (median)")
    log_axis(ax1, "y")
    ax1.set_xlabel("zstd compression level")
    ax1.set_ylabel("write time (s, log; median over iterations)", color="tab:blue")
    ax1.tick_params(axis="y", labelcolor="tab:blue")
    ax2 = ax1.twinx()
    ax2.plot(z["level"], z["compression_ratio"], marker="s", color="tab:orange", label="compression ratio")
    ax2.set_ylabel("compression ratio", color="tab:orange")
    ax2.tick_params(axis="y", labelcolor="tab:orange")
    ax2.grid(False)
    n = z["mesh_n"].iloc[0] if "mesh_n" in z else None
    size = f"{z['nbytes'].iloc[0] / MB:.0f} MB mesh" + (f" (n={n:.0f})" if n is not None and pd.notna(n) else "")
    ax1.set_title(f"zvtk write time (log) and compression ratio vs level\n{size}, "
                  f"{z['threads'].iloc[0]:.0f} threads")
    fig.tight_layout()
    return fig


def zvtk_throughput(df: pd.DataFrame) -> plt.Figure:
    """Seed 002, figure 2: write and cold-read MB/s vs level, with the disk ceilings of the same run."""
    z = zvtk_levels(df)
    if z.empty:
        return empty_figure("zvtk levels")
    numbers = _levels_table(df, z, "mbps", "MB/s", ("write", "read")) if z["level"].nunique() < MIN_LINE_POINTS \
        else None
    if (few := too_few(z, "level", "zvtk: throughput per level", "level", numbers)) is not None:
        return few
    fig, ax = subplots(figsize=(7.2, 5))
    ax.plot(z["level"], z["write_mbps"], marker="o", label="write")
    ax.plot(z["level"], z["read_mbps"], marker="o", label="read (cold)")
    draw_ceilings(ax, ceiling_gbps(df), ("read_cold", write_ceiling_op(df)), unit="MB/s")
    vtu = summarize_points(df)
    vtu = vtu[(vtu["backend"] == "vtu") & (vtu["dataset"] == MESH_DATASET)]
    for _, row in vtu.iterrows():
        ax.scatter([z["level"].max() + 1.5], [row["write_mbps"]], marker="x", color="tab:blue")
        ax.annotate(f"vtu {row['codec']}", (z["level"].max() + 1.5, row["write_mbps"]), fontsize=SMALL,
                    xytext=(4, 0), textcoords="offset points", va="center")
    log_axis(ax, "y")
    ax.set(xlabel="zstd compression level", ylabel="uncompressed MB/s (log; median)",
           title="zvtk read/write speed vs compression level\n(x: the .vtu writer's write speed, for reference)")
    legend_outside(ax, below=True)
    fig.tight_layout()
    return fig


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """The chapter's table: the Pareto-optimal stores per dataset, on the write or the read front (or both),
    and which of their speeds passed this machine's ceiling on the bytes that moved (noise or caching)."""
    points = summarize_points(df)
    if points.empty:
        return pd.DataFrame()
    key = ["dataset", "backend", "codec"]
    on_write = pareto_front(points, "write_mbps")[key].assign(front_write=True)
    on_read = pareto_front(points, "read_mbps")[key].assign(front_read=True)
    table = points.merge(on_write, on=key, how="left").merge(on_read, on=key, how="left")
    table = table[table["front_write"].notna() | table["front_read"].notna()]
    front = np.where(table["front_write"].notna() & table["front_read"].notna(), "write+read",
                     np.where(table["front_write"].notna(), "write", "read"))
    out = pd.DataFrame({
        "dataset": table["dataset"], "backend": table["backend"], "codec": table["codec"],
        "ratio": table["compression_ratio"].round(2), "write MB/s": table["write_mbps"].round(0),
        "read MB/s": table["read_mbps"].round(0), "Pareto front": front,
    })
    out["above ceiling"] = _above_ceiling_sides(df, out)
    out = out.sort_values(["dataset", "write MB/s"], ascending=[True, False]).reset_index(drop=True)
    return tables.table(out, {"write MB/s": "not written as a store (a codec alone)",
                              "read MB/s": "not read back as a store (a codec alone)"})


def _above_ceiling_sides(df: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    """Per row of ``table``: the sides (write, read) whose median passed the ceiling, or ``-``."""
    rows = with_ceiling_fraction(ok_rows(df))
    rows = rows[(rows["backend"] != "ceiling") & rows["operation"].isin(list(SIDE))]
    above: dict[tuple, list[str]] = {}
    for (backend, dataset, codec, op), part in rows.groupby([*POINT_KEYS, "operation"], dropna=False):
        if ceiling_mark(part):
            above.setdefault((backend, dataset, codec), []).append(SIDE[op])
    return [", ".join(above.get(key, [])) or "-"
            for key in zip(table["backend"], table["dataset"], table["codec"], strict=True)]


def pareto(df: pd.DataFrame, speed: str = "write_mbps") -> plt.Figure:
    """Ratio vs speed for every point, one panel per dataset (real data beside its twin: ``pairs_figure``); the front
    joined; the run's ceilings as lines."""
    points = summarize_points(without_pairs(df)).dropna(subset=[speed, "compression_ratio"])
    if points.empty:
        return empty_figure("Pareto front")
    datasets = sorted(points["dataset"].unique())
    cols = min(2, len(datasets))
    rows_n = int(np.ceil(len(datasets) / cols))
    fig, axes = subplots(rows_n, cols, figsize=(7.2, 3.6 * rows_n + 1.2), squeeze=False)
    front = pareto_front(points, speed)
    ceiling = ceiling_gbps(df)
    backends = sorted(points["backend"].unique())
    palette = dict(zip(backends, sns.color_palette("tab10", len(backends)), strict=False))
    if "codec_family" not in points:
        points = points.assign(codec_family=None)
    families = sorted(points["codec_family"].dropna().unique())
    markers = dict(zip(families, "osD^vP*Xh<>", strict=False))
    labels = {}
    for ax, name in zip(axes.flat, datasets, strict=False):
        part = points[points["dataset"] == name]
        for (backend, family, memory), grp in part.groupby(["backend", "codec_family", "in_memory"], dropna=False):
            color = palette[backend]
            ax.scatter(grp[speed], grp["compression_ratio"], marker=markers.get(family, "o"), s=22, alpha=0.8,
                       facecolors="none" if memory else color, edgecolors=color)
        f = front[front["dataset"] == name].sort_values(speed)
        ax.plot(f[speed], f["compression_ratio"], color="black", lw=1, drawstyle="steps-post", label="Pareto front")
        labels[name] = [(row[speed], row["compression_ratio"], short(row["codec"])) for _, row in f.iterrows()]
        draw_ceilings(ax, ceiling, CEILING_OPS[speed], unit="MB/s", vertical=True)
        wide = part["compression_ratio"].max() / max(part["compression_ratio"].min(), 1e-9) > 4
        log_axis(ax, "x")
        if wide:
            ratio_log_axis(ax)
        ax.set(title=name, xlabel=f"{speed.split('_')[0]} MB/s (log; median)",
               ylabel="compression ratio" + (" (log)" if wide else ""))
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_axis_off()
    hollow = bool(points["in_memory"].astype(bool).any())
    handles = [plt.Line2D([], [], color=palette[b], marker="o", ls="", label=b) for b in backends]
    handles += [plt.Line2D([], [], color="gray", marker=markers[f], ls="", label=f) for f in families]
    if hollow:  # only where such a point is drawn
        handles.append(plt.Line2D([], [], color="gray", marker="o", markerfacecolor="none", ls="",
                                  label="hollow: the codec alone, in memory"))
    handles += [h for h in axes.flat[0].get_legend_handles_labels()[0] if isinstance(h, plt.Line2D)]
    ncol = 3
    legend_rows = int(np.ceil(len(handles) / ncol))
    fig.set_size_inches(fig.get_figwidth(), fig.get_figheight() + 0.22 * legend_rows)
    fig.legend(handles=handles, loc="lower center", ncol=ncol, frameon=False)
    fig.suptitle(f"Compression ratio vs {speed.split('_')[0]} speed (uncompressed MB/s)\nline: Pareto front of the "
                 "stores, each named by its codec; dashed: this machine's ceilings")
    fig.tight_layout(rect=(0, 0.24 * legend_rows / fig.get_figheight(), 1, 1))
    fig.canvas.draw()  # once laid out: labels placed apart, never cut short
    for ax, name in zip(axes.flat, datasets, strict=False):
        label_points(ax, labels[name], drawn_already=True)
    return fig


# -- rendering ----------------------------------------------------------------------------
def mesh_rendering(n: int = 16, seed: int = 42, out_dir: str | Path | None = None):
    """An offscreen picture of the benchmark mesh (at a small n) for display, or a note why not.

    Without ``out_dir`` the PNG is made in a marked temporary directory that is removed once the
    picture is in memory.
    """
    from IPython.display import Image, Markdown

    from benchmarks_lib.base.scratch import make_temp_scratch, remove_tree
    from benchmarks_lib.data.meshes import render_mesh_png

    where = Path(out_dir) if out_dir else make_temp_scratch("iobench-render-")
    try:
        rendering = render_mesh_png(where / f"tet_mesh_n{n}.png", n=n, seed=seed)
        if rendering.ok:
            return Image(data=rendering.path.read_bytes(), format="png")
        return Markdown(f"*No mesh picture: {rendering.message}*")
    finally:
        if not out_dir:
            remove_tree(where, where)


# -- conclusion ---------------------------------------------------------------------------
def _fmt_point(row: pd.Series) -> str:
    return (f"{md(row['backend'])} {md_code(row['codec'])} (ratio {row['compression_ratio']:.2f}, "
            f"write {row['write_mbps']:.0f} MB/s, read {row['read_mbps']:.0f} MB/s)")


def conclusion(df: pd.DataFrame) -> str:
    """A short markdown conclusion computed from the run: zvtk's best levels, vtu, the Pareto picks. It opens with the
    chapter's answer (``answer``)."""
    return answer_first(answer(df), _findings(df))


def _findings(df: pd.DataFrame) -> str:
    points = summarize_points(df)
    lines: list[str] = []
    z = zvtk_levels(df).dropna(subset=["write_mbps"])
    if not z.empty:
        fastest = z.loc[z["write_mbps"].idxmax()]
        densest = z.loc[z["compression_ratio"].idxmax()]
        lines.append(f"- **zvtk**: the fastest write is level {fastest['level']:.0f} "
                     f"({fastest['write_mbps']:.0f} MB/s, ratio {fastest['compression_ratio']:.2f}, cold read "
                     f"{fastest['read_mbps']:.0f} MB/s); the best ratio is {densest['compression_ratio']:.2f} at level "
                     f"{densest['level']:.0f}, written at {densest['write_mbps']:.0f} MB/s "
                     f"({fastest['write_mbps'] / densest['write_mbps']:.0f}x slower).")
        good = z[z["write_mbps"] >= 0.5 * fastest["write_mbps"]]
        knee = good.loc[good["compression_ratio"].idxmax()]
        lines.append(f"- Best ratio at no less than half the fastest write speed: level {knee['level']:.0f} "
                     f"(ratio {knee['compression_ratio']:.2f}, {knee['write_mbps']:.0f} MB/s). Cold reads span "
                     f"{z['read_mbps'].min():.0f}-{z['read_mbps'].max():.0f} MB/s across levels.")
        default = z[z["level"] == 3]
        vtu = points[(points["backend"] == "vtu") & (points["dataset"] == MESH_DATASET)].dropna(subset=["write_mbps"])
        if not default.empty and not vtu.empty:
            d = default.iloc[0]
            v = vtu.loc[vtu["compression_ratio"].idxmax()]
            lines.append(f"- **vs .vtu**: zvtk level 3 writes {d['write_mbps'] / v['write_mbps']:.1f}x and reads "
                         f"{d['read_mbps'] / v['read_mbps']:.1f}x faster than the VTK XML writer with "
                         f"{md_code(v['codec'])} (ratios {d['compression_ratio']:.2f} vs "
                         f"{v['compression_ratio']:.2f}).")
    arrays = points[~points["backend"].isin(["zvtk", "vtu"])]
    for name in sorted(arrays["dataset"].unique()):
        front = pareto_front(arrays[arrays["dataset"] == name], "write_mbps")
        if front.empty:
            continue
        fastest, densest = front.iloc[0], front.iloc[-1]
        text = f"- **{md(name)}**: fastest on the write front {_fmt_point(fastest)}"
        if densest["codec"] != fastest["codec"] or densest["backend"] != fastest["backend"]:
            text += f"; highest ratio {_fmt_point(densest)}"
        lines.append(text + f" ({len(front)} Pareto-optimal choices).")
    verified = points["verified"].astype(bool) if "verified" in points else pd.Series(dtype=bool)
    if len(points):
        lines.append(f"- Round trips verified: {int(verified.sum())} of {len(points)} points "
                     "(exact mesh equality or array checksum).")
    lines += error_warning(df)
    return "\n".join(lines) if lines else "No successful measurements to compare."


def answer(df: pd.DataFrame) -> str:
    """Markdown: per dataset (the headline first), the store setting with the best compression ratio among those
    writing within ``SLOWDOWN``x of the fastest write (:func:`benchmarks_lib.rules.answers.answer`, the verdict
    box's answer and words), its write speed, and the fastest write where that is another setting."""
    found = question_answer("codec", df)
    if not found.measured:
        return no_answer("compression measurements of a store")
    rows = with_ceiling_fraction(ok_rows(df))
    picks = {str(d): (fastest, pick) for d, fastest, pick in worth_taking(summarize_points(df))}
    lines = []
    for a in (found, *found.more):
        fastest, pick = picks[a.of]
        written = rows[(rows["backend"] == pick["backend"]) & (rows["dataset"] == a.of)
                       & (rows["codec"] == pick["codec"]) & (rows["operation"].map(SIDE) == "write")]
        same = pick["backend"] == fastest["backend"] and pick["codec"] == fastest["codec"]
        details = [f"{digits3(pick['write_mbps'])} MB/s written",
                   "also the fastest write" if same else f"the fastest, {md(fastest['backend'])} "
                   f"{md_code(fastest['codec'])}, writes {digits3(fastest['write_mbps'])} MB/s at ratio "
                   f"{fastest['compression_ratio']:.2f}", *point_flags(written)]
        lines.append(f"- {verdict_line(a, label=False)}; {'; '.join(details)}.")
    return (f"Worth taking, per dataset: the best compression ratio among the settings that write no more than "
            f"{SLOWDOWN:g}x slower than the fastest (uncompressed MB/s, medians; how sure: the pick's write time "
            "against the fastest, by the ranking rule):\n" + "\n".join(lines))


__all__ = ["CHAPTER", "SLOWDOWN", "answer", "conclusion", "header", "mesh_rendering", "pairs_answer", "pairs_figure",
           "pairs_table", "pareto", "pareto_front", "problems", "summarize_points", "summary", "worth_taking",
           "zvtk_levels", "zvtk_throughput", "zvtk_time_and_ratio"]


#: the chapter's standard figures, by title (the explorer draws them for any run)
FIGURES = {
    "zvtk: time and ratio per level": zvtk_time_and_ratio,
    "zvtk: throughput per level": zvtk_throughput,
    "Write speed vs ratio (Pareto)": pareto,
    "Read speed vs ratio (Pareto)": lambda df: pareto(df, speed="read_mbps"),
    "Real data beside synthetic (ratios)": pairs_figure,
}

CHAPTER = Chapter("compression", suite="compression", answer=answer, summary=summary,
                  conclusion=conclusion, problems=problems, figures=FIGURES, order=20)
