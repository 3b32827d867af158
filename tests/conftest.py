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
                 "crashlater": "crashing_adapter:CrashLaterAdapter",
                 "background": "background_adapter:BackgroundAdapter"}


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


def case_in_rounds(suite, case, scratch: Path, rounds: int, warmups: int = 1) -> list[list[dict]]:
    """``case`` stepped as a worker steps it for the runner's rounds (``suite.rounds``): its set-up's rows, then each
    round's, then its end; its scratch (a marked directory made here) left empty."""
    from benchmarks_lib.base.scratch import create_marked_dir
    from benchmarks_lib.suites import CaseContext

    scratch = create_marked_dir(scratch)
    steps = suite.rounds(case, CaseContext(scratch=scratch, iterations=rounds, warmups=warmups, profile="quick"))
    try:
        out = [next(steps) for _ in range(rounds + 1)]
    finally:
        steps.close()
    assert [p.name for p in scratch.iterdir()] == [".iobench-scratch"], f"{case.backend} left files behind"
    return out


def small_run_in_rounds(suite_name: str, base: Path, rounds: int = 9, **params):
    """A small run of ``suite_name`` (its smoke parameters and ``params``, at most ``rounds`` rounds, one warm-up, a
    budget no busy test machine spends), checked to be measured in rounds: every ok row of a question operation has
    its round (its iteration), and run.json states the questions, each closed. Returns (rows, run.json)."""
    import json

    from benchmarks_lib.run.runner import run_suite
    from benchmarks_lib.suites import get_suite

    suite = get_suite(suite_name)
    result = run_suite(suite_name, {**suite.smoke, "iterations": rounds, "warmups": 1, **params}, profile="quick",
                       results_dir=base / "results", scratch_dir=base / "scratch", run_id="rounds", ceiling=False,
                       progress=None, assume_yes=True, budget="10m")
    df, meta = result.df, json.loads((result.run_dir / "run.json").read_text())
    assert not (df["status"] == "error").any(), df[df["status"] == "error"]["reason"].tolist()
    asked = df[df["operation"].isin(suite.questions) & (df["status"] == "ok")]
    assert len(asked) and asked["round"].notna().all() and (asked["iteration"] == asked["round"]).all()
    assert asked["round_position"].notna().all() and asked["rounds_stop"].notna().all()
    questions = meta["rounds"]["questions"]
    assert questions and {q["operation"] for q in questions} <= set(suite.questions)
    assert meta["rounds"]["rounds"] >= min(8, rounds)  # the first look, at least
    assert all(q["answer"] != "open" and 1 <= q["rounds"] <= rounds for q in questions)
    return df, meta


def count_calls(monkeypatch, module, name: str, counts: Counter) -> None:
    """Each call of ``module.name`` from now on counted in ``counts[name]``."""
    real = getattr(module, name)

    def counted(*args, **kwargs):
        counts[name] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


def count_round_trip_writes(monkeypatch, counts: Counter) -> None:
    """Each write of the shared round trip (``kit.roundtrip.timed_write``) from now on counted in ``counts``: a
    warm-up's (untimed) as ``warm-up``, a measured one as ``write``."""
    from benchmarks_lib.suites.kit import roundtrip

    real = roundtrip.timed_write

    def counted(rt, *, fsync: bool, sample: bool = True):
        counts["write" if sample else "warm-up"] += 1
        return real(rt, fsync=fsync, sample=sample)

    monkeypatch.setattr(roundtrip, "timed_write", counted)


#: rounds of a library's versions measured side by side (the upgrades tests)
VERSION_ROUNDS = 12


def version_rows(version: str, factor: float, *, operation: str = "read_region_cold", kind: str | None = "aligned",
                 backend: str = "zarr-python", run: str = "r1", zarr_format: int | None = 2, spread: float = 0.02,
                 seed: int = 0, rounds: bool = True):
    """A library version's rows of one operation (a DataFrame), as a run of ``--versions`` records them: ``factor``
    times a time that drifts from round to round (as a machine does), with a little noise of its own."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    base = 0.01 * (1 + 0.3 * np.sin(np.arange(VERSION_ROUNDS)))  # the rounds' common drift: pairing removes it
    times = factor * base * (1 + spread * rng.standard_normal(VERSION_ROUNDS))
    return pd.DataFrame({
        "run_id": run, "backend": backend, "backend_version": version, "operation": operation, "status": "ok",
        "verified": True, "elapsed_s": times, "round": np.arange(VERSION_ROUNDS) if rounds else pd.NA,
        "codec": "blosc-lz4:5:shuffle", "nbytes": 32768, "cutout_kind": kind, "cache_state": "cold",
        "dataset": "em_like", "zarr_format": zarr_format})
