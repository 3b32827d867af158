"""What every chapter shares: ceilings, failures and skips, like-for-like ranking, the run header.

Every throughput is put next to the machine's own ceiling from the same run: writes against
the raw sequential write (with fsync when the figure includes fsync), cold reads against
the raw cold read, warm reads against memcpy. A throughput above that ceiling is not a result
but noise or caching, and ``above_ceiling``/``problems`` say so. No plotting here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import markdown_table, md, md_code
from benchmarks_lib.base.stats import summarize
from benchmarks_lib.chapters.flags import SHORT_S, above_ceiling, ceiling_and_load_problems, ceiling_mark, short_points
from benchmarks_lib.rules.answers import ALWAYS_SHARDS
from benchmarks_lib.rules.ceilings import ceiling_measured_by, ok_rows, with_ceiling_fraction
from benchmarks_lib.rules.decision import LOOKS
from benchmarks_lib.rules.names import operation_name
from benchmarks_lib.rules.ranking import EQUALS, Entry, Ranking, countable, rank_against_leader, rank_samples
from benchmarks_lib.rules.words import case_text, unverified_text, value_text, verdict_text, versus_text
from benchmarks_lib.suites.ceiling import describe_ceiling

MB = 1e6


def ceiling_table(df: pd.DataFrame) -> pd.DataFrame:
    """The ceiling figures of a run: median and spread of GB/s per ceiling, named in words (``CEILING_LABELS``:
    "raw write (no fsync), 1 stream", never the record's ``write_nofsync``)."""
    rows = ok_rows(df)
    rows = rows[rows["backend"] == "ceiling"]
    if rows.empty:
        return pd.DataFrame(columns=["ceiling", "what it is", "GB/s median", "GB/s min", "GB/s max", "n"])
    g = rows.groupby("operation")["gbps"]
    out = pd.DataFrame({"GB/s median": g.median(), "GB/s min": g.min(), "GB/s max": g.max(),
                        "n": g.size()}).reset_index()
    streams = rows.groupby("operation")["streams"].max() if "streams" in rows else pd.Series(dtype="float64")
    out.insert(1, "what it is", [describe_ceiling(op, streams.get(op)) for op in out["operation"]])
    out["operation"] = [operation_name(op, ceiling=True) for op in out["operation"]]
    out = out.rename(columns={"operation": "ceiling"})
    from benchmarks_lib.chapters.tables import (
        table,  # the book's display of a table (no index, three significant figures)
    )

    return table(out)



def shuffle_of(codec: str | None) -> str:
    """The byte/bit shuffle a codec string applies (``blosc-lz4:5:bitshuffle`` -> ``bitshuffle``)."""
    if not isinstance(codec, str) or not codec.startswith("blosc"):
        return "no shuffle"
    mode = codec.split(":")[-1] if codec.count(":") >= 2 else "shuffle"
    return "no shuffle" if mode == "noshuffle" else mode


def threads_of(rows: pd.DataFrame) -> str:
    """The threads a backend used: the ``threads`` setting when recorded, else the most threads seen."""
    if "threads" in rows and rows["threads"].notna().any():
        return f"{int(rows['threads'].max())} thread(s)"
    if "threads_max" in rows and rows["threads_max"].notna().any():
        return f"at most {int(rows['threads_max'].max())} thread(s) seen running"
    return "threads not recorded"


#: rows of these writers written "unsharded" are one chunk per shard (the library always shards)
ALWAYS_SHARDED = dict.fromkeys(sorted(ALWAYS_SHARDS),
                               "always sharded: an unsharded layout is written as one chunk per shard")


def layout_note(backend: str, layout: str | None = None) -> str:
    """What a layout label of ``backend`` really means (empty when it means what it says)."""
    note = ALWAYS_SHARDED.get(backend, "")
    if note and layout is not None and not str(layout).startswith("unsharded"):
        return ""
    return note



#: the most characters of a failure's reason shown in a table
REASON_SHOWN = 200


def first_line(reason: object, limit: int = REASON_SHOWN) -> str:
    """The first non-empty line of a reason (the exception and its message); a longer one is cut at a space
    and marked with an ellipsis, never mid-word where a space allows."""
    line = next((part.strip() for part in reason.splitlines() if part.strip()), "") if isinstance(reason, str) else ""
    if len(line) <= limit:
        return line
    cut = line[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def failures(df: pd.DataFrame) -> pd.DataFrame:
    """Error rows with the first line of their reason (what the chapter must show)."""
    bad = df[df["status"] == "error"]
    cols = [c for c in ("backend", "test", "operation", "reason") if c in bad]
    out = bad[cols].copy()
    if "reason" in out:
        out["reason"] = out["reason"].map(first_line)
    return out.reset_index(drop=True)


def skips(df: pd.DataFrame) -> pd.DataFrame:
    s = df[df["status"] == "skip"]
    cols = [c for c in ("backend", "test", "operation", "reason") if c in s]
    return s[cols].drop_duplicates().reset_index(drop=True)


def group_header(name: str, key: dict) -> str:
    """``- **write**, codec `lz4` (no shuffle), em_like, 100 MB, fsync included``: what a group of equals holds
    fixed, in the words of every case label (``words.case_text``), its codec first with its shuffle."""
    codec = key.get("codec")
    rest = case_text({k: v for k, v in key.items() if k != "codec"})
    lead = [f"codec {md_code(codec)} ({md(shuffle_of(codec))})"] if codec is not None else []
    return f"- **{name}**, " + ", ".join([*lead, *([rest] if rest else [])])


def point_details(backend: str, rows: pd.DataFrame) -> list[str]:
    """What a ranked point's sentence adds: threads, share of the ceiling, layout caveats, short timings."""
    details = [threads_of(rows)]
    pct = rows["pct_of_ceiling"].median() if "pct_of_ceiling" in rows else np.nan
    if not pd.isna(pct):
        details.append(f"{pct:.0f}% of this machine's ceiling" + ceiling_mark(rows))
    if note := layout_note(backend):
        details.append(note)
    if "elapsed_s" in rows and rows["elapsed_s"].median() < SHORT_S:
        details.append(f"under {SHORT_S * 1e3:.0f} ms: fixed costs weigh")
    return details


def entry_text(entry: Entry, ranking: Ranking, unit: str, scale: float = 1.0) -> str:
    """``b 0.5 [0.49, 0.51] GB/s (n=5, 94% interval; 2 thread(s)): 2.00x slower than a [1.9x, 2.1x], separable``."""
    backend = str(entry.rows["backend"].iloc[0]) if "backend" in entry.rows and len(entry.rows) else entry.name
    value = value_text(entry, unit, scale)
    details = "; ".join(point_details(backend, entry.rows))
    value = value[:-1] + f"; {details})" if value.endswith(")") else f"{value} ({details})"
    return f"{md(entry.name)} {value}: {versus_text(entry, ranking)}"


def ranking_lines(rows: pd.DataFrame, name: str, value: str, higher: bool, unit: str, scale: float = 1.0,
                  what: str = "backends") -> list[str]:
    """Markdown lines, one per group of equals (``rank_against_leader``): the verdict, then every entry against
    the leader. ``raw``, the uncompressed baseline, is stated first and never ranked."""
    rankings = rank_against_leader(rows, value, higher)
    lines = [group_header(name, r.key) + ": " + verdict_text(r, what) + "; "
             + "; ".join(entry_text(e, r, unit, scale) for e in r.entries) + unverified_text(r) + "."
             for r in rankings]
    return _baseline_lines(rows, name, value, unit, scale, {r.key.get("nbytes") for r in rankings}) + lines


def _baseline_lines(rows: pd.DataFrame, name: str, value: str, unit: str, scale: float, sizes: set) -> list[str]:
    raw = countable(rows[rows["backend"] == "raw"]).dropna(subset=[value]) if "backend" in rows else rows.iloc[0:0]
    if raw.empty:
        return []
    if "nbytes" in raw and raw["nbytes"].isin(sizes).any():
        raw = raw[raw["nbytes"].isin(sizes)]
    elif "nbytes" in raw:
        raw = raw[raw["nbytes"] == raw["nbytes"].max()]
    keys = [k for k in EQUALS if k in raw]
    out = []
    for key, part in (raw.groupby(keys, dropna=False, sort=True) if keys else [((), raw)]):
        key = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        entry = rank_samples({"raw": part[value].astype("float64")}, True, key, {"raw": part}).leader
        text = value_text(entry, unit, scale)
        out.append(group_header(f"{name} baseline", key) + f": raw (uncompressed, not ranked) {text} "
                   f"({'; '.join(point_details('raw', part))}).")
    return out


def generic_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median time with its order-statistic interval and n, and median GB/s, per backend, operation
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


def write_ceiling_op(df: pd.DataFrame) -> str:
    """The raw-write ceiling that matches the backends' fsync policy (a syncfs in their timed writes)."""
    rows = df[df["backend"] != "ceiling"] if "backend" in df else df
    policy = "sync_method" in rows and rows["sync_method"].astype("string").str.contains("syncfs").fillna(False).any()
    return "write_fsync" if policy else "write_nofsync"


def median_of(rows: pd.DataFrame, col: str) -> float:
    """The median of ``col`` over ``rows`` (NaN when there is none)."""
    vals = rows[col].astype("float64").dropna()
    return float(vals.median()) if len(vals) else float("nan")


def error_warning(df: pd.DataFrame) -> list[str]:
    """A conclusion's warning line when the run has error rows (empty otherwise)."""
    bad = failures(df)
    if bad.empty:
        return []
    return [f"- **warning**: {len(bad)} error row(s), e.g. {md(bad['backend'].iloc[0])}: {md(bad['reason'].iloc[0])}"]


def digits3(value: float) -> str:
    """About three significant digits, never in exponent notation for speeds (1337, 596, 2.31, 0.0123)."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def answer_first(answer: str, conclusion: str) -> str:
    """A chapter's conclusion opening with its answer (``answer(df)``: the verdict box's answer, in its words), so
    the chapter says what the front page says."""
    if answer.startswith("Nothing to answer yet"):
        return conclusion
    return f"**The answer** (the front page's, by the same rule on the same rows):\n\n{answer}\n\n{conclusion}"


def no_answer(what: str) -> str:
    """The front page's sentence for a chapter whose run has nothing to answer with (no rows, only skips)."""
    return f"Nothing to answer yet: this run has no successful {what}."


# -- trust: nothing is faster than the machine's own ceiling ------------------------------

# -- what every chapter shows ---------------------------------------------------------------


def problems(df: pd.DataFrame) -> str:
    """Markdown: the error rows, the skipped cases, the reads not proven cold, and every throughput above
    this machine's ceiling (or one line saying there are none)."""
    parts = []
    bad = failures(df)
    if len(bad):
        parts += [f"**Warning: {len(bad)} error row(s): these numbers are missing or failed verification.**",
                  markdown_table(bad)]
    skipped = skips(df)
    if len(skipped):
        parts += ["Skipped (not installed or not supported):", markdown_table(skipped)]
    unproven = ok_rows(df)[ok_rows(df)["cache_state"] == "cold_unverified"] if "cache_state" in df else df.iloc[0:0]
    if len(unproven):
        parts.append(f"{len(unproven)} read(s) could not be proven cold: the page-cache eviction "
                     "or the disk reads did not prove a cold read.")
    short = short_points(df)
    if len(short):
        parts += [f"{len(short)} point(s) lasted under {SHORT_S * 1e3:.0f} ms (median): fixed costs (process, open, "
                  "metadata) and timer noise weigh on them as much as the operation, so rank on them only with care; "
                  "the standard profile measures the same operations on more bytes:", markdown_table(short)]
    high = above_ceiling(df)
    if len(high):
        parts += [f"**{len(high)} point(s) above this machine's ceiling**: faster than plain file I/O or memcpy "
                  "of the same bytes in the same run can be, so these are noise or caching (data still in the page "
                  "cache), not real results (compressed points are compared on the bytes that moved):",
                  markdown_table(high)]
    parts += ceiling_and_load_problems(df)  # between the single-stream and parallel ceilings; measured under load
    return "\n\n".join(parts) or ("No errors, no skipped cases, every read proven cold, no throughput above the "
                                   f"ceiling, no timed region under {SHORT_S * 1e3:.0f} ms.")


def s3_servers(rows: pd.DataFrame) -> list[str]:
    """The S3 servers these rows went through, each with its version as recorded (``s3_server``: ``versitygw
    v1.8.0 (posix)``, ``MinIO (version not recorded)`` for the runs made on MinIO, or a user's endpoint)."""
    if "s3_server" not in rows:
        return []
    return sorted(set(rows["s3_server"].dropna().astype(str)))


def _rounds_words(meta: dict, params: dict) -> str:
    """How many measurements a point has: the rounds of a run measured in rounds (looked at, stopped when answered,
    within the budget), else its iterations back to back."""
    rounds = meta.get("rounds")
    if not isinstance(rounds, dict):
        return f"up to {md(params.get('iterations'))} measured iteration(s) per point"
    budget = rounds.get("budget_s")
    within = f", within a budget of {budget:.0f} s" if isinstance(budget, int | float) else ""
    stopped = f" ({md(rounds['stopped'])})" if isinstance(rounds.get("stopped"), str) and rounds["stopped"] else ""
    recorded = rounds.get("looks")
    looks = recorded if isinstance(recorded, list) and recorded and all(type(n) is int for n in recorded) else LOOKS
    return (f"measured in rounds (every case once a round, in a fresh random order; each question looked at after "
            f"{', '.join(str(n) for n in looks[:64])} rounds over the builds that go on with it and stopped once "
            f"decided{within}): {md(rounds.get('rounds'))} rounds in all{stopped}; a row of `iobench show` per "
            f"question says why it stopped")


def run_header(result, times: str) -> str:
    """Markdown: the run, the machine, n, what the times include (``times``, and fsync as recorded).

    The parameters are not repeated here: each chapter shows them as a table (``pages.parameters_table``).
    """
    meta, df = result.meta, result.df
    env, params = meta.get("environment", {}), meta.get("params", {})
    machine = [env.get("cpu_model") or "CPU not recorded",
               f"{env.get('cpu_affinity') or env.get('cpu_count')} usable of {env.get('cpu_count')} cores"]
    if isinstance(env.get("ram_bytes"), int | float) and env["ram_bytes"]:
        machine.append(f"{env['ram_bytes'] / 2**30:.0f} GiB RAM")
    if env.get("fs_type"):
        machine.append(f"{env['fs_type']} on {env.get('fs_device')}")
    rows = df[df["backend"] != "ceiling"] if "backend" in df else df
    fsync = rows["fsync_included"].dropna().astype(bool) if "fsync_included" in rows else pd.Series(dtype=bool)
    if len(fsync):
        times += ("; fsync included in every timed write" if fsync.all() else
                  "; no fsync in the timed writes" if not fsync.any() else "; fsync in some rows (as labelled)")
    source = ceiling_measured_by(df)
    measured = (f"measured once for this book, by run {md_code(source)} of the same build (the same bytes, machine "
                "and file system)" if source else "measured in the same run")
    return "\n".join([
        f"Run {md_code(meta.get('run_id'))} ({md(meta.get('profile'))} profile) on "
        f"**{md(env.get('machine', 'this machine'))}**: {', '.join(md(m) for m in machine)}.",
        "",
        f"- **n**: {_rounds_words(meta, params)}, after {md(params.get('warmups'))} discarded warm-up(s); figures "
        "and tables show medians with their order-statistic intervals (95% from n=6; below that the range, with its "
        "coverage stated).",
        f"- **times include**: {times}.",
        "- **ceiling**: plain file I/O (one stream at queue depth 1, and as many parallel streams as usable cores) "
        f"and memcpy {measured}; a throughput above the ceiling it is judged by is flagged.",
    ])
