"""Tables and conclusions computed from a records DataFrame (no plotting here).

Every throughput is put next to the machine's own ceiling from the same run: writes against
the raw sequential write (with fsync when the figure includes fsync), cold reads against
the raw cold read, warm reads against memcpy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

WRITE_OPS = ("total", "write", "append_total", "append_step")
COLD_READ_OPS = ("read_cold", "read_region_cold")


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"]


def ceiling_gbps(df: pd.DataFrame) -> dict[str, float]:
    """Median GB/s of each ceiling operation in these rows (empty when none were measured)."""
    rows = ok_rows(df)
    rows = rows[rows["backend"] == "ceiling"]
    return {str(k): float(v) for k, v in rows.groupby("operation")["gbps"].median().items()}


def ceiling_reference(operation: str, fsync_included: bool | None) -> str | None:
    if operation in WRITE_OPS:
        return "write_fsync" if fsync_included else "write_nofsync"
    if operation in COLD_READ_OPS:
        return "read_cold"
    if operation == "read_warm":
        return "memcpy"
    return None


def with_ceiling_fraction(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``ceiling_op`` and ``pct_of_ceiling`` (GB/s as % of the same run's ceiling)."""
    out = df.copy()
    refs: dict[str, dict[str, float]] = {}
    for run_id, part in df.groupby("run_id", dropna=False):
        refs[str(run_id)] = ceiling_gbps(part)
    ops, pcts = [], []
    for run_id, op, fsync, gbps in zip(out["run_id"], out["operation"], out["fsync_included"], out["gbps"],
                                       strict=True):
        ref = ceiling_reference(op, None if pd.isna(fsync) else bool(fsync))
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


def _mean_std(values: pd.Series, fmt: str = "{:.3f}") -> str:
    values = values.dropna()
    if values.empty:
        return "-"
    std = values.std() if len(values) > 1 else 0.0
    return f"{fmt.format(values.mean())} ± {fmt.format(std)}"


def _fmt(value: float | None, fmt: str) -> str:
    return "-" if value is None or pd.isna(value) else fmt.format(value)


def writers_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Backends as columns; the seed 003-style metrics for the largest write, plus the rest."""
    df = with_ceiling_fraction(df)
    rows = ok_rows(df)
    rows = rows[rows["suite"] == "writers"] if "suite" in rows else rows
    backends = [b for b in dict.fromkeys(df["backend"]) if b != "ceiling"]
    table: dict[str, dict[str, str]] = {}
    for backend in backends:
        b = rows[rows["backend"] == backend]
        col: dict[str, str] = {}
        w = b[b.get("test", pd.Series(dtype=str)) == "write"] if "test" in b else b.iloc[0:0]
        if not w.empty and "multiplier" in w:
            largest = w[w["multiplier"] == w["multiplier"].max()]
            col["codec"] = ", ".join(sorted(set(w["codec"].dropna())))
            for phase in ("create", "write", "finalize", "fsync"):
                col[f"{phase} (mean±std s)"] = _mean_std(largest[largest["operation"] == phase]["elapsed_s"])
            total = largest[largest["operation"] == "total"]
            frames = total["shape"].map(lambda s: s[0]) if "shape" in total else pd.Series(dtype=float)
            col["throughput (fps)"] = _fmt((frames / total["elapsed_s"]).mean() if len(total) else None, "{:.1f}")
            all_totals = w[w["operation"] == "total"]
            col["bandwidth (GB/s, mean over sizes)"] = _fmt(all_totals["gbps"].mean(), "{:.3f}")
            col["% of raw write ceiling"] = _fmt(all_totals["pct_of_ceiling"].mean(), "{:.0f}%")
            col["peak-memory ratio"] = _fmt(total["memory_ratio"].median(), "{:.2f}")
            col["fsync in time"] = "yes (writer's own)" if total.get("writer_fsyncs", pd.Series(dtype=bool)).any() \
                else ("yes" if total["fsync_included"].any() else "no")
            col["threads"] = _fmt(total["threads_max"].max(), "{:.0f}")
            col["MB on disk"] = _fmt(total["bytes_on_disk"].median() / 1e6, "{:.1f}")
            col["inodes"] = _fmt(total["inodes"].median(), "{:.0f}")
            col["verified"] = _verified(total)
        a = b[b["operation"] == "append_total"]
        if not a.empty:
            col["append (fps)"] = _fmt(a["fps"].median(), "{:.0f}")
            col["append frame p99 (ms)"] = _fmt(a["frame_p99_s"].median() * 1e3, "{:.2f}")
            col["append GB/s"] = _fmt(a["gbps"].median(), "{:.3f}")
        r = b[(b["operation"] == "read_cold") & (b.get("test") == "read")] if "test" in b else b.iloc[0:0]
        if not r.empty:
            col["cold read (GB/s)"] = _fmt(r["gbps"].median(), "{:.3f}")
            col["% of raw cold read"] = _fmt(r["pct_of_ceiling"].median(), "{:.0f}%")
        rw = b[(b["operation"] == "read_warm") & (b.get("test") == "read")] if "test" in b else b.iloc[0:0]
        if not rw.empty:
            col["warm read (GB/s)"] = _fmt(rw["gbps"].median(), "{:.3f}")
        c = b[(b["operation"] == "read_region_cold") & (b.get("test") == "read")] if "test" in b else b.iloc[0:0]
        if not c.empty:
            col["cutout, cold (ms)"] = _fmt(c["elapsed_s"].median() * 1e3, "{:.2f}")
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


def _ranked(rows: pd.DataFrame, value: str, higher_is_better: bool = True) -> pd.Series:
    med = rows.groupby("backend")[value].median().dropna()
    return med.sort_values(ascending=not higher_is_better)


def writers_conclusion(df: pd.DataFrame) -> str:
    """A short conclusion computed from the data: who wins which test, by how much."""
    df = with_ceiling_fraction(df)
    rows = ok_rows(df)
    rows = rows[rows["backend"] != "ceiling"]
    lines = []
    tests = [
        ("write", rows[(rows["operation"] == "total") & (rows.get("test") == "write")], "gbps", True, "GB/s"),
        ("append", rows[rows["operation"] == "append_total"], "gbps", True, "GB/s"),
        ("cold full read", rows[(rows["operation"] == "read_cold") & (rows.get("test") == "read")], "gbps", True,
         "GB/s"),
        ("cold cutout", rows[(rows["operation"] == "read_region_cold") & (rows.get("test") == "read")], "elapsed_s",
         False, "s"),
    ]
    for name, part, value, higher, unit in tests:
        if part.empty:
            continue
        ranked = _ranked(part, value, higher)
        if ranked.empty:
            continue
        best, best_v = ranked.index[0], ranked.iloc[0]
        text = f"- **{name}**: {best} is fastest ({best_v:.3g} {unit}"
        pct = part[part["backend"] == best]["pct_of_ceiling"].median()
        if not pd.isna(pct):
            text += f", {pct:.0f}% of this machine's ceiling"
        text += ")"
        if len(ranked) > 1:
            second, second_v = ranked.index[1], ranked.iloc[1]
            factor = best_v / second_v if higher else second_v / best_v
            text += f"; {factor:.2f}x ahead of {second}"
            slowest, slowest_v = ranked.index[-1], ranked.iloc[-1]
            if slowest != second:
                factor = best_v / slowest_v if higher else slowest_v / best_v
                text += f" and {factor:.1f}x ahead of {slowest}"
        lines.append(text + ".")
    if "sharded" in rows:
        sh = rows[(rows.get("test") == "sharding") & (rows["operation"] == "read_region_cold")]
        if not sh.empty:
            med = sh.groupby("layout")["elapsed_s"].median().sort_values()
            inodes = rows[(rows.get("test") == "sharding") & (rows["operation"] == "total")].groupby("layout")[
                "inodes"].median()
            lines.append(f"- **sharding**: the fastest cold cutout layout is *{med.index[0]}* "
                         f"({med.iloc[0] * 1e3:.2f} ms), the slowest *{med.index[-1]}* ({med.iloc[-1] * 1e3:.2f} ms)"
                         + (f"; inodes range from {inodes.min():.0f} to {inodes.max():.0f}." if len(inodes) else "."))
    bad = failures(df)
    if not bad.empty:
        lines.append(f"- **warning**: {len(bad)} error row(s), e.g. {bad['backend'].iloc[0]}: {bad['reason'].iloc[0]}")
    return "\n".join(lines) if lines else "No successful measurements to compare."


def generic_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median and spread of time and GB/s per backend and operation (any suite)."""
    rows = with_ceiling_fraction(ok_rows(df))
    if rows.empty:
        return pd.DataFrame()
    g = rows.groupby(["backend", "operation"], dropna=False)
    return pd.DataFrame({"n": g.size(), "median s": g["elapsed_s"].median(), "IQR s": g["elapsed_s"].quantile(0.75)
                         - g["elapsed_s"].quantile(0.25), "GB/s": g["gbps"].median(),
                         "% ceiling": g["pct_of_ceiling"].median()}).reset_index()


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
