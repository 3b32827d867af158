"""The words of ``iobench advise``: the recommendation, the rows it rests on (run, machine, n, median and 95%
interval), the runner-up and whether it is separable (``chapters.ranking``'s rule), and what the recommendation
costs against the alternative (cutouts: the same writer sharded vs unsharded; otherwise the runner-up): time per
access, write time, files and bytes on disk, from the same run.

Lines are plain text holding record strings: the command prints each as ``terminal.text`` (never markup,
control characters shown escaped).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .advise import Evidence, Workload
from .chapters.ranking import Entry, Ranking, countable, number
from .stats import CONFIDENCE, coverage, two_sample
from .terminal import visible

#: candidates listed after the recommendation (the rest are counted)
LISTED = 5


def _value(entry: Entry, unit: str) -> str:
    scale, unit = (1e3, "ms per cutout") if unit == "s per cutout" else (1.0, unit)
    text = f"{number(entry.median * scale)}"
    if math.isfinite(entry.lo) and math.isfinite(entry.hi):
        text += f" [{number(entry.lo * scale)}, {number(entry.hi * scale)}]"
    cover = coverage(entry.n)
    note = "" if cover >= CONFIDENCE else f", {math.floor(100 * cover + 0.5)}% interval" if cover > 0 else \
        ", too few for an interval"
    return f"{text} {unit} (n={entry.n}{note})"


def _versus(entry: Entry, ranking: Ranking) -> str:
    factor, lo, hi = entry.factor(ranking.higher)
    t = entry.vs_leader
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if math.isfinite(lo) and math.isfinite(hi) else ""
    verdict = "no interval" if t is None else t.verdict()
    return f"{factor:.2f}x worse than the recommendation{interval}, {verdict}"


def _verdict(ranking: Ranking) -> str:
    status = ranking.status
    if status == "alone":
        return "the only candidate measured on these terms: not ranked, nothing to compare it with"
    if status == "winner":
        return f"separable from every other of the {len(ranking.entries)} candidates"
    if status == "too few":
        return (f"too few iterations to rank (n={ranking.too_few_n}): the recommendation is the best median of "
                f"{len(ranking.entries)}, not a separable winner")
    tied = "; ".join(visible(e.name) for e in ranking.tied)
    return (f"no separable winner: the best median of {len(ranking.entries)} candidates; not separable from it: "
            f"{tied}")


def _fields(candidate: str) -> dict[str, str]:
    writer, codec, chunks, shards = (part.strip() for part in candidate.rsplit(" | ", 3))  # a writer may hold " | "
    return {"writer": writer, "codec": codec, "chunks": chunks.removeprefix("chunks "),
            "shards": shards.removeprefix("shards ")}


def _threads(rows) -> str:
    if "threads" not in rows or rows["threads"].isna().all():
        return "the library's default (not varied by the writers suite)"
    return ", ".join(str(int(t)) for t in sorted(set(rows["threads"].dropna())))


def _same_data(evidence: Evidence, operation: str, fsync: bool):
    """The run's countable rows of ``operation`` on the evidence's dataset and array shape (a write: of the fsync
    policy ``fsync``), by candidate."""
    from .advise import shape_text, with_candidates

    first = evidence.rows.iloc[0]
    df = countable(evidence.run_rows[evidence.run_rows["operation"] == operation])
    if df.empty:
        return {}
    df = with_candidates(df)
    df = df[(df["dataset"].astype(str) == str(first["dataset"]))
            & (df["shape"].map(shape_text) == shape_text(first["shape"]))]
    if "fsync_included" in df and operation == "total":
        df = df[df["fsync_included"].astype("boolean").fillna(False) == fsync]
    return {str(name): part for name, part in df.groupby("candidate")}


def _ratio(label: str, a, b) -> str | None:
    """``label: 0.42x [0.40x, 0.44x] (separable)`` for median(a)/median(b) of times, or None without both."""
    if a is None or b is None or not len(a) or not len(b):
        return None
    t = two_sample(np.asarray(b, float), np.asarray(a, float))
    if not math.isfinite(t.ratio):
        return None
    interval = f" [{t.lo:.2f}x, {t.hi:.2f}x]" if math.isfinite(t.lo) and math.isfinite(t.hi) else ""
    return f"{label} {t.ratio:.2f}x the time{interval} ({t.verdict()}, n={t.n_a}/{t.n_b})"


def _count(label: str, a, b) -> str | None:
    if a is None or b is None or not len(a) or not len(b):
        return None
    ma, mb = float(np.median(a)), float(np.median(b))
    if not (ma > 0 and mb > 0):
        return None
    if ma == mb:
        return f"{label} {ma:.0f} (the same)"
    return f"{label} {ma:.0f} vs {mb:.0f} ({max(ma, mb) / min(ma, mb):.3g}x {'fewer' if ma < mb else 'more'})"


def cost_lines(evidence: Evidence, workload: Workload, chosen: str, other: str, why: str) -> list[str]:
    """What ``chosen`` costs against ``other``, from the same run and data: the access, writes, files, bytes."""
    q = workload.question
    access = _same_data(evidence, q.operation, workload.fsync)
    group = {str(name): part for name, part in evidence.rows.groupby("candidate")}  # the same cutout kind
    writes = _same_data(evidence, "total", workload.fsync)

    def column(parts: dict, name: str, col: str):
        part = parts.get(name)
        return None if part is None or col not in part else part[col].dropna().astype(float).to_numpy()

    lines = [f"Cost against {visible(other)} ({why}):"]
    found = [
        _ratio("  time per access:", column(group, chosen, "elapsed_s"), column(group, other, "elapsed_s")),
        _ratio("  whole write:", column(writes, chosen, "elapsed_s"), column(writes, other, "elapsed_s")),
        _count("  files on disk:", column(access, chosen, "inodes"), column(access, other, "inodes")),
        _count("  bytes on disk:", column(access, chosen, "bytes_on_disk"), column(access, other, "bytes_on_disk")),
    ]
    lines += [line for line in found if line]
    return lines if len(lines) > 1 else []


def _alternative(evidence: Evidence, chosen: str) -> tuple[str, str] | None:
    """For cutouts, the same writer and codec with the other sharding choice (same chunks); else the runner-up."""
    ranking = evidence.ranking
    fields = _fields(chosen)
    names = [e.name for e in ranking.entries]
    for name in names:
        f = _fields(name)
        if name != chosen and f["writer"] == fields["writer"] and f["codec"] == fields["codec"] and \
                f["chunks"] == fields["chunks"] and (f["shards"] == "none") != (fields["shards"] == "none"):
            return name, "the same writer, codec and chunks, " + ("unsharded" if f["shards"] == "none" else "sharded")
    if ranking.others:
        return ranking.others[0].name, "the runner-up"
    return None


def advice_lines(workload: Workload, evidence: Evidence) -> list[str]:
    """The recommendation and its evidence."""
    ranking, q = evidence.ranking, workload.question
    best = ranking.leader
    f = _fields(best.name)
    env = evidence.meta.get("environment", {})
    first = evidence.rows.iloc[0]
    read_by = set(best.rows["read_by"].dropna().astype(str)) - {f["writer"]} if "read_by" in best.rows else set()
    lines = [f"Workload: {visible(workload.describe())}",
             f"{'Recommendation' if ranking.status in ('winner', 'alone') else 'Best median (no winner claimed)'}: "
             f"writer {visible(f['writer'])}, codec {visible(f['codec'])}, "
             f"chunks {visible(f['chunks'])}, shards {visible(f['shards'])}, threads: {_threads(best.rows)}"
             + (f" (read by {visible(', '.join(sorted(read_by)))})" if read_by else ""),
             f"  {_verdict(ranking)}"]
    data = "your data" if evidence.own_data else "synthetic data, not yours (run --measure to measure yours)"
    kind = f", {visible(first['cutout_kind'])} cutouts of {int(first['cutout'])}^{len(first['shape'])}" \
        if workload.access == "cutout" else ""
    lines += [f"Evidence: run {visible(evidence.meta.get('run_id', evidence.run_dir.name))} on machine "
              f"{visible(env.get('machine', evidence.run_dir.parent.name))} ({visible(env.get('cpu_model', '?'))}, "
              f"{visible(env.get('fs_type', '?'))}), {visible(evidence.run_dir)}",
              f"  rows: operation {q.operation}, dataset {visible(first['dataset'])} ({data}), array "
              f"{'x'.join(map(str, first['shape']))} {visible(first['dtype'])}{kind}",
              f"  recommended: {visible(best.name)}: {_value(best, q.unit)}"]
    if ranking.others:
        nxt = ranking.others[0]
        lines.append(f"  runner-up: {visible(nxt.name)}: {_value(nxt, q.unit)}; {_versus(nxt, ranking)}")
    for entry in ranking.others[1:LISTED]:
        lines.append(f"  also measured: {visible(entry.name)}: {_value(entry, q.unit)}; {_versus(entry, ranking)}")
    if len(ranking.others) > LISTED:
        lines.append(f"  and {len(ranking.others) - LISTED} more candidates, each separable from the recommendation"
                     if all(e.vs_leader is not None and e.vs_leader.separable for e in ranking.others[LISTED:]) else
                     f"  and {len(ranking.others) - LISTED} more candidates (iobench show the run to see them)")
    alternative = _alternative(evidence, best.name)
    if alternative is not None:
        lines += cost_lines(evidence, workload, best.name, *alternative)
    return lines


def not_covered_lines(workload: Workload, dirs: Sequence[str | Path]) -> list[str]:
    """The one line for a workload no recorded run covers, and what to do."""
    what = (f"cutouts of {max(workload.cutout or (0,))}^{len(workload.shape)}" if workload.access == "cutout"
            else workload.access)
    where = ", ".join(visible(d) for d in dirs)
    hint = "iobench advise --like PATH ... --measure --budget 3m" if workload.like is None else \
        "the same command with --measure --budget 3m"
    durable = " with fsync" if workload.fsync and workload.access in ("write", "append") else ""
    return [f"Not covered: no recorded writers run in {where} has rows of {workload.question.operation} for "
            f"{what} of {workload.dtype}{durable}; measure it on your data: {hint}"]


__all__ = ["advice_lines", "cost_lines", "not_covered_lines"]
