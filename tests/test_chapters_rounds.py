"""The compression and threads chapters rank rows measured in rounds round by round (``rules.decision``): a drift
of the host over the rounds cancels in each round's ratio; the same times measured out of step do not."""

from __future__ import annotations

import re

import pandas as pd

from benchmarks_lib.chapters import compression, threads
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame

#: the host 1-3x slower from round to round, and the second contender's own noise within 1%
DRIFT = [1.0, 3.0, 1.5, 2.5, 1.2, 2.8, 1.8, 2.2]
NOISE = [1.0, 1.01, 0.995, 1.005, 1.01, 0.99, 1.0, 1.005]


def _rows(suite: str, contenders: list[tuple[dict, float]], in_step: bool = True, **columns) -> pd.DataFrame:
    """Each contender (its columns, its time over the first's) measured in every round of ``DRIFT``; with
    ``in_step`` False the others measured while the host drifted otherwise (``DRIFT`` turned by 3) and no
    ``round`` recorded: each iteration stands for a round, and the drift no longer cancels."""
    def drift(r: int, i: int) -> float:
        return DRIFT[r if in_step or not i else (r + 3) % len(DRIFT)]

    return to_frame([{"schema_version": SCHEMA_VERSION, "run_id": "r", "suite": suite, "status": "ok", "verified": True,
                      "iteration": r, **({"round": r} if in_step else {}), "nbytes": 10**8,
                      "elapsed_s": drift(r, i) * slower * (noise if i else 1), **key, **columns}
                     for r, noise in enumerate(NOISE)
                     for i, (key, slower) in enumerate(contenders)])


THREADS = ([({"threads": 2, "case_id": "b"}, 1.0), ({"threads": 1, "case_id": "a"}, 1.03)],
           {"backend": "zarrs", "operation": "write", "codec": "blosc-zstd:3:shuffle", "dataset": "microscopy",
            "cores": 2})


def test_the_threads_knee_is_compared_round_by_round():
    contenders, columns = THREADS
    paired = threads.answer(_rows("threads", contenders, **columns))
    # within the margin of 2 threads, the 3x drift cancelled: 1 thread is the pick
    assert re.search(r"\*\*1 thread\*\* \(1 thread 1\.03x slower than 2 threads \[1\.0\dx, 1\.0\dx\], within 5%",
                     paired), paired
    # the same times measured out of step: the drift is spread, the question still open at its first look
    apart = threads.answer(_rows("threads", contenders, in_step=False, **columns))
    assert "open after 8 rounds" in apart and "not told apart" in apart and "], within 5%" not in apart, apart


def _compression(in_step: bool = True) -> pd.DataFrame:
    return pd.concat([_rows("compression", [({"codec": "lz4", "compression_ratio": 2.0}, 1.0),
                                            ({"codec": "zstd:3", "compression_ratio": 3.0}, 1.3)], in_step,
                            backend="tensorstore", operation=op, dataset="labels", threads=2, case_id="c")
                      for op in ("write", "read")])


def test_the_compression_pick_is_compared_round_by_round():
    paired = compression.answer(_compression())
    assert re.search(r"tensorstore zstd:3 1\.30x slower than tensorstore lz4 \[1\.[23]\dx, 1\.3\dx\], separated",
                     paired), paired
    # the same times measured out of step: the 3x drift is spread, the pick's interval includes 1
    apart = compression.answer(_compression(in_step=False))
    assert re.search(r"tensorstore zstd:3 \d\.\d\dx slower than tensorstore lz4 \[0\.\d\dx, [1-9]\.\d\dx\], "
                     r"not told apart", apart), apart
