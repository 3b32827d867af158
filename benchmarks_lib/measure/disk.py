"""Bytes allocated on disk and inodes used by an output (a file or a directory tree)."""

from __future__ import annotations

import os
import stat
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


def scan_files(path: str | Path) -> list[tuple[str, int]]:
    """:func:`list_files` as (path, inode) pairs, sorted by path: the inodes come with the directory entries (no stat
    per file, where the filesystem gives the entries' types)."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    if stat.S_ISREG(st.st_mode):
        return [(str(path), st.st_ino)]
    out: list[tuple[str, int]] = []
    folders = [str(path)]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                out.append((entry.path, entry.inode()))
    return sorted(out)


def disk_usage(path: str | Path) -> DiskUsage:
    """Bytes (logical and allocated) of the regular files under ``path`` (or ``path`` itself), and its inodes (every
    entry: files, folders, links), from the directory entries (one ``lstat`` per regular file)."""
    top = os.lstat(path)
    if not stat.S_ISDIR(top.st_mode):
        regular = stat.S_ISREG(top.st_mode)
        return DiskUsage(top.st_size if regular else 0, top.st_blocks * 512 if regular else 0, 1)
    logical = allocated = 0
    inodes = 1
    folders = [str(path)]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            inodes += 1
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                st = entry.stat(follow_symlinks=False)
                logical += st.st_size
                allocated += st.st_blocks * 512
    return DiskUsage(logical, allocated, inodes)
