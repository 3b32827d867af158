"""The command line: ``iobench`` (or ``python -m benchmarks_lib``).

Subcommands: backends, suites, run, show, compare, export, pack, book, crosscheck, ceiling, advise. Exit status:
0 measured/done, 1 some case failed, 2 bad input (one line on stderr; nothing written).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import NoReturn

from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchmarks_lib.advise.command import add_command as add_advise_command
from benchmarks_lib.base.paths import RESULTS_DIR
from benchmarks_lib.base.redact import redact
from benchmarks_lib.base.signals import Terminated, sigterm_as_interrupt
from benchmarks_lib.base.specs import PROFILES, SpecError
from benchmarks_lib.base.terminal import text, visible
from benchmarks_lib.suites import get_suite, suite_names

# Wide tables when the output is a file or a pipe (CI logs), the terminal's width otherwise.
console = Console(width=None if sys.stdout.isatty() else 220)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 400)


def _table(df, title: str = "", index: bool = False, title_style: str = "") -> Table:
    """A DataFrame as a rich table; every name and cell is ``Text`` (records are data, never markup)."""
    table = Table(title=text(title, title_style), show_lines=False)
    cols = ([df.index.name or ""] if index else []) + list(df.columns)
    for i, c in enumerate(cols):
        table.add_column(text(c), justify="left" if i == 0 else "right")
    for idx, row in df.iterrows():
        cells = [idx] if index else []
        cells += ["" if v is None else (f"{v:.4g}" if isinstance(v, float) else v) for v in row.tolist()]
        table.add_row(*(text(c) for c in cells))
    return table


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line (no usage block) and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog.split()[0]} --help)\n")


def _parse_value(text: str):
    """A JSON value (numbers, true/false, lists, quoted strings), else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_assignments(items: list[str] | None, flag: str) -> dict:
    """``KEY=VALUE`` options (JSON values) as a dict; a repeated key is an error."""
    out: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"{flag} {item!r} is not KEY=VALUE")
        if key in out:
            raise SpecError(f"{flag} {key!r} is given twice")
        out[key] = _parse_value(value)
    return out


def cmd_backends(args: argparse.Namespace) -> int:
    from benchmarks_lib.adapters import KINDS, adapter_class, backend_status, registered

    table = Table(title="Backends: array writers, mesh writers, codecs, remote readers")
    for col in ("kind", "backend", "available", "version", "format", "codecs", "threads", "why not / install"):
        table.add_column(col)
    for kind in KINDS:
        for name in registered(kind):
            names = [name]
            with contextlib.suppress(ImportError):
                names += [f"{name}:{o}" for o in adapter_class(name, kind).options]
            for n in names:
                s = backend_status(n, kind)
                caps = s.capabilities
                available = text("yes", "green") if s.available else text("no", "red")
                cells = [kind, n, available, s.version or "-", caps.get("format", "-"), caps.get("codecs", "-"),
                         "yes" if caps.get("threads_setting") else "-", s.reason or ""]
                table.add_row(*(c if isinstance(c, Text) else text(c) for c in cells))
    console.print(table)
    return 0


def cmd_suites(args: argparse.Namespace) -> int:
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


@contextlib.contextmanager
def progress_reporter():
    """A rich progress bar on a terminal; plain per-case lines otherwise (CI logs)."""
    from benchmarks_lib.run.runner import print_progress

    if not sys.stderr.isatty():
        yield lambda done, total, message, finished: print_progress(done, total, visible(message), finished)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=False) as bar:
        task = bar.add_task("starting", total=None)

        def update(done: int, total: int, message: str, finished: bool) -> None:
            bar.update(task, completed=done, total=total, description=visible(message)[:70])
            if finished and (": error" in message):
                bar.console.print(text(message, "red"))

        yield update


def print_run(df, suite_name: str, title: str) -> None:
    """The ceiling, the chapter's own table of the run (``chapters.chapter.run_table``) and its failed cases."""
    from benchmarks_lib.chapters.chapter import run_table
    from benchmarks_lib.chapters.common import ceiling_table, failures

    table = run_table(suite_name, df)
    console.print(_table(ceiling_table(df), "Ceiling (same run)"))
    console.print(_table(table, title, index=type(table.index).__name__ != "RangeIndex"))
    bad = failures(df)
    if not bad.empty:
        console.print(_table(bad, "Failed cases (their error rows are recorded)", title_style="red"))


def cmd_run(args: argparse.Namespace) -> int:
    from benchmarks_lib.run.runner import run_suite

    params = parse_assignments(args.param, "--param")
    shortcuts = {"dims": args.dims, "backends": args.backend, "codec": args.codec, "dataset": args.dataset,
                 "tests": args.test, "iterations": args.iterations, "warmups": args.warmups}
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
                           assume_yes=args.yes or None, cluster=args.cluster)
    print_run(result.df, result.meta["suite"], f"{args.suite} — {result.run_dir}")
    console.print(text(f"records: {result.run_dir}"))
    return 1 if result.failed else 0


def cmd_show(args: argparse.Namespace) -> int:
    from benchmarks_lib.records.store import find_run, load_run, run_is_finished

    run_dir = find_run(args.results_dir, args.run)
    df, meta = load_run(run_dir)
    env = meta["environment"]
    state = "" if run_is_finished(meta) else " (incomplete: still running or interrupted)"
    console.print(Text.assemble(text(meta["suite"], "bold"), text(
        f" run {meta.get('run_id', run_dir.name)} ({meta['profile']}) on {env.get('machine')}: {env.get('cpu_model')}, "
        f"{env.get('cpu_count')} cores, {env.get('fs_type')} — {len(df)} rows{state}")))
    print_run(df, meta["suite"], meta["suite"])
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from benchmarks_lib.chapters.compare import Comparison, parse_threshold
    from benchmarks_lib.records.store import find_run

    threshold = parse_threshold(args.threshold)
    dirs = [find_run(args.results_dir, run) for run in (args.run_a, args.run_b)]
    comparison = Comparison.load(*dirs, threshold=threshold)
    console.print(text(comparison.label, "bold"))
    if comparison.environment.empty:
        console.print("No recorded difference in the machine, the libraries or the parameters.")
    else:
        console.print(_table(comparison.environment, "What differs between the runs"))
    console.print(_table(comparison.table, f"Time per case, B/A with its 95% interval; flagged first "
                                           f"(threshold {threshold:.0%})"))
    console.print(text(comparison.counts()))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from benchmarks_lib.records.store import export_csv, find_run

    console.print(text(export_csv(find_run(args.results_dir, args.run), args.output, overwrite=args.force)))
    return 0


def cmd_pack(args: argparse.Namespace) -> int:
    from benchmarks_lib.records.store import find_run, pack_run

    console.print(text(pack_run(find_run(args.results_dir, args.run), args.dest)))
    return 0


def cmd_book(args: argparse.Namespace) -> int:
    from benchmarks_lib.book.build import BookError, build_book

    try:
        index = build_book(profile=args.profile, results_dir=args.results_dir, execute=not args.no_execute,
                           notebooks=args.notebook, parameters=parse_assignments(args.set, "--set"),
                           assume_yes=args.yes, from_runs=args.from_runs, timeout=args.timeout)
    except BookError as exc:
        print(f"iobench: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        where = f" while executing {exc}" if str(exc) else ""
        kept = ("nothing was measured" if args.from_runs
                else f"the cases measured so far are kept in {visible(args.results_dir)}")
        print(f"iobench: book interrupted{where}; {kept}; no book was built (run the command again to build it)",
              file=sys.stderr)
        return 130
    console.print(text(f"book: {index}"))
    return 0


def cmd_ceiling(args: argparse.Namespace) -> int:
    from benchmarks_lib.base.availability import find_program, not_installed
    from benchmarks_lib.base.paths import resolve_scratch_root
    from benchmarks_lib.base.scratch import claim_scratch, remove_tree
    from benchmarks_lib.base.specs import parse_size
    from benchmarks_lib.chapters.common import ceiling_table
    from benchmarks_lib.run.runner import run_suite
    from benchmarks_lib.suites.ceiling import FioError, run_fio

    nbytes = parse_size(args.size)
    if args.fio and find_program("fio") is None:
        raise SpecError("--fio needs " + not_installed("the fio program", "apt-get install fio"))
    result = run_suite("ceiling", {"nbytes": args.size, "iterations": args.iterations}, profile=args.profile,
                       results_dir=args.results_dir, scratch_dir=args.scratch_dir, assume_yes=args.yes or None)
    ours = ceiling_table(result.df).set_index("operation")["GB/s median"]
    console.print(_table(ceiling_table(result.df), "Ceiling"))
    if args.fio:
        scratch = claim_scratch(resolve_scratch_root(args.scratch_dir), f"fio-{result.meta['run_id']}")
        try:
            fio = run_fio(scratch, nbytes)
        except FioError as exc:
            print(f"iobench: error: {_one_line(exc)}; the ceiling above is recorded", file=sys.stderr)
            return 1
        finally:
            remove_tree(scratch, scratch)
        for op, value in fio.items():
            console.print(f"{op}: iobench {ours.get(op, float('nan')):.3f} GB/s, fio {value:.3f} GB/s "
                          f"({100 * (ours.get(op, float('nan')) / value - 1):+.1f}%)")
    return 0


def cmd_crosscheck(args: argparse.Namespace) -> int:
    from benchmarks_lib.base.specs import parse_count, parse_dims, parse_names
    from benchmarks_lib.run.crosscheck import DOCUMENTED_DIMS, crosscheck_backends, ome_writers_crosscheck

    allowed = crosscheck_backends()
    backends = parse_names(args.backend or list(allowed), "ome-writers backend", allowed)
    dims = str(parse_dims(args.dims or DOCUMENTED_DIMS))
    iterations = parse_count(args.iterations, "iterations", maximum=1000)
    table = ome_writers_crosscheck(backends, dims=dims, iterations=iterations, results_dir=args.results_dir)
    console.print(_table(table, "ome-writers' documented case: our runner vs its tools/benchmark.py timing"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="iobench", description="Measure array/mesh I/O correctly, on this machine.")
    sub = p.add_subparsers(dest="command", required=True)

    def yes(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--yes", action="store_true",
                        help="go ahead with a run larger than its profile's disk budget or the free memory")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--results-dir", default=RESULTS_DIR, help="where runs are stored (default: results/)")
        sp.add_argument("--profile", default="quick", choices=PROFILES, help="size profile (default: quick)")

    sp = sub.add_parser("backends", help="every writer/format: available?, version, or why not")
    sp.set_defaults(func=cmd_backends)
    sp = sub.add_parser("suites", help="the suites and their profile defaults")
    sp.add_argument("--profile", default="quick", choices=PROFILES)
    sp.set_defaults(func=cmd_suites)
    sp = sub.add_parser("run", help="measure a suite and save its records")
    sp.add_argument("suite", help=f"one of: {', '.join(suite_names())} (`iobench suites` describes them)")
    common(sp)
    sp.add_argument("-d", "--dims", help="name:size[:chunk[:shard]],... e.g. t:64,y:1080:540,x:1920")
    sp.add_argument("-b", "--backend", action="append", help="a backend (repeatable); 'all' for every one")
    sp.add_argument("--codec", help="none, lz4, zstd[:L], gzip[:L], blosc-<cname>[:clevel[:shuffle]]")
    sp.add_argument("--dataset", help="em_like, labels, microscopy, random, example:frog_tissues|channels, or "
                                      "file:PATH[:INNER][@ORIGIN] (Zarr, HDF5, TIFF, .npy, .vti; dims: the crop)")
    sp.add_argument("--test", action="append", help="writers: write, append, read, sharding (repeatable)")
    sp.add_argument("--iterations", type=str, help="measured iterations per point")
    sp.add_argument("--warmups", type=str, help="discarded warm-up iterations per point")
    sp.add_argument("--param", action="append", metavar="KEY=VALUE", help="any suite parameter (JSON values)")
    sp.add_argument("--run-id", help="name of the run; an existing one is resumed")
    sp.add_argument("--scratch-dir", help="scratch directory (default .iobench-scratch or $IOBENCH_SCRATCH)")
    sp.add_argument("--cluster", help="run the cases as Dask tasks, one per worker at a time: local, local:N "
                                      "or a scheduler address tcp://host:8786 (default: here, one after another)")
    yes(sp)
    sp.set_defaults(func=cmd_run)
    sp = sub.add_parser("show", help="summarise a recorded run")
    sp.add_argument("run")
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.set_defaults(func=cmd_show)
    sp = sub.add_parser("compare", help="two runs side by side: time ratio per case with its 95%% CI, verdicts")
    sp.add_argument("run_a", help="the baseline run (id, machine/id or directory)")
    sp.add_argument("run_b", help="the run compared with it")
    sp.add_argument("--threshold", default="0.1",
                    help="change a verdict needs: the whole 95%% CI of B/A beyond 1 +- this (default 0.1)")
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.set_defaults(func=cmd_compare)
    sp = sub.add_parser("export", help="a run's records as CSV")
    sp.add_argument("run")
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.add_argument("-o", "--output", help="CSV file to write (default: records.csv in the run directory)")
    sp.add_argument("--force", action="store_true", help="replace the output file if it exists")
    sp.set_defaults(func=cmd_export)
    sp = sub.add_parser("pack", help="a run copied into another results directory (e.g. reference/), in one file")
    sp.add_argument("run")
    sp.add_argument("dest", help="the results directory to copy it into (never written over)")
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.set_defaults(func=cmd_pack)
    sp = sub.add_parser("book", help="execute the notebooks (papermill) and build the HTML book")
    common(sp)
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
    yes(sp)
    sp.set_defaults(func=cmd_book)
    sp = sub.add_parser("crosscheck", help="ome-writers' documented case: our runner vs its own timing")
    sp.add_argument("-b", "--backend", action="append", help="ome-writers backend (repeatable)")
    sp.add_argument("-d", "--dims", help="default: t:20:1,y:1024:256,x:1024:256 (its documented case)")
    sp.add_argument("--iterations", default=10)
    sp.add_argument("--results-dir", default=RESULTS_DIR)
    sp.set_defaults(func=cmd_crosscheck)
    sp = sub.add_parser("ceiling", help="measure the machine's ceiling (optionally beside fio)")
    common(sp)
    sp.add_argument("--size", default="256MiB")
    sp.add_argument("--iterations", default=3)
    sp.add_argument("--fio", action="store_true", help="also run fio on the same size")
    sp.add_argument("--scratch-dir")
    yes(sp)
    sp.set_defaults(func=cmd_ceiling)
    add_advise_command(sub, progress_reporter, console)
    return p


def _one_line(exc: BaseException) -> str:
    """An error message in one line of at most 600 characters: secrets redacted, control characters shown escaped."""
    line = visible(" ".join(redact(str(exc)).split()))
    return line if len(line) <= 600 else line[:597] + "..."


def main(argv: list[str] | None = None) -> int:
    """Exit 0 done, 1 a case or the run failed (finished cases are kept), 2 bad input (nothing written),
    130 interrupted (Ctrl-C), 143 terminated (SIGTERM)."""
    args = build_parser().parse_args(argv)
    try:
        with sigterm_as_interrupt():
            return args.func(args)
    except (SpecError, FileNotFoundError) as exc:
        print(f"iobench: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk or a vanished directory mid-run: what was finished is kept
        where = f" ({visible(exc.filename)})" if getattr(exc, "filename", None) else ""
        print(f"iobench: error: {exc.strerror or _one_line(exc)}{where}; finished cases are kept "
              "(re-run with the same --run-id to resume)", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        why, status = ("terminated (SIGTERM)", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
        print(f"iobench: {why}; finished cases are kept (re-run with the same --run-id to resume)", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
