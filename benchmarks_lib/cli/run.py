"""``iobench run``: measure a suite and save its records."""

from __future__ import annotations

import argparse

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.base.terminal import text
from benchmarks_lib.cli.common import console, parse_assignments, print_run, progress_reporter, with_profile, with_yes
from benchmarks_lib.suites import get_suite, suite_names


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("run", help="measure a suite and save its records")
    sp.add_argument("suite", help=f"one of: {', '.join(suite_names())} (`iobench suites` describes them)")
    with_profile(sp)
    sp.add_argument("-d", "--dims", help="name:size[:chunk[:shard]],... e.g. t:64,y:1080:540,x:1920")
    sp.add_argument("-b", "--backend", action="append", help="a backend (repeatable); 'all' for every one")
    sp.add_argument("--codec", help="none, lz4, zstd[:L], gzip[:L], blosc-<cname>[:clevel[:shuffle]]")
    sp.add_argument("--dataset", help="em_like, labels, microscopy, random, example:frog_tissues|channels, or "
                                      "file:PATH[:INNER][@ORIGIN] (Zarr, HDF5, TIFF, .npy, .vti; dims: the crop)")
    sp.add_argument("--test", action="append", help="writers: write, append, read, sharding (repeatable)")
    sp.add_argument("--iterations", type=str, help="measured iterations per point; a suite measured in rounds: the "
                    "cap of rounds over every build that goes on with a question (default 40; a build without a "
                    "budget: at most 20)")
    sp.add_argument("--warmups", type=str, help="discarded warm-up iterations per point")
    sp.add_argument("--versions", action="append", metavar="LIBRARY==V1,V2",
                    help="measure a library at these versions, each in an environment of its own built with uv "
                         "(repeatable, one per library), e.g. 'zarr==2.18.7,3.1.6'")
    sp.add_argument("--param", action="append", metavar="KEY=VALUE", help="any suite parameter (JSON values)")
    sp.add_argument("--continue", dest="continue_rounds", action="store_true",
                    help="continue this machine's last run of the suite where the profile, parameters, machine, code "
                         "and library versions are the same: its undecided questions go on from the rounds recorded "
                         "there, its decided ones are not measured again (as `iobench book` does)")
    sp.add_argument("--budget", help="the time the run may take, e.g. 120s or 2m (default: the suite's own for the "
                    "profile, `iobench suites`); rounds stop when the next would not fit, and say so")
    sp.add_argument("--run-id", help="name of the run; an existing one is resumed")
    sp.add_argument("--scratch-dir", help="scratch directory (default .iobench-scratch or $IOBENCH_SCRATCH)")
    sp.add_argument("--cluster", help="run the cases as Dask tasks, one per worker at a time: local, local:N "
                                      "or a scheduler address tcp://host:8786 (default: here, one after another)")
    with_yes(sp)
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchmarks_lib.run.runner import run_suite

    params = parse_assignments(args.param, "--param")
    shortcuts = {"dims": args.dims, "backends": args.backend, "codec": args.codec, "dataset": args.dataset,
                 "tests": args.test, "iterations": args.iterations, "warmups": args.warmups, "versions": args.versions}
    if args.dataset is not None and "datasets" in get_suite(args.suite).profiles["quick"]:  # compression's list
        shortcuts["datasets"], shortcuts["dataset"] = [args.dataset], None
    for key, value in shortcuts.items():
        if value is None:
            continue
        if key in params:
            raise SpecError(f"{key!r} is given both by its own flag and by --param; give it once")
        params[key] = value
    with progress_reporter() as progress:
        result = run_suite(args.suite, params, profile=args.profile, results_dir=args.results_dir,
                           run_id=args.run_id, scratch_dir=args.scratch_dir, progress=progress,
                           assume_yes=args.yes or None, cluster=args.cluster, budget=args.budget,
                           continue_rounds=args.continue_rounds)
    print_run(result.df, result.meta["suite"], f"{args.suite} — {result.run_dir}")
    console.print(text(f"records: {result.run_dir}"))
    return 1 if result.failed else 0
