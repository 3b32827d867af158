"""The flags that keep a chapter from presenting noise as a result: throughputs above this
machine's ceiling (noise or caching) and timed regions too short to measure the operation."""

from __future__ import annotations

import pandas as pd

#: a throughput above this % of the same run's ceiling is noise or caching, never a real result
CEILING_LIMIT_PCT = 100.0
#: what names a point in the above-ceiling table, besides backend and operation (where recorded)
CASE_KEYS = ("test", "dataset", "codec", "level", "threads", "nbytes", "layout", "cutout_kind", "fsync_included",
             "cache_state")
ABOVE_CEILING = "above the ceiling: noise or caching, not a result"
#: a timed region shorter than this (s) weighs fixed costs (process, open, metadata) and timer noise as
#: much as the operation: such points are listed, and a ranking on them says so
SHORT_S = 0.1
#: operations that are latencies by nature, never called short
LATENCIES = ("append_frame", "append_step", "read_region_cold", "read_region_warm", "fsync")
# (an append step also lands in a writer's buffers: its rate may pass the disk's ceiling, the append's total
# may not)
#: the phases inside the writers suite's timed ``total`` (the total is what is judged)
WRITER_PHASES = ("create", "write", "finalize")


def moved_pct_of_ceiling(rows: pd.DataFrame) -> pd.Series:
    """``pct_of_ceiling`` of the bytes that really moved: divided by the compression ratio (recorded, or
    the array's bytes over its bytes on disk), since a compressed store legitimately passes the disk's
    ceiling in uncompressed bytes."""
    pct = rows["pct_of_ceiling"].astype("float64")
    ratio = pd.Series(float("nan"), index=rows.index)
    if "compression_ratio" in rows:
        ratio = rows["compression_ratio"].astype("float64")
    if "nbytes" in rows and "bytes_on_disk" in rows:
        on_disk = rows["nbytes"].astype("float64") / rows["bytes_on_disk"].astype("float64").where(
            rows["bytes_on_disk"].astype("float64") > 0)
        ratio = ratio.fillna(on_disk)
    return pct / ratio.clip(lower=1).fillna(1)


def whole_operations(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows that time a whole operation: not a latency by nature, not a phase inside a writer's total."""
    rows = rows[~rows["operation"].isin(LATENCIES)]
    if "suite" in rows:
        rows = rows[~((rows["suite"] == "writers") & rows["operation"].isin(WRITER_PHASES))]
    return rows


def ceiling_mark(rows: pd.DataFrame) -> str:
    """`` (above the ceiling: ...)`` when the median of these rows (with ``pct_of_ceiling``) passes 100%."""
    if rows.empty or "pct_of_ceiling" not in rows:
        return ""
    return f" ({ABOVE_CEILING})" if moved_pct_of_ceiling(rows).median() > CEILING_LIMIT_PCT else ""


def point_flags(rows: pd.DataFrame) -> list[str]:
    """What an answer must say about the rows of one point: above the ceiling (``rows`` with
    ``pct_of_ceiling``), a whole operation timed under ``SHORT_S``; empty when neither."""
    found = [ABOVE_CEILING] if ceiling_mark(rows) else []
    whole = rows[~rows["operation"].isin(LATENCIES)] if "operation" in rows else rows
    if len(whole) and whole["elapsed_s"].astype("float64").median() < SHORT_S:
        found.append(f"under {SHORT_S * 1e3:.0f} ms: fixed costs weigh as much as the operation")
    return found


def _points(rows: pd.DataFrame):
    """(backend, operation, "k=v, ..." naming the case, rows) per point of ``rows``."""
    keys = ["backend", "operation", *(k for k in CASE_KEYS if k in rows and rows[k].notna().any())]
    for key, part in rows.groupby(keys, dropna=False, sort=True):
        case = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in zip(keys[2:], key[2:], strict=True) if not pd.isna(v))
        yield key[0], key[1], case or "-", part


def above_ceiling(df: pd.DataFrame) -> pd.DataFrame:
    """Points with at least one iteration above 100% of this machine's ceiling (same run): per backend,
    operation and case, the ceiling, the median % and how many iterations passed it."""
    from .common import ok_rows, with_ceiling_fraction  # common ranks with these flags: imported at call time

    cols = ["backend", "operation", "case", "ceiling", "% of ceiling (median)", "iterations above"]
    rows = whole_operations(with_ceiling_fraction(ok_rows(df)))
    rows = rows[rows["backend"] != "ceiling"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for backend, operation, case, part in _points(rows.assign(moved_pct=moved_pct_of_ceiling(rows))):
        above = part["moved_pct"] > CEILING_LIMIT_PCT
        if above.any():
            out.append(dict(zip(cols, (backend, operation, case, part["ceiling_op"].iloc[0],
                                       f"{part['moved_pct'].median():.0f}%", f"{int(above.sum())} of {len(part)}"),
                                strict=True)))
    return pd.DataFrame(out, columns=cols)


def short_points(df: pd.DataFrame) -> pd.DataFrame:
    """Whole operations whose median timed region lasted under ``SHORT_S``: per backend, operation and
    case, the median time and n. Latencies by nature (a frame, a step, a cutout) and the phases inside
    a writer's timed total are not listed."""
    cols = ["backend", "operation", "case", "median time", "n"]
    rows = whole_operations(df[df["status"] == "ok"])
    rows = rows[(rows["backend"] != "ceiling") & rows["elapsed_s"].notna()]
    out = [dict(zip(cols, (backend, operation, case, f"{part['elapsed_s'].median() * 1e3:.0f} ms", len(part)),
                    strict=True))
           for backend, operation, case, part in _points(rows) if part["elapsed_s"].median() < SHORT_S]
    return pd.DataFrame(out, columns=cols)
