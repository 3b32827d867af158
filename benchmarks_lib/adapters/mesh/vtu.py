"""The VTK XML writer (``.vtu``) through pyvista's ``save``: what people would otherwise save a mesh as.

Binary, with one of VTK's compressors at its default level; it compresses on one thread
whatever the machine, so it has no threads setting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks_lib.adapters.mesh.base import MeshWriter


class VtuWriter(MeshWriter):
    name = "vtu"
    order = 20
    module = "pyvista"
    extra_modules = ("vtk",)
    distribution = "pyvista"
    extra_distributions = ("vtk",)
    install_hint = "pip install 'iobench-book[zvtk]'  (pyvista, vtk)"
    extension = ".vtu"
    #: VTK XML compressors offered by pyvista's ``DataSet.save`` ("none" writes uncompressed)
    compressors = ("none", "lz4", "zlib", "lzma")
    notes = "VTK XML, binary; one thread; uncompressed it is base64 text (~1.4x the data)"

    def write(self, mesh: Any, path: Path, *, compressor: str = "zlib", level: int | None = None) -> None:
        """Give it a path that does not exist when timing it (see :class:`ZvtkWriter`)."""
        mesh.save(path, binary=True, compression=None if compressor == "none" else compressor)

    def read(self, path: Path) -> Any:
        import pyvista as pv

        return pv.read(path)
