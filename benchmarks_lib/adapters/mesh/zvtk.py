"""zvtk: a pyvista mesh as zstd frames, one per array, compressed in parallel (``n_threads``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks_lib.adapters.mesh.base import MeshWriter
from benchmarks_lib.base.specs import ZSTD_LEVELS


class ZvtkWriter(MeshWriter):
    name = "zvtk"
    order = 10
    module = "zvtk"
    distribution = "zvtk"
    install_hint = "pip install 'iobench-book[zvtk]'"
    threads_setting = "zvtk n_threads"
    extension = ".zvtk"
    compressors = ("zstd",)
    level_range = ZSTD_LEVELS
    notes = "zstd frames, one per array; levels -131072..22"

    def write(self, mesh: Any, path: Path, *, compressor: str = "zstd", level: int | None = 3) -> None:
        """zvtk.write with an explicit zstd level and thread count.

        Writing over an existing file would make the write truncate (free) the old one on the
        clock: a timed caller removes the last output first (``RoundTrip.clear``).
        """
        import zvtk

        zvtk.write(mesh, path, level=level, n_threads=self.threads)

    def read(self, path: Path) -> Any:
        import zvtk

        return zvtk.read(path, n_threads=self.threads)
