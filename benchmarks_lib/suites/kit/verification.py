"""Read-back verification: every written store is read back, by a different library where one
exists, and compared with what was handed to the writer: whole (its checksum); or, for a point's later writes,
proven byte for byte identical to the store a whole read-back proved (``identical``: :class:`Proven`), else read
back whole; or in the quick profile of the remote and parallel suites, a sample of its chunks (``verified_scope``)."""

from __future__ import annotations

import hashlib
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks_lib.adapters import backend_status, make_adapter, readers_of
from benchmarks_lib.adapters.base import Adapter, IndependentRead
from benchmarks_lib.base.availability import Unavailable
from benchmarks_lib.base.specs import ArraySpec, parse_codec, parse_dims
from benchmarks_lib.data.datasets import FAST_CHECKSUM, checksum_algorithm, checksum_blocks, same_array
from benchmarks_lib.measure import fresh
from benchmarks_lib.measure.disk import walk_tree
from benchmarks_lib.measure.ledger import phase
from benchmarks_lib.suites.kit.blocks import BlockSource, block_indices

#: profiles whose every measured write is read back whole; the others read back a point's first measured write
#: whole and ``SAMPLE_CHUNKS`` chunks of each later one (rows: ``verified_scope``)
FULL_VERIFY_PROFILES = ("standard", "seed")
SAMPLE_CHUNKS = 4
#: the variable naming the run's own interpreter, given to a worker measuring a library version in an environment of
#: its own (``run.environments``: no second library is installed there): its stores are read back by another library
#: in a process of that interpreter (:func:`verify_elsewhere`)
HARNESS_PYTHON = "IOBENCH_HARNESS_PYTHON"
#: seconds a read-back in the run's own interpreter may take
ELSEWHERE_TIMEOUT_S = 1800
#: the writers (labels) whose stores the run's own interpreter could not read back, and why: not asked again
_NOT_ELSEWHERE: dict[str, str] = {}

#: bytes read at a time by :func:`store_digest`
DIGEST_BLOCK = 8 << 20
if FAST_CHECKSUM == "xxh3":  # a core dependency; a library version's own environment holds numpy alone
    from xxhash import xxh3_128 as _DIGEST
else:  # pragma: no cover - there
    _DIGEST = hashlib.sha256


@dataclass
class Proven:
    """A point's store that a whole read-back proved right: the digest of its files (:func:`store_digest`) and what
    that read-back said. A later store of the point whose files are the same bytes holds the same array, so it is
    verified by the digest alone (``verified_scope`` ``identical``); one that differs is read back whole."""

    digest: str = ""
    check: dict | None = None


def store_digest(path: Path) -> str:
    """A 128-bit digest over a store's files, in the order of their relative names: each name, its size and its
    bytes (xxh3-128, read into one reused buffer: 67 MB in about 5 ms from the page cache, where sha256 took 54 ms;
    sha256 where xxhash is not installed, in a library version's own environment). A store holding anything but
    directories and regular files (a symlink, a FIFO) has no digest ('')."""
    h = _DIGEST()
    buf = bytearray(DIGEST_BLOCK)
    view = memoryview(buf)
    files = _regular_files(str(path))
    if files is None:
        return ""
    for name, full, size in files:
        h.update(f"{name}\0{size}\0".encode())
        with open(os.open(full, os.O_RDONLY | os.O_NOFOLLOW), "rb", buffering=0) as f:
            while n := f.readinto(buf):
                h.update(view[:n])
    return h.hexdigest()


def _regular_files(root: str) -> list[tuple[str, str, int]] | None:
    """(name relative to ``root``, path, size) of every file of a store, in the order of the names' parts; None
    when it holds anything but directories and regular files."""
    top = os.lstat(root)
    if not stat.S_ISDIR(top.st_mode):
        return [("", root, top.st_size)] if stat.S_ISREG(top.st_mode) else None
    out = []
    for name, entry in walk_tree(root, strict=True):
        if entry.is_file(follow_symlinks=False):
            out.append((name, entry.path, entry.stat(follow_symlinks=False).st_size))
        elif not entry.is_dir(follow_symlinks=False):
            return None
    return sorted(out, key=lambda item: item[0].split("/"))


def verifier(writer: Adapter, spec: ArraySpec, store: str = "file") -> str | None:
    """The library that verifies what ``writer`` wrote with ``spec`` to ``store``: the first of
    :func:`~benchmarks_lib.adapters.readers_of` (another library that reads its format, as each adapter declares)
    that is installed and reads this codec and layout; None when there is none. Every suite chooses here."""
    return next((name for name in readers_of(writer, store) if backend_status(name).available
                 and make_adapter(name).is_incompatible(spec, "read") is None), None)


def read_checksum(reader: Adapter, spec: ArraySpec, step: int, algorithm: str = FAST_CHECKSUM) -> str:
    """Read block by block, untimed; return the checksum (made with ``algorithm``)."""
    return checksum_blocks((reader.read(index) for index in block_indices(spec, step)), algorithm)


def verify_scope(profile: str, iteration: int) -> str:
    """``full`` (the whole store read back) for a run's first measured write and in ``FULL_VERIFY_PROFILES``,
    else ``sampled`` (``SAMPLE_CHUNKS`` chunks read back)."""
    return "full" if iteration == 0 or profile in FULL_VERIFY_PROFILES else "sampled"


def sample_regions(spec: ArraySpec, count: int = SAMPLE_CHUNKS) -> list[tuple[slice, ...]]:
    """``count`` chunks of the array (its first, its last, and others at positions seeded by the shape)."""
    grid = [-(-n // c) for n, c in zip(spec.shape, spec.dims.chunks, strict=True)]
    total = math.prod(grid)
    rng = np.random.default_rng(list(spec.shape))
    picks = dict.fromkeys([0, total - 1, *rng.choice(total, size=min(count, total), replace=False).tolist()])
    regions = []
    for flat in list(picks)[:count]:
        starts = np.unravel_index(flat, grid)
        regions.append(tuple(slice(int(s) * c, min((int(s) + 1) * c, n))
                             for s, c, n in zip(starts, spec.dims.chunks, spec.shape, strict=True)))
    return regions


def _read_back(reader: Adapter, spec: ArraySpec, step: int, expected: str, source: BlockSource | None,
               scope: str) -> tuple[bool, str]:
    """(same as written, why not): the whole array's checksum, or (``sampled``) chunks against ``source``."""
    if scope != "sampled" or source is None:
        got = read_checksum(reader, spec, step, checksum_algorithm(expected))
        return got == expected, "" if got == expected else f"checksum mismatch: wrote {expected}, read {got}"
    regions = sample_regions(spec)
    wrong = sum(not same_array(reader.read(ix), source.region(ix)) for ix in regions)
    return not wrong, f"{wrong} of {len(regions)} sampled chunks differ from what was written" if wrong else ""


@phase("verify")
def verify(path: Path, spec: ArraySpec, writer: Adapter, expected: str, step: int, *,
           source: BlockSource | None = None, scope: str = "full", proven: Proven | None = None) -> dict:
    """Read a written store back and compare it with what was written: its checksum (dtype, shape and bytes)
    against ``expected``, or with ``scope`` ``sampled`` (and the ``source`` it was written from) a few chunks.

    With ``proven`` (the point's :class:`Proven`, filled by its first whole read-back that passed) and ``scope``
    ``identical``: verified when the store's files are byte for byte the proven store's, else read back whole.

    The reader is, in order: a different library that reads the format; else the writer's
    ``independent_read`` (file I/O and the codec library, none of the writer's code: always the whole
    array); else the writer itself, and then ``verified_independently`` is False and ``verify_note`` says why.
    ``verified_scope`` says what was compared.
    """
    if scope == "identical":
        if proven is not None and proven.check is not None and proven.digest == store_digest(path):
            return {**proven.check, "verified_scope": "identical"}
        scope = "full"
    check = _verify(path, spec, writer, expected, step, source, scope)
    if (proven is not None and proven.check is None and check["verified"] and check["verified_scope"] == "full"
            and (digest := store_digest(path))):
        proven.digest, proven.check = digest, check
    return check


def _verify(path: Path, spec: ArraySpec, writer: Adapter, expected: str, step: int, source: BlockSource | None,
            scope: str) -> dict:
    name = verifier(writer, spec)
    elsewhere = _NOT_ELSEWHERE.get(writer.label)
    if name is None and elsewhere is None and scope == "full" and (python := os.environ.get(HARNESS_PYTHON)):
        elsewhere = verify_elsewhere(python, path, spec, writer, expected, step)
        if isinstance(elsewhere, dict):
            return elsewhere
        _NOT_ELSEWHERE[writer.label] = elsewhere
    by, note = name or f"{writer.name} independent reader", ""
    try:
        independent = writer.independent_read(path, spec) if name is None else None
        if isinstance(independent, IndependentRead):
            by, scope = independent.by, "full"
            got = checksum_blocks(independent.blocks, checksum_algorithm(expected))
            ok, detail = got == expected, "" if got == expected else f"checksum mismatch: wrote {expected}, read {got}"
        else:
            by = name or writer.name
            if independent:
                note = f"no other installed library reads {writer.format} with {spec.codec}; {independent}"
            reader = make_adapter(by)
            try:
                reader.open_reader(writer.array_path(path) if name else path, spec)
                ok, detail = _read_back(reader, spec, step, expected, source, scope)
            finally:
                reader.close_reader()
        if detail:
            detail = f"{by}: {detail}"
    except Exception as exc:  # a failed read-back is recorded, the measured rows are kept
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        ok, detail = False, f"{by} could not read it back: {type(exc).__name__}: {first}"
    if elsewhere and note:
        note = f"{elsewhere}; {note}"
    return {"verified": ok, "verified_by": by, "verified_independently": not note,
            "verify_note": note, "verify_detail": detail, "verified_scope": scope if source is not None else "full"}


def verify_elsewhere(python: str, path: Path, spec: ArraySpec, writer: Adapter, expected: str,
                     step: int) -> dict | str:
    """:func:`verify` in a fresh process of the run's own interpreter ``python``, where the other libraries are
    installed (this one runs in an environment holding the measured library alone): the whole store read back, for
    each write whose scope is ``full`` (a sampled one is read back here: a process of its own per round would cost
    more than the write). Why it could not be done there (that interpreter does not know the writer, say), for a
    read-back here instead."""
    kwargs = {"path": str(path), "dims": str(spec.dims), "dtype": spec.dtype, "codec": str(spec.codec),
              "writer": writer.label, "format": writer.format, "expected": expected, "step": step}
    try:
        check = fresh.call("benchmarks_lib.suites.kit.verification:verify_here", kwargs, python=python,
                           env={HARNESS_PYTHON: ""}, timeout_s=ELSEWHERE_TIMEOUT_S)
    except (fresh.FreshProcessError, Unavailable) as exc:
        lines = str(exc).strip().splitlines()
        return f"no read-back in the run's own environment ({lines[-1] if lines else type(exc).__name__})"
    return check


def verify_here(path: str, dims: str, dtype: str, codec: str, writer: str, format: str, expected: str,
                step: int) -> dict:
    """:func:`verify` of a store another environment wrote (:func:`verify_elsewhere`); ``format``: the one its writer
    wrote (where an adapter's format depends on its library's version)."""
    adapter = make_adapter(writer)
    adapter.format = format
    return verify(Path(path), ArraySpec(parse_dims(dims), dtype, parse_codec(codec)), adapter, expected, step)


def verify_rows(check: dict, rows: list[dict], extra: dict, target: str = "total") -> list[dict]:
    """Mark the ``target`` rows verified or not; a mismatch adds an error row."""
    for row in rows:
        if row["operation"] == target:
            row.update({k: v for k, v in check.items() if k != "verify_detail"})
    if not check["verified"]:
        rows.append({"operation": "verify", "status": "error", "reason": check["verify_detail"], **extra})
    return rows
