"""The server's share of a remote read (the cache chapter's, seed 004): its CPU time against the read's
real time, so that a server that was itself the bottleneck is named, not mistaken for the reader's cost."""

from __future__ import annotations

import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.chapters.common import ok_rows
from benchmarks_lib.chapters.style import empty_figure, legend_outside, log_axis, plt, sns, subplots

#: a server busier than this share of one core during a read is named as a possible bottleneck
SERVER_BUSY_SHARE = 0.5


def server_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Remote OK rows with the server's CPU time, and ``server_share`` = server CPU / read wall time."""
    rows = ok_rows(df)
    if "reader" not in rows or "server_cpu_s" not in rows:
        return rows.iloc[0:0]
    rows = rows[rows["reader"].notna() & (rows["location"] != "local") & rows["server_cpu_s"].notna()].copy()
    rows["server_share"] = rows["server_cpu_s"].astype("float64") / rows["elapsed_s"].astype("float64")
    return rows


def server_cpu(df: pd.DataFrame) -> plt.Figure:
    """Server CPU time against the read's real time, one point per remote read; the diagonal is a
    server busy for the whole read on one core."""
    rows = server_rows(df)
    if rows.empty:
        return empty_figure("server CPU")
    fig, ax = subplots(figsize=(6.5, 4.2))
    rows = rows.assign(latency=rows["latency_ms"].astype("float64").map(lambda v: f"{v:g} ms"))
    rows = rows.assign(reader=rows["reader"] + rows["location"].map({"s3": " (S3)"}).fillna(""))
    sns.scatterplot(data=rows, x="elapsed_s", y="server_cpu_s", hue="reader", style="latency", ax=ax)
    lo = min(rows["elapsed_s"].min(), rows["server_cpu_s"].clip(lower=1e-4).min())
    hi = max(rows["elapsed_s"].max(), rows["server_cpu_s"].max())
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--", label="server busy all the time")
    ax.plot([lo, hi], [lo * SERVER_BUSY_SHARE, hi * SERVER_BUSY_SHARE], color="grey", lw=1, ls=":",
            label=f"{SERVER_BUSY_SHARE:.0%} of one core")
    log_axis(ax, "x")
    log_axis(ax, "y")
    ax.set(xlabel="read real time (s, log)", ylabel="server CPU time (s, log)",
           title="the server's CPU during each remote read")
    legend_outside(ax)
    fig.tight_layout()
    return fig


def server_lines(df: pd.DataFrame) -> list[str]:
    """Conclusion lines: is the server the bottleneck (its CPU against the read's wall time)?"""
    rows = server_rows(df)
    if rows.empty:
        return []
    fastest = rows[rows["latency_ms"] == rows["latency_ms"].min()]
    worst = fastest.iloc[int(fastest["server_share"].to_numpy().argmax())]
    where = f"{md(worst['reader'])} {md(worst['config'])}{' through S3' if worst['location'] == 's3' else ''}"
    share = (f"{fastest['server_share'].median():.0%} of the read's real time (median), "
             f"at most {worst['server_share']:.0%}")
    lat = f"{float(worst['latency_ms']):g} ms"
    if worst["server_share"] <= SERVER_BUSY_SHARE:
        return [f"- The server is not the bottleneck: at {lat} its CPU time was {share} ({where})."]
    busy = fastest[fastest["server_share"] > SERVER_BUSY_SHARE]
    return [f"- At {lat} the server's CPU time was {share} ({where}): {len(busy)} read(s) kept it busy more "
            f"than {SERVER_BUSY_SHARE:.0%} of the time: there the server may be the bottleneck."]


__all__ = ["SERVER_BUSY_SHARE", "server_cpu", "server_lines", "server_rows"]
