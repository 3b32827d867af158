"""h5py: one chunked HDF5 dataset; gzip built in, LZ4/Zstd/Blosc from hdf5plugin.

Appending resizes axis 0 (``maxshape=None`` there) before each block, as h5py users stream.
HDF5 has no sharding and runs its filters on the calling thread: there is no threads knob.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import Adapter, IndependentRead
from benchmarks_lib.base.specs import ArraySpec, CodecSpec

DATASET = "data"
_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


def hdf5_filter(codec: CodecSpec) -> dict:
    """``create_dataset`` keyword arguments for a CodecSpec."""
    if codec.family == "none":
        return {}
    if codec.family == "gzip":
        return {"compression": "gzip", "compression_opts": codec.level}
    import hdf5plugin

    if codec.family == "lz4":
        return dict(hdf5plugin.LZ4())
    if codec.family == "zstd":
        return dict(hdf5plugin.Zstd(clevel=codec.level))
    return dict(hdf5plugin.Blosc(cname=codec.cname, clevel=codec.level, shuffle=_SHUFFLE[codec.shuffle]))


class H5pyAdapter(Adapter):
    name = "h5py"
    order = 70
    module = "h5py"
    distribution = "h5py"
    extra_distributions = ("hdf5plugin",)
    install_hint = "pip install 'iobench-book[h5py]'  (h5py + hdf5plugin)"
    format = "hdf5"
    codecs = frozenset({"none", "lz4", "zstd", "gzip", "blosc"})
    notes = "one chunked dataset; lz4/zstd/blosc via hdf5plugin; append = resize; no sharding, no threads setting"

    def is_incompatible(self, spec: ArraySpec, operation: str) -> str | None:
        if reason := super().is_incompatible(spec, operation):
            return reason
        if self.threads is not None:
            return "h5py has no threads setting (HDF5 filters run on the calling thread)"
        if spec.codec.family not in ("none", "gzip") and importlib.util.find_spec("hdf5plugin") is None:
            return f"h5py needs hdf5plugin for {spec.codec}: pip install hdf5plugin"
        return None

    def create(self, path: Path, spec: ArraySpec, *, append: bool = False) -> None:
        import h5py

        self.spec, self.path, self._next = spec, path, 0
        self.file = h5py.File(path, "w")
        shape = (0, *spec.shape[1:]) if append else spec.shape
        maxshape = (None, *spec.shape[1:]) if append else None
        # no modification times in the object header: the same data makes the same bytes, so a later write of a
        # point is verified by its digest (``suites.kit.verification``); the times are not what is measured
        self.dataset = self.file.create_dataset(DATASET, shape=shape, maxshape=maxshape, dtype=spec.dtype,
                                                chunks=spec.dims.chunks, fillvalue=0, track_times=False,
                                                **hdf5_filter(spec.codec))

    def write(self, offset: int, block: np.ndarray) -> None:
        self.dataset[offset:offset + block.shape[0]] = block

    def append(self, block: np.ndarray) -> None:
        self.dataset.resize(self._next + block.shape[0], axis=0)
        super().append(block)

    def finalize(self) -> None:
        self.dataset = None
        if getattr(self, "file", None) is not None:
            self.file.close()
            self.file = None

    def open_reader(self, path: Path, spec: ArraySpec) -> None:
        import h5py

        if importlib.util.find_spec("hdf5plugin") is not None:
            import hdf5plugin  # noqa: F401 - registers the LZ4/Zstd/Blosc filters for decoding

        self.spec, self.path = spec, path
        self.reader = h5py.File(path, "r")
        self._data = self.reader[DATASET]

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        return self._data[index]

    def close_reader(self) -> None:
        self._data = None
        if getattr(self, "reader", None) is not None:
            self.reader.close()
            self.reader = None

    def independent_read(self, path: Path, spec: ArraySpec) -> IndependentRead | str:
        """Chunk bytes read with file I/O and decoded with zlib/numcodecs, not HDF5's filters."""
        from benchmarks_lib.adapters.independent import hdf5_read

        return hdf5_read(path, DATASET)
