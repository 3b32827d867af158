"""Memory planned from what a person's file declares, through the real CLI (a subprocess each): lying files end in
one line (exit 2) before anything is allocated, files that legally declare gigabytes are cropped by reading the
tiles or strips under the crop, and a library that still over-allocates fails its case at the worker's memory limit,
its error row naming it. The peak RSS is the whole process tree's (a wrapper's ``RUSAGE_CHILDREN``: the command and
every worker it waited for)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from benchmarks_lib.data.datasets import checksum_array

#: the most a probe's process tree may hold at once (the TIFF bomb decoded whole took 1.6 GB)
PEAK_BYTES = 500 * 10**6
#: runs argv[3:] (under a hard RLIMIT_DATA of argv[1] bytes, 0: none) and writes the tree's peak RSS (bytes) and
#: exit status to argv[2]
WRAPPER = """
import resource, subprocess, sys
if int(sys.argv[1]):
    resource.setrlimit(resource.RLIMIT_DATA, (int(sys.argv[1]),) * 2)
rc = subprocess.run(sys.argv[3:], stdin=subprocess.DEVNULL).returncode
with open(sys.argv[2], "w") as f:
    f.write(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024} {rc}")
"""
RUN = ["run", "writers", "-d", "t:2,y:64,x:64", "--iterations", "1", "--warmups", "0", "--param", "multipliers=[1]",
       "--test", "write", "-b", "raw", "--results-dir", "results"]
#: the bombs' pages: two of SIDE x SIDE uint8 (1.6 GB each, declared), centred crops of 64x64 inside one tile
SIDE, TILE = 40000, 256


def iobench(args: list[str], cwd: Path, data_limit: int = 0) -> tuple[int, str, int]:
    """(exit status, stderr, peak RSS of the process tree) of ``iobench ARGS`` run in ``cwd``."""
    report = cwd / "peak.txt"
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(data_limit), str(report), sys.executable, "-m",
                           "benchmarks_lib", *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "IOBENCH_SCRATCH": str(cwd / "scratch")})
    peak, rc = map(int, report.read_text().split())
    return rc, done.stderr, peak


def tiff_bomb(path: Path, side: int = SIDE, rows: int | None = None, stored: bytes | None = None) -> None:
    """Two side x side uint8 zlib pages in a few MB: every segment (tiles of TILE, or strips of ``rows``) the same
    few bytes of zlib (``stored``: what each segment holds, default zeros of its size), except the tile under the
    centre of each page, which holds a ramp (so that a crop read from the wrong tile shows)."""
    import tifffile

    shape = (TILE, TILE) if rows is None else (rows, side)
    zeros = stored or zlib.compress(bytes(math.prod(shape)), 9)
    per_page = math.ceil(side / shape[0]) * math.ceil(side / shape[1])
    centre = (side // 2 // TILE) * math.ceil(side / TILE) + side // 2 // TILE if rows is None else -1
    ramp = [zlib.compress(_ramp(page).tobytes()) for page in range(2)]
    segments = (ramp[i // per_page] if i % per_page == centre else zeros for i in range(2 * per_page))
    layout = {"tile": (TILE, TILE)} if rows is None else {"rowsperstrip": rows}
    tifffile.imwrite(path, segments, shape=(2, side, side), dtype=np.uint8, compression="zlib", **layout)


def _ramp(page: int) -> np.ndarray:
    return ((np.arange(TILE)[:, None] + 3 * np.arange(TILE)[None, :] + 7 * page) % 251).astype(np.uint8)


def _centre_crop(tiled: bool) -> np.ndarray:
    """The 2x64x64 crop a run of RUN measures of a bomb: centred, inside the centre tile (zeros for strips)."""
    crop = np.zeros((2, 64, 64), np.uint8)
    if tiled:
        at = SIDE // 2 - 32 - (SIDE // 2 // TILE) * TILE
        crop[:] = [_ramp(page)[at:at + 64, at:at + 64] for page in range(2)]
    return crop


def _vti(path: Path, extent: str) -> None:
    path.write_text(f'<?xml version="1.0"?>\n<VTKFile type="ImageData" version="0.1" byte_order="LittleEndian">\n'
                    f'<ImageData WholeExtent="{extent}" Origin="0 0 0" Spacing="1 1 1"><Piece Extent="{extent}">'
                    '<PointData Scalars="v"><DataArray type="UInt16" Name="v" format="ascii">1 2 3 4</DataArray>'
                    "</PointData></Piece></ImageData></VTKFile>\n")


def _lying_npy(path: Path) -> None:
    from numpy.lib import format as npy

    with open(path, "wb") as f:
        npy.write_array_header_1_0(f, {"descr": "<u2", "fortran_order": False, "shape": (10**6, 10**6, 10**6)})
        f.write(bytes(4096))


def _zarr_chunk(path: Path) -> None:
    import zarr

    zarr.create_array(str(path), shape=(2, SIDE, SIDE), chunks=(1, SIDE, SIDE), dtype="uint16")  # metadata only


def _zarr_shard_index(path: Path) -> None:
    import zarr

    zarr.create_array(str(path), shape=(2, SIDE, SIDE), chunks=(1, 1, 1), shards=(1, SIDE, SIDE), dtype="uint8")


def _hdf5_chunk(path: Path) -> None:
    import h5py

    with h5py.File(path, "w") as f:  # no chunk written: the file is small
        f.create_dataset("data", shape=(2, SIDE, SIDE), chunks=(1, SIDE, SIDE), dtype="uint16", compression="gzip")


#: a lying file (name, how it is written, what the one line says)
LYING = {
    "one-strip.tif": (lambda p: tiff_bomb(p, 60000, rows=60000, stored=zlib.compress(bytes(4096))), "TIFF strip"),
    "huge.vti": (lambda p: _vti(p, "0 999999999 0 999999999 0 0"), "VTK image (WholeExtent)"),
    "huge.npy": (_lying_npy, "its .npy header declares shape (1000000, 1000000, 1000000)"),
    "chunk.zarr": (_zarr_chunk, "Zarr chunk of 1x40000x40000"),
    "shards.zarr": (_zarr_shard_index, "Zarr shard index"),
    "chunk.h5": (_hdf5_chunk, "HDF5 chunk of 1x40000x40000"),
}


@pytest.mark.parametrize("name", list(LYING))
def test_a_lying_file_is_one_line_before_anything_is_allocated(workdir, name):
    write, says = LYING[name]
    write(workdir / name)
    rc, err, peak = iobench([*RUN, "--dataset", f"file:{name}"], workdir)
    assert rc == 2 and says in err and err.count("\n") == 1, err
    assert peak < PEAK_BYTES, peak
    assert not (workdir / "results").exists() and not (workdir / "scratch").exists()


@pytest.mark.parametrize("rows", [None, 64], ids=["tiled", "striped"])
def test_a_tiff_bomb_is_cropped_from_the_segments_under_the_crop(workdir, rows):
    """Two 40000x40000 zlib pages in a few MB (1.6 GB each decoded): the crop reads the tiles (strips) under it."""
    tiff_bomb(workdir / "bomb.tif", rows=rows)
    assert (workdir / "bomb.tif").stat().st_size < 8 * 10**6
    rc, err, peak = iobench([*RUN, "--dataset", "file:bomb.tif", "--run-id", "bomb"], workdir)
    assert rc == 0, err
    assert peak < PEAK_BYTES, peak
    import pandas as pd

    records = sorted((workdir / "results").glob("*/bomb/records/*.parquet"))
    df = pd.concat(pd.read_parquet(p) for p in records)
    rows_ = df[df["backend"] == "raw"]
    assert (rows_["status"] == "ok").all() and rows_["verified"].all()
    assert set(rows_["source_digest"]) == {checksum_array(_centre_crop(rows is None))}


def test_advise_measure_on_a_tiff_bomb_stays_in_memory(workdir):
    tiff_bomb(workdir / "bomb.tif")
    rc, err, peak = iobench(["advise", "--like", "bomb.tif", "--access", "write", "--measure", "--budget", "10s",
                             "--results-dir", "results"], workdir)
    assert rc == 0, err
    assert peak < PEAK_BYTES, peak


def _inflating(mib: int) -> bytes:
    """A zlib stream of ``mib`` MiB of zeros, made in a moment (every MiB after the first the same bytes)."""
    deflate = zlib.compressobj(9)
    head = deflate.compress(bytes(1 << 20)) + deflate.flush(zlib.Z_FULL_FLUSH)
    after = deflate.compress(bytes(1 << 20)) + deflate.flush(zlib.Z_FULL_FLUSH)
    return head + after * (mib - 1) + deflate.flush()


def _zarr_bomb(path: Path, zarr_format: int, later: bool = False) -> None:
    import numcodecs
    import zarr

    codec = numcodecs.Zlib(1) if zarr_format == 2 else zarr.codecs.GzipCodec()
    zarr.create_array(str(path), shape=(2, 64, 64), chunks=(1, 64, 64), dtype="uint8", zarr_format=zarr_format,
                      compressors=codec)[:] = 1
    stream = _inflating(1024)
    chunks = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "zarr.json")))
    for chunk in chunks[1:] if later else chunks:  # the second frame's chunk sorts last (1.0.0, c/1/0/0)
        chunk.write_bytes(gzip_wrap(stream) if zarr_format == 3 else stream)


def gzip_wrap(stream: bytes) -> bytes:
    """A zlib stream as a gzip member (its deflate data between gzip's header and trailer; the trailer's CRC and
    size are never reached: the bound stops the inflating first)."""
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + stream[2:-4] + bytes(8)


def _hdf5_bomb(path: Path, later: bool = False) -> None:
    import h5py

    with h5py.File(path, "w") as f:
        data = f.create_dataset("data", shape=(2, 64, 64), chunks=(1, 64, 64), dtype="uint8", compression="gzip")
        data[:] = 1
        for frame in range(1 if later else 0, 2):
            data.id.write_direct_chunk((frame, 0, 0), _inflating(1024))


#: a decompression bomb (name, how it is written, given ``later``: only the second frame's chunk): chunks of 4 KiB
#: declared, each inflating to 1 GiB
BOMBS = {"zlib-v2.zarr": lambda p, later: _zarr_bomb(p, 2, later),
         "gzip-v3.zarr": lambda p, later: _zarr_bomb(p, 3, later), "deflate.h5": _hdf5_bomb}
BOMB_SAYS = "decoding a region of 4.1 kB in chunks of 4.1 kB took more than"


@pytest.mark.parametrize("name", list(BOMBS))
def test_a_decompression_bomb_is_one_line_when_the_file_is_opened(workdir, name):
    """Chunks of 4 KiB declared whose stored streams (1 MB) inflate to 1 GiB each: the first chunk is decoded,
    within what it declares, when the file is opened (``SourceArray.check_first_piece``), so the run is refused in
    one line before anything is created (before: 4.4 GB peak for Zarr; HDF5's deflate filter measured the bomb's
    zeros, exit 0; then an error row of every case, exit 1)."""
    BOMBS[name](workdir / name, False)
    rc, err, peak = iobench([*RUN, "--dataset", f"file:{name}", "--run-id", "bomb"], workdir)
    assert rc == 2 and err.count("\n") == 1, err
    assert f"{name}': {BOMB_SAYS}" in err and "inflates beyond its declared size" in err, err
    assert peak < PEAK_BYTES, peak
    assert not (workdir / "results").exists() and not (workdir / "scratch").exists()


@pytest.mark.parametrize("name", ["gzip-v3.zarr", "deflate.h5"])
def test_a_bomb_in_a_later_chunk_is_an_error_row_in_bounded_memory(workdir, name):
    """A bomb past the first chunk passes the check at open; reading the crop decodes it within what the region
    and its chunks declare (``user_source.decoded_within``), so the case ends in an error row that names the bomb,
    and nothing is measured."""
    import pandas as pd

    BOMBS[name](workdir / name, True)
    rc, err, peak = iobench([*RUN, "--dataset", f"file:{name}", "--run-id", "bomb"], workdir)
    assert rc == 1, err
    assert peak < PEAK_BYTES, peak
    run = next((workdir / "results").glob("*/bomb"))
    df = pd.concat(pd.read_parquet(p) for p in (run / "records").glob("*.parquet"))
    mine = df[df["backend"] == "raw"]
    assert set(mine["status"]) == {"error"}, mine[["operation", "status"]]
    assert all(f"dataset file '{name}': decoding a region of 8.19 kB in chunks of 4.1 kB took more than" in r and
               "inflates beyond its declared size" in r for r in mine["reason"]), mine["reason"].tolist()


@pytest.mark.parametrize("chunk", ["0.0.0", "1.0.0"], ids=["first-chunk", "later-chunk"])
def test_a_library_that_over_allocates_fails_its_case_at_the_memory_limit(workdir, chunk):
    """A Zarr v2 chunk of 64 MiB declared whose zlib stream (3 MB) inflates to 3 GiB: what its chunks declare
    allows more than the memory limit (here the hard limit the command runs under: 768 MiB), which stops it. The
    first chunk is decoded when the file is opened: one line, nothing created. A later one stops the case's
    worker, and the case's error row says so."""
    import numcodecs
    import zarr

    store = workdir / "inflates.zarr"
    zarr.create_array(str(store), shape=(8, 256, 256), chunks=(4, 4096, 4096), dtype="uint8", zarr_format=2,
                      compressors=numcodecs.Zlib(1))[:] = 1
    (store / chunk).write_bytes(_inflating(3072))
    limit = 768 << 20
    rc, err, peak = iobench([*RUN, "--dataset", "file:inflates.zarr", "--run-id", "inflates"], workdir, limit)
    assert peak < limit, peak
    if chunk == "0.0.0":
        assert rc == 2 and err.count("\n") == 1 and "took more memory than this process may hold (805 MB, " \
            "RLIMIT_DATA)" in err, err
        assert not (workdir / "results").exists()
        return
    assert rc == 1, err
    assert peak < limit, peak
    import pandas as pd

    run = next((workdir / "results").glob("*/inflates"))
    df = pd.concat(pd.read_parquet(p) for p in (run / "records").glob("*.parquet"))
    reasons = df.loc[df["status"] == "error", "reason"].tolist()
    assert reasons and all(r.startswith("out of memory: the case's worker may hold 805 MB (RLIMIT_DATA") and
                           "MemoryError" in r for r in reasons), reasons
    assert "RLIMIT_DATA" in json.loads((run / "run.json").read_text())["worker_process"]["memory_limit"]
