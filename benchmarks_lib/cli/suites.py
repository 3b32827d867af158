"""``iobench suites``: the suites and their profile defaults."""

from __future__ import annotations

import argparse

from benchmarks_lib.base.specs import PROFILES
from benchmarks_lib.cli.common import console
from benchmarks_lib.suites import get_suite, suite_names


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("suites", help="the suites and their profile defaults")
    sp.add_argument("--profile", default="quick", choices=PROFILES)
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchmarks_lib.base.specs import format_bytes
    from benchmarks_lib.run.preflight import DISK_BUDGET
    from benchmarks_lib.run.runner import planned_scratch_bytes

    for name in suite_names():
        suite = get_suite(name)
        console.print(f"[bold]{name}[/]: {suite.title}" + (f" ({suite.measures})" if suite.measures else ""))
        budget = suite.time_budget_s.get(args.profile)
        took = "" if not budget else f"about {budget:.0f} s" if budget < 120 else f"about {budget / 60:.1f} min"
        console.print(f"    ({args.profile}: {took} on 2 cores, " if budget else f"    ({args.profile}: ", end="")
        console.print(f"up to {format_bytes(planned_scratch_bytes(name, args.profile))} of scratch at once; "
                      f"disk budget {format_bytes(DISK_BUDGET[args.profile])})", highlight=False)
        for key, value in suite.profiles.get(args.profile, {}).items():
            console.print(f"    {key} = {value!r}", highlight=False)
    return 0
