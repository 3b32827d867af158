"""The book's notebooks, read and never executed: the declared chapters' notebooks in the book's order, where each
template is, the table of contents they make, the source of a cell by its tag, the names a ``parameters`` cell
assigns, the suite a notebook measures, the run an executed copy shows. The book build, its generated pages and the
tests all read them here."""

from __future__ import annotations

import ast
import contextlib
import json
import re
from pathlib import Path

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.chapters.chapter import chapter_named, chapters

#: where the book's pages of executed chapters are (and the table of contents generated with them)
EXECUTED = "book/executed/"
#: the part of ``_toc.yml`` that the declared chapters fill
CHAPTERS_CAPTION = "Chapters"


def chapter_notebooks() -> tuple[str, ...]:
    """Every declared chapter's notebook, in the book's order (``chapters.chapter.chapters``: the one list of
    chapters), read when first asked for (never on import)."""
    return tuple(chapter.notebook for chapter in chapters())


def template(name: str, root: Path) -> Path:
    """The notebook the book executes for chapter ``name``: ``root/notebooks/<name>.ipynb``, or the one a chapter's
    own package ships."""
    return chapter_named(name).template(root)


def table_of_contents(root: Path) -> dict:
    """The book's table of contents: ``root/_toc.yml`` with every declared chapter, in the book's order, in its part
    captioned "Chapters" (``book/executed/<notebook>``)."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    parts = [part for part in toc.get("parts", []) if part.get("caption") == CHAPTERS_CAPTION]
    if len(parts) != 1:
        raise SpecError(f"{root / '_toc.yml'} must have one part captioned {CHAPTERS_CAPTION!r} (the chapters' place); "
                        f"it has {len(parts)}")
    parts[0]["chapters"] = [{"file": EXECUTED + name} for name in chapter_notebooks()]
    return toc


def write_table_of_contents(root: Path, out_dir: Path) -> Path:
    """The table of contents the book is built with (:func:`table_of_contents`), written into ``out_dir``."""
    import yaml

    path = out_dir / "_toc.yml"
    path.write_text(yaml.safe_dump(table_of_contents(root), sort_keys=False))
    return path


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


__all__ = ["CHAPTERS_CAPTION", "EXECUTED", "assignments", "chapter_notebooks", "executed_run_id", "notebook_parameters",
           "notebook_suite", "table_of_contents", "tagged_source", "template", "write_table_of_contents"]
