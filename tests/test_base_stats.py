"""The statistics the chapters state: median, its order-statistic interval with its true coverage, n, and
when two sets of iterations are separable; calibrated by seeded simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks_lib.base.stats import MIN_RANK_N, coverage, format_ci, median_ci, ratio_ci, summarize, two_sample
from benchmarks_lib.rules.words import two_sample_text

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


def test_format_ci():
    assert format_ci(1.234, 1.1, 1.4, 6) == "1.23 [1.1, 1.4] (n=6)"
    assert format_ci(1.234, 1.1, 1.4, 5) == "1.23 [1.1, 1.4] (n=5, 94% interval)"
    assert format_ci(1.234, 1.1, 1.4, 2) == "1.23 [1.1, 1.4] (n=2, 50% interval)"
    assert format_ci(1.0, np.nan, np.nan, 1) == "1 (n=1)"
    assert format_ci(860, 429, 1021.7, 8) == "860 [429, 1020] (n=8)"  # never in exponent notation
    assert format_ci(1.234e-5, 1e-5, 2e-5, 8) == "0.0000123 [0.00001, 0.00002] (n=8)"
    assert format_ci(np.nan, np.nan, np.nan, 0) == "-"


# --- the order-statistic interval and two_sample, and their calibration by seeded simulation ---------------

#: the iterations the profiles use (quick, standard, seed), and one beyond
PROFILE_NS = (2, 3, 4, 5, 6, 7, 8, 10)
SIMULATIONS = 4000


def test_coverage_is_the_binomial_order_statistic_coverage():
    assert coverage(2) == 0.5 and coverage(5) == 0.9375
    assert all(coverage(n) >= 0.95 for n in range(6, 60))
    assert np.isnan(coverage(1))
    med, lo, hi, n = median_ci([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (med, lo, hi, n) == (3.0, 1.0, 5.0, 5)  # n=5: the range, 94%


@pytest.mark.parametrize("n", PROFILE_NS)
def test_median_interval_covers_at_its_stated_rate(n):
    rng = np.random.default_rng(100 + n)
    samples = rng.lognormal(0.0, 0.1, (SIMULATIONS, n))  # true median 1
    covered = np.mean([lo <= 1.0 <= hi for _, lo, hi, _ in map(median_ci, samples)])
    assert abs(covered - coverage(n)) <= 0.03


@pytest.mark.parametrize("n", PROFILE_NS)
def test_identical_contenders_are_rarely_separable(n):
    rng = np.random.default_rng(200 + n)
    pairs = rng.lognormal(0.0, 0.1, (SIMULATIONS, 2, n))
    results = [two_sample(a, b) for a, b in pairs]
    called = np.mean([r.separable is True for r in results])
    assert called <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / SIMULATIONS)
    if n < MIN_RANK_N:
        assert all(r.separable is None and two_sample_text(r) == f"no interval yet (n={n})" for r in results)


def test_a_real_difference_is_found():
    rng = np.random.default_rng(7)
    pairs = rng.lognormal(0.0, 0.1, (1000, 2, 6)) * np.array([1.0, 1.5])[None, :, None]
    results = [two_sample(a, b) for a, b in pairs]
    assert np.mean([r.separable is True and r.ratio > 1 for r in results]) >= 0.9
    assert np.mean([r.lo <= 1.5 <= r.hi for r in results]) >= 0.9


def test_two_sample_fields_and_verdicts():
    fast, slow = [1.0, 1.01, 0.99, 1.02, 0.98], [2.0, 2.01, 1.99, 2.02, 1.98]
    t = two_sample(fast, slow)
    assert t.ratio == pytest.approx(2.0) and t.lo <= 2.0 <= t.hi and (t.n_a, t.n_b) == (5, 5)
    assert t.separable is True and two_sample_text(t).startswith("separated (") and not t.b_better
    assert two_sample(slow, fast).b_better and two_sample(fast, slow, higher=True).b_better
    noisy = two_sample(fast, [0.5, 3.0, 1.5, 2.5, 1.0])
    assert noisy.separable is False and two_sample_text(noisy) == "not told apart (97% interval, n=5, includes 1)"
    few = two_sample(fast, [2.0, 2.1])
    assert few.separable is None and two_sample_text(few) == "no interval yet (n=2)"
    assert two_sample([], fast).separable is None and np.isnan(two_sample([], fast).ratio)
    assert np.isnan(two_sample(fast[:1], fast[:2]).lo)  # 95% cannot be reached: no interval
    with pytest.raises(ValueError, match="confidence"):
        two_sample(fast, slow, confidence=1.0)


def test_ratio_ci_is_two_sample():
    a, b = [1.0, 1.1, 1.2, 0.9, 1.05, 1.0], [2.0, 2.2, 2.1, 1.9, 2.05, 2.0]
    t = two_sample(a, b)
    assert ratio_ci(a, b) == (t.ratio, t.lo, t.hi, t.n_a, t.n_b)


def test_large_samples_use_the_normal_approximation_consistently():
    rng = np.random.default_rng(11)
    a, b = rng.lognormal(0.0, 0.1, 60), rng.lognormal(0.0, 0.1, 60)
    same, doubled = two_sample(a, b), two_sample(a, 2 * b)
    assert same.lo <= 1.0 <= same.hi and 0.94 <= same.coverage <= 0.96
    assert doubled.separable and doubled.lo <= 2 * np.median(b) / np.median(a) <= doubled.hi
    assert median_ci(np.arange(5000.0))[1:3] == pytest.approx((2429.0, 2570.0), abs=2)
