"""The compression chapter's points: one row per (backend, dataset, codec setting) of a run, its times, speeds and
ratio (the chapter's figures, tables and answers, and its real-data section, all read them)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks_lib.chapters.common import MB, SIDE, ok_rows

SPEEDS = ("write_mbps", "read_mbps")
POINT_KEYS = ["backend", "dataset", "codec"]
#: what a row of a real array or its synthetic twin says of its pair (``suites.twins``)
PAIR_COLUMNS = ("pair_of", "pair_role", "pair_kind")


def summarize_points(df: pd.DataFrame) -> pd.DataFrame:
    """One row per point: median/mean write and read time, MB/s, compression ratio, verified, iterations."""
    rows = ok_rows(df)
    rows = rows[(rows["backend"] != "ceiling") & rows["operation"].isin(list(SIDE))]
    if rows.empty:
        return pd.DataFrame(columns=[*POINT_KEYS, "level", "write_s", "read_s", *SPEEDS, "compression_ratio"])
    rows = rows.assign(side=rows["operation"].map(SIDE))
    info_cols = [c for c in ("level", "codec_family", "threads", "nbytes", "mesh_n", "dtype", "shape", *PAIR_COLUMNS)
                 if c in rows]
    info = rows.groupby(POINT_KEYS, dropna=False)[info_cols].first()
    info["compression_ratio"] = rows.groupby(POINT_KEYS, dropna=False)["compression_ratio"].median()
    info["verified"] = rows.groupby(POINT_KEYS, dropna=False)["verified"].agg(lambda v: bool(v.fillna(False).all()))
    info["in_memory"] = rows.groupby(POINT_KEYS, dropna=False)["operation"].agg(lambda o: bool(o.isin(["encode",
                                                                                                    "decode"]).all()))
    g = rows.groupby([*POINT_KEYS, "side"], dropna=False)["elapsed_s"]
    times = pd.DataFrame({"median": g.median(), "mean": g.mean(), "n": g.size()}).unstack("side")
    out = info.copy()
    for side in ("write", "read"):
        if ("median", side) in times:
            out[f"{side}_s"] = times[("median", side)]
            out[f"{side}_mean_s"] = times[("mean", side)]
            out[f"{side}_n"] = times[("n", side)]
            out[f"{side}_mbps"] = out["nbytes"].astype(float) / out[f"{side}_s"] / MB
        else:
            out[[f"{side}_s", f"{side}_mean_s", f"{side}_n", f"{side}_mbps"]] = np.nan
    return out.reset_index()


__all__ = ["PAIR_COLUMNS", "POINT_KEYS", "SPEEDS", "summarize_points"]
