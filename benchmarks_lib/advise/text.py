"""The words of ``iobench advise``: the recommendation, the rows it rests on (run, machine, n, median and 95%
interval), the runner-up and whether it is separable (``chapters.ranking``'s rule), its threads and codec from the
threads and compression suites' runs (:mod:`.advise_settings`), and what the recommendation costs against the
alternative (cutouts: the same writer sharded vs unsharded; otherwise the runner-up): time per access, write time,
files and bytes on disk, from the same run; for remote reads, the requests and bytes each read sent over the link.

Lines are plain text holding record strings: the command prints each as ``terminal.text`` (never markup,
control characters shown escaped).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks_lib.advise.evidence import BASELINE, Evidence, Workload, measured_latencies
from benchmarks_lib.advise.settings import codec_lines, threads_advice
from benchmarks_lib.base.specs import format_bytes
from benchmarks_lib.base.stats import two_sample
from benchmarks_lib.base.terminal import visible
from benchmarks_lib.rules.ranking import Verdict, countable
from benchmarks_lib.rules.words import candidates_verdict, number, value_words, versus_words

#: a candidate's name (``advise.with_candidates``, remote reads with how they read after the shards)
_CANDIDATE = re.compile(r"^(.*) \| ([^|]*) \| chunks ([^|]*) \| shards ([^| ]*)(?: \| (.*))?$", re.S)
#: candidates listed after the recommendation (the rest are counted)
LISTED = 5


def candidate_fields(candidate: str) -> dict[str, str]:
    """writer, codec, chunks, shards and (remote reads) how it reads, of a candidate's name (a writer's name may
    hold " | ": the fields are found from the right, by their words)."""
    found = _CANDIDATE.match(candidate)
    if found is None:
        return {"writer": candidate, "codec": "?", "chunks": "?", "shards": "?", "via": ""}
    writer, codec, chunks, shards, via = found.groups()
    return {"writer": writer, "codec": codec, "chunks": chunks, "shards": shards, "via": via or ""}


def _threads(rows) -> str:
    """The threads the rows were measured at (the suite's name where it did not vary them)."""
    from benchmarks_lib.advise.remote import client_concurrency

    if "threads" not in rows or rows["threads"].isna().all():
        suite = str(rows["suite"].iloc[0]) if "suite" in rows and len(rows) else "writers"
        return f"the library's default (not varied by the {visible(suite)} suite){visible(client_concurrency(rows))}"
    return ", ".join(str(int(t)) for t in sorted(set(rows["threads"].dropna())))


def _same_data(evidence: Evidence, operation: str, fsync: bool):
    """The run's countable rows of ``operation`` on the evidence's dataset and array shape (a write: of the fsync
    policy ``fsync``), by candidate."""
    from benchmarks_lib.advise.evidence import with_candidates
    from benchmarks_lib.base.specs import shape_text

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


def _count(label: str, a, b, unit=lambda v: f"{v:.0f}") -> str | None:
    if a is None or b is None or not len(a) or not len(b):
        return None
    ma, mb = float(np.median(a)), float(np.median(b))
    if not (ma > 0 and mb > 0):
        return None
    if max(ma, mb) / min(ma, mb) < 1.01:
        return f"{label} {unit(ma)} vs {unit(mb)} (within 1%)"
    return f"{label} {unit(ma)} vs {unit(mb)} ({max(ma, mb) / min(ma, mb):.3g}x {'fewer' if ma < mb else 'more'})"


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
    if workload.remote:  # what each read sent over the link
        found = [_ratio("  time per access:", column(group, chosen, "elapsed_s"), column(group, other, "elapsed_s")),
                 _count("  requests per read:", column(group, chosen, "requests"), column(group, other, "requests")),
                 _count("  bytes sent per read:", column(group, chosen, "transferred_bytes"),
                        column(group, other, "transferred_bytes"), format_bytes)]
        lines += [line for line in found if line]
        return lines if len(lines) > 1 else []
    found = [
        _ratio("  time per access:", column(group, chosen, "elapsed_s"), column(group, other, "elapsed_s")),
        _ratio("  whole write:", column(writes, chosen, "elapsed_s"), column(writes, other, "elapsed_s")),
        _count("  files on disk:", column(access, chosen, "inodes"), column(access, other, "inodes")),
        _count("  bytes on disk:", column(access, chosen, "bytes_on_disk"), column(access, other, "bytes_on_disk"),
               format_bytes),
    ]
    lines += [line for line in found if line]
    return lines if len(lines) > 1 else []


def _alternative(evidence: Evidence, chosen: str, who: str = "writer") -> tuple[str, str] | None:
    """The same writer, codec and chunks (and way of reading) with the other sharding choice; else the runner-up."""
    ranking = evidence.ranking
    fields = candidate_fields(chosen)
    same = ("writer", "codec", "chunks", "via")
    for name in (e.name for e in ranking.entries):
        f = candidate_fields(name)
        if name != chosen and all(f[k] == fields[k] for k in same) and \
                (f["shards"] == "none") != (fields["shards"] == "none"):
            return name, f"the same {who}, codec and chunks, " + ("unsharded" if f["shards"] == "none" else "sharded")
    if ranking.others:
        return ranking.others[0].name, "the runner-up"
    return None


def advice_lines(workload: Workload, evidence: Evidence,
                 results_dirs: Sequence[str | Path] | None = None) -> list[str]:
    """The recommendation and its evidence; its threads and codec from the threads and compression runs in
    ``results_dirs`` (default: the results directory the evidence's run is in)."""
    ranking, q = evidence.ranking, workload.question
    best = ranking.leader
    f = candidate_fields(best.name)
    dirs = list(results_dirs) if results_dirs is not None else [evidence.run_dir.parent.parent]
    threads = threads_advice(evidence, workload, dirs)
    env = evidence.meta.get("environment", {})
    first = evidence.rows.iloc[0]
    read_by = set(best.rows["read_by"].dropna().astype(str)) - {f["writer"]} if "read_by" in best.rows else set()
    claimed = ranking.status in (Verdict.WINNER, Verdict.ALONE)
    lines = [f"Workload: {visible(workload.describe())}",
             f"{'Recommendation' if claimed else 'Best median (no winner claimed)'}: "
             f"{'library' if workload.remote else 'writer'} {visible(f['writer'])}, codec {visible(f['codec'])}, "
             f"chunks {visible(f['chunks'])}, shards {visible(f['shards'])}"
             + (f", {visible(f['via'])}" if f["via"] else "")
             + f", threads: {threads.threads if threads else _threads(best.rows)}"
             + (f" (read by {visible(', '.join(sorted(read_by)))})" if read_by else ""),
             f"  {candidates_verdict(ranking, visible)}"]
    data = "your data" if evidence.own_data else "synthetic data, not yours (run --measure to measure yours)"
    kind = f", {visible(first['cutout_kind'])} cutouts of {int(first['cutout'])}^{len(first['shape'])}" \
        if workload.access == "cutout" else f", cutouts of {visible(first['cutout'])}" if workload.cutout else ""
    lines += [f"Evidence: run {visible(evidence.meta.get('run_id', evidence.run_dir.name))} on machine "
              f"{visible(env.get('machine', evidence.run_dir.parent.name))} ({visible(env.get('cpu_model', '?'))}, "
              f"{visible(env.get('fs_type', '?'))}), {visible(evidence.run_dir)}",
              f"  rows: operation {visible(first['operation'])}, dataset {visible(first['dataset'])} ({data}), array "
              f"{'x'.join(map(str, first['shape']))} {visible(first['dtype'])}{kind}"]
    if workload.remote:
        from benchmarks_lib.advise.remote import link_text

        lines.append(f"  link: {visible(link_text(best.rows.iloc[0]))}")
    lines.append(f"  recommended: {visible(best.name)}: {value_words(best, q.unit)}")
    if ranking.others:
        nxt = ranking.others[0]
        lines.append(f"  runner-up: {visible(nxt.name)}: {value_words(nxt, q.unit)}; {versus_words(nxt, ranking)}")
    for entry in ranking.others[1:LISTED]:
        lines.append(f"  also measured: {visible(entry.name)}: {value_words(entry, q.unit)}; "
                     f"{versus_words(entry, ranking)}")
    if len(ranking.others) > LISTED:
        lines.append(f"  and {len(ranking.others) - LISTED} more candidates, each separable from the recommendation"
                     if all(e.vs_leader is not None and e.vs_leader.separable for e in ranking.others[LISTED:]) else
                     f"  and {len(ranking.others) - LISTED} more candidates (iobench show the run to see them)")
    lines += (threads.lines if threads else []) + codec_lines(evidence, workload, dirs)
    if evidence.baseline is not None and len(evidence.baseline):
        base = evidence.baseline[q.value].astype(float).to_numpy()
        scale, unit = (1e3, "ms per cutout") if q.unit == "s per cutout" else (1.0, q.unit)
        lines.append(f"Baseline ({BASELINE}: a flat file of the raw bytes, no format, no codec; not a candidate): "
                     f"{number(float(np.median(base)) * scale)} {unit} (n={len(base)})")
        share = _ratio("  the recommendation takes", best.rows["elapsed_s"].astype(float).to_numpy(),
                       evidence.baseline["elapsed_s"].astype(float).to_numpy())
        if share:
            lines.append(share.replace("x the time", "x the baseline's time", 1))
    alternative = _alternative(evidence, best.name, "library" if workload.remote else "writer")
    if alternative is not None:
        lines += cost_lines(evidence, workload, best.name, *alternative)
    return lines


def not_covered_lines(workload: Workload, dirs: Sequence[str | Path]) -> list[str]:
    """The one line for a workload no recorded run covers, and what to do."""
    where = ", ".join(visible(d) for d in dirs)
    hint = "iobench advise --like PATH ... --measure --budget 3m" if workload.like is None else \
        "the same command with --measure --budget 3m"
    if workload.remote:
        return [_remote_not_covered(workload, dirs, where, hint)]
    what = (f"cutouts of {max(workload.cutout or (0,))}^{len(workload.shape)}" if workload.access == "cutout"
            else workload.access)
    durable = " with fsync" if workload.fsync and workload.access in ("write", "append") else ""
    return [f"Not covered: no recorded writers run in {where} has rows of {workload.question.operation} for "
            f"{what} of {workload.dtype}{durable}; measure it on your data: {hint}"]


def _remote_not_covered(workload: Workload, dirs: Sequence[str | Path], where: str, hint: str) -> str:
    """No run has the remote reads at this latency: the latencies that were measured (never interpolated)."""
    what = f"cutouts of {workload.cutout_text}" if workload.cutout else "full reads"
    measured = measured_latencies(dirs, workload)
    found = "; ".join(f"{', '.join(f'{v:g} ms' for v in latencies)} (run {visible(run)})"
                      for run, latencies in measured.items())
    if workload.cutout:
        hint = "the cache suite measures remote cutouts of its own store: iobench run cache"
    return (f"Not covered: no recorded {' or '.join(workload.question.operations)} run in {where} has remote "
            f"{what} of {workload.dtype} over a {workload.latency_ms:g} ms link; "
            + (f"measured latencies: {found} (no interpolation between them)" if found else
               "none at any latency")
            + f"; measure it: {hint}")


__all__ = ["LISTED", "advice_lines", "candidate_fields", "cost_lines", "not_covered_lines"]
