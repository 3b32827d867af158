"""Upgrades: the writers' cases (their data, codec, fsync, reads and cutouts; quick at a quarter of their sizes) with
fewer writers and tests, each library at several versions (``versions``: each in a uv environment of its own,
``run.environments``), the versions of one library the contenders of one question, measured in the same rounds.

A suite of its own, not a writers run with versions: its rows (suite ``upgrades``) never stand in for the writers
chapter's, whose questions compare libraries at the versions installed here. zarr-python is measured writing the
Zarr v2 format (``zarr-python:zarr2``), which its 2.x and 3.x both write and read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from benchmarks_lib.suites import Case
from benchmarks_lib.suites.writers import PROFILES as WRITERS_PROFILES
from benchmarks_lib.suites.writers import SUITE as WRITERS

NAME = "upgrades"
#: zarr-python's last 2.x against the 3.x this project pins, and two tensorstore releases
VERSIONS = ["zarr==2.18.7,3.1.6", "tensorstore==0.1.71,0.1.86"]
BACKENDS = ["zarr-python:zarr2", "tensorstore"]
#: each profile is the writers' own, with the writers, tests and versions above; quick at a quarter of the writers'
#: sizes (its comparisons are within its run, and its share of the quick book must reach the first look: a round was
#: 0.9 s on 2026-11-29): a write of 33 MB, a cold full read of 8 MiB and cold cutouts of 32^3 and 64^3 (aligned and
#: unaligned)
PROFILES = {
    "quick": {**WRITERS_PROFILES["quick"], "backends": BACKENDS, "tests": ["write", "read"], "versions": VERSIONS,
              "dims": "t:8,y:1080:540,x:1920", "read_dims": "z:64:64,y:256:64,x:256:64"},
    "standard": {**WRITERS_PROFILES["standard"], "backends": BACKENDS, "tests": ["write", "append", "read"],
                 "versions": VERSIONS},
    # seed 000's write, append and cold reads at its own sizes, for the two libraries at each version
    "seed": {**WRITERS_PROFILES["seed"], "backends": BACKENDS, "tests": ["write", "append", "read"],
             "versions": VERSIONS},
}


def build_cases(params: dict, profile: str) -> list[Case]:
    """The writers' cases of ``params`` (this suite's profile, merged by the runner), as this suite's."""
    return [replace(case, suite=NAME, case_id="") for case in WRITERS.build_cases(params, profile)]


def questions(rows) -> Iterator[tuple[dict, object]]:
    """The writers' groups of equals, each split by library: the versions of one library are the contenders."""
    for key, group in WRITERS.question_groups(rows):
        for backend, part in group.groupby("backend", sort=True):
            yield {**key, "backend": backend}, part


SUITE = replace(
    WRITERS,
    name=NAME,
    title="Upgrades: one workload across library versions",
    measures="the writers' write, append, cold read and cutouts of each library at several versions",
    build_cases=build_cases,
    question_groups=questions,
    profiles=PROFILES,
    time_budget_s={"quick": 17, "standard": 150},  # standard: its first look on 2 cores
    optional=lambda case: False,
    # no versions: a smoke run measures what is installed here (no environment is built)
    smoke={**WRITERS.smoke, "backends": ["tensorstore"], "tests": ["write", "read"], "versions": []},
)

__all__ = ["BACKENDS", "NAME", "PROFILES", "SUITE", "VERSIONS", "build_cases", "questions"]
