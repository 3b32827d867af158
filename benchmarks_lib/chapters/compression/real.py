"""The compression chapter's real data beside synthetic: does a synthetic dataset compress like the real data it
imitates?

Each real array of the run (``real_datasets``: the pyvista examples by default) was measured beside its synthetic
twin (``suites.twins``): the synthetic dataset of its kind generated at its dtype and shape, cut into the same
chunks and encoded by the same codecs in memory. A ratio is deterministic (the same chunks give the same bytes);
the speeds are medians over the iterations, shown and never ranked here.
"""

from __future__ import annotations

import pandas as pd

from benchmarks_lib.base.markup import md, md_code
from benchmarks_lib.base.specs import shape_text
from benchmarks_lib.chapters import common, tables
from benchmarks_lib.chapters.style import SMALL, empty_figure, legend_under_figure, plt, ratio_log_axis, subplots
from benchmarks_lib.rules.compression import PAIR_COLUMNS, summarize_points
from benchmarks_lib.suites.kit.twins import ROLE_REAL, ROLE_TWIN

#: a twin compresses like its real data when, for every codec, the two ratios are within this factor
ALIKE = 1.5


def _shape(shape: object) -> str:
    return shape_text(shape, missing="-")


def pair_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the real arrays and their twins."""
    return df[df["pair_of"].notna()] if "pair_of" in df else df.iloc[0:0]


def without_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """Every other row: what the chapter's Pareto fronts compare."""
    return df[df["pair_of"].isna()] if "pair_of" in df else df


def pair_points(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (real array, codec): the real data's and the twin's ratio, encode and decode MB/s, n."""
    rows = pair_rows(df)
    points = summarize_points(rows) if len(rows) else rows
    if points.empty or not set(PAIR_COLUMNS) <= set(points):
        return pd.DataFrame()
    real, twin = (points[points["pair_role"] == role] for role in (ROLE_REAL, ROLE_TWIN))
    both = real.merge(twin, on=["pair_of", "codec"], suffixes=("_real", "_twin"))
    return both.sort_values(["pair_of", "codec"]).reset_index(drop=True)


def pairs_table(df: pd.DataFrame) -> tables.Table:
    """The section's table: per real array and codec, both ratios side by side, and the speeds."""
    both = pair_points(df)
    if both.empty:
        return tables.table(pd.DataFrame({"real data": []}))
    out = pd.DataFrame({
        "real data": both["pair_of"], "codec": both["codec"], "twin": both["pair_kind_twin"],
        "dtype": both["dtype_real"], "shape": both["shape_real"].map(_shape),
        "ratio real": both["compression_ratio_real"], "ratio twin": both["compression_ratio_twin"],
        "twin / real": both["compression_ratio_twin"] / both["compression_ratio_real"],
        "encode MB/s real": both["write_mbps_real"].round(0), "encode MB/s twin": both["write_mbps_twin"].round(0),
        "decode MB/s real": both["read_mbps_real"].round(0), "decode MB/s twin": both["read_mbps_twin"].round(0),
        "n": both[["write_n_real", "write_n_twin"]].min(axis=1),
    })
    return tables.table(out, keys=["real data", "codec"])


def _spread(factors: pd.Series) -> str:
    """The twin/real ratios of the codecs as words: "5.4-5.8x less", "1.1x more", or a span across 1."""
    lo, hi = float(factors.min()), float(factors.max())
    if lo >= 1 or hi < 1:
        a, b, word = (lo, hi, "more") if lo >= 1 else (1 / hi, 1 / lo, "less")
        return f"{a:.3g}x {word}" if f"{a:.3g}" == f"{b:.3g}" else f"{a:.3g}-{b:.3g}x {word}"
    return f"between {1 / lo:.3g}x less and {hi:.3g}x more"


def pairs_answer(df: pd.DataFrame) -> str:
    """Markdown: per real array, whether its twin compresses like it (the ``ALIKE`` rule), with the ratios."""
    both = pair_points(df)
    if both.empty:
        skipped = pair_rows(df)
        skipped = skipped[skipped["status"] == "skip"]["reason"].dropna() if len(skipped) else skipped
        why = f": {md(skipped.iloc[0])}" if len(skipped) else " (no real_datasets in this run)"
        return f"No real data was measured beside its synthetic twin in this run{why}."
    lines = []
    for real, part in both.groupby("pair_of", sort=True):
        first = part.iloc[0]
        kind = first["pair_kind_twin"]
        factors = part["compression_ratio_twin"] / part["compression_ratio_real"]
        alike = bool(((factors <= ALIKE) & (factors >= 1 / ALIKE)).all())
        ratios = "; ".join(f"{md_code(r['codec'])} {r['compression_ratio_twin']:.3g}x vs "
                           f"{r['compression_ratio_real']:.3g}x" for _, r in part.iterrows())
        lines.append(f"- {md(real)} ({md(first['dtype_real'])}, {_shape(first['shape_real'])}): "
                     f"**{'yes' if alike else 'no'}**, synthetic {md_code(kind)} compresses "
                     f"{_spread(factors)} than the real data (twin vs real: {ratios}).")
    return (f"Alike means within {ALIKE:g}x of the real data's ratio for every codec, at the same dtype, shape, "
            "chunks and codec:\n\n" + "\n".join(lines))


def pairs_figure(df: pd.DataFrame) -> plt.Figure:
    """Ratio per codec (log), the real data beside its twin joined by a line, one panel per real array: the codecs
    down the shared left axis, so their names are never rotated over each other."""
    both = pair_points(df)
    if both.empty:
        return empty_figure("Real data beside synthetic")
    names = sorted(both["pair_of"].unique())
    codecs = sorted(both["codec"].unique())
    where = {codec: i for i, codec in enumerate(codecs)}
    fig, axes = subplots(1, len(names), figsize=(7.2, 1.6 + 0.32 * len(codecs)), squeeze=False, sharey=True)
    for ax, name in zip(axes.flat, names, strict=True):
        part = both[both["pair_of"] == name]
        y = part["codec"].map(where).to_numpy()
        ax.hlines(y, part["compression_ratio_twin"], part["compression_ratio_real"], color="gray", lw=1)
        ax.scatter(part["compression_ratio_real"], y, marker="o", s=40, color="tab:blue", label="real", zorder=3)
        ax.scatter(part["compression_ratio_twin"], y, marker="s", s=40, color="tab:orange", zorder=3,
                   label=f"synthetic twin ({part['pair_kind_twin'].iloc[0]})")
        ax.set_yticks(range(len(codecs)), codecs, fontsize=SMALL)
        ax.set_ylim(len(codecs) - 0.5, -0.5)
        ratio_log_axis(ax, "x")
        ax.set(xlabel="compression ratio (log)",
               title=f"{name}\n{part['dtype_real'].iloc[0]} {_shape(part['shape_real'].iloc[0])}")
    fig.suptitle("Real data vs its synthetic twin: same dtype, shape, chunks and codec (in memory)")
    legend_under_figure(fig, list(axes.flat))
    return fig


def problems(df: pd.DataFrame) -> str:
    """The chapter's problems (:func:`common.problems`), the real data's successful points left to their section:
    in memory they last a few milliseconds each, and that section shows their speeds without ranking them."""
    measured = (df["pair_of"].notna() & (df["status"] == "ok")) if "pair_of" in df else pd.Series(False, df.index)
    text = common.problems(df[~measured])
    if not measured.any():
        return text
    points = len(df[measured].groupby(["dataset", "codec"]))
    return (text + f"\n\nThe {points} in-memory points of \"Real data beside synthetic\" are not in these "
            "checks: they last a few milliseconds each, and that section shows their speeds without ranking them.")


__all__ = ["ALIKE", "pair_points", "pair_rows", "pairs_answer", "pairs_figure", "pairs_table",
           "problems", "without_pairs"]
