"""The tetrahedral mesh dataset (as zvtk's own benchmark builds it), its size, checks and picture.

The mesh is ``pv.ImageData(dimensions=(n, n, n)).to_tetrahedra()`` with seeded random point
and cell data, so its size is known before it is built: ``mesh_nbytes_estimate(127)`` is
about 531 MB, the "500 MB" mesh of zvtk's compression benchmark. The writers that save it
(zvtk, the VTK XML ``.vtu`` writer) are mesh adapters (``benchmarks_lib.adapters``, kind
``mesh``). pyvista is imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pyvista as pv

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.base.terminal import visible
from benchmarks_lib.measure import fresh

#: the ``dataset`` column of mesh rows
MESH_DATASET = "tet_mesh"
TETS_PER_VOXEL = 5


def mesh_shape(n: int) -> tuple[int, int]:
    """(points, cells) of the tetrahedralised n x n x n image: 5 tetrahedra per voxel."""
    return n**3, TETS_PER_VOXEL * (n - 1) ** 3


def mesh_nbytes_estimate(n: int) -> int:
    """In-memory bytes of :func:`build_tet_mesh` ``(n)`` without building it (same sum as :func:`mesh_nbytes`)."""
    points, cells = mesh_shape(n)
    # float32 xyz points, int64 connectivity (4 per tet) and offsets (cells + 1), uint8 cell
    # types, float64 point data and float64 cell data
    return points * 3 * 4 + cells * 4 * 8 + (cells + 1) * 8 + cells + points * 8 + cells * 8


def parse_mesh_n(value: Any) -> int:
    """The mesh edge length in points (>= 2): an integer or its decimal string, nothing else."""
    try:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise TypeError(value)
        n = int(value)
    except (TypeError, ValueError):
        raise SpecError(f"mesh_n {value!r} is not an integer; give the edge in points, e.g. 127 (~531 MB)") from None
    if n < 2 or n > 2000:
        raise SpecError(f"mesh_n {n} is out of range; allowed 2..2000 (127 is ~531 MB, 342 is ~10 GB)")
    return n


#: suffixes of the mesh files the compression suite measures beside the tetrahedral mesh (``file:PATH`` in its
#: ``datasets``), read with pyvista; a ``.vti`` image is an array (``adapters.user_arrays``)
MESH_SUFFIXES = (".vtu", ".vtk", ".vtp", ".vts", ".vtr", ".ply", ".stl", ".obj")


@contextlib.contextmanager
def vtk_messages(*, raise_errors: bool = False) -> Iterator[list[str]]:
    """VTK's and pyvista's messages while a person's file is read, collected in the list this yields and never
    printed: VTK writes its warnings and errors to stderr itself (in colour), pyvista logs and warns them again,
    and a crafted file puts what it likes in them (an array named with a right-to-left override, a C1 control
    and a line "iobench: all good, exit 0"). Show them with :func:`vtk_message_line`. ``raise_errors``: a VTK
    error raises ``pyvista.VTKExecutionError`` when the block ends (its message collected too)."""
    import pyvista as pv
    from vtkmodules.vtkCommonCore import vtkLogger

    messages: list[str] = []
    cutoff, logged = vtkLogger.GetCurrentVerbosityCutoff(), logging.root.manager.disable
    vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_OFF)
    logging.disable(logging.CRITICAL)
    catcher = pv.VtkErrorCatcher(raise_errors=raise_errors, send_to_logging=False)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with catcher:
                    yield messages
            finally:
                messages += [str(w.message) for w in caught] + [str(e) for e in catcher.events]
    finally:
        vtkLogger.SetStderrVerbosity(cutoff)
        logging.disable(logged)


#: the lines of a VTK message that say where, not what: VTK's source location, pyvista's naming of its reader
_WHERE = ("ERROR: In ", "Warning: In ", "The VTK reader ")


def vtk_message_line(messages: list[str], limit: int = 300) -> str:
    """The first message on one line: what VTK said (not where), every line break and hidden character shown as
    its escape (``\\n``, ``\\u202e``), at most ``limit`` characters; '' when there is none."""
    said = "\n".join(line for line in (messages[0].split("\n") if messages else [])
                     if not line.lstrip().startswith(_WHERE)).strip().strip('"')
    line = visible(said)
    line = line if len(line) <= limit else line[:limit - 1] + "\u2026"
    return line + (f" (and {len(messages) - 1} more)" if len(messages) > 1 else "")


def load_mesh(path: str | Path) -> pv.UnstructuredGrid:
    """A person's mesh file as the mesh writers take it: read with pyvista (which never writes it) and cast to an
    unstructured grid, without the ``vtkOriginalCellIds`` array a cast may add. What VTK says about the file is
    never printed: a failure's one line quotes it, escaped (``vtk_messages``)."""
    import pyvista as pv

    from benchmarks_lib.base.untrusted import regular_file

    regular_file(Path(path), "mesh file")  # a FIFO would block VTK's open, /dev/zero would read without end
    try:
        with vtk_messages(raise_errors=True) as messages:
            mesh = pv.read(path)
    except Exception as exc:  # pyvista and VTK raise many kinds for a file they cannot read
        lines = [line for line in str(exc).strip().splitlines() if not line.startswith("ERROR: In ")]
        raise SpecError(f"mesh file {str(path)!r} cannot be read by pyvista: "
                        f"{visible((lines or [type(exc).__name__])[0])}") from None
    if not isinstance(mesh, pv.DataSet) or mesh.n_points == 0:
        said = f" (VTK: {vtk_message_line(messages)})" if messages else ""
        raise SpecError(f"mesh file {str(path)!r} cannot be read by pyvista as a mesh: it read an empty "
                        f"{type(mesh).__name__}{said}")
    grid = mesh.cast_to_unstructured_grid()
    if "vtkOriginalCellIds" in grid.cell_data and "vtkOriginalCellIds" not in mesh.cell_data:
        grid.cell_data.remove("vtkOriginalCellIds")
    return grid


def mesh_digest(mesh: pv.UnstructuredGrid) -> str:
    """A checksum of every array that defines the mesh (names, dtypes, shapes and bytes)."""
    h = hashlib.blake2b(digest_size=16)
    for name, array in sorted(mesh_arrays(mesh).items()):
        array = np.ascontiguousarray(array)
        h.update(f"{name}|{array.dtype.str}|{array.shape}".encode())
        h.update(array.data)
    return h.hexdigest()


def build_tet_mesh(n: int, seed: int = 42) -> pv.UnstructuredGrid:
    """zvtk's benchmark mesh: tetrahedralised n^3 image with random ``pdata``/``cdata`` (float64).

    pyvista adds a ``vtkOriginalCellIds`` cell array; it is dropped so the mesh holds exactly the
    arrays the benchmark counts, and the stated size (the ratio's numerator) is honest.
    """
    import pyvista as pv

    grid = pv.ImageData(dimensions=(n, n, n)).to_tetrahedra()
    if "vtkOriginalCellIds" in grid.cell_data:
        grid.cell_data.remove("vtkOriginalCellIds")
    rng = np.random.default_rng(seed)
    grid["pdata"] = rng.random(grid.n_points)
    grid["cdata"] = rng.random(grid.n_cells)
    return grid


def _offsets(mesh: pv.UnstructuredGrid) -> np.ndarray:
    return mesh.cell_offsets if hasattr(mesh, "cell_offsets") else mesh.offset


def mesh_arrays(mesh: pv.UnstructuredGrid) -> dict[str, np.ndarray]:
    """Every array that defines the mesh: geometry, topology, point and cell data."""
    arrays = {
        "points": np.asarray(mesh.points),
        "connectivity": np.asarray(mesh.cell_connectivity),
        "offsets": np.asarray(_offsets(mesh)),
        "celltypes": np.asarray(mesh.celltypes),
    }
    arrays.update({f"point_data/{k}": np.asarray(v) for k, v in mesh.point_data.items()})
    arrays.update({f"cell_data/{k}": np.asarray(v) for k, v in mesh.cell_data.items()})
    return arrays


def mesh_nbytes(mesh: pv.UnstructuredGrid) -> int:
    """Uncompressed in-memory bytes of the mesh (the numerator of every compression ratio)."""
    return sum(a.nbytes for a in mesh_arrays(mesh).values())


def mesh_mismatch(expected: pv.UnstructuredGrid, actual: Any) -> str | None:
    """None when ``actual`` has exactly the points, cells and arrays of ``expected``; else why not.

    Values are compared exactly; integer widths may differ (zvtk stores connectivity as int32).
    """
    if type(actual).__name__ != type(expected).__name__:
        return f"read back a {type(actual).__name__}, expected {type(expected).__name__}"
    want, got = mesh_arrays(expected), mesh_arrays(actual)
    if set(want) != set(got):
        return f"arrays differ: expected {sorted(want)}, read back {sorted(got)}"
    for name, a in want.items():
        b = got[name]
        if a.shape != b.shape:
            return f"{name}: shape {b.shape} read back, expected {a.shape}"
        if a.dtype.kind != b.dtype.kind or (a.dtype.kind == "f" and a.dtype != b.dtype):
            return f"{name}: dtype {b.dtype} read back, expected {a.dtype}"
        if not np.array_equal(a, b):
            return f"{name}: values differ ({int(np.count_nonzero(a != b))} of {a.size})"
    return None


# -- rendering ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Rendering:
    """An offscreen picture of the mesh, or the reason there is none."""

    path: Path | None
    message: str

    @property
    def ok(self) -> bool:
        return self.path is not None


#: the colour bar of the picture: right of the mesh, with a title short enough to stay inside the picture (at the
#: right edge "pdata (random)" was cut to "pdata (rando"); the chapter says the array is random
SCALAR_BAR = {"title": "pdata", "vertical": True, "position_x": 0.86, "position_y": 0.2, "width": 0.06,
              "height": 0.6, "fmt": "%.2f", "title_font_size": 16, "label_font_size": 14}


def render_here(out: str, n: int, seed: int, size: list[int]) -> str:
    """Render in this process (the fresh child of :func:`render_mesh_png`); returns the PNG's path."""
    import pyvista as pv

    pv.OFF_SCREEN = True
    mesh = build_tet_mesh(n, seed)
    half = (n - 1) / 2
    # cut away one octant (whole tetrahedra) so the inside cells show
    cut = mesh.clip_box((half, n, half, n, half, n), crinkle=True)
    plotter = pv.Plotter(off_screen=True, window_size=tuple(size))
    plotter.add_mesh(mesh.outline(), color="gray", line_width=1)
    plotter.add_mesh(cut, scalars="pdata", show_edges=True, cmap="viridis", scalar_bar_args=SCALAR_BAR)
    plotter.camera_position = "iso"
    plotter.screenshot(out)
    plotter.close()
    return out


def render_mesh_png(out: str | Path, *, n: int = 16, seed: int = 42, window_size: tuple[int, int] = (800, 600),
                    timeout_s: float = 120) -> Rendering:
    """Render the mesh offscreen to a PNG; never raises (a failed render returns the reason).

    Runs in a child process, so a crashing OpenGL driver cannot take the caller down; tries the
    default window (when there is a display), then EGL, then OSMesa.
    """
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    windows = ([None] if os.environ.get("DISPLAY") else []) + ["vtkEGLRenderWindow", "vtkOSOpenGLRenderWindow"]
    tried = []
    for window in windows:
        kwargs = {"out": str(out), "n": int(n), "seed": int(seed), "size": list(window_size)}
        try:
            fresh.call("benchmarks_lib.data.meshes:render_here", kwargs, timeout_s=timeout_s,
                       env={"VTK_DEFAULT_OPENGL_WINDOW": window} if window else None)
        except fresh.FreshProcessError as exc:
            last = (str(exc).strip().splitlines() or ["no output"])[-1]
            tried.append(f"{window or 'default window'}: {last}")
            continue
        if out.exists() and out.stat().st_size > 0:
            return Rendering(out, f"rendered with {window or 'the default window'}")
        tried.append(f"{window or 'default window'}: no picture was written")
    return Rendering(None, "offscreen rendering is not possible here (" + "; ".join(tried) + ")")


__all__ = [
    "MESH_DATASET",
    "MESH_SUFFIXES",
    "Rendering",
    "build_tet_mesh",
    "load_mesh",
    "mesh_arrays",
    "mesh_digest",
    "mesh_mismatch",
    "mesh_nbytes",
    "mesh_nbytes_estimate",
    "mesh_shape",
    "parse_mesh_n",
    "render_mesh_png",
]
