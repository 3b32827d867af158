"""The questions the book answers, each answered once: which writer writes, appends, reads and cuts out fastest,
which codec, how many threads, whether sharding helps cutouts, which cache setting helps remote reads, and which
parallel writes lose data.

:func:`answer` takes one run's rows (the question's suite) and gives an :class:`Answer`: the pick, the ranking it
rests on (the one rule, :mod:`.ranking`: ``rank_against_leader`` and ``Ranking.status``), what it rests on (dataset,
dtype, shape, codec, size) and the chapter section that holds its evidence. The front page's verdict box, each
chapter's answer and conclusion take their answers from here, on the same rows and the same pooling, so they
cannot disagree; ``iobench advise`` ranks the same rows the same way (the sharding question is its cutout question:
the sharding sweep's unaligned cutouts, every writer and layout, then the leader's writer sharded against
unsharded). The words are :mod:`.words`' (:func:`.words.verdict_line`).

Every name in an answer is a record string: escape it where it is shown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from benchmarks_lib.base.specs import format_bytes, shape_text
from benchmarks_lib.data.meshes import MESH_DATASET
from benchmarks_lib.rules.ceilings import ok_rows, with_ceiling_fraction
from benchmarks_lib.rules.compression import SIDE, SLOWDOWN, summarize_points, worth_taking
from benchmarks_lib.rules.decision import MARGIN
from benchmarks_lib.rules.ranking import Entry, Ranking, Verdict, countable, entry_names, rank_against_leader
from benchmarks_lib.rules.upgrades import Change, changes


@dataclass(frozen=True)
class Question:
    """One question of the verdict box: its key, its words, the suite whose run answers it, and the chapter
    (notebook) section holding its evidence (a heading of the notebook, linked by its anchor)."""

    key: str
    label: str
    suite: str
    chapter: str
    section: str
    #: the pick is the leader (else a rule picks below it: the fewest threads, the codec worth taking), so a group
    #: the rule cannot tell apart is a tie
    picks_leader: bool = True
    #: where the pick is not the leader: the rule that took it, in words (the comparison with the leader follows)
    pick_rule: str = ""


_READS = "Reads: full (cold and warm) and cutouts"
#: the questions, in the verdict box's order
QUESTIONS: tuple[Question, ...] = (
    Question("write", "Write", "writers", "writers", "Write test: a new store per size"),
    Question("append", "Append", "writers", "writers", "Append test: frames streamed into one store"),
    Question("cold-read", "Cold full read", "writers", "writers", _READS),
    Question("cutouts-aligned", "Cutouts on chunk boundaries", "writers", "writers", _READS),
    Question("cutouts-unaligned", "Cutouts from anywhere", "writers", "writers", _READS),
    Question("codec", "Codec", "compression", "compression", "Ratio vs speed: the Pareto front per dataset", False,
             f"worth taking (the best ratio within {SLOWDOWN:g}x of the fastest write)"),
    Question("threads", "Threads", "threads", "threads", "Speed vs threads", False,
             f"the fewest threads within {MARGIN:.0%} of the fastest"),
    Question("sharding", "Sharding for cutouts", "writers", "writers", "Sharding sweep"),
    Question("cache", "Cache for remote reads", "cache", "cache",
             "Zarr over HTTP and S3: requests, read amplification, concurrency"),
    Question("lost-data", "Parallel writes that lose data", "parallel", "parallel",
             "Conclusion (computed from this run)"),
)
BY_KEY = {q.key: q for q in QUESTIONS}
#: will the upgrade hurt? In the verdict box only where the upgrades run (or a writers run with ``--versions``)
#: measured a library at more than one version (``upgrade_answer``), after the questions every book answers
UPGRADE = Question("upgrade", "Upgrading", "upgrades", "upgrades", "Time at each version, as a ratio of the newest")
#: writers whose "unsharded" layout is one chunk per shard (they always shard): never in a sharded-vs-unsharded claim
ALWAYS_SHARDS = frozenset({"acquire-zarr"})
#: the codec and threads questions' headline dataset: the first of these a run measured (else the first by name; a
#: mesh last)
HEADLINE_DATASETS = ("microscopy", "em_like", "labels")
_ROOT_SECTION = "Seed 004 reproduced: ROOT's TTreeCache and asynchronous prefetching"


@dataclass(frozen=True)
class Answer:
    """One question's answer from one run. ``ranking`` is what the verdict rests on (None: not measured, or no
    ranking: the lost-data question counts arrays); ``pick`` names the entry to take (the leader, except where the
    rule takes the fewest threads not separable from the best, or the codec worth taking). ``rests_on`` holds the
    record strings and sizes the answer is limited to; ``more`` the same question on the run's other groups
    (datasets, sides, backends) that the chapter states too."""

    question: Question
    ranking: Ranking | None = None
    pick: str = ""
    rests_on: tuple[str, ...] = ()
    #: the section of the question's chapter holding this answer's evidence ('' : the question's own)
    section: str = ""
    #: what is picked besides the ranked value, in words of numbers only (the codec's ratio)
    note: str = ""
    #: groups of equals the run measured for this question (the answer is the most contested one's)
    groups: int = 0
    #: lost data: the writers that lost data, each with its stores (``zarr-python (files, s3)``), and (arrays wrong,
    #: arrays read back)
    lost: tuple[str, ...] = ()
    checked: tuple[int, int] = (0, 0)
    more: tuple[Answer, ...] = ()
    #: what this answer is of among its question's (a record string): the dataset (codec), the writer and side
    #: (threads), the reader (cache)
    of: str = ""
    #: the run it comes from: its profile, its machine and its id (record strings; '' where not given)
    profile: str = ""
    machine: str = ""
    run_id: str = ""
    #: the upgrade question: one library's older version against its newest, per operation (the change it states
    #: first); ``rules.upgrades``
    upgrade: tuple[Change, ...] = ()

    @property
    def measured(self) -> bool:
        return self.ranking is not None or self.checked[1] > 0 or bool(self.upgrade)

    @property
    def status(self) -> Verdict | None:
        """The rule's verdict on the ranking (None where nothing was ranked)."""
        return self.ranking.status if self.ranking is not None else None

    @property
    def anchor(self) -> str:
        """The heading of the evidence's section in the question's chapter."""
        return self.section or self.question.section

    @property
    def pick_entry(self) -> Entry | None:
        if self.ranking is None:
            return None
        return next((e for e in self.ranking.entries if e.name == self.pick), None)

    @property
    def tied(self) -> tuple[str, ...]:
        """The names the rule cannot tell from the pick: not separable from the leader at the cap, or equivalent to
        it (an open question ties nothing yet: it is undecided)."""
        r = self.ranking
        if r is None or self.status not in (Verdict.TIE, Verdict.EQUIVALENT):
            return ()
        return tuple(e.name for e in (r.leader, *r.tied, *r.equivalent) if e.name != self.pick)

    @property
    def versus(self) -> Entry | None:
        """The entry whose factor to the leader the answer states: the pick where it is not the leader; else the
        runner-up (a winner, too few iterations, all equivalent) or the closest entry not separable from it."""
        r = self.ranking
        if r is None or not r.others:
            return None
        pick = self.pick_entry
        if pick is not None and pick is not r.leader:
            return pick
        if self.status in (Verdict.TIE, Verdict.OPEN) and r.tied:
            return r.tied[0]
        if self.status is Verdict.EQUIVALENT and r.equivalent:
            return r.equivalent[0]
        return r.others[0]


def _ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The run's ok rows without the ceiling's, each with its share of the ceiling (failed verifications are left
    out by the rule, ``countable``)."""
    if df.empty or "status" not in df:
        return df.iloc[0:0]
    rows = ok_rows(with_ceiling_fraction(df) if {"run_id", "gbps", "operation", "backend"} <= set(df) else df)
    return rows[rows["backend"] != "ceiling"] if "backend" in rows else rows


def _shape(row: pd.Series) -> str:
    return shape_text(row.get("shape"), missing="")


def _data(rows: pd.DataFrame) -> list[str]:
    """``em_like``, ``uint8 64x1080x1920``: the dataset and the array the rows measured (record strings)."""
    if rows.empty:
        return []
    first = rows.iloc[0]
    out = [str(first["dataset"])] if isinstance(first.get("dataset"), str) else []
    array = " ".join(p for p in (str(first["dtype"]) if isinstance(first.get("dtype"), str) else "", _shape(first))
                     if p)
    return out + ([array] if array else [])


def _cutouts(row: pd.Series, kind: str = "") -> str:
    """``unaligned 32^3 cutouts``: a cutout row's kind (where given) and size."""
    side = row.get("cutout")
    size = f"{int(side)}^{len(_shape(row).split('x'))} " if side is not None and pd.notna(side) else ""
    return f"{kind} {size}cutouts" if kind else f"{size}cutouts"


def _rank(parts: Mapping[str, pd.DataFrame], value: str = "elapsed_s", higher: bool = False) -> Ranking:
    """The named rows ranked by the rule as one group (``rank_against_leader``: paired round by round where they
    were measured in rounds, countable rows only)."""
    rows = pd.concat([p.assign(_name=name) for name, p in parts.items()]) if parts else pd.DataFrame()
    found = rank_against_leader(rows, value, higher, keys=[], names=lambda r: r["_name"],
                                largest_shared_size=False) if len(rows) else []
    return found[0] if found else Ranking((), higher)


def _size(nbytes: object) -> list[str]:
    return [] if nbytes is None or pd.isna(nbytes) else [format_bytes(float(nbytes))]


# -- the writers suite --------------------------------------------------------------------------------------------
#: question -> (operation, test or None for any, value, higher is better, cutout kind or None)
WRITERS = {"write": ("total", "write", "gbps", True, None), "append": ("append_total", None, "gbps", True, None),
           "cold-read": ("read_cold", "read", "gbps", True, None),
           "cutouts-aligned": ("read_region_cold", "read", "elapsed_s", False, "aligned"),
           "cutouts-unaligned": ("read_region_cold", "read", "elapsed_s", False, "unaligned")}


def writers_rows(df: pd.DataFrame, key: str) -> pd.DataFrame:
    """The rows of a writers question (countable or not: the rule leaves out failed verification itself)."""
    op, test, _, _, kind = WRITERS[key]
    rows = _ok_rows(df)
    if rows.empty or "operation" not in rows:
        return rows.iloc[0:0]
    rows = rows[rows["operation"] == op]
    if test is not None:
        rows = rows[rows["test"] == test] if "test" in rows else rows.iloc[0:0]
    if kind is not None:
        rows = rows[rows["cutout_kind"] == kind] if "cutout_kind" in rows else rows.iloc[0:0]
    return rows


def writers_ranking(key: str, rows: pd.DataFrame,
                    names: Callable[[pd.DataFrame], pd.Series] = entry_names) -> tuple[Ranking | None, int]:
    """The ranking a writers question's answer rests on and the number of groups of equals its rows hold: each group
    ranked by the rule (at the largest size at least two contenders finished), the most contested one (then the
    most bytes) taken. ``rows``: :func:`writers_rows`, or a part of them holding whole groups (``iobench advise``
    narrows them to a workload's dtype and cutout, and names its contenders by what it recommends)."""
    _, _, value, higher, _ = WRITERS[key]
    rankings = rank_against_leader(rows, value, higher, names=names)
    if not rankings:
        return None, 0
    best = max(rankings, key=lambda g: (len(g.entries), 0 if pd.isna(g.key.get("nbytes")) else g.key["nbytes"]))
    return best, len(rankings)


def _writers(q: Question, df: pd.DataFrame) -> Answer:
    """The most contested group of equals (then the most bytes), ranked by the rule; its leader is the pick."""
    kind = WRITERS[q.key][4]
    r, groups = writers_ranking(q.key, writers_rows(df, q.key))
    if r is None:
        return Answer(q)
    rows = r.leader.rows
    rests = _data(rows) + ([str(r.key["codec"])] if isinstance(r.key.get("codec"), str) else [])
    rests += [_cutouts(rows.iloc[0])] if kind is not None else _size(r.key.get("nbytes"))
    return Answer(q, r, r.leader.name, tuple(rests), groups=groups)


def sharding_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The sharding sweep's cold cutouts that answer the question: unaligned ones (cutouts from anywhere, as
    ``iobench advise`` answers) where the run has any, else aligned; every writer and layout, as the run asked it
    (``suites.writers.questions``), with ``layout_entry`` (writer, layout) naming each candidate (a writer that
    always shards is never in a sharded-against-unsharded claim: :func:`counterpart`)."""
    rows = _ok_rows(df)
    if rows.empty or not {"test", "layout", "operation"} <= set(rows):
        return rows.iloc[0:0]
    rows = rows[(rows["test"] == "sharding") & (rows["operation"] == "read_region_cold")]
    if "cutout_kind" in rows and (rows["cutout_kind"] == "unaligned").any():
        rows = rows[rows["cutout_kind"] == "unaligned"]
    return rows.assign(layout_entry=rows["backend"].astype(str) + ", " + rows["layout"].astype(str))


def counterpart(group: Ranking) -> Entry | None:
    """The leader's writer with the other sharding choice, in the same group (the same cutouts): the same inner
    chunk where measured, else the best median of the other choice (None when the writer measured only one, or
    the rows are not the sharding sweep's)."""
    if not group.others or not {"backend", "layout"} <= set(group.leader.rows):
        return None
    lead = group.leader.rows.iloc[0]
    if lead["backend"] in ALWAYS_SHARDS:  # its "unsharded" is one chunk per shard: no claim
        return None
    sharded = str(lead["layout"]).startswith("sharded")
    other = [e for e in group.others if e.rows["backend"].iloc[0] == lead["backend"]
             and str(e.rows["layout"].iloc[0]).startswith("sharded") != sharded]
    inner = [e for e in other if "inner_chunk" in e.rows and e.rows["inner_chunk"].iloc[0] == lead.get("inner_chunk")]
    return (inner or other or [None])[0]  # the entries are best median first


def sharding_ranking(rows: pd.DataFrame,
                     names: Callable[[pd.DataFrame], pd.Series] = lambda r: r["layout_entry"]) -> Ranking | None:
    """Every writer and layout of the sweep ranked by the rule on one group of cutouts (the same dataset, bytes,
    kind and cache state; the most candidates, then the most rows). ``rows``: :func:`sharding_rows`, or a part of
    them holding whole groups (``iobench advise``'s, its contenders named by what it recommends)."""
    keys = [k for k in ("dataset", "nbytes", "cutout_kind", "cache_state") if k in rows]
    rankings = rank_against_leader(rows, "elapsed_s", False, keys=keys, names=names, largest_shared_size=False)
    return max(rankings, key=lambda g: (len(g.entries), sum(e.n for e in g.entries))) if rankings else None


def _sharding(q: Question, df: pd.DataFrame) -> Answer:
    """Every writer and layout of the sweep decided on one group of cutouts (the most candidates)."""
    every = sharding_ranking(sharding_rows(df))
    if every is None:
        return Answer(q)
    lead = every.leader
    first = lead.rows.iloc[0]
    rests = (*_data(lead.rows), _cutouts(first, first["cutout_kind"] if isinstance(first.get("cutout_kind"), str)
                                         else ""))
    # the decision over every writer and layout, as measured: a pair re-ranked after picking its leader from many
    # layouts would call a setting that does not matter a winner more often than the rule allows
    return Answer(q, every, lead.name, rests)


# -- the compression, threads, cache and parallel suites -----------------------------------------------------------
def _headline(names: list[str]) -> list[str]:
    """``names`` in the order answers are given: ``HEADLINE_DATASETS`` first (the first present is the headline),
    the mesh last."""
    order = {name: i for i, name in enumerate(HEADLINE_DATASETS)}
    return sorted(names, key=lambda n: (n == MESH_DATASET, order.get(n, len(order)), n))


def _codec(q: Question, df: pd.DataFrame) -> Answer:
    """Per dataset, the store setting worth taking (``rules.compression.worth_taking``) and the dataset's write
    times ranked by the rule; the headline dataset first (``HEADLINE_DATASETS``)."""
    if df.empty or "status" not in df:
        return Answer(q)
    picks = {str(d): (fastest, pick) for d, fastest, pick in worth_taking(summarize_points(df))}
    rows = countable(_ok_rows(df))
    out = []
    for dataset in _headline(list(picks)):
        _, pick = picks[dataset]
        part = rows[(rows["dataset"] == dataset) & (rows["operation"] == "write")]
        parts = {f"{b} {c}": p for (b, c), p in part.groupby(["backend", "codec"], sort=True)}
        r = _rank(parts)
        if r.entries:  # a dataset written (not only encoded in memory)
            out.append(Answer(q, r, f"{pick['backend']} {pick['codec']}", tuple(_data(part) or [dataset]),
                              note=f"ratio {pick['compression_ratio']:.2f}", of=dataset))
    return _with_more(out) if out else Answer(q)


def _with_more(answers: list[Answer]) -> Answer:
    head, *rest = answers
    return replace(head, more=tuple(rest))


def thread_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The threads suite's countable rows with ``side`` and integer ``threads``: stores (written and read back)
    where the run has any, else the codecs in memory."""
    rows = countable(_ok_rows(df))
    if rows.empty or "threads" not in rows:
        return rows.iloc[0:0]
    rows = rows[rows["operation"].isin(list(SIDE)) & rows["threads"].notna()]
    stores = rows[rows["operation"].isin(["write", "read"])]
    rows = stores if len(stores) else rows
    return rows.assign(side=rows["operation"].map(SIDE), threads=rows["threads"].astype(int))


def fewest_threads(ranking: Ranking) -> Entry:
    """The rule's thread count: the fewest threads shown within the margin of the fastest (the decision's
    ``within_margin``: the whole interval within 5% of the paired leader); the leader where none is."""
    near = set(ranking.decision.within_margin) if ranking.decision is not None else set()
    group = [e for e in ranking.entries if e.name in near] or [ranking.leader]
    return min(group, key=lambda e: int(e.name.split()[0]))


def _decided_speed(part: pd.DataFrame, r: Ranking) -> float:
    """A backend's best median MB/s at any thread count, over the rounds its question was decided on where it was
    (the first ``stops``: a later build carries them unchanged, so the order of two decided answers, and the
    headline, never changes with a later build's rounds), else over every round so far."""
    if r.decided and r.decision is not None and "round" in part:
        rounds = pd.to_numeric(part["round"], errors="coerce")
        if rounds.notna().all():
            part = part[rounds < r.decision.stops]
    speed = part["nbytes"].astype("float64") / part["elapsed_s"]
    best = speed.groupby(part["threads"]).median().max() if len(part) else math.nan
    return float(best) if math.isfinite(best) else 0.0


def _threads(q: Question, df: pd.DataFrame) -> Answer:
    """Per side (write first) and backend, the thread counts ranked on time by the rule and the fewest threads
    within the margin of the fastest (``fewest_threads``), on the headline dataset (``HEADLINE_DATASETS``: arrays
    before meshes) first, each side's backends by their best median MB/s at any count (``_decided_speed``: over the
    rounds a decided question rests on). The headline is the first of them whose question is decided (the first
    where none is): a question decided stays decided and so do the rounds it rests on, so a later build never heads
    the answer with an open question, or another decided one, where an earlier build headed it with a decision."""
    rows = thread_rows(df)
    if rows.empty:
        return Answer(q)
    out = []
    for side in sorted(set(rows["side"]), key=lambda s: (s != "write", s)):
        at = rows[rows["side"] == side]
        named = at["dataset"].astype(object).fillna("").astype(str) if "dataset" in at else pd.Series("", at.index)
        for dataset in _headline(sorted(set(named))):
            data = at[named == dataset]
            found = []
            for backend, part in data.groupby("backend", sort=True):
                parts = {f"{t} thread{'s' if t != 1 else ''}": p for t, p in part.groupby("threads", sort=True)}
                r = _rank(parts)
                codec = part["codec"].dropna().astype(str) if "codec" in part else pd.Series(dtype=str)
                rests = (f"{backend} {side}", *_data(part), *([codec.iloc[0]] if len(codec) else []))
                found.append((Answer(q, r, fewest_threads(r).name, rests, of=f"{backend} {side}"),
                              _decided_speed(part, r)))
            out += [a for a, _ in sorted(found, key=lambda f: -f[1])]  # stable: by name where the speeds are equal
    out.sort(key=lambda a: not a.ranking.decided)  # stable: the order above within the decided and the open
    return _with_more(out) if out else Answer(q)


def _cache(q: Question, df: pd.DataFrame) -> Answer:
    """At the highest latency measured: per location, Zarr cutouts (the highest concurrency) of every client,
    layout and client-cache setting ranked by the rule; then ROOT's TTreeCache (none against the largest, over
    HTTP)."""
    rows = _ok_rows(df)
    if rows.empty or "reader" not in rows or "location" not in rows:
        return Answer(q)
    remote = countable(rows[rows["reader"].notna() & (rows["location"] != "local") & rows["latency_ms"].notna()])
    root = _root_cache(q, remote[remote["reader"] == "root"])
    out = [*_zarr_cache(q, remote[remote["reader"] == "zarr"]), *([root] if root is not None else [])]
    return _with_more(out) if out else Answer(q)


def _zarr_cache(q: Question, rows: pd.DataFrame) -> list[Answer]:
    """Per location (HTTP, S3), as the run asks it: every client, layout and client-cache setting ranked by the rule
    in one decision (not a pair re-ranked after picking its leader)."""
    needed = {"workload", "client", "layout", "client_cache", "concurrency"}
    if rows.empty or not needed <= set(rows):
        return []
    rows = rows[(rows["workload"] == "cutouts") & (rows["latency_ms"] == rows["latency_ms"].max())]
    rows = rows[rows["concurrency"] == rows["concurrency"].max()]
    rows = rows.assign(setup=rows["client"].astype(str) + ", " + rows["layout"].astype(str) + ", "
                       + rows["location"].astype(str), cache=rows["client_cache"].astype("boolean"))
    both = rows.groupby("setup")["cache"].nunique()
    rows = rows[rows["setup"].isin(both[both == 2].index)]
    named = rows.assign(entry=rows["setup"] + ", client cache " + rows["cache"].map({True: "on", False: "off"}))
    out = []
    for _, there in named.groupby("location", sort=True):
        every = _rank({str(n): p for n, p in there.groupby("entry")})
        lead = there[there["entry"] == every.leader.name]
        first = lead.iloc[0]
        link = f"cutouts, {float(first['latency_ms']):g} ms link, {int(first['concurrency'])} in flight"
        out.append(Answer(q, every, every.leader.name, (*_data(lead), link), of="zarr"))
    return out


def _root_cache(q: Question, rows: pd.DataFrame) -> Answer | None:
    if rows.empty or "cache_bytes" not in rows:
        return None
    at = rows[(rows["location"] == "http") & (rows["latency_ms"] == rows["latency_ms"].max())]
    none, cached = at[at["cache_bytes"] == 0], at[at["cache_bytes"] > 0]
    if none.empty or cached.empty:
        return None
    big = cached[cached["cache_bytes"] == cached["cache_bytes"].max()]
    parts = {"no TTreeCache": none, f"{format_bytes(float(big['cache_bytes'].iloc[0]))} TTreeCache": big}
    pair = _rank(parts)
    rests = (*_data(big), f"ROOT over HTTP, {float(big['latency_ms'].iloc[0]):g} ms link")
    return Answer(q, pair, pair.leader.name, rests, section=_ROOT_SECTION, of="root")


def lost_data_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The parallel suite's unaligned writes (chunks shared by two workers), each with ``store`` and ``wrong``
    (the slabs that came back wrong; a failed verification counts one where slabs were not counted)."""
    rows = ok_rows(df) if "status" in df else df.iloc[0:0]
    if not {"alignment", "workers", "operation"} <= set(rows):
        return rows.iloc[0:0]
    rows = rows[(rows["alignment"] == "unaligned") & (rows["operation"] == "write") & rows["workers"].notna()]
    store = rows["store"].fillna("file") if "store" in rows else pd.Series("file", index=rows.index)
    failed = (~rows["verified"].astype("boolean").fillna(True)).astype(int) if "verified" in rows else 0 * store
    wrong = rows["slabs_wrong"].astype("float64").fillna(failed) if "slabs_wrong" in rows else failed
    return rows.assign(store=store, wrong=np.maximum(wrong, failed), workers=rows["workers"].astype(int))


def _lost_data(q: Question, df: pd.DataFrame) -> Answer:
    """Which writers lost data in unaligned parallel writes (found by reading every array back whole)."""
    rows = lost_data_rows(df)
    if rows.empty:
        return Answer(q)
    bad = rows[rows["wrong"] > 0]
    stores = bad.assign(store=bad["store"].astype(str).replace({"file": "files"})).groupby("backend")["store"]
    lost = tuple(f"{b} ({', '.join(sorted(set(s)))})" for b, s in stores)
    rests = (*_data(rows), f"W={', '.join(map(str, sorted(set(rows['workers']))))}")
    return Answer(q, pick=", ".join(lost), rests_on=rests, lost=lost, checked=(len(bad), len(rows)))


def upgrade_answer(df: pd.DataFrame, meta: Mapping | None = None) -> Answer:
    """Upgrading a library from an older version to its newest (``rules.upgrades``: each operation's time as a ratio
    of the newest, by the rule): the library and version whose separable change of 10% or more is the largest, that
    change first; else the first library's oldest version, with no separable difference. Not measured where no
    library was measured at two versions."""
    found = changes(_ok_rows(df) if df is not None else pd.DataFrame())
    if not found:
        return Answer(UPGRADE)

    def size(c: Change) -> float:
        return c.factor()[0] if c.notable else 0.0

    lead = max(found, key=size)  # the first of the largest: the first library's oldest version when none is notable
    pair = [c for c in found if (c.library, c.version, c.newest) == (lead.library, lead.version, lead.newest)]
    pair.sort(key=lambda c: -size(c))
    rows = writers_rows(df, "write")
    rests = tuple(_data(rows)) + tuple(dict.fromkeys(str(c.key["codec"]) for c in pair
                                                     if isinstance(c.key.get("codec"), str)))
    formats = {c.formats for c in pair}
    if len(formats) == 1 and all(next(iter(formats))):
        old, new = next(iter(formats))
        rests += (f"Zarr v{old} format" if old == new else f"Zarr v{old} to v{new} format",)
    found = Answer(UPGRADE, pick=lead.library, rests_on=rests, upgrade=tuple(pair))
    return answer_run(found, meta)


_ANSWER = {"codec": _codec, "threads": _threads, "sharding": _sharding, "cache": _cache, "lost-data": _lost_data,
           **dict.fromkeys(WRITERS, _writers)}


def answer(key: str, df: pd.DataFrame, meta: Mapping | None = None) -> Answer:
    """The answer to question ``key`` from one run's rows (of the question's suite) and its ``run.json``
    (``meta``: the profile and machine it rests on); not measured where the rows hold nothing that answers it."""
    q = BY_KEY[key]
    return answer_run(_ANSWER[key](q, df if df is not None else pd.DataFrame()), meta)


def answer_run(found: Answer, meta: Mapping | None) -> Answer:
    """``found`` with the run it rests on (its profile, machine and id, from its ``run.json``)."""
    if not meta:
        return found
    env = meta.get("environment") or {}
    run = {"profile": str(meta.get("profile") or ""), "machine": str(env.get("machine") or ""),
           "run_id": str(meta.get("run_id") or "")}
    return replace(found, **run, more=tuple(replace(m, **run) for m in found.more))


def answers(runs: Mapping[str, tuple[pd.DataFrame, Mapping]]) -> list[Answer]:
    """Every question answered, in ``QUESTIONS``' order, from ``runs`` (suite -> that run's rows and run.json);
    a question whose suite has no run is not measured."""
    return [answer(q.key, *runs[q.suite]) if q.suite in runs else Answer(q) for q in QUESTIONS]


def chapter_answers(suite: str, df: pd.DataFrame) -> list[Answer]:
    """The answers of the questions a suite's run answers, in ``QUESTIONS``' order."""
    return [answer(q.key, df) for q in QUESTIONS if q.suite == suite]


__all__ = ["ALWAYS_SHARDS", "BY_KEY", "HEADLINE_DATASETS", "QUESTIONS", "UPGRADE", "WRITERS", "Answer", "Question",
           "answer", "answer_run", "answers", "chapter_answers", "counterpart", "fewest_threads", "lost_data_rows",
           "sharding_ranking", "sharding_rows", "thread_rows", "upgrade_answer", "writers_ranking",
           "writers_rows"]
