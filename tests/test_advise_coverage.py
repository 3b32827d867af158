"""What a quick or standard writers run covers for ``iobench advise``: uint16 (the commonest microscopy dtype) writes,
appends and full reads, and cutouts of 32^3 and 64^3 of it, from the profiles' own dataset and cutout sides (a real
quick run at small sizes); the answer to each is the book's (the cutouts: the book answers the largest side)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks_lib.advise.evidence import find_evidence, parse_workload
from benchmarks_lib.data.datasets import DATASETS
from benchmarks_lib.records.store import load_run, run_dirs
from benchmarks_lib.rules.answers import answer
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites.writers import PROFILES

READ = (64, 128, 128)  # holds 64^3 cutouts, aligned and not, at 2 MB of uint16


@pytest.mark.parametrize("profile", ["quick", "standard"])
def test_the_profiles_measure_uint16_writes_and_cutouts_of_32_and_64(profile):
    p = PROFILES[profile]
    assert DATASETS[p["dataset"]][0] == "uint16"
    assert {32, 64} <= set(p["cutout"])


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """A quick writers run at small sizes with the profile's own dataset and cutout sides: (results dir, rows)."""
    base = tmp_path_factory.mktemp("coverage")
    read_dims = ",".join(f"{n}:{s}:64" for n, s in zip("zyx", READ, strict=True))
    run_suite("writers", {"backends": ["zarr-python", "tensorstore"], "tests": ["write", "read"],
                          "dims": "t:4,y:64:32,x:96", "read_dims": read_dims, "iterations": 8, "warmups": 0},
              profile="quick", results_dir=base / "results", run_id="coverage", scratch_dir=base / "scratch",
              ceiling=False, progress=None)
    return base / "results", load_run(run_dirs(base / "results")[0])[0]


@pytest.mark.parametrize("access", ["write", "full-read", "cutout:32,32,32", "cutout:64,64,64"])
def test_a_quick_run_answers_uint16_workloads(quick, access):
    results, df = quick
    shape = "4,64,96" if access == "write" else ",".join(map(str, READ))
    evidence = find_evidence([results], parse_workload(None, shape, "uint16", access))
    assert evidence is not None, access
    assert set(evidence.rows["dtype"].astype(str)) == {"uint16"}
    assert evidence.ranking.paired and len(evidence.ranking.entries) == 2
    if access.startswith("cutout:"):
        side = int(access.split(":")[1].split(",")[0])
        assert set(evidence.rows["cutout"]) == {side} and set(evidence.rows["cutout_kind"]) == {"unaligned"}
        assert set(evidence.rows["nbytes"]) == {side**3 * np.dtype("uint16").itemsize}
    key = {"write": "write", "full-read": "cold-read"}.get(access, "cutouts-unaligned")
    book = answer(key, df)
    if access != "cutout:32,32,32":  # the book answers the largest cutouts every writer read (64^3)
        assert set(evidence.ranking.leader.rows.index) == set(book.pick_entry.rows.index), access
        assert evidence.ranking.status is book.status, access
