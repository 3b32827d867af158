"""zarr-python 2.18 and 3.x: ``zarr.create_array`` (3.x) or ``zarr.open_array`` (2.x), slice assignment,
``Array.append``.

Which Zarr format it writes is its option: ``zarr-python:zarr2`` writes the v2 format with numcodecs compressors
under either major version (zarr 3 with ``zarr_format=2``), so 2.18 and 3.x are measured on the same bytes (the same
blosc cname, clevel and shuffle, the same ``/`` chunk keys); ``zarr-python:zarr3`` the v3 format, which only
zarr-python 3 writes. Plain ``zarr-python`` writes the newest format the installed version has (v3 on 3.x, v2 on
2.x); every row says which (``zarr_format``, :meth:`Adapter.row_columns`). A v2 store is verified by decoding its
files without zarr (:func:`benchmarks_lib.adapters.independent.zarr2_read`).

On 3.x the codec pipeline and thread settings are set explicitly for the adapter's lifetime and restored on
finalize / close_reader, so nothing leaks between adapters in one process; 2.x has no such settings (its chunks are
encoded and stored one at a time), so a thread count is refused there.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import Adapter, IndependentRead
from benchmarks_lib.adapters.independent import zarr2_read
from benchmarks_lib.base.availability import distribution_version
from benchmarks_lib.base.specs import ArraySpec, CodecSpec
from benchmarks_lib.data.storage import S3Target

#: numcodecs' Blosc shuffle constants (``Blosc.NOSHUFFLE`` ...), by the name a CodecSpec gives
_V2_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


def zarr_compressors(codec: CodecSpec, dtype: str) -> list:
    """zarr-python v3 codec objects for a CodecSpec."""
    import zarr.codecs as zc

    if codec.family == "none":
        return []
    if codec.family == "zstd":
        return [zc.ZstdCodec(level=codec.level)]
    if codec.family == "gzip":
        return [zc.GzipCodec(level=codec.level)]
    if codec.family == "lz4":
        from zarr.codecs.numcodecs import LZ4

        return [LZ4()]
    return [zc.BloscCodec(cname=codec.cname, clevel=codec.level, shuffle=zc.BloscShuffle[codec.shuffle],
                          typesize=np.dtype(dtype).itemsize)]


def zarr2_compressor(codec: CodecSpec):
    """The numcodecs compressor of a Zarr v2 array for a CodecSpec (None: uncompressed), as zarr 2.x and zarr 3
    (``zarr_format=2``) both take it."""
    import numcodecs

    if codec.family == "none":
        return None
    if codec.family == "zstd":
        return numcodecs.Zstd(level=codec.level)
    if codec.family == "gzip":
        return numcodecs.GZip(level=codec.level)
    if codec.family == "lz4":
        return numcodecs.LZ4()
    return numcodecs.Blosc(cname=codec.cname, clevel=codec.level, shuffle=_V2_SHUFFLE[codec.shuffle])


def zarr_major() -> int:
    """The installed zarr-python's major version (3 where none is installed: the adapter is unavailable then)."""
    version = distribution_version("zarr") or "3"
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 3


def zarr_store(path: Path | S3Target, read_only: bool = False):
    """What zarr-python opens: a local path as text, an S3 location as an obstore ``ObjectStore``."""
    if isinstance(path, S3Target):
        from zarr.storage import ObjectStore

        from benchmarks_lib.adapters.obstore_s3 import s3_store

        return ObjectStore(s3_store(path), read_only=read_only)
    return str(path)


class ZarrPythonAdapter(Adapter):
    name = "zarr-python"
    order = 10
    module = "zarr"
    distribution = "zarr"
    extra_distributions = ("numcodecs",)
    install_hint = "pip install 'iobench-book[zarr]'  (zarr 3; or zarr==2.18.7 numcodecs for the 2.x path)"
    supported_versions = ">=2.18,<4"
    format = "zarr3"
    options = ("zarr3", "zarr2")
    reads = ("zarr2", "ome-zarr")
    codecs = frozenset({"none", "lz4", "zstd", "gzip", "blosc"})
    supports_sharding = True
    writes_regions = True
    stores = ("file", "s3")
    threads_setting = "zarr.config threading.max_workers + async.concurrency"
    #: codec pipeline to use; the zarrs adapter overrides this
    codec_pipeline: str = "zarr.core.codec_pipeline.BatchedCodecPipeline"

    def __init__(self, threads: int | None = None, option: str | None = None) -> None:
        super().__init__(threads, option)
        self.major = zarr_major()
        self.format = self.writes_format(option)

    @classmethod
    def writes_format(cls, option: str | None) -> str:
        """The option's format; without one, the newest the installed version writes (v2 on 2.x)."""
        return option if option in cls.options else "zarr2" if zarr_major() < 3 else "zarr3"

    @classmethod
    def unavailable_reason(cls, option: str | None) -> str | None:
        if option == "zarr3" and zarr_major() < 3:
            return f"zarr {distribution_version('zarr')} writes no Zarr v3 format (zarr-python 3 does)"
        return None

    def is_incompatible(self, spec: ArraySpec, operation: str) -> str | None:
        if self.format == "zarr2" and spec.dims.shards:
            return f"{self.label} writes the Zarr v2 format, which has no sharding"
        if self.major < 3 and self.threads is not None:
            return f"zarr {distribution_version('zarr')} has no threads setting (2.x stores its chunks one at a time)"
        return super().is_incompatible(spec, operation)

    def _store(self, path: Path | S3Target, read_only: bool = False):
        if self.major < 3 and isinstance(path, S3Target):
            raise ValueError(f"zarr {distribution_version('zarr')} is measured on local files only, not on S3")
        return zarr_store(path, read_only)

    def _config(self) -> dict:
        config: dict = {"codec_pipeline.path": self.codec_pipeline}
        if self.threads:
            config.update({"threading.max_workers": self.threads, "async.concurrency": self.threads})
        return config

    def _apply_config(self) -> None:
        import zarr

        self._restore_config()
        if self.major < 3:  # 2.x has no zarr.config
            return
        self._config_set = zarr.config.set(self._config())

    def _restore_config(self) -> None:
        if getattr(self, "_config_set", None) is not None:
            self._config_set.__exit__(None, None, None)
            self._config_set = None

    def s3_concurrency(self) -> tuple[int, str] | None:
        """zarr's ``async.concurrency`` bounds the chunks (objects) read or written at once; obstore adds no
        limit of its own (2.x is not measured on S3)."""
        if self.major < 3:
            return None
        import zarr

        limit = self._config().get("async.concurrency") or zarr.config.get("async.concurrency")
        return int(limit), "zarr.config async.concurrency"

    def create(self, path: Path, spec: ArraySpec, *, append: bool = False) -> None:
        import zarr

        self._apply_config()
        self.spec, self.path, self._appending = spec, path, append
        shape = (0, *spec.shape[1:]) if append else spec.shape
        common = {"shape": shape, "dtype": spec.dtype, "chunks": spec.dims.chunks, "fill_value": 0}
        if self.major < 3:  # the 2.x API: mode "w-" refuses an existing store, as overwrite=False does on 3.x
            self.array = zarr.open_array(store=self._store(path), mode="w-", compressor=zarr2_compressor(spec.codec),
                                         filters=None, order="C", dimension_separator="/", **common)
        elif self.format == "zarr2":
            self.array = zarr.create_array(
                store=self._store(path), compressors=zarr2_compressor(spec.codec), filters=None, order="C",
                chunk_key_encoding={"name": "v2", "separator": "/"}, zarr_format=2, overwrite=False, **common)
        else:
            self.array = zarr.create_array(
                store=self._store(path), shards=spec.dims.shards, compressors=zarr_compressors(spec.codec, spec.dtype),
                dimension_names=spec.dims.names, zarr_format=3, overwrite=False, **common)

    def open_writer(self, path: Path, spec: ArraySpec) -> None:
        import zarr

        self._apply_config()
        self.spec, self.path = spec, path
        self.array = zarr.open_array(self._store(path), mode="r+")

    def write(self, offset: int, block: np.ndarray) -> None:
        self.array[offset:offset + block.shape[0]] = block

    def append(self, block: np.ndarray) -> None:
        self.array.append(block, axis=0)

    def finalize(self) -> None:
        self.array = None
        self._restore_config()

    def open_reader(self, path: Path, spec: ArraySpec) -> None:
        import zarr

        self._apply_config()
        self.reader = zarr.open_array(self._store(path, read_only=True), mode="r")

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        return self.reader[index]

    def close_reader(self) -> None:
        self.reader = None
        self._restore_config()

    def independent_read(self, path: Path, spec: ArraySpec) -> IndependentRead | str:
        """A v2 store decoded from its files (``.zarray``, file I/O, numcodecs): no other library here reads the v2
        format, and it is what both major versions are compared on."""
        return zarr2_read(path, spec) if self.format == "zarr2" else super().independent_read(path, spec)
