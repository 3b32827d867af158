"""Where things are: the source checkout holding this package, its committed reference run, and where runs and
their scratch data go when nobody says. The runner, the chapters and the book read them here (the runner never
imports the book)."""

from __future__ import annotations

import os
from pathlib import Path

#: the source checkout this package is imported from (for an installed package: the site-packages directory)
ROOT = Path(__file__).resolve().parents[2]
#: the committed reference run (``standard`` profile): the published book's numbers, shown beside the reader's
REFERENCE = ROOT / "reference"
#: where runs go and where their scratch data live, relative to the working directory, unless told otherwise
RESULTS_DIR = "results"
SCRATCH_DIR = ".iobench-scratch"
#: the environment variable naming the scratch directory (``--scratch-dir`` and ``scratch_dir`` win over it)
SCRATCH_ENV = "IOBENCH_SCRATCH"


def cache_dir() -> Path:
    """iobench's cache on this machine, shared by its runs and kept between them (``$XDG_CACHE_HOME/iobench-book``,
    else ``~/.cache/iobench-book``): what is costly to make and the same for every run (the environments of
    ``--versions``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "iobench-book"


def is_checkout(root: Path = ROOT) -> bool:
    """True for a source checkout with the book's sources (``_config.yml``), not an installed package."""
    return (root / "_config.yml").exists()


def resolve_scratch_root(given: str | Path | None = None) -> Path:
    """The scratch directory: ``given``, else ``$IOBENCH_SCRATCH``, else ``.iobench-scratch`` here."""
    return Path(given or os.environ.get(SCRATCH_ENV, SCRATCH_DIR))


def checkout_dirs() -> tuple[Path, Path]:
    """Where a notebook's runs go when it names none: ``results/`` and ``.iobench-scratch/`` of the
    source checkout holding this package (wherever the notebook runs from: JupyterLab starts it in
    ``notebooks/``), or of the working directory for an installed package."""
    base = ROOT if is_checkout() else Path.cwd()
    return base / RESULTS_DIR, base / SCRATCH_DIR


def shown_path(path: str | Path) -> str:
    """A path as the book prints it, never a path of the reader's machine: as given where it was given relative
    (``reference``, ``~/runs``), relative to the working directory or the checkout where it lies inside one
    (``results/vm/writers-quick-...``), else ``…/`` and its last part (a run directory by its run id)."""
    text = str(path)
    given = Path(text)
    if not given.is_absolute():
        return text
    resolved = given.resolve()
    for base in (Path.cwd(), ROOT):
        if base.resolve().parent != base.resolve() and resolved.is_relative_to(base.resolve()):
            return str(resolved.relative_to(base.resolve())) or "."
    return f"\u2026/{given.name}" if given.name else "\u2026"


__all__ = ["REFERENCE", "RESULTS_DIR", "ROOT", "SCRATCH_DIR", "SCRATCH_ENV", "cache_dir", "checkout_dirs",
           "is_checkout", "resolve_scratch_root", "shown_path"]
