"""Upgrades by the one rule: each version's time over the newest's, paired within one run's rounds, each iteration a
round across runs (never said to be paired); separable changes of 10% or more in words, the rest "no separable
difference"; the Zarr formats said."""

from __future__ import annotations

import pandas as pd
from conftest import VERSION_ROUNDS as ROUNDS
from conftest import version_rows as rows

from benchmarks_lib.base.markup import md
from benchmarks_lib.rules.decision import LOOKS
from benchmarks_lib.rules.upgrades import Change, changes, headline, version_key, versioned


def test_a_paired_regression_is_said_with_its_factor_and_interval():
    df = pd.concat([rows("2.18.7", 1.0, seed=1), rows("3.1.6", 1.8, seed=2)])
    (c,) = changes(df)
    assert (c.library, c.version, c.newest, c.verdict) == ("zarr-python", "2.18.7", "3.1.6", "newest slower")
    assert c.ratio.paired and c.notable and 0.5 < c.ratio.ratio < 0.6
    text = c.sentence(str)
    assert text.startswith(("3.1.6 is 1.7", "3.1.6 is 1.8"))
    assert "x slower than 2.18.7 for cold cutouts of 32 KiB (aligned) [" in text
    (line,) = headline([c], md)
    assert "(Zarr v2 format on both)" in line and line.count("Zarr") == 1


def test_the_newest_is_the_reference_whatever_leads():
    """Three versions: each older one against the newest (3.1.6), the oldest faster, the middle one equivalent."""
    df = pd.concat([rows("2.18.7", 0.5, seed=1), rows("3.0.8", 1.0, seed=2), rows("3.1.6", 1.0, seed=3),
                    rows("3.1.6", 1.0, seed=4, operation="total", kind=None)])
    found = changes(df)
    assert [(c.version, c.newest) for c in found] == [("2.18.7", "3.1.6"), ("3.0.8", "3.1.6")]
    old, mid = found
    assert old.verdict == "newest slower" and old.sentence(str).startswith("3.1.6 is ")
    assert mid.verdict == "equivalent" and not mid.notable
    assert versioned(df) == {"zarr-python": ["2.18.7", "3.0.8", "3.1.6"]}
    assert version_key("3.10.0") > version_key("3.9.1") and version_key("junk") > version_key("99")


def test_rows_of_two_runs_are_not_paired():
    """One run per version: their rounds are not the same rounds, so each iteration stands for a round, and the
    comparison is never said to be paired; 12 iterations each, decided at the first look."""
    df = pd.concat([rows("2.18.7", 1.0, run="a", seed=1), rows("3.1.6", 1.8, run="b", seed=2)])
    assert len(df) == 2 * ROUNDS
    (c,) = changes(df)
    assert not c.ratio.paired and c.ratio.n_a == c.ratio.n_b == LOOKS[0]
    assert c.notable and "not paired" in upgrade_sure_of(df)


def test_no_separable_difference_and_too_few_are_said():
    same = pd.concat([rows("1.0", 1.0, seed=1, spread=0.3), rows("2.0", 1.03, seed=2, spread=0.3)])
    (line,) = headline(changes(same), md)
    assert "no separable difference of 10% or more" in line
    few = pd.concat([rows("1.0", 1.0, seed=1).head(3), rows("2.0", 2.0, seed=2).head(3)])
    (c,) = changes(few)
    assert c.verdict == "too few rounds" and not c.notable
    assert "1 of 1 comparisons had too few rounds" in headline([c], md)[0]


def test_formats_that_differ_are_said_per_side():
    df = pd.concat([rows("2.18.7", 1.0, seed=1, zarr_format=2), rows("3.1.6", 1.8, seed=2, zarr_format=3)])
    (c,) = changes(df)
    assert c.formats == ("2", "3")
    assert "(Zarr v2 format on 2.18.7, v3 on 3.1.6)" in headline([c], md)[0]


def test_one_version_skips_and_failures_are_nothing_to_compare():
    assert changes(rows("3.1.6", 1.0)) == [] and versioned(pd.DataFrame()) == {}
    bad = pd.concat([rows("2.18.7", 1.0), rows("3.1.6", 1.0).assign(verified=False)])
    assert changes(bad) == []
    skipped = pd.concat([rows("2.18.7", 1.0), rows("3.1.6", 1.0).assign(status="skip")])
    assert changes(skipped) == []


def test_record_strings_are_escaped_in_the_words():
    evil = "<img src=x>[a](https://x.org)"
    df = pd.concat([rows("1.0", 1.0, seed=1, backend=evil), rows(evil, 2.0, seed=2, backend=evil)])
    (c,) = changes(df)
    assert isinstance(c, Change)
    line = headline([c], md)[0]
    assert "\\<img" in line and "<img" not in line.replace("\\<img", "") and "](https" not in line


def test_the_upgrade_answer_states_its_largest_change_first():
    from benchmarks_lib.rules.answers import upgrade_answer
    from benchmarks_lib.rules.words import pick_text, sure_text

    df = pd.concat([rows("2.18.7", 1.0, seed=1), rows("3.1.6", 1.3, seed=2),
                    rows("2.18.7", 1.0, seed=3, operation="total", kind=None),
                    rows("3.1.6", 0.5, seed=4, operation="total", kind=None)])
    a = upgrade_answer(df)
    assert a.measured and [c.operation for c in a.upgrade] == ["total", "read_region_cold"]
    assert pick_text(a).startswith("**zarr-python** 2.18.7 to 3.1.6: 3.1.6 is 1.9")
    assert pick_text(a).endswith("x faster for write")
    # 12 rounds measured, the change decided at the first look: its interval rests on 8
    assert sure_text(a).startswith("separated: [") and "paired over 8 rounds; 1 more change of 10% or more" in \
        sure_text(a)
    same = upgrade_answer(pd.concat([rows("1.0", 1.0, seed=1), rows("2.0", 1.0, seed=2)]))
    assert pick_text(same).endswith("1.0 to 2.0: no separable difference of 10% or more")
    assert sure_text(same).startswith("1 comparison: each within 10%")
    assert not upgrade_answer(rows("3.1.6", 1.0)).measured and not upgrade_answer(pd.DataFrame()).measured


def upgrade_sure_of(df: pd.DataFrame) -> str:
    from benchmarks_lib.rules.answers import upgrade_answer
    from benchmarks_lib.rules.words import sure_text

    return sure_text(upgrade_answer(df))
