"""pyproject.toml and environment.yml carry the same pins; the CLI entry point exists."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _pins(items) -> dict[str, str]:
    out = {}
    for item in items:
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^;\s]+)$", item.strip())
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def test_environment_yml_has_the_pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        pins.update(_pins(extra))
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda = _pins(pip)
    differ = {k: (pins.get(k), conda.get(k)) for k in set(pins) | set(conda) if pins.get(k) != conda.get(k)}
    assert not differ, differ


def test_console_script_and_readme_commands():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # the command is a launcher that starts Python isolated (tests/test_base_import_path.py), not an entry point
    assert "scripts" not in pyproject["project"]
    assert pyproject["tool"]["setuptools"]["script-files"] == ["bin/iobench"]
    readme = (ROOT / "README.md").read_text().splitlines()
    first_block = "\n".join(readme[:6])
    assert "make book" in first_block and "make test" in first_block
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_installed_adapters_are_the_ones_pyproject_declares():
    """The adapters, suites and chapters are found through the installed package's entry points: one group per
    kind of adapter, one for the suites, one for the chapters, each as pyproject.toml declares it (a stale install,
    from before a line was added, would miss a writer)."""
    from importlib.metadata import entry_points

    from benchmarks_lib.adapters.library import ENTRY_POINT_GROUPS
    from benchmarks_lib.base.entrypoints import CHAPTERS_GROUP, DISTRIBUTION, SUITES_GROUP

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {group: entries for group, entries in project["entry-points"].items() if group.startswith("iobench.")}
    groups = {*ENTRY_POINT_GROUPS.values(), SUITES_GROUP, CHAPTERS_GROUP}
    assert project["name"] == DISTRIBUTION and set(declared) == groups
    for group, entries in declared.items():
        installed = {ep.name: ep.value for ep in entry_points(group=group) if ep.dist and ep.dist.name == DISTRIBUTION}
        assert installed == entries, f"{group}: the installed metadata is stale; reinstall (pip install -e .)"
