"""Scratch directories: created by us, marked, and the only things we ever delete.

Every deletion in the project goes through :func:`remove_tree`. It deletes a path only when
the path (resolved, symlinks not followed) lies inside a directory that carries our marker
file, a marker that only :func:`create_marked_dir` writes, and only into a directory it has
just created itself. A directory that exists already is never adopted: :func:`claim_scratch`
refuses it unless it carries our marker (the scratch of an earlier, killed run of ours).

A claimed scratch directory is locked (``flock`` on its marker) for as long as its claimant runs, so a second
run can never empty the live scratch of the first; the kernel drops the lock when the process ends, even on
``kill -9``, so no lock outlives its run. :func:`hold_lock` is the same lock on any file (a run's ``.lock``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks_lib.base.specs import SpecError

MARKER = ".iobench-scratch"
MARKER_TEXT = "created by iobench; everything in this directory may be deleted by iobench\n"
#: the file in a run directory whose lock the one iobench measuring the run holds
RUN_LOCK = ".lock"


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


#: claimed scratch directory -> the descriptor holding its lock (released when the directory is removed)
_HELD: dict[Path, int] = {}


def _lock_holder(fd: int) -> int | None:
    """The pid holding a flock on ``fd``'s file, from /proc/locks (None where it cannot be told)."""
    st = os.fstat(fd)
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if fields[1] == "FLOCK" and fields[5] == device and fields[4] != str(os.getpid()):
                return int(fields[4])
    return None


def hold_lock(path: str | Path, busy: str, create: bool = True) -> int:
    """An exclusive lock on the file ``path`` (created if missing and ``create``), held until the returned
    descriptor is closed or this process ends; a one-line SpecError, ``busy`` and the holder's pid, if another
    process has it."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    fd = os.open(path, flags, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        os.close(fd)
        raise SpecError(f"{busy} by another iobench{f' (pid {holder})' if holder else ''}; wait for it to finish, "
                        "or pick another --run-id or --scratch-dir") from None
    return fd


def claim_scratch(root: str | Path, name: str) -> Path:
    """``root/name`` as a run's scratch, locked until it is removed (or this process ends): created and marked
    now, or ours from a killed run (emptied once locked); a one-line SpecError when another run holds it."""
    path = check_scratch_available(root, name)
    created = not path.exists()
    if created:
        path = create_marked_dir(path)
    try:
        fd = hold_lock(path / MARKER, f"scratch directory {str(path)!r} is in use", create=False)
    except FileNotFoundError:  # its marker removed an instant ago: its run ended
        raise SpecError(f"scratch directory {str(path)!r} was in use by another iobench a moment ago; try again, "
                        "or pick another --scratch-dir or --run-id") from None
    _HELD[path.resolve()] = fd
    if not created:
        clear_dir(path)  # leftovers of a killed run of ours
    return path.resolve()


def release_scratch(path: str | Path) -> None:
    """Drop the lock :func:`claim_scratch` took on ``path`` (nothing if it holds none)."""
    fd = _HELD.pop(Path(path).resolve(), None)
    if fd is not None:
        os.close(fd)


def claim_run(run_dir: Path, scratch_root: Path, run_id: str) -> tuple[int, Path]:
    """The run's lock (``<run>/.lock``) and its claimed, locked scratch directory: one iobench measures a run at a
    time, and none empties another's live scratch. Taken in the order that leaves nothing behind when refused:
    an existing run's lock, the scratch, then a new run's directory (a refusal removes the scratch it made)."""
    busy = f"run {run_dir.name!r} ({str(run_dir)!r}) is being measured"
    lock = hold_lock(run_dir / RUN_LOCK, busy) if run_dir.is_dir() else None
    try:
        scratch = claim_scratch(scratch_root, run_id)
    except BaseException:
        if lock is not None:
            os.close(lock)
        raise
    if lock is None:
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            lock = hold_lock(run_dir / RUN_LOCK, busy)
        except BaseException:
            remove_tree(scratch, scratch)
            raise
    return lock, scratch


def owning_scratch(path: Path) -> Path:
    """The nearest marked ancestor of ``path`` (or ``path`` itself), resolved."""
    for candidate in (path, *path.parents):
        if is_marked(candidate):
            return candidate
    raise ScratchError(f"refusing to delete {path}: it is not inside a directory iobench created ({MARKER})")


#: a tree that a dying process still writes into or removes from (a stopped case's workers, killed with their
#: parent; a Dask worker removing its own files) is removed again after a pause, at most this many times
REMOVE_TRIES, REMOVE_PAUSE_S = 50, 0.1


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
        for attempt in range(REMOVE_TRIES):  # never follows symlinks inside the tree (it unlinks them)
            try:
                shutil.rmtree(target)
                break
            except OSError as exc:  # a process of a stopped case, dying, still adding or removing files (a Dask
                # worker its own): once it is gone
                if exc.errno not in (errno.ENOTEMPTY, errno.ENOENT) or attempt == REMOVE_TRIES - 1:
                    raise
                if not target.exists():
                    break
                time.sleep(REMOVE_PAUSE_S)
        release_scratch(target)
    elif target.exists():
        target.unlink()


def clear_dir(path: str | Path, scratch: str | Path | None = None) -> None:
    """Empty a directory inside scratch (or scratch itself), keeping it and its marker."""
    for child in Path(path).iterdir():
        if child.name != MARKER:
            remove_tree(child, scratch)
