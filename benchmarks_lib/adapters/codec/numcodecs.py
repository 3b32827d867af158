"""numcodecs: the codecs zarr-python runs on each chunk (Blosc, Zstd, GZip, LZ4), alone in memory.

Two adapters share it. ``numcodecs`` runs every family with blosc's own threads off: the
parallelism is the caller's, chunks spread over a thread pool as zarr-python does. ``blosc`` is
the Blosc codec with blosc's own threads inside each chunk (``numcodecs.blosc.set_nthreads``),
the one whose thread count is measured.
"""

from __future__ import annotations

import numpy as np

from benchmarks_lib.adapters.codec.base import ChunkCodec, Codec
from benchmarks_lib.base.specs import CodecSpec, SpecError


class NumcodecsCodec(Codec):
    name = "numcodecs"
    order = 10
    module = "numcodecs"
    distribution = "numcodecs"
    install_hint = "pip install 'iobench-book[zarr]'  (numcodecs)"
    codecs = frozenset({"lz4", "zstd", "gzip", "blosc"})
    notes = "the codecs alone, in memory; blosc's own threads off (chunks over the caller's pool)"

    def make_codec(self, codec: CodecSpec, dtype: str) -> ChunkCodec:
        import numcodecs
        import numcodecs.blosc

        self._set_blosc_threads(numcodecs.blosc)
        if codec.family == "zstd":
            return numcodecs.Zstd(level=codec.level)
        if codec.family == "gzip":
            return numcodecs.GZip(level=codec.level)
        if codec.family == "lz4":
            return numcodecs.LZ4()
        if codec.family == "blosc":
            shuffle = {"noshuffle": numcodecs.Blosc.NOSHUFFLE, "shuffle": numcodecs.Blosc.SHUFFLE,
                       "bitshuffle": numcodecs.Blosc.BITSHUFFLE}[codec.shuffle]
            return numcodecs.Blosc(cname=codec.cname, clevel=codec.level, shuffle=shuffle,
                                   typesize=np.dtype(dtype).itemsize)
        raise SpecError(f"codec {codec} has no numcodecs codec to run in memory")

    def _set_blosc_threads(self, blosc) -> None:
        blosc.use_threads = False  # parallelism comes from the caller's chunk pool, as in zarr-python


class BloscCodec(NumcodecsCodec):
    name = "blosc"
    order = 20
    codecs = frozenset({"blosc"})
    threads_setting = "numcodecs.blosc.set_nthreads"
    notes = "numcodecs Blosc, in memory, with blosc's own threads inside each chunk"

    def _set_blosc_threads(self, blosc) -> None:
        if self.threads is not None:
            blosc.use_threads = self.threads > 1
            blosc.set_nthreads(self.threads)
