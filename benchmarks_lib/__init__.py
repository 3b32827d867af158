"""iobench-book: correct, reproducible I/O benchmarks for scientific arrays and meshes.

The public API is small: run or load a suite, read records, and the standard figures.
"""

from .datasets import DATASETS, Dataset, checksum_array, checksum_blocks
from .measure import evict_page_cache, measure
from .records import SCHEMA_VERSION, load_results, load_run
from .report import ceiling_table, failures, skips, with_ceiling_fraction, writers_conclusion, writers_summary
from .runner import RunResult, run_or_load, run_suite
from .specs import SpecError, parse_codec, parse_dims

__version__ = "0.1.0"

__all__ = [
    "DATASETS",
    "SCHEMA_VERSION",
    "Dataset",
    "RunResult",
    "SpecError",
    "ceiling_table",
    "checksum_array",
    "checksum_blocks",
    "evict_page_cache",
    "failures",
    "load_results",
    "load_run",
    "measure",
    "parse_codec",
    "parse_dims",
    "run_or_load",
    "run_suite",
    "skips",
    "with_ceiling_fraction",
    "writers_conclusion",
    "writers_summary",
]
