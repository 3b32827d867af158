"""``iobench show``: summarise a recorded run."""

from __future__ import annotations

import argparse

from rich.text import Text

from benchmarks_lib.base.paths import RESULTS_DIR
from benchmarks_lib.base.terminal import text
from benchmarks_lib.cli.common import console, print_run, rich_table


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("show", help="summarise a recorded run")
    sp.add_argument("run")
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchmarks_lib.records.store import find_run, load_run, run_is_finished
    from benchmarks_lib.rules.words import rounds_table  # pandas: imported where a run is shown, not for --help

    run_dir = find_run(args.results_dir, args.run)
    df, meta = load_run(run_dir)
    env = meta["environment"]
    state = "" if run_is_finished(meta) else " (incomplete: still running or interrupted)"
    console.print(Text.assemble(text(meta["suite"], "bold"), text(
        f" run {meta.get('run_id', run_dir.name)} ({meta['profile']}) on {env.get('machine')}: {env.get('cpu_model')}, "
        f"{env.get('cpu_count')} cores, {env.get('fs_type')} — {len(df)} rows{state}")))
    print_run(df, meta["suite"], meta["suite"])
    questions = rounds_table(meta, escape=str)
    if len(questions):
        rounds = meta["rounds"]
        console.print(rich_table(questions, f"Rounds: {len(questions)} question(s), seed {rounds.get('seed')}, "
                                            f"{rounds.get('stopped') or 'every question answered or at its cap'}"))
    return 0
