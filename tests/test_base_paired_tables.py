"""``tools/paired_tables.py``, the script behind book/methodology.md's simulation tables, kept working: each of its
tables at a small size, drawn from the real ``base.paired.look`` and ``stats.two_sample``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tables():
    spec = importlib.util.spec_from_file_location("paired_tables", ROOT / "tools" / "paired_tables.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_a_question_is_asked_of_the_rule_until_it_stops(tables):
    clear = tables.simulate([1.0, 1.3], "none", cv=0.02, questions=40)
    assert clear.separated_right == 1.0 and clear.mean_rounds == 8  # decided at the first look
    same = tables.simulate([1.0, 1.0], "none", cv=0.005, questions=40)
    assert same.equivalent >= 0.85 and same.mean_rounds == 8  # the rest falsely separated (checked first)
    noisy = tables.simulate([1.0, 1.0, 1.0], "burst", cv=0.3, questions=40)
    assert noisy.separated_right + noisy.separated_wrong + noisy.equivalent + noisy.not_separable <= 1.0
    assert 12 <= noisy.mean_rounds <= 20  # three contenders: no interval at round 8


def test_every_table_is_printed(tables, capsys):
    assert tables.main(["--questions", "12"]) == 0
    out = capsys.readouterr().out
    for heading in ("False \"separable\"", "How the same questions ended", "Inside the margin",
                    "The two-sample rule on iterations run back to back", "Power"):
        assert heading in out
    assert out.count("| heavy tails (10% of iterations 2x slower) |") == 3
