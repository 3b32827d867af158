"""The in-memory codec contract (kind ``codec``): a library's compressors run on chunks in memory.

No files: what is measured is the codec alone, as an array library runs it on each chunk::

    adapter = make_adapter(name, threads=n, kind="codec")
    reason = adapter.is_incompatible(codec_spec)     # None, or why this codec cannot run
    codec = adapter.make_codec(codec_spec, dtype)    # built and its threads applied, off the clock
    data = codec.encode(chunk)                       # timed by the suite, chunk by chunk
    chunk = codec.decode(data)

``make_codec`` returns the library's own codec object, so the suite's timed region calls the
library directly. An adapter with a ``threads_setting`` uses the library's threads inside each
chunk; one without leaves the parallelism to the caller (chunks spread over a thread pool).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

import numpy as np

from benchmarks_lib.adapters.library import Library
from benchmarks_lib.base.specs import CodecSpec


class ChunkCodec(Protocol):
    """What a codec object offers (the numcodecs ``Codec`` interface)."""

    def encode(self, buf: np.ndarray) -> Any: ...

    def decode(self, buf: Any) -> Any: ...


class Codec(Library, ABC):
    """An in-memory codec library (kind ``codec``); see :class:`Library` for what every adapter declares."""

    kind = "codec"
    #: codec families it runs ("lz4", "zstd", "gzip", "blosc")
    codecs: ClassVar[frozenset[str]]

    def __init__(self, threads: int | None = None, option: str | None = None) -> None:
        self.threads = threads
        self.option = option

    def is_incompatible(self, codec: CodecSpec) -> str | None:
        """Why this library cannot run ``codec`` (with its threads), or None when it can."""
        if not codec.compressed:
            return f"{codec} has no in-memory codec"
        if codec.family not in self.codecs:
            return f"{self.name} needs a {' or '.join(sorted(self.codecs))} codec, not {codec}"
        if self.threads is not None and self.threads_setting is None and not self.ignores_threads:
            return f"{self.name} has no threads setting"
        return None

    @abstractmethod
    def make_codec(self, codec: CodecSpec, dtype: str) -> ChunkCodec:
        """The library's codec object for ``codec`` on chunks of ``dtype``, with the threads setting applied."""


__all__ = ["ChunkCodec", "Codec"]
