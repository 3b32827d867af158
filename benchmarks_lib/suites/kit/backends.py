"""Backends of the compression and threads suites: registered adapters, picked and run by kind.

A backend here is a registered adapter of kind ``mesh`` (a mesh writer, measured on the
tetrahedral mesh), ``array`` (a writer of an array format, measured through files) or
``codec`` (an in-memory codec, encode/decode chunk by chunk). Which adapters take part
follows from their declared capabilities (:func:`benchmarks_lib.adapters.participants`);
how each is measured follows from its kind, never from its name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks_lib.adapters import adapter_class, backend_status, make_adapter, participants, readers_of
from benchmarks_lib.adapters.codec.base import ChunkCodec
from benchmarks_lib.adapters.library import Library
from benchmarks_lib.adapters.mesh.base import MeshWriter
from benchmarks_lib.base.availability import Unavailable
from benchmarks_lib.base.specs import ArraySpec, SpecError
from benchmarks_lib.data.datasets import same_array
from benchmarks_lib.data.meshes import build_tet_mesh, load_mesh, mesh_digest, mesh_mismatch, mesh_nbytes
from benchmarks_lib.measure import disk_usage
from benchmarks_lib.suites import CaseContext
from benchmarks_lib.suites.kit.in_rounds import Point
from benchmarks_lib.suites.kit.roundtrip import ArrayData, RoundTrip, round_trip_point, skip_rows
from benchmarks_lib.suites.kit.verification import verifier

#: the kinds these suites measure, in the order their backends are listed
MEASURED_KINDS = ("mesh", "array", "codec")


@dataclass(frozen=True)
class SuiteBackend:
    """A registered adapter taking part in a suite: its name, kind and class (declared data only)."""

    name: str
    kind: str
    cls: type[Library]

    @property
    def operations(self) -> tuple[str, str]:
        return ("encode", "decode") if self.kind == "codec" else ("write", "read")

    @property
    def pools_chunks(self) -> bool:
        """A codec without threads of its own: the suite spreads its chunks over a pool, as zarr-python does."""
        return self.kind == "codec" and self.cls.threads_setting is None

    def unavailable_reason(self) -> str | None:
        return backend_status(self.name, self.kind).reason

    def adapter(self, threads: int | None) -> Any:
        return make_adapter(self.name, threads=None if self.pools_chunks else threads, kind=self.kind)

    def chunk_pool(self, threads: int) -> ThreadPoolExecutor | None:
        """The pool that spreads a codec's chunks over ``threads`` threads (None: the library's own threads)."""
        return ThreadPoolExecutor(threads, thread_name_prefix="codec") if self.pools_chunks and threads > 1 else None


def suite_backend(name: str) -> SuiteBackend:
    """The registered adapter called ``name`` among the measured kinds."""
    for kind in MEASURED_KINDS:
        try:
            return SuiteBackend(name, kind, adapter_class(name, kind))
        except SpecError:
            continue
    raise SpecError(f"backend {name!r} is not a registered mesh writer, array writer or codec")


def backend_names(accepts: Callable[[type[Library]], bool],
                  kinds: tuple[str, ...] = MEASURED_KINDS) -> tuple[str, ...]:
    """Registered names of ``kinds`` whose declared capabilities ``accepts``."""
    return tuple(name for kind in kinds for name in participants(kind, accepts))


# -- meshes --------------------------------------------------------------------------------
def mesh_round_trip(writer: MeshWriter, mesh: Any, path: Path, *, compressor: str, level: int | None) -> RoundTrip:
    """A mesh writer at one setting, read back with the same library; verified by exact equality."""
    def write() -> None:
        writer.write(mesh, path, compressor=compressor, level=level)

    def read() -> Any:
        return writer.read(path)

    def files() -> list[Path]:
        return writer.output_files(path)

    return RoundTrip(write=write, read=read, verify=lambda got: mesh_mismatch(mesh, got),
                     stored_bytes=lambda: sum(f.stat().st_size for f in files()), files=files, path=path)


def mesh_points(who: SuiteBackend, params: dict, ctx: CaseContext, columns: dict,
                points: list[tuple[str, int | None]]) -> Iterator[Point | list[dict]]:
    """Each (compressor, level) point of a mesh writer set up for rounds (:mod:`.in_rounds`), on one mesh built once
    (seeded; or read from a person's ``mesh_file``). The case's ``warmups`` run before its first point only: the
    later points run in the same process on a warm library (first calls, imports, pools); rows: ``warmup_rounds``."""
    if reason := who.unavailable_reason():
        yield skip_rows(reason, columns)
        return
    threads = params["threads"] if who.cls.threads_setting else None
    writer: MeshWriter = who.adapter(threads)
    if source := params.get("mesh_file"):  # a person's mesh file (read-only, before any clock), else the tet mesh
        mesh = load_mesh(source["path"])
        what = {"source": Path(source["path"]).name if not source["record_path"] else source["path"],
                "source_format": Path(source["path"]).suffix.lstrip("."), "source_digest": mesh_digest(mesh)}
    else:
        mesh, what = build_tet_mesh(params["mesh_n"], params["seed"]), {"mesh_n": params["mesh_n"]}
    nbytes = mesh_nbytes(mesh)
    base = {**columns, "dtype": "mixed", **what, "mesh_points": mesh.n_points, "mesh_cells": mesh.n_cells}
    path = ctx.scratch / f"mesh{writer.extension}"  # one output at a time: each round's is removed once verified
    warmups = ctx.warmups
    for compressor, level in points:
        # a writer without a threads setting (the VTK XML writer) compresses on one thread
        point = {**base, "codec": writer.codec_label(compressor, level), "codec_family": compressor,
                 "level": level, "threads": threads or 1}
        if reason := writer.is_incompatible(compressor, level):
            yield skip_rows(reason, point)
            continue
        rt = mesh_round_trip(writer, mesh, path, compressor=compressor, level=level)
        yield round_trip_point(rt, warmups=warmups, nbytes=nbytes, columns={**point, "warmup_rounds": warmups},
                               fsync=params["fsync"])
        warmups = 0


# -- arrays: writers through files, codecs in memory ----------------------------------------
def array_point_reason(who: SuiteBackend, spec: ArraySpec, threads: int) -> str | None:
    """Why ``who`` cannot measure ``spec`` with ``threads`` here (not installed, not offered), or None."""
    if reason := who.unavailable_reason():
        return reason
    adapter = who.adapter(threads)
    if who.kind == "codec":
        return adapter.is_incompatible(spec.codec)
    if reason := adapter.is_incompatible(spec, "write"):
        return reason
    if not adapter.supports_read and verifier(adapter, spec) is None:
        readers = readers_of(adapter)
        return (f"{who.name} cannot read, and no library that reads {adapter.format} ({spec.codec}) is installed to "
                f"verify it; install one of: {', '.join(readers) or 'none registered'}")
    return None


def adapter_round_trip(backend: str, spec: ArraySpec, data: np.ndarray, checksum: str, path: Path, *,
                       threads: int | None) -> RoundTrip:
    """An array writer through its adapter: create + write + finalize, then open + full read.

    A write-only writer (acquire-zarr) has only its write timed; another library reads it back
    to verify (:func:`.verification.verifier`).
    """
    full = tuple(slice(0, n) for n in spec.shape)

    def write() -> None:
        adapter = make_adapter(backend, threads=threads)
        adapter.create(path, spec)
        adapter.write(0, data)
        adapter.finalize()

    def read() -> np.ndarray:
        adapter = make_adapter(backend, threads=threads)
        adapter.open_reader(path, spec)
        try:
            return adapter.read(full)
        finally:
            adapter.close_reader()

    def files() -> list[Path]:
        return make_adapter(backend, threads=threads).output_files(path)

    def verify(got: np.ndarray) -> str | None:
        # the data written is in memory: compared whole (dtype, shape, every value), cheaper than hashing it
        return None if same_array(got, data) else "the data read back differs from the data written"

    writer = make_adapter(backend, threads=threads)
    rt = RoundTrip(write=write, read=read, verify=verify, files=files, path=path,
                   stored_bytes=lambda: disk_usage(path).logical_bytes, writer_fsyncs=bool(writer.fsyncs))
    if not writer.supports_read:
        reader = verifier(writer, spec)
        if reader is None:
            raise Unavailable(f"{backend} cannot read, and no library that reads {writer.format} is installed")
        rt.read, rt.timed_read = adapter_round_trip(reader, spec, data, checksum, path, threads=None).read, False
    return rt


def codec_round_trip(codec: ChunkCodec, pieces: list[tuple[tuple[slice, ...], np.ndarray]], shape: tuple[int, ...],
                     dtype: str, checksum: str, pool: ThreadPoolExecutor | None) -> RoundTrip:
    """In-memory encode/decode of every chunk (mapped over ``pool`` when given); no files."""
    chunks = [c for _, c in pieces]
    encoded: list[bytes] = []
    run = pool.map if pool is not None else map

    def write() -> None:
        encoded[:] = list(run(codec.encode, chunks))

    def read() -> list:
        return list(run(codec.decode, encoded))

    def verify(decoded: list) -> str | None:
        # every chunk against the one encoded (the chunks cover the array: compared whole)
        same = len(decoded) == len(pieces) and all(
            np.frombuffer(buf, dtype=dtype).size == chunk.size
            and same_array(np.frombuffer(buf, dtype=dtype).reshape(chunk.shape), chunk)
            for (_, chunk), buf in zip(pieces, decoded, strict=False))
        return None if same else "the decoded chunks differ from the chunks encoded"

    return RoundTrip(write=write, read=read, verify=verify, stored_bytes=lambda: sum(len(e) for e in encoded),
                     reset=encoded.clear, write_op="encode", read_op="decode")


def array_round_trip(who: SuiteBackend, spec: ArraySpec, data: ArrayData, path: Path, *, threads: int,
                     pool: ThreadPoolExecutor | None = None) -> RoundTrip:
    """The round trip of one array point: a writer through files, or a codec in memory (over ``pool``)."""
    if who.kind == "codec":
        codec = who.adapter(threads).make_codec(spec.codec, spec.dtype)
        return codec_round_trip(codec, data.pieces, spec.shape, spec.dtype, data.checksum, pool)
    return adapter_round_trip(who.name, spec, data.values, data.checksum, path, threads=threads)


__all__ = [
    "MEASURED_KINDS",
    "SuiteBackend",
    "adapter_round_trip",
    "array_point_reason",
    "array_round_trip",
    "backend_names",
    "codec_round_trip",
    "mesh_points",
    "mesh_round_trip",
    "suite_backend",
]
