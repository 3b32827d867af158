"""The package's spine: no import cycles between its modules, no module importing one of a higher layer, and no
module writing into ``os.environ`` (a child's environment is a dict handed to it, never our own process's).

Every ``import`` of ``benchmarks_lib`` is read with ``ast`` (those inside functions and under ``TYPE_CHECKING`` too,
relative and absolute), so a cycle hidden in a function-local import fails here as surely as one at the top of a
module. A package's ``__init__`` may import its own submodules (it is the package); a submodule importing its
package's ``__init__`` back is a cycle like any other. A module named by a string (the entry point of an adapter,
suite or chapter, ``fresh.call("module:function")``) is no import: a registry names the modules above it that way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

PACKAGE = "benchmarks_lib"
SOURCE = Path(__file__).resolve().parent.parent / PACKAGE

#: bottom to top: a module may import modules of its own layer or of a lower one, never of a higher one.
#: A name ending in "." is a package prefix (every module under it); the longest matching name wins.
LAYERS: list[tuple[str, list[str]]] = [
    ("base", ["base."]),
    ("measure", ["measure."]),
    ("data", ["data."]),
    ("records", ["records."]),
    ("adapters", ["adapters."]),
    ("inputs and servers", ["inputs.", "servers."]),
    ("suites", ["suites."]),
    ("rules", ["rules."]),
    ("run", ["run."]),
    ("advise", ["advise."]),
    ("chapters", ["chapters."]),
    ("book", ["book."]),
    ("command line", ["cli.", "__main__", ""]),
]


def module_name(path: Path) -> str:
    """``servers/__init__.py`` -> ``servers``; ``cli.py`` -> ``cli``; the package's own ``__init__.py`` -> ``""``."""
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(SOURCE.rglob("*.py"))}


def _resolve(name: str, imported: list[str]) -> set[str]:
    """The modules that ``from <name> import <imported>`` (or ``import <name>``) reaches: the names that are
    submodules, else the module ``name`` itself."""
    known = modules()
    targets = {f"{name}.{item}".strip(".") for item in imported if f"{name}.{item}".strip(".") in known}
    if len(targets) < len(imported) or not imported:
        while name not in known:  # `import benchmarks_lib.a.b.c` where c is an attribute
            name = name.rpartition(".")[0]
        targets.add(name)
    return targets


def import_statements(name: str) -> Iterator[tuple[str, list[str]]]:
    """(module of the package, names imported from it; [] for ``import x``) for every import of the package in
    module ``name``'s source, at any depth."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    yield alias.name.removeprefix(PACKAGE).lstrip("."), []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)]
                yield ".".join([*base, *([node.module] if node.module else [])]), [a.name for a in node.names]
            elif node.module and (node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
                yield node.module.removeprefix(PACKAGE).lstrip("."), [a.name for a in node.names]


def imports_of(name: str) -> set[str]:
    """The modules of the package that module ``name`` imports, anywhere in its source."""
    found = set().union(*(_resolve(target, items) for target, items in import_statements(name)))
    found.discard(name)
    return found


@cache
def graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(imports_of(name)) for name in modules()}


def find_cycle(edges: dict[str, frozenset[str]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or None (an iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for start in sorted(edges):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(edges[start]))]
        state[start] = 1
        while stack:
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(step) == 1:
                return [*path[path.index(step):], step]
            elif step not in state:
                state[step] = 1
                path.append(step)
                stack.append(iter(sorted(edges[step])))
    return None


def layer_of(name: str) -> int:
    """The index in LAYERS of the longest entry naming ``name`` (a module, or a package prefix ending in ".")."""
    best, index = -1, None
    for position, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            prefix = entry.rstrip(".")
            matches = name == prefix or (entry.endswith(".") and name.startswith(entry))
            if matches and len(prefix) > best:
                best, index = len(prefix), position
    assert index is not None, f"module {name or PACKAGE!r} is in no layer: add it to LAYERS in {Path(__file__).name}"
    return index


def test_every_module_is_read():
    assert {"cli", "run.runner", "servers", "servers.link", "adapters.base", ""} <= set(modules())
    assert "measure.probe" in graph()["measure"]  # a package __init__ importing its submodule is seen
    assert "run.runner" in imports_of("cli.run")


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"})}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": frozenset({"b"}), "b": frozenset()}) is None


def test_no_import_cycles():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_every_module_has_a_layer():
    for name in modules():
        layer_of(name)


def test_no_module_imports_upward():
    upward = [
        f"{name} ({LAYERS[layer_of(name)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for name, targets in sorted(graph().items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(name)
    ]
    assert not upward, "imports running up the layers:\n" + "\n".join(upward)


def imported_names(name: str) -> set[str]:
    """The names module ``name`` binds at its top level by importing them (what it re-exports, for a package)."""
    tree = ast.parse(modules()[name].read_text())
    return {(alias.asname or alias.name).partition(".")[0] for node in tree.body
            if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names}


def test_no_module_takes_a_re_export_from_its_own_package():
    """A submodule imports what its package's ``__init__`` merely re-exports from where it is defined: the
    ``__init__`` imports its submodules, so going through it is a cycle waiting to happen."""
    found = []
    for name, path in sorted(modules().items()):
        package = name.rpartition(".")[0] if path.name != "__init__.py" else None
        if package is None or not package:
            continue
        passed_on = imported_names(package)
        found += [f"{name} imports {item} from {package} (re-exported there)" for target, items
                  in import_statements(name) if target == package for item in items if item in passed_on]
    assert not found, "\n".join(found)


#: what changes a process's own environment
_ENV_WRITES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
            and node.value.id == "os") or (isinstance(node, ast.Name) and node.id == "environ")


def _writes_environ(node: ast.AST) -> bool:
    if isinstance(node, ast.Assign | ast.Delete):
        return any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return isinstance(node.target, ast.Subscript) and _is_environ(node.target.value)
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    method, owner = node.func.attr, node.func.value
    is_os = isinstance(owner, ast.Name) and owner.id == "os"
    return (method in _ENV_WRITES and _is_environ(owner)) or (method in ("putenv", "unsetenv") and is_os)


def environ_writes(source: str) -> list[int]:
    """The lines of ``source`` that write into this process's environment (``os.environ[k] = v``, ``del``,
    ``os.environ.update/setdefault/pop/clear``, ``os.putenv``/``os.unsetenv``)."""
    return sorted(node.lineno for node in ast.walk(ast.parse(source)) if _writes_environ(node))


def test_the_environ_check_finds_writes():
    source = ("import os\nos.environ['A'] = '1'\nos.environ.update(B='2')\nos.putenv('C', '3')\n"
              "x = os.environ.get('D')\ndel os.environ['A']\n")
    assert environ_writes(source) == [2, 3, 4, 6]


def test_no_module_writes_its_own_environment():
    found = [f"{path.relative_to(SOURCE.parent)}:{line}" for path in modules().values()
             for line in environ_writes(path.read_text())]
    assert not found, "os.environ written (pass an env dict to the child instead): " + ", ".join(found)
