"""Which rows answer one question, and what their contenders are called: the vocabulary the ranking
(``rules.ranking``) and the runner's rounds (``run.rounds``, which stop asking a question once it is answered)
share, so that both group and name rows alike.

A *question* is one operation's rows in a group of equals (``EQUALS``: the same codec, bytes, fsync policy, writer
fsyncs, cutout kind, cache state and dataset); its contenders are named by :func:`entry_names`; only
:func:`countable` rows count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is the runner's and the pages': a measuring worker never loads it (its suites import this)
    import pandas as pd

#: what a group of equals holds fixed besides the codec (the ones recorded in the rows)
EQUALS = ("nbytes", "fsync_included", "writer_fsyncs", "cutout_kind", "cache_state", "dataset")
#: the build (run id) that measured a row a later run carried on from (``run.continuation``); empty: the run's own
BUILD_COLUMN = "build_run_id"
#: the cap of rounds of the run that measured a row (its ``iterations``; rows measured in rounds only): the cap its
#: questions were decided at, so that a page replaying them decides them as the run did
CAP_COLUMN = "rounds_cap"


def countable(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows that may rank: status ``ok`` and a verification that did not fail."""
    rows = rows[rows["status"] == "ok"] if "status" in rows else rows
    if "verified" in rows:
        rows = rows[~rows["verified"].astype("boolean").eq(False).fillna(False)]
    return rows


def failed_verification(rows: pd.DataFrame, names: pd.Series) -> list[str]:
    """The names whose ok rows include a failed verification (sorted)."""
    if "verified" not in rows:
        return []
    bad = rows["verified"].astype("boolean").eq(False).fillna(False) & (rows.get("status", "ok") == "ok")
    return sorted(set(names[bad].astype(str)))


def named_by(columns: Sequence[str]) -> Callable[[pd.DataFrame], pd.Series]:
    """Contender names: :func:`entry_names`, then each of ``columns`` recorded (``zarr-python, threads 4``)."""

    def names(rows: pd.DataFrame) -> pd.Series:
        out = entry_names(rows)
        for col in columns:
            if col in rows:
                out = out + f", {col} " + rows[col].astype("string").fillna("-").astype(str)
        return out

    return names


def entry_names(rows: pd.DataFrame) -> pd.Series:
    """What a row's contender is called: its backend; for a read, the library that read it (``read_by``) with
    the writer's name where another library wrote the store, and the layout where recorded; then, for a row measured
    in an environment of its own (``environment``), its library's version (``zarr-python 2.18.7``): the versions of
    one library are contenders of one question."""
    names = rows["backend"].astype(str)
    if "read_by" in rows:
        by = rows["read_by"].astype("string")
        is_read = by.notna() & rows["operation"].astype(str).str.startswith("read")
        other = is_read & (by != names)
        names = names.where(~is_read, by.fillna("").astype(str))
        names = names.where(~other, names + " (reading " + rows["backend"].astype(str) + "'s store)")
    if "layout" in rows and rows["layout"].nunique() > 1:
        layout = rows["layout"].astype("string")
        has = layout.notna() & rows["operation"].astype(str).str.startswith("read")
        names = names.where(~has, names + ", " + layout.fillna("").astype(str))
    if "environment" in rows and "backend_version" in rows:  # a library measured at several versions (--versions)
        version = rows["backend_version"].astype("string")
        at = rows["environment"].notna() & version.notna()
        names = names.where(~at, names + " " + version.fillna("").astype(str))
    return names


def normalized(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows as the groups of equals compare them: no codec is ``none``, the fsync columns booleans."""
    rows = rows.assign(codec=rows["codec"].fillna("none") if "codec" in rows else "none")
    for col in ("fsync_included", "writer_fsyncs"):
        if col in rows:
            rows = rows.assign(**{col: rows[col].astype("boolean")})
    return rows


def per_round(parts: Mapping[str, pd.DataFrame], value: str) -> dict[str, dict[int, float]] | None:
    """Each contender's value per round (the mean of a round's rows: the cutouts of a round, say) when every row of
    every contender was measured in rounds; a contender that left the question (or failed) has fewer rounds. None
    when the rows were not measured in rounds, or fewer than two contenders have any."""
    if len(parts) < 2 or any("round" not in p or p["round"].isna().any() for p in parts.values()):
        return None
    out = {name: {int(r): float(v) for r, v in p.groupby("round")[value].mean().items() if np.isfinite(v) and v > 0}
           for name, p in parts.items()}
    out = {name: v for name, v in out.items() if v}
    return out if len(out) >= 2 else None


def equals_keys(rows: pd.DataFrame) -> list[str]:
    """The columns that make rows equals: the codec and each of ``EQUALS`` recorded."""
    return ["codec", *(k for k in EQUALS if k in rows)]


def question_groups(rows: pd.DataFrame, keys: Sequence[str] | None = None,
                    names: Callable[[pd.DataFrame], pd.Series] = entry_names) -> Iterator[tuple[dict, pd.DataFrame]]:
    """Each group of equals among ``rows`` (normalised, one operation's) as its key and its rows, each row's
    contender (``names``) in ``_entry``."""
    rows = normalized(rows)
    keys = list(keys) if keys is not None else equals_keys(rows)
    named = rows.assign(_entry=names(rows))
    for key, group in (named.groupby(keys, dropna=False, sort=True) if keys else [((), named)]):
        yield dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)), group


__all__ = ["BUILD_COLUMN", "CAP_COLUMN", "EQUALS", "countable", "entry_names", "equals_keys", "failed_verification",
           "named_by", "normalized", "per_round", "question_groups"]
