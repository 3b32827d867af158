"""A case in words (``words.case_text``), the one wording every page and the terminal name a case with: never a
column name beside its raw value, never Python's ``True``/``False``, whatever form the values were recorded in."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from benchmarks_lib.base.markup import md
from benchmarks_lib.chapters.common import group_header
from benchmarks_lib.rules.words import case_text
from benchmarks_lib.suites import get_suite, suite_names

#: a raw dump: a column name (with an underscore) followed by a value, or a Python literal
DUMP = re.compile(r"\b[a-z]+_[a-z_]+\b|\b(True|False|None|nan)\b")


def test_a_remote_read_reads_as_the_issue_asks():
    key = {"location": "http", "latency_ms": 10.0, "bandwidth_bytes_s": 5e7, "layout": "sharded",
           "client_cache": False, "cutout": "48x192x192"}
    assert case_text(key) == "HTTP, 10 ms, 50 MB/s, sharded, no client cache, 48x192x192 cutouts"
    # the same case as text (the front page's groups are text): the same words
    assert case_text({k: str(v) for k, v in key.items()}) == case_text(key)
    assert case_text({**key, "client_cache": np.bool_(True)}).endswith("sharded, client cache, 48x192x192 cutouts")


@pytest.mark.parametrize(("key", "words"), [
    ({"test": "write", "dataset": "em_like", "codec": "none", "nbytes": 265420800, "multiplier": 1.0,
      "fsync_included": True}, "dataset em_like, uncompressed, 265 MB, fsync included"),
    ({"layout": "sharded 128/32", "inner_chunk": 32.0, "shard_size": 128.0, "cutout_kind": "aligned"},
     "sharded 128/32, aligned cutouts"),
    ({"threads": 1, "level": 3.0, "codec": "zstd:3"}, "1 thread, level 3, zstd:3"),
    ({"cutout": np.float64(32.0), "cutout_kind": "unaligned"}, "cutouts of side 32, unaligned cutouts"),
    ({"cutout": np.array([8, 16, 16])}, "8x16x16 cutouts"),
    ({"workers": 4.0, "alignment": "unaligned", "store": "s3", "region_step": 8.0},
     "4 workers, unaligned regions, through S3, 8 region steps"),
    ({"cache_bytes": 0.0, "async_prefetch": 1.0, "concurrency": 1.0, "server": "builtin"},
     "no TTreeCache, async prefetch, 1 request in flight, built-in server"),
    ({"zarr_dims": "z:128:32:64,y:512:128:256,x:512:128:256", "bandwidth": "0"},
     "array 128x512x512, chunks 32x128x128, shards 64x256x256, no bandwidth cap"),
    ({"operation": "read_region_cold", "read_by": "h5py", "cache_state": "cold"}, "cold cutout, read by h5py"),
    ({"some_new_flag": "False", "some_count": 3, "missing": np.nan, "gone": pd.NA, "empty": "-"},
     "some new flag: no, some count 3"),
])
def test_each_key_in_words(key, words):
    assert case_text(key, escape=str) == words


def test_every_declared_case_key_reads_as_words_and_strings_are_escaped():
    """Every suite's declared case keys with a value of each recorded kind: no dump, no Python literal; a record
    string passes through the escape given (Markdown by default)."""
    samples = {"float": 2.0, "bool": False, "text": "a_b"}
    keys = sorted({k for s in suite_names() for k in get_suite(s).case_keys} - {"test", "suite"})
    for kind, value in samples.items():
        for k in keys:
            text = case_text({k: value}, escape=str)
            assert text and not DUMP.search(text.replace("a_b", "")), (k, kind, text)
    assert case_text({"dataset": "<b>x</b>"}) == f"dataset {md('<b>x</b>')}"
    assert case_text({"client": "*x*"}, escape=lambda s: s.upper()) == "*X*"


def test_a_chapters_group_header_names_its_case_in_the_same_words():
    header = group_header("write", {"codec": "lz4", "nbytes": 1e8, "fsync_included": False, "dataset": "random"})
    assert header == "- **write**, codec `lz4` (no shuffle), 100 MB, no fsync, dataset random"


def test_numbers_in_words_are_never_in_exponent_notation():
    from benchmarks_lib.rules.words import case_text, number

    assert [number(v) for v in (1.234e-5, 0.0123, 2.31, 1337.4, 0)] == ["0.0000123", "0.0123", "2.31", "1337", "0"]
    assert case_text({"step": 1_000_000, "latency_ms": 0.00005}, str) == "steps of 1000000 entries, 0.00005 ms"
