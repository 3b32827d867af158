"""acquire-zarr: a C++ streaming writer (``ZarrStream.append``) for Zarr v3.

It only appends, in order: ``write(offset, block)`` is accepted for the next offset and
refused otherwise. Every array it writes carries the ``sharding_indexed`` codec (an unsharded
spec becomes one chunk per shard) and it compresses with Blosc1 lz4/zstd only. It cannot
read; the suite reads and verifies its output with another Zarr library.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import FrameStream
from benchmarks_lib.base.specs import ArraySpec
from benchmarks_lib.data.storage import S3Target

_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


class AcquireZarrAdapter(FrameStream):
    name = "acquire-zarr"
    order = 40
    module = "acquire_zarr"
    distribution = "acquire-zarr"
    install_hint = "pip install 'iobench-book[acquire-zarr]'"
    format = "zarr3"
    codecs = frozenset({"none", "blosc"})
    blosc_cnames = frozenset({"lz4", "zstd"})
    supports_sharding = True
    requires_sharding = True
    supports_read = False
    stores = ("file", "s3")
    threads_setting = "StreamSettings.max_threads"
    #: it fsyncs every file it writes (seen with strace) and has no setting to turn that off
    fsyncs = True
    notes = "append-only stream; always sharded (1 chunk per shard when unsharded); Blosc1 lz4/zstd; fsyncs"

    def is_incompatible(self, spec: ArraySpec, operation: str) -> str | None:
        if operation == "append" and len(spec.shape) < 3:
            return "acquire-zarr streams frames of the last two axes: an unbounded axis needs a 3-D or larger array"
        return super().is_incompatible(spec, operation)

    def _dimensions(self, spec: ArraySpec, first_size: int) -> list:
        import acquire_zarr as aqz

        kinds = {"t": aqz.DimensionType.TIME, "c": aqz.DimensionType.CHANNEL, "z": aqz.DimensionType.SPACE}
        shards = spec.dims.shards or spec.dims.chunks
        out = []
        for i, (d, shard) in enumerate(zip(spec.dims.dims, shards, strict=True)):
            kind = aqz.DimensionType.SPACE if i >= len(shards) - 2 else kinds.get(d.name, aqz.DimensionType.OTHER)
            out.append(aqz.Dimension(name=d.name, kind=kind, array_size_px=first_size if i == 0 else d.size,
                                     chunk_size_px=d.chunk, shard_size_chunks=shard // d.chunk))
        return out

    def create(self, path: Path, spec: ArraySpec, *, append: bool = False) -> None:
        import acquire_zarr as aqz

        self.spec, self.path, self._next = spec, path, 0
        compression = None
        if spec.codec.family == "blosc":
            codec = {"lz4": aqz.CompressionCodec.BLOSC_LZ4, "zstd": aqz.CompressionCodec.BLOSC_ZSTD}[spec.codec.cname]
            compression = aqz.CompressionSettings(compressor=aqz.Compressor.BLOSC1, codec=codec,
                                                  level=spec.codec.level, shuffle=_SHUFFLE[spec.codec.shuffle])
        # Appending streams an unbounded first axis (size 0); a write declares the final size.
        array = aqz.ArraySettings(dimensions=self._dimensions(spec, 0 if append else spec.shape[0]),
                                  data_type=np.dtype(spec.dtype), compression=compression)
        settings = aqz.StreamSettings(arrays=[array], store_path=str(path), max_threads=self.threads or 0,
                                      overwrite=True)
        if isinstance(path, S3Target):  # credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY of this process
            settings.store_path = path.prefix.rstrip("/")
            settings.s3 = aqz.S3Settings(endpoint=path.endpoint or f"https://s3.{path.region}.amazonaws.com",
                                         bucket_name=path.bucket, region=path.region)
        self.stream = aqz.ZarrStream(settings)

    def s3_concurrency(self) -> tuple[int, str]:
        """Its uploads run on its thread pool (``max_threads``; 0 = the hardware's threads) over a pool of one S3
        connection per hardware thread (``std::thread::hardware_concurrency``, i.e. ``os.cpu_count()``)."""
        import os

        hardware = os.cpu_count() or 1
        return min(self.threads or hardware, hardware), "StreamSettings.max_threads, S3 connections = hardware threads"

    def push(self, block: np.ndarray) -> None:
        self.stream.append(np.ascontiguousarray(block))

    def open_reader(self, path: Path, spec: ArraySpec) -> None:
        raise NotImplementedError("acquire-zarr cannot read; read its output with zarr-python or tensorstore")

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        raise NotImplementedError("acquire-zarr cannot read; read its output with zarr-python or tensorstore")
