"""The run's scratch directory: created by us, marked, and the only thing we ever delete.

Cleanup resolves symlinks and refuses any path outside the run's scratch root; a symlink
inside scratch is removed as a link, never followed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

MARKER = ".iobench-scratch"


class ScratchError(RuntimeError):
    """A deletion was refused because it would reach outside the scratch directory."""


def make_scratch(root: str | Path, name: str) -> Path:
    """Create ``root/name`` (marked as ours) and return its resolved path."""
    base = Path(root).resolve()
    base.mkdir(parents=True, exist_ok=True)
    path = (base / name).resolve()
    if path.parent != base:
        raise ScratchError(f"scratch name {name!r} escapes {base}")
    path.mkdir(exist_ok=True)
    (path / MARKER).touch()
    return path


def is_within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def remove_tree(path: str | Path, scratch: str | Path) -> None:
    """Delete ``path`` (inside the marked ``scratch`` directory, or scratch itself)."""
    scratch = Path(scratch).resolve()
    if not (scratch / MARKER).exists():
        raise ScratchError(f"{scratch} is not an iobench scratch directory (no {MARKER}); refusing to delete")
    p = Path(path)
    if p.is_symlink():
        # the link lives in scratch: remove the link only
        if not is_within(p.parent.resolve(), scratch):
            raise ScratchError(f"refusing to delete {p}: outside {scratch}")
        p.unlink()
        return
    target = p.resolve()
    if not is_within(target, scratch):
        raise ScratchError(f"refusing to delete {target}: outside {scratch}")
    if not target.exists():
        return
    if target.is_dir():
        # rmtree never follows symlinks inside the tree (it unlinks them)
        assert shutil.rmtree.avoids_symlink_attacks or os.name != "posix"
        shutil.rmtree(target)
    else:
        target.unlink()


def clear_dir(path: str | Path, scratch: str | Path) -> None:
    """Empty a directory inside scratch, keeping the directory itself."""
    for child in Path(path).iterdir():
        if child.name != MARKER:
            remove_tree(child, scratch)
