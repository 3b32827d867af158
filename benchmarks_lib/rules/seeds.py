"""The seeds' claims, checked on this machine: each headline of the five public benchmarks this book was made from,
as its source states it (``../shared/seeds/`` of the project: 000-004), held against the rows of this machine's runs.

A claim is an ordering, and a factor where the source gives one: "TensorStore writes faster than zarr-python (2.37
against 2.02 GB/s)". Orderings and ratios carry across machines; absolute speeds do not, so a check compares the
claim's two contenders in the matching configuration of a chapter's run, round by round, with the one rule
(:func:`.decision.decide` at the run's cap, :func:`.ranking.rank_parts`): the seed's claim is a question of its own,
named before any row was measured, so deciding it on the run's rounds is no pick after the fact. Its verdict:

- **holds**: the rule names the seed's faster contender the leader (its interval on the seed's side of 1), or a
  count (files on disk) is ordered as the seed says;
- **does not hold**: the rule names the other the leader, finds the two within the margin, or ties them with an
  interval that excludes the seed's factor;
- **cannot be tested here**: the run did not measure the configuration (the profile leaves it out, the machine has
  too few cores, the library is not one the book measures), the two were never like with like (a writer that
  fsyncs each file itself against one that does not), or the rounds did not decide it yet; the reason says which.

Every string from a run is a record string: the caller escapes it where it is shown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

import pandas as pd

from benchmarks_lib.records.questions import EQUALS
from benchmarks_lib.rules.answers import writers_rows
from benchmarks_lib.rules.ceilings import ok_rows
from benchmarks_lib.rules.decision import Verdict, ratio_text
from benchmarks_lib.rules.ranking import Ranking, rank_parts


class Holds(StrEnum):
    """A claim's verdict on this machine."""

    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    CANNOT = "cannot be tested here"


@dataclass(frozen=True)
class Claim:
    """One headline of a seed, as its source states it."""

    seed: str
    #: the source, in a few words
    source: str
    #: the claim with its numbers
    claim: str
    #: what the seed measured it on (sizes, data, machine)
    setting: str
    #: the suite whose run checks it, and the check (a function of that run's rows)
    suite: str
    check: str
    #: the contenders as this book names them: the seed's faster one, its slower one, and the seed's factor (the
    #: slower one's time over the faster one's; NaN where the seed gives none)
    faster: str = ""
    slower: str = ""
    factor: float = math.nan
    #: the seed's method, where it differs from this book's in a way that can move the answer
    method: str = ""
    #: a few words naming it (a figure's label)
    short: str = ""
    #: the suite's parameters at which its run measures the seed's own configuration (empty: no profile does)
    own: tuple[tuple[str, object], ...] = ()
    #: the front page's question whose answer this claim tests (``rules.answers.QUESTIONS``' key; '' for none)
    answer: str = ""
    #: the phase of a write the seed timed, where it timed less than the whole write (``write``: the write call
    #: alone, without create, finalize and fsync); '' where it timed what this book does
    timed: str = ""

    def at(self, params: Mapping[str, object]) -> str:
        """Whether a run with ``params`` (the suite's, resolved for a profile) checks this claim at the seed's own
        sizes: '' where it does, else what differs (``scaled: dims t:32,... (the seed's t:64,...)``)."""
        if not self.own:
            return "never at the seed's own configuration (no profile measures it)"
        differ = [f"{k} {params.get(k)!s} (the seed's {v!s})" for k, v in self.own if params.get(k) != v]
        return f"scaled: {'; '.join(differ)}" if differ else ""


@dataclass(frozen=True)
class Checked:
    """A claim held against this machine's rows: its verdict, what was measured (a record-string-free sentence of
    numbers, or one naming the contenders) and why."""

    claim: Claim
    holds: Holds
    measured: str
    why: str
    run_id: str = ""
    #: the seed's slower contender's time over its faster one's, here, with the interval (NaN: no pair decided)
    ratio: float = math.nan
    lo: float = math.nan
    hi: float = math.nan
    #: the claim decided on the same run's rows the way its seed measured it, where that differs from this book's
    #: way and the rows allow it, with whether the verdict changes ('' otherwise)
    seed_way: str = ""


_000 = "acquire-project zarr-writers-benchmark"
_000_SET = "uint8 [64m, 1080, 1920] frames, blosc-lz4 level 1; i7-11700K, NVMe"
_000_METHOD = "times the write call only: no fsync, and acquire-zarr's flush not waited for"
_000_OWN = (("dataset", "em_like"), ("dims", "t:64,y:1080:540,x:1920"))
_001 = "zarrita / wkw / zarr-python"
_001_SET = "1024^3 EM data, 512^3 shards with 32^3 inner chunks; M1 Pro under Rosetta 2, one run"
#: the side of seed 001's volume
SEED_CUBE = 1024
_001_OWN = (("shard_volume", SEED_CUBE), ("shard", 512))
_002 = "zvtk"
_002_SET = "a 500 MB tetrahedral mesh, 5 runs"
_003 = "ome-writers"
_003_SET = "(20, 1024, 1024) uint16 random data, (1, 256, 256) chunks"
_003_OWN = (("dataset", "random"), ("dims", "t:20:1,y:1024:256,x:1024:256"))
_004 = "ROOT prefetching"
_004_SET = "a TTree over HTTP, 100 MB TTreeCache"
_004_OWN = (("entries", 10_000), ("branches", 2000))

#: the claims, in the seeds' order
CLAIMS: tuple[Claim, ...] = (
    Claim("000", _000, "TensorStore writes 2.37 GB/s, zarr-python 2.02 GB/s: TensorStore 1.17x faster", _000_SET,
          "writers", "write", "tensorstore", "zarr-python", 2.37 / 2.02, _000_METHOD, short="write", own=_000_OWN,
          answer="write", timed="write"),
    Claim("000", _000, "TensorStore appends 1.46 GB/s, zarr-python 0.74 GB/s: TensorStore 1.97x faster", _000_SET,
          "writers", "append", "tensorstore", "zarr-python", 1.46 / 0.74, _000_METHOD, short="append", own=_000_OWN,
          answer="append"),
    Claim("000", _000, "OME-Zarr (ome-zarr-py) writes 0.29 GB/s and cpp-zarr 0.19 GB/s, far below zarr-python",
          _000_SET, "writers", "unmeasured", method=_000_METHOD, short="OME-Zarr", answer="write"),
    Claim("001", _001, "wkw writes the sharded volume in 1.06 s, zarr-python in 13.18 s: 12.4x faster", _001_SET,
          "writers", "sharded-write", "wkw", "zarr-python", 13.18 / 1.06, "one run, emulated Python (Rosetta 2)",
          short="sharded write", own=_001_OWN, answer="sharding"),
    Claim("001", _001, "a 32^3 cutout takes 2.9 ms from 32^3 inner chunks in shards, 183 ms from zarr-python's "
          "unsharded 512^3 chunks: 63x faster", _001_SET, "writers", "sharded-cutout", "sharded", "unsharded",
          0.18277 / 0.00294, "one run, a warm page cache (no eviction)", short="cutout", own=_001_OWN,
          answer="sharding"),
    Claim("001", _001, "sharding keeps the files down: 16 inodes in shards against 32,769 for 32^3 chunks", _001_SET,
          "writers", "inodes", "sharded", "unsharded", short="inodes", own=_001_OWN, answer="sharding"),
    Claim("002", _002, "level 3 writes 1,845 MB/s at ratio 3.02 with 4 threads, VTK XML with zlib 105 MB/s at "
          "2.52: 17.6x faster", _002_SET, "compression", "zvtk-vtu", "zvtk", "vtu", 1845 / 105,
          "reads from a warm page cache", short="zvtk / VTK XML", own=(("mesh_n", 127),), answer="codec"),
    Claim("002", _002, "the gains flatten past 8 threads", _002_SET, "threads", "eight-threads",
          method="a machine with more than 8 cores", short="threads", own=(("mesh_n", 342),), answer="threads"),
    Claim("003", _003, "zarrs-python writes 1.207 GB/s, TensorStore 0.888 GB/s: zarrs 1.36x faster", _003_SET,
          "writers", "write", "zarrs", "tensorstore", 1.207 / 0.888,
          "random data: the codecs have nothing to do", short="zarrs", own=_003_OWN, answer="write"),
    Claim("003", _003, "acquire-zarr writes 0.981 GB/s, TensorStore 0.888 GB/s: acquire-zarr 1.10x faster",
          _003_SET, "writers", "write", "acquire-zarr", "tensorstore", 0.981 / 0.888,
          "random data; acquire-zarr's own fsync of every file counted like the others' writes", short="acquire-zarr",
          own=_003_OWN, answer="write"),
    Claim("004", _004, "with the 100 MB TTreeCache a read takes 152.9 s and 104 read calls, without one 3,945 s "
          "and 202,004 calls: 25.8x faster", _004_SET, "cache", "ttree-cache", "100 MB TTreeCache",
          "no TTreeCache", 3945 / 152.9, "no network named (the link's latency unknown)", short="TTreeCache",
          own=_004_OWN, answer="cache"),
    Claim("004", _004, "asynchronous prefetching brings 152.9 s down to 92.6 s: 1.65x faster", _004_SET, "cache",
          "async-prefetch", "async prefetching", "no async prefetching", 152.9 / 92.6,
          "no network named (the link's latency unknown)", short="prefetching", own=_004_OWN, answer="cache"),
)


# -- one pair, decided by the rule ---------------------------------------------------------------------------------
def _pair_verdict(claim: Claim, r: Ranking, run_id: str) -> Checked:
    """The verdict of a pair decided by the rule: the seed's faster one against its slower one."""
    d = r.decision
    if d is None or d.verdict is Verdict.ALONE:
        return Checked(claim, Holds.CANNOT, "", "only one of the two measured", run_id)
    ratios = d.ratios
    if d.best == claim.faster:
        ratio, lo, hi = ratios[claim.slower]
    else:  # the seed's slower one leads: its time over the other's, turned to the claim's way
        r_, lo_, hi_ = ratios[claim.faster]
        ratio, lo, hi = 1 / r_, (1 / hi_ if hi_ > 0 else math.nan), (1 / lo_ if lo_ > 0 else math.nan)
    paired = min((c.rounds for c in d.comparisons), default=d.stops)  # a sweep's writes: only some rounds
    rounds = f"{d.stops} rounds" if paired == d.stops else f"{paired} paired in {d.stops} rounds"
    said = (f"{claim.slower} {ratio_text(ratio, lo, hi)} than {claim.faster}, {rounds}"
            f"{f' (the seed: {claim.factor:.2f}x)' if math.isfinite(claim.factor) else ''}")
    numbers = {"ratio": ratio, "lo": lo, "hi": hi}
    if d.verdict.named and d.best == claim.faster:
        size = ("; the seed's factor within the interval" if math.isfinite(claim.factor) and lo <= claim.factor <= hi
                else "; the seed's factor outside the interval" if math.isfinite(claim.factor) else "")
        return Checked(claim, Holds.HOLDS, said, f"{claim.faster} leads, as the seed found{size}", run_id, **numbers)
    if d.verdict.named:
        return Checked(claim, Holds.DOES_NOT_HOLD, said, f"{claim.slower} leads here", run_id, **numbers)
    if d.verdict is Verdict.EQUIVALENT:
        return Checked(claim, Holds.DOES_NOT_HOLD, said, "the two are within 5% of each other here", run_id, **numbers)
    if d.verdict is Verdict.TIE and math.isfinite(claim.factor) and math.isfinite(hi) and hi < claim.factor:
        return Checked(claim, Holds.DOES_NOT_HOLD, said, f"a tie here, at most {hi:.2f}x: the seed's "
                       f"{claim.factor:.2f}x lies outside", run_id, **numbers)
    if d.verdict is Verdict.TIE:
        return Checked(claim, Holds.CANNOT, said, f"not told apart after {d.stops} rounds", run_id, **numbers)
    return Checked(claim, Holds.CANNOT, said, f"open after {rounds}: a later build goes on", run_id, **numbers)


def _decide_pair(claim: Claim, parts: Mapping[str, pd.DataFrame], value: str, higher: bool,
                 run_id: str) -> Checked:
    if any(p.empty for p in parts.values()):
        missing = [name for name, p in parts.items() if p.empty]
        return Checked(claim, Holds.CANNOT, "", f"{' and '.join(missing)} not measured in this run", run_id)
    return _pair_verdict(claim, rank_parts(dict(parts), value, higher), run_id)


def _unlike(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """The settings of a group of equals (``EQUALS``) in which two contenders' rows never meet."""
    def values(rows: pd.DataFrame, key: str) -> set[str]:
        return set(rows[key].astype(object).where(rows[key].notna(), None).astype(str))

    return [k for k in EQUALS if k in a and k in b and not values(a, k) & values(b, k)]


# -- the checks --------------------------------------------------------------------------------------------------
def _writers_pair(claim: Claim, df: pd.DataFrame, run_id: str) -> Checked:
    """A write or append of the writers run: the two writers in their group of equals (the largest size both
    finished); and the same pair the seed's way where its method differs (:func:`_seed_way`)."""
    rows = writers_rows(df, "append" if claim.check == "append" else "write")
    a, b = (rows[rows["backend"] == name] for name in (claim.faster, claim.slower))
    if a.empty or b.empty:
        return _decide_pair(claim, {claim.faster: a, claim.slower: b}, "gbps", True, run_id)
    size = min(a["nbytes"].max(), b["nbytes"].max()) if "nbytes" in rows else None
    if size is not None:
        a, b = a[a["nbytes"] == size], b[b["nbytes"] == size]
    unlike = _unlike(a, b)
    if unlike:
        why = " (a writer that fsyncs every file itself is timed with its flush)" if "writer_fsyncs" in unlike else ""
        ours = Checked(claim, Holds.CANNOT, "", f"never like with like here: they differ in {', '.join(unlike)}{why}",
                       run_id)
    else:
        ours = _decide_pair(claim, {claim.faster: a, claim.slower: b}, "gbps", True, run_id)
    return replace(ours, seed_way=_seed_way(claim, df, a, b, unlike, ours))


def _seed_way(claim: Claim, df: pd.DataFrame, a: pd.DataFrame, b: pd.DataFrame, unlike: list[str],
              ours: Checked) -> str:
    """The pair decided on the same rounds as the seed measured it, where its method differs from this book's in a
    way the run's rows hold: the write call alone (``Claim.timed``: the run times each phase of a write), or a
    writer's own fsync of every file counted like the others' writes (``writer_fsyncs``, the only setting the two
    differ in). Says whether the verdict differs from ours, and which part of the method explains it."""
    if claim.timed:
        phase = ok_rows(df)
        phase = phase[(phase["operation"] == claim.timed) & (phase["test"] == "write")] if len(phase) else phase
        parts = {name: phase[(phase["backend"] == name) & phase["nbytes"].isin(set(rows["nbytes"]))]
                 for name, rows in ((claim.faster, a), (claim.slower, b))}
        how, part = f"the {claim.timed} call alone", "timing the create, finalize and fsync with the write"
    elif unlike == ["writer_fsyncs"]:
        parts = {claim.faster: a, claim.slower: b}
        how, part = "a writer's own fsync of every file counted like the others' writes", "counting that fsync"
    else:
        return ""
    theirs = _decide_pair(claim, parts, "elapsed_s", False, ours.run_id)
    if not theirs.measured:
        return ""
    if ours.holds is Holds.CANNOT or theirs.holds is Holds.CANNOT:
        verdict = ""
    elif theirs.holds is ours.holds:
        verdict = f"; the same verdict as this book's: {part} does not change it"
    else:
        verdict = f"; not this book's verdict ({ours.holds}): {part} explains the difference"
    return f"the seed's way ({how}): {theirs.measured}: **{theirs.holds}**{verdict}"


def _sweep(df: pd.DataFrame, operation: str) -> pd.DataFrame:
    rows = ok_rows(df)
    if rows.empty or not {"test", "layout", "operation"} <= set(rows):
        return rows.iloc[0:0]
    return rows[(rows["test"] == "sharding") & (rows["operation"] == operation)]


def _no_sweep(claim: Claim, run_id: str) -> Checked:
    return Checked(claim, Holds.CANNOT, "", "no sharding sweep in this run (TESTS without \"sharding\")", run_id)


def _sharded_write(claim: Claim, df: pd.DataFrame, run_id: str) -> Checked:
    rows = _sweep(df, "total")
    if rows.empty:
        return _no_sweep(claim, run_id)
    rows = rows[rows["layout"].astype(str).str.startswith("sharded")]
    if not rows.empty and claim.faster not in set(rows["backend"]):
        failed = "status" in df and ((df["backend"] == claim.faster) & (df["status"] == "error")).any()
        why = (f"{claim.faster}'s sharding sweep ended in an error here (its error row says why)" if failed else
               f"{claim.faster} is not in this run's sharding sweep (the quick profile sweeps raw, zarr-python and "
               "tensorstore; standard every writer)")
        return Checked(claim, Holds.CANNOT, "", why, run_id)
    inner = rows[rows["inner_chunk"] == rows["inner_chunk"].min()] if "inner_chunk" in rows and len(rows) else rows
    parts = {name: inner[inner["backend"] == name] for name in (claim.faster, claim.slower)}
    return _decide_pair(claim, parts, "elapsed_s", False, run_id)


def _layouts(rows: pd.DataFrame, writer: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A writer's sharded rows (the smallest inner chunk) and its unsharded rows with one chunk per shard of the
    sharded layout (the seed's big chunks: ``unsharded 128`` beside ``sharded 128/32``)."""
    mine = rows[rows["backend"] == writer]
    layout = mine["layout"].astype(str)
    sharded = mine[layout.str.startswith("sharded")]
    if sharded.empty or "shard_size" not in mine:
        return sharded, mine.iloc[0:0]
    shard = int(sharded["shard_size"].max())
    if "inner_chunk" in sharded:
        sharded = sharded[sharded["inner_chunk"] == sharded["inner_chunk"].min()]
    return sharded, mine[layout == f"unsharded {shard}"]


def _sharded_cutout(claim: Claim, df: pd.DataFrame, run_id: str) -> Checked:
    rows = _sweep(df, "read_region_cold")
    if rows.empty:
        return _no_sweep(claim, run_id)
    if "cutout_kind" in rows and (rows["cutout_kind"] == "aligned").any():
        rows = rows[rows["cutout_kind"] == "aligned"]  # the seed's cutout sat at the origin
    writer = next((w for w in ("zarr-python", "tensorstore") if w in set(rows["backend"])), None)
    if writer is None:
        return Checked(claim, Holds.CANNOT, "", "no sharding sweep of zarr-python or tensorstore in this run",
                       run_id)
    sharded, big = _layouts(rows, writer)
    parts = {claim.faster: sharded, claim.slower: big}
    checked = _decide_pair(claim, parts, "elapsed_s", False, run_id)
    if checked.measured:
        inner, shard = int(sharded["inner_chunk"].min()), int(sharded["shard_size"].max())
        checked = replace(checked, measured=f"{writer}: {checked.measured}; {shard}^3 shards of {inner}^3 chunks "
                          f"against {shard}^3 chunks")
    return checked


def _inodes(claim: Claim, df: pd.DataFrame, run_id: str) -> Checked:
    rows = _sweep(df, "total")
    if rows.empty or "inodes" not in rows:
        return _no_sweep(claim, run_id)
    writer = next((w for w in ("zarr-python", "tensorstore") if w in set(rows["backend"])), None)
    if writer is None:
        return Checked(claim, Holds.CANNOT, "", "no sharding sweep of zarr-python or tensorstore", run_id)
    mine = rows[rows["backend"] == writer]
    layout = mine["layout"].astype(str)
    sharded, small = mine[layout.str.startswith("sharded")], mine[~layout.str.startswith("sharded")]
    if "inner_chunk" in sharded and len(sharded):
        inner = sharded["inner_chunk"].min()
        sharded, small = sharded[sharded["inner_chunk"] == inner], small[layout[small.index] == f"unsharded {inner:g}"]
    if sharded.empty or small.empty:
        return Checked(claim, Holds.CANNOT, "", "the sweep did not write both layouts", run_id)
    a, b = int(sharded["inodes"].max()), int(small["inodes"].max())
    said = f"{writer}: {a} inodes in shards against {b} for the same chunks unsharded ({b / max(a, 1):.0f}x fewer)"
    if a < b:
        side = int(sharded["shard_volume"].max()) if "shard_volume" in sharded else 0
        cube = f"a {side}^3 cube here, the seed's {SEED_CUBE}^3" if side != SEED_CUBE else f"the seed's {side}^3 cube"
        return Checked(claim, Holds.HOLDS, said, f"counted on disk after each write ({cube})", run_id)
    return Checked(claim, Holds.DOES_NOT_HOLD, said, "the shards did not take fewer files", run_id)


def _zvtk_vtu(claim: Claim, df: pd.DataFrame, run_id: str) -> Checked:
    rows = ok_rows(df)
    if rows.empty or "backend" not in rows:
        return Checked(claim, Holds.CANNOT, "", "no compression rows", run_id)
    write = rows[rows["operation"] == "write"]
    zvtk = write[(write["backend"] == "zvtk") & (write["level"] == 3)] if "level" in write else write.iloc[0:0]
    vtu = write[(write["backend"] == "vtu") & (write["codec"].astype(str) == "zlib")]
    if vtu.empty:
        return Checked(claim, Holds.CANNOT, "", "VTK XML with zlib is not in this run (the quick profile measures "
                       "its lz4; standard its zlib)", run_id)
    if "threads" in zvtk and zvtk["threads"].notna().any():
        zvtk = zvtk[zvtk["threads"] == zvtk["threads"].max()]
    checked = _decide_pair(claim, {claim.faster: zvtk, claim.slower: vtu}, "gbps", True, run_id)
    if checked.measured and "compression_ratio" in write:
        ratios = f"; ratio {zvtk['compression_ratio'].median():.2f} against {vtu['compression_ratio'].median():.2f}"
        checked = replace(checked, measured=checked.measured + ratios)
    return checked


def _eight_threads(claim: Claim, df: pd.DataFrame, run_id: str) -> Checked:
    cores = df["cores"].dropna() if "cores" in df else pd.Series(dtype="float64")
    most = int(df["threads"].max()) if "threads" in df and df["threads"].notna().any() else 0
    here = f"{int(cores.iloc[0])} usable cores" if len(cores) else "too few cores"
    return Checked(claim, Holds.CANNOT, f"at most {most} threads measured" if most else "",
                   f"this machine has {here}: threads past 8 would be oversubscribed", run_id)


def _root(df: pd.DataFrame) -> pd.DataFrame:
    rows = ok_rows(df)
    if rows.empty or "reader" not in rows or "cache_bytes" not in rows:
        return rows.iloc[0:0]
    rows = rows[(rows["reader"] == "root") & (rows["location"] != "local")]
    return rows[rows["latency_ms"] == rows["latency_ms"].max()] if len(rows) else rows


def _ttree_cache(claim: Claim, df: pd.DataFrame, run_id: str) -> Checked:
    rows = _root(df)
    if "async_prefetch" in rows:
        rows = rows[rows["async_prefetch"].fillna(0) == 0]
    none, cached = rows[rows["cache_bytes"] == 0], rows[rows["cache_bytes"] > 0] if len(rows) else rows
    cached = cached[cached["cache_bytes"] == cached["cache_bytes"].max()] if len(cached) else cached
    return _decide_pair(claim, {claim.faster: cached, claim.slower: none}, "elapsed_s", False, run_id)


def _async_prefetch(claim: Claim, df: pd.DataFrame, run_id: str) -> Checked:
    rows = _root(df)
    rows = rows[rows["cache_bytes"] == rows["cache_bytes"].max()] if len(rows) else rows
    flag = rows["async_prefetch"].fillna(0).astype(bool) if "async_prefetch" in rows else pd.Series(False, rows.index)
    if not flag.any():
        return Checked(claim, Holds.CANNOT, "", "asynchronous prefetching is not in this run (ASYNC_PREFETCH=[0, 1] "
                       "in the cache chapter measures it)", run_id)
    return _decide_pair(claim, {claim.faster: rows[flag], claim.slower: rows[~flag]}, "elapsed_s", False, run_id)


def _unmeasured(claim: Claim, df: pd.DataFrame, run_id: str) -> Checked:
    return Checked(claim, Holds.CANNOT, "", "neither library is one this book measures", run_id)


CHECKS: dict[str, Callable[[Claim, pd.DataFrame, str], Checked]] = {
    "write": _writers_pair, "append": _writers_pair, "unmeasured": _unmeasured, "sharded-write": _sharded_write,
    "sharded-cutout": _sharded_cutout, "inodes": _inodes, "zvtk-vtu": _zvtk_vtu, "eight-threads": _eight_threads,
    "ttree-cache": _ttree_cache, "async-prefetch": _async_prefetch,
}


def check_claims(runs: Mapping[str, tuple[pd.DataFrame, str]]) -> list[Checked]:
    """Every claim held against ``runs`` (suite -> (rows, run id) of this machine's run of it); a claim whose suite
    has no run here cannot be tested."""
    out = []
    for claim in CLAIMS:
        if claim.suite not in runs:
            out.append(Checked(claim, Holds.CANNOT, "", f"no {claim.suite} run here"))
            continue
        df, run_id = runs[claim.suite]
        out.append(CHECKS[claim.check](claim, df, run_id))
    return out


def sizes_lines(profile: str, params: Callable[[str], Mapping[str, object]]) -> list[str]:
    """What the seeds chapter checks at ``profile``, said before measuring: which claims its runs measure at the
    seeds' own sizes and which scaled (``params``: a suite's resolved parameters at the profile)."""
    resolved = {suite: params(suite) for suite in dict.fromkeys(c.suite for c in CLAIMS)}
    said = [(c, c.at(resolved[c.suite])) for c in CLAIMS]
    own = [c for c, at in said if not at]
    head = (f"seeds: {len(own)} of {len(CLAIMS)} claims checked at the seeds' own sizes on the {profile} profile"
            + (" (where this machine's disk and memory hold them: each chapter's scratch above)" if own else
               " (make book PROFILE=seed checks them at their own)"))
    return [head, *(f"  {c.seed} {c.short}: {at}" for c, at in said if at)]


__all__ = ["CHECKS", "CLAIMS", "Checked", "Claim", "Holds", "check_claims", "sizes_lines"]
