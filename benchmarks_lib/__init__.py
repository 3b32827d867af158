"""iobench-book: correct, reproducible I/O benchmarks for scientific arrays and meshes.

The public API is small: run or load a suite, read records, each chapter's figures and
tables (``benchmarks_lib.chapters``) and the table of a notebook's parameters. Names are imported
on first use, so ``import benchmarks_lib.<module>`` in a fresh measuring process pulls in nothing
it does not need.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: public name -> module that defines it (imported lazily, PEP 562)
_PUBLIC: dict[str, str] = {
    "DATASETS": "data.datasets",
    "Dataset": "data.datasets",
    "checksum_array": "data.datasets",
    "checksum_blocks": "data.datasets",
    "evict_page_cache": "measure",
    "parameters_table": "book.pages",
    "SCHEMA_VERSION": "records.store",
    "load_results": "records.store",
    "load_run": "records.store",
    "above_ceiling": "chapters.flags",
    "ceiling_table": "chapters.common",
    "failures": "chapters.common",
    "skips": "chapters.common",
    "with_ceiling_fraction": "chapters.common",
    "RunResult": "run.runner",
    "run_or_load": "run.runner",
    "run_suite": "run.runner",
    "SpecError": "base.specs",
    "parse_codec": "base.specs",
    "parse_dims": "base.specs",
}


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'benchmarks_lib' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])


__all__ = sorted(_PUBLIC)
