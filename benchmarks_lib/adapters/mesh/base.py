"""The mesh-writer contract (kind ``mesh``): one small class per mesh file format.

Lifecycle of a round trip (the suite times the write and the read, never the writer)::

    writer = make_adapter(name, threads=n, kind="mesh")
    reason = writer.is_incompatible(compressor, level)   # None, or why this point cannot run
    writer.write(mesh, path, compressor=c, level=l)       # path must not exist (removed off the clock)
    writer.output_files(path)                             # what to evict and measure
    mesh = writer.read(path)

A writer either sweeps the levels of its one compressor (``level_range`` set, e.g. zvtk's zstd)
or offers several compressors, each at its library's default level (``level_range`` None, e.g.
the VTK XML writer). The mesh itself (:mod:`benchmarks_lib.data.meshes`) is data, not an adapter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from benchmarks_lib.adapters.library import Library


class MeshWriter(Library, ABC):
    """A mesh writer/reader (kind ``mesh``); see :class:`Library` for what every adapter declares."""

    kind = "mesh"
    #: file name suffix of its output, e.g. ".zvtk"
    extension: ClassVar[str]
    #: compressors it offers ("none" writes uncompressed)
    compressors: ClassVar[tuple[str, ...]]
    #: (lowest, highest) level of its one compressor; None when levels cannot be chosen
    level_range: ClassVar[tuple[int, int] | None] = None

    def __init__(self, threads: int | None = None, option: str | None = None) -> None:
        self.threads = threads
        self.option = option

    @classmethod
    def codec_label(cls, compressor: str, level: int | None) -> str:
        """The ``codec`` column of a point: ``zstd:3``, or the compressor alone when it has no level."""
        return compressor if level is None else f"{compressor}:{level}"

    def is_incompatible(self, compressor: str, level: int | None) -> str | None:
        """Why this writer cannot write with ``compressor`` at ``level``, or None when it can."""
        if compressor not in self.compressors:
            return f"{self.name} offers {', '.join(self.compressors)}, not {compressor}"
        if level is not None and self.level_range is None:
            return f"{self.name} has no compression levels"
        if level is not None and not self.level_range[0] <= level <= self.level_range[1]:
            low, high = self.level_range
            return f"{self.name} level {level} is out of range; allowed {low}..{high}"
        if self.threads is not None and self.threads_setting is None and not self.ignores_threads:
            return f"{self.name} has no threads setting"
        return None

    def output_files(self, path: Path) -> list[Path]:
        return [path]

    @abstractmethod
    def write(self, mesh: Any, path: Path, *, compressor: str, level: int | None = None) -> None:
        """Write ``mesh`` to ``path`` (which does not exist) with ``self.threads`` where it has a setting."""

    @abstractmethod
    def read(self, path: Path) -> Any:
        """The mesh read back from ``path``."""


__all__ = ["MeshWriter"]
