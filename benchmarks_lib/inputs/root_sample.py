"""Seed 004's TTree sample file: its layout, its name, writing it once and checking it.

The sample follows seed 004's ``create_sample_file``: a TTree ``T`` of N entries x B branches,
each branch a fixed array of 100 elements per entry, element types cycling over float, double,
int, short; random values; ROOT's default compression. It is written by real ROOT through a
compiled filler or by uproot: the remote adapters of those names (``write_sample``), picked from
the registry, in a fresh process so that ROOT's state in the caller stays untouched.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.data.input_formats import ARRAY_LENGTH, ELEMENT_TYPES, TREE_NAME, entry_bytes
from benchmarks_lib.inputs import check_free
from benchmarks_lib.measure import fresh
from benchmarks_lib.records.store import write_atomic

#: ROOT's default TTree auto-flush: a cluster every ~30 MB of compressed data
ROOT_DEFAULT_AUTO_FLUSH = -30_000_000
#: remote adapters that write the sample (``RemoteReader.write_sample``)
WRITERS = ("root", "uproot")


@dataclass(frozen=True)
class SampleFile:
    """A written sample file and how it was made."""

    path: str
    entries: int
    branches: int
    auto_flush: int
    writer: str
    seed: int
    file_bytes: int
    entry_bytes: int
    seconds: float
    #: per-branch sums of the values written (and of their magnitudes): what a full read must reproduce
    branch_sums: list[float]
    branch_abs_sums: list[float]


def sample_bytes_bound(entries: int, branches: int) -> int:
    """An upper bound of a sample file's size: its entry bytes (random values barely compress) plus
    ROOT's headers."""
    return entry_bytes(entries, branches) + 2**20 + 4096 * branches


def _check_sample_args(entries: int, branches: int, auto_flush: int | None, writer: str) -> int:
    if not isinstance(entries, int) or entries < 1:
        raise SpecError(f"entries {entries!r} must be a positive integer")
    if not isinstance(branches, int) or branches < 1:
        raise SpecError(f"branches {branches!r} must be a positive integer")
    if writer not in WRITERS:
        raise SpecError(f"sample writer {writer!r} is unknown; allowed: {', '.join(WRITERS)}")
    if auto_flush is None:
        return ROOT_DEFAULT_AUTO_FLUSH
    if not isinstance(auto_flush, int) or auto_flush == 0:
        raise SpecError(f"auto_flush {auto_flush!r} must be a non-zero integer (entries if > 0, bytes if < 0)")
    return auto_flush


def create_sample_file(path: str | Path, entries: int, branches: int, auto_flush: int | None = None, *,
                       seed: int = 1, writer: str = "root") -> SampleFile:
    """Write seed 004's sample TTree to ``path`` with ROOT (default) or uproot, in this process.

    ``auto_flush`` as in ``TTree::SetAutoFlush``: > 0 entries per cluster, < 0 compressed bytes
    per cluster, None for ROOT's default (-30 MB). The per-branch sums of the values written are
    recorded, for the reads to check against.
    """
    from benchmarks_lib.adapters import adapter_class
    from benchmarks_lib.measure import measure

    flush = _check_sample_args(entries, branches, auto_flush, writer)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_sample = adapter_class(writer, "remote").write_sample
    made = measure(lambda: write_sample(path, entries, branches, flush, seed), sample=False)
    sums, abs_sums = made.value
    return SampleFile(str(path), entries, branches, flush, writer, seed, path.stat().st_size,
                      entry_bytes(entries, branches), made.elapsed_s, sums, abs_sums)


def sums_match(read: list[float] | None, sample: SampleFile) -> bool:
    """True when a full read's per-branch sums equal the writer's, to summation-order rounding (1e-12 of
    the sum of magnitudes: integer sums, exact below 2**53, must match to well under one unit)."""
    if read is None or len(read) != len(sample.branch_sums):
        return False
    return all(abs(r - w) <= 1e-12 * max(1.0, a)
               for r, w, a in zip(read, sample.branch_sums, sample.branch_abs_sums, strict=True))


def sample_file_name(entries: int, branches: int, auto_flush: int | None, writer: str = "root", seed: int = 1) -> str:
    flush = ROOT_DEFAULT_AUTO_FLUSH if auto_flush is None else auto_flush
    return f"sample-{writer}-e{entries}-b{branches}-af{flush}-s{seed}.root"


def root_file_end(path: str | Path) -> int | None:
    """``fEND`` from a ROOT file's header (the file's length once closed), or None when it is no ROOT file."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 16 or head[:4] != b"root":
        return None
    version = int.from_bytes(head[4:8], "big")
    if version >= 1_000_000:
        return int.from_bytes(head[12:20], "big") if len(head) >= 20 else None
    return int.from_bytes(head[12:16], "big")


def check_sample_file(target: Path, info: Path, expected: dict) -> SampleFile | None:
    """The recorded sample when ``target`` is intact: its record parses and matches ``expected``,
    and the file has the recorded size, which its ROOT header agrees with. None otherwise."""
    try:
        sample = SampleFile(**json.loads(info.read_text()))
        size = target.stat().st_size
    except (OSError, ValueError, TypeError):
        return None
    if any(getattr(sample, k) != v for k, v in expected.items()):
        return None
    if size != sample.file_bytes or root_file_end(target) != size or len(sample.branch_sums) != sample.branches:
        return None
    return sample


def _discard(path: Path) -> None:
    """Remove a partial or bad input of ours (only inside an iobench scratch directory)."""
    from benchmarks_lib.base.scratch import ScratchError, remove_tree

    if path.exists() or path.is_symlink():
        with contextlib.suppress(ScratchError):
            remove_tree(path)


def ensure_sample_file(directory: str | Path, entries: int, branches: int, auto_flush: int | None = None, *,
                       seed: int = 1, writer: str = "root") -> SampleFile:
    """The sample file for these parameters in ``directory``, written once and verified.

    It is written to a temporary name in a fresh process, verified there (a readable tree with
    the expected entries and branches, the size on disk), and only then renamed into place;
    its record (``.json``) likewise. A file already there is reused only when
    :func:`check_sample_file` accepts it; otherwise it is written again.
    """
    flush = _check_sample_args(entries, branches, auto_flush, writer)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / sample_file_name(entries, branches, auto_flush, writer, seed)
    info = target.with_suffix(".json")
    expected = {"entries": entries, "branches": branches, "auto_flush": flush, "writer": writer, "seed": seed,
                "path": str(target)}
    with open(directory / ".sample.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sample = check_sample_file(target, info, expected)
        if sample is not None:
            return sample
        for stale in (info, target):  # a bad input of an earlier attempt: it must not take disk space now
            _discard(stale)
        check_free(directory, sample_bytes_bound(entries, branches))
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            # write and verify in a fresh process: ROOT's state in this one stays untouched
            made = fresh.call(f"{__name__}:write_checked_sample",
                              {"path": str(tmp), "entries": entries, "branches": branches,
                               "auto_flush": auto_flush, "seed": seed, "writer": writer})
            if tmp.stat().st_size != made["file_bytes"] or root_file_end(tmp) != made["file_bytes"]:
                raise OSError(f"sample file {tmp} is {tmp.stat().st_size} bytes, "
                              f"the writer reported {made['file_bytes']}")
            made["path"] = str(target)
            os.replace(tmp, target)
            write_atomic(info, lambda f: f.write(json.dumps(made).encode()))  # the record last: checked on use
        finally:
            _discard(tmp)
        sample = check_sample_file(target, info, expected)
        if sample is None:
            raise OSError(f"sample file {target} failed its check right after it was written")
        return sample


def write_checked_sample(**kwargs: Any) -> dict:
    """Write the sample and check it reads back (a tree with the expected entries and branches, read
    by the writer's library); runs in the fresh process :func:`ensure_sample_file` starts."""
    from benchmarks_lib.adapters import adapter_class

    made = create_sample_file(**kwargs)
    got = adapter_class(made.writer, "remote").sample_shape(Path(made.path))
    if got != (made.entries, made.branches):
        raise OSError(f"sample file {made.path} reads back as (entries, branches) {got}, "
                      f"expected {(made.entries, made.branches)}")
    return asdict(made)


__all__ = ["ARRAY_LENGTH", "ELEMENT_TYPES", "ROOT_DEFAULT_AUTO_FLUSH", "TREE_NAME", "WRITERS", "SampleFile",
           "check_sample_file", "create_sample_file", "ensure_sample_file", "entry_bytes", "root_file_end",
           "sample_bytes_bound", "sample_file_name", "sums_match"]
