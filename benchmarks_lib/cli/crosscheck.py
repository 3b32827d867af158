"""``iobench crosscheck``: ome-writers' documented case: our runner vs its own timing."""

from __future__ import annotations

import argparse

from benchmarks_lib.base.paths import RESULTS_DIR
from benchmarks_lib.cli.common import console, rich_table


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("crosscheck", help="ome-writers' documented case: our runner vs its own timing")
    sp.add_argument("-b", "--backend", action="append", help="ome-writers backend (repeatable)")
    sp.add_argument("-d", "--dims", help="default: t:20:1,y:1024:256,x:1024:256 (its documented case)")
    sp.add_argument("--iterations", default=10)
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchmarks_lib.base.specs import parse_count, parse_dims, parse_names
    from benchmarks_lib.run.crosscheck import DOCUMENTED_DIMS, crosscheck_backends, ome_writers_crosscheck

    allowed = crosscheck_backends()
    backends = parse_names(args.backend or list(allowed), "ome-writers backend", allowed)
    dims = str(parse_dims(args.dims or DOCUMENTED_DIMS))
    iterations = parse_count(args.iterations, "iterations", maximum=1000)
    table = ome_writers_crosscheck(backends, dims=dims, iterations=iterations, results_dir=args.results_dir)
    console.print(rich_table(table, "ome-writers' documented case: our runner vs its tools/benchmark.py timing"))
    return 0
