"""The statistics the chapters state: median, its order-statistic interval with its true coverage, n, and
when two sets of iterations are separable; calibrated by seeded simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks_lib.stats import format_ci, median_ci, rankable, summarize

#: a skewed sample: one slow outlier pulls the mean far from the median
SKEWED = [1.0, 1.1, 1.2, 1.0, 1.05, 9.0]


def test_median_ci_states_the_median_not_the_mean():
    med, lo, hi, n = median_ci(SKEWED)
    assert n == 6
    assert med == pytest.approx(np.median(SKEWED))
    assert med != pytest.approx(np.mean(SKEWED))
    assert lo <= med <= hi


def test_median_ci_is_reproducible_and_widens_with_confidence():
    rng = np.random.default_rng(3)
    values = rng.lognormal(0.0, 0.5, 40)
    assert median_ci(values) == median_ci(values)
    med, lo, hi, n = median_ci(values)
    assert lo < med < hi and n == 40
    wider = median_ci(values, confidence=0.99)
    assert wider[1] <= lo and wider[2] >= hi


def test_median_ci_edge_cases():
    assert median_ci([]) [3] == 0 and np.isnan(median_ci([])[0])
    med, lo, hi, n = median_ci([2.5])
    assert (med, n) == (2.5, 1) and np.isnan(lo) and np.isnan(hi)
    med, lo, hi, n = median_ci(pd.Series([1.0, None, np.nan, 3.0], dtype="Float64"))
    assert n == 2 and med == 2.0
    with pytest.raises(ValueError, match="confidence"):
        median_ci([1, 2], confidence=1.5)


def test_median_ci_bounds_memory_for_long_series():
    values = np.arange(50_000, dtype=float)
    med, lo, hi, n = median_ci(values)
    assert n == 50_000 and lo <= med <= hi


def test_summarize_per_group():
    df = pd.DataFrame({"backend": ["a"] * 6 + ["b"] * 3, "elapsed_s": [*SKEWED, 5.0, 5.1, 5.2]})
    out = summarize(df, "backend", "elapsed_s")
    assert list(out.columns) == ["backend", "median", "ci_lo", "ci_hi", "n"]
    a = out.set_index("backend").loc["a"]
    assert a["median"] == pytest.approx(np.median(SKEWED)) and a["n"] == 6
    assert (out["ci_lo"] <= out["median"]).all() and (out["median"] <= out["ci_hi"]).all()
    assert summarize(df.iloc[0:0], "backend", "elapsed_s").empty


def test_rankable_only_without_overlap():
    fast = median_ci([1.0, 1.01, 0.99, 1.02, 0.98])
    slow = median_ci([2.0, 2.01, 1.99, 2.02, 1.98])
    noisy = median_ci([0.5, 3.0, 1.5, 2.5, 1.0])
    assert rankable(fast, slow) and rankable(slow, fast)
    assert not rankable(fast, noisy)
    assert not rankable(fast, median_ci([1.5]))  # one iteration: no interval, no ranking
    assert rankable({"ci_lo": 1, "ci_hi": 2}, pd.Series({"ci_lo": 3.0, "ci_hi": 4.0}))


def test_format_ci():
    assert format_ci(1.234, 1.1, 1.4, 6) == "1.23 [1.1, 1.4] (n=6)"
    assert format_ci(1.234, 1.1, 1.4, 5) == "1.23 [1.1, 1.4] (n=5, 94% interval)"
    assert format_ci(1.234, 1.1, 1.4, 2) == "1.23 [1.1, 1.4] (n=2, 50% interval)"
    assert format_ci(1.0, np.nan, np.nan, 1) == "1 (n=1)"
    assert format_ci(np.nan, np.nan, np.nan, 0) == "-"
