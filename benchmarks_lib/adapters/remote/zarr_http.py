"""Zarr v3 stores read over HTTP or S3: what the three clients (zarr-python on fsspec or obstore, tensorstore)
share, and the store they read, written with zarr-python.

A client is a :class:`ZarrHttpReader`: it warms up (imports, codec set-up, event-loop threads) on a
tiny in-memory array, then opens the store as a function from a selection to an array. The one
measured read, :func:`measure_read`, is the same for all: open the store and read the workload's
selections one after another (timed), then verify each selection by CRC-32.
"""

from __future__ import annotations

import importlib
import math
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from benchmarks_lib.adapters.remote.base import RemoteReader, timed_read
from benchmarks_lib.base.specs import DimsSpec, parse_dims
from benchmarks_lib.data.input_formats import ZARR_DATASET, zarr_selections

#: bytes a client cache may hold when caching is on (tensorstore cache_pool, zarr CacheStore)
CLIENT_CACHE_BYTES = 256 * 2**20

#: a selection -> its values (``reader[selection]``, awaited)
SelectionReader = Callable[[tuple[slice, ...]], Any]


class ZarrHttpReader(RemoteReader):
    """A Zarr v3 client over HTTP or S3 (an ``s3://`` location at the endpoint of the AWS environment,
    :func:`benchmarks_lib.data.storage.from_environment`), without (``client_cache=False``) or with its own cache."""

    measure_target = "benchmarks_lib.adapters.remote.zarr_http:measure_read"
    #: the locations it reads
    stores: ClassVar[tuple[str, ...]] = ("http", "s3")
    #: further modules it needs for ``s3://`` locations
    s3_modules: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def missing_for(cls, location: str) -> str | None:
        """Why it cannot read ``location`` ("http" or "s3") here, with the install hint; None if it can."""
        from benchmarks_lib.base.availability import missing_modules, not_installed

        reason = cls.missing_reason()
        missing = missing_modules(cls.s3_modules) if location == "s3" and not reason else []
        return reason or (not_installed(f"module {missing[0]!r} (needed by {cls.name} for S3)",
                                        "pip install 'iobench-book[s3]'") if missing else None)

    @classmethod
    def read(cls, location: str | Path, *, timeout_s: float | None = None, **settings: object) -> dict:
        return super().read(location, timeout_s=timeout_s, client=cls.name, **settings)

    @classmethod
    def warm_up(cls) -> None:
        """Import the client's libraries and round-trip a tiny in-memory array, so that one-time
        costs (imports, codec set-up, zarr's event-loop thread) stay out of the timed read."""
        raise NotImplementedError

    @classmethod
    def open_array(cls, url: str, client_cache: bool, concurrency: int) -> SelectionReader:
        """The store at ``url`` (http(s):// or s3://) opened for reading (metadata read), with ``concurrency``
        requests in flight."""
        raise NotImplementedError


class ZarrPythonHttpReader(ZarrHttpReader):
    """zarr-python over HTTP; a subclass gives the store (:meth:`store`)."""

    module = "zarr"
    distribution = "zarr"
    #: modules the store imports lazily on first use, imported by the warm-up instead
    warm_up_modules: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def store(cls, url: str, client_cache: bool) -> Any:
        raise NotImplementedError

    @classmethod
    def warm_up(cls) -> None:
        import numpy as np
        import zarr
        import zarr.storage

        for shards in (None, (4, 4)):
            arr = zarr.create_array(store=zarr.storage.MemoryStore(), shape=(4, 4), chunks=(2, 2), shards=shards,
                                    dtype="uint16", zarr_format=3)
            arr[:] = np.ones((4, 4), dtype=np.uint16)
            arr[:]
        for module in cls.warm_up_modules:
            importlib.import_module(module)

    @classmethod
    def open_array(cls, url: str, client_cache: bool, concurrency: int) -> SelectionReader:
        import zarr

        zarr.config.set({"async.concurrency": concurrency, "threading.max_workers": concurrency})
        store = cls.store(url, client_cache)
        return zarr.open_array(store=store, mode="r", zarr_format=3).__getitem__


def measure_read(location: str, client: str, workload: str, client_cache: bool, concurrency: int,
                 cutout: list[int], cutouts: int, dims: str, dataset: str = ZARR_DATASET,
                 expected_crc32s: list[int] | None = None) -> dict:
    """Open the store and read the workload's selections one after another; verify by CRC-32.

    Timed from opening (metadata reads included) to the last selection; the client's libraries are
    warmed up on an in-memory array first. Each selection's CRC-32 is compared with
    ``expected_crc32s`` (the written data's, :func:`benchmarks_lib.inputs.zarr_store.expected_crc32s`);
    without it, with the same region of the generated data.
    """
    import numpy as np

    from benchmarks_lib.adapters import adapter_class

    reader = adapter_class(client, "remote")
    reader.require()
    spec = parse_dims(dims)
    selections = zarr_selections(spec.shape, spec.chunks, workload, tuple(cutout), cutouts)
    results: list = []
    reader.warm_up()

    def read() -> dict:
        get = reader.open_array(location, client_cache, concurrency)
        for sel in selections:
            results.append(np.asarray(get(sel)))
        return {"nbytes": sum(r.nbytes for r in results)}

    row = timed_read(read)
    crcs = [zlib.crc32(np.ascontiguousarray(r)) for r in results]
    if expected_crc32s is None:
        from benchmarks_lib.data.datasets import Dataset

        data = Dataset(dataset, spec.shape)
        expected_crc32s = [zlib.crc32(np.ascontiguousarray(data.region(sel))) for sel in selections]
    row["verified"] = crcs == list(expected_crc32s) and all(
        r.shape == tuple(s.stop - s.start for s in sel) for r, sel in zip(results, selections, strict=True))
    row["data_crc32"] = crcs[0] if len(crcs) == 1 else zlib.crc32(b"".join(c.to_bytes(4, "big") for c in crcs))
    row["cutout_bytes"] = row["nbytes"]
    row["selections"] = len(selections)
    itemsize = results[0].dtype.itemsize if results else 2
    row["selection_bytes"] = int(math.prod(cutout) * itemsize) if workload == "cutouts" else row["nbytes"]
    return row


# -- the store every client reads (written and checked with zarr-python) ------------------------


def _array_crc32(arr: Any, step: int) -> int:
    """CRC-32 of an array's bytes in C order, read in slabs of ``step`` along the first axis."""
    import numpy as np

    crc = 0
    for start in range(0, arr.shape[0], step):
        crc = zlib.crc32(np.ascontiguousarray(arr[start:start + step]), crc)
    return crc


def write_store(path: Path, dims: DimsSpec, shards: tuple[int, ...] | None, data: Any) -> int:
    """Write ``data`` (a :class:`benchmarks_lib.data.datasets.Dataset`) as a Zarr v3 store with zarr-python's
    default codec (zstd), read it back whole and return its CRC-32; OSError when the two differ."""
    import numpy as np
    import zarr

    arr = zarr.create_array(store=str(path), shape=dims.shape, dtype=data.dtype, chunks=dims.chunks,
                            shards=shards, dimension_names=dims.names, zarr_format=3, fill_value=0)
    step = (shards or dims.chunks)[0]
    crc = 0
    for start, block in data.blocks(step):
        block = np.ascontiguousarray(block)
        arr[start:start + block.shape[0]] = block
        crc = zlib.crc32(block, crc)
    back = _array_crc32(zarr.open_array(store=str(path), mode="r", zarr_format=3), step)
    if back != crc:
        raise OSError(f"zarr store {path} reads back with CRC-32 {back:08x}, written {crc:08x}")
    return crc


def read_crc32s(path: Path, selections: list[tuple[slice, ...]]) -> list[int]:
    """CRC-32 of each selection of the store at ``path``, read locally with zarr-python."""
    import numpy as np
    import zarr

    arr = zarr.open_array(store=str(path), mode="r", zarr_format=3)
    return [zlib.crc32(np.ascontiguousarray(arr[sel])) for sel in selections]
