"""TensorStore: the ``zarr3`` driver (``tensorstore:zarr2`` for the v2 ``zarr`` driver) on a file kvstore.

Every write is awaited inside ``write()`` (``.result()``), so the timed phase contains the
whole commit; ``file_io_sync`` is off (TensorStore's default fsyncs each file; no other
writer here does). Appending resizes the array and writes the new rows, as a streaming user
who does not know the final length would; sharding is the ``sharding_indexed`` codec (zarr3
only). TensorStore has no plain lz4 codec, so ``lz4`` is not offered.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import Adapter
from benchmarks_lib.base.specs import ArraySpec, CodecSpec
from benchmarks_lib.data.storage import S3Target

_SHUFFLE_V2 = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
#: the s3 kvstore's request limit, stated in its Context (TensorStore's own default, 32, unless the environment's
#: TENSORSTORE_S3_REQUEST_CONCURRENCY says otherwise: stated here, nothing is left to the environment)
S3_REQUESTS = 32


def zarr3_codecs(spec: ArraySpec) -> list[dict]:
    """The zarr v3 codec chain (bytes + compressor, wrapped in sharding_indexed when sharded)."""
    codec, dims = spec.codec, spec.dims
    chain: list[dict] = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if codec.family == "blosc":
        chain.append({"name": "blosc", "configuration": {
            "cname": codec.cname, "clevel": codec.level, "shuffle": codec.shuffle,
            "typesize": np.dtype(spec.dtype).itemsize, "blocksize": 0}})
    elif codec.family in ("zstd", "gzip"):
        config = {"level": codec.level} | ({"checksum": False} if codec.family == "zstd" else {})
        chain.append({"name": codec.family, "configuration": config})
    if dims.shards is None:
        return chain
    index = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
    return [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(dims.chunks), "codecs": chain, "index_codecs": index, "index_location": "end"}}]


def zarr2_compressor(codec: CodecSpec) -> dict | None:
    if codec.family == "blosc":
        return {"id": "blosc", "cname": codec.cname, "clevel": codec.level, "shuffle": _SHUFFLE_V2[codec.shuffle]}
    if codec.family == "zstd":
        return {"id": "zstd", "level": codec.level}
    if codec.family == "gzip":
        return {"id": "gzip", "level": codec.level}
    return None


class TensorstoreAdapter(Adapter):
    name = "tensorstore"
    order = 30
    module = "tensorstore"
    distribution = "tensorstore"
    install_hint = "pip install 'iobench-book[tensorstore]'"
    #: 0.1.71 is the oldest release its calls were run on (zarr3 with sharding, zarr2, resize, the file kvstore's
    #: file_io_sync); 0.2 may change the API
    supported_versions = ">=0.1.71,<0.2"
    format = "zarr3"
    reads = ("ome-zarr",)
    options = ("zarr3", "zarr2")
    codecs = frozenset({"none", "zstd", "gzip", "blosc"})
    supports_sharding = True
    writes_regions = True
    stores = ("file", "s3")
    fsyncs = False
    threads_setting = "Context data_copy_concurrency.limit + file_io_concurrency.limit"
    notes = "writes awaited in write(); file_io_sync off (default fsyncs); append = resize + write; zarr2: no shards"

    def __init__(self, threads: int | None = None, option: str | None = None) -> None:
        super().__init__(threads, option)
        self.format = self.writes_format(option)

    @classmethod
    def writes_format(cls, option: str | None) -> str:
        return "zarr2" if option == "zarr2" else "zarr3"

    def is_incompatible(self, spec: ArraySpec, operation: str) -> str | None:
        if self.format == "zarr2" and spec.dims.shards:
            return "tensorstore:zarr2 cannot shard (zarr v2 has no sharding); use tensorstore (zarr3)"
        return super().is_incompatible(spec, operation)

    def _context(self):
        import tensorstore as ts

        # Its default fsyncs every file it writes; the suite measures all writers without fsync.
        config: dict = {"file_io_sync": False, "s3_request_concurrency": {"limit": S3_REQUESTS}}
        if self.threads:
            config |= {"data_copy_concurrency": {"limit": self.threads}, "file_io_concurrency": {"limit": self.threads}}
        return ts.Context(config)

    def _metadata(self, spec: ArraySpec, shape: tuple[int, ...]) -> dict:
        if self.format == "zarr2":
            return {"shape": list(shape), "chunks": list(spec.dims.chunks), "dtype": np.dtype(spec.dtype).str,
                    "compressor": zarr2_compressor(spec.codec), "order": "C", "fill_value": 0,
                    "dimension_separator": "/"}
        grid = spec.dims.shards or spec.dims.chunks
        return {"shape": list(shape), "data_type": spec.dtype, "fill_value": 0,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(grid)}},
                "chunk_key_encoding": {"name": "default"}, "codecs": zarr3_codecs(spec),
                "dimension_names": list(spec.dims.names)}

    @staticmethod
    def kvstore(location: Path | S3Target) -> dict:
        """TensorStore's kvstore spec of a local path (``file``) or an S3 location (``s3``; credentials come from
        the environment: TensorStore takes none in a spec)."""
        if not isinstance(location, S3Target):
            return {"driver": "file", "path": str(location)}
        spec = {"driver": "s3", "bucket": location.bucket, "path": location.prefix.rstrip("/") + "/",
                "aws_region": location.region}
        return spec | ({"endpoint": location.endpoint} if location.endpoint else {})

    def _spec(self, path: Path | S3Target) -> dict:
        return {"driver": "zarr" if self.format == "zarr2" else "zarr3", "kvstore": self.kvstore(path)}

    def create(self, path: Path, spec: ArraySpec, *, append: bool = False) -> None:
        import tensorstore as ts

        self.spec, self.path, self._next = spec, path, 0
        shape = (0, *spec.shape[1:]) if append else spec.shape
        ts_spec = self._spec(path) | {"metadata": self._metadata(spec, shape), "create": True}
        self.store = ts.open(ts_spec, context=self._context()).result()

    def open_writer(self, path: Path, spec: ArraySpec) -> None:
        import tensorstore as ts

        self.spec, self.path, self._next = spec, path, 0
        self.store = ts.open(self._spec(path) | {"open": True}, write=True, context=self._context()).result()

    def s3_concurrency(self) -> tuple[int, str]:
        return S3_REQUESTS, "Context s3_request_concurrency.limit"

    def write(self, offset: int, block: np.ndarray) -> None:
        self.store[offset:offset + block.shape[0]].write(block).result()

    def append(self, block: np.ndarray) -> None:
        stop = self._next + block.shape[0]
        self.store = self.store.resize(exclusive_max=[stop, *self.spec.shape[1:]], expand_only=True).result()
        self.write(self._next, block)
        self._next = stop

    def finalize(self) -> None:
        self.store = None

    def open_reader(self, path: Path, spec: ArraySpec) -> None:
        import tensorstore as ts

        self.spec, self.path = spec, path
        self.reader = ts.open(self._spec(path) | {"open": True}, read=True, context=self._context()).result()

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        return self.reader[index].read().result()

    def close_reader(self) -> None:
        self.reader = None
