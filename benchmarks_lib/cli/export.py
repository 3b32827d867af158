"""``iobench export``: a run's records as CSV."""

from __future__ import annotations

import argparse

from benchmarks_lib.base.paths import RESULTS_DIR
from benchmarks_lib.base.terminal import text
from benchmarks_lib.cli.common import console


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("export", help="a run's records as CSV")
    sp.add_argument("run")
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.add_argument("-o", "--output", help="CSV file to write (default: records.csv in the run directory)")
    sp.add_argument("--force", action="store_true", help="replace the output file if it exists")
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchmarks_lib.records.store import export_csv, find_run

    console.print(text(export_csv(find_run(args.results_dir, args.run), args.output, overwrite=args.force)))
    return 0
