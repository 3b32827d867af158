"""``iobench book``: execute the notebooks (papermill) and build the HTML book."""

from __future__ import annotations

import argparse
import sys

from benchmarks_lib.base.signals import Terminated
from benchmarks_lib.base.terminal import text, visible
from benchmarks_lib.book.plan import BOOK_BUDGET_S
from benchmarks_lib.cli.common import console, one_line, parse_assignments, with_profile, with_yes


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("book", help="execute the notebooks (papermill) and build the HTML book")
    with_profile(sp)
    sp.add_argument("--no-execute", action="store_true", help="build from already executed notebooks")
    sp.add_argument("--from", dest="from_runs", metavar="DIR",
                    help="draw every chapter from the newest recorded run of its suite in DIR (e.g. reference/), "
                         "measuring nothing")
    sp.add_argument("--notebook", action="append", help="only these notebooks (stem), repeatable")
    sp.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="a notebook parameter (JSON value) for every notebook, or NOTEBOOK:KEY=VALUE for one")
    sp.add_argument("--timeout", metavar="SECONDS",
                    help="seconds one cell may run before the book calls it hung (default: 4x its suite's stated "
                         "time on the profile, at least 600)")
    sp.add_argument("--budget", help=f"the time the notebooks may take together, e.g. 5m (default: "
                    f"{BOOK_BUDGET_S['quick'] / 60:.0f} minutes for quick, {BOOK_BUDGET_S['standard'] / 60:.0f} for "
                    "standard, none for seed): each measuring notebook gets its share, in proportion "
                    "to what it needs to reach its next look, what one leaves goes to the next, and what the last "
                    "leaves to another pass of the chapters with questions the budget ended")
    sp.add_argument("--fresh", action="store_true",
                    help="measure every question afresh (default: each chapter continues this machine's last run "
                         "of its suite where the profile, parameters, machine, code and library versions are the "
                         "same: its undecided questions go on from the rounds recorded there)")
    with_yes(sp)
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchmarks_lib.book.build import BookError, build_book

    try:
        index = build_book(profile=args.profile, results_dir=args.results_dir, execute=not args.no_execute,
                           notebooks=args.notebook, parameters=parse_assignments(args.set, "--set"),
                           assume_yes=args.yes, from_runs=args.from_runs, timeout=args.timeout,
                           budget=args.budget, fresh=args.fresh)
    except BookError as exc:
        print(f"iobench: error: {one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        where = f" while executing {exc}" if str(exc) else ""
        kept = ("nothing was measured" if args.from_runs
                else f"the cases measured so far are kept in {visible(args.results_dir)}")
        how, status = ("terminated (SIGTERM)", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
        print(f"iobench: book {how}{where}; {kept}; no book was built (run the command again to build it)",
              file=sys.stderr)
        return status
    console.print(text(f"book: {index}"))
    return 0
