"""The full-size table of the one rule (``rules.decision.decide``): simulated questions of K = 2, 4 and 5 contenders
at 2, 5 and 10% CV under each drift of ``tests/test_rules_decision.py`` (``simulated_times``: each round in a fresh
random order, the host's factor on each measurement at its time slot), with identical contenders, one contender
1.03x faster and one 1.15x faster. Per cell: the share naming a leader, naming the wrong one (a leader that is not
the truly fastest), calling a winner, calling the contenders equivalent, finding the truly fastest, and the mean
rounds at the stop; then a line of the checks, and the bound on the bursts-on-one cells. Run from the repository
root (several minutes on two cores at the default size)::

    PYTHONPATH=$PWD python tools/decide_tables.py --questions 2000 --seed 0 > decide_tables.md
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import math
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTENDERS = (2, 4, 5)
CVS = (0.02, 0.05, 0.10)
#: the truths: one contender this many times faster (1: identical contenders)
TRUTHS = (1.0, 1.03, 1.15)
#: the checks: false leaders and winners inside the margin at most ALPHA; 1.15x at 10% CV found at least
FALSE_AT_MOST = 0.05
FOUND_AT_LEAST = {2: 0.95, 4: 0.80}


def the_tests():
    """``tests/test_rules_decision.py``: the simulation and its rates."""
    name = "decision_tests"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "test_rules_decision.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def cell(job: tuple[int, float, str, float, int, int]) -> tuple[tuple[int, float, str, float], dict[str, float]]:
    """One cell's rates, seeded by the run's seed and the cell's place in the grid."""
    contenders, cv, drift, speedup, questions, seed = job
    tests = the_tests()
    where = [seed, contenders, CVS.index(cv), tests.DRIFTS.index(drift), TRUTHS.index(speedup)]
    return (contenders, cv, drift, speedup), tests.simulated_rates(contenders, cv, drift, speedup, questions, where)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def table(results: dict, speedup: float, drifts: tuple[str, ...]) -> str:
    truth = "identical contenders" if speedup == 1 else f"one contender {speedup:.2f}x faster"
    head = ["K", "CV", "drift", "% leader named"]
    if speedup != 1:
        head += ["% wrong direction"]
    head += ["% WINNER", "% EQUIVALENT"]
    if speedup != 1:
        head += ["% found"]
    head += ["mean rounds"]
    lines = [f"### {truth}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for contenders, cv, drift in itertools.product(CONTENDERS, CVS, drifts):
        r = results[(contenders, cv, drift, speedup)]
        row = [str(contenders), f"{cv:.0%}", drift, _pct(r["named"])]
        if speedup != 1:
            row += [_pct(r["wrong"])]
        row += [_pct(r["winner"]), _pct(r["equivalent"])]
        if speedup != 1:
            row += [_pct(r["found"])]
        row += [f"{r['stops']:.1f}"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def checks(results: dict, questions: int) -> list[str]:
    def worst(key: str, speedup: float) -> tuple[float, tuple]:
        return max((r[key], k) for k, r in results.items() if k[3] == speedup)

    def where(k: tuple) -> str:
        return f"K={k[0]}, CV {k[1]:.0%}, {k[2]}"

    false_leader, at = worst("named", 1.0)
    winner, at_w = worst("winner", 1.03)
    wrong = {speedup: sum(round(r["wrong"] * questions) for k, r in results.items() if k[3] == speedup)
             for speedup in TRUTHS[1:]}
    cells = sum(1 for k in results if k[3] == TRUTHS[-1])
    wrong_close, at_c = worst("wrong", 1.03)
    short = [(k, r["found"]) for k, r in results.items()
             if k[3] == 1.15 and k[1] == 0.10 and k[0] in FOUND_AT_LEAST and r["found"] < FOUND_AT_LEAST[k[0]]]
    se = 3 * math.sqrt(FALSE_AT_MOST * (1 - FALSE_AT_MOST) / questions)

    def at_most(x: float, bound: float) -> str:
        return "PASS" if x <= bound else f"within 3 SE ({_pct(se)} points)" if x <= bound + se else "FAIL"

    def found_text(k: tuple, found: float) -> str:
        tol = 3 * math.sqrt(found * (1 - found) / questions)
        close = " (within 3 SE)" if found + tol >= FOUND_AT_LEAST[k[0]] else ""
        return f"K={k[0]} {k[2]} {_pct(found)}%{close}"

    lines = [
        f"- max false leader (identical): {_pct(false_leader)}% at {where(at)}: "
        f"{at_most(false_leader, FALSE_AT_MOST)} (<= {FALSE_AT_MOST:.0%})",
        f"- wrong direction at 1.15x: {wrong[1.15]} of {cells * questions} questions: "
        f"{'PASS' if wrong[1.15] == 0 else 'FAIL'} (none); at 1.03x: {wrong[1.03]} of {cells * questions}, "
        f"at most {_pct(wrong_close)}% at {where(at_c)}: {at_most(wrong_close, FALSE_AT_MOST)} "
        f"(<= {FALSE_AT_MOST:.0%})",
        f"- max WINNER at 1.03x: {_pct(winner)}% at {where(at_w)}: {at_most(winner, FALSE_AT_MOST)} "
        f"(<= {FALSE_AT_MOST:.0%})",
        "- 1.15x at 10% CV found (>= " + ", ".join(f"{v:.0%} for K={k}" for k, v in FOUND_AT_LEAST.items())
        + ", per drift): " + ("PASS" if not short else "FAIL: " + "; ".join(found_text(k, f) for k, f in short)),
    ]
    return lines


def known_bursts(questions: int, seed: int) -> str:
    """The bound on the bursts-on-one cells: a true 1.15x at 10% CV found by the same rule had it known every burst
    and dropped the measurement it hit (NaN: a gap, as the runner records one) - the most a rule that drops
    outliers could find within the cap."""
    found = {k: the_tests().simulated_rates(k, 0.10, "bursts on one", 1.15, questions, [seed, k, 1], known=True)
             for k in FOUND_AT_LEAST}
    return ("- bursts on one, every hit measurement known and dropped (a bound for any rule that drops outliers): "
            "found " + ", ".join(f"K={k} {_pct(r['found'])}%" for k, r in found.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000, help="questions per cell (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (each cell's is derived from it)")
    parser.add_argument("--processes", type=int, default=2, help="worker processes (default 2)")
    args = parser.parse_args(argv)
    drifts = the_tests().DRIFTS
    jobs = [(k, cv, drift, speedup, args.questions, args.seed)
            for speedup, k, cv, drift in itertools.product(TRUTHS, CONTENDERS, CVS, drifts)]
    start = time.monotonic()
    with multiprocessing.Pool(args.processes) as pool:
        results = dict(pool.imap_unordered(cell, jobs))
    elapsed = time.monotonic() - start
    print(f"## decide on simulated questions: {args.questions} per cell, seed {args.seed}\n")
    print("Each round in a fresh random order; the drift multiplies each measurement by the host's factor at its "
          "time slot (step 1.3x half-way; linear to 1.5x; bursts on all: 2x on a whole round, 20% of rounds; "
          "bursts on one: 2x on one random contender's measurement, 20% of rounds). Wrong direction: a leader "
          "named that is not the truly fastest; found: the truly fastest named.\n")
    for speedup in TRUTHS:
        print(table(results, speedup, drifts) + "\n")
    print("### checks\n")
    print("\n".join(checks(results, args.questions)))
    print(known_bursts(args.questions, args.seed))
    print(f"\nelapsed: {elapsed:.0f} s on {args.processes} processes ({len(jobs)} cells)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
