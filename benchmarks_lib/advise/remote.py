"""The rows of remote reads that ``iobench advise`` ranks: the s3 suite's (each writer reads back, through S3, the
array it wrote to an S3 server behind an emulated link) and the cache suite's Zarr reads (a store zarr-python wrote,
read over HTTP or S3 by each client, without and with its cache, at each concurrency), at one link latency.

A candidate is the library, codec, chunks, shards and how it reads (over what, client cache, requests in flight); the
group held equal is the dataset, array shape, cutout, bytes and the link's bandwidth. Rows are taken at the asked
latency only (never interpolated): :func:`measured_latencies` names the latencies a run holds instead. The requests
and bytes each read cost are taken from the server's counters (``requests``, ``transferred_bytes``).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from benchmarks_lib.base.specs import parse_dims, shape_text
from benchmarks_lib.rules.ranking import countable

#: the suites whose runs hold remote reads
REMOTE_SUITES = ("s3", "cache")
#: the cache suite's locations that are remote (``local`` reads a file)
REMOTE_LOCATIONS = ("http", "s3")


def _latency_is(rows: pd.DataFrame, latency_ms: float) -> pd.Series:
    return (rows["latency_ms"].astype("float64") - float(latency_ms)).abs() < 1e-9


def remote_reads(df: pd.DataFrame, operations: Mapping[str, str], dtype: str | None,
                 cutout: tuple[int, ...] | None = None) -> pd.DataFrame:
    """The run's countable rows of the remote read its suite records for the question (``operations``: suite ->
    operation), of ``dtype`` (None: any) and cutouts of exactly ``cutout`` (None: any), at any latency."""
    if not {"suite", "latency_ms", "dtype"} <= set(df.columns):
        return df.iloc[0:0]
    asked = df["suite"].astype(str).map(dict(operations)).fillna("")
    rows = df[df["operation"].astype(str) == asked]
    rows = countable(rows if dtype is None else rows[rows["dtype"].astype(str) == dtype])
    rows = rows[rows["latency_ms"].notna()]
    if "location" in rows:
        rows = rows[rows["location"].isin(REMOTE_LOCATIONS)]
    if cutout is not None:
        rows = rows[rows["cutout"].astype(str) == shape_text(cutout)] if "cutout" in rows else rows.iloc[0:0]
    return rows


def measured_latencies(df: pd.DataFrame, operations: Mapping[str, str], dtype: str,
                       cutout: tuple[int, ...] | None = None) -> set[float]:
    """The link latencies (ms) at which the run holds the remote reads asked (of any other latency)."""
    return {float(v) for v in remote_reads(df, operations, dtype, cutout)["latency_ms"]}


def _text(values) -> str:
    return shape_text(values, missing="none")


def _layout(rows: pd.DataFrame) -> pd.DataFrame:
    """shape, chunks and shards (as text, ``none`` unsharded) of each row: the s3 suite records them, the cache
    suite's are its store's (``zarr_dims``, sharded or not by ``layout``)."""
    if "zarr_dims" in rows and rows["zarr_dims"].notna().all():
        dims = {text: parse_dims(text) for text in set(rows["zarr_dims"].astype(str))}
        spec = rows["zarr_dims"].astype(str).map(dims)
        sharded = rows["layout"].astype(str) == "sharded"
        return rows.assign(shape=spec.map(lambda d: list(d.shape)), chunks_text=spec.map(lambda d: _text(d.chunks)),
                           shards_text=[_text(d.shards) if s else "none" for d, s in zip(spec, sharded, strict=True)])
    return rows.assign(chunks_text=rows["chunks"].map(_text), shards_text=rows["shards"].map(_text))


def _via(rows: pd.DataFrame) -> pd.Series:
    """How each row read: over what, and (the cache suite's) its client cache and requests in flight."""
    if "location" not in rows:
        return pd.Series("over S3", index=rows.index)
    cache = rows["client_cache"].astype("boolean").map(lambda c: "client cache " + ("on" if c else "off"))
    inflight = rows["concurrency"].map(lambda c: f"{int(c)} request{'s' if c != 1 else ''} at once"
                                       if pd.notna(c) else "")
    return ("over " + rows["location"].astype(str).str.upper() + ", " + cache + ", " + inflight).str.rstrip(", ")


def _counters(rows: pd.DataFrame) -> pd.DataFrame:
    """``requests`` and ``transferred_bytes`` from the server's counters (S3 requests and bytes sent; the HTTP
    server's requests and bytes)."""
    pairs = (("s3_requests", "s3_sent_bytes"), ("server_requests", "server_bytes"))
    for requests, sent in pairs:
        if requests in rows and sent in rows:
            return rows.assign(requests=rows[requests].astype("float64"),
                               transferred_bytes=rows[sent].astype("float64"))
    return rows.assign(requests=float("nan"), transferred_bytes=float("nan"))


def remote_candidates(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with ``candidate`` (library | codec | chunks | shards | how it reads) and ``group`` (dataset | array
    shape | cutout | bytes | link bandwidth) columns, per-cutout times (``cutout_s``) and the counters."""
    rows = _counters(_layout(rows))
    candidate = (rows["backend"].astype(str) + " | " + rows["codec"].fillna("none").astype(str) + " | chunks "
                 + rows["chunks_text"] + " | shards " + rows["shards_text"] + " | " + _via(rows))
    cutout = rows["cutout"].astype(str) if "cutout" in rows else pd.Series("whole", index=rows.index)
    bandwidth = rows["bandwidth_bytes_s"] if "bandwidth_bytes_s" in rows else pd.Series(None, index=rows.index)
    link = bandwidth.map(lambda b: f"{b / 1e6:g} MB/s" if pd.notna(b) and b else "bandwidth not limited")
    group = (rows["dataset"].astype(str) + " | " + rows["shape"].map(_text) + " | " + cutout + " | "
             + rows["nbytes"].astype(str) + " | " + link)
    per_cutout = rows["elapsed_s"] / rows["cutouts"].astype("float64") if "cutouts" in rows else rows["elapsed_s"]
    return rows.assign(candidate=candidate, group=group, link=link, cutout_s=per_cutout,
                       gbps=rows["nbytes"].astype("float64") / rows["elapsed_s"] / 1e9)


def at_latency(rows: pd.DataFrame, latency_ms: float) -> pd.DataFrame:
    """The rows measured over a link of exactly ``latency_ms``."""
    return rows[_latency_is(rows, latency_ms)] if len(rows) else rows


def link_text(row: pd.Series) -> str:
    """``10 ms per round trip (emulated), 50 MB/s, server versitygw v1.8.0 (posix)``: the link a row's read went
    over, and the server at its end (its name and version where the row records them)."""
    if "s3_server" in row and pd.notna(row["s3_server"]):
        server = str(row["s3_server"])
    else:
        server = str(row["server"]).split(" ")[0] if "server" in row and pd.notna(row["server"]) else "?"
    return f"{float(row['latency_ms']):g} ms per round trip (emulated), {row['link']}, server {server}"


def client_concurrency(rows: pd.DataFrame) -> str:
    """What the s3 suite's rows say of the client's S3 requests in flight ('' where they do not)."""
    if "client_concurrency" not in rows or rows["client_concurrency"].isna().all():
        return ""
    n = int(rows["client_concurrency"].dropna().iloc[0])
    setting = rows["client_concurrency_setting"].dropna() if "client_concurrency_setting" in rows else []
    return f"; it sends up to {n} S3 requests at once" + (f" ({setting.iloc[0]})" if len(setting) else "")


__all__ = ["REMOTE_LOCATIONS", "REMOTE_SUITES", "at_latency", "client_concurrency", "link_text",
           "measured_latencies", "remote_candidates", "remote_reads"]
