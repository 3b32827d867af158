"""A read-only zarr store over HTTP or S3 whose reads go through fsspec file caches (zarr-fsspec's client cache).

It subclasses zarr's ``WrapperStore``, so this module imports zarr and fsspec when it is imported:
only :meth:`benchmarks_lib.adapters.remote.zarr_fsspec.ZarrFsspecReader.store` imports it, in the fresh
process that measures a read (listing adapters never does).
"""

from __future__ import annotations

import asyncio
from typing import Any

import fsspec
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.storage import FsspecStore, WrapperStore

#: fsspec block size for the block-cached store
FSSPEC_BLOCK_SIZE = 1 << 20


class BlockCachedStore(WrapperStore):
    """Each key is opened once as an fsspec file (``HTTPFile``, s3fs's ``S3File``) with ``cache_type``
    (block cache by default) and kept open, so later range reads of the same shard are served from its
    blocks. Reads of one key are serialised (a file's cache is not thread-safe); different keys are fetched
    concurrently, up to zarr's concurrency. Listing and metadata go to the wrapped ``FsspecStore``."""

    def __init__(self, store: FsspecStore, url: str, block_size: int = FSSPEC_BLOCK_SIZE,
                 cache_type: str = "blockcache", storage_options: dict | None = None) -> None:
        super().__init__(store)
        self._url, self._block_size, self._cache_type = url, block_size, cache_type
        self._options = storage_options or {}
        protocol = url.split("://", 1)[0]
        self._fs = fsspec.filesystem(protocol, skip_instance_cache=True, **self._options)
        self._files: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    @classmethod
    def from_url(cls, url: str, block_size: int = FSSPEC_BLOCK_SIZE, cache_type: str = "blockcache",
                 storage_options: dict | None = None) -> BlockCachedStore:
        return cls(FsspecStore.from_url(url, read_only=True, storage_options=storage_options), url, block_size,
                   cache_type, storage_options)

    def _with_store(self, store: FsspecStore) -> BlockCachedStore:
        return type(self)(store, self._url, self._block_size, self._cache_type, self._options)

    def _read(self, key: str, byte_range: Any) -> bytes | None:
        f = self._files.get(key)
        if f is None:
            try:
                f = self._fs.open(f"{self._url.rstrip('/')}/{key}", "rb", block_size=self._block_size,
                                  cache_type=self._cache_type)
            except FileNotFoundError:
                return None
            self._files[key] = f
        size = f.size
        if byte_range is None:
            start, stop = 0, size
        elif isinstance(byte_range, RangeByteRequest):
            start, stop = byte_range.start, byte_range.end
        elif isinstance(byte_range, OffsetByteRequest):
            start, stop = byte_range.offset, size
        elif isinstance(byte_range, SuffixByteRequest):
            start, stop = max(0, size - byte_range.suffix), size
        else:
            raise TypeError(f"unexpected byte range {byte_range!r}")
        f.seek(start)
        return f.read(stop - start)

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        async with lock:  # one file's cache is not thread-safe; different keys go in parallel
            data = await asyncio.to_thread(self._read, key, byte_range)
        return None if data is None else prototype.buffer.from_bytes(data)
