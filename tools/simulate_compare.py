"""The table of book/methodology.md's "Comparing runs": ``iobench compare``'s verdicts on simulated pairs of runs
(``simulated_runs`` of ``tests/test_rules_changes.py``: 30 cases, 48 in "short cases", measured in 12 rounds, 5% noise
per time, one case 1.5x slower in B), by the compare of this checkout and, with ``--before REV``, by the compare of
that git revision, on the same simulated runs. Run from the repository root (about a minute at the default size)::

    PYTHONPATH=$PWD python tools/simulate_compare.py --pairs 30 --seed 0 --before 2aa1822
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks_lib.chapters.compare import compare_runs

ROOT = Path(__file__).resolve().parent.parent
CASES_PY = "benchmarks_lib/chapters/compare/cases.py"
Compare = Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame]


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def the_tests():
    """``tests/test_rules_changes.py``: the simulated runs, their scenarios and the changed case."""
    return _module("changes_tests", ROOT / "tests" / "test_rules_changes.py")


def compare_at(rev: str) -> Compare:
    """``compare_runs`` of ``chapters/compare/cases.py`` at git revision ``rev`` (the rest of the package is this
    checkout's)."""
    source = subprocess.run(["git", "show", f"{rev}:{CASES_PY}"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout
    path = Path(tempfile.mkdtemp()) / "compare_before.py"
    path.write_text(source)
    return _module("compare_before", path).compare_runs


def table_rates(tables: list[pd.DataFrame], changed: str) -> dict[str, float]:
    """Over compare tables: unchanged cases whose interval covers 1, flagged, moved with the run, not separable;
    the changed case flagged "slower"."""
    rows = pd.concat(tables, ignore_index=True)
    same, moved = rows[rows["case"] != changed], rows[rows["case"] == changed]
    return {"covers 1": float(((same["95% CI lo"] <= 1) & (same["95% CI hi"] >= 1)).mean()),
            "flagged": float(same["verdict"].isin(["slower", "faster"]).mean()),
            "moved with the run": float((same["verdict"] == "moved with the run").mean()),
            "not separable": float((same["verdict"] == "not separable").mean()),
            "1.5x found": float((moved["verdict"] == "slower").mean())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=30, help="pairs of runs per scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", help="a git revision whose compare is measured on the same runs")
    args = parser.parse_args(argv)
    tests = the_tests()
    compares: dict[str, Compare] = {"after": compare_runs}
    if args.before:
        compares = {"before": compare_at(args.before), **compares}
    started = time.perf_counter()
    print("| scenario | compare | covers 1 | flagged | moved with the run | not separable | 1.5x found |")
    print("|---|---|---|---|---|---|---|")
    for scenario in tests.SCENARIOS:
        rng = np.random.default_rng(args.seed)
        runs = [tests.simulated_runs(rng, scenario) for _ in range(args.pairs)]
        for name, compare in compares.items():
            got = table_rates([compare(a, b) for a, b in runs], tests.CHANGED)
            print(f"| {scenario} | {name} | " + " | ".join(f"{v:.1%}" for v in got.values()) + " |")
    print(f"\n{args.pairs} pairs of runs per scenario, seed {args.seed}, {time.perf_counter() - started:.0f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
