"""A toy suite from a package of its own: one buffer copied in memory, ``nbytes`` at a time.

Its ``pyproject.toml`` declares it in the ``iobench.suites`` entry-point group (and its chapter, ``chapter.py``, in
``iobench.chapters``); nothing under ``benchmarks_lib`` names it. This module is all a measuring worker imports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks_lib.base.specs import parse_size
from benchmarks_lib.measure import measure
from benchmarks_lib.suites import Case, CaseContext, Suite

PROFILES: dict[str, dict[str, Any]] = {
    profile: {"nbytes": nbytes, "iterations": 5, "warmups": 1}
    for profile, nbytes in (("quick", "1MiB"), ("standard", "16MiB"), ("seed", "64MiB"))
}


def build_cases(params: dict, profile: str) -> list[Case]:
    return [Case("toy", "numpy", {"nbytes": parse_size(params["nbytes"])})]


def run_case(case: Case, ctx: CaseContext) -> list[dict]:
    nbytes = case.params["nbytes"]
    src, dst = np.ones(nbytes, np.uint8), np.zeros(nbytes, np.uint8)
    rows = []
    for i in range(ctx.warmups + ctx.iterations):
        m = measure(lambda: np.copyto(dst, src))
        if i >= ctx.warmups:
            rows.append({"operation": "copy", "iteration": i - ctx.warmups, "status": "ok", "nbytes": nbytes,
                         "verified": bool(dst.all()), **m.as_row()})
    return rows


SUITE = Suite(name="toy", title="Toy copies", measures="one buffer copied in memory", build_cases=build_cases,
              run_case=run_case, profiles=PROFILES, ceiling_bytes=lambda cases: 2**20, time_budget_s={"quick": 10},
              case_keys=("nbytes",), smoke={"nbytes": "64KiB", "iterations": 1, "warmups": 0})
