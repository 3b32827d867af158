"""The nearest measured case, for a workload no recorded run covers: what ``iobench advise`` names beside "not
covered", so a reader sees what was measured and how it differs from what they asked, instead of a line that reads
as if some run had the rows.

A case is one run's countable rows of the question's operation (the raw baseline left out: it is never a candidate)
that share a dtype, a dataset and array shape, a cutout shape (as the rows read it), an fsync policy and a link
latency. Its distance to the workload is a sum over what differs, each weighed by how much it changes the answer: a
dtype or a number of axes more than a cutout's size, a cutout's size more than a link's latency, and an array's shape
least (runs answer any shape of the same dtype). The nearest is the smallest distance, the newest run among equals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks_lib.advise.evidence import BASELINE, Workload, measured_cutout, suite_runs
from benchmarks_lib.base.specs import shape_text

#: how much each difference weighs (a cutout's size and a link's latency add how far apart they are, on a log scale)
WEIGHTS = {"axes": 4.0, "dtype": 4.0, "fsync": 2.0, "cutout": 2.0, "latency": 1.0, "threads": 1.0, "shape": 0.25}


@dataclass(frozen=True)
class NearCase:
    """A measured case near the workload: where it is, what it is, and how it differs (plain text; record strings
    in it are shown through ``terminal.visible`` by the caller)."""

    run_id: str
    run_dir: Path
    dataset: str
    shape: str
    dtype: str
    cutout: str
    fsync: bool | None
    latency_ms: float | None
    differences: tuple[str, ...]
    distance: float


def _log2_volume(text: str) -> float | None:
    try:
        return sum(math.log2(int(v)) for v in text.split("x"))
    except ValueError:
        return None


def _rows(df, workload: Workload):
    """The run's countable rows of the question's operation, of any dtype, cutout, fsync policy and latency."""
    from benchmarks_lib.advise.remote import remote_candidates, remote_reads
    from benchmarks_lib.rules.ranking import countable

    q = workload.question
    if workload.remote:
        rows = remote_reads(df, q.operations, None)
        rows = remote_candidates(rows) if len(rows) else rows  # the array's shape from the store a cache run read
    elif {"test", "operation"} <= set(df.columns):
        rows = countable(df[(df["operation"] == q.operation) & df["test"].isin(q.tests)])
    else:
        return df.iloc[0:0]
    return rows[rows["backend"].astype(str) != BASELINE] if "backend" in rows else rows.iloc[0:0]


def _cases(rows, workload: Workload) -> list[dict]:
    """The distinct cases among the rows: dtype, dataset, shape, cutout, fsync, latency, threads beyond the limit."""
    import pandas as pd

    def column(name: str) -> list:
        return rows[name].tolist() if name in rows else [None] * len(rows)

    shapes = column("shape")
    if workload.access == "cutout":
        cutouts = [shape_text(measured_cutout(c, s) or (), missing="") for c, s in zip(column("cutout"), shapes,
                                                                                         strict=True)]
    elif workload.access == "remote-cutout":
        cutouts = ["" if pd.isna(c) else str(c) for c in column("cutout")]
    else:
        cutouts = [""] * len(rows)
    fsync = column("fsync_included") if workload.access in ("write", "append") else [None] * len(rows)
    latency = column("latency_ms") if workload.remote else [None] * len(rows)
    threads = column("threads")
    over = [workload.threads is not None and t is not None and not pd.isna(t) and t > workload.threads
            for t in threads]
    seen, out = set(), []
    for case in zip(column("dtype"), column("dataset"), shapes, cutouts, fsync, latency, over, strict=True):
        dtype, dataset, shape, cutout, sync, link, beyond = case
        key = (str(dtype), str(dataset), shape_text(shape, missing="?"), cutout,
               None if sync is None or pd.isna(sync) else bool(sync),
               None if link is None or pd.isna(link) else float(link), bool(beyond))
        if key not in seen:
            seen.add(key)
            out.append(dict(zip(("dtype", "dataset", "shape", "cutout", "fsync", "latency_ms", "threads"), key,
                                strict=True)))
    return out


def _differences(case: dict, workload: Workload) -> list[tuple[str, float]]:
    """(what differs, its weight) of a case against the workload."""
    out = []
    if case["dtype"] != workload.dtype:
        out.append((f"dtype {case['dtype']}, not {workload.dtype}", WEIGHTS["dtype"]))
    axes = len(case["shape"].split("x")) if case["shape"] != "?" else None
    if axes is not None and axes != len(workload.shape):
        out.append((f"a {axes}-D array ({case['shape']}), not {len(workload.shape)}-D", WEIGHTS["axes"]))
    elif axes is not None and case["shape"] != shape_text(workload.shape):
        out.append((f"array {case['shape']}, not {shape_text(workload.shape)}", WEIGHTS["shape"]))
    asked = workload.cutout_text
    if workload.cutout and case["cutout"] != asked:
        a, b = _log2_volume(case["cutout"]), _log2_volume(asked)
        apart = abs(a - b) / 3 if a is not None and b is not None else 1.0
        out.append((f"cutouts of {case['cutout'] or 'no recorded shape'}, not {asked}", WEIGHTS["cutout"] + apart))
    if case["fsync"] is not None and case["fsync"] != workload.fsync:
        out.append(("with fsync, not without" if case["fsync"] else "without fsync, not with", WEIGHTS["fsync"]))
    if workload.remote and case["latency_ms"] is not None and case["latency_ms"] != workload.latency_ms:
        apart = abs(math.log1p(case["latency_ms"]) - math.log1p(workload.latency_ms or 0))
        out.append((f"a {case['latency_ms']:g} ms link, not {workload.latency_ms:g} ms", WEIGHTS["latency"] + apart))
    if case["threads"]:
        out.append((f"measured at more threads than the {workload.threads} available", WEIGHTS["threads"]))
    return out


def nearest_case(results_dirs: Sequence[str | Path], workload: Workload) -> NearCase | None:
    """The measured case nearest the workload among the runs of its suites (None: they hold no rows of its
    operation at all)."""
    from benchmarks_lib.records.store import load_run

    best: NearCase | None = None
    for run_dir, meta in suite_runs(results_dirs, tuple(workload.question.operations)):
        rows = _rows(load_run(run_dir)[0], workload)
        for case in _cases(rows, workload) if len(rows) else []:
            found = _differences(case, workload)
            distance = sum(w for _, w in found)
            if best is None or distance < best.distance:
                best = NearCase(str(meta.get("run_id", run_dir.name)), run_dir, case["dataset"], case["shape"],
                                case["dtype"], case["cutout"], case["fsync"], case["latency_ms"],
                                tuple(text for text, _ in found), distance)
    return best


__all__ = ["WEIGHTS", "NearCase", "nearest_case"]
