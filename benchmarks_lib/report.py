"""Tables and conclusions computed from a records DataFrame (no plotting here).

Every throughput is put next to the machine's own ceiling from the same run: writes against
the raw sequential write (with fsync when the figure includes fsync), cold reads against
the raw cold read, warm reads against memcpy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .stats import format_point, format_values, rankable, summarize

WRITE_OPS = ("total", "write", "append_total", "append_step")
COLD_READ_OPS = ("read_cold", "read_region_cold")


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"]


def ceiling_gbps(df: pd.DataFrame) -> dict[str, float]:
    """Median GB/s of each ceiling operation in these rows (empty when none were measured)."""
    rows = ok_rows(df)
    rows = rows[rows["backend"] == "ceiling"]
    return {str(k): float(v) for k, v in rows.groupby("operation")["gbps"].median().items()}


def ceiling_reference(operation: str, fsync_included: bool | None, cache_state: str | None = None) -> str | None:
    """The ceiling operation a row's GB/s is divided by: same fsync policy, same cache state."""
    if operation in WRITE_OPS:
        return "write_fsync" if fsync_included else "write_nofsync"
    if operation in COLD_READ_OPS or (operation.startswith("read") and cache_state in ("cold", "cold_unverified")):
        return "read_cold"
    if operation == "read_warm" or (operation.startswith("read") and cache_state == "warm"):
        return "memcpy"
    return None


def with_ceiling_fraction(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``ceiling_op`` and ``pct_of_ceiling`` (GB/s as % of the same run's ceiling)."""
    out = df.copy()
    refs: dict[str, dict[str, float]] = {}
    for run_id, part in df.groupby("run_id", dropna=False):
        refs[str(run_id)] = ceiling_gbps(part)
    ops, pcts = [], []
    for run_id, op, fsync, cache, gbps in zip(out["run_id"], out["operation"], out["fsync_included"],
                                              out["cache_state"], out["gbps"], strict=True):
        ref = ceiling_reference(str(op), None if pd.isna(fsync) else bool(fsync), None if pd.isna(cache) else cache)
        value = refs.get(str(run_id), {}).get(ref) if ref else None
        ops.append(ref)
        pcts.append(100 * gbps / value if value and not pd.isna(gbps) else np.nan)
    out["ceiling_op"] = ops
    out["pct_of_ceiling"] = pcts
    return out


def ceiling_table(df: pd.DataFrame) -> pd.DataFrame:
    """The ceiling figures of a run: median and spread of GB/s per operation."""
    rows = ok_rows(df)
    rows = rows[rows["backend"] == "ceiling"]
    if rows.empty:
        return pd.DataFrame(columns=["operation", "GB/s median", "GB/s min", "GB/s max", "n"])
    g = rows.groupby("operation")["gbps"]
    return pd.DataFrame({"GB/s median": g.median(), "GB/s min": g.min(), "GB/s max": g.max(),
                         "n": g.size()}).reset_index()


def _fmt(value: float | None, fmt: str) -> str:
    return "-" if value is None or pd.isna(value) else fmt.format(value)


def _ci(values: pd.Series, fmt: str = "{:.3g}", scale: float = 1.0) -> str:
    """Median [95% CI] (n=...) of ``values`` (times ``scale``), or ``-``."""
    return format_values(values.dropna().astype("float64"), fmt, scale)


def shuffle_of(codec: str | None) -> str:
    """The byte/bit shuffle a codec string applies (``blosc-lz4:5:bitshuffle`` -> ``bitshuffle``)."""
    if not isinstance(codec, str) or not codec.startswith("blosc"):
        return "no shuffle"
    mode = codec.split(":")[-1] if codec.count(":") >= 2 else "shuffle"
    return "no shuffle" if mode == "noshuffle" else mode


def threads_of(rows: pd.DataFrame) -> str:
    """The threads a contender used: the ``threads`` setting when recorded, else the most threads seen."""
    if "threads" in rows and rows["threads"].notna().any():
        return f"{int(rows['threads'].max())} thread(s)"
    if "threads_max" in rows and rows["threads_max"].notna().any():
        return f"at most {int(rows['threads_max'].max())} thread(s) seen running"
    return "threads not recorded"


#: rows of these writers written "unsharded" are one chunk per shard (the library always shards)
ALWAYS_SHARDED = {"acquire-zarr": "always sharded: an unsharded layout is written as one chunk per shard"}


def layout_note(backend: str, layout: str | None = None) -> str:
    """What a layout label of ``backend`` really means (empty when it means what it says)."""
    note = ALWAYS_SHARDED.get(backend, "")
    if note and layout is not None and not str(layout).startswith("unsharded"):
        return ""
    return note


def label_layouts(rows: pd.DataFrame) -> pd.DataFrame:
    """``layout`` with ``(1 chunk per shard)`` added where an always-sharding writer wrote "unsharded"."""
    if "layout" not in rows or rows.empty:
        return rows
    mask = rows["backend"].isin(list(ALWAYS_SHARDED)) & rows["layout"].astype(str).str.startswith("unsharded")
    return rows.assign(layout=rows["layout"].where(~mask, rows["layout"].astype(str) + " (1 chunk per shard)"))


def common_size(w: pd.DataFrame) -> float | None:
    """The largest ``nbytes`` every backend's write test finished (None when they share none)."""
    sizes = [set(part["nbytes"].dropna()) for _, part in w.groupby("backend")]
    common = set.intersection(*sizes) if sizes else set()
    return max(common) if common else None


def writers_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Backends as columns: codec, shuffle, threads, fsync, then median [95% CI] (n) per metric.

    Times and bandwidths are those of the largest size that every backend finished (stated in
    the ``size`` row), so the columns compare the same bytes.
    """
    df = with_ceiling_fraction(df)
    rows = ok_rows(df)
    rows = rows[rows["suite"] == "writers"] if "suite" in rows else rows
    backends = [b for b in dict.fromkeys(df["backend"]) if b != "ceiling"]
    writes = rows[(rows["operation"] == "total") & (rows.get("test") == "write")] if "test" in rows else rows.iloc[0:0]
    common = common_size(writes[writes["backend"] != "ceiling"])
    table: dict[str, dict[str, str]] = {}
    for backend in backends:
        b = rows[rows["backend"] == backend]
        col: dict[str, str] = {}
        w = b[b.get("test", pd.Series(dtype=str)) == "write"] if "test" in b else b.iloc[0:0]
        if not w.empty:
            totals = w[w["operation"] == "total"]
            size = common if common is not None else totals["nbytes"].max()
            at = w[w["nbytes"] == size]
            total = at[at["operation"] == "total"]
            codecs = sorted(set(w["codec"].dropna()))
            col["codec"] = ", ".join(codecs) or "-"
            col["shuffle"] = ", ".join(sorted({shuffle_of(c) for c in codecs})) or "-"
            col["threads"] = threads_of(total)
            col["fsync in time"] = "yes (writer's own)" if total.get("writer_fsyncs", pd.Series(dtype=bool)).any() \
                else ("yes" if total["fsync_included"].fillna(False).astype(bool).any() else "no")
            col["note"] = layout_note(backend) or ("baseline (uncompressed)" if backend == "raw" else "")
            col["size (MB)"] = _fmt(size / 1e6 if size is not None else None, "{:.1f}") + \
                ("" if common is not None else " (not shared by all)")
            for phase in ("create", "write", "finalize", "fsync"):
                col[f"{phase} (s, median [95% CI])"] = _ci(at[at["operation"] == phase]["elapsed_s"])
            frames = total["shape"].map(lambda s: s[0]) if "shape" in total else pd.Series(dtype=float)
            col["throughput (fps, median [95% CI])"] = _ci(frames / total["elapsed_s"], "{:.1f}")
            col["bandwidth (GB/s, median [95% CI])"] = _ci(total["gbps"])
            col["% of raw write ceiling (median)"] = _fmt(total["pct_of_ceiling"].median(), "{:.0f}%")
            col["peak-memory ratio (median)"] = _fmt(total["memory_ratio"].median(), "{:.2f}")
            col["MB on disk"] = _fmt(total["bytes_on_disk"].median() / 1e6, "{:.1f}")
            col["inodes"] = _fmt(total["inodes"].median(), "{:.0f}")
            col["verified"] = _verified(totals)
        a = b[b["operation"] == "append_total"]
        if not a.empty:
            col["append (fps, median)"] = _fmt(a["fps"].median(), "{:.0f}")
            col["append frame p99 (ms, median)"] = _fmt(a["frame_p99_s"].median() * 1e3, "{:.2f}")
            col["append (GB/s, median [95% CI])"] = _ci(a["gbps"])
        r = b[(b["operation"] == "read_cold") & (b.get("test") == "read")] if "test" in b else b.iloc[0:0]
        if not r.empty:
            col["cold read (GB/s, median [95% CI])"] = _ci(r["gbps"])
            col["% of raw cold read (median)"] = _fmt(r["pct_of_ceiling"].median(), "{:.0f}%")
        rw = b[(b["operation"] == "read_warm") & (b.get("test") == "read")] if "test" in b else b.iloc[0:0]
        if not rw.empty:
            col["warm read (GB/s, median [95% CI])"] = _ci(rw["gbps"])
        c = b[(b["operation"] == "read_region_cold") & (b.get("test") == "read")] if "test" in b else b.iloc[0:0]
        if not c.empty:
            col["cutout, cold (ms, median [95% CI])"] = _ci(c["elapsed_s"], "{:.3g}", 1e3)
        table[backend] = col
    skipped = df[(df["status"] == "skip") & (df["backend"] != "ceiling")]
    for backend in backends:
        if not table[backend] and backend in set(skipped["backend"]):
            reason = str(skipped[skipped["backend"] == backend]["reason"].iloc[0])
            table[backend] = {"status": f"skipped: {reason[:80]}"}
    return pd.DataFrame(table).astype(object).fillna("-")


def _verified(rows: pd.DataFrame) -> str:
    v = rows["verified"].dropna()
    if v.empty:
        return "-"
    return "yes" if bool(v.all()) else "NO (checksum mismatch)"


def failures(df: pd.DataFrame) -> pd.DataFrame:
    """Error rows with the first line of their reason (what the chapter must show)."""
    bad = df[df["status"] == "error"]
    cols = [c for c in ("backend", "test", "operation", "reason") if c in bad]
    out = bad[cols].copy()
    out["reason"] = out["reason"].fillna("").map(lambda r: r.strip().splitlines()[0][:200] if r.strip() else "")
    return out.reset_index(drop=True)


def skips(df: pd.DataFrame) -> pd.DataFrame:
    s = df[df["status"] == "skip"]
    cols = [c for c in ("backend", "test", "operation", "reason") if c in s]
    return s[cols].drop_duplicates().reset_index(drop=True)


#: what a ranking holds fixed besides the codec: the same bytes, fsync policy, cutout kind and cache state
LIKE_FOR_LIKE = ("nbytes", "fsync_included", "cutout_kind", "cache_state")


def _contender(backend: str, point: pd.Series, rows: pd.DataFrame, unit: str, fmt: str, scale: float) -> str:
    value, _, n = format_point(point, fmt, scale).partition(" (n=")
    details = [f"n={n.rstrip(')')}" if n else "n=0", threads_of(rows)]
    pct = rows["pct_of_ceiling"].median() if "pct_of_ceiling" in rows else np.nan
    if not pd.isna(pct):
        details.append(f"{pct:.0f}% of this machine's ceiling")
    if note := layout_note(backend):
        details.append(note)
    return f"{backend} {value} {unit} ({'; '.join(details)})".lstrip()


def _group_header(name: str, key: dict) -> str:
    parts = []
    codec = key.get("codec")
    if codec is not None:
        parts.append(f"codec `{codec}` ({shuffle_of(codec)})")
    if not pd.isna(key.get("nbytes", np.nan)):
        parts.append(f"{key['nbytes'] / 1e6:.3g} MB")
    if "fsync_included" in key and not pd.isna(key["fsync_included"]):
        parts.append("fsync included" if key["fsync_included"] else "no fsync")
    if isinstance(key.get("cutout_kind"), str):
        parts.append(f"{key['cutout_kind']} cutouts")
    if isinstance(key.get("cache_state"), str) and key["cache_state"] != "cold":
        parts.append(key["cache_state"])
    return f"- **{name}**, " + ", ".join(parts)


def rank_like_for_like(part: pd.DataFrame, name: str, value: str, higher: bool, unit: str, fmt: str = "{:.3g}",
                       scale: float = 1.0) -> list[str]:
    """Markdown lines ranking contenders only among rows with the same codec and ``LIKE_FOR_LIKE`` keys.

    ``raw`` is the uncompressed baseline: stated, never ranked. Per codec, the largest size that
    at least two contenders finished is compared (else the largest size, unranked). Neighbours
    whose 95% intervals overlap are called not separable.
    """
    part = part.dropna(subset=[value])
    if part.empty:
        return []
    part = part.assign(codec=part["codec"].fillna("none") if "codec" in part else "none")
    keys = ["codec", *(k for k in LIKE_FOR_LIKE if k in part)]
    if "fsync_included" in part:
        part = part.assign(fsync_included=part["fsync_included"].astype("boolean"))
    points = summarize(part, ["backend", *keys], value)
    lines: list[str] = []
    shown_sizes: set = set()
    contenders = points[points["backend"] != "raw"]
    outer = [k for k in keys if k != "nbytes"]
    for okey, group in (contenders.groupby(outer, dropna=False, sort=True) if outer else [((), contenders)]):
        okey = okey if isinstance(okey, tuple) else (okey,)
        if "nbytes" in group:
            counts = group.groupby("nbytes", dropna=False)["backend"].nunique()
            shared = counts[counts >= 2]
            size = shared.index.max() if len(shared) else counts.index.max()
            group = group[group["nbytes"] == size] if not pd.isna(size) else group[group["nbytes"].isna()]
            shown_sizes.add(size)
        key = dict(zip(outer, okey, strict=True)) | ({"nbytes": group["nbytes"].iloc[0]} if "nbytes" in group else {})
        group = group.sort_values("median", ascending=not higher)
        texts = []
        for _, point in group.iterrows():
            match = part[(part["backend"] == point["backend"])]
            for k, v in key.items():
                match = match[match[k].isna()] if pd.isna(v) else match[match[k] == v]
            texts.append(_contender(point["backend"], point, match, unit, fmt, scale))
        line = _group_header(name, key) + ": " + texts[0]
        if len(group) == 1:
            line += "; no other contender used this codec on these bytes, so it is not ranked"
        for (_, a), (_, b), text in zip(group.iloc[:-1].iterrows(), group.iloc[1:].iterrows(), texts[1:],
                                        strict=True):
            if rankable(a, b):
                factor = a["median"] / b["median"] if higher else b["median"] / a["median"]
                line += f"; ahead ({factor:.2f}x) of {text}"
            else:
                line += f"; **not separable** from {text} (95% CIs overlap)"
        lines.append(line + ".")
    raw = points[points["backend"] == "raw"]
    baseline: list[str] = []
    if not raw.empty:
        if "nbytes" in raw and shown_sizes:
            raw = raw[raw["nbytes"].isin(shown_sizes)] if raw["nbytes"].isin(shown_sizes).any() else \
                raw[raw["nbytes"] == raw["nbytes"].max()]
        for _, point in raw.iterrows():
            key = {k: point[k] for k in keys if k != "codec"}
            match = part[part["backend"] == "raw"]
            for k, v in key.items():
                match = match[match[k].isna()] if pd.isna(v) else match[match[k] == v]
            baseline.append(_group_header(f"{name} baseline", key) + ": raw (uncompressed, not ranked) "
                            + _contender("", point, match, unit, fmt, scale) + ".")
    return baseline + lines


def writers_conclusion(df: pd.DataFrame) -> str:
    """A short conclusion computed from the data: contenders ranked only among equals.

    Equal means the same codec (shuffle included), the same bytes, the same fsync policy (and for
    reads the same cutout kind and cache state); ``raw`` is the uncompressed baseline. Neighbours
    are ranked only when their 95% intervals do not overlap.
    """
    df = with_ceiling_fraction(df)
    rows = ok_rows(df)
    rows = rows[rows["backend"] != "ceiling"]
    test = rows.get("test", pd.Series(None, index=rows.index, dtype=object))
    lines = ["Medians with their 95% bootstrap intervals and n; contenders are compared only with the same "
             "codec, bytes and fsync policy; **not separable** means the intervals overlap."]
    lines += rank_like_for_like(rows[(rows["operation"] == "total") & (test == "write")], "write", "gbps", True,
                                "GB/s")
    lines += rank_like_for_like(rows[rows["operation"] == "append_total"], "append", "gbps", True, "GB/s")
    lines += rank_like_for_like(rows[(rows["operation"] == "read_cold") & (test == "read")], "cold full read",
                                "gbps", True, "GB/s")
    lines += rank_like_for_like(rows[(rows["operation"] == "read_region_cold") & (test == "read")], "cold cutout",
                                "elapsed_s", False, "ms", scale=1e3)
    lines += _sharding_lines(rows[test == "sharding"])
    bad = failures(df)
    if not bad.empty:
        lines.append(f"- **warning**: {len(bad)} error row(s), e.g. {bad['backend'].iloc[0]}: {bad['reason'].iloc[0]}")
    return "\n".join(lines) if len(lines) > 1 else "No successful measurements to compare."


def _sharding_lines(rows: pd.DataFrame) -> list[str]:
    """Per writer and dataset: the fastest and slowest cold-cutout layout, and whether they separate."""
    cut = label_layouts(rows[rows["operation"] == "read_region_cold"])
    if cut.empty or "layout" not in cut:
        return []
    lines = []
    for (backend, dataset), part in cut.groupby(["backend", "dataset"], dropna=False):
        points = summarize(part, "layout", "elapsed_s").sort_values("median")
        if len(points) < 2:
            continue
        best, worst = points.iloc[0], points.iloc[-1]
        verdict = "separable" if rankable(best, worst) else "**not separable** (95% CIs overlap)"
        inodes = rows[(rows["backend"] == backend) & (rows["operation"] == "total")]["inodes"]
        lines.append(f"- **sharding** ({backend}, {dataset}, same cutout positions in every layout): fastest cold "
                     f"cutout *{best['layout']}* "
                     f"{format_point(best, scale=1e3)} ms, "
                     f"slowest *{worst['layout']}* "
                     f"{format_point(worst, scale=1e3)} ms: {verdict}"
                     + (f"; inodes {inodes.min():.0f} to {inodes.max():.0f}." if inodes.notna().any() else "."))
    return lines


def generic_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median time with its 95% bootstrap interval and n, and median GB/s, per backend, operation
    and case (dataset, codec, threads, bytes where recorded): rows differing in those are not pooled."""
    rows = with_ceiling_fraction(ok_rows(df))
    if rows.empty:
        return pd.DataFrame()
    keys = ["backend", "operation", *(k for k in ("dataset", "codec", "threads", "nbytes")
                                      if k in rows and rows[k].notna().any())]
    points = summarize(rows, keys, "elapsed_s")
    g = rows.groupby(keys, dropna=False, sort=True)
    extra = pd.DataFrame({"GB/s (median)": g["gbps"].median(), "% ceiling (median)": g["pct_of_ceiling"].median()})
    out = points.merge(extra.reset_index(), on=keys, how="left")
    return out.rename(columns={"median": "median s", "ci_lo": "95% CI lo s", "ci_hi": "95% CI hi s"})


def compare_runs(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Side by side medians per (suite, backend, operation, case parameters), and B/A ratios."""
    keys = [k for k in ("suite", "backend", "test", "operation", "dataset", "codec", "multiplier", "layout",
                        "threads", "level", "cache_state") if k in a and k in b]
    def med(df: pd.DataFrame) -> pd.DataFrame:
        rows = ok_rows(df)
        return rows.groupby(keys, dropna=False).agg(elapsed_s=("elapsed_s", "median"), gbps=("gbps", "median"))
    out = med(a).merge(med(b), left_index=True, right_index=True, suffixes=("_a", "_b"), how="outer")
    out["time ratio b/a"] = out["elapsed_s_b"] / out["elapsed_s_a"]
    out["GB/s ratio b/a"] = out["gbps_b"] / out["gbps_a"]
    return out.reset_index()
