"""What the commands share: the consoles, rich tables of record text, the one-line parser and errors, ``KEY=VALUE``
options, the progress bar, a run's tables, the options every measuring command takes."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import NoReturn

from rich.console import Console
from rich.table import Table

from benchmarks_lib.base.paths import RESULTS_DIR
from benchmarks_lib.base.redact import redact
from benchmarks_lib.base.specs import PROFILES, SpecError, bounded_json
from benchmarks_lib.base.terminal import text, visible

# Wide tables when the output is a file or a pipe (CI logs), the terminal's width otherwise.
console = Console(width=None if sys.stdout.isatty() else 220)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 400)


def rich_table(df, title: str = "", index: bool = False, title_style: str = "") -> Table:
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


#: the namespace attribute that holds the options given so far while one command line is parsed (removed after)
_GIVEN = "_iobench_given"


class _Once:
    """An option that takes one value (or is a switch): given twice on one command line, it is an error, never the
    last one silently winning (``--budget 2m ... --budget 2h``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault(_GIVEN, set())
        if self.dest in given:
            parser.error(f"{option_string} is given twice; give it once")
        given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class _OnceStore(_Once, argparse._StoreAction):
    pass


class _OnceStoreConst(_Once, argparse._StoreConstAction):
    pass


class _OnceStoreTrue(_Once, argparse._StoreTrueAction):
    pass


class _OnceStoreFalse(_Once, argparse._StoreFalseAction):
    pass


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line (no usage block) and exits 2, and refuses an option
    that takes one value given twice (``append`` options repeat by design)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name, action in (("store", _OnceStore), (None, _OnceStore), ("store_const", _OnceStoreConst),
                             ("store_true", _OnceStoreTrue), ("store_false", _OnceStoreFalse)):
            self.register("action", name, action)

    def parse_known_args(self, args=None, namespace=None):
        parsed, rest = super().parse_known_args(args, namespace)
        parsed.__dict__.pop(_GIVEN, None)
        return parsed, rest

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog.split()[0]} --help)\n")


def _parse_value(text: str, flag: str):
    """A JSON value (numbers, true/false, lists, quoted strings; its size and nesting bounded:
    ``specs.bounded_json``), else the text itself."""
    try:
        return bounded_json(text, flag)
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
        out[key] = _parse_value(value, f"{flag} {key}")
    return out


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
    """The ceiling, the chapter's own table of the run (``chapters.chapter.run_table``) and its failed cases. A
    library measured at several versions (``--versions``) has a column per version (``zarr-python 2.18.7``), and
    each version's time against the newest follows, by the rule, with its interval (``rules.upgrades``)."""
    from benchmarks_lib.chapters.chapter import run_table
    from benchmarks_lib.chapters.common import ceiling_table, failures
    from benchmarks_lib.rules.ceilings import ceiling_measured_by, ok_rows
    from benchmarks_lib.rules.upgrades import changes, headline
    from benchmarks_lib.run.versions import ENVIRONMENT, VERSION

    versions = ENVIRONMENT in df and VERSION in df and df[ENVIRONMENT].dropna().nunique() >= 2
    shown = df
    if versions:  # each version its own column
        version, backend = df[VERSION].astype("string"), df["backend"].astype(str)
        shown = df.assign(backend=backend.where(version.isna(), backend + " " + version.fillna("")))
    table = run_table(suite_name, shown)
    by = ceiling_measured_by(df)
    console.print(rich_table(ceiling_table(df), f"Ceiling (measured by run {by} of the same book build)" if by else
                             "Ceiling (same run)"))
    console.print(rich_table(table, title, index=type(table.index).__name__ != "RangeIndex"))
    for line in headline(changes(ok_rows(df)), visible) if versions else ():
        console.print(line.replace("**", ""), markup=False, highlight=False)
    bad = failures(df)
    if not bad.empty:
        console.print(rich_table(bad, "Failed cases (their error rows are recorded)", title_style="red"))


def one_line(exc: BaseException) -> str:
    """An error message in one line of at most 600 characters: secrets redacted, control characters shown escaped."""
    line = visible(" ".join(redact(str(exc)).split()))
    return line if len(line) <= 600 else line[:597] + "..."


def with_yes(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--yes", action="store_true",
                    help="go ahead with a run larger than its profile's disk budget or the free memory")


def with_profile(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--results-dir", default=RESULTS_DIR, help="where runs are stored (default: results/)")
    sp.add_argument("--profile", default="quick", choices=PROFILES, help="size profile (default: quick)")
