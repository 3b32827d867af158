"""zarr-python (v3 format): ``zarr.create_array``, slice assignment, ``Array.append``.

The codec pipeline and thread settings are set explicitly for the adapter's lifetime and
restored on finalize / close_reader, so nothing leaks between adapters in one process.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import Adapter
from benchmarks_lib.base.specs import ArraySpec, CodecSpec
from benchmarks_lib.data.storage import S3Target


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
    install_hint = "pip install 'iobench-book[zarr]'  (zarr>=3)"
    format = "zarr3"
    reads = ("zarr2", "ome-zarr")
    codecs = frozenset({"none", "lz4", "zstd", "gzip", "blosc"})
    supports_sharding = True
    writes_regions = True
    stores = ("file", "s3")
    threads_setting = "zarr.config threading.max_workers + async.concurrency"
    #: codec pipeline to use; the zarrs adapter overrides this
    codec_pipeline: str = "zarr.core.codec_pipeline.BatchedCodecPipeline"

    def _config(self) -> dict:
        config: dict = {"codec_pipeline.path": self.codec_pipeline}
        if self.threads:
            config.update({"threading.max_workers": self.threads, "async.concurrency": self.threads})
        return config

    def _apply_config(self) -> None:
        import zarr

        self._restore_config()
        self._config_set = zarr.config.set(self._config())

    def _restore_config(self) -> None:
        if getattr(self, "_config_set", None) is not None:
            self._config_set.__exit__(None, None, None)
            self._config_set = None

    def s3_concurrency(self) -> tuple[int, str]:
        """zarr's ``async.concurrency`` bounds the chunks (objects) read or written at once; obstore adds no
        limit of its own."""
        import zarr

        limit = self._config().get("async.concurrency") or zarr.config.get("async.concurrency")
        return int(limit), "zarr.config async.concurrency"

    def create(self, path: Path, spec: ArraySpec, *, append: bool = False) -> None:
        import zarr

        self._apply_config()
        self.spec, self.path, self._appending = spec, path, append
        shape = (0, *spec.shape[1:]) if append else spec.shape
        self.array = zarr.create_array(
            store=zarr_store(path), shape=shape, dtype=spec.dtype, chunks=spec.dims.chunks,
            shards=spec.dims.shards, compressors=zarr_compressors(spec.codec, spec.dtype),
            dimension_names=spec.dims.names, zarr_format=3, overwrite=False, fill_value=0,
        )

    def open_writer(self, path: Path, spec: ArraySpec) -> None:
        import zarr

        self._apply_config()
        self.spec, self.path = spec, path
        self.array = zarr.open_array(zarr_store(path), mode="r+")

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
        self.reader = zarr.open_array(zarr_store(path, read_only=True), mode="r")

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        return self.reader[index]

    def close_reader(self) -> None:
        self.reader = None
        self._restore_config()
