"""The recommendation's threads and codec in ``iobench advise``, from the other suites' recorded runs.

Threads: the threads suite's newest run on the evidence's machine holding rows of the recommended writer, of the
workload's dtype and operation kind (a full read: its cold ``read``; a write: its ``write`` of the same fsync
policy; it measures neither cutouts nor remote reads), of one dataset (the evidence's where measured). The advice is
the book's (``rules.answers.fewest_threads``): the fewest threads whose time the rule (``rules.decision``, paired
round by round where measured in rounds) shows within 5% of the fastest, never more than the threads available
(``--threads``).

Codec: the compression suite's newest run holding the evidence's dataset and dtype: the recommended codec's ratio
there, and the setting the compression chapter would take (``rules.compression.worth_taking``: the best ratio
among the settings writing no more than ``SLOWDOWN``x slower than the fastest).

Lines are plain text holding record strings (each through ``terminal.visible``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchmarks_lib.advise.evidence import Evidence, Workload, suite_runs
from benchmarks_lib.base.terminal import visible
from benchmarks_lib.rules.answers import fewest_threads
from benchmarks_lib.rules.ranking import countable, rank_parts
from benchmarks_lib.rules.words import SURE, number, value_words, versus_words

#: the threads suite's operation of the same kind as an access pattern's (the others have none)
THREADS_OPERATIONS = {"full-read": "read", "write": "write"}


@dataclass(frozen=True)
class ThreadsAdvice:
    """How many threads, and the lines of the threads run it rests on."""

    threads: int
    lines: list[str]


def _machine(run_dir: Path, meta: dict) -> str:
    return str(meta.get("environment", {}).get("machine", run_dir.parent.name))


def _threads_rows(df, workload: Workload, writer: str):
    """The threads run's countable rows of ``writer`` answering the workload's operation kind, of its dtype (and
    fsync policy), at no more threads than it has."""
    operation = THREADS_OPERATIONS.get(workload.access)
    if operation is None or "threads" not in df:
        return df.iloc[0:0]
    rows = countable(df[(df["backend"].astype(str) == writer) & (df["operation"] == operation)
                        & (df["dtype"].astype(str) == workload.dtype) & df["threads"].notna()])
    if operation == "write" and "fsync_included" in rows:
        rows = rows[rows["fsync_included"].astype("boolean").fillna(False) == workload.fsync]
    if workload.threads is not None:
        rows = rows[rows["threads"] <= workload.threads]
    return rows


def threads_advice(evidence: Evidence, workload: Workload, results_dirs: Sequence[str | Path]) -> ThreadsAdvice | None:
    """The fewest threads not separable from the best, from a threads run like the evidence (None without one)."""
    from benchmarks_lib.records.store import load_run

    if workload.access not in THREADS_OPERATIONS:
        return None
    writer = str(evidence.ranking.leader.rows["backend"].iloc[0])
    machine = _machine(evidence.run_dir, evidence.meta)
    for run_dir, meta in suite_runs(results_dirs, ("threads",)):
        if _machine(run_dir, meta) != machine:
            continue
        rows = _threads_rows(load_run(run_dir)[0], workload, writer)
        if not rows.empty:
            return _advice(_one_dataset(rows, str(evidence.rows["dataset"].iloc[0])), run_dir, meta, workload, writer)
    return None


def _one_dataset(rows, dataset: str):
    """The rows of one dataset, as the book's threads answer holds it (never pooled): the evidence's where the
    threads run measured it, else the one with the most rows."""
    named = rows["dataset"].astype(str) if "dataset" in rows else pd.Series(dataset, index=rows.index)
    if not (named == dataset).any():
        counts = named.value_counts()
        dataset = sorted(counts[counts == counts.max()].index)[0]
    return rows[named == dataset]


def _advice(rows, run_dir: Path, meta: dict, workload: Workload, writer: str) -> ThreadsAdvice:
    """The book's rule for threads (``rules.answers.fewest_threads``): the counts ranked on time, paired round by
    round where measured in rounds, and the fewest the rule shows within 5% of the fastest."""
    ranking = rank_parts({str(int(t)): part for t, part in rows.groupby("threads", sort=True)}, "elapsed_s", False)
    best = ranking.leader
    counts = sorted(int(e.name) for e in ranking.entries)
    if ranking.too_few_n is not None:
        threads, rule = int(best.name), (f"the fastest so far; open after {ranking.too_few_n} rounds, so not yet "
                                         "the fewest threads within 5% of it")
    elif not ranking.others:
        threads, rule = int(best.name), "the only thread count measured" + (
            f" up to --threads {workload.threads}" if workload.threads is not None else "")
    else:
        threads = int(fewest_threads(ranking).name)
        rule = f"the fewest threads within 5% of the fastest ({best.name} threads, {SURE[ranking.status]})"
    first = rows.iloc[0]
    cores = meta.get("environment", {}).get("cpu_count", first["cores"] if "cores" in rows else "?")
    setting = f", set by {visible(first['threads_setting'])}" if "threads_setting" in rows else ""
    shape = f", {'x'.join(str(int(n)) for n in first['shape'])}" if "shape" in rows else ""
    lines = [f"Threads: {threads}, {rule}; measured at {', '.join(map(str, counts))}",
             f"  run {visible(meta.get('run_id', run_dir.name))} on machine {visible(_machine(run_dir, meta))} "
             f"({visible(cores)} cores): {visible(writer)} {visible(first['operation'])} of "
             f"{visible(first['dataset'])} {visible(first['dtype'])}{shape} ({visible(first['codec'])}){setting}"]
    for entry in sorted(ranking.entries, key=lambda e: int(e.name)):
        versus = "the best median" if entry is best else versus_words(entry, ranking, "the best")
        lines.append(f"  {entry.name} thread{'s' if entry.name != '1' else ''}: {value_words(entry, 's')}; {versus}")
    return ThreadsAdvice(threads, lines)


def codec_lines(evidence: Evidence, workload: Workload, results_dirs: Sequence[str | Path]) -> list[str]:
    """One line: the recommended codec's ratio in the newest compression run of the evidence's dataset and dtype
    (else the ratio the evidence's own rows recorded), and the setting that run's chapter would take ([] without
    such a run)."""
    from benchmarks_lib.records.store import load_run
    from benchmarks_lib.rules.compression import SLOWDOWN, summarize_points, worth_taking

    best = evidence.ranking.leader.rows
    leader = best.iloc[0]
    codec, writer = str(leader["codec"]) if pd.notna(leader["codec"]) else "none", str(leader["backend"])
    data = f"{visible(leader['dataset'])} {workload.dtype}"
    for run_dir, meta in suite_runs(results_dirs, ("compression",)):
        df = load_run(run_dir)[0]
        points = summarize_points(df[(df["dataset"].astype(str) == str(leader["dataset"]))
                                     & (df["dtype"].astype(str) == workload.dtype)])
        picks = worth_taking(points)
        if not picks:
            continue
        _, fastest, pick = picks[0]
        run = f"compression run {visible(meta.get('run_id', run_dir.name))}"
        own = points[(points["codec"].astype(str) == codec) & points["compression_ratio"].notna()]
        own = own.sort_values("backend", key=lambda b: b.astype(str) != writer)  # the same writer's first
        recorded = best["compression_ratio"].dropna() if "compression_ratio" in best else []
        head = (f"Codec: {visible(codec)} stores {data} at ratio {own.iloc[0]['compression_ratio']:.2f} "
                f"({visible(own.iloc[0]['backend'])}, {run})" if len(own) else
                f"Codec: {visible(codec)} stores {data} at ratio {recorded.median():.2f} (these rows; not measured "
                f"in {run})" if len(recorded) else f"Codec: {visible(codec)} was not measured in {run} ({data})")
        return [f"{head}; the best ratio there among the settings writing no more than {SLOWDOWN:g}x slower than "
                f"the fastest: {_point(pick)}" + ("" if pick.equals(fastest) else f" (the fastest: {_point(fastest)})")]
    return []


def _point(row) -> str:
    return (f"{visible(row['backend'])} {visible(row['codec'])}, ratio {row['compression_ratio']:.2f} at "
            f"{number(row['write_mbps'])} MB/s written")


__all__ = ["THREADS_OPERATIONS", "ThreadsAdvice", "codec_lines", "threads_advice"]
