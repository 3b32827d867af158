"""Each throughput beside the same run's own ceiling: which ceiling operation a row is judged by (same fsync
policy, same cache state) and the % of it (and of its parallel twin) that the row reached. Below the flags and
the rankings, which read these columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks_lib.records.questions import BUILD_COLUMN
from benchmarks_lib.suites.ceiling import PARALLEL_SUFFIX


def parallel_ceiling_op(operation: str | None) -> str | None:
    """The parallel twin of a single-stream ceiling operation (``write_fsync`` -> ``write_fsync_parallel``);
    None for memcpy and the warm read, which have none."""
    return f"{operation}{PARALLEL_SUFFIX}" if operation in ("write_fsync", "write_nofsync", "read_cold") else None


WRITE_OPS = ("total", "write", "append_total", "append_step")
COLD_READ_OPS = ("read_cold", "read_region_cold")


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"]


def ceiling_gbps(df: pd.DataFrame) -> dict[str, float]:
    """Median GB/s of each ceiling operation in these rows (empty when none were measured)."""
    rows = ok_rows(df)
    rows = rows[rows["backend"] == "ceiling"]
    return {str(k): float(v) for k, v in rows.groupby("operation")["gbps"].median().items()}


def ceiling_reference(operation: str, fsync_included: bool | None, cache_state: str | None = None) -> str | None:
    """The ceiling operation a row's GB/s is divided by: same fsync policy, same cache state."""
    if operation in WRITE_OPS:
        return "write_fsync" if fsync_included else "write_nofsync"
    if operation in COLD_READ_OPS or (operation.startswith("read") and cache_state in ("cold", "cold_unverified")):
        return "read_cold"
    if operation == "read_warm" or (operation.startswith("read") and cache_state == "warm"):
        return "memcpy"
    return None


def with_ceiling_fraction(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``ceiling_op`` and ``pct_of_ceiling`` (GB/s as % of the same run's ceiling) and
    ``pct_of_parallel_ceiling`` (of its parallel twin), for each group of rows alike in run, operation, fsync
    policy and cache state (a few dozen in a run of thousands of rows)."""
    out = df.copy()
    ceiling = df[["run_id", "status", "backend", "operation", "gbps"]]  # not every column of every run's rows
    refs = {str(run_id): ceiling_gbps(part) for run_id, part in ceiling.groupby("run_id", dropna=False)}
    gbps = pd.to_numeric(out["gbps"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    ops = np.full(len(out), None, dtype=object)
    pcts, parallel = np.full(len(out), np.nan), np.full(len(out), np.nan)
    alike = out.groupby(["run_id", "operation", "fsync_included", "cache_state"], dropna=False, sort=False)
    for (run_id, op, fsync, cache), where in alike.indices.items():
        ref = ceiling_reference(str(op), None if pd.isna(fsync) else bool(fsync), None if pd.isna(cache) else cache)
        ops[where] = ref
        ceilings = refs.get(str(run_id), {})
        for column, name in ((pcts, ref), (parallel, parallel_ceiling_op(ref))):
            if ref and (value := ceilings.get(name)):
                column[where] = 100 * gbps[where] / value
    out["ceiling_op"] = ops
    out["pct_of_ceiling"] = pcts  # of the single-stream ceiling
    out["pct_of_parallel_ceiling"] = parallel
    return out


def ceiling_measured_by(df: pd.DataFrame) -> str | None:
    """The run that measured ``df``'s ceiling where an earlier run of its book build did (``run.shared_ceiling``: its
    rows name that run in ``BUILD_COLUMN``); None where the run measured its own, or has none."""
    if "backend" not in df or BUILD_COLUMN not in df:
        return None
    names = sorted(set(df.loc[df["backend"] == "ceiling", BUILD_COLUMN].dropna().astype(str)))
    return ", ".join(names) or None

