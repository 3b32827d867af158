"""The rule's words, the one place they are written: a median with its interval and n, an entry against the
leader, a group's verdict, the front page's clause, a change between runs. Record strings in them (the entries'
names) go through ``escape``: Markdown for the book (``markup.md``, the default), ``terminal.visible`` for the
terminal."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import md
from benchmarks_lib.base.specs import SpecError, format_bytes, parse_dims, shape_text
from benchmarks_lib.base.stats import CONFIDENCE, TwoSample, coverage, plain
from benchmarks_lib.rules.answers import Answer
from benchmarks_lib.rules.decision import MARGIN, Comparison, Verdict, decision_from_record, decision_text, ratio_text
from benchmarks_lib.rules.names import OPERATION_WORDS, VARIANTS, operation_name
from benchmarks_lib.rules.ranking import Entry, Ranking
from benchmarks_lib.rules.upgrades import NOTABLE

#: how a record string is made safe where the words are shown
Escape = Callable[[str], str]


def number(value: float) -> str:
    """About three significant digits, never in exponent notation (1337, 596, 2.31, 0.0123, 0.0000123)."""
    return f"{value:.0f}" if abs(value) >= 100 else plain(f"{value:.3g}")


def _g(value: float) -> str:
    """``{value:g}`` (six significant digits at most), out of exponent notation."""
    return plain(f"{value:g}")



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


def comparison_text(c: Comparison, leader: str, escape: Escape = md, decided: bool = True) -> str:
    """``1.40x slower than a [1.20x, 1.60x], separated``: a contender against the paired leader, with where the
    decision left it (out at round 8, separated, within the margin, not told apart). Where the question is still
    open (``decided`` False) its interval is the one between looks: apart so far is not yet separated."""
    if c.out is not None:
        state = f"out at round {c.out}"
    elif not c.has_interval:
        state = "no interval yet"
    elif c.lo >= 1 / (1 + MARGIN) and c.hi <= 1 + MARGIN:
        state = f"within {MARGIN:.0%}" if decided else f"within {MARGIN:.0%} so far (a look decides)"
    elif c.lo > 1:
        state = "separated" if decided else "apart so far (a look decides)"
    else:
        state = "not told apart"
    versus = escape(c.versus or leader)
    text = ratio_text(c.ratio, c.lo, c.hi)
    word, _, interval = text.partition(" [") if " [" in text else (text, "", "")
    return f"{word} than {versus}{' [' + interval if interval else ''}, {state}"


def versus_text(entry: Entry, ranking: Ranking, worse: str = "slower", escape: Escape = md) -> str:
    """``2.00x slower than a [1.98x, 2.02x], separated``: the entry against the paired leader, never its neighbour."""
    if entry.comparison is None:
        return "the leader"
    return comparison_text(entry.comparison, ranking.leader.name, escape, ranking.decided)


def too_few_text(ranking: Ranking) -> str:
    """``open after 9 rounds; next look at round 12``: what an undecided ranking still needs."""
    d = ranking.decision
    return decision_text(d, md).partition(":")[0] if d is not None else "nothing ranked"


def why_text(ranking: Ranking, escape: Escape = md) -> str:
    """`` (decided at round 12)``: when the decision was made, where it was ('' otherwise)."""
    d = ranking.decision
    return f" ({escape(d.why())})" if d is not None and d.decided and d.verdict is not Verdict.TIE else ""


def verdict_text(ranking: Ranking, what: str = "backends", escape: Escape = md, markup: bool = True) -> str:
    """The group's decision in the rule's words (:func:`.decision.decision_text`), with how many ``what`` and when
    it was decided (Markdown where ``markup``, else plain words for a terminal)."""
    d = ranking.decision
    if d is None:
        return f"not ranked: none of the {what} measured this"
    if d.verdict is Verdict.ALONE:
        return f"not ranked: no other of the {what} measured this on these terms"
    return f"{decision_text(d, escape, markup)} ({len(d.contenders)} {what}){why_text(ranking, escape)}"


def answer_clause(r: Ranking, value: Callable[[Entry], str], what: str,
                  details: Callable[[Entry], Sequence[str]] = lambda e: (), escape: Escape = md) -> str:
    """The front page's clause for one group: the paired leader's value (``a at 1.2 GB/s (...)``), then the
    decision in the rule's words (:func:`verdict_text`)."""
    best = r.leader
    extra = "; ".join(details(best))
    head = value(best) + (f" ({extra})" if extra else "")
    return f"{escape(best.name)} at {head}: {verdict_text(r, what, escape)}"


def two_sample_text(t: TwoSample) -> str:
    """A comparison's state in words: ``equivalent (within 5%)``, ``no interval yet (n=5)``, ``separated (95%
    interval, paired over 12 rounds)``, ``not told apart (95% interval, n=8, includes 1)``."""
    if t.equivalent:
        return f"equivalent (the whole interval within {MARGIN:.0%})"
    n = min(t.n_a, t.n_b)
    if t.separable is None:
        return f"no interval yet (n={n})"
    cover = f"{t.coverage:.0%} interval" if math.isfinite(t.coverage) else "interval"
    how = f"{cover}, paired over {t.n_a} rounds" if t.paired else f"{cover}, n={n}"
    return f"separated ({how})" if t.separable else f"not told apart ({how}, includes 1)"


def change_text(t: TwoSample, better: str = "faster", worse: str = "slower") -> str:
    """What B did against A (``two_sample(a, b)`` of times): ``**4.0x faster** [3.9x, 4.1x], separated`` when
    separated, else the state alone (never a factor as a claim the data cannot make)."""
    if not t.separable:
        return two_sample_text(t)
    gain = t.ratio < 1 if not t.higher else t.ratio > 1
    factor, lo, hi = (1 / t.ratio, 1 / t.hi, 1 / t.lo) if t.ratio < 1 else (t.ratio, t.lo, t.hi)
    return f"**{factor:.1f}x {better if gain else worse}** [{lo:.2f}x, {hi:.2f}x], separated"


def unverified_text(ranking: Ranking, escape: Escape = md) -> str:
    """A clause naming the contenders left out because their verification failed ('' when none)."""
    if ranking.unverified:
        return f"; rows that failed verification are not ranked: {', '.join(map(escape, ranking.unverified))}"
    return ""


# -- a case in words ---------------------------------------------------------------------------------

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
    return f"{_g(number)} {one if number == 1 else many}"


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
    text = escape(f"{_g(number)}" if number is not None and not isinstance(value, str) else str(value))
    simple = {"location": _LOCATIONS, "server": _SERVERS, "reader": _READERS, "alignment": _ALIGNMENTS,
              "store": _STORES, "workload": _WORKLOADS, "operation": OPERATION_WORDS}
    if name in simple:
        return simple[name].get(str(value)) or (escape(str(value).replace("_", " ")) if name == "operation" else text)
    if name in ("latency_ms",) and number is not None:
        return f"{_g(number)} ms"
    if name in ("bandwidth_bytes_s", "bandwidth") and number is not None:
        return f"{format_bytes(number)}/s" if number > 0 else "no bandwidth cap"
    if name in ("nbytes",) and number is not None:
        return format_bytes(number)
    if name == "multiplier":
        return "" if "nbytes" in key and not _missing(key["nbytes"]) else f"{_g(number)}x the base size" \
            if number is not None else text
    if name in ("inner_chunk", "shard_size") and "layout" in key and not _missing(key["layout"]):
        return ""  # the layout's label names them
    if name == "inner_chunk" and number is not None:
        return f"inner chunks of {_g(number)}"
    if name == "shard_size" and number is not None:
        return "no shards" if number == 0 else f"shards of {_g(number)}"
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
        return f"level {_g(number)}"
    if name == "cutout":
        shape = _shape(value)
        return f"{shape} cutouts" if shape else f"cutouts of side {_g(number)}" if number is not None else text
    if name == "cutout_kind":
        return f"{text} cutouts"
    if name == "zarr_dims":
        return _dims(value) or text
    if name == "read_by":
        return f"read by {text}"
    if name in ("s3_target", "target"):
        return f"at {text}"
    if name == "step":
        return f"steps of {text}" if number is None else f"steps of {_g(number)} entries"
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
    return f"{words} {_g(number)}" if number is not None else f"{words} {text}"


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
        recorded = decision_from_record(q["decision"]) if isinstance(q.get("decision"), Mapping) else None
        out.append({"operation": escape(operation_name(op, in_sentence=True)),
                    "case": case_text(key, escape), "contenders": len(named) if isinstance(named, list) else None,
                    "rounds": q.get("rounds") if isinstance(q.get("rounds"), int) else None,
                    "answer": escape(str(q.get("answer", ""))), "why": escape(str(q.get("why", ""))),
                    "decision": recorded.text(escape) if recorded is not None else ""})
    return pd.DataFrame(out, columns=["operation", "case", "contenders", "rounds", "answer", "why", "decision"])


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
    """``1.53x slower than the recommendation [1.09x, 2.24x], separated``: against the leader, never a neighbour."""
    if entry.comparison is None:
        return "the recommendation"
    return comparison_text(replace(entry.comparison, versus=than), than, lambda x: x, ranking.decided)


def candidates_verdict(ranking: Ranking, escape: Escape = md) -> str:
    """``iobench advise``'s verdict on its candidates (the terminal passes ``terminal.visible``: plain words, no
    Markdown; the book's advise page keeps ``md``)."""
    return verdict_text(ranking, "candidates", escape, markup=escape is md)


# -- one answer, the same words on every page --------------------------------------------------------------------
#: how sure the rule is, in a word
SURE = {Verdict.WINNER: f"a winner (by more than {MARGIN:.0%})",
        Verdict.LEADER: f"ahead, perhaps by less than {MARGIN:.0%}",
        Verdict.EQUIVALENT: f"equivalent (within {MARGIN:.0%})", Verdict.TIE: "a tie at the cap",
        Verdict.OPEN: "open", Verdict.ALONE: "only one measured"}


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
    if a.status is Verdict.EQUIVALENT and tied:
        return f"equivalent: {_names([a.pick, *tied], escape)}{note}"
    if tied:
        return f"tie between {_names([a.pick, *tied], escape)}{note}"
    if a.status is Verdict.OPEN:  # nothing decided: no pick in bold, the leader's or the rule's own
        return f"{escape(a.pick)} so far, undecided{note}"
    if a.status is Verdict.ALONE:
        return f"{escape(a.pick)}{note}"
    return f"**{escape(a.pick)}**{note}"


def sure_text(a: Answer, escape: Escape = md, rule: bool = False) -> str:
    """How sure: the decision's verdict and the comparison it rests on: ``a winner (by more than 5%): b 1.14x slower
    than a [1.07x, 1.21x], separated`` (the runner-up); a pick the rule takes below the leader (the fewest threads
    within the margin, the codec worth taking) against the leader, after that rule in words (``Question.pick_rule``)
    where ``rule`` (the front page: a chapter states its rule once, above its answers)."""
    if a.question.key == "lost-data" and a.measured:
        wrong, checked = a.checked
        return f"read back whole: {wrong} of {checked} unaligned arrays wrong"
    if a.upgrade:
        return upgrade_sure(a)
    if not a.measured:
        return "-"
    r, status, e = a.ranking, a.status, a.versus
    d = r.decision
    if e is None or e.comparison is None or d is None:
        return SURE[status]
    text = comparison_text(e.comparison, r.leader.name, escape, d.decided)
    if e.name == a.pick:  # the rule's pick is not the paired leader: the rule that took it, then it against the leader
        said = f"{escape(a.question.pick_rule)}: " if rule and a.question.pick_rule else ""
        return f"{said}{escape(e.name)} {text}"
    when = f" after {d.stops} rounds" if status in (Verdict.OPEN, Verdict.TIE) else f" at round {d.stops}"
    if (builds := r.builds) > 1:
        when += f" of {builds} runs"
    return f"{SURE[status]}{when}: {escape(e.name)} {text}{d.would_need}"


def open_line(answers: Sequence[Answer], needs: Mapping[str, float | None]) -> str:
    """The front page's line on the questions still open: how many, and about how long another build measures to
    bring them to their next looks (``needs``: per suite, what its last run says the next look costs, set-up
    included: ``book.plan.prior_need``, the figure the build's plan shares its budget by). '' where none is open."""
    still = [a for a in answers if a.measured and a.status is Verdict.OPEN]
    if not still:
        return ""
    seconds = [needs.get(suite) for suite in {a.question.suite for a in still}]
    took = f" (about {number(sum(seconds))} s more of measuring)" \
        if seconds and all(isinstance(x, float) and math.isfinite(x) for x in seconds) else ""
    return f"**{len(still)} of {len(answers)} questions open:** `make book` again goes on with them{took}."


def upgrade_pick(a: Answer, escape: Escape = md) -> str:
    """``**zarr-python** 2.18.7 to 3.1.6: 3.1.6 is 1.80x slower for cold cutouts``, or ``...: no separable
    difference of 10% or more``: the answer's first change (its largest of 10% or more); the question's label says
    "Upgrading" already. A writer's format variant in words (``zarr-python:zarr2``: ``zarr-python (Zarr v2
    format)``)."""
    first = a.upgrade[0]
    library, _, variant = first.library.partition(":")
    shown = f"**{escape(library)}**" + (f" ({escape(VARIANTS.get(variant, variant))})" if variant else "")
    head = f"{shown} {escape(first.version)} to {escape(first.newest)}: "
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


#: how an answer here stands beside the reference machine's (:func:`agreement`)
SAME, MACHINES, CHANCE = "the same", "both decided: the machines differ", "not both decided: chance may explain it"


def _picked(a: Answer) -> object:
    """What an answer picks, to compare two machines': the writers that lost data (whatever stores each measured),
    the names a tie or an equivalence holds (in any order), else its pick in words."""
    if a.question.key == "lost-data":
        return frozenset(name.partition(" (")[0] for name in a.lost)
    if a.tied and a.question.picks_leader:
        return frozenset((a.pick, *a.tied)), a.note
    return pick_text(a, lambda x: x)


def agreement(mine: Answer, ref: Answer) -> str:
    """How this machine's answer stands beside the reference machine's: :data:`SAME` (the same pick), or where the
    picks differ, :data:`MACHINES` when both decided what they pick (``Verdict.picks``: an equivalence on one machine
    and a winner on the other differ as two winners do; a decided question is never re-opened) and :data:`CHANCE`
    when one of them did not (a tie at the cap or open: more rounds may agree); '' where one of them measured
    nothing."""
    if not (mine.measured and ref.measured):
        return ""
    if _picked(mine) == _picked(ref):
        return SAME
    decided = all(a.status is not None and a.status.picks for a in (mine, ref)) and not mine.upgrade
    return MACHINES if decided else CHANCE


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


__all__ = ["CHANCE", "MACHINES", "SAME", "SURE", "Escape", "agreement", "answer_clause", "candidates_verdict",
           "change_text", "comparison_text", "number", "pick_text", "rests_text", "sure_text", "too_few_text",
           "two_sample_text", "unverified_text", "upgrade_pick", "upgrade_sure", "value_text", "value_words",
           "verdict_line", "verdict_text", "versus_text", "versus_words", "why_text"]
