"""``iobench backends``: every writer/format: available?, version, or why not."""

from __future__ import annotations

import argparse
import contextlib

from rich.table import Table
from rich.text import Text

from benchmarks_lib.base.terminal import text
from benchmarks_lib.cli.common import console


def add(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("backends", help="every writer/format: available?, version, or why not")
    sp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
