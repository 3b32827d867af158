"""Write a parameterized notebook from a compact cell list (keeps notebooks output-free).

Usage from Python: make_notebook(path, cells) where cells is a list of ("md"|"code"|"params", source).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat


def make_notebook(path: str | Path, cells: list[tuple[str, str]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, source in cells:
        source = source.strip("\n")
        if kind == "md":
            nb.cells.append(nbformat.v4.new_markdown_cell(source))
        else:
            cell = nbformat.v4.new_code_cell(source)
            if kind == "params":
                cell.metadata["tags"] = ["parameters"]
            nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    nbformat.write(nb, str(path))


if __name__ == "__main__":
    sys.exit("import make_notebook from this module")
