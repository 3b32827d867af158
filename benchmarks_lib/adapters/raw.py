"""The baseline: one flat file of C-order bytes (numpy tofile / fromfile), never compressed."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import Adapter, IndependentRead
from benchmarks_lib.base.specs import ArraySpec


class RawAdapter(Adapter):
    name = "raw"
    order = 0
    module = "numpy"
    distribution = "numpy"
    install_hint = "pip install numpy"
    format = "raw"
    applies_codec = False
    ignores_threads = True
    notes = "uncompressed baseline: the codec is not applied"

    def create(self, path: Path, spec: ArraySpec, *, append: bool = False) -> None:
        self.spec, self.path, self._next = spec, path, 0
        self._row_bytes = math.prod(spec.shape[1:]) * np.dtype(spec.dtype).itemsize
        self._file = open(path, "wb")  # noqa: SIM115 - closed in finalize

    def write(self, offset: int, block: np.ndarray) -> None:
        if self._file.tell() != offset * self._row_bytes:
            self._file.seek(offset * self._row_bytes)
        np.ascontiguousarray(block).tofile(self._file)

    def finalize(self) -> None:
        if getattr(self, "_file", None) is not None:
            self._file.close()
            self._file = None

    def open_reader(self, path: Path, spec: ArraySpec) -> None:
        self.spec, self.path = spec, path
        self._row_bytes = math.prod(spec.shape[1:]) * np.dtype(spec.dtype).itemsize

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        start, stop, _ = index[0].indices(self.spec.shape[0])
        with open(self.path, "rb") as f:
            f.seek(start * self._row_bytes)
            count = (stop - start) * self._row_bytes // np.dtype(self.spec.dtype).itemsize
            data = np.fromfile(f, dtype=self.spec.dtype, count=count)
        data = data.reshape((stop - start, *self.spec.shape[1:]))
        rest = index[1:]
        whole = all(sl.indices(n)[:2] == (0, n) for sl, n in zip(rest, self.spec.shape[1:], strict=True))
        return data if whole else data[(slice(None), *rest)]

    def independent_read(self, path: Path, spec: ArraySpec) -> IndependentRead | str:
        """The file read with plain file I/O, its length taken from the file size."""
        from benchmarks_lib.adapters.independent import raw_read

        return raw_read(path, spec)
