import os
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A clean working directory with its own results and scratch directories."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IOBENCH_SCRATCH", str(tmp_path / "scratch"))
    return tmp_path


@pytest.fixture
def plugin_env(monkeypatch):
    """Make the test-only adapters in tests/plugins importable by worker processes."""
    plugins = str(Path(__file__).parent / "plugins")
    monkeypatch.syspath_prepend(plugins)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [plugins, os.environ.get("PYTHONPATH")])))
    return plugins


def pytest_collection_modifyitems(config, items):
    """The slow tests first, those of the files with the most slow tests before the others (stable: otherwise as
    collected). ``make test`` hands whole files to its workers (pytest-xdist, ``--dist loadfile``: a module's
    fixtures are built once) in the order of their first test: the longest files start at once, on both workers,
    and the short ones fill in around them."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -slow[item.path]))


def assert_refused_naming_the_value(build_cases, base: dict, params: dict) -> None:
    """``build_cases`` refuses ``params`` (one bad value) with a SpecError naming it and what is allowed."""
    from benchmarks_lib.specs import SpecError

    with pytest.raises(SpecError) as info:
        build_cases({**base, **params}, "quick")
    message, value = str(info.value), next(iter(params.values()))
    shown = [value, *value] if isinstance(value, list) else [value]  # the value, or the list item at fault
    assert any(repr(v) in message or str(v) in message for v in shown)
    assert any(word in message for word in ("allowed", "e.g.", "must be"))
