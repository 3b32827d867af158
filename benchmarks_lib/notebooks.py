"""The book's notebooks, read and never executed: the chapters in ``_toc.yml`` order, the source of a cell by its
tag, the names a ``parameters`` cell assigns, the suite a chapter measures, the run an executed copy shows. The
book build, its generated pages and the tests all read them here."""

from __future__ import annotations

import ast
import contextlib
import json
import re
from functools import cache
from pathlib import Path

from .paths import ROOT
from .specs import SpecError

#: where ``_toc.yml`` lists the executed chapters
EXECUTED = "book/executed/"


@cache
def chapter_notebooks(root: Path = ROOT) -> tuple[str, ...]:
    """The chapters that are executed notebooks, in the order of ``_toc.yml`` (the one list of chapters), read
    when first asked for (never on import)."""
    import yaml

    if not (root / "_toc.yml").exists():  # an installed package without the book's sources
        return ()
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", []) if "file" in c]
    return tuple(f[len(EXECUTED):] for f in files
                 if f.startswith(EXECUTED) and (root / "notebooks" / f"{f[len(EXECUTED):]}.ipynb").exists())


def tagged_source(path: Path, tag: str) -> str:
    """The source of a notebook's first cell tagged ``tag`` ('' when there is none)."""
    nb = json.loads(path.read_text())
    for cell in nb.get("cells", []):
        if tag in cell.get("metadata", {}).get("tags", []):
            return "".join(cell["source"])
    return ""


def assignments(path: Path, tag: str) -> dict[str, ast.expr]:
    """Name -> value expression of the assignments in a notebook's cell tagged ``tag`` (read, never executed)."""
    tree = ast.parse(tagged_source(path, tag))
    return {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def notebook_suite(path: Path) -> str | None:
    """The suite a chapter notebook measures: the name in its one ``run_or_load("<suite>", ...)`` call; None for a
    chapter that measures nothing and reads the recorded runs instead (``compare``)."""
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb.get("cells", []) if c.get("cell_type") == "code")
    names = set(re.findall(r"run_or_load\(\s*[\"']([\w-]+)[\"']", code))
    if not names and "run_or_load(" not in code:
        return None
    if len(names) != 1:
        raise SpecError(f"notebook {path.name} must call run_or_load exactly once with a suite name; found {names}")
    return names.pop()


def notebook_parameters(path: Path) -> list[str]:
    """The names assigned in a notebook's cell tagged ``parameters``."""
    return list(assignments(path, "parameters"))


def executed_run_id(path: Path) -> str | None:
    """The run an executed notebook shows: the ``RUN_ID`` papermill injected, or the run directory's name when
    it was drawn from a recorded run (``LOAD_RUN``, as ``--from`` injects it); None when neither is a literal."""
    injected = assignments(path, "injected-parameters") if path.exists() else {}
    for key in ("RUN_ID", "LOAD_RUN"):
        with contextlib.suppress(ValueError, TypeError):
            value = ast.literal_eval(injected[key]) if key in injected else None
            if isinstance(value, str) and value:
                return value if key == "RUN_ID" else Path(value).name
    return None


__all__ = ["EXECUTED", "assignments", "chapter_notebooks", "executed_run_id", "notebook_parameters", "notebook_suite",
           "tagged_source"]
