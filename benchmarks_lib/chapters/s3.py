"""The object-storage chapter: writing and reading one Zarr array through S3, with the server's own counts.

Per backend and operation: median GB/s with its 95% bootstrap interval over iterations, the requests the
server saw per timed region (PUTs, multipart parts, GETs/HEADs), the bytes it received and sent, the objects
the array became, and the verification (the same library's read and another library's). A write's time
ends when every object was acknowledged by the server (S3 has no fsync: an acknowledged PUT is durable as
far as the server promises).
"""

from __future__ import annotations

import pandas as pd

from ..stats import format_point, summarize
from .common import ceiling_gbps, error_warning, no_answer, ok_rows, problems, run_header, with_ceiling_fraction
from .flags import point_flags
from .style import CI95, WHISKERS, draw_ceilings, empty_figure, legend_outside, sns, subplots

TIMES = ("write: create to finalize, every object PUT and acknowledged by the server; read: the whole array back "
         "through S3 after the server's files were evicted from the page cache")


def header(result) -> str:
    """The run header of this chapter (markdown)."""
    return run_header(result, TIMES)


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    rows = ok_rows(df)
    return rows[(rows["backend"] != "ceiling") & rows["operation"].isin(["write", "read"])] if len(rows) else rows


def speeds(df: pd.DataFrame):
    """Median GB/s per backend for write and read through S3, the machine's raw disk ceilings dashed."""
    rows = _rows(df)
    if rows.empty:
        return empty_figure("S3 write/read")
    rows = rows.assign(label=rows["backend"] + " (" + rows["codec"].astype(str) + ")")
    fig, ax = subplots(figsize=(8, 1.2 + 0.6 * rows["label"].nunique()))
    sns.barplot(data=rows, y="label", x="gbps", hue="operation", estimator="median", **CI95, ax=ax)
    draw_ceilings(ax, ceiling_gbps(df), ("write_nofsync", "read_cold"), vertical=True)
    ax.set(xlabel=f"GB/s through S3 ({WHISKERS})", ylabel="",
           title="One Zarr array through S3 on 127.0.0.1 (server and client share this machine)")
    legend_outside(ax)
    fig.tight_layout()
    return fig


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (backend, operation): speed, the server's requests and bytes, objects, verification."""
    rows = _rows(df)
    cols = ["backend", "codec", "operation", "GB/s", "n", "requests", "PUT", "multipart parts", "part MB",
            "GET/HEAD", "MB in", "MB out", "objects", "MB stored", "verified"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for p in summarize(rows, ["backend", "codec", "operation"], "gbps").itertuples(index=False):
        part = rows[(rows["backend"] == p.backend) & (rows["codec"] == p.codec) & (rows["operation"] == p.operation)]

        def med(col: str, scale: float = 1.0, part=part) -> str:
            values = part[col].dropna() if col in part else pd.Series(dtype=float)
            return "-" if values.empty else f"{values.astype(float).median() * scale:.4g}"

        out.append({"backend": p.backend, "codec": p.codec, "operation": p.operation,
                    "GB/s": format_point(p._asdict()), "n": p.n, "requests": med("s3_requests"),
                    "PUT": med("s3_put_requests"), "multipart parts": med("s3_multipart_parts"),
                    "part MB": med("multipart_part_bytes", 1e-6), "GET/HEAD": med("s3_get_requests"),
                    "MB in": med("s3_received_bytes", 1e-6), "MB out": med("s3_sent_bytes", 1e-6),
                    "objects": med("objects"), "MB stored": med("bytes_on_disk", 1e-6),
                    "verified": "yes" if part["verified"].astype("boolean").fillna(False).all() else "NO"})
    return pd.DataFrame(out, columns=cols)


def conclusion(df: pd.DataFrame) -> str:
    rows = _rows(df)
    if rows.empty:
        return "No S3 measurements in this run."
    lines = [*error_warning(df), "## Conclusion", ""]
    for (backend, op), part in rows.groupby(["backend", "operation"]):
        requests = part["s3_requests"].median() if "s3_requests" in part else float("nan")
        lines.append(f"- **{backend}** {op}: {part['gbps'].median():.3g} GB/s (median of n={len(part)}), "
                     f"{requests:.0f} requests to the server for {part['objects'].median():.0f} objects.")
    lines += ["", "Server and client share this machine's cores here: on a real object store the network and the "
              "server's own limits take their place; run the same chapter with `ENDPOINT` set to measure one."]
    return "\n".join(lines)


def answer(df: pd.DataFrame) -> str:
    rows = _rows(with_ceiling_fraction(df))
    if rows.empty:
        return no_answer("S3 measurements")
    parts = []
    for op, part in rows.groupby("operation", sort=False):
        med = part.groupby("backend")["gbps"].median().sort_values(ascending=False)
        best = med.index[0]
        flags = point_flags(part[part["backend"] == best])
        parts.append(f"{op} **{best}** at {med.iloc[0]:.3g} GB/s" + (f" ({'; '.join(flags)})" if flags else "")
                     + (f", then {', '.join(f'{b} {v:.3g}' for b, v in med.iloc[1:].items())}" if len(med) > 1 else ""))
    return "Through S3 (MinIO on this machine), fastest: " + "; ".join(parts) + "."


#: the chapter's standard figures, by title (the explorer draws them for any run)
FIGURES = {"Write and read GB/s through S3": speeds}

__all__ = ["FIGURES", "answer", "conclusion", "header", "problems", "speeds", "summary"]
