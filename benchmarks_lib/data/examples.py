"""Real volumes that ship inside an installed package, named as a dataset without a path: ``example:NAME``.

They stand beside the synthetic datasets (:mod:`.datasets`) as what those imitate: ``frog_tissues`` is a tissue
segmentation, ``channels`` a geological facies model, both categorical like ``labels``. The file is found in the
package's folder with ``importlib`` (the package is not imported here); a row names it by its label
(``example:frog_tissues``), never by the folder it was installed in.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from benchmarks_lib.base.specs import SpecError

SCHEME = "example:"


@dataclass(frozen=True)
class Example:
    """A file in a package's folder: where it is, the array in it, and the synthetic dataset it is like."""

    package: str
    file: str
    inner: str
    #: the synthetic dataset (``datasets.DATASETS``) of the same kind: its twin
    kind: str
    description: str
    install_hint: str


_PYVISTA = "pip install 'iobench-book[zvtk]'  (pyvista)"
EXAMPLES = {
    "frog_tissues": Example("pyvista", "examples/frog_tissues.vti", "MetaImage", "labels",
                            "tissue segmentation of a frog, 136x470x500 uint8, 26 labels "
                            "(pyvista.examples.frogtissuesfile)", _PYVISTA),
    "channels": Example("pyvista", "examples/channels.vti", "facies", "labels",
                        "geological facies model, 100x250x250 int64, 5 values (pyvista.examples.channelsfile)",
                        _PYVISTA),
}
ALLOWED_EXAMPLES = ", ".join(SCHEME + name for name in EXAMPLES)


def is_example(value: object) -> bool:
    return isinstance(value, str) and value.startswith(SCHEME)


def example_of(text: str) -> tuple[str, Example]:
    """(name, declaration) of ``example:NAME``; an unknown name is refused."""
    name = text[len(SCHEME):] if is_example(text) else text
    if name not in EXAMPLES:
        raise SpecError(f"dataset {text!r} is unknown; allowed examples: {ALLOWED_EXAMPLES}")
    return name, EXAMPLES[name]


def _installed(example: Example) -> tuple[bool, Path | None]:
    """(the package is installed, the file in its folder or None), without importing the package."""
    spec = importlib.util.find_spec(example.package)
    folders = [Path(f) for f in (spec.submodule_search_locations or [])] if spec is not None else []
    return bool(folders), next((f / example.file for f in folders if (f / example.file).is_file()), None)


def example_missing(text: str) -> str | None:
    """Why ``example:NAME`` cannot be found here (its package is not installed, or lacks the file), or None."""
    name, example = example_of(text)
    installed, path = _installed(example)
    if not installed:
        return f"dataset {SCHEME}{name} needs {example.package}, which is not installed: {example.install_hint}"
    return None if path else f"dataset {SCHEME}{name}: the installed {example.package} has no {example.file}"


def example_path(text: str) -> Path:
    """The file that ``example:NAME`` names (read-only: a package's own file); a SpecError when it is missing."""
    if why := example_missing(text):
        raise SpecError(why)
    path = _installed(example_of(text)[1])[1]
    assert path is not None
    return path


__all__ = ["ALLOWED_EXAMPLES", "EXAMPLES", "SCHEME", "Example", "example_missing", "example_of", "example_path",
           "is_example"]
