"""``iobench ceiling``: measure the machine's ceiling (optionally beside fio)."""

from __future__ import annotations

import argparse
import sys

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.cli.common import console, one_line, rich_table, with_profile, with_yes


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("ceiling", help="measure the machine's ceiling (optionally beside fio)")
    with_profile(sp)
    sp.add_argument("--size", default="256MiB")
    sp.add_argument("--iterations", default=3)
    sp.add_argument("--fio", action="store_true", help="also run fio on the same size")
    sp.add_argument("--scratch-dir")
    with_yes(sp)
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchmarks_lib.base.availability import find_program, not_installed
    from benchmarks_lib.base.paths import resolve_scratch_root
    from benchmarks_lib.base.scratch import claim_scratch, remove_tree
    from benchmarks_lib.base.specs import parse_size
    from benchmarks_lib.chapters.common import ceiling_table
    from benchmarks_lib.rules.ceilings import ceiling_gbps
    from benchmarks_lib.run.runner import run_suite
    from benchmarks_lib.suites.ceiling import FioError, run_fio

    nbytes = parse_size(args.size)
    if args.fio and find_program("fio") is None:
        raise SpecError("--fio needs " + not_installed("the fio program", "apt-get install fio"))
    result = run_suite("ceiling", {"nbytes": args.size, "iterations": args.iterations}, profile=args.profile,
                       results_dir=args.results_dir, scratch_dir=args.scratch_dir, assume_yes=args.yes or None)
    ours = ceiling_gbps(result.df)
    console.print(rich_table(ceiling_table(result.df), "Ceiling"))
    if args.fio:
        scratch = claim_scratch(resolve_scratch_root(args.scratch_dir), f"fio-{result.meta['run_id']}")
        try:
            fio = run_fio(scratch, nbytes)
        except FioError as exc:
            print(f"iobench: error: {one_line(exc)}; the ceiling above is recorded", file=sys.stderr)
            return 1
        finally:
            remove_tree(scratch, scratch)
        for op, value in fio.items():
            console.print(f"{op}: iobench {ours.get(op, float('nan')):.3f} GB/s, fio {value:.3f} GB/s "
                          f"({100 * (ours.get(op, float('nan')) / value - 1):+.1f}%)")
    return 0
