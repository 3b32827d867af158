"""``iobench pack``: a run copied into another results directory (e.g. reference/), in one file."""

from __future__ import annotations

import argparse

from benchmarks_lib.base.paths import RESULTS_DIR
from benchmarks_lib.base.terminal import text
from benchmarks_lib.cli.common import console


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("pack", help="a run copied into another results directory (e.g. reference/), in one file")
    sp.add_argument("run")
    sp.add_argument("dest", help="the results directory to copy it into (never written over)")
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchmarks_lib.records.store import find_run, pack_run

    console.print(text(pack_run(find_run(args.results_dir, args.run), args.dest)))
    return 0
