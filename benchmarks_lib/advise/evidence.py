"""``iobench advise``: which writer, codec, chunk and shard shape for a person's workload, answered from recorded
runs of the writers suite, like for like, with the book's one ranking rule (``rules.ranking``: paired round by round
where the rows were measured in rounds, else the two-sample rule).

A workload is a shape and dtype (or a file to take them from, ``--like``), an access pattern (``cutout:Z,Y,X``,
``full-read``, ``write``, ``append``, and remote reads over a link of a given latency: ``remote-read:10ms``,
``remote-cutout:Z,Y,X@10ms``), durability and the threads available. The rows that answer it are one run's rows of
the operation the access pattern times (cutouts: ``read_region_cold``; full reads: ``read_cold``; writes:
``total``; appends: ``append_total``; remote reads: the s3 suite's ``read`` and the cache suite's
``zarr_read_whole`` or ``zarr_read_cutouts``, at that latency only: :mod:`.advise_remote`) holding fixed the
dtype, the dataset, the array shape, the cutout's shape and kind, and the fsync policy; runs are never pooled. A
question the book answers too (writes, appends, cold full reads, cutouts, sharding) is ranked by the book's own
function on the book's rows (``rules.answers``: the same groups of equals, sizes and cutouts), narrowed to the
workload's, so advise, the front page and the chapter give the same pick and verdict (:func:`book_ranking`). Every
run that answers is ranked; the answer rests on one: the person's own data first, then the run with more candidates,
then more rounds or iterations, then the newest; the runs whose pick or verdict differs from it are kept beside it
(:attr:`Evidence.disagreeing`), so the answer names them. ``--measure`` runs the writers suite (remote
reads: the s3 suite) itself on the person's file (:mod:`.advise_plan` fits its cases to the time budget) and
answers from that run. The words are :mod:`.advise_text`'s (threads and codec: :mod:`.advise_settings`'s), the
command :mod:`.advise_command`'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks_lib.base.specs import (
    DTYPES,
    MAX_EXTENT,
    SpecError,
    parse_count,
    parse_dtype,
    parse_int_list,
    parse_number,
    parse_seconds,
    shape_text,
)

ACCESS = ("cutout:Z,Y,X", "full-read", "write", "append", "remote-read:MS", "remote-cutout:Z,Y,X@MS")
#: the link latencies a remote access pattern may name (the s3 and cache suites' range)
MAX_LATENCY_MS = 10_000
#: the baseline writer (a flat file of raw bytes, never compressed): the machine's own ceiling for the access, shown
#: beside the recommendation, never a candidate (it stores no format and applies no codec: not like for like)
BASELINE = "raw"


@dataclass(frozen=True)
class AccessRows:
    """What an access pattern asks of the writers suite's rows: its test(s), the timed operation, the value ranked
    (``elapsed_s``: lower is better; ``gbps``: higher is better) and its unit."""

    tests: tuple[str, ...]
    operation: str
    value: str
    higher: bool
    unit: str
    #: (suite, operation) of the runs that answer it; empty: the writers suite's ``operation``
    suites: tuple[tuple[str, str], ...] = ()

    @property
    def operations(self) -> dict[str, str]:
        """suite -> the operation its rows record for this question."""
        return dict(self.suites) if self.suites else {"writers": self.operation}


QUESTIONS = {
    "cutout": AccessRows(("sharding", "read"), "read_region_cold", "elapsed_s", False, "s per cutout"),
    "full-read": AccessRows(("read",), "read_cold", "gbps", True, "GB/s (cold full read)"),
    "write": AccessRows(("write",), "total", "gbps", True, "GB/s (write)"),
    "append": AccessRows(("append",), "append_total", "gbps", True, "GB/s (frames appended)"),
    "remote-read": AccessRows((), "read", "gbps", True, "GB/s (remote full read)",
                            (("s3", "read"), ("cache", "zarr_read_whole"))),
    "remote-cutout": AccessRows((), "zarr_read_cutouts", "cutout_s", False, "s per cutout",
                              (("cache", "zarr_read_cutouts"),)),
}


@dataclass(frozen=True)
class Workload:
    """What a person does with an array: its shape and dtype, how it is accessed, fsync or not, threads."""

    shape: tuple[int, ...]
    dtype: str
    access: str
    cutout: tuple[int, ...] | None = None
    fsync: bool = True
    threads: int | None = None
    #: the ``file:`` dataset of ``--like`` (None for a shape and dtype given by hand)
    like: str | None = None
    #: the ``dataset`` label rows of that file carry (``file:NAME``)
    like_label: str | None = None
    #: the link latency of a remote access pattern (ms per round trip)
    latency_ms: float | None = None

    @property
    def question(self) -> AccessRows:
        return QUESTIONS[self.access]

    @property
    def remote(self) -> bool:
        """Reads over a link (answered from the s3 and cache suites' runs)."""
        return self.access.startswith("remote-")

    @property
    def cutout_text(self) -> str:
        return shape_text(self.cutout or ())

    def describe(self) -> str:
        if self.remote:
            what = f"cutouts of {self.cutout_text}" if self.cutout else "full reads"
            what = f"remote {what} over a {self.latency_ms:g} ms link"
        else:
            what = f"cutouts of {self.cutout_text}" if self.access == "cutout" else self.access
            what += f", {'fsync' if self.fsync else 'no fsync'}"
        return (f"{'x'.join(map(str, self.shape))} {self.dtype}" + (f" ({self.like_label})" if self.like_label else "")
                + f", {what}" + (f", {self.threads} thread{'s' if self.threads != 1 else ''}" if self.threads else ""))


def _cutout(text: str, sizes: str, example: str) -> tuple[int, ...]:
    if not sizes:
        raise SpecError(f"--access {text!r} gives no cutout shape; e.g. {example}")
    return parse_int_list(sizes.split(","), f"--access {text!r} cutout size", maximum=1 << 20)


def _latency(text: str, value: str, example: str) -> float:
    """A link latency in ms (``10ms`` or ``10``), 0 to MAX_LATENCY_MS."""
    if not value:
        raise SpecError(f"--access {text!r} gives no link latency; e.g. {example}")
    number = value.strip().lower().removesuffix("ms").strip()
    return parse_number(number, f"--access {text!r} latency", minimum=0, maximum=MAX_LATENCY_MS, unit="ms")


def parse_access_pattern(text: str) -> tuple[str, tuple[int, ...] | None, float | None]:
    """(kind, cutout, latency in ms) of ``--access``: ``cutout:Z,Y,X`` (one positive size per axis), ``full-read``,
    ``write``, ``append``, ``remote-read:MS`` or ``remote-cutout:Z,Y,X@MS`` (MS: ``10ms`` or ``10``)."""
    kind, sep, rest = str(text).partition(":")
    if kind == "cutout":
        return "cutout", _cutout(text, rest, "cutout:64,64,64"), None
    if kind == "remote-read":
        return kind, None, _latency(text, rest, "remote-read:10ms")
    if kind == "remote-cutout":
        sizes, at, latency = rest.partition("@")
        example = "remote-cutout:48,192,192@10ms"
        cutout = _cutout(text, sizes, example)
        return kind, cutout, _latency(text, latency if at else "", example)
    if sep or kind not in ACCESS:
        raise SpecError(f"--access {text!r} is unknown; allowed: {', '.join(ACCESS)}")
    return kind, None, None


def parse_access(text: str) -> tuple[str, tuple[int, ...] | None]:
    """(kind, cutout) of ``--access`` (:func:`parse_access_pattern` without the latency)."""
    return parse_access_pattern(text)[:2]


def parse_budget(text: str) -> float:
    """A time budget in seconds: ``90``/``90s``, ``3m``, ``1h``; at least 10 s, at most a day."""
    value = str(text).strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(value[-1:])
    try:
        seconds = float(value[:-1] if scale else value) * (scale or 1)
    except ValueError:
        raise SpecError(f"--budget {text!r} is not a time; e.g. 90s, 3m, 1h") from None
    return parse_seconds(seconds, "--budget", minimum=10, maximum=86400)


def parse_workload(like: str | None, shape: str | None, dtype: str | None, access: str, fsync: bool = True,
                   threads: int | str | None = None) -> Workload:
    """The workload of the command line; a SpecError (one line) for anything it cannot be."""
    kind, cutout, latency = parse_access_pattern(access)
    like_spec = None
    if like is not None:
        if shape is not None or dtype is not None:
            raise SpecError("give --like PATH or --shape with --dtype, not both")
        from benchmarks_lib.inputs.user_data import parse_file_dataset

        text = like if like.startswith(("file:", "file+path:")) else f"file:{like}"
        try:
            like_spec = parse_file_dataset(text)
        except SpecError as exc:
            raise SpecError(f"--like: {exc}") from None
        dims, dt = like_spec.source_shape, like_spec.dtype
        while len(dims) > 2 and dims[0] == 1:
            dims = dims[1:]
        like = text
    else:
        if shape is None or dtype is None:
            raise SpecError("give the workload's data: --like PATH, or --shape 512,512,512 with --dtype uint16")
        dims = parse_int_list(shape.split(","), "--shape", maximum=MAX_EXTENT)
        dt = parse_dtype(dtype).name
        if dt not in DTYPES:
            raise SpecError(f"--dtype {dtype!r} is not measured by the writers; allowed: {', '.join(DTYPES)}")
    if cutout is not None and len(cutout) != len(dims):
        raise SpecError(f"--access cutout:{','.join(map(str, cutout))} has {len(cutout)} sizes; the data has "
                        f"{len(dims)} axes ({'x'.join(map(str, dims))})")
    if cutout is not None and any(c > n for c, n in zip(cutout, dims, strict=True)):
        raise SpecError(f"--access cutout {'x'.join(map(str, cutout))} is larger than the data "
                        f"{'x'.join(map(str, dims))}")
    n_threads = None if threads is None else parse_count(threads, "--threads", maximum=4096)
    return Workload(tuple(dims), dt, kind, cutout, fsync, n_threads, like,
                    like_spec.label if like_spec is not None else None, latency)


# -- the recorded rows -------------------------------------------------------------------------------------------
def suite_runs(results_dirs: Sequence[str | Path], suites: Sequence[str]) -> Iterator[tuple[Path, dict]]:
    """(run directory, run.json) of every run of ``suites`` under ``results_dirs``, each directory's newest first;
    a run reached twice (a directory given twice) once."""
    from benchmarks_lib.records.store import read_run_json, run_dirs

    seen = set()
    for results in results_dirs:
        for run_dir in run_dirs(results):
            if (real := run_dir.resolve()) in seen:
                continue
            seen.add(real)
            meta = read_run_json(run_dir / "run.json")
            if meta.get("suite") in suites:
                yield run_dir, meta


def writers_runs(results_dirs: Sequence[str | Path]) -> Iterator[tuple[Path, dict]]:
    """(run directory, run.json) of every writers run under ``results_dirs``, each directory's newest first."""
    return suite_runs(results_dirs, ("writers",))


def measured_cutout(cutout: object, shape: object) -> tuple[int, ...] | None:
    """The shape of the cutouts a row read: the writers suite cuts cubes of ``cutout`` per side, each side clipped
    to the array (a thin stack's cutouts of 64 are 8x64x64); None where the row records no cutout."""
    try:
        side = float(cutout)
        dims = [int(n) for n in shape]
    except (TypeError, ValueError):
        return None
    return tuple(min(int(side), n) for n in dims) if side == side and side > 0 and dims else None


def matching_rows(df, workload: Workload):
    """The run's rows that answer the workload, like for like: its operation, countable (ok, not failed
    verification), its dtype, the cutout's shape (as the rows read it: :func:`measured_cutout`) or fsync policy;
    remote reads at the workload's link latency only."""
    from benchmarks_lib.advise.remote import at_latency, remote_reads
    from benchmarks_lib.rules.ranking import countable

    q = workload.question
    if workload.remote:
        rows = at_latency(remote_reads(df, q.operations, workload.dtype, workload.cutout), workload.latency_ms or 0)
    else:
        rows = df[(df["operation"] == q.operation) & df["test"].isin(q.tests)] if "test" in df else df.iloc[0:0]
        rows = countable(rows)
        rows = rows[rows["dtype"].astype(str) == workload.dtype] if "dtype" in rows else rows.iloc[0:0]
    if workload.access == "cutout":
        import pandas as pd

        if {"cutout", "shape"} <= set(rows.columns):
            asked = tuple(workload.cutout or ())
            rows = rows[pd.Series([measured_cutout(c, s) == asked for c, s in zip(rows["cutout"], rows["shape"],
                                                                                      strict=True)],
                                  index=rows.index, dtype=bool)]
        else:
            rows = rows.iloc[0:0]
    elif workload.access in ("write", "append") and "fsync_included" in rows:
        rows = rows[rows["fsync_included"].astype("boolean").fillna(False) == workload.fsync]
    if workload.threads is not None and "threads" in rows:
        rows = rows[rows["threads"].isna() | (rows["threads"] <= workload.threads)]
    if workload.question.value == "gbps" and len(rows):
        rows = rows.assign(gbps=rows["nbytes"] / rows["elapsed_s"] / 1e9)
    return rows


def with_candidates(rows):
    """The rows with ``candidate`` (what is recommended: writer, codec, chunks, shards) and ``group`` (what is held
    equal: dataset, array shape, cutout kind, bytes) columns; remote reads' as :mod:`.advise_remote` names them."""
    from benchmarks_lib.advise.remote import REMOTE_SUITES, remote_candidates

    if "suite" in rows and len(rows) and rows["suite"].astype(str).isin(REMOTE_SUITES).all():
        return remote_candidates(rows)
    shard = rows["shard_size"].fillna(0) if "shard_size" in rows else 0 * rows["elapsed_s"]
    chunks = rows["chunks"].map(shape_text)
    shards = [f"{int(s)}^{len(c.split('x'))}" if s else "none" for s, c in zip(shard, chunks, strict=True)]
    candidate = (rows["backend"].astype(str) + " | " + rows["codec"].fillna("none").astype(str) + " | chunks "
                 + chunks + " | shards " + shards)
    kind = rows["cutout_kind"].fillna("") if "cutout_kind" in rows else ""
    group = (rows["dataset"].astype(str) + " | " + rows["shape"].map(shape_text) + " | " + kind + " | "
             + rows["nbytes"].astype(str))
    return rows.assign(candidate=candidate, group=group, shards_text=shards, chunks_text=chunks)


def best_group(rows, workload: Workload):
    """The group of equals that answers a remote read best: the person's own data first, then unaligned cutouts
    (cutouts "from anywhere"), then the group with most candidates."""
    def score(part) -> tuple:
        own = workload.like_label is not None and (part["dataset"].astype(str) == workload.like_label).all()
        unaligned = "cutout_kind" in part and (part["cutout_kind"] == "unaligned").all()
        return own, unaligned, part["candidate"].nunique(), len(part)

    parts = [part for _, part in rows.groupby("group", sort=True)]
    return max(parts, key=score) if parts else rows


@dataclass
class Evidence:
    """The answer of one run: the ranking of its best group, the group's rows and the whole run's rows (for the
    trade-offs), and where they come from."""

    ranking: object
    rows: object
    run_rows: object
    run_dir: Path
    meta: dict
    own_data: bool
    #: the group's rows of the BASELINE writer (empty where it was not measured)
    baseline: object = None
    #: the other runs answering the same workload whose pick or verdict differs from this one's (:func:`disagrees`)
    disagreeing: tuple = ()
    #: how many other runs answer the same workload with the same pick and verdict
    agreeing: int = 0

    @property
    def run_id(self) -> str:
        return str(self.meta.get("run_id", self.run_dir.name))

    @property
    def rounds(self) -> int | None:
        """The rounds the rows were measured in (issue 30's ``round`` column), None where not in rounds."""
        if "round" not in self.rows or not self.rows["round"].notna().any():
            return None
        return int(self.rows["round"].max()) + 1

    @property
    def fewest_n(self) -> int:
        """The fewest iterations (rounds) of a candidate."""
        return min(e.n for e in self.ranking.entries)

    def weight(self) -> tuple[bool, int, int, int]:
        """What makes one run's answer preferred to another's: the person's own data, then more candidates, then
        more rounds, then more iterations."""
        return self.own_data, len(self.ranking.entries), self.rounds or 0, self.fewest_n


#: access pattern -> the book's questions (``rules.answers``) whose rows answer it, in the order preferred among
#: equally strong answers
BOOK_QUESTIONS = {"write": ("write",), "append": ("append",), "full-read": ("cold-read",),
                  "cutout": ("sharding", "cutouts-unaligned", "cutouts-aligned")}


def _candidate(rows):
    return rows["candidate"]


def book_ranking(df, workload: Workload, matched):
    """The ranking of the book's answer (``rules.answers``: the same function, the same rows, the same groups of
    equals and sizes, paired round by round where the rows were measured in rounds) to the question the workload
    shares with it, on the rows that match the workload (``matched``: :func:`matching_rows`; the person's own data
    only, where any). A cutout is asked of the sharding sweep and of the read test's unaligned and aligned cutouts:
    unaligned ones (cutouts "from anywhere") first, then the ranking with the most candidates, then the most rows.
    Contenders are named by what advise recommends (:func:`with_candidates`). None where no question's rows match."""
    from benchmarks_lib.rules.answers import sharding_ranking, sharding_rows, writers_ranking, writers_rows

    if workload.like_label is not None and (own := matched["dataset"].astype(str) == workload.like_label).any():
        matched = matched[own]
    found = []
    for key in BOOK_QUESTIONS[workload.access]:
        rows = sharding_rows(df) if key == "sharding" else writers_rows(df, key)
        rows = rows[rows.index.isin(matched.index)]
        if rows.empty:
            continue
        rows = with_candidates(rows)
        ranking = sharding_ranking(rows, _candidate) if key == "sharding" else \
            writers_ranking(key, rows, _candidate)[0]
        if ranking is not None:
            found.append(ranking)

    def score(ranking) -> tuple:
        return ranking.key.get("cutout_kind") == "unaligned", len(ranking.entries), sum(e.n for e in ranking.entries)

    return max(found, key=score) if found else None


def _like(rows, first) -> object:
    """The rows held equal to ``first`` (a row of the ranked group) in what makes a group of equals, the codec
    aside (the baseline applies none)."""
    import pandas as pd

    for key in ("test", "dataset", "nbytes", "cutout_kind", "fsync_included"):
        if key in rows and key in first.index:
            value = first[key]
            rows = rows[rows[key].isna() if pd.isna(value) else rows[key].eq(value).fillna(False).astype(bool)]
    return rows


def evidence_from(run_dir: Path, meta: dict, workload: Workload, df=None) -> Evidence | None:
    """The evidence one run holds for the workload (None when it holds no matching rows): for the writers suite,
    the book's own ranking of the question the workload shares with it (:func:`book_ranking`); for remote reads,
    its best group ranked by the same rule (:func:`.ranking.rank_parts`)."""
    from benchmarks_lib.records.store import load_run
    from benchmarks_lib.rules.ranking import rank_parts

    if df is None:
        df = load_run(run_dir)[0]
    matched = matching_rows(df, workload)
    if matched.empty:
        return None
    q = workload.question
    if workload.remote:
        rows = best_group(with_candidates(matched), workload)
        baseline, rows = rows[rows["backend"] == BASELINE], rows[rows["backend"] != BASELINE]
        if rows.empty:
            return None
        parts = {str(name): part for name, part in rows.groupby("candidate", sort=True)}
        ranking = rank_parts(parts, q.value, q.higher, {"group": rows["group"].iloc[0]})
    else:
        ranking = book_ranking(df, workload, matched)
        if ranking is None:
            return None
        import pandas as pd

        rows = pd.concat([e.rows for e in ranking.entries])
        baseline = _like(matched[matched["backend"] == BASELINE], rows.iloc[0])
        baseline = with_candidates(baseline) if len(baseline) else baseline
    if not baseline.empty:  # its best layout (its layouts are not pooled)
        medians = baseline.groupby("candidate")[q.value].median()
        baseline = baseline[baseline["candidate"] == (medians.idxmax() if q.higher else medians.idxmin())]
    own = workload.like_label is not None and bool((rows["dataset"].astype(str) == workload.like_label).all())
    return Evidence(ranking, rows, df, run_dir, meta, own, baseline)


def _separable(evidence: Evidence) -> bool | None:
    """Whether the run's pick is separable from every other candidate (None: it had none to be compared with)."""
    from benchmarks_lib.rules.ranking import Verdict

    status = evidence.ranking.status
    return None if status is Verdict.ALONE else status is Verdict.WINNER


def disagrees(a: Evidence, b: Evidence) -> bool:
    """Two runs' answers differ: another pick, or one separable and the other not (a lone candidate claims
    neither)."""
    if a.ranking.leader.name != b.ranking.leader.name:
        return True
    sa, sb = _separable(a), _separable(b)
    return sa is not None and sb is not None and sa != sb


def find_evidence(results_dirs: Sequence[str | Path], workload: Workload) -> Evidence | None:
    """The preferred run's evidence (:meth:`Evidence.weight`: the person's own data, more candidates, more rounds,
    more iterations; then the newest, each directory in turn), with the runs whose answer differs from it."""
    found = [e for run_dir, meta in suite_runs(results_dirs, tuple(workload.question.operations))
             if (e := evidence_from(run_dir, meta, workload)) is not None]
    if not found:
        return None
    best = max(found, key=Evidence.weight)  # max keeps the first of equals: the newest
    others = [e for e in found if e is not best]
    differ = tuple(e for e in others if disagrees(best, e))
    best.disagreeing, best.agreeing = differ, len(others) - len(differ)
    return best


def measured_latencies(results_dirs: Sequence[str | Path], workload: Workload) -> dict[str, list[float]]:
    """For a remote workload: run id -> the link latencies (ms) at which it holds the workload's reads (its dtype,
    its cutout) at any latency; runs holding none are left out."""
    from benchmarks_lib.advise.remote import measured_latencies as latencies_of
    from benchmarks_lib.records.store import load_run

    found = {}
    for run_dir, meta in suite_runs(results_dirs, tuple(workload.question.operations)):
        latencies = latencies_of(load_run(run_dir)[0], workload.question.operations, workload.dtype, workload.cutout)
        if latencies:
            found[str(meta.get("run_id", run_dir.name))] = sorted(latencies)
    return found


__all__ = ["ACCESS", "BASELINE", "BOOK_QUESTIONS", "MAX_LATENCY_MS", "QUESTIONS", "AccessRows", "Evidence", "Workload",
           "book_ranking", "disagrees", "evidence_from", "find_evidence", "matching_rows", "measured_cutout",
           "measured_latencies", "parse_access", "parse_access_pattern", "parse_budget", "parse_workload", "suite_runs",
           "with_candidates", "writers_runs"]
