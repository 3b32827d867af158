"""The size profiles: every point the quick profile measures gets n >= 5 (the n at which a ranking exists), and
the quick profile's cases are standard cases where the chapter allows it (or standard's on a smaller array, where
standard's sizes would not reach the first look within a quick book's share), so that a quick run and the
standard reference compare like with like where they can."""

from __future__ import annotations

import pytest

from benchmarks_lib.base.stats import MIN_RANK_N
from benchmarks_lib.rules.decision import CAP
from benchmarks_lib.run.runner import resolve_params
from benchmarks_lib.suites import get_suite, suite_names
from benchmarks_lib.suites.kit.verification import FULL_VERIFY_PROFILES, sample_regions, verify_scope

SUITE_NAMES = [name for name in suite_names() if name != "ceiling"]


@pytest.mark.parametrize("profile", ["quick", "standard"])
@pytest.mark.parametrize("name", SUITE_NAMES)
def test_every_point_of_a_book_profile_is_measured_at_least_five_times(name, profile):
    """The profiles a book is built from (quick, and standard: the reference) measure every point at n >= 5 (a suite
    in rounds: up to the rule's cap, unless its profile says otherwise)."""
    suite = get_suite(name)
    plan = suite.profiles[profile]
    assert resolve_params(name, {}, profile)["iterations"] == plan.get("iterations", CAP if suite.rounds else 3)
    assert resolve_params(name, {}, profile)["iterations"] >= MIN_RANK_N == 5
    if name == "writers":  # appends repeat the whole stream; cutouts repeat over positions
        assert plan["cutout_positions"] >= 5


@pytest.mark.parametrize("name", [n for n in SUITE_NAMES if get_suite(n).rounds is not None])
def test_every_profile_of_a_suite_in_rounds_reaches_the_first_look(name):
    """A cap below the first look can never name a leader: the seed profile (the seeds' own sizes) too measures in
    rounds up to the rule's cap, each question stopping once decided."""
    from benchmarks_lib.rules.decision import LOOKS

    for profile in get_suite(name).profiles:
        assert resolve_params(name, {}, profile)["iterations"] >= LOOKS[0], profile


def _subset(quick, standard, keys_equal=(), keys_within=()):
    for key in keys_equal:
        assert quick[key] == standard[key], key
    for key in keys_within:
        assert set(quick[key]) <= set(standard[key]), key


def test_quick_writer_cases_are_standard_cases():
    profiles = get_suite("writers").profiles
    quick, standard = profiles["quick"], profiles["standard"]
    _subset(quick, standard, ("dataset", "codec", "dims", "fsync", "read_dims", "cutout", "shard_volume", "shard",
                              "seed"), ("multipliers", "shard_datasets", "inner_chunks"))


def _first_planes(quick: str, standard: str) -> None:
    """The quick array is the standard one's first planes: the same chunks (and shards), the first dimension shorter
    (sized so that a quick book reaches each question's first look: ``book.plan.BudgetShares``)."""
    from benchmarks_lib.base.specs import parse_dims

    q, s = parse_dims(quick).dims, parse_dims(standard).dims
    assert [d.name for d in q] == [d.name for d in s]
    assert [(d.chunk, d.shard) for d in q] == [(d.chunk, d.shard) for d in s]
    assert q[0].size < s[0].size and [d.size for d in q[1:]] == [d.size for d in s[1:]]


def test_quick_compression_points_are_standard_points_on_a_smaller_array():
    profiles = get_suite("compression").profiles
    quick, standard = profiles["quick"], profiles["standard"]
    _subset(quick, standard, ("seed", "fsync", "generate_bytes", "threads"),
            ("mesh_backends", "levels", "vtu_compressors", "array_backends", "datasets", "codecs", "real_datasets",
             "real_codecs"))
    _first_planes(quick["dims"], standard["dims"])
    assert quick["mesh_n"] < standard["mesh_n"]


def test_quick_s3_cases_are_standard_cases_on_a_smaller_array():
    profiles = get_suite("s3").profiles
    quick, standard = profiles["quick"], profiles["standard"]
    _subset(quick, standard, ("dataset", "codec", "seed", "target"), ("backends", "latencies_ms"))
    _first_planes(quick["dims"], standard["dims"])


def test_verification_is_whole_in_standard_and_at_a_quick_points_first_write():
    assert set(FULL_VERIFY_PROFILES) == {"standard", "seed"}
    assert verify_scope("quick", 0) == "full" and verify_scope("quick", 3) == "sampled"
    assert verify_scope("standard", 3) == "full"


def test_sampled_chunks_include_the_first_and_the_last():
    from benchmarks_lib.base.specs import ArraySpec, parse_codec, parse_dims

    spec = ArraySpec(parse_dims("z:64:16,y:64:32,x:64:32"), "uint16", parse_codec("zstd:1"))
    regions = sample_regions(spec)
    assert len(regions) == 4 and len({repr(r) for r in regions}) == 4
    assert regions[0] == (slice(0, 16), slice(0, 32), slice(0, 32))
    assert (slice(48, 64), slice(32, 64), slice(32, 64)) in regions
    assert sample_regions(spec) == regions  # seeded by the shape: the same chunks every run
