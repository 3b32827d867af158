"""The words of ``iobench advise``: the recommendation, the rows it rests on (run, machine, n, median and 95%
interval), the runner-up and whether it is separable (``rules.ranking``'s rule), its threads and codec from the
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

from benchmarks_lib.advise.evidence import BASELINE, Evidence, Workload, measured_cutout, measured_latencies, suite_runs
from benchmarks_lib.advise.settings import codec_lines, threads_advice
from benchmarks_lib.base.specs import format_bytes, shape_text
from benchmarks_lib.base.terminal import visible
from benchmarks_lib.rules.names import operation_name
from benchmarks_lib.rules.ranking import Verdict, countable, rank_parts
from benchmarks_lib.rules.words import SURE, candidates_verdict, number, two_sample_text, value_words, versus_words

#: a candidate's name (``advise.with_candidates``, remote reads with how they read after the shards)
_CANDIDATE = re.compile(r"^(.*) \| ([^|]*) \| chunks ([^|]*) \| shards ([^| ]*)(?: \| (.*))?$", re.S)
#: candidates listed after the recommendation (the rest are counted)
LISTED = 5
#: an access pattern in words
ACCESS_WORDS = {"full-read": "full reads", "write": "writes", "append": "appends"}
#: runs listed that disagree with the one the answer rests on (the rest are counted)
LISTED_RUNS = 3
#: what a run's verdict says of its pick (a verdict not listed is named by its value; issue 30 adds EQUIVALENT)
PICK_WORDS = SURE


def shown_path(path: str | Path) -> str:
    """A directory as the answer names it: relative to this checkout where it is inside it (``reference/vm/...``),
    else as it is (a path of the reader's machine is theirs to see in their terminal)."""
    from benchmarks_lib.base.paths import ROOT

    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


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
    """``label 0.42x the time [0.40x, 0.44x] (separable, n=8/8)``: the time of the rows ``a`` against that of ``b``
    by the ranking rule (``rules.ranking.rank_parts``: paired round by round where both were measured in the same
    rounds, else the two-sample rule; within the margin: equivalent), or None without both."""
    if a is None or b is None or a.empty or b.empty:
        return None
    ranking = rank_parts({"a": a, "b": b}, "elapsed_s", False)
    if len(ranking.entries) != 2:  # one of them without a time, or measured in fewer rounds
        return None
    t = ranking.others[0].vs_leader
    if not math.isfinite(t.ratio) or t.ratio <= 0:
        return None
    if ranking.leader.name == "b":  # a's time against the leader's
        ratio, lo, hi = t.ratio, t.lo, t.hi
    else:
        ratio, lo, hi = 1 / t.ratio, (1 / t.hi if t.hi > 0 else math.nan), (1 / t.lo if t.lo > 0 else math.nan)
    n = {e.name: e.n for e in ranking.entries}
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if math.isfinite(lo) and math.isfinite(hi) else ""
    return f"{label} {ratio:.2f}x the time{interval} ({two_sample_text(t)}, n={n['b']}/{n['a']})"


def _count(label: str, a, b, unit=lambda v: f"{v:.0f}") -> str | None:
    if a is None or b is None or not len(a) or not len(b):
        return None
    ma, mb = float(np.median(a)), float(np.median(b))
    if not (ma > 0 and mb > 0):
        return None
    if max(ma, mb) / min(ma, mb) < 1.01:
        return f"{label} {unit(ma)} vs {unit(mb)} (within 1%)"
    return f"{label} {unit(ma)} vs {unit(mb)} ({max(ma, mb) / min(ma, mb):.3g}x {'fewer' if ma < mb else 'more'})"


def _decided(label: str, ranking, chosen: str, other: str) -> str | None:
    """``label 0.78x the time [0.23x, 3.55x] (not told apart (...), n=8/8)``: the leader ``chosen``'s time against
    ``other``'s as the ranking's one decision compared them (never the pair re-ranked after picking the leader from
    many: that would separate them more often than the rule allows); None where ``chosen`` is not the leader."""
    if ranking is None or not getattr(ranking, "entries", ()) or ranking.leader.name != chosen:
        return None
    entry = next((e for e in ranking.others if e.name == other), None)
    c = entry.comparison if entry is not None else None
    if c is None or entry.vs_leader is None or not math.isfinite(c.ratio) or c.ratio <= 0:
        return None
    interval = f" [{1 / c.hi:.2f}x, {1 / c.lo:.2f}x]" if c.has_interval and c.lo > 0 else ""
    return (f"{label} {1 / c.ratio:.2f}x the time{interval} ({two_sample_text(entry.vs_leader)}, "
            f"n={entry.n}/{ranking.leader.n})")


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
        found = [_decided("  time per access:", evidence.ranking, chosen, other),
                 _count("  requests per read:", column(group, chosen, "requests"), column(group, other, "requests")),
                 _count("  bytes sent per read:", column(group, chosen, "transferred_bytes"),
                        column(group, other, "transferred_bytes"), format_bytes)]
        lines += [line for line in found if line]
        return lines if len(lines) > 1 else []
    found = [
        _decided("  time per access:", evidence.ranking, chosen, other),
        _ratio("  whole write:", writes.get(chosen), writes.get(other)),
        _count("  files on disk:", column(access, chosen, "inodes"), column(access, other, "inodes")),
        _count("  bytes on disk:", column(access, chosen, "bytes_on_disk"), column(access, other, "bytes_on_disk"),
               format_bytes),
    ]
    lines += [line for line in found if line]
    return lines if len(lines) > 1 else []


def _alternative(evidence: Evidence, chosen: str, remote: bool = False) -> tuple[str, str] | None:
    """What the recommendation (the leader) is costed against: the other sharding choice of the same writer, as the
    book's sharding answer takes it (``rules.answers.counterpart``: the same inner chunks where measured); of a
    remote read, the same library, codec, chunks and way of reading with the other sharding choice; else the
    runner-up."""
    from benchmarks_lib.rules.answers import counterpart

    ranking = evidence.ranking
    fields = candidate_fields(chosen)
    same = ("writer", "codec", "chunks", "via")
    if remote:
        names = [e.name for e in ranking.others if all(candidate_fields(e.name)[k] == fields[k] for k in same)]
    else:
        names = [other.name] if (other := counterpart(ranking)) is not None else []
    who = "library" if remote else "writer"
    for name in names:
        f = candidate_fields(name)
        if (f["shards"] == "none") != (fields["shards"] == "none"):
            shards = "unsharded" if f["shards"] == "none" else "sharded"
            return name, (f"the same {who}, codec and chunks, {shards}" if all(f[k] == fields[k] for k in same)
                          else f"the same {who}, {shards} (chunks {f['chunks']})")
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
    claimed = ranking.status in (Verdict.WINNER, Verdict.LEADER, Verdict.ALONE)
    lines = [f"Workload: {visible(workload.describe())}",
             f"{'Recommendation' if claimed else 'Best median (no winner claimed)'}: "
             f"{'library' if workload.remote else 'writer'} {visible(f['writer'])}, codec {visible(f['codec'])}, "
             f"chunks {visible(f['chunks'])}, shards {visible(f['shards'])}"
             + (f", {visible(f['via'])}" if f["via"] else "")
             + f", threads: {threads.threads if threads else _threads(best.rows)}"
             + (f" (read by {visible(', '.join(sorted(read_by)))})" if read_by else ""),
             f"  {candidates_verdict(ranking, visible)}"]
    lines += disagreement_lines(evidence)
    data = "your data" if evidence.own_data else "synthetic data, not yours (run --measure to measure yours)"
    kind = (f", {visible(first['cutout_kind'])} cutouts of "
            f"{visible(shape_text(measured_cutout(first['cutout'], first['shape']) or (), missing='?'))}"
            if workload.access == "cutout" else f", cutouts of {visible(first['cutout'])}" if workload.cutout else "")
    lines += [f"Evidence: run {visible(evidence.run_id)} on machine "
              f"{visible(env.get('machine', evidence.run_dir.parent.name))} ({visible(env.get('cpu_model', '?'))}, "
              f"{visible(env.get('fs_type', '?'))}), {visible(shown_path(evidence.run_dir))}",
              f"  rows: {visible(operation_name(first['operation']))}, dataset {visible(first['dataset'])} ({data}), "
              f"array {'x'.join(map(str, first['shape']))} {visible(first['dtype'])}{kind}"]
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
        share = _ratio("  the recommendation takes", best.rows, evidence.baseline)
        if share:
            lines.append(share.replace("x the time", "x the baseline's time", 1))
    alternative = _alternative(evidence, best.name, workload.remote)
    if alternative is not None:
        lines += cost_lines(evidence, workload, best.name, *alternative)
    return lines


def _pick_words(evidence: Evidence) -> str:
    status = evidence.ranking.status
    return PICK_WORDS.get(status, str(status.value))


def _run_words(evidence: Evidence) -> str:
    """``run R (dataset labels, 256x256x256; 24 candidates, n=5): picks X, separable from every other candidate``."""
    first = evidence.rows.iloc[0]
    n_low, n_high = evidence.fewest_n, max(e.n for e in evidence.ranking.entries)
    n = f"n={n_low}" if n_low == n_high else f"n={n_low}-{n_high}"
    rounds = f", {evidence.rounds} rounds" if evidence.rounds else ""
    own = ", your data" if evidence.own_data else ""
    return (f"run {visible(evidence.run_id)} (dataset {visible(first['dataset'])}, "
            f"{visible(shape_text(first['shape'], missing='?'))}{own}; {len(evidence.ranking.entries)} candidates, "
            f"{n}{rounds}): picks {visible(evidence.ranking.leader.name)}, {_pick_words(evidence)}")


def _not_preferred(best: Evidence, other: Evidence) -> str:
    """Why ``other``'s run is not the one the answer rests on: the first of :meth:`Evidence.weight` it loses on."""
    reasons = ("not your data", "fewer candidates", "fewer rounds", "fewer iterations")
    for reason, mine, theirs in zip(reasons, best.weight(), other.weight(), strict=True):
        if mine != theirs:
            return reason
    return "as strong, older or in a later directory"


def disagreement_lines(evidence: Evidence) -> list[str]:
    """Where other runs answer the workload otherwise (another pick, or one separable and the other not): both
    named, and why the answer rests on this one ([] where every run agrees)."""
    differ = evidence.disagreeing
    if not differ:
        return []
    agree = f"; {evidence.agreeing} agree{'s' if evidence.agreeing == 1 else ''} with it" if evidence.agreeing else ""
    others = f"{len(differ)} other runs answer" if len(differ) != 1 else "1 other run answers"
    lines = [f"Runs disagree: {others} this workload otherwise{agree}. This answer rests on run "
             f"{visible(evidence.run_id)} (preferred: your data, then more candidates, then more rounds, then more "
             "iterations, then the newest)",
             f"  this answer: {_run_words(evidence)}"]
    lines += [f"  otherwise: {_run_words(other)} (not preferred: {_not_preferred(evidence, other)})"
              for other in differ[:LISTED_RUNS]]
    if len(differ) > LISTED_RUNS:
        lines.append(f"  and {len(differ) - LISTED_RUNS} more runs that answer otherwise")
    return lines


def _runs_read(workload: Workload, dirs: Sequence[str | Path]) -> str:
    """``the 1 writers run read (0 in results, 1 in reference)``: how many runs of the question's suites each
    directory held."""
    suites = tuple(workload.question.operations)
    counts = [(d, sum(1 for _ in suite_runs([d], suites))) for d in dirs]
    total = sum(n for _, n in counts)
    where = ", ".join(f"{n} in {visible(shown_path(d))}" for d, n in counts)
    return f"the {total} {' or '.join(suites)} run{'s' if total != 1 else ''} read ({where or 'no directory given'})"


def _near_line(workload: Workload, dirs: Sequence[str | Path]) -> str:
    """The nearest measured case and how it differs (:mod:`.nearest`)."""
    from benchmarks_lib.advise.nearest import nearest_case

    near = nearest_case(dirs, workload)
    if near is None:
        operations = " or ".join(workload.question.operations.values())
        return f"  nearest measured: nothing; none of them holds rows of {operations}"
    what = f"cutouts of {near.cutout}" if near.cutout else "remote full reads" if workload.remote else \
        ACCESS_WORDS.get(workload.access, workload.access)
    how = (" with fsync" if near.fsync else " without fsync") if near.fsync is not None else ""
    link = f" over a {near.latency_ms:g} ms link" if near.latency_ms is not None else ""
    differs = "; ".join(near.differences) or "nothing in what is held equal"
    return (f"  nearest measured: {visible(what)} of {visible(near.dtype)}{how}{link}, dataset {visible(near.dataset)} "
            f"{visible(near.shape)}, run {visible(near.run_id)} in {visible(shown_path(near.run_dir.parent.parent))}; "
            f"it differs in: {visible(differs)}")


def not_covered_lines(workload: Workload, dirs: Sequence[str | Path]) -> list[str]:
    """For a workload no recorded run covers: how many runs were read and where, the nearest measured case and
    how it differs, and what to do."""
    hint = "iobench advise --like PATH ... --measure --budget 3m" if workload.like is None else \
        "the same command with --measure --budget 3m"
    if workload.remote:
        what = f"remote cutouts of {workload.cutout_text}" if workload.cutout else "remote full reads"
        what += f" of {workload.dtype} over a {workload.latency_ms:g} ms link"
    else:
        what = f"cutouts of {workload.cutout_text}" if workload.cutout else ACCESS_WORDS[workload.access]
        durable = " with fsync" if workload.fsync else " without fsync"
        what += f" of {workload.dtype}" + (durable if workload.access in ("write", "append") else "")
    lines = [f"Not covered: none of {_runs_read(workload, dirs)} measured {what}", _near_line(workload, dirs)]
    if workload.remote:
        measured = measured_latencies(dirs, workload)
        found = "; ".join(f"{', '.join(f'{v:g} ms' for v in latencies)} (run {visible(run)})"
                          for run, latencies in measured.items())
        lines.append("  " + (f"measured latencies: {found} (no interpolation between them)" if found else
                             "these reads were measured at no latency"))
        if workload.cutout:
            hint = "the cache suite measures remote cutouts of its own store: iobench run cache"
    lines.append(f"  measure it{' on your data' if not workload.remote or not workload.cutout else ''}: {hint}")
    return lines


__all__ = ["LISTED", "LISTED_RUNS", "PICK_WORDS", "advice_lines", "candidate_fields", "cost_lines",
           "disagreement_lines", "not_covered_lines", "shown_path"]
