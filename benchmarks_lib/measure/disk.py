"""Bytes allocated on disk and inodes used by an output (a file or a directory tree)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DiskUsage:
    logical_bytes: int
    allocated_bytes: int
    inodes: int


def list_files(path: str | Path) -> list[Path]:
    """Every regular file under ``path`` (or ``path`` itself), without following symlinks."""
    return [Path(f) for f, _ in scan_files(path)]


def walk_tree(root: str, strict: bool = False) -> Iterator[tuple[str, os.DirEntry]]:
    """Every entry under the directory ``root`` with its name relative to it ('/' between parts), links not
    followed, from the directory entries (their types and inodes come without a stat, where the filesystem gives
    them). A folder that cannot be listed is skipped, or with ``strict`` raises."""
    folders = [("", root)]
    while folders:
        prefix, folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            if strict:
                raise
            continue
        for entry in entries:
            yield prefix + entry.name, entry
            if entry.is_dir(follow_symlinks=False):
                folders.append((f"{prefix}{entry.name}/", entry.path))


def scan_files(path: str | Path) -> list[tuple[str, int]]:
    """:func:`list_files` as (path, inode) pairs, sorted by path."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    if stat.S_ISREG(st.st_mode):
        return [(str(path), st.st_ino)]
    return sorted((e.path, e.inode()) for _, e in walk_tree(str(path)) if e.is_file(follow_symlinks=False))


def disk_usage(path: str | Path) -> DiskUsage:
    """Bytes (logical and allocated) of the regular files under ``path`` (or ``path`` itself), and its inodes (every
    entry: files, folders, links), from the directory entries (one ``lstat`` per regular file)."""
    top = os.lstat(path)
    if not stat.S_ISDIR(top.st_mode):
        regular = stat.S_ISREG(top.st_mode)
        return DiskUsage(top.st_size if regular else 0, top.st_blocks * 512 if regular else 0, 1)
    logical = allocated = 0
    inodes = 1
    for _, entry in walk_tree(str(path)):
        inodes += 1
        if entry.is_file(follow_symlinks=False):
            st = entry.stat(follow_symlinks=False)
            logical += st.st_size
            allocated += st.st_blocks * 512
    return DiskUsage(logical, allocated, inodes)
