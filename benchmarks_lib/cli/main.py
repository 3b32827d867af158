"""The command line: ``iobench`` (or ``python -m benchmarks_lib``), one module per command (as asv's ``commands/``):
each has ``add(sub)``, which declares its options, and ``run(args)``; ``advise`` is declared beside its answer
(:mod:`benchmarks_lib.advise.command`). Exit status: 0 measured/done, 1 some case failed, 2 bad input (one line on
stderr; nothing written).
"""

from __future__ import annotations

import argparse
import sys

from benchmarks_lib.advise.command import add_command as add_advise_command
from benchmarks_lib.base.signals import Terminated, sigterm_as_interrupt
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.base.terminal import visible
from benchmarks_lib.cli import backends, book, ceiling, compare, crosscheck, export, pack, run, show, suites
from benchmarks_lib.cli.common import OneLineParser, console, one_line, progress_reporter

#: the commands in the order ``iobench --help`` lists them (advise last)
COMMANDS = (backends, suites, run, show, compare, export, pack, book, crosscheck, ceiling)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="iobench", description="Measure array/mesh I/O correctly, on this machine.")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    add_advise_command(sub, progress_reporter, console)
    return p


def main(argv: list[str] | None = None) -> int:
    """Exit 0 done, 1 a case or the run failed (finished cases are kept), 2 bad input (nothing written),
    130 interrupted (Ctrl-C), 143 terminated (SIGTERM)."""
    args = build_parser().parse_args(argv)
    try:
        with sigterm_as_interrupt():
            return args.func(args)
    except (SpecError, FileNotFoundError) as exc:
        print(f"iobench: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk or a vanished directory mid-run: what was finished is kept
        where = f" ({visible(exc.filename)})" if getattr(exc, "filename", None) else ""
        print(f"iobench {args.command}: error: {exc.strerror or one_line(exc)}{where}{_kept(args.command)}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        why, status = ("terminated (SIGTERM)", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
        print(f"iobench {args.command}: {why}{_kept(args.command)}", file=sys.stderr)
        return status


def _kept(command: str) -> str:
    """What a command that stopped half-way keeps, and how to go on (only ``run`` resumes)."""
    return "; finished cases are kept (re-run with the same --run-id to resume)" if command == "run" else ""


if __name__ == "__main__":
    sys.exit(main())
