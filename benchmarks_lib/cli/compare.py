"""``iobench compare``: two runs side by side: time ratio per case with its 95% CI, verdicts."""

from __future__ import annotations

import argparse

from benchmarks_lib.base.paths import RESULTS_DIR
from benchmarks_lib.base.terminal import text
from benchmarks_lib.cli.common import console, rich_table


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("compare", help="two runs side by side: time ratio per case with its 95%% CI, verdicts")
    sp.add_argument("run_a", help="the baseline run (id, machine/id or directory)")
    sp.add_argument("run_b", help="the run compared with it")
    sp.add_argument("--threshold", default="0.1",
                    help="the change a verdict needs, a factor either way: slower when the whole 95%% interval of "
                         "B/A lies above 1 + this, faster when below 1 / (1 + this), same when within both, else not "
                         "separable (default 0.1: above 1.1, below 0.909)")
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchmarks_lib.chapters.compare import Comparison, parse_threshold, threshold_words
    from benchmarks_lib.records.store import find_run

    threshold = parse_threshold(args.threshold)
    dirs = [find_run(args.results_dir, run) for run in (args.run_a, args.run_b)]
    comparison = Comparison.load(*dirs, threshold=threshold)
    console.print(text(comparison.label, "bold"))
    if comparison.environment.empty:
        console.print("No recorded difference in the machine, the libraries or the parameters.")
    else:
        console.print(rich_table(comparison.environment, "What differs between the runs"))
    console.print(rich_table(comparison.table, f"Time per case, B/A with its 95% interval; flagged first "
                                           f"(threshold: {threshold_words(threshold)})"))
    console.print(text(comparison.counts()))
    return 0
