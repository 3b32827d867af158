"""A case as points measured in rounds (``suites.Rounds``), and the same case measured whole.

A suite's case sweeps *points* (sizes, layouts, codecs). Each point is set up once (its data made, its store
written, its warm-ups run) and then measured once per round: :func:`in_rounds` turns the points into the generator
the runner steps, :func:`whole_case` measures that generator's rounds back to back (the case's ``iterations``) for
a run that does not interleave (a Dask cluster's worker, the tests of one case).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from benchmarks_lib.suites import Case, CaseContext, Rounds


@dataclass
class Point:
    """One point of a case once set up: ``measure(round)`` measures one iteration and returns its rows;
    ``cleanup`` removes what its set-up made (its store) when the case ends."""

    measure: Callable[[int], list[dict]]
    cleanup: Callable[[], None] = field(default=lambda: None)


def in_rounds(setup: Iterator[Point | list[dict]], columns: dict | None = None) -> Rounds:
    """The rounds of a case from its set-up: ``setup`` yields each point once it is set up (or rows, a skip of one
    point, say); then every round measures each point once, in order. Returns at once when no point is left.
    ``columns`` go on every row (the library's version, say)."""
    extra = columns or {}
    points: list[Point] = []
    rows: list[dict] = []
    try:
        for item in setup:
            if isinstance(item, Point):
                points.append(item)
            else:
                rows += item
        if not points:
            return [{**r, **extra} for r in rows]
        yield [{**r, **extra} for r in rows]
        round_no = 0
        while True:
            out: list[dict] = []
            for point in points:
                out += point.measure(round_no)
            yield [{**r, **extra} for r in out]
            round_no += 1
    finally:
        for point in points:
            with contextlib.suppress(Exception):
                point.cleanup()


def whole_case(rounds: Callable[[Case, CaseContext], Rounds]) -> Callable[[Case, CaseContext], list[dict]]:
    """``run_case`` from a suite's ``rounds``: set up, then ``ctx.iterations`` rounds back to back."""

    def run_case(case: Case, ctx: CaseContext) -> list[dict]:
        steps = rounds(case, ctx)
        try:
            rows = next(steps)
        except StopIteration as end:
            return list(end.value or [])
        try:
            for r in range(ctx.iterations):
                rows += [{**row, "iteration": r} for row in next(steps)]
        except StopIteration as end:  # nothing more to measure: a skip found in a round (a library found missing)
            rows += list(end.value or [])
        finally:
            steps.close()
        return rows

    return run_case


__all__ = ["Point", "in_rounds", "whole_case"]
