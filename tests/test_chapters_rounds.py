"""The compression and threads chapters rank rows measured in rounds round by round (``base.paired``): a drift of
the host over the rounds, which the two-sample rule counts as spread, cancels in each round's ratio."""

from __future__ import annotations

import re

import pandas as pd

from benchmarks_lib.chapters import compression, threads
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame

#: the host 1-3x slower from round to round, and the second contender's own noise within 1%
DRIFT = [1.0, 3.0, 1.5, 2.5, 1.2, 2.8, 1.8, 2.2]
NOISE = [1.0, 1.01, 0.995, 1.005, 1.01, 0.99, 1.0, 1.005]


def _rows(suite: str, contenders: list[tuple[dict, float]], **columns) -> pd.DataFrame:
    """Each contender (its columns, its time over the first's) measured in every round of ``DRIFT``."""
    return to_frame([{"schema_version": SCHEMA_VERSION, "run_id": "r", "suite": suite, "status": "ok", "verified": True,
                      "iteration": r, "round": r, "nbytes": 10**8, "elapsed_s": drift * slower * (noise if i else 1),
                      **key, **columns}
                     for r, (drift, noise) in enumerate(zip(DRIFT, NOISE, strict=True))
                     for i, (key, slower) in enumerate(contenders)])


def test_the_threads_knee_is_compared_round_by_round():
    df = _rows("threads", [({"threads": 2, "case_id": "b"}, 1.0), ({"threads": 1, "case_id": "a"}, 1.03)],
               backend="zarrs", operation="write", codec="blosc-zstd:3:shuffle", dataset="microscopy", cores=2)
    paired = threads.answer(df)
    assert re.search(r"equivalent for practical purposes \(within 5%\) from 2 threads: 1\.03x slower "
                     r"\[1\.0\dx, 1\.0\dx\]", paired)
    # the same times not known to be paired: the two-sample rule sees a 3x spread
    assert "not separable from 2 threads" in threads.answer(df.drop(columns=["round"]))


def test_the_compression_pick_is_compared_round_by_round():
    df = pd.concat([_rows("compression", [({"codec": "lz4", "compression_ratio": 2.0}, 1.0),
                                          ({"codec": "zstd:3", "compression_ratio": 3.0}, 1.3)],
                          backend="tensorstore", operation=op, dataset="labels", threads=2, case_id="c")
                    for op in ("write", "read")])
    paired = compression.answer(df)
    assert re.search(r"separated from tensorstore lz4: 1\.30x slower \[1\.[23]\dx, 1\.3\dx\]", paired)
    # the same times not known to be paired: the two-sample rule sees a 3x spread
    assert "not separable from tensorstore lz4" in compression.answer(df.drop(columns=["round"]))
