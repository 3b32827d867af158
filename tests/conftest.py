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


#: the test-only array adapters in tests/plugins (name -> module:Class)
TEST_ADAPTERS = {"crashing": "crashing_adapter:CrashingAdapter", "slow": "crashing_adapter:SlowAdapter",
                 "crashlater": "crashing_adapter:CrashLaterAdapter", "background": "background_adapter:BackgroundAdapter"}


def install_distribution(site: Path, name: str, version: str, entry_points: dict[str, dict[str, str]]) -> Path:
    """An installed distribution made by hand in ``site``, as pip leaves one: its metadata and its entry points
    (group -> name -> ``module:Class``), and no files of its own. Returns ``site``."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()) + "\n"
        for group, entries in entry_points.items()))
    return site


def declare_adapters(site: Path, adapters: dict[str, str]) -> Path:
    """A distribution in ``site`` that declares ``adapters`` (name -> ``module:Class``) as array adapters, as a
    third party's package does. Returns ``site``."""
    return install_distribution(site, "iobench-test-adapters", "0", {"iobench.adapters": adapters})


def python_path(*paths: str | Path) -> str:
    """``paths`` before this process's PYTHONPATH: a child's PYTHONPATH."""
    return os.pathsep.join(filter(None, [*map(str, paths), os.environ.get("PYTHONPATH")]))


@pytest.fixture
def plugin_env(monkeypatch, tmp_path_factory):
    """The test-only adapters in tests/plugins (``TEST_ADAPTERS``), declared by a distribution of their own on
    sys.path and PYTHONPATH: this process and its workers find them, as they would a third party's."""
    from benchmarks_lib.adapters import forget_discovered

    plugins = str(Path(__file__).parent / "plugins")
    site = declare_adapters(tmp_path_factory.mktemp("site"), TEST_ADAPTERS)
    monkeypatch.syspath_prepend(plugins)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", python_path(plugins, site))
    forget_discovered()
    yield plugins
    forget_discovered()


def pytest_collection_modifyitems(config, items):
    """The slow tests first, those of the files with the most slow tests before the others (stable: otherwise as
    collected). ``make test`` hands whole files to its workers (pytest-xdist, ``--dist loadfile``: a module's
    fixtures are built once) in the order of their first test: the longest files start at once, on both workers,
    and the short ones fill in around them."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -slow[item.path]))


def write_notebook(root: Path, name: str, code: str) -> Path:
    """``root/notebooks/<name>.ipynb``: a ``parameters`` cell (``RESULTS_DIR = None``) and one code cell, for tests
    that execute a notebook through the book's own path (``book.build.execute_notebook``)."""
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python",
                                                           "display_name": "Python 3"}})
    nb.cells = [nbformat.v4.new_code_cell("RESULTS_DIR = None", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(code)]
    (root / "notebooks").mkdir(exist_ok=True)
    path = root / "notebooks" / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def assert_refused_naming_the_value(build_cases, base: dict, params: dict) -> None:
    """``build_cases`` refuses ``params`` (one bad value) with a SpecError naming it and what is allowed."""
    from benchmarks_lib.base.specs import SpecError

    with pytest.raises(SpecError) as info:
        build_cases({**base, **params}, "quick")
    message, value = str(info.value), next(iter(params.values()))
    shown = [value, *value] if isinstance(value, list) else [value]  # the value, or the list item at fault
    assert any(repr(v) in message or str(v) in message for v in shown)
    assert any(word in message for word in ("allowed", "e.g.", "must be"))
