"""A person's TIFF or OME-TIFF, read by region (:class:`TiffSource`, opened by
:func:`benchmarks_lib.adapters.user_arrays.open_source`): an uncompressed page through a memory map, any other page
through the tiles or strips under the region, one at a time, a zlib or LZMA segment inflated at most to its declared
size. Before tifffile reads a page, the chain of pages is counted (:func:`count_pages`: at most
:data:`MAX_TIFF_PAGES`, no loop, nothing past the file's end), and the pages' codec is checked to be installed."""

from __future__ import annotations

import lzma
import math
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks_lib.adapters.user_files import ome_other_files, open_alone
from benchmarks_lib.adapters.user_source import SourceArray, check_piece, listing, piece_limit
from benchmarks_lib.base.specs import SpecError, format_bytes

#: TIFF compressions whose segments are inflated here first, at most to their segment's declared size (zlib,
#: LZMA): tifffile's own inflating has no bound, so a lying segment of a few MB could inflate to gigabytes
_INFLATERS = {8: zlib.decompressobj, 32946: zlib.decompressobj, 34925: lzma.LZMADecompressor}
#: JPEG compressions (their segments are decoded with the page's tables)
_JPEG = (6, 7, 33007, 34892)


#: the most pages (IFDs) a TIFF may hold: tifffile reads every page's header to make its series (200,000 pages of
#: a few bytes each took more than two minutes), and a person's stack of more is better read as Zarr or HDF5
MAX_TIFF_PAGES = 100_000


def count_pages(fh: Any, path: Path) -> int:
    """The pages of the TIFF open in ``fh``, counted along its chain of IFDs before tifffile reads them (a few
    bytes each); more than :data:`MAX_TIFF_PAGES`, or a chain that loops or leaves the file, is refused in one
    line."""
    size = fh.seek(0, os.SEEK_END)
    fh.seek(0)
    head = fh.read(16)
    order = "<" if head[:2] == b"II" else ">"
    big = struct.unpack(order + "H", head[2:4])[0] == 43
    offset = struct.unpack(order + ("Q" if big else "I"), head[8:16] if big else head[4:8])[0]
    count_format, entry, next_format = ("Q", 20, "Q") if big else ("H", 12, "I")
    smallest = struct.calcsize(count_format) + struct.calcsize(next_format)  # an IFD of no entry
    seen: set[int] = set()
    while offset:
        if offset in seen or offset + smallest > size:
            how = "loops" if offset in seen else "leaves the file"
            raise SpecError(f"TIFF {str(path)!r}: its chain of pages (IFDs) {how} at byte {offset}")
        seen.add(offset)
        if len(seen) > MAX_TIFF_PAGES:
            raise SpecError(f"TIFF {str(path)!r} holds more than {MAX_TIFF_PAGES:,} pages; iobench reads a TIFF of at "
                            "most that many (convert a longer stack to Zarr or HDF5)")
        fh.seek(offset)
        raw = fh.read(struct.calcsize(count_format))
        if len(raw) < struct.calcsize(count_format):
            break
        entries = struct.unpack(order + count_format, raw)[0]
        fh.seek(offset + len(raw) + entries * entry)
        raw = fh.read(struct.calcsize(next_format))
        offset = struct.unpack(order + next_format, raw)[0] if len(raw) == struct.calcsize(next_format) else 0
    fh.seek(0)
    return len(seen)


class TiffSource(SourceArray):
    """A TIFF or OME-TIFF series (``inner``: its index, default 0) at full resolution, read by region: an
    uncompressed page through a memory map, any other through the tiles or strips under the region, one at a time.

    Coordinates within a page are tifffile's normalized ones, (separate samples, depth, length, width, contiguous
    samples): the page's shape is that with its axes of length 1 dropped."""

    format = "tiff"

    def __init__(self, path: Path, inner: str | None) -> None:
        import tifffile

        super().__init__(path)
        self._fh = open_alone(path)  # tifffile opens no other file a TIFF names
        try:
            count_pages(self._fh, path)
            self._tif = tifffile.TiffFile(self._fh, name=path.name)
        except BaseException:
            self._fh.close()
            raise
        try:
            if others := ome_other_files(self._tif.ome_metadata, path.name):
                raise SpecError(f"OME-TIFF {str(path)!r} spreads its image over other files too "
                                f"({listing(others)}); iobench reads a TIFF that holds its whole image")
            series = self._tif.series
            if inner is not None and not (inner.isdigit() and int(inner) < len(series)):
                raise SpecError(f"TIFF {str(path)!r} has no series {inner!r}; it has {len(series)} "
                                f"(0..{len(series) - 1})")
            self._series = series[int(inner or 0)].levels[0]
            self._page_shape = tuple(self._series.keyframe.shape)
            self._lead = self._series.shape[:len(self._series.shape) - len(self._page_shape)]
            if (tuple(self._series.shape[len(self._lead):]) != self._page_shape
                    or len(self._series.pages) != math.prod(self._lead)):
                raise SpecError(f"TIFF {str(path)!r}: series of shape {self._series.shape} is not a stack of "
                                f"{self._page_shape} pages; it cannot be read page by page")
            self._plan_pieces()
        except BaseException:
            self.close()
            raise
        self.inner, self._array = inner, self._series  # shape and dtype from the series; read by region

    def _plan_pieces(self) -> None:
        """The page's normalized shape, its segments' shape and grid, and whether it is memory-mapped; a segment
        larger than :func:`piece_limit`, or a mapped page reaching past the file, refused."""
        key = self._series.keyframe
        self._shaped = tuple(key.shaped)
        self._axes = _page_axes(self._page_shape, self._shaped)
        if self._axes is None:
            raise SpecError(f"TIFF {str(self.path)!r}: pages of shape {self._page_shape} do not match their layout "
                            f"{self._shaped}; they cannot be read by region")
        self._mapped = bool(key.is_final and key.dtype is not None and key.dtype.itemsize * 8 == key.bitspersample)
        if self._mapped:
            self._check_mapped(self._series.pages[0])
            return
        self._check_codec(key)
        _, _, length, width, samples = self._shaped
        if key.is_tiled:
            segment = (1, key.tiledepth, key.tilelength, key.tilewidth, samples)
        else:
            segment = (1, 1, max(1, min(key.rowsperstrip, length)), width, samples)
        self._segment = segment
        self._grid = tuple(-(-n // s) for n, s in zip(self._shaped[:4], segment[:4], strict=True))
        check_piece(self.path, "TIFF tile" if key.is_tiled else "TIFF strip",
                    tuple(n for n in segment[1:] if n > 1) or (1,), key.dtype.itemsize)
        if math.prod(self._grid) != len(key.dataoffsets):
            raise SpecError(f"TIFF {str(self.path)!r}: pages of {self._page_shape} in segments of {segment[1:4]} need "
                            f"{math.prod(self._grid)} segments; the file lists {len(key.dataoffsets)}")

    def _check_codec(self, key: Any) -> None:
        """The codec the pages are compressed with is there (tifffile names it and imports it only when a segment is
        decoded: a ZSTD or JPEG XL page needs imagecodecs): one line when the file is opened, not an error row."""
        import tifffile

        code = int(key.compression)
        name = getattr(key.compression, "name", str(code))
        try:
            tifffile.TIFF.DECOMPRESSORS[code](b"")
        except (ImportError, KeyError) as exc:  # tifffile: KeyError "LZW requires the 'imagecodecs' package"
            raise SpecError(f"TIFF {str(self.path)!r} is compressed with {name} ({code}), whose codec is not "
                            f"installed here ({str(exc).strip(chr(34))}); install imagecodecs (pip install "
                            "imagecodecs)") from None
        except Exception:  # the codec is there: an empty segment is no stream (its own error)
            pass

    def _check_mapped(self, page: Any) -> None:
        """An uncompressed page whose data lies in one run of bytes inside the file."""
        offsets, counts = page.dataoffsets, page.databytecounts
        nbytes = math.prod(self._shaped) * self._series.keyframe.dtype.itemsize
        if (sum(counts) != nbytes or any(o + c != n for o, c, n in zip(offsets, counts, offsets[1:], strict=False))
                or offsets[0] + nbytes > self._tif.filehandle.size):
            raise SpecError(f"TIFF {str(self.path)!r}: an uncompressed page of {self._page_shape} "
                            f"({format_bytes(nbytes)}) is not stored whole inside the file")

    def read(self, index: tuple[slice, ...]) -> np.ndarray:
        lead, rest = index[:len(self._lead)], index[len(self._lead):]
        out = np.empty(tuple(s.stop - s.start for s in index), dtype=self.dtype)
        region = [slice(0, 1)] * 5
        for axis, sl in zip(self._axes, rest, strict=True):
            region[axis] = sl
        for pos in np.ndindex(*(s.stop - s.start for s in lead)):
            at = tuple(p + s.start for p, s in zip(pos, lead, strict=True))
            page = self._series.pages[int(np.ravel_multi_index(at, self._lead)) if self._lead else 0]
            values = self._mapped_region(page, region) if self._mapped else self._segments_region(page, region)
            out[pos] = values.reshape(out.shape[len(lead):])
        return out

    def _mapped_region(self, page: Any, region: list[slice]) -> np.ndarray:
        self._check_mapped(page)
        key = self._series.keyframe
        # the file we opened ourselves (tifffile holds it without a descriptor: its raw file has one)
        mapped = np.memmap(self._fh.raw, dtype=key.dtype.newbyteorder(self._tif.byteorder), mode="r",
                           offset=page.dataoffsets[0], shape=self._shaped)
        try:
            return np.array(mapped[tuple(region)], dtype=self.dtype)
        finally:
            mapped._mmap.close()

    def _segments_region(self, page: Any, region: list[slice]) -> np.ndarray:
        """The region of a page from the segments (tiles, strips) under it, decoded one at a time."""
        key = self._series.keyframe
        out = np.zeros(tuple(s.stop - s.start for s in region), dtype=self.dtype)  # an empty segment reads as 0
        decode_args: dict[str, Any] = {"_fullsize": key.is_tiled}
        if key.compression in _JPEG:
            decode_args.update(jpegtables=getattr(page, "jpegtables", None), jpegheader=key.jpegheader)
        ranges = [range(s.start // n, -(-s.stop // n)) for s, n in zip(region[:4], self._segment[:4], strict=True)]
        for cell in np.ndindex(*(len(r) for r in ranges)):
            number = int(np.ravel_multi_index(tuple(r[i] for r, i in zip(ranges, cell, strict=True)), self._grid))
            values, at, shape = key.decode(self._segment_bytes(page, number), number, **decode_args)
            if values is None:
                continue
            values = values.reshape((1, *shape))
            piece, target = [], []
            for start, length, want in zip(at, values.shape, region, strict=True):
                lo, hi = max(start, want.start), min(start + length, want.stop)
                piece.append(slice(lo - start, hi - start))
                target.append(slice(lo - want.start, hi - want.start))
            out[tuple(target)] = values[tuple(piece)]
        return out

    def _segment_bytes(self, page: Any, number: int) -> bytes | None:
        """A segment's encoded bytes (None: not stored); refused when they declare, or inflate to, more than the
        segment holds."""
        offset, count = page.dataoffsets[number], page.databytecounts[number]
        if not offset or not count:
            return None
        key, limit = self._series.keyframe, piece_limit()
        if count > limit:
            raise SpecError(f"TIFF {str(self.path)!r}: a segment of {format_bytes(count)} is more than the "
                            f"{format_bytes(limit)} a piece read whole may take here")
        fh = self._tif.filehandle
        with fh.lock:
            fh.seek(offset)
            data = fh.read(count)
        inflater = _INFLATERS.get(int(key.compression))
        if inflater is not None:
            size = math.prod(self._segment) * key.dtype.itemsize
            if len(inflater().decompress(data, size + 1)) > size:
                raise SpecError(f"TIFF {str(self.path)!r}: a segment inflates to more than {format_bytes(size)}, "
                                "the size its page's layout declares")
        return data

    def close(self) -> None:
        self._tif.close()
        self._fh.close()


def _page_axes(shape: tuple[int, ...], shaped: tuple[int, ...]) -> tuple[int, ...] | None:
    """Which of tifffile's 5 normalized axes each axis of a page's ``shape`` is (its axes of length 1 dropped);
    None where ``shape`` is not ``shaped`` so."""
    axes, at = [], 0
    for axis, n in enumerate(shaped):
        if at < len(shape) and shape[at] == n:
            axes.append(axis)
            at += 1
        elif n != 1:
            return None
    return tuple(axes) if at == len(shape) else None


__all__ = ["MAX_TIFF_PAGES", "TiffSource", "count_pages"]
