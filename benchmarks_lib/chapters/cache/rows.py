"""The cache chapter's rows: the successful reads with the link they went over and their transactions (what its
figures and its text both draw on)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks_lib.chapters.common import MB, ok_rows


def _link(row: pd.Series) -> str:
    location = row.get("location")
    if location not in ("http", "s3"):
        return "local file"
    if location == "s3" and row.get("server") == "endpoint":
        return "S3 endpoint"
    text = f"{row.get('server') or 'http'}{' S3' if location == 's3' else ''} {float(row['latency_ms']):g} ms"
    bw = row.get("bandwidth_bytes_s")
    if bw is not None and not pd.isna(bw) and bw:
        text += f", {float(bw) / MB:g} MB/s"
    return text


def prepare(df: pd.DataFrame, reader: str | tuple[str, ...] | None = None) -> pd.DataFrame:
    """OK rows of this chapter (of ``reader``, one or several) with a ``link`` label (local file / server +
    latency) and ``transactions`` (ROOT's GetReadCalls, uproot's requests, else the server's requests)."""
    if "reader" not in df:
        return df.iloc[0:0]
    rows = ok_rows(df)
    rows = rows[rows["reader"].notna()]
    if reader is not None:
        rows = rows[rows["reader"].isin([reader] if isinstance(reader, str) else list(reader))]
    if rows.empty:
        return rows
    rows = rows.copy()
    rows["link"] = rows.apply(_link, axis=1)
    client = pd.Series(np.nan, index=rows.index)
    for col in ("root_read_calls", "client_requests"):
        if col in rows:
            client = client.fillna(rows[col].astype("float64"))
    rows["transactions"] = client
    if "server_requests" in rows:
        rows["transactions"] = rows["transactions"].fillna(rows["server_requests"].astype("float64"))
    return rows
