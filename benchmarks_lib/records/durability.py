"""What a write row's time includes for durability: the columns every suite records, built here alone.

A row that writes (a write, append, encode, the raw-write ceiling, and every part of them) carries:

- ``sync_method``: the flushes its case makes, one of ``SYNC_METHODS``:
  ``"syncfs"`` (our one ``syncfs(2)`` of the store, :func:`~.measure.sync_store`, the same for every
  backend), ``"writer"`` (the library fsyncs its own files and cannot be told not to: acquire-zarr),
  ``"syncfs+writer"`` (both), ``"none"`` (neither: the time ends at the writer's close, or, on S3,
  when every object is acknowledged; S3 has no fsync, and an in-memory codec has no files);
- ``writer_fsyncs``: the library fsyncs its own files (whatever the suite's policy);
- ``fsync_comparable``: False when the writer's own fsyncs make its time unlike the others';
- ``fsync_included``: this row's time contains a flush (ours or the writer's): a case's ``create`` row
  contains none, its separate ``fsync`` row only ours, its ``total`` every one.

Rows that only read carry none of them. Runs recorded before schema 3 spelled "no flush" as a missing
``sync_method`` (the parallel and S3 suites) and wrote ``"syncfs"``/``"none"`` for the writers suite's
acquire-zarr rows, whose writer fsyncs too: :func:`read_old_spellings` maps them when a run is loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pandas as pd

SYNCFS, WRITER, NONE = "syncfs", "writer", "none"
#: every value ``sync_method`` takes
SYNC_METHODS = (NONE, SYNCFS, WRITER, f"{SYNCFS}+{WRITER}")
#: the schema version from which records spell ``sync_method`` as above (``records.SCHEMA_VERSION``)
SPELLED_SINCE = 3

#: which of the case's flushes fall inside one row's time
InTime = Literal["all", "writer", "syncfs", "none"]


def sync_method(syncfs: bool, writer_fsyncs: bool) -> str:
    """The one spelling of a case's flushes: ``syncfs``, ``writer``, ``syncfs+writer`` or ``none``."""
    return "+".join(name for name, on in ((SYNCFS, syncfs), (WRITER, writer_fsyncs)) if on) or NONE


def durability_columns(syncfs: bool, writer_fsyncs: bool, in_time: InTime = "all") -> dict:
    """The durability columns of one write row: the case's flushes (our ``syncfs`` when ``syncfs``, the
    writer's own when ``writer_fsyncs``) and whether this row's time holds them (``in_time``: ``all`` for a
    whole write or a total, ``writer`` for a part timed before our syncfs, ``syncfs`` for the syncfs alone,
    ``none`` for a create)."""
    included = {"all": syncfs or writer_fsyncs, "writer": writer_fsyncs, "syncfs": syncfs, "none": False}[in_time]
    return {"sync_method": sync_method(syncfs, writer_fsyncs), "writer_fsyncs": writer_fsyncs,
            "fsync_comparable": not writer_fsyncs, "fsync_included": included}


def read_old_spellings(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with rows recorded before schema ``SPELLED_SINCE`` in today's vocabulary: a write row with no
    ``sync_method`` gets the one its ``fsync_included`` and ``writer_fsyncs`` say, a writer that fsyncs gets
    ``+writer``/``writer``, and ``writer_fsyncs``/``fsync_comparable`` are filled where the method says them."""
    if "fsync_included" not in df or "schema_version" not in df:
        return df
    old = df["schema_version"].astype("Float64").lt(SPELLED_SINCE).fillna(True) & df["fsync_included"].notna()
    if not old.any():
        return df
    out = df.copy()
    for col in ("sync_method", "writer_fsyncs", "fsync_comparable"):
        if col not in out:
            out[col] = None
    method = out["sync_method"].astype("string")
    writer = out["writer_fsyncs"].astype("boolean").fillna(False)
    ours = method.eq(SYNCFS).fillna(False) | (method.isna() & out["fsync_included"].astype("boolean") & ~writer)
    rows = old[old].index
    out["sync_method"] = out["sync_method"].astype("string")
    out.loc[rows, "sync_method"] = [sync_method(bool(o), bool(w)) for o, w in zip(ours[rows], writer[rows],
                                                                                    strict=True)]
    out["writer_fsyncs"] = out["writer_fsyncs"].astype("boolean")
    out.loc[rows, "writer_fsyncs"] = writer[rows]
    out["fsync_comparable"] = out["fsync_comparable"].astype("boolean")
    out.loc[rows, "fsync_comparable"] = ~writer[rows]
    return out


__all__ = ["SYNC_METHODS", "InTime", "durability_columns", "read_old_spellings", "sync_method"]
