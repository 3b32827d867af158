"""The flags that keep a chapter from presenting noise as a result: throughputs above this
machine's ceiling (noise or caching), timed regions too short to measure the operation, and cases
measured while the machine was busy with other work.

A run measures two disk ceilings (``ceiling.py``): one stream at queue depth 1, and as many parallel
streams as usable cores. A library with several threads or processes may pass the first and still be
real; nothing passes the second. So a point is flagged above the parallel ceiling where the run measured
it (writes; reads whose cold proof holds) and above the single-stream one otherwise (older runs, warm
reads against memcpy, reads not proven cold, where caching may explain the speed). Points between the
two are listed apart, as what they are.
"""

from __future__ import annotations

import pandas as pd

from benchmarks_lib.measure.load import OTHER_CPU_LIMIT_PCT, STEAL_LIMIT_PCT, under_load
from benchmarks_lib.rules.ceilings import ok_rows, parallel_ceiling_op, with_ceiling_fraction
from benchmarks_lib.rules.words import case_text
from benchmarks_lib.suites.ceiling import describe_ceiling

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


def judged_by_parallel(rows: pd.DataFrame) -> pd.Series:
    """Per row: is it judged by the parallel ceiling? Where the run measured one, for a write or a read whose
    cold proof holds (a read not proven cold may be caching: it keeps the single-stream ceiling)."""
    if "pct_of_parallel_ceiling" not in rows:
        return pd.Series(False, index=rows.index)
    cache = rows["cache_state"] if "cache_state" in rows else pd.Series(None, index=rows.index, dtype=object)
    return (cache.isna() | (cache == "cold")) & rows["pct_of_parallel_ceiling"].notna()


def judged_pct(rows: pd.DataFrame) -> pd.Series:
    """The % of the ceiling a point is judged by: of the parallel ceiling (``judged_by_parallel``), else of the
    single-stream one (``pct_of_ceiling``)."""
    single = rows["pct_of_ceiling"].astype("float64")
    if "pct_of_parallel_ceiling" not in rows:
        return single
    return rows["pct_of_parallel_ceiling"].astype("float64").where(judged_by_parallel(rows), single)


def judged_ceiling(rows: pd.DataFrame) -> pd.Series:
    """The ceiling operation ``judged_pct`` divides by, per row."""
    return pd.Series([parallel_ceiling_op(op) if par else op
                      for op, par in zip(rows["ceiling_op"], judged_by_parallel(rows), strict=True)], index=rows.index)


def moved_pct_of_ceiling(rows: pd.DataFrame, column: str | None = None) -> pd.Series:
    """The % of the ceiling (``judged_pct``, or ``column``) of the bytes that really moved: divided by the
    compression ratio (recorded, or the array's bytes over its bytes on disk), since a compressed store
    legitimately passes the disk's ceiling in uncompressed bytes."""
    pct = judged_pct(rows) if column is None else rows[column].astype("float64")
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
    """(backend, operation, the case in words (``words.case_text``), rows) per point of ``rows``."""
    keys = ["backend", "operation", *(k for k in CASE_KEYS if k in rows and rows[k].notna().any())]
    for key, part in rows.groupby(keys, dropna=False, sort=True):
        case = case_text(dict(zip(keys[2:], key[2:], strict=True)), escape=str)  # the table escapes its cells
        yield key[0], key[1], case or "-", part


def _ceiling_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The whole operations of the backends (ok rows) with their ceiling fractions."""
    rows = whole_operations(with_ceiling_fraction(ok_rows(df)))
    return rows[rows["backend"] != "ceiling"]


def _ceiling_name(op: object, streams: pd.Series | None = None) -> str:
    """``write_fsync_parallel (2 parallel streams ...)``: a ceiling operation and what it is."""
    if not isinstance(op, str):
        return "-"
    count = streams.get(op) if streams is not None else None
    return f"{op} ({describe_ceiling(op, count)})"


def _ceiling_streams(df: pd.DataFrame) -> pd.Series:
    rows = df[(df["backend"] == "ceiling") & (df["status"] == "ok")] if "backend" in df else df.iloc[0:0]
    return rows.groupby("operation")["streams"].max() if "streams" in rows else pd.Series(dtype="float64")


def above_ceiling(df: pd.DataFrame) -> pd.DataFrame:
    """Points with at least one iteration above 100% of this machine's ceiling (same run): per backend,
    operation and case, the ceiling it is judged by (the parallel one where measured, ``judged_pct``), the
    median % and how many iterations passed it."""
    cols = ["backend", "operation", "case", "ceiling", "% of ceiling (median)", "iterations above"]
    rows = _ceiling_rows(df)
    if rows.empty:
        return pd.DataFrame(columns=cols)
    out, streams = [], _ceiling_streams(df)
    rows = rows.assign(moved_pct=moved_pct_of_ceiling(rows), judged_op=judged_ceiling(rows))
    for backend, operation, case, part in _points(rows):
        above = part["moved_pct"] > CEILING_LIMIT_PCT
        if above.any():
            out.append(dict(zip(cols, (backend, operation, case, _ceiling_name(part["judged_op"].iloc[0], streams),
                                       f"{part['moved_pct'].median():.0f}%", f"{int(above.sum())} of {len(part)}"),
                                strict=True)))
    return pd.DataFrame(out, columns=cols)


def between_ceilings(df: pd.DataFrame) -> pd.DataFrame:
    """Points whose median passed the single-stream ceiling but not the parallel one they are judged by: real
    (a write, or a read proven cold) and faster than one stream at queue depth 1 can be, so the library used
    several streams. Not flagged as noise; listed as what they are."""
    cols = ["backend", "operation", "case", "% of single-stream ceiling (median)", "% of parallel ceiling (median)"]
    rows = _ceiling_rows(df)
    if rows.empty or "pct_of_parallel_ceiling" not in rows:
        return pd.DataFrame(columns=cols)
    rows = rows[judged_by_parallel(rows)]
    rows = rows.assign(single=moved_pct_of_ceiling(rows, "pct_of_ceiling"),
                       parallel=moved_pct_of_ceiling(rows, "pct_of_parallel_ceiling"))
    out = [dict(zip(cols, (backend, operation, case, f"{part['single'].median():.0f}%",
                           f"{part['parallel'].median():.0f}%"), strict=True))
           for backend, operation, case, part in _points(rows)
           if part["single"].median() > CEILING_LIMIT_PCT >= part["parallel"].median()]
    return pd.DataFrame(out, columns=cols)


def loaded_cases(df: pd.DataFrame) -> pd.DataFrame:
    """Cases measured under load (``measure.load.under_load``: the 1-minute load average above the usable cores
    when the case started, CPU steal or other processes' CPU during it): per backend and case, why."""
    cols = ["backend", "case", "1-min load before / after", "CPU steal", "other processes' CPU", "why"]
    if "loadavg_1m_before" not in df or "case_id" not in df:
        return pd.DataFrame(columns=cols)
    out = []
    for (backend, case_id), part in df.groupby(["backend", "case_id"], dropna=False, sort=True):
        first = part.iloc[0]
        why = under_load(first.get("loadavg_1m_before"), first.get("usable_cores"), first.get("cpu_steal_pct"),
                         first.get("other_cpu_pct"))
        if why:
            out.append(dict(zip(cols, (backend, case_id, f"{_num(first.get('loadavg_1m_before'), '{:.2f}')} / "
                                       f"{_num(first.get('loadavg_1m_after'), '{:.2f}')}",
                                       _num(first.get("cpu_steal_pct"), "{:.1f}%"),
                                       _num(first.get("other_cpu_pct"), "{:.0f}%"), why), strict=True)))
    return pd.DataFrame(out, columns=cols)


def _num(value: object, fmt: str) -> str:
    """A recorded number formatted, or a dash where there is none (or the record holds something else)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "-"
    return "-" if pd.isna(number) else fmt.format(number)


def ceiling_and_load_problems(df: pd.DataFrame) -> list[str]:
    """Markdown parts for a chapter's problems: the points between the two ceilings and the cases measured
    under load (empty when there are none)."""
    from benchmarks_lib.base.markup import markdown_table

    parts = []
    between = between_ceilings(df)
    if len(between):
        parts += [f"{len(between)} point(s) passed the single-stream ceiling (one stream, queue depth 1) but not the "
                  "parallel one (as many streams as usable cores): real, and faster than one stream can be, so these "
                  "libraries read or wrote with several streams at once:", markdown_table(between)]
    loaded = loaded_cases(df)
    if len(loaded):
        parts += [f"**{len(loaded)} case(s) measured under load**: other work shared the machine while they ran (1-min "
                  f"load average above the usable cores at the start, CPU steal above {STEAL_LIMIT_PCT:g}% or other "
                  f"processes above {OTHER_CPU_LIMIT_PCT:g}% of the CPU), so their times may be slower than this "
                  "machine's own:", markdown_table(loaded)]
    return parts


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
