"""Scratch directories: created by us, marked, and the only things we ever delete.

Every deletion in the project goes through :func:`remove_tree`. It deletes a path only when
the path (resolved, symlinks not followed) lies inside a directory that carries our marker
file, a marker that only :func:`create_marked_dir` writes, and only into a directory it has
just created itself. A directory that exists already is never adopted: :func:`claim_scratch`
refuses it unless it carries our marker (the scratch of an earlier, killed run of ours).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .specs import SpecError

MARKER = ".iobench-scratch"
MARKER_TEXT = "created by iobench; everything in this directory may be deleted by iobench\n"


class ScratchError(RuntimeError):
    """A deletion was refused: it would reach what iobench did not create."""


def is_within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def is_marked(path: Path) -> bool:
    """True when ``path`` is a real directory (not a link) holding our marker file."""
    marker = path / MARKER
    return path.is_dir() and not path.is_symlink() and marker.is_file() and not marker.is_symlink()


def create_marked_dir(path: str | Path) -> Path:
    """Create ``path`` (it must not exist; its parents may be created) and mark it as ours."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir()
    except FileExistsError:
        raise SpecError(f"{str(path)!r} exists already and was not created by iobench; refusing to use it "
                        "(pick another --scratch-dir or --run-id)") from None
    (path / MARKER).write_text(MARKER_TEXT)
    return path.resolve()


def check_scratch_available(root: str | Path, name: str) -> Path:
    """``root/name`` if we may use it as scratch (absent, or marked as ours); else a one-line SpecError."""
    base = Path(root).absolute()
    path = base / name
    if path.parent != base or name in ("", ".", ".."):
        raise SpecError(f"scratch name {name!r} escapes {str(base)!r}")
    if path.is_symlink() or (path.exists() and not is_marked(path)):
        raise SpecError(f"{str(path)!r} exists and was not created by iobench (no {MARKER} marker); "
                        "refusing to use or delete it: pick another --scratch-dir or --run-id")
    return path


def make_temp_scratch(prefix: str = "iobench-") -> Path:
    """A new marked directory under the system's temporary directory (``mkdtemp``: ours, never adopted)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    (path / MARKER).write_text(MARKER_TEXT)
    return path.resolve()


def claim_scratch(root: str | Path, name: str) -> Path:
    """``root/name`` as a run's scratch: created and marked now, or ours from a killed run (emptied)."""
    path = check_scratch_available(root, name)
    if path.exists():
        clear_dir(path)  # leftovers of a killed run of ours
        return path.resolve()
    return create_marked_dir(path)


def owning_scratch(path: Path) -> Path:
    """The nearest marked ancestor of ``path`` (or ``path`` itself), resolved."""
    for candidate in (path, *path.parents):
        if is_marked(candidate):
            return candidate
    raise ScratchError(f"refusing to delete {path}: it is not inside a directory iobench created ({MARKER})")


def remove_tree(path: str | Path, scratch: str | Path | None = None) -> None:
    """Delete ``path``, a file or directory inside a marked scratch directory (or the scratch itself).

    ``scratch`` names the marked directory it must lie in; by default the nearest marked
    ancestor. A symlink is removed as a link, never followed.
    """
    p = Path(path).absolute()
    parent = p.parent.resolve()
    target = parent / p.name  # the entry itself: its parent resolved, a final link left as a link
    root = Path(scratch).resolve() if scratch is not None else owning_scratch(target if target.is_dir()
                                                                                and not target.is_symlink()
                                                                                else parent)
    if not is_marked(root):
        raise ScratchError(f"{root} is not an iobench scratch directory (no {MARKER}); refusing to delete")
    if not is_within(target, root):
        raise ScratchError(f"refusing to delete {target}: outside {root}")
    if target.is_symlink():
        target.unlink()
    elif target.is_dir():
        assert shutil.rmtree.avoids_symlink_attacks or os.name != "posix"
        shutil.rmtree(target)  # never follows symlinks inside the tree (it unlinks them)
    elif target.exists():
        target.unlink()


def clear_dir(path: str | Path, scratch: str | Path | None = None) -> None:
    """Empty a directory inside scratch (or scratch itself), keeping it and its marker."""
    for child in Path(path).iterdir():
        if child.name != MARKER:
            remove_tree(child, scratch)
