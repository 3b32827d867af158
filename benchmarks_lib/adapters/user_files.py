"""A person's files are read as data: only regular files, within limits, checked before any library opens them.

A reader library opens whatever a file names: Zarr the files of its store, HDF5 an external link's file, a dataset's
external raw files and a virtual dataset's sources. A FIFO there blocks ``open`` for ever (in a library's thread,
where not even SIGTERM ends it), ``/dev/zero`` reads without end, and a link or an absolute name reaches any file of
the machine (``/etc/passwd`` measured as someone's data). So every file is checked here first, as a run's records
are (:func:`.untrusted.open_regular`):

- the path a person gives (``file:PATH``, ``advise --like``, a mesh) may be a link, to their data: what it names
  must be a regular file, or a directory for a Zarr store (``base.untrusted.source_kind`` and ``regular_file``);
- a Zarr store is read through :func:`checked_store`: every key a regular file inside the store (a link may point
  within it, never out), opened without blocking, metadata files at most :data:`METADATA_MAX_BYTES`; before a run,
  :func:`check_store_tree` looks at every entry of the store (up to :data:`STORE_SCAN_MAX`), so that a chunk that
  is a FIFO is refused before anything is created;
- an HDF5 path is followed link by link (:func:`hdf5_dataset`): soft links at most :data:`HDF5_HOPS` hops (a loop
  is refused), external links only to regular files in the file's directory (or below), opened here; a dataset's
  external raw files and virtual sources must lie there too (HDF5 is told to look for them there, ``${ORIGIN}``),
  and a virtual source's own dataset is checked in turn, at most :data:`HDF5_DEPTH` files deep;
- a TIFF is read as one file (:func:`open_alone`): an OME-TIFF whose image lies in other files too is refused.

Each refusal is a :class:`UserFileError`: one line naming the file and what it is. Before a run, a person's file
is opened in a fresh process (:func:`inspect`), which is killed on Ctrl-C or SIGTERM whatever a library's thread is
stuck in, and whose crash on a lying file (a segfault, an abort) is one line too. Rows name a ``file:`` by its
name only, whatever a message said (:func:`hide_directories`).
"""

from __future__ import annotations

import asyncio
import functools
import html
import importlib
import io
import os
import re
import resource
import signal
import stat
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from benchmarks_lib.base.specs import SpecError, format_bytes
from benchmarks_lib.base.untrusted import (
    UserFileError,
    file_kind,
    open_regular,
    person_stat,
)

if TYPE_CHECKING:
    import h5py

#: the most bytes read of one Zarr metadata file (zarr.json, .zarray, ...; a large OME-Zarr's is a few kB)
METADATA_MAX_BYTES = 2**20
ZARR_METADATA = frozenset({"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"})
#: how many entries of a Zarr store are looked at before a run (past them, each file is checked as it is read)
STORE_SCAN_MAX = 100_000
#: how long reading a file's metadata before a run may take before it is called hung (a mount that does not answer)
INSPECT_TIMEOUT_S = 120
#: the most links followed in one HDF5 path, and how many files deep virtual sources are checked
HDF5_HOPS = 16
HDF5_DEPTH = 4


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def inspect(target: str, text: str, **kwargs: Any) -> dict:
    """``target(text, **kwargs)`` (``module:function``: it opens the file that the dataset ``text`` names and
    returns what its metadata say, as JSON) in a fresh process, ended after :data:`INSPECT_TIMEOUT_S`; a SpecError
    there is raised here."""
    from benchmarks_lib.measure.fresh import FreshProcessError, call

    try:
        reply = call(f"{__name__}:_inspect_here", {"target": target, "text": text, "kwargs": kwargs},
                     timeout_s=INSPECT_TIMEOUT_S)
    except FreshProcessError as exc:
        if exc.returncode is None:
            raise UserFileError(f"dataset {text!r}: reading its metadata took more than {INSPECT_TIMEOUT_S} s (a "
                                "file of very many pieces, or on a mount that does not answer)") from None
        if exc.returncode < 0:
            why = signal.strsignal(-exc.returncode) or f"signal {-exc.returncode}"
            raise UserFileError(f"dataset {text!r}: its reader crashed on the file ({why})") from None
        raise  # a bug of ours: its traceback
    if "error" in reply:
        raise UserFileError(reply["error"])
    return reply["read"]


def _inspect_here(target: str, text: str, kwargs: dict) -> dict:
    """(In the fresh process) ``{"read": target(text, **kwargs)}``, or ``{"error": its one line}``."""
    module, _, name = target.partition(":")
    try:
        return {"read": getattr(importlib.import_module(module), name)(text, **kwargs)}
    except SpecError as exc:
        return {"error": str(exc)}
    except MemoryError:  # past the limit its caller set (a chunk decoded within it: ``user_source.decoded_within``)
        soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
        held = "no limit" if soft == resource.RLIM_INFINITY else f"{format_bytes(soft)}, RLIMIT_DATA"
        return {"error": f"dataset {text!r}: reading its metadata and first chunk took more memory than this process "
                         f"may hold ({held}): a chunk inflates far beyond its declared size, or this machine cannot "
                         "hold its chunks"}


def hide_directories(row: dict, params: dict) -> dict:
    """``row`` with the directory of every file of ``params`` given as ``file:`` (not ``file+path:``) taken out of
    its text (an error's message or traceback names the file where it was read)."""
    found: list[dict] = []
    todo: list[Any] = [params]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            if isinstance(value.get("path"), str) and value.get("record_path") is False:
                found.append(value)
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    folders = {d for spec in found for d in (os.path.dirname(spec["path"]),
                                             os.path.dirname(os.path.realpath(spec["path"])))}
    folders = sorted((d.rstrip("/") + "/" for d in folders if d.strip("/")), key=len, reverse=True)
    if not folders:
        return row
    # a folder where a path starts (not ".../zarr/data/" for a file in "/data/")
    where = re.compile(r"(?<![\w./~-])(?:" + "|".join(map(re.escape, folders)) + ")")
    return {key: where.sub("", value) if isinstance(value, str) else value for key, value in row.items()}


class _Alone(io.BufferedReader):
    """A file object without a descriptor (see :func:`open_alone`)."""

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")


def open_alone(path: Path) -> BinaryIO:
    """A person's regular file, opened without blocking, as a file object that has no descriptor to show: tifffile
    then reads this one file alone (with a file name or descriptor it opens the files a TIFF names: an OME-TIFF's
    other files, a Micro-Manager stack's, an NDTiff index)."""
    return _Alone(io.FileIO(open_regular(path, "dataset file", error=UserFileError, where="", follow=True), "rb"))


#: the files an OME-XML says hold its image's planes (``<UUID FileName="NAME">urn:uuid:...</UUID>``), and its own
#: UUID (``<OME UUID="...">``: planes under it are in this file, whatever its name now)
_OME_FILES = re.compile(r"<(?:\w+:)?UUID\b[^>]*?\bFileName\s*=\s*[\"']([^\"']*)[\"'][^>]*>([^<]*)<")
_OME_UUID = re.compile(r"<(?:\w+:)?OME\b[^>]*?\bUUID\s*=\s*[\"']([^\"']*)[\"']")


def ome_other_files(xml: str | None, name: str) -> list[str]:
    """The files other than ``name`` (and this file's UUID) that an OME-TIFF's OME-XML names as holding its
    image."""
    own = _OME_UUID.search(xml or "")
    return sorted({html.unescape(file) for file, uuid in _OME_FILES.findall(xml or "")
                   if html.unescape(file) != name and (own is None or uuid.strip() != own.group(1))})


# -- Zarr -----------------------------------------------------------------------------------------------------------
def _store_file(root: Path, key: str) -> tuple[str, int | None] | None:
    """(the real path, the size limit) of a store's key; None where nothing is there (or a directory is)."""
    parts = key.split("/")
    if key.startswith("/") or ".." in parts:
        raise UserFileError(f"Zarr store {str(root)!r}: key {key!r} leads out of the store")
    path = root.joinpath(*parts)
    real, base = os.path.realpath(path), os.path.realpath(root)
    if not _inside(real, base):
        raise UserFileError(f"Zarr store file {str(path)!r} is a link that leads out of the store (to {real!r})")
    try:
        if stat.S_ISDIR(os.lstat(real).st_mode):
            return None
    except (FileNotFoundError, NotADirectoryError):
        return None
    return real, METADATA_MAX_BYTES if parts[-1] in ZARR_METADATA else None


def read_store_key(root: Path, key: str, byte_range: Any = None) -> bytes | None:
    """The bytes of a Zarr store's key (``byte_range``: zarr's request), or None where there is none."""
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    found = _store_file(root, key)
    if found is None:
        return None
    real, limit = found
    fd = open_regular(real, "Zarr store file", limit, error=UserFileError, where=" inside a Zarr store")
    try:
        size = os.fstat(fd).st_size
        start, stop = 0, size
        if isinstance(byte_range, RangeByteRequest):
            start, stop = byte_range.start, min(byte_range.end, size)
        elif isinstance(byte_range, OffsetByteRequest):
            start = byte_range.offset
        elif isinstance(byte_range, SuffixByteRequest):
            start = max(0, size - byte_range.suffix)
        elif byte_range is not None:
            raise TypeError(f"unexpected byte range {byte_range!r}")
        parts, at = [], start
        while at < stop and (part := os.pread(fd, stop - at, at)):  # never more than the file's size at open
            parts.append(part)
            at += len(part)
        return b"".join(parts)
    finally:
        os.close(fd)


@functools.cache
def _checked_store_class() -> type:
    from zarr.core.buffer import default_buffer_prototype
    from zarr.storage import LocalStore

    class CheckedStore(LocalStore):
        """A read-only LocalStore that reads every key through :func:`read_store_key`."""

        def _buffer(self, data: bytes | None, prototype: Any) -> Any:
            return None if data is None else (prototype or default_buffer_prototype()).buffer.from_bytes(data)

        def get_sync(self, key: str, *, prototype: Any = None, byte_range: Any = None) -> Any:
            self._ensure_open_sync()
            return self._buffer(read_store_key(self.root, key, byte_range), prototype)

        async def get(self, key: str, prototype: Any = None, byte_range: Any = None) -> Any:
            if not self._is_open:
                await self._open()
            return self._buffer(await asyncio.to_thread(read_store_key, self.root, key, byte_range), prototype)

        async def get_partial_values(self, prototype: Any, key_ranges: Any) -> list:
            return list(await asyncio.gather(*(self.get(key, prototype, byte_range) for key, byte_range in key_ranges)))

    return CheckedStore


def checked_store(root: Path) -> Any:
    """A read-only ``zarr.storage.LocalStore`` of ``root`` whose every read is checked (see the module)."""
    return _checked_store_class()(str(root), read_only=True)


def check_store_tree(root: Path) -> None:
    """Every entry of a Zarr store (its first :data:`STORE_SCAN_MAX`) a regular file or a directory, or a link to
    one inside the store; metadata files at most :data:`METADATA_MAX_BYTES`. Names only: no file is opened."""
    base = os.path.realpath(root)
    todo, seen = deque([root]), 0
    while todo and seen < STORE_SCAN_MAX:
        with os.scandir(todo.popleft()) as entries:
            for entry in entries:
                seen += 1
                path = Path(entry.path)
                if entry.is_symlink():
                    real = os.path.realpath(path)
                    if not _inside(real, base):
                        raise UserFileError(f"Zarr store file {str(path)!r} is a link that leads out of the store "
                                            f"(to {real!r})")
                    try:
                        mode = os.stat(real).st_mode
                    except OSError:
                        continue  # a dangling link reads as no file
                    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                        raise UserFileError(f"Zarr store file {str(path)!r} is a link to {file_kind(mode)}; only "
                                            "regular files inside a Zarr store are read")
                elif entry.is_dir(follow_symlinks=False):
                    todo.append(path)
                elif not entry.is_file(follow_symlinks=False):
                    kind = file_kind(entry.stat(follow_symlinks=False).st_mode)
                    raise UserFileError(f"Zarr store file {str(path)!r} is {kind}; only regular files inside a "
                                        "Zarr store are read")
                elif entry.name in ZARR_METADATA and (size := entry.stat(follow_symlinks=False).st_size) \
                        > METADATA_MAX_BYTES:
                    raise UserFileError(f"Zarr store file {str(path)!r} is {format_bytes(size)}; at most 1 MiB of a "
                                        "metadata file is read")


# -- HDF5 -----------------------------------------------------------------------------------------------------------
def _beside(name: str | bytes, holder: str, top: str, what: str) -> str:
    """The real path of a file an HDF5 file names (relative names from ``holder``'s directory), which must be a
    regular file in the directory of the person's file (``top``) or below."""
    name = os.fsdecode(name)
    if "%" in name:
        raise UserFileError(f"{what} {name!r} in {holder!r} names its files by a pattern; only files named one by "
                            "one are read")
    real = os.path.realpath(os.path.join(os.path.dirname(holder), name))
    where = os.path.dirname(top)
    if not _inside(real, where):
        raise UserFileError(f"{what} {name!r} in {holder!r} lies outside the file's directory {where!r}; only "
                            "files there (or below) are read")
    mode = person_stat(Path(real), f"{what} {name!r} in {holder!r}: file").st_mode
    if not stat.S_ISREG(mode):
        raise UserFileError(f"{what} {name!r} in {holder!r} is {file_kind(mode)}; only regular files are read")
    return real


def _open_dataset(group: h5py.Group, name: str) -> h5py.Dataset:
    """A dataset of ``group`` whose external raw files and virtual sources HDF5 looks for in its file's directory
    (``${ORIGIN}``), where :func:`_check_dataset` looked, not in the current directory."""
    import h5py

    dapl = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
    dapl.set_efile_prefix(b"${ORIGIN}")
    dapl.set_virtual_prefix(b"${ORIGIN}")
    return h5py.Dataset(h5py.h5d.open(group.id, name.encode(), dapl=dapl))


def _resolve(file: h5py.File, inner: str, top: str, opened: list[h5py.File]) -> Any:
    """The object at ``inner`` (None where there is none), each link on the way checked: soft links at most
    :data:`HDF5_HOPS` hops, external links to a regular file beside ``top`` (opened here, kept in ``opened``)."""
    import h5py

    node: Any = file["/"]
    parts, hops = deque(p for p in inner.split("/") if p not in ("", ".")), 0
    while parts:
        if not isinstance(node, h5py.Group):
            return None
        name = parts.popleft()
        link = node.get(name, getlink=True)
        if link is None:
            return None
        if isinstance(link, h5py.SoftLink | h5py.ExternalLink):
            hops += 1
            if hops > HDF5_HOPS:
                raise UserFileError(f"HDF5 path {inner!r} in {top!r} follows more than {HDF5_HOPS} links (a loop?)")
            if isinstance(link, h5py.SoftLink):
                node = node.file["/"] if link.path.startswith("/") else node
            else:
                target = _beside(link.filename, node.file.filename, top, "HDF5 external link to")
                opened.append(h5py.File(target, "r"))
                node = opened[-1]["/"]
            parts.extendleft(reversed([p for p in link.path.split("/") if p not in ("", ".")]))
        elif node.get(name, getclass=True) is h5py.Dataset:
            node = _open_dataset(node, name)
        else:
            node = node[name]
    return node


def _check_dataset(dset: h5py.Dataset, top: str, depth: int = 0) -> None:
    """A dataset's external raw files, and its virtual sources (and theirs, :data:`HDF5_DEPTH` deep), beside
    ``top``."""
    import h5py

    holder = dset.file.filename
    if dset.external and depth:  # HDF5 looks for a source's raw files from the current directory: not checked here
        raise UserFileError(f"HDF5 virtual source {dset.name!r} in {holder!r} has external raw files; they are not "
                            "read")
    for name, _, _ in dset.external or ():
        _beside(name, holder, top, "HDF5 external raw file")
    if not dset.is_virtual:
        return
    if depth >= HDF5_DEPTH:
        raise UserFileError(f"HDF5 dataset {dset.name!r} in {holder!r} has virtual sources more than {HDF5_DEPTH} "
                            "files deep")
    for source in {(m.file_name, m.dset_name) for m in dset.virtual_sources()}:
        path = holder if source[0] == "." else _beside(source[0], holder, top, "HDF5 virtual source")
        with h5py.File(path, "r") as f:
            inner: list[h5py.File] = []
            try:
                node = _resolve(f, source[1], top, inner)
                if not isinstance(node, h5py.Dataset):
                    raise UserFileError(f"HDF5 virtual source {source[1]!r} in {path!r} (of {holder!r}) is not a "
                                        "dataset")
                _check_dataset(node, top, depth + 1)
            finally:
                for other in inner:
                    other.close()


def hdf5_dataset(file: h5py.File, inner: str, opened: list[h5py.File]) -> Any:
    """The object at ``inner`` of a person's HDF5 file, every file it leads to checked (see the module); a dataset
    is opened to look for its external and virtual files in its file's directory. Files opened on the way (through
    external links) are appended to ``opened``: the caller closes them."""
    import h5py

    top = os.path.realpath(file.filename)
    node = _resolve(file, inner, top, opened)
    if isinstance(node, h5py.Dataset):
        _check_dataset(node, top)
    return node


__all__ = ["METADATA_MAX_BYTES", "check_store_tree", "checked_store", "hdf5_dataset", "hide_directories", "inspect",
           "ome_other_files", "open_alone", "read_store_key"]
