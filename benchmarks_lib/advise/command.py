"""The ``iobench advise`` command: its options, the workload read from them, the answer from recorded runs
(:mod:`.advise`) or from a run of its own (``--measure``: :mod:`.advise_plan`), in :mod:`.advise_text`'s words.
:func:`answer` is the one path from a workload to the answer: the command prints its lines, the book's advise page
(:mod:`benchmarks_lib.chapters.advise`) shows them with its table and figure."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks_lib.advise.evidence import (
    Evidence,
    Workload,
    evidence_from,
    find_evidence,
    parse_budget,
    parse_workload,
)
from benchmarks_lib.base.paths import REFERENCE, RESULTS_DIR, checkout_dirs, is_checkout


def add_arguments(sp: argparse.ArgumentParser) -> None:
    """The ``iobench advise`` options."""
    sp.add_argument("--like", help="take shape and dtype from your file: PATH[:INNER] (Zarr, HDF5, TIFF, .npy, .vti)")
    sp.add_argument("--shape", help="the array's shape, e.g. 512,512,512 (with --dtype, instead of --like)")
    sp.add_argument("--dtype", help="the array's dtype, e.g. uint16")
    sp.add_argument("--access", required=True,
                    help="cutout:Z,Y,X, full-read, write, append (frames along axis 0), or remote reads over a link of "
                         "a given latency (0..10000 ms): remote-read:10ms (the whole array) or "
                         "remote-cutout:48,192,192@10ms; answered only from runs measured at that latency")
    sp.add_argument("--fsync", action=argparse.BooleanOptionalAction, default=True,
                    help="durable writes: fsync before a write counts as done (default: yes)")
    sp.add_argument("--threads", help="threads available (rows of more threads are left out, and no more are advised)")
    sp.add_argument("--results-dir", action="append",
                    help=f"recorded runs to answer from, repeatable (default: this checkout's {RESULTS_DIR}/ and "
                         "reference/, wherever the command runs; --measure records its run in the first)")
    sp.add_argument("--measure", action="store_true",
                    help="measure the workload on your --like file first (remote-read: the s3 suite, through a "
                         "versitygw on this machine behind the emulated link)")
    sp.add_argument("--budget", default="3m", help="time for --measure: 90s, 3m, 1h (default 3m)")
    sp.add_argument("--run-id", help="the --measure run's id; an existing one is resumed")
    sp.add_argument("--scratch-dir", help="scratch directory for --measure")


def add_command(sub, progress_reporter: Callable, console) -> None:
    """``iobench advise``: its options and the command, which shows the command line's progress bar and prints
    on its console (passed in: they live above this module)."""
    from benchmarks_lib.base.terminal import text

    sp = sub.add_parser("advise", help="which writer, codec, chunks, shards and threads for your workload, with the "
                                       "evidence",
                        description="Answered like for like from recorded runs (writers; remote reads: s3 and cache), "
                                    "ranked by the book's rule; threads from a threads run of the same writer, dtype "
                                    "and operation on the same machine (the fewest within 5% of the fastest); the "
                                    "codec's ratio from a compression run of the same data.")
    add_arguments(sp)

    def command(args: argparse.Namespace) -> int:
        import sys

        with progress_reporter() as progress:
            lines = advise(args, progress)
        for line in lines:
            console.print(text(line), soft_wrap=True)  # one line each, however long (a pipe reads lines)
        if args.results_dir is None and (note := unread_note()):
            print(f"iobench: note: {note}", file=sys.stderr)
        return 0

    sp.set_defaults(func=command)


@dataclass
class Advice:
    """What advise answers for a workload: the evidence (None where no run covers it) and the lines the command
    prints (record strings in them: print them as text, never markup). The book's advise page shows the same."""

    workload: Workload
    evidence: Evidence | None
    lines: list[str]


def answer(workload: Workload, budget_s: float, dirs: Sequence[str | Path], measure: bool = False,
           run_id: str | None = None, scratch_dir: str | Path | None = None, progress=None) -> Advice:
    """The answer from the recorded runs under ``dirs``, or (``measure``) from a run of its own recorded in
    ``dirs[0]``."""
    from benchmarks_lib.advise.plan import measure as measure_workload
    from benchmarks_lib.advise.text import (  # pandas and the chapters: only when advising
        advice_lines,
        not_covered_lines,
    )
    from benchmarks_lib.advise.versions import version_lines

    if measure:
        result, notes = measure_workload(workload, budget_s, dirs[0], run_id, scratch_dir, progress)
        evidence = evidence_from(result.run_dir, result.meta, workload, result.df)
        lines = (advice_lines(workload, evidence, dirs) + version_lines(evidence, workload) if evidence
                 else not_covered_lines(workload, [result.run_dir]))
        return Advice(workload, evidence, notes + lines)
    evidence = find_evidence(dirs, workload)
    return Advice(workload, evidence, advice_lines(workload, evidence, dirs) + version_lines(evidence, workload)
                  if evidence else not_covered_lines(workload, dirs))


def default_dirs() -> list[Path]:
    """Where advise reads when no ``--results-dir`` is given: this checkout's ``results/`` and ``reference/``, the
    same from every working directory (an installed iobench has no checkout: the working directory's ``results/``,
    where ``iobench run`` records, as :func:`unread_note` says)."""
    return [checkout_dirs()[0], *([REFERENCE] if REFERENCE.is_dir() else [])]


def unread_note() -> str | None:
    """What a reader should know about the default directories: an installed iobench reads the working directory's
    ``results/``; a checkout's reads its own, so runs recorded in the working directory's ``results/`` (``iobench
    run`` from elsewhere) are not read, and said so. None when neither applies."""
    from benchmarks_lib.base.terminal import visible
    from benchmarks_lib.records.store import run_dirs

    here = Path.cwd() / RESULTS_DIR
    if not is_checkout():
        return (f"runs read from {visible(here)} (the working directory's {RESULTS_DIR}/: this iobench is installed, "
                "not a checkout); --results-dir names another")
    if here.resolve() == checkout_dirs()[0].resolve() or not (runs := run_dirs(here)):
        return None
    return (f"the {len(runs)} run{'s' if len(runs) != 1 else ''} in {visible(here)} were not read (advise reads this "
            f"checkout's {RESULTS_DIR}/ and reference/ from every directory); --results-dir {RESULTS_DIR} reads them")


def advise(args: argparse.Namespace, progress=None) -> list[str]:
    """The command's answer as lines of text (record strings in them: print them as text, never markup)."""
    workload = parse_workload(args.like, args.shape, args.dtype, args.access, args.fsync, args.threads)
    budget = parse_budget(args.budget)
    return answer(workload, budget, args.results_dir or default_dirs(), args.measure, args.run_id,
                  args.scratch_dir, progress).lines


__all__ = ["Advice", "add_arguments", "add_command", "advise", "answer", "default_dirs", "unread_note"]
