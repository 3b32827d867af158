"""The seeds' claims checked on this machine's rows (``rules.seeds``, the chapter ``chapters.seeds``): a pair decided by
the one rule gives the verdict the decision says; a claim whose configuration was not measured cannot be tested and
says why; a real writers run checks the writers' claims; every string from a run is escaped on the page."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks_lib.chapters import seeds as chapter
from benchmarks_lib.records.store import load_run, run_dirs
from benchmarks_lib.rules.seeds import CLAIMS, Holds, check_claims
from benchmarks_lib.run.runner import run_suite
from benchmarks_lib.suites import get_suite

WRITE = next(c for c in CLAIMS if c.check == "write" and c.faster == "tensorstore")


def _writes(factor: float, rounds: int = 20, seed: int = 0) -> pd.DataFrame:
    """Rows of the writers' write test, measured in rounds: tensorstore's time times ``factor`` is zarr-python's,
    each round on a host level of its own (10% spread, the same for both in a round)."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(rounds):
        level = rng.lognormal(0, 0.1)
        for position, (backend, scale) in enumerate((("tensorstore", 1.0), ("zarr-python", factor))):
            elapsed = 0.5 * scale * level * rng.lognormal(0, 0.02)
            rows.append({"suite": "writers", "backend": backend, "test": "write", "operation": "total",
                         "status": "ok", "round": r, "round_position": position, "iteration": r,
                         "elapsed_s": elapsed, "nbytes": 1e8, "gbps": 1e8 / elapsed / 1e9, "codec": "lz4",
                         "fsync_included": True, "writer_fsyncs": False, "dataset": "microscopy",
                         "cache_state": None, "cutout_kind": None, "run_id": "r<script>", "verified": True})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("factor", "holds"), [(1.5, Holds.HOLDS), (1 / 1.5, Holds.DOES_NOT_HOLD),
                                               (1.0, Holds.DOES_NOT_HOLD)])
def test_a_pair_claim_gets_the_verdict_its_decision_says(factor, holds):
    """tensorstore 1.5x faster: the claim holds; 1.5x slower: it does not (zarr-python leads); the same speed: the
    two are within the margin or tied with an interval that excludes the seed's 1.17x, so it does not hold."""
    (checked,) = [c for c in check_claims({"writers": (_writes(factor), "r1")}) if c.claim is WRITE]
    assert checked.holds is holds, checked
    assert "zarr-python" in checked.measured and "than tensorstore" in checked.measured and "rounds" in checked.measured
    assert "(the seed: 1.17x)" in checked.measured and checked.run_id == "r1"


@pytest.mark.parametrize(("calls", "said"), [
    (1.5, "; the same verdict as this book's: timing the create, finalize and fsync with the write does not change it"),
    (1 / 1.5, "; not this book's verdict (holds): timing the create, finalize and fsync with the write explains the "
              "difference")])
def test_the_seeds_own_way_is_decided_on_the_same_rounds_and_says_what_explains_a_difference(calls, said):
    """Seed 000 timed the write call alone: the run's rows time each phase, so the claim is decided that way too,
    on the same rounds, beside this book's whole write; where the verdicts differ, the part of the write the seed
    did not time explains it."""
    whole = _writes(1.5)
    call = _writes(calls, seed=1).assign(operation="write")
    (checked,) = [c for c in check_claims({"writers": (pd.concat([whole, call]), "r1")}) if c.claim is WRITE]
    assert checked.holds is Holds.HOLDS
    verdict = "holds" if calls > 1 else "does not hold"
    assert checked.seed_way.startswith("the seed's way (the write call alone): zarr-python ")
    assert checked.seed_way.endswith(f" rounds (the seed: 1.17x): **{verdict}**{said}"), checked.seed_way
    assert "Measured here the seed's way" in chapter.methods_list([checked])
    (other,) = [c for c in check_claims({"writers": (whole, "r1")}) if c.claim is WRITE]
    assert other.seed_way == ""  # no phase rows: nothing to decide the seed's way


def test_a_pair_below_the_first_look_cannot_be_tested_yet():
    (checked,) = [c for c in check_claims({"writers": (_writes(1.5, rounds=5), "r1")}) if c.claim is WRITE]
    assert checked.holds is Holds.CANNOT and checked.why == "open after 5 rounds: a later build goes on"


def test_what_the_runs_did_not_measure_cannot_be_tested_and_says_why():
    checked = check_claims({"writers": (_writes(1.5), "r1")})
    assert [c.claim for c in checked] == list(CLAIMS)  # every claim, once, in the seeds' order
    by_check = {c.claim.check: c for c in checked}
    assert by_check["ttree-cache"].holds is Holds.CANNOT and by_check["ttree-cache"].why == "no cache run here"
    assert by_check["unmeasured"].why == "neither library is one this book measures"
    acquire = next(c for c in checked if c.claim.faster == "acquire-zarr")
    assert acquire.holds is Holds.CANNOT and acquire.why == "acquire-zarr not measured in this run"
    assert len(CLAIMS) >= 8 and {c.seed for c in CLAIMS} == {"000", "001", "002", "003", "004"}


@pytest.fixture(scope="module")
def writers_run(tmp_path_factory):
    """A real writers run at the suite's smoke sizes, 8 rounds (the first look): writes and the sharding sweep."""
    base = tmp_path_factory.mktemp("seeds")
    params = {**get_suite("writers").smoke, "tests": ["write", "sharding"], "iterations": 8, "cutout_positions": 8}
    run_suite("writers", params, results_dir=base / "results", run_id="seeds", scratch_dir=base / "scratch",
              ceiling=False, progress=None)
    return base / "results"


def test_a_real_writers_run_checks_the_writers_claims_and_the_page_escapes_them(writers_run):
    df, meta = load_run(run_dirs(writers_run)[0])
    found = check_claims({"writers": (df, meta["run_id"])})
    checked = {c.claim.check: c for c in found} | {"write": next(c for c in found if c.claim is WRITE)}
    # the files on disk are counted: shards take fewer than the same chunks unsharded
    assert checked["inodes"].holds is Holds.HOLDS and " inodes in shards against " in checked["inodes"].measured
    assert checked["inodes"].why.endswith("^3 cube here, the seed's 1024^3)"), checked["inodes"].why
    # the cutouts and the write are decided by the rule (a verdict either way, on 8 rounds)
    for key in ("sharded-cutout", "write"):
        assert "8 rounds" in checked[key].measured, checked[key]
    # and the write the seed's way too: its write call alone, on the same rounds
    assert checked["write"].seed_way.startswith("the seed's way (the write call alone): "), checked["write"]
    assert checked["sharded-write"].holds is Holds.CANNOT and "wkw" in checked["sharded-write"].why
    # the chapter reads the newest runs of its suites and escapes what they hold
    found = chapter.check(writers_run)
    assert [c.holds for c in found] == [c.holds for c in check_claims({"writers": (df, meta["run_id"])})]
    page = chapter.claims_table(found) + chapter.methods_list(found)
    assert page.count("\n| ") == len(CLAIMS) and "run seeds" in page
    assert chapter.conclusion(found).startswith(f"**{sum(c.holds is Holds.HOLDS for c in found)} of {len(CLAIMS)}")
    hostile = check_claims({"writers": (_writes(1.5), "<b>r</b>|x")})
    assert "<b>" not in chapter.methods_list(hostile) and "\\|x" in chapter.methods_list(hostile)


def test_the_seed_profile_checks_the_claims_at_the_seeds_own_sizes_and_says_which_are_scaled():
    """Before measuring, the book says which claims its runs measure at the seeds' own sizes: the seed profile's
    writers, compression, threads and cache runs hold seeds 000, 001, 002 and 004 at theirs; 003's shape and random
    data, and the libraries the book does not measure, never are; quick scales every one and says how."""
    from benchmarks_lib.rules.seeds import sizes_lines
    from benchmarks_lib.run.runner import resolve_params

    seed = sizes_lines("seed", lambda suite: resolve_params(suite, {}, "seed"))
    assert seed[0].startswith("seeds: 9 of 12 claims checked at the seeds' own sizes on the seed profile"), seed
    assert sorted(line.split(":")[0].strip() for line in seed[1:]) == ["000 OME-Zarr", "003 acquire-zarr", "003 zarrs"]
    quick = sizes_lines("quick", lambda suite: resolve_params(suite, {}, "quick"))
    assert quick[0].startswith("seeds: 0 of 12") and len(quick) == 1 + len(CLAIMS)
    assert "  001 cutout: scaled: shard_volume 256 (the seed's 1024); shard 128 (the seed's 512)" in quick
