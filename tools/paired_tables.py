"""The tables of book/methodology.md's "Statistics" section: the paired rule of ``benchmarks_lib/base/paired.py``
simulated question by question with its own ``look`` (the real leader, intervals, critical counts and answers),
on the drift models of ``tests/test_base_paired.py`` (``_drift``: none, a 1.3x step half-way, a 2x load burst
over 20% of the run, AR(1) drift; heavy tails: 10% of iterations 2x slower).

A question measures its contenders in rounds, each round in a fresh random order over the question's time slots
(one slot per measured iteration), and is looked at after each of ``LOOKS`` rounds until its answer is no longer
"open". Run from the repository root (about 30 s on 2 cores at the default size)::

    PYTHONPATH=$PWD python tools/paired_tables.py --questions 2000 --seed 0
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from benchmarks_lib.base.stats import two_sample
from benchmarks_lib.base.paired import ALPHA, LOOKS, MARGIN, Answer, look

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = LOOKS[-1]
SCENARIOS = {"none": "no drift", "step": "1.3x step half-way", "burst": "2x load burst over 20% of the run",
             "autocorrelated": "AR(1) drift", "heavy": "heavy tails (10% of iterations 2x slower)"}


@cache
def drift_model():
    """``_drift(kind, slots, rng, questions)`` of ``tests/test_base_paired.py``: the host's slowdown per slot."""
    spec = importlib.util.spec_from_file_location("paired_tests", ROOT / "tests" / "test_base_paired.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._drift


def round_times(truth: np.ndarray, scenario: str, cv: float, questions: int, seed: int) -> np.ndarray:
    """Times of shape (questions, ROUNDS, contenders): ``truth`` x lognormal noise of sigma ``cv`` x the host's
    drift at the slot each contender got in its round's random order (as the tests' ``simulate`` draws them)."""
    rng = np.random.default_rng(seed)
    contenders = len(truth)
    slots = ROUNDS * contenders
    drift = drift_model()("none" if scenario == "heavy" else scenario, slots, rng, questions)
    order = rng.random((questions, ROUNDS, contenders)).argsort(axis=2)
    slot = np.arange(ROUNDS)[None, :, None] * contenders + order
    noise = rng.lognormal(0, cv, (questions, ROUNDS, contenders))
    if scenario == "heavy":
        noise *= np.where(rng.random(noise.shape) < 0.1, 2.0, 1.0)
    return truth[None, None, :] * noise * np.take_along_axis(drift[:, None, :].repeat(ROUNDS, 1), slot, 2)


@dataclass(frozen=True)
class Cell:
    """What ``questions`` questions of one kind ended with."""

    questions: int
    #: a comparison's interval excluded 1 at some look before the question stopped
    any_separable: float
    #: stopped as "separated" with contender 0 (the true best where there is one) as the leader
    separated_right: float
    #: stopped as "separated" with another leader
    separated_wrong: float
    equivalent: float
    not_separable: float
    mean_rounds: float


def simulate(truth: list[float], scenario: str = "none", cv: float = 0.1, questions: int = 2000,
             seed: int = 0) -> Cell:
    """Each question asked of ``base.paired.look`` at every look until it stops (contender ``c0`` is the first of
    ``truth``)."""
    times = round_times(np.asarray(truth, dtype=float), scenario, cv, questions, seed)
    names = [f"c{j}" for j in range(len(truth))]
    any_sep = right = wrong = equivalent = not_sep = rounds = 0
    for q in range(questions):
        seen = False
        for n in LOOKS:
            state = look({name: times[q, :n, j] for j, name in enumerate(names)})
            seen |= any(iv.lo > 1 or iv.hi < 1 for iv in state.intervals.values())
            if state.answer is not Answer.OPEN:
                break
        any_sep += seen
        rounds += state.rounds
        right += state.answer is Answer.SEPARATED and state.leader == "c0"
        wrong += state.answer is Answer.SEPARATED and state.leader != "c0"
        equivalent += state.answer is Answer.EQUIVALENT
        not_sep += state.answer is Answer.NOT_SEPARABLE
    share = 1 / questions
    return Cell(questions, any_sep * share, right * share, wrong * share, equivalent * share, not_sep * share,
                rounds * share)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def null_tables(questions: int, seed: int, contenders: tuple[int, ...] = (2, 3, 4, 5)) -> str:
    """Identical contenders: the false "separable" rate per scenario and number of contenders, then how the
    questions ended and how many rounds they used."""
    cells = {(s, k): simulate([1.0] * k, s, 0.1, questions, seed + 10 * k) for s in SCENARIOS for k in contenders}
    head = "| host | " + " | ".join(f"{k} contenders" for k in contenders) + " |"
    rule = "|---|" + "---|" * len(contenders)
    false = [head, rule] + [f"| {label} | " + " | ".join(pct(cells[s, k].any_separable) for k in contenders) + " |"
                            for s, label in SCENARIOS.items()]
    ends = [head, rule] + [
        f"| {label} | " + " | ".join(f"{pct(cells[s, k].equivalent)} eq., {cells[s, k].mean_rounds:.1f} r"
                                     for k in contenders) + " |" for s, label in SCENARIOS.items()]
    return ("False \"separable\" (identical contenders, 10% CV; share of questions in which some comparison's "
            f"interval excluded 1 at some look before the question stopped; {questions} questions a cell; "
            f"the stated level is {ALPHA:.0%} per question):\n\n" + "\n".join(false) + "\n\n"
            f"How the same questions ended: shown equivalent within {MARGIN:.0%} (eq.; the rest reached the cap "
            "of 20 rounds not separable, or were falsely separated) and the mean rounds used (r):\n\n"
            + "\n".join(ends))


def power_table(questions: int, seed: int) -> str:
    """One contender truly faster than the others by 1.15x or 1.3x, at 10% and 30% CV: the share of questions
    that name it the separable winner, and the mean rounds used."""
    columns = {"2 contenders": (2, "none"), "2 contenders, 2x load burst": (2, "burst"),
               "3 contenders": (3, "none")}
    lines = ["| true difference | CV | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    wrong = 0.0
    for factor in (1.15, 1.3):
        for cv in (0.1, 0.3):
            row = []
            for k, scenario in columns.values():
                cell = simulate([1.0] + [factor] * (k - 1), scenario, cv, questions, seed + int(100 * factor) + k)
                wrong = max(wrong, cell.separated_wrong)
                row.append(f"{pct(cell.separated_right)}, {cell.mean_rounds:.1f} rounds")
            lines.append(f"| {factor:.2f}x | {cv:.0%} | " + " | ".join(row) + " |")
    return ("Power (the truly fastest contender separated from every other and named the winner by the cap; "
            f"mean rounds used; {questions} questions a cell; at most {pct(wrong)} of any cell crowned "
            "another):\n\n" + "\n".join(lines))


def margin_table(questions: int, seed: int) -> str:
    """Two contenders with no true difference or a true difference inside the margin (1.03x), at low noise: how
    often the question ends "equivalent", "separated" or "not separable", and the mean rounds used."""
    lines = ["| true difference | CV | equivalent | separated | not separable | mean rounds |",
             "|---|---|---|---|---|---|"]
    for factor in (1.0, 1.03):
        for cv in (0.02, 0.05, 0.1):
            cell = simulate([1.0, factor], "none", cv, questions, seed + int(1000 * cv) + int(100 * factor))
            lines.append(f"| {factor:.2f}x | {cv:.0%} | {pct(cell.equivalent)} | "
                         f"{pct(cell.separated_right + cell.separated_wrong)} | {pct(cell.not_separable)} | "
                         f"{cell.mean_rounds:.1f} |")
    return (f"Inside the margin (two contenders, no drift; {questions} questions a cell):\n\n" + "\n".join(lines))


def two_sample_table(questions: int, seed: int, sizes: tuple[int, ...] = (5, 8)) -> str:
    """The rule for rows that are not paired (``stats.two_sample``) on two identical contenders whose ``n``
    iterations run back to back (all of A's, then all of B's, as cases ran before rounds): the share of questions
    called separable, per drift model."""
    lines = ["| host | " + " | ".join(f"n = {n}" for n in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for scenario, label in SCENARIOS.items():
        row = []
        for n in sizes:
            rng = np.random.default_rng(seed + n)
            drift = drift_model()("none" if scenario == "heavy" else scenario, 2 * n, rng, questions)
            times = rng.lognormal(0, 0.1, (questions, 2 * n)) * drift
            if scenario == "heavy":
                times *= np.where(rng.random(times.shape) < 0.1, 2.0, 1.0)
            row.append(pct(np.mean([bool(two_sample(t[:n], t[n:]).separable) for t in times])))
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return ("The two-sample rule on iterations run back to back (two identical contenders, 10% CV; share of "
            f"questions called separable; {questions} questions a cell):\n\n" + "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=2000, help="questions per cell (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print(null_tables(args.questions, args.seed), end="\n\n")
    print(margin_table(args.questions, args.seed), end="\n\n")
    print(two_sample_table(args.questions, args.seed), end="\n\n")
    print(power_table(args.questions, args.seed), end="\n\n")
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
