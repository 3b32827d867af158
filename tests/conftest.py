import os
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
