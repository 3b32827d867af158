"""ome-writers: ``create_stream(AcquisitionSettings)`` writing OME-Zarr (v0.5, Zarr v3) frame by frame.

Each option is one of its OME-Zarr backends (``ome-writers:tensorstore`` ...); the plain
name uses its own ``auto`` order. Frames (the last two axes) are appended in order, so a
``write`` must come at the next offset. It offers four fixed codecs (blosc-lz4 clevel 5,
blosc-zstd clevel 3, zstd level 3, none) and no concurrency setting; other levels or a
threads value are refused rather than silently ignored. The image is the array ``0`` of the
OME group at ``path``; reading delegates to zarr-python on that array.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks_lib.adapters.base import FrameStream
from benchmarks_lib.adapters.zarr_python import ZarrPythonAdapter
from benchmarks_lib.base.availability import missing_modules
from benchmarks_lib.base.specs import ArraySpec

#: ome-writers' OME-Zarr backends, in its ``auto`` order, with the modules each needs.
BACKENDS = {"tensorstore": ("tensorstore",), "acquire-zarr": ("acquire_zarr",),
            "zarrs-python": ("zarr", "zarrs"), "zarr-python": ("zarr",)}


class OmeWritersAdapter(FrameStream):
    name = "ome-writers"
    order = 50
    module = "ome_writers"
    distribution = "ome-writers"
    install_hint = "pip install 'iobench-book[ome-writers]'  (plus the backend library)"
    format = "ome-zarr"
    options = tuple(BACKENDS)
    codecs = frozenset({"none", "zstd", "blosc"})
    blosc_cnames = frozenset({"lz4", "zstd"})
    supports_sharding = True
    wraps_others = True
    ranks = (3, 32)
    notes = "frame stream; fixed codec levels; no threads knob; image at '0'; tensorstore/acquire-zarr backends fsync"

    @classmethod
    def unavailable_reason(cls, option: str | None) -> str | None:
        if option is None:
            found = any(cls.unavailable_reason(b) is None for b in BACKENDS)
            return None if found else f"ome-writers has none of its backends: {', '.join(BACKENDS)}"
        missing = missing_modules(BACKENDS[option])
        return f"ome-writers:{option} needs {', '.join(missing)}" if missing else None

    @classmethod
    def expand_all(cls) -> list[str]:
        """One name per backend whose library is installed (plain ``ome-writers`` when none is)."""
        return [f"{cls.name}:{b}" for b in BACKENDS if cls.unavailable_reason(b) is None] or [cls.name]

    @property
    def backend(self) -> str:
        return self.option or next((b for b in BACKENDS if self.unavailable_reason(b) is None), "zarr-python")

    @property
    def fsyncs(self) -> bool:
        """The tensorstore (library default) and acquire-zarr backends fsync every file (seen with strace)."""
        return self.backend in ("tensorstore", "acquire-zarr")

    def _compression(self, spec: ArraySpec) -> str | None:
        """ome-writers' compression name for the spec, or raise ValueError naming what it fixes."""
        c = spec.codec
        if c.family == "none":
            return None
        if c.family == "zstd" and c.level == 3 and self.backend != "acquire-zarr":
            return "zstd"
        # tensorstore picks bitshuffle for 1-byte types, the other backends always byte shuffle.
        shuffle = "bitshuffle" if self.backend == "tensorstore" and np.dtype(spec.dtype).itemsize == 1 else "shuffle"
        fixed = {"lz4": 5, "zstd": 3}
        if c.family == "blosc" and c.cname in fixed and (c.level, c.shuffle) == (fixed[c.cname], shuffle):
            return f"blosc-{c.cname}"
        offered = f"blosc-lz4:5:{shuffle}, blosc-zstd:3:{shuffle}"
        offered += ", zstd:3" if self.backend != "acquire-zarr" else ""
        raise ValueError(f"ome-writers:{self.backend} writes only none, {offered} (levels are fixed), not {c}")

    def is_incompatible(self, spec: ArraySpec, operation: str) -> str | None:
        if reason := super().is_incompatible(spec, operation):
            return reason
        if self.threads is not None:
            return "ome-writers has no threads setting"
        if len(spec.shape) < 3:
            return "ome-writers appends whole frames (the last two axes): it needs a 3-D or larger array"
        if (order := [{"t": 0, "c": 1}.get(n, 2) for n in spec.dims.names]) != sorted(order):
            return f"OME-Zarr orders axes [t,] [c,] then space; {','.join(spec.dims.names)} is refused"
        try:
            self._compression(spec)
        except ValueError as e:
            return str(e)
        if operation == "append" and self.backend != "acquire-zarr" and spec.dims.chunks[0] > 1:
            # ome-writers 0.3.2: the chunk buffer of an unbounded axis is sized from its current length.
            return f"ome-writers:{self.backend} loses frames when an unbounded first axis has chunk > 1"
        return None

    def create(self, path: Path, spec: ArraySpec, *, append: bool = False) -> None:
        import ome_writers as ow

        self.spec, self.path, self._next = spec, path, 0
        dims = [ow.Dimension(name=d.name, count=None if append and i == 0 else d.size, chunk_size=d.chunk,
                             shard_size_chunks=None if spec.dims.shards is None else shard // d.chunk)
                for i, (d, shard) in enumerate(zip(spec.dims.dims, spec.dims.shards or spec.dims.chunks, strict=True))]
        suffix = next((s for s in (".ome.zarr", ".zarr") if str(path).lower().endswith(s)), "")
        settings = ow.AcquisitionSettings(
            root_path=str(path), dimensions=dims, dtype=spec.dtype, compression=self._compression(spec),
            format=ow.OmeZarrFormat(backend=self.backend, suffix=suffix), storage_order="acquisition", overwrite=True)
        if Path(settings.output_path) != Path(path):
            raise ValueError(f"ome-writers would write to {settings.output_path}, not {path}")
        self.stream = ow.create_stream(settings)

    def push(self, block: np.ndarray) -> None:
        for frame in block.reshape(-1, *block.shape[-2:]):
            self.stream.append(frame)

    def array_path(self, path: Path) -> Path:
        """Where the image array lives inside the OME group (what a Zarr verifier must open)."""
        return Path(path) / "0"

    def open_reader(self, path: Path, spec: ArraySpec) -> None:
        self._reader = ZarrPythonAdapter()
        self._reader.open_reader(self.array_path(path), spec)

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        return self._reader.read(index)

    def close_reader(self) -> None:
        if getattr(self, "_reader", None) is not None:
            self._reader.close_reader()
            self._reader = None
