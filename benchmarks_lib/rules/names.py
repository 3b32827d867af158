"""The one table of the names a reader sees for what the records call by code: a recorded operation
(``read_region_cold``: "cold cutout"), a ceiling (``write_nofsync``: "raw write (no fsync), 1 stream") and a writer's
format variant (``zarr-python:zarr2``: "zarr-python (Zarr v2 format)"). Every page and table says them through
these; the records keep their codes. Record strings pass through unescaped: the caller escapes them where shown.
"""

from __future__ import annotations

#: the machine's ceilings, as a reader says them
CEILING_LABELS = {"write_fsync": "raw write + fsync, 1 stream", "write_nofsync": "raw write (no fsync), 1 stream",
                  "read_cold": "raw cold read, 1 stream", "read_warm": "raw warm read, 1 stream", "memcpy": "memcpy",
                  "write_fsync_parallel": "raw write + fsync, parallel streams",
                  "write_nofsync_parallel": "raw write (no fsync), parallel streams",
                  "read_cold_parallel": "raw cold read, parallel streams"}
#: every recorded operation as a reader says it where it is named on its own (a table's operation column, beside
#: the phases of the same write: the whole write told apart from its write call); others with spaces for ``_``
OPERATION_NAMES = {"total": "whole write", "write": "write call", "append_total": "whole append",
                   "append_frame": "append, one frame", "append_step": "append, one step",
                   "read_cold": "cold full read", "read_warm": "warm full read", "read_region_cold": "cold cutout",
                   "read_region_warm": "warm cutout"}
#: the operations recorded, as a sentence about one question says them (its whole write is "write"); others
#: with spaces for ``_``
OPERATION_WORDS = {"total": "write", "write": "write", "append_total": "append", "read_cold": "cold read",
                   "read_warm": "warm read", "read_region_cold": "cold cutout", "read": "read"}
#: a writer's format variant (``zarr-python:zarr2``) in words
VARIANTS = {"zarr2": "Zarr v2 format", "zarr3": "Zarr v3 format"}


def operation_name(operation: object, ceiling: bool = False, in_sentence: bool = False) -> str:
    """A recorded operation in words (``OPERATION_NAMES``; a ceiling's with ``ceiling``: ``CEILING_LABELS``; in a
    sentence about one question, ``OPERATION_WORDS``): ``read_region_cold`` -> ``cold cutout``. Not escaped: a
    record string, the caller escapes it."""
    op = str(operation)
    table = OPERATION_WORDS if in_sentence else OPERATION_NAMES
    return (CEILING_LABELS.get(op) if ceiling else None) or table.get(op) or op.replace("_", " ")


def backend_name(backend: object) -> str:
    """A writer in words: its format variant spelt out (``zarr-python:zarr2`` -> ``zarr-python (Zarr v2
    format)``); any other name as it is. Not escaped: a record string, the caller escapes it."""
    library, _, variant = str(backend).partition(":")
    return f"{library} ({VARIANTS[variant]})" if variant in VARIANTS else str(backend)


__all__ = ["CEILING_LABELS", "OPERATION_NAMES", "OPERATION_WORDS", "VARIANTS", "backend_name", "operation_name"]
