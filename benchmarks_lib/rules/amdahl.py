"""Amdahl's law: the serial fraction fitted to time vs threads, and the speed-up it predicts."""

from __future__ import annotations

import numpy as np

MIN_FIT_COUNTS = 3


def fit_amdahl(threads, times) -> float:
    """Serial fraction s of Amdahl's law fitted to (threads, time) pairs, in [0, 1].

    Least squares of ``t = a + b / p`` with relative (1/t) weights, a, b >= 0; s = a / (a + b).
    Needs at least three distinct thread counts (two would be fitted exactly) and positive times.
    """
    p = np.asarray(threads, dtype=float).ravel()
    t = np.asarray(times, dtype=float).ravel()
    if p.shape != t.shape:
        raise ValueError(f"threads ({p.size}) and times ({t.size}) differ in length")
    keep = np.isfinite(p) & np.isfinite(t)
    p, t = p[keep], t[keep]
    if np.unique(p).size < MIN_FIT_COUNTS:
        raise ValueError(f"fit_amdahl needs times at {MIN_FIT_COUNTS} or more distinct thread counts "
                         f"(got {np.unique(p).size}): two parameters pass exactly through two points")
    if (p <= 0).any() or (t <= 0).any():
        raise ValueError("thread counts and times must be positive")
    w = 1.0 / t
    x = np.column_stack([np.ones_like(p), 1.0 / p]) * w[:, None]
    (a, b), *_ = np.linalg.lstsq(x, t * w, rcond=None)
    if a < 0:  # faster than perfect scaling: no serial part
        a, b = 0.0, float(np.sum(w**2 * t / p) / np.sum(w**2 / p**2))
    if b <= 0:  # no gain from threads at all
        return 1.0
    return float(np.clip(a / (a + b), 0.0, 1.0))


def amdahl_speedup(threads, serial_fraction: float, base_threads: float = 1.0) -> np.ndarray:
    """Speed-up over ``base_threads`` that Amdahl's law predicts for a serial fraction."""
    p = np.asarray(threads, dtype=float)
    s = serial_fraction
    return (s + (1 - s) / base_threads) / (s + (1 - s) / p)


__all__ = ["MIN_FIT_COUNTS", "amdahl_speedup", "fit_amdahl"]
