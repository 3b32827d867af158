"""webKnossos wrap (wkw): cubic blocks in cubic files, raw or LZ4, Fortran order, 3-D only.

Our C-order ``(z, y, x)`` block is handed to wkw transposed (``block.T``, a zero-copy
F-order view), so wkw's ``(x, y, z)`` is our axis order reversed and no data is copied.
A chunk is a wkw block (``block_len``: equal on all axes, a power of two) and a shard is a
wkw file (``file_len`` blocks per side); an unsharded spec gets one block per file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import Adapter, IndependentRead
from benchmarks_lib.base.specs import ArraySpec

#: the largest block side (voxels) and file side (blocks) wkw's header holds: each is one byte, a power of two
WKW_MAX_SIDE = 128


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class WkwAdapter(Adapter):
    """LZ4 files must be written whole: wkw refuses a write that does not cover complete files.

    ``is_incompatible`` cannot see the suite's block step, so the rule is split in two: it
    refuses a shape that is not a whole number of files, and :meth:`write_alignment` tells
    the caller the multiple that the step along axis 0 must be (``write`` raises otherwise).
    Uncompressed files accept any write.
    """

    name = "wkw"
    order = 60
    module = "wkw"
    distribution = "wkw"
    install_hint = "pip install 'iobench-book[wkw]'"
    format = "wkw"
    codecs = frozenset({"none", "lz4"})
    supports_sharding = True
    native_order = "F"
    ranks = (3, 3)
    notes = "chunk = block, shard = file; LZ4 writes must cover whole files; 3-D only; no threads setting"

    def _layout(self, spec: ArraySpec) -> tuple[int, int] | str:
        """(block_len, file_len), or why the spec does not map onto wkw."""
        chunks, shards = set(spec.dims.chunks), set(spec.dims.shards or spec.dims.chunks)
        if len(spec.shape) != 3:
            return f"wkw stores 3-D volumes only, not {len(spec.shape)}-D"
        if len(chunks) != 1 or not _pow2(block := chunks.pop()):
            return f"wkw needs cubic chunks with a power-of-two side, not {spec.dims.chunks}"
        if len(shards) != 1 or not _pow2(file_len := shards.pop() // block):
            return f"wkw needs cubic shards of a power-of-two number of chunks, not {spec.dims.shards}"
        if max(block, file_len) > WKW_MAX_SIDE:
            return (f"wkw's blocks are at most {WKW_MAX_SIDE} voxels a side and its files at most {WKW_MAX_SIDE} "
                    f"blocks (its header holds each in a byte), not {block} and {file_len}")
        return block, file_len

    def write_alignment(self, spec: ArraySpec) -> int:
        """Blocks written along axis 0 must start and end on multiples of this."""
        layout = self._layout(spec)
        return layout[0] * layout[1] if spec.codec.compressed and isinstance(layout, tuple) else 1

    def is_incompatible(self, spec: ArraySpec, operation: str) -> str | None:
        if reason := super().is_incompatible(spec, operation):
            return reason
        if self.threads is not None:
            return "wkw has no threads setting"
        if isinstance(layout := self._layout(spec), str):
            return layout
        cube = layout[0] * layout[1]
        if spec.codec.compressed and any(n % cube for n in spec.shape):
            return f"wkw writes LZ4 files whole: shape {spec.shape} is not a multiple of the file side {cube}"
        return None

    def create(self, path: Path, spec: ArraySpec, *, append: bool = False) -> None:
        import wkw

        self.spec, self.path, self._next = spec, path, 0
        block, file_len = self._layout(spec)
        kind = wkw.Header.BLOCK_TYPE_LZ4 if spec.codec.family == "lz4" else wkw.Header.BLOCK_TYPE_RAW
        if Path(path).exists():  # outputs are removed by the suite, off the clock; never here
            raise FileExistsError(f"{path} exists; a writer is always given a new path")
        header = wkw.Header(np.dtype(spec.dtype).type, block_len=block, file_len=file_len, block_type=kind)
        self.dataset = wkw.Dataset.create(str(path), header)

    def write(self, offset: int, block: np.ndarray) -> None:
        step = self.write_alignment(self.spec)
        if offset % step or block.shape[0] % step:
            raise ValueError(f"wkw writes LZ4 files whole: offset {offset} and length {block.shape[0]} "
                             f"must be multiples of {step}")
        self.dataset.write((0, 0, offset), np.ascontiguousarray(block).T)

    def finalize(self) -> None:
        if getattr(self, "dataset", None) is not None:
            self.dataset.close()
            self.dataset = None

    def open_reader(self, path: Path, spec: ArraySpec) -> None:
        import wkw

        self.spec, self.path = spec, path
        self.reader = wkw.Dataset.open(str(path))

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        bounds = [sl.indices(n)[:2] for sl, n in zip(index, self.spec.shape, strict=True)]
        offset = [start for start, _ in bounds][::-1]
        size = [stop - start for start, stop in bounds][::-1]
        return self.reader.read(offset, size)[0].T

    def close_reader(self) -> None:
        if getattr(self, "reader", None) is not None:
            self.reader.close()
            self.reader = None

    def independent_read(self, path: Path, spec: ArraySpec) -> IndependentRead | str:
        """The files parsed as the wkw specification describes; LZ4 blocks decoded by numcodecs."""
        from benchmarks_lib.adapters.independent import wkw_read

        return wkw_read(path, spec)
