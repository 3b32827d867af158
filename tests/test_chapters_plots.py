"""Figures and the Amdahl table from synthetic records: every figure draws the statistic its label names."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks_lib.chapters import threads as pt
from benchmarks_lib.chapters import writers
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame

MB = 10**6
SKEWED = [1.0, 1.1, 1.2, 1.0, 1.05, 9.0]


def _frame(rows: list[dict]) -> pd.DataFrame:
    return to_frame([{"schema_version": SCHEMA_VERSION, "run_id": "r", "status": "ok", **r} for r in rows])


def _writes(backend: str, times, nbytes: int = 100 * MB, codec: str = "lz4") -> list[dict]:
    return [{"suite": "writers", "backend": backend, "test": "write", "operation": "total", "iteration": i,
             "codec": codec, "nbytes": nbytes, "elapsed_s": t, "fsync_included": True} for i, t in enumerate(times)]


def _threads(times: dict[int, list[float]], cores: int = 8) -> pd.DataFrame:
    rows = [{"suite": "threads", "backend": "zarrs", "operation": "write", "iteration": i, "threads": p,
             "codec": "zstd:3", "nbytes": 100 * MB, "elapsed_s": t, "cores": cores}
            for p, ts in times.items() for i, t in enumerate(ts)]
    return _frame(rows)


def test_every_seaborn_call_names_its_estimator():
    root = Path(writers.__file__).parent.parent
    call = re.compile(r"sns\.(barplot|pointplot|lineplot|catplot|relplot)\(")
    modules = sorted(root.rglob("*.py"))
    assert {"writers", "compression", "threads.py", "cache"} <= {m.relative_to(root).parts[0] for m in modules}
    for module in modules:
        for line in module.read_text().splitlines():
            if call.search(line):
                assert "estimator=" in line, f"{module.name}: {line.strip()}"


def test_median_bars_draw_the_median_not_the_mean():
    df = _frame(_writes("zarrs", SKEWED) + _writes("zarrs", [0.5], nbytes=400 * MB) + _writes("wkw", [2.0, 2.1]))
    fig = writers.median_bars(df)
    ax = fig.axes[0]
    widths = {t.get_text(): p.get_width() for t, p in zip(ax.get_yticklabels(), ax.patches, strict=False)}
    gbps = [0.1 / t for t in SKEWED]
    assert widths["zarrs (lz4, no shuffle)"] == pytest.approx(np.median(gbps))  # the 100 MB both finished
    assert widths["zarrs (lz4, no shuffle)"] != pytest.approx(np.mean(gbps))
    assert "median" in ax.get_xlabel() and "95%" in ax.get_xlabel() and "100 MB" in ax.get_title()
    plt.close(fig)


def test_write_lines_draw_the_median():
    df = _frame(_writes("zarrs", SKEWED) + _writes("zarrs", [1.0, 1.1, 0.9], nbytes=400 * MB)
                + _writes("zarrs", [2.0, 2.1, 1.9], nbytes=800 * MB))
    fig = writers.write_gbps_vs_size(df)
    line = next(ln for ln in fig.axes[0].get_lines() if len(ln.get_ydata()) == 3 and ln.get_marker() == "o")
    assert line.get_ydata()[0] == pytest.approx(np.median([0.1 / t for t in SKEWED]))
    assert not fig.axes[0].get_legend().get_bbox_to_anchor().overlaps(fig.axes[0].bbox)  # the legend is off the data
    one = writers.write_gbps_vs_size(_frame(_writes("zarrs", SKEWED)))  # one size: no line to draw, a small table
    assert "only one size measured (100 MB)" in one._suptitle.get_text() and not one.axes[0].get_lines()
    assert "median" in fig.axes[0].get_ylabel()
    plt.close(fig)


def test_amdahl_needs_three_thread_counts():
    two = _threads({1: [1.0, 1.02, 0.98], 2: [0.6, 0.61, 0.59]})
    table = pt.amdahl_table(two)
    assert table["serial fraction"].isna().all()
    assert "2 distinct thread count(s) up to the 8 cores" in table["reason"].iloc[0]
    assert "No Amdahl fit for zarrs write" in pt.conclusion(two)
    fig = pt.speedup(two)  # two thread counts: a small table of the speed-ups, no line through two points
    assert not fig.axes[0].get_lines() and "2 thread counts measured (1 thread, 2 threads)" in fig._suptitle.get_text()
    three = pt.speedup(_threads({1: [1.0, 1.02, 0.98], 2: [0.6, 0.61, 0.59], 8: [0.5, 0.52, 0.49]}, cores=2))
    assert three.axes[0].get_lines() and "no Amdahl fit" in three.axes[0].get_title()  # the curve is still drawn
    plt.close(three)

    times = {p: [0.2 + 0.8 / p] * 3 for p in (1, 2, 4, 16)}
    table = pt.amdahl_table(_threads(times))
    assert table["serial fraction"].iloc[0] == pytest.approx(0.2, abs=1e-6)
    assert table["threads fitted"].iloc[0] == "1,2,4" and table["reason"].iloc[0] == ""
    # 16 threads lie above the 8 cores and are left out; with 2 cores only 1 and 2 remain: no fit
    assert pt.amdahl_table(_threads(times, cores=2))["serial fraction"].isna().all()


def test_thread_figures_draw_the_median_with_its_interval():
    df = _threads({1: SKEWED, 2: [0.6, 0.61, 0.59], 4: [0.4, 0.41, 0.39]})
    summary = pt.scaling_table(df)
    one = summary[summary["threads"] == 1].iloc[0]
    assert one["median_s"] == pytest.approx(np.median(SKEWED)) and one["n"] == 6
    assert one["ci_lo_s"] <= one["median_s"] <= one["ci_hi_s"]
    fig = pt.time_vs_threads(df)
    line = next(ln for ln in fig.axes[0].get_lines() if len(ln.get_ydata()) == 3)
    assert line.get_ydata()[0] == pytest.approx(np.median(SKEWED))
    assert "median [75-95% intervals], n=3-6" in fig.axes[0].get_ylabel()  # as the tables state them
    plt.close(fig)


def test_thread_conclusion_ranks_stores_only_on_the_same_codec():
    def run(codec_b: str) -> str:
        rows = [{"suite": "threads", "backend": b, "operation": "write", "iteration": i, "threads": 1, "codec": c,
                 "nbytes": 100 * MB, "elapsed_s": t, "cores": 8}
                for b, c, ts in (("a", "zstd:3", [1.0, 1.01, 0.99]), ("b", codec_b, [2.0, 2.01, 1.99]))
                for i, t in enumerate(ts)]
        return pt.conclusion(_frame(rows))

    assert "not ranked" in run("lz4") and "slower than" not in run("lz4")
    ranked = run("zstd:3")  # n=3: below the first look, stated against the leader without a verdict
    assert "open after 3 rounds" in ranked and "b at 1 threads: 2.00x slower (no interval yet) than a at 1 threads" \
        in ranked and "fastest, by" not in ranked


def test_thread_summary_names_the_thread_counts_above_the_ceiling():
    df = _threads({1: [1.0, 1.01, 0.99], 2: [0.6, 0.61, 0.59]})  # 0.1 and 0.17 GB/s
    ceiling = _frame([{"suite": "threads", "backend": "ceiling", "operation": "write_nofsync", "iteration": i,
                       "nbytes": 100 * MB, "elapsed_s": t} for i, t in enumerate([0.8, 0.8, 0.8])])  # 0.125 GB/s
    table = pt.summary(pd.concat([ceiling, df], ignore_index=True))
    assert table.set_index("side").loc["write", "above ceiling (threads)"] == "2"
    assert pt.summary(df)["above ceiling (threads)"].eq("-").all()  # no ceiling measured: nothing to flag
