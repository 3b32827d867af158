"""The compression rule: a run's points, one row per (backend, dataset, codec setting) with its times, speeds and
ratio; the Pareto front of ratio against speed; and the pick worth taking (the best ratio among the settings writing
within ``SLOWDOWN``x of the fastest). The compression chapter, the front page and ``iobench advise`` all take it
from here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks_lib.rules.ceilings import ok_rows

MB = 1e6
#: operations of the compression and thread suites -> the side they count for (encode/decode: in memory)
SIDE = {"write": "write", "encode": "write", "read": "read", "decode": "read"}
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


def pareto_front(df: pd.DataFrame, speed: str = "write_mbps", *, in_memory: bool = False) -> pd.DataFrame:
    """Points no other point of the same dataset beats on both compression ratio and ``speed``.

    ``df`` is records (or ``summarize_points`` output); ``speed`` is ``write_mbps`` or ``read_mbps``;
    ``in_memory`` lets codec-only (encode/decode) points compete with stores. Returns the front's
    points per dataset, fastest first.
    """
    if speed not in SPEEDS:
        raise ValueError(f"speed {speed!r} is unknown; allowed: {', '.join(SPEEDS)}")
    points = df if speed in df and "compression_ratio" in df and "operation" not in df else summarize_points(df)
    if not in_memory and "in_memory" in points:
        points = points[~points["in_memory"].fillna(False).astype(bool)]
    points = points.dropna(subset=[speed, "compression_ratio"])
    fronts = []
    for _, part in points.groupby("dataset", sort=True):
        part = part.sort_values([speed, "compression_ratio"], ascending=[False, False])
        best_ratio = -np.inf
        keep = []
        for idx, ratio in zip(part.index, part["compression_ratio"], strict=True):
            if ratio > best_ratio:
                keep.append(idx)
                best_ratio = ratio
        fronts.append(part.loc[keep])
    if not fronts:
        return points.iloc[0:0]
    return pd.concat(fronts).reset_index(drop=True)


#: the front page's trade-off: the best ratio among the stores writing at least 1/SLOWDOWN of the fastest write
SLOWDOWN = 2.0


def worth_taking(points: pd.DataFrame) -> list[tuple[str, pd.Series, pd.Series]]:
    """Per dataset of ``summarize_points`` output: (dataset, the fastest write, the pick: the store setting with the
    best compression ratio among those writing within ``SLOWDOWN``x of the fastest, a point of the write front)."""
    parts = pareto_front(points, "write_mbps").groupby("dataset", sort=True)  # each fastest first: ratio rises
    return [(d, p.iloc[0], p[p["write_mbps"] >= p["write_mbps"].iloc[0] / SLOWDOWN].iloc[-1]) for d, p in parts]
