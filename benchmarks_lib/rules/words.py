"""The rule's words, the one place they are written: a median with its interval and n, an entry against the
leader, a group's verdict, the front page's clause, a change between runs. Record strings in them (the entries'
names) go through ``escape``: Markdown for the book (``markup.md``, the default), ``terminal.visible`` for the
terminal."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.paired import first_interval_look
from benchmarks_lib.base.specs import SpecError, format_bytes, parse_dims, shape_text
from benchmarks_lib.base.stats import CONFIDENCE, MARGIN, TwoSample, coverage
from benchmarks_lib.rules.answers import Answer
from benchmarks_lib.rules.ranking import Entry, Ranking, Verdict
from benchmarks_lib.rules.upgrades import NOTABLE

#: how a record string is made safe where the words are shown
Escape = Callable[[str], str]


def number(value: float) -> str:
    """About three significant digits, never in exponent notation (1337, 596, 2.31, 0.0123)."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def value_text(entry: Entry, unit: str, scale: float = 1.0) -> str:
    """``0.1 [0.099, 0.101] GB/s (n=5, 94% interval)``: the entry's median with its interval and its coverage
    where that is below 95%."""
    text = f"{number(entry.median * scale)}"
    if np.isfinite(entry.lo) and np.isfinite(entry.hi):
        text += f" [{number(entry.lo * scale)}, {number(entry.hi * scale)}]"
        cover = coverage(entry.n)
        if cover < CONFIDENCE:
            return f"{text} {unit} (n={entry.n}, {math.floor(100 * cover + 0.5)}% interval)"
    return f"{text} {unit} (n={entry.n})"


def versus_text(entry: Entry, ranking: Ranking, worse: str = "slower", escape: Escape = md) -> str:
    """``2.00x slower than a [1.98x, 2.02x], separable``: the entry against the leader, never its neighbour."""
    t = entry.vs_leader
    if t is None:
        return "the best median"
    factor, lo, hi = entry.factor(ranking.higher)
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if np.isfinite(lo) and np.isfinite(hi) else ""
    verdict = t.verdict()
    if t.separable is False and not t.equivalent:
        verdict = f"not separable from {escape(ranking.leader.name)} (the interval of the ratio includes 1)"
    return f"{factor:.2f}x {worse} than {escape(ranking.leader.name)}{interval}, {verdict}"


def too_few_text(ranking: Ranking) -> str:
    """``too few rounds to rank (n=9, 12 needed)``: the first look at which as many contenders have an interval."""
    if not ranking.paired:
        return f"too few iterations to rank (n={ranking.too_few_n})"
    first = first_interval_look(len(ranking.entries))
    return f"too few rounds to rank (n={ranking.too_few_n}{f', {first} needed' if first else ''})"


def _equivalent(ranking: Ranking, escape: Escape) -> str:
    """``a tie: a, b and c are equivalent (every interval within 5%)``, then the rest, separable from them."""
    names = [escape(ranking.leader.name), *(escape(e.name) for e in ranking.equivalent)]
    tie = f"{', '.join(names[:-1])} and {names[-1]}"
    rest = len(ranking.entries) - len(names)
    after = f"; the other {rest} are separable from them" if rest else ""
    return f"a tie: {tie} are equivalent (each interval within {MARGIN:.0%} of the best median){after}"


def why_text(ranking: Ranking, escape: Escape = md) -> str:
    """`` (separated at round 12)``: why its rounds stopped, where measured in rounds ('' otherwise); a record's
    words (its rows' ``rounds_stop``), escaped."""
    return f" ({escape(ranking.why)})" if ranking.why else ""


def verdict_text(ranking: Ranking, what: str = "backends", escape: Escape = md) -> str:
    """The group's verdict: the winner in bold, or no separable winner with the group, or too few iterations; then
    why its rounds stopped, where measured in rounds."""
    return _verdict_text(ranking, what, escape) + why_text(ranking, escape)


def _verdict_text(ranking: Ranking, what: str, escape: Escape) -> str:
    status, leader = ranking.status, escape(ranking.leader.name)
    if status is Verdict.ALONE:
        return f"not ranked: no other of the {what} measured this on these terms"
    if status is Verdict.WINNER:
        return f"**{leader}** is the fastest of {len(ranking.entries)} {what}, separable from every other"
    if status is Verdict.TOO_FEW:
        return f"{too_few_text(ranking)}; the best median of {len(ranking.entries)} {what} is {leader}'s"
    if status is Verdict.EQUIVALENT:
        return _equivalent(ranking, escape)
    tied = ", ".join(escape(e.name) for e in ranking.tied)
    return (f"no separable winner among {len(ranking.entries)} {what}: not separable from the best median "
            f"({leader}): {tied}")


def answer_clause(r: Ranking, value: Callable[[Entry], str], what: str,
                  details: Callable[[Entry], Sequence[str]] = lambda e: (), escape: Escape = md) -> str:
    """The front page's clause for one group: ``**a** at 1.2 GB/s (...), the fastest of 3 writers, separable
    from every other (next: b, 1.50x slower [1.4x, 1.6x])``; "no separable winner among 3 writers: ..." with the
    entries not separable from the best median; "too few iterations to rank (n=2): ..."; a lone entry unranked;
    then why its rounds stopped, where measured in rounds."""
    return _answer_clause(r, value, what, details, escape) + why_text(r, escape)


def _answer_clause(r: Ranking, value: Callable[[Entry], str], what: str, details: Callable[[Entry], Sequence[str]],
                   escape: Escape) -> str:
    best = r.leader
    extra = "; ".join(details(best))
    head = value(best) + (f" ({extra})" if extra else "")
    name = escape(best.name)
    if r.status is Verdict.ALONE:
        return f"{name} at {head}, the only one of the {what} on these terms, so it is not ranked"
    if r.status is Verdict.WINNER:
        nxt = r.others[0]
        return (f"**{name}** at {head}, the fastest of {len(r.entries)} {what}, separable from every other "
                f"(next: {escape(nxt.name)}, {_factor_only(nxt, r)})")
    if r.status is Verdict.TOO_FEW:
        return f"{too_few_text(r)}: the best median of {len(r.entries)} {what} is {name}'s, {head}"
    if r.status is Verdict.EQUIVALENT:
        return f"{_equivalent(r, escape)}; the best median is {name}'s, {head}"
    tied = ", ".join(f"{escape(e.name)} ({_factor_only(e, r)})" for e in r.tied)
    return (f"no separable winner among {len(r.entries)} {what}: the best median is {name}'s, {head}; not "
            f"separable from it: {tied}")


def _factor_only(entry: Entry, r: Ranking, worse: str = "slower") -> str:
    factor, lo, hi = entry.factor(r.higher)
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if np.isfinite(lo) and np.isfinite(hi) else ""
    return f"{factor:.2f}x {worse}{interval}"


def change_text(t: TwoSample, better: str = "faster", worse: str = "slower") -> str:
    """What B did against A (``two_sample(a, b)`` of times): ``**4.0x faster** [3.9x, 4.1x], separable`` when
    separable, else the verdict alone (never a factor as a claim the data cannot make)."""
    if not t.separable:
        return t.verdict()
    gain = t.ratio < 1 if not t.higher else t.ratio > 1
    factor, lo, hi = (1 / t.ratio, 1 / t.hi, 1 / t.lo) if t.ratio < 1 else (t.ratio, t.lo, t.hi)
    return f"**{factor:.1f}x {better if gain else worse}** [{lo:.2f}x, {hi:.2f}x], separable"


def unverified_text(ranking: Ranking, escape: Escape = md) -> str:
    """A clause naming the contenders left out because their verification failed or they were measured in fewer
    rounds ('' when none)."""
    out = ""
    if ranking.unverified:
        out += f"; rows that failed verification are not ranked: {', '.join(map(escape, ranking.unverified))}"
    if ranking.fewer_rounds:
        out += f"; measured in fewer rounds than the others (left out for the budget, or a failure), so not " \
               f"ranked: {', '.join(map(escape, ranking.fewer_rounds))}"
    return out


# -- a case in words ---------------------------------------------------------------------------------

#: the operations recorded, as a reader says them (others: their name with spaces)
OPERATION_WORDS = {"total": "write", "write": "write", "append_total": "append", "read_cold": "cold read",
                   "read_warm": "warm read", "read_region_cold": "cold cutout", "read": "read"}
_LOCATIONS = {"http": "HTTP", "s3": "S3", "local": "local file"}
_SERVERS = {"builtin": "built-in server", "nginx": "nginx", "minio": "MinIO", "endpoint": "your S3 endpoint"}
_READERS = {"root": "ROOT", "uproot": "uproot", "zarr": "Zarr"}
_ALIGNMENTS = {"chunk": "chunk-aligned regions", "shard": "shard-aligned regions", "unaligned": "unaligned regions"}
_STORES = {"file": "to files", "s3": "through S3"}
_WORKLOADS = {"whole": "whole array", "cutouts": "cutouts"}
#: the keys whose True/False has words of their own
_FLAGS = ("fsync_included", "writer_fsyncs", "client_cache", "async_prefetch")


def _number(value: object) -> float | None:
    """A number, whether recorded as one or as its text (``"5e+07"``, ``"8"``); None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _flag(value: object) -> bool | None:
    """True/False recorded as a bool, a number or text (``"True"``, ``"false"``, ``1``); None otherwise."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, str):
        return {"true": True, "false": False, "1": True, "0": False}.get(value.strip().lower())
    number = _number(value)
    return None if number is None else number != 0


def _missing(value: object) -> bool:
    """None, NaN, pd.NA, an empty text or the dash of a missing value in a group's text."""
    if value is None or (isinstance(value, str) and value in ("", "-")):
        return True
    if isinstance(value, list | tuple | np.ndarray):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _count(value: object, one: str, many: str) -> str | None:
    number = _number(value)
    if number is None:
        return None
    return f"{number:g} {one if number == 1 else many}"


def _shape(value: object) -> str | None:
    """``48x192x192`` from a shape (a list, an array, ``"48,192,192"`` or ``"48x192x192"``); None otherwise."""
    if isinstance(value, str):
        parts = value.replace(",", "x").split("x")
        return shape_text([int(p) for p in parts]) if all(p.strip().isdigit() for p in parts) else None
    if isinstance(value, list | tuple) or np.ndim(value) >= 1:
        return shape_text(value)
    return None  # a number: a cutout's side


def _dims(value: object) -> str | None:
    """A Zarr array spec (``z:128:32:64,...``) as ``array 128x512x512, chunks 32x128x128, shards 64x256x256``."""
    try:
        dims = parse_dims(str(value))
    except SpecError:
        return None
    text = f"array {shape_text(dims.shape)}, chunks {shape_text(dims.chunks)}"
    return text + (f", shards {shape_text(dims.shards)}" if getattr(dims, "shards", None) else "")


def _case_part(name: str, value: object, key: Mapping[str, object], escape: Escape) -> str | None:
    """One key of a case in words ('' to leave it out: it adds nothing a reader needs)."""
    number, flag = _number(value), _flag(value)
    words = name.replace("_", " ")
    if isinstance(value, bool | np.bool_) and name not in _FLAGS:
        return f"{words}: {'yes' if value else 'no'}"
    text = escape(f"{number:g}" if number is not None and not isinstance(value, str) else str(value))
    simple = {"location": _LOCATIONS, "server": _SERVERS, "reader": _READERS, "alignment": _ALIGNMENTS,
              "store": _STORES, "workload": _WORKLOADS, "operation": OPERATION_WORDS}
    if name in simple:
        return simple[name].get(str(value)) or (escape(str(value).replace("_", " ")) if name == "operation" else text)
    if name in ("latency_ms",) and number is not None:
        return f"{number:g} ms"
    if name in ("bandwidth_bytes_s", "bandwidth") and number is not None:
        return f"{format_bytes(number)}/s" if number > 0 else "no bandwidth cap"
    if name in ("nbytes",) and number is not None:
        return format_bytes(number)
    if name == "multiplier":
        return "" if "nbytes" in key and not _missing(key["nbytes"]) else f"{number:g}x the base size" \
            if number is not None else text
    if name in ("inner_chunk", "shard_size") and "layout" in key and not _missing(key["layout"]):
        return ""  # the layout's label names them
    if name == "inner_chunk" and number is not None:
        return f"inner chunks of {number:g}"
    if name == "shard_size" and number is not None:
        return "no shards" if number == 0 else f"shards of {number:g}"
    if name == "fsync_included" and flag is not None:
        return "fsync included" if flag else "no fsync"
    if name == "writer_fsyncs" and flag is not None:
        return "the writer fsyncs every file itself" if flag else ""
    if name == "client_cache" and flag is not None:
        return "client cache" if flag else "no client cache"
    if name == "async_prefetch" and flag is not None:
        return "async prefetch" if flag else "standard prefetch"
    if name == "cache_bytes" and number is not None:
        return f"{format_bytes(number)} TTreeCache" if number > 0 else "no TTreeCache"
    if name == "cache_state":
        return "" if str(value) == "cold" else text
    if name == "codec":
        return "uncompressed" if str(value) == "none" else text
    if name == "level" and number is not None:
        return f"level {number:g}"
    if name == "cutout":
        shape = _shape(value)
        return f"{shape} cutouts" if shape else f"cutouts of side {number:g}" if number is not None else text
    if name == "cutout_kind":
        return f"{text} cutouts"
    if name == "zarr_dims":
        return _dims(value) or text
    if name == "read_by":
        return f"read by {text}"
    if name in ("s3_target", "target"):
        return f"at {text}"
    if name == "step":
        return f"steps of {text}" if number is None else f"steps of {number:g} entries"
    counted = {"threads": ("thread", "threads"), "workers": ("worker", "workers"), "streams": ("stream", "streams"),
               "concurrency": ("request in flight", "requests in flight"), "entries": ("entry", "entries"),
               "branches": ("branch", "branches"), "region_step": ("region step", "region steps")}
    if name in counted and number is not None:
        return _count(number, *counted[name])
    if name == "dataset":
        return f"dataset {text}"
    if name in ("layout", "client", "s3_server", "backend"):
        return text
    if flag is not None and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return f"{words}: {'yes' if flag else 'no'}"
    return f"{words} {number:g}" if number is not None else f"{words} {text}"


def case_text(key: Mapping[str, object], escape: Escape = md, skip: Sequence[str] = ("suite", "test")) -> str:
    """A case in words, its keys in the order given: ``HTTP, built-in server, 10 ms, 50 MB/s, sharded, no client
    cache, 48x192x192 cutouts`` for ``{"location": "http", "latency_ms": 10, "bandwidth_bytes_s": 5e7, ...}``;
    never a column name with a raw value nor a Python ``False``. Values may be recorded ones or their text (``"True"``,
    ``"5e+07"``); missing ones and ``skip`` are left out; record strings go through ``escape``. The one wording of
    a case wherever a page or the terminal names one. Words two keys share (a link's bandwidth recorded twice) are
    said once."""
    parts = [_case_part(str(name), value, key, escape) for name, value in key.items()
             if name not in skip and not _missing(value)]
    return ", ".join(dict.fromkeys(p for p in parts if p))


def rounds_table(meta: Mapping[str, object], escape: Escape = md) -> pd.DataFrame:
    """Per question a run measured in rounds (``run.json``'s ``rounds``: data from the run's file, checked here):
    its operation, its case in words, its contenders, the rounds it used, its answer and why it stopped. Empty
    when the run was not measured in rounds."""
    rounds = meta.get("rounds")
    questions = rounds.get("questions") if isinstance(rounds, Mapping) else None
    out = []
    for q in questions if isinstance(questions, list) else []:
        if not isinstance(q, Mapping):
            continue
        key = q.get("key") if isinstance(q.get("key"), Mapping) else {}
        op = str(q.get("operation", ""))
        named = q.get("contenders") if isinstance(q.get("contenders"), list) else q.get("cases")
        out.append({"operation": escape(OPERATION_WORDS.get(op, op.replace("_", " "))),
                    "case": case_text(key, escape), "contenders": len(named) if isinstance(named, list) else None,
                    "rounds": q.get("rounds") if isinstance(q.get("rounds"), int) else None,
                    "answer": escape(str(q.get("answer", ""))), "why": escape(str(q.get("why", "")))})
    return pd.DataFrame(out, columns=["operation", "case", "contenders", "rounds", "answer", "why"])


# -- iobench advise's words (plain text) ------------------------------------------------------------


def value_words(entry: Entry, unit: str) -> str:
    """``0.92 [0.82, 1.4] ms per cutout (n=8)``: the median, its interval and n (its coverage where below 95%)."""
    scale, unit = (1e3, "ms per cutout") if unit == "s per cutout" else (1.0, unit)
    text = f"{number(entry.median * scale)}"
    if math.isfinite(entry.lo) and math.isfinite(entry.hi):
        text += f" [{number(entry.lo * scale)}, {number(entry.hi * scale)}]"
    cover = coverage(entry.n)
    note = "" if cover >= CONFIDENCE else f", {math.floor(100 * cover + 0.5)}% interval" if cover > 0 else \
        ", too few for an interval"
    return f"{text} {unit} (n={entry.n}{note})"


def versus_words(entry: Entry, ranking: Ranking, than: str = "the recommendation") -> str:
    """``1.53x worse than the recommendation [1.09x, 2.24x], separable``: against the leader, never a neighbour."""
    factor, lo, hi = entry.factor(ranking.higher)
    t = entry.vs_leader
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if math.isfinite(lo) and math.isfinite(hi) else ""
    verdict = "no interval" if t is None else t.verdict()
    return f"{factor:.2f}x worse than {than}{interval}, {verdict}"


def candidates_verdict(ranking: Ranking, escape: Escape = md) -> str:
    """``iobench advise``'s verdict on its candidates (the terminal passes ``terminal.visible``)."""
    status = ranking.status
    if status is Verdict.ALONE:
        return "the only candidate measured on these terms: not ranked, nothing to compare it with"
    if status is Verdict.WINNER:
        return f"separable from every other of the {len(ranking.entries)} candidates"
    if status is Verdict.TOO_FEW:
        return (f"{too_few_text(ranking)}: the recommendation is the best median of {len(ranking.entries)}, not a "
                "separable winner")
    if status is Verdict.EQUIVALENT:
        return f"{_equivalent(ranking, escape)}: any of them will do"
    tied = "; ".join(escape(e.name) for e in ranking.tied)
    return (f"no separable winner: the best median of {len(ranking.entries)} candidates; not separable from it: "
            f"{tied}")


# -- one answer, the same words on every page --------------------------------------------------------------------
#: how sure the rule is, in a word
SURE = {Verdict.WINNER: "separated", Verdict.EQUIVALENT: f"equivalent for practical purposes (within {MARGIN:.0%})",
        Verdict.NO_WINNER: "not separable", Verdict.TOO_FEW: "too few", Verdict.ALONE: "only one measured"}


def _names(names: Sequence[str], escape: Escape, shown: int = 2) -> str:
    named = [escape(n) for n in names[:shown]]
    rest = len(names) - len(named)
    if rest:
        return f"{', '.join(named)} and {rest} more"
    return " and ".join(named) if len(named) == 2 else ", ".join(named)


def pick_text(a: Answer, escape: Escape = md) -> str:
    """What to take: ``**zarrs**``; ``tie between zarrs and tensorstore`` (and N more) where the rule cannot tell
    them apart; the best median where it cannot rank; ``not measured here`` without rows."""
    if a.question.key == "lost-data" and a.measured:
        return f"**{_names(a.lost, escape, 3)}** lost data" if a.lost else "none: every array came back right"
    if a.upgrade:
        return upgrade_pick(a, escape)
    if not a.measured:
        return "not measured here"
    note = f", {a.note}" if a.note else ""
    tied = a.tied if a.question.picks_leader else ()
    if tied:
        return f"tie between {_names([a.pick, *tied], escape)}{note}"
    if a.status is Verdict.TOO_FEW and a.pick_entry is a.ranking.leader:
        return f"{escape(a.pick)}, the best median{note}"
    if a.status is Verdict.ALONE:
        return f"{escape(a.pick)}{note}"
    return f"**{escape(a.pick)}**{note}"


def sure_text(a: Answer, escape: Escape = md) -> str:
    """How sure, with the factor and its 95% interval: ``separated: b 1.14x slower [1.04x, 1.21x]`` (the runner-up);
    ``not separable: b 1.07x slower [0.56x, 1.79x]``; a pick the rule takes below the leader (the fewest threads,
    the codec worth taking) against the leader."""
    if a.question.key == "lost-data" and a.measured:
        wrong, checked = a.checked
        return f"read back whole: {wrong} of {checked} unaligned arrays wrong"
    if a.upgrade:
        return upgrade_sure(a)
    if not a.measured:
        return "-"
    r, status, e = a.ranking, a.status, a.versus
    if status is Verdict.TOO_FEW:
        return too_few_text(r)
    if e is None:
        return SURE[status]
    factor, lo, hi = e.factor(r.higher)
    interval = f" [{lo:.2f}x, {hi:.2f}x]" if np.isfinite(lo) and np.isfinite(hi) else ""
    if e.name == a.pick:  # the rule's pick is not the best median: stated against it
        t = e.vs_leader
        sure = SURE[Verdict.EQUIVALENT] if t.equivalent else "separated" if t.separable else "not separable"
        return f"{sure} from {escape(r.leader.name)}: {factor:.2f}x slower{interval}"
    return f"{SURE[status]}: {escape(e.name)} {factor:.2f}x slower{interval}"


def upgrade_pick(a: Answer, escape: Escape = md) -> str:
    """``upgrading **zarr-python** from 2.18.7 to 3.1.6: 3.1.6 is 1.80x slower for cold cutouts``, or ``...: no
    separable difference of 10% or more``: the answer's first change (its largest of 10% or more)."""
    first = a.upgrade[0]
    head = f"upgrading **{escape(first.library)}** from {escape(first.version)} to {escape(first.newest)}: "
    if not first.notable:
        return f"{head}no separable difference of {NOTABLE:.0%} or more"
    factor, _, _, word = first.factor()
    return f"{head}{escape(first.newest)} is {factor:.2f}x {word} for {escape(first.what)}"


def upgrade_sure(a: Answer) -> str:
    """The first change's interval and what it rests on (``separated: [1.60x, 2.00x], paired over 12 rounds``), and
    how many more changes of 10% or more; or over how many operations nothing separable of 10% or more was found."""
    first, more = a.upgrade[0], sum(c.notable for c in a.upgrade[1:])
    if not first.notable:
        few = sum(c.ratio.separable is None for c in a.upgrade)
        n = len(a.upgrade)
        return (f"{n} comparison{'s' if n != 1 else ''}: each within {NOTABLE:.0%}, equivalent or not separable"
                + (f" ({few} with too few rounds)" if few else ""))
    t, (_, lo, hi, _) = first.ratio, first.factor()
    how = f"paired over {t.n_a} rounds" if t.paired else f"n={min(t.n_a, t.n_b)} each, not paired"
    tail = f"; {more} more change{'s' if more != 1 else ''} of {NOTABLE:.0%} or more" if more else ""
    return f"separated: [{lo:.2f}x, {hi:.2f}x], {how}{tail}"


def rests_text(a: Answer, escape: Escape = md, run: bool = True) -> str:
    """What the answer rests on: ``em_like, uint8 64x1080x1920, blosc-lz4:5:shuffle, 265 MB`` (with ``run``: the
    profile and machine, ``quick profile, vm``)."""
    parts = [escape(p) for p in a.rests_on]
    if run and a.profile:
        parts.append(f"{escape(a.profile)} profile")
    if run and a.machine:
        parts.append(escape(a.machine))
    return ", ".join(parts) or "-"


def verdict_line(a: Answer, escape: Escape = md, run: bool = False, label: bool = True) -> str:
    """The answer in one line, the same on every page: ``**Write**: tie between a and b (not separable: b 1.07x
    slower [0.56x, 1.79x]; em_like, uint8 64x1080x1920)`` (without ``label``: from the pick on)."""
    head = f"**{a.question.label}**: " if label else ""
    if not a.measured:
        return f"{head}not measured here"
    return f"{head}{pick_text(a, escape)} ({sure_text(a, escape)}; {rests_text(a, escape, run)})"


__all__ = ["SURE", "Escape", "answer_clause", "candidates_verdict", "change_text", "number", "pick_text",
           "rests_text", "sure_text", "too_few_text", "unverified_text", "upgrade_pick", "upgrade_sure", "value_text",
           "value_words", "verdict_line", "verdict_text", "versus_text", "versus_words", "why_text"]
