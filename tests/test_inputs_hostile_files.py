"""A person's files that are not what they say, through the real CLI (a process each: ``forked_cli``), as a
hostile user would make them: FIFOs, devices, sockets and links where a file goes (inside a Zarr store, behind an
HDF5 dataset's external raw files, virtual sources and external links, in an OME-Zarr level's path), metadata too
large, and headers that lie (void dtypes, NaN fill values, negative shapes, link loops, junk TIFFs, truncated HDF5).

Each probe must end quickly (a FIFO must never hang), with exit 2 and one line on stderr (no traceback), and leave
the tree as it was: no run directory, no scratch, and the person's files untouched (``tree_digest`` never opens a
FIFO or follows a link).
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli_hostile import iobench, tree_digest

from benchmarks_lib.adapters.user_tiff import MAX_TIFF_PAGES

TINY = ["-d", "t:2,y:16,x:16", "--iterations", "1", "--warmups", "0", "--param", "multipliers=[1]", "--test",
        "write", "-b", "raw"]
#: a probe that takes longer than this hangs (a FIFO opened for reading waits for a writer forever)
HANG_S = 90
#: ``advise --like PATH``: the workload's data taken from a file
LIKE = ["advise", "--access", "full-read", "--like"]


def _zarr3(path: Path, shape=(4, 16, 16), chunks=(2, 8, 8)) -> Path:
    import zarr

    zarr.create_array(str(path), shape=shape, chunks=chunks, dtype="uint16")[:] = 7
    return path


def _zarr2(path: Path, **meta) -> Path:
    import zarr

    zarr.create_array(str(path), shape=(4, 16, 16), chunks=(2, 8, 8), dtype="uint16", zarr_format=2)[:] = 7
    if meta:
        zarray = json.loads((path / ".zarray").read_text())
        (path / ".zarray").write_text(json.dumps({**zarray, **meta}))
    return path


def _replace(path: Path, by: str | None) -> None:
    """``path`` made a FIFO (``by`` None) or a symbolic link to ``by``."""
    path.unlink()
    if by is None:
        os.mkfifo(path)
    else:
        path.symlink_to(by)


def _ome_zarr(path: Path, datasets: list) -> Path:
    import zarr

    group = zarr.open_group(str(path), mode="w")
    group.create_array("0", shape=(4, 16, 16), dtype="uint16")[:] = 7
    group.attrs["multiscales"] = [{"version": "0.4", "datasets": datasets}]
    return path


def _hdf5_files(d: Path) -> None:
    import h5py

    raw = np.full((4, 16, 16), 7, np.uint16)
    os.mkfifo(d / "h5" / "raw.fifo")
    (d / "secret").mkdir()
    raw.tofile(d / "secret" / "outside.bin")
    for name, target in {"efifo.h5": "raw.fifo", "ezero.h5": "/dev/zero", "epasswd.h5": "/etc/passwd",
                         "eoutside.h5": str(d / "secret" / "outside.bin")}.items():
        with h5py.File(d / "h5" / name, "w") as f:
            f.create_dataset("data", shape=raw.shape, dtype=raw.dtype, external=[(target, 0, raw.nbytes)])
    for source in (d / "h5" / "source.h5", d / "secret" / "x.h5"):
        with h5py.File(source, "w") as f:
            f["data"] = raw
    os.mkfifo(d / "h5" / "fifo.h5")
    for name, source in {"vpasswd.h5": "/etc/passwd", "vfifo.h5": "fifo.h5", "vmissing.h5": "missing.h5",
                         "vout.h5": "../secret/x.h5"}.items():
        layout = h5py.VirtualLayout(shape=raw.shape, dtype=raw.dtype)
        layout[:] = h5py.VirtualSource(source, "data", shape=raw.shape)
        with h5py.File(d / "h5" / name, "w") as f:
            f.create_virtual_dataset("data", layout)
    for name, target in {"lfifo.h5": "fifo.h5", "lout.h5": str(d / "secret" / "x.h5")}.items():
        with h5py.File(d / "h5" / name, "w") as f:
            f["data"] = h5py.ExternalLink(target, "/data")
    with h5py.File(d / "h5" / "loop.h5", "w") as f:
        f["a"] = h5py.SoftLink("/b")
        f["b"] = h5py.SoftLink("/a")
        f["data"] = raw
    whole = (d / "h5" / "source.h5").read_bytes()
    (d / "h5" / "truncated.h5").write_bytes(whole[:len(whole) // 3])


def _npy_header(shape: str) -> bytes:
    header = "{'descr': '<u2', 'fortran_order': False, 'shape': " + shape + ", }"
    header += " " * (63 - len(header) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()


def _vti(extent: str) -> str:
    return (f'<?xml version="1.0"?>\n<VTKFile type="ImageData" version="1.0" byte_order="LittleEndian">\n'
            f'<ImageData WholeExtent="{extent}" Origin="0 0 0" Spacing="1 1 1">\n<Piece Extent="{extent}">\n'
            '<PointData Scalars="v"><DataArray type="UInt16" Name="v" format="ascii">1 2 3 4</DataArray>'
            '</PointData>\n</Piece>\n</ImageData>\n</VTKFile>\n')


def _ome_tiff_naming(path: Path, other: str) -> None:
    """An OME-TIFF whose OME-XML says its second plane lies in the file ``other``."""
    tifffile = pytest.importorskip("tifffile")
    plane = np.zeros((1, 16, 16), np.uint16)
    tifffile.imwrite(path, plane, ome=True, metadata={"axes": "ZYX"})
    with tifffile.TiffFile(path) as tif:
        xml = tif.ome_metadata
    planes = ('<TiffData IFD="0" FirstZ="0" PlaneCount="1"><UUID FileName="{}">urn:uuid:1</UUID></TiffData>'
              '<TiffData IFD="0" FirstZ="1" PlaneCount="1"><UUID FileName="{}">urn:uuid:2</UUID></TiffData>')
    xml = xml.replace('SizeZ="1"', 'SizeZ="2"').replace('<TiffData IFD="0" PlaneCount="1"/>',
                                                          planes.format(path.name, other))
    tifffile.imwrite(path, plane, description=xml, metadata=None)


def _zstd_tiff(path: Path) -> None:
    """A tiled TIFF whose pages say ZSTD (compression 50000): its codec is not installed here (imagecodecs)."""
    import tifffile

    tifffile.imwrite(path, np.zeros((64, 64), np.uint16), tile=(32, 32))
    with tifffile.TiffFile(path) as tif:
        at = tif.pages[0].tags["Compression"].valueoffset
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(struct.pack("<H", 50000))


def _ifds(pages: int, loop: bool = False) -> bytes:
    """A classic TIFF of ``pages`` empty pages (IFDs of no entry, 6 bytes each); ``loop``: the last leads back to
    the first."""
    ifds = b"".join(struct.pack("<HI", 0, 8 + 6 * (i + 1) if i + 1 < pages else (8 if loop else 0))
                    for i in range(pages))
    return b"II*\x00" + struct.pack("<I", 8) + ifds


def _hostile_data(d: Path) -> None:
    """The data folder of the probes, every file made as a hostile user would (nothing here is read by the test)."""
    d.mkdir()
    (d / "h5").mkdir()
    import h5py
    import zarr

    # 1x1x1 chunks: metadata of a few hundred bytes that would schedule millions of chunk reads
    zarr.create_array(str(d / "tiny3.zarr"), shape=(128, 128, 128), chunks=(1, 1, 1), dtype="uint16")
    with h5py.File(d / "h5" / "tiny.h5", "w") as f:
        f.create_dataset("x", shape=(128, 128, 128), chunks=(1, 1, 1), dtype="uint16")
    with h5py.File(d / "h5" / "nofilter.h5", "w") as f:  # chunks through a filter no HDF5 plugin provides
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((16, 64, 64))
        dcpl.set_filter(31999, h5py.h5z.FLAG_OPTIONAL, ())
        h5py.h5d.create(f.id, b"x", h5py.h5t.STD_U16LE, h5py.h5s.create_simple((64, 64, 64)), dcpl=dcpl)
    for name in ("fifo3.zarr", "fifo3b.zarr", "zero3.zarr", "big3.zarr"):
        _zarr3(d / name)
    _replace(d / "fifo3.zarr" / "zarr.json", None)
    _replace(d / "fifo3b.zarr" / "zarr.json", None)
    _replace(d / "zero3.zarr" / "zarr.json", "/dev/zero")
    with open(d / "big3.zarr" / "zarr.json", "r+b") as fh:
        fh.truncate(2**20 + 1)  # sparse: a metadata file of 1 MiB and a byte
    chunk = Path("c", "0", "0", "0")
    for name, by in {"chunkfifo.zarr": None, "chunkzero.zarr": "/dev/zero", "chunkout.zarr": "/etc/passwd"}.items():
        _replace(_zarr3(d / name) / chunk, by)
    _replace(_zarr2(d / "fifo2.zarr") / ".zarray", None)
    _replace(_zarr2(d / "zattrs2.zarr") / ".zattrs", "/dev/zero")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(d / "sock3.zarr"))  # a socket where a store goes
    sock.close()
    _zarr2(d / "void2.zarr", dtype="|V8", fill_value=[1, 2])
    _zarr2(d / "nanfill2.zarr", fill_value="NaN")
    _zarr2(d / "textfill2.zarr", fill_value="abc")
    _zarr2(d / "chunk0_2.zarr", chunks=[0, 8, 8])
    zarr_json = json.loads((_zarr3(d / "chunk0_3.zarr") / "zarr.json").read_text())
    zarr_json["chunk_grid"]["configuration"]["chunk_shape"] = [0, 8, 8]
    (d / "chunk0_3.zarr" / "zarr.json").write_text(json.dumps(zarr_json))
    _ome_zarr(d / "traversal.ome.zarr", [{"path": "../.."}])
    _ome_zarr(d / "absolute.ome.zarr", [{"path": "/etc"}])
    _ome_zarr(d / "missing.ome.zarr", [{"path": "7"}])
    _ome_zarr(d / "junk.ome.zarr", [["not", "a", "level"]])
    os.mkfifo(d / "x.fifo")
    (d / "zero.npy").symlink_to("/dev/zero")
    os.mkfifo(d / "mesh.vtu")
    (d / "zero.vtu").symlink_to("/dev/zero")
    _hdf5_files(d)
    (d / "negative.npy").write_bytes(_npy_header("(-4, 16, 16)") + b"\0" * 64)
    os.mkfifo(d / "plane.fifo")
    _ome_tiff_naming(d / "planes.ome.tif", "plane.fifo")
    (d / "junk.tif").write_bytes(b"II*\x00" + random.Random(28).randbytes(60))
    (d / "far.tif").write_bytes(b"II*\x00" + (2**31).to_bytes(4, "little") + b"\0" * 56)
    _zstd_tiff(d / "zstd.tif")
    (d / "pages.tif").write_bytes(_ifds(MAX_TIFF_PAGES + 1))
    (d / "loop.tif").write_bytes(_ifds(3, loop=True))
    (d / "negative.vti").write_text(_vti("0 -5 0 1 0 1"))
    (d / "junk.vti").write_text('<?xml version="1.0"?>\n<VTKFile type="ImageData"><ImageData WholeExtent="a b')


D = "data"
PROBES: dict[str, list[str]] = {
    # -- only regular files are read: FIFOs, devices, sockets and links leading out are refused (item 2)
    "zarr-json-fifo-run": ["run", "writers", *TINY, "--dataset", f"file:{D}/fifo3.zarr"],
    "zarr-json-fifo-advise": [*LIKE, f"{D}/fifo3b.zarr"],
    "zarr-json-link-to-dev-zero": ["run", "writers", *TINY, "--dataset", f"file:{D}/zero3.zarr"],
    "zarr-json-over-1mib": ["run", "writers", *TINY, "--dataset", f"file:{D}/big3.zarr"],
    "zarr-chunk-fifo": ["run", "writers", *TINY, "--dataset", f"file:{D}/chunkfifo.zarr"],
    "zarr-chunk-link-to-dev-zero": ["run", "writers", *TINY, "--dataset", f"file:{D}/chunkzero.zarr"],
    "zarr-chunk-link-out-of-store": ["run", "writers", *TINY, "--dataset", f"file:{D}/chunkout.zarr"],
    "zarr2-zarray-fifo": ["run", "writers", *TINY, "--dataset", f"file:{D}/fifo2.zarr"],
    "zarr2-zattrs-link-to-dev-zero": ["run", "writers", *TINY, "--dataset", f"file:{D}/zattrs2.zarr"],
    "store-a-socket": ["run", "writers", *TINY, "--dataset", f"file:{D}/sock3.zarr"],
    "file-fifo-run": ["run", "writers", *TINY, "--dataset", f"file:{D}/x.fifo"],
    "file-fifo-advise": [*LIKE, f"{D}/x.fifo"],
    "file-link-to-dev-zero": ["run", "writers", *TINY, "--dataset", f"file:{D}/zero.npy"],
    "file-a-character-device": [*LIKE, "/dev/null"],
    # the kernel's "regular" files: a process's memory, a pseudo file that never ends (item 4 of the hostile round)
    "file-proc-self-mem": ["run", "writers", *TINY, "--dataset", "file:/proc/self/mem"],
    "file-proc-status-advise": [*LIKE, "/proc/self/status"],
    "store-in-sysfs": ["run", "writers", *TINY, "--dataset", "file:/sys/kernel"],
    "mesh-fifo": ["run", "compression", "--param", f'datasets=["file:{D}/mesh.vtu"]'],
    "mesh-link-to-dev-zero": ["run", "compression", "--param", f'datasets=["file:{D}/zero.vtu"]'],
    "hdf5-external-raw-fifo": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/efifo.h5"],
    "hdf5-external-raw-dev-zero": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/ezero.h5"],
    "hdf5-external-raw-etc-passwd": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/epasswd.h5"],
    "hdf5-external-raw-outside-dir": [*LIKE, f"{D}/h5/eoutside.h5"],
    "hdf5-virtual-etc-passwd": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/vpasswd.h5"],
    "hdf5-virtual-fifo": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/vfifo.h5"],
    "hdf5-virtual-missing": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/vmissing.h5"],
    "hdf5-virtual-parent-dir": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/vout.h5"],
    "hdf5-external-link-fifo": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/lfifo.h5:/data"],
    "hdf5-external-link-outside": [*LIKE, f"{D}/h5/lout.h5:/data"],
    "ome-tiff-plane-in-a-fifo": ["run", "writers", *TINY, "--dataset", f"file:{D}/planes.ome.tif"],
    "ome-zarr-level-path-traversal": ["run", "writers", *TINY, "--dataset", f"file:{D}/traversal.ome.zarr"],
    "ome-zarr-level-absolute-path": [*LIKE, f"{D}/absolute.ome.zarr"],
    # -- every reader-side failure is one line (item 6)
    "zarr2-void-dtype": ["run", "writers", *TINY, "--dataset", f"file:{D}/void2.zarr"],
    "zarr2-nan-fill-value": ["run", "writers", *TINY, "--dataset", f"file:{D}/nanfill2.zarr"],
    "zarr2-text-fill-value": [*LIKE, f"{D}/textfill2.zarr"],
    "zarr2-chunk-shape-0": ["run", "writers", *TINY, "--dataset", f"file:{D}/chunk0_2.zarr"],
    "zarr3-chunk-shape-0": ["run", "writers", *TINY, "--dataset", f"file:{D}/chunk0_3.zarr"],
    "ome-zarr-missing-level": ["run", "writers", *TINY, "--dataset", f"file:{D}/missing.ome.zarr"],
    "ome-zarr-junk-multiscales": [*LIKE, f"{D}/junk.ome.zarr"],
    "npy-negative-shape": ["run", "writers", *TINY, "--dataset", f"file:{D}/negative.npy"],
    "hdf5-soft-link-loop": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/loop.h5:/a"],
    "hdf5-truncated": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/truncated.h5"],
    "tiff-junk": ["run", "writers", *TINY, "--dataset", f"file:{D}/junk.tif"],
    "tiff-first-page-past-the-end": [*LIKE, f"{D}/far.tif"],
    "tiff-codec-not-installed": ["run", "writers", *TINY[:1], "y:16,x:16", *TINY[2:], "--dataset",
                                 f"file:{D}/zstd.tif"],
    "tiff-100001-pages": [*LIKE, f"{D}/pages.tif"],
    "tiff-pages-in-a-loop": [*LIKE, f"{D}/loop.tif"],
    "vti-negative-extent": ["run", "writers", *TINY, "--dataset", f"file:{D}/negative.vti"],
    "vti-junk": [*LIKE, f"{D}/junk.vti"],
    # -- work planned from the declarations before any is done (the hostile round's item 2)
    "zarr-one-element-chunks": ["run", "writers", *TINY, "--dataset", f"file:{D}/tiny3.zarr"],
    "hdf5-one-element-chunks": [*LIKE, f"{D}/h5/tiny.h5"],
    "hdf5-filter-not-installed": ["run", "writers", *TINY, "--dataset", f"file:{D}/h5/nofilter.h5"],
    "path-5000-characters": ["run", "writers", *TINY, "--dataset", "file:" + "p" * 5000 + ".npy"],
    "path-unknown-home": [*LIKE, "~no-such-user-here/x.npy"],
}

#: probe -> what its one line must say
SAID = {"zarr-json-fifo-run": ["zarr.json", "is a FIFO"],
        "zarr-json-link-to-dev-zero": ["zarr.json", "leads out of the store"],
        "zarr-json-over-1mib": ["at most 1 MiB is read"], "zarr-chunk-fifo": ["c/0/0/0", "is a FIFO"],
        "zarr-chunk-link-out-of-store": ["leads out of"], "file-fifo-run": ["x.fifo", "is a FIFO"],
        "store-a-socket": ["is a socket"], "hdf5-external-raw-fifo": ["raw.fifo", "FIFO"],
        "hdf5-virtual-etc-passwd": ["/etc/passwd"], "hdf5-external-link-fifo": ["fifo.h5", "FIFO"],
        "ome-zarr-level-path-traversal": ["'../..'"], "hdf5-soft-link-loop": ["loop.h5"],
        "ome-zarr-missing-level": ["'7'"], "ome-tiff-plane-in-a-fifo": ["plane.fifo"],
        "npy-negative-shape": ["negative.npy"], "file-proc-self-mem": ["lies on proc"],
        "file-proc-status-advise": ["lies on proc"], "zarr-one-element-chunks": ["2,097,152 Zarr chunks of 1x1x1"],
        "hdf5-one-element-chunks": ["2,097,152 HDF5 chunks", "64 KiB"],
        "hdf5-filter-not-installed": ["needs filter 31999", "hdf5plugin"], "store-in-sysfs": ["lies on sysfs"],
        "tiff-codec-not-installed": ["ZSTD (50000)", "imagecodecs"], "tiff-100001-pages": ["more than 100,000 pages"],
        "tiff-pages-in-a-loop": ["loops at byte 8"]}


@pytest.fixture(scope="module")
def hostile_data(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """ONE home holding the data folder of every probe (each probe proves it left the tree as it was)."""
    home = tmp_path_factory.mktemp("hostile-files")
    _hostile_data(home / D)
    return home, tree_digest(home)


@pytest.mark.parametrize("name", list(PROBES))
def test_a_hostile_file_is_refused_in_one_line_quickly(hostile_data: tuple[Path, dict[str, str]], name: str):
    home, before = hostile_data
    try:
        proc = iobench(PROBES[name], home, timeout=HANG_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name} hung (no answer in {HANG_S} s)")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("iobench"), lines
    assert all(word in lines[0] for word in SAID.get(name, ())), lines
    assert tree_digest(home) == before  # no run directory, no scratch, the data as it was


def test_at_least_48_probes():
    """The count SECURITY.md states: every kind of hostile file tried through the real command line."""
    assert len(PROBES) >= 48


def test_the_links_and_names_of_a_well_made_file_are_still_followed(tmp_path: Path, monkeypatch):
    """What the checks allow: a store given through a link, a chunk linked within its store, and an HDF5 dataset's
    external raw file, virtual source and external link beside the file, read from another working directory
    (HDF5 is told to look beside the file, not in the current directory)."""
    import h5py

    from benchmarks_lib.adapters.user_arrays import open_source
    from benchmarks_lib.inputs.user_data import parse_file_dataset

    d = tmp_path / "data"
    store = _zarr3(d / "stack.zarr")
    (store / "c" / "1" / "1" / "1").unlink()
    (store / "c" / "1" / "1" / "1").symlink_to("../../0/0/0")  # the same values: every chunk is 7
    (tmp_path / "linked.zarr").symlink_to(store)
    raw = np.arange(4 * 16 * 16, dtype=np.uint16).reshape(4, 16, 16)
    raw.tofile(d / "raw.bin")
    with h5py.File(d / "source.h5", "w") as f:
        f["data"] = raw
    with h5py.File(d / "external.h5", "w") as f:
        f.create_dataset("data", shape=raw.shape, dtype=raw.dtype, external=[("raw.bin", 0, raw.nbytes)])
    layout = h5py.VirtualLayout(shape=raw.shape, dtype=raw.dtype)
    layout[:] = h5py.VirtualSource("source.h5", "data", shape=raw.shape)
    with h5py.File(d / "virtual.h5", "w") as f:
        f.create_virtual_dataset("data", layout)
    with h5py.File(d / "master.h5", "w") as f:
        f["entry/data"] = h5py.ExternalLink("virtual.h5", "/data")
        f["soft"] = h5py.SoftLink("/entry/data")
    everything = tuple(slice(0, n) for n in raw.shape)
    with open_source(tmp_path / "linked.zarr") as source:
        assert (source.read(everything) == 7).all()
    monkeypatch.chdir("/")
    for name in ("external.h5", "virtual.h5", "master.h5:/soft"):
        spec = parse_file_dataset(f"file:{d / name}")
        with open_source(spec.path, spec.inner) as source:
            assert np.array_equal(source.read(everything), raw), name


def _env(home: Path) -> dict:
    return {**os.environ, "IOBENCH_SCRATCH": str(home / "scratch")}


def _records(home: Path) -> pd.DataFrame:
    files = sorted((home / "results").rglob("*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def test_a_fifo_swapped_in_after_the_check_fails_its_case_at_once_and_the_row_names_no_directory(tmp_path: Path):
    """Past the checks before the run, every read of a store is checked again: a chunk made a FIFO once the run
    has started fails its case with a reason (no hang until the case's timeout), and the reason names the store by
    its name, never the directory it was given in (``file:``, not ``file+path:``)."""
    store = _zarr3(tmp_path / "data" / "stack.zarr")
    run = subprocess.Popen([sys.executable, "-m", "benchmarks_lib", "run", "writers", *TINY, "--dataset",
                            "file:data/stack.zarr", "--run-id", "swapped"], cwd=tmp_path, env=_env(tmp_path),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not list((tmp_path / "results").glob("*/swapped/run.json")):  # checked: the ceiling case runs first
            assert run.poll() is None, run.communicate()
            time.sleep(0.005)
        _replace(store / "c" / "0" / "0" / "0", None)
        _, err = run.communicate(timeout=HANG_S)
    finally:
        run.kill()
    assert run.returncode == 1, err[-2000:]  # the case failed; the run finished
    rows = _records(tmp_path)
    reasons = rows.loc[rows["status"] == "error", "reason"]
    assert len(reasons) and reasons.str.contains("'stack.zarr/c/0/0/0' is a FIFO").all(), reasons.tolist()
    run_json = next((tmp_path / "results").glob("*/swapped/run.json")).read_text()
    text = json.dumps(rows.astype(str).to_numpy().tolist()) + run_json
    assert str(tmp_path) not in text  # no row, no reason, no run.json names the directory


def _reader_of(pid: int) -> int | None:
    """The pid of ``pid``'s child that reads a person's file (``user_files.inspect``), if it runs."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
                command = (entry / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid and b"_inspect_here" in command:
                return int(entry.name)
    return None


@pytest.mark.parametrize("command", [["run", "writers", *TINY, "--dataset", "file:data/stack.zarr"],
                                     [*LIKE, "data/stack.zarr"]])
def test_sigterm_ends_a_command_whose_file_reader_is_stuck(tmp_path: Path, command: list[str]):
    """A library stuck in I/O (a dead mount; a FIFO swapped in past the checks) cannot be ended by a signal, only
    killed: the file is read in a child that is, so SIGTERM ends the command at once (143, nothing created). The
    reader is stopped (SIGSTOP) to stand for a read that never returns."""
    _zarr3(tmp_path / "data" / "stack.zarr")
    before = tree_digest(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks_lib", *command], cwd=tmp_path, env=_env(tmp_path),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while (reader := _reader_of(proc.pid)) is None:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.002)
        os.kill(reader, signal.SIGSTOP)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=HANG_S)
    finally:
        proc.kill()
    assert proc.returncode == 143, err[-2000:]
    assert "Traceback" not in err and "terminated (SIGTERM)" in err
    assert not Path(f"/proc/{reader}").exists() or "Z" in Path(f"/proc/{reader}/stat").read_text().split()[2]
    assert tree_digest(tmp_path) == before
