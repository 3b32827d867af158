"""Will the upgrade hurt? Each library measured at more than one version, each operation's time at every version
as a ratio of its newest version's, by the book's one rule.

The versions of a library are contenders of one question: the rows of one operation in one group of equals
(``records.questions.equals_keys``: the same codec, bytes, fsync policy, cutout kind, cache state, dataset) of one
backend (its label: ``zarr-python:zarr2`` writes the v2 format at every version, so it is compared on the same bytes;
plain ``zarr-python`` writes the newest format each version has, and each change says which formats it compared).
The reference is the newest version (``packaging``'s order), never the best median: an upgrade is read from the
version a person has to the newest. Each version against the newest is decided by the one rule
(``rules.decision.decide`` on the pair): round by round where both were measured in the same rounds of one run,
else each iteration a round. A ratio whose whole interval lies within 1 +- ``MARGIN`` is
equivalent; a separable one of ``NOTABLE`` (10%) or more is stated in words ("3.1.6 is 1.80x slower than 2.18.7 for
cold cutouts [1.60x, 2.00x]"); the rest are "no separable difference of 10% or more".

Every name here (library, version, format, codec) is a record string: escape it where it is shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import pandas as pd
from packaging.version import InvalidVersion, Version

from benchmarks_lib.base.specs import format_bytes
from benchmarks_lib.base.stats import TwoSample
from benchmarks_lib.records.questions import countable, equals_keys, normalized, per_round
from benchmarks_lib.rules.names import backend_name
from benchmarks_lib.rules.ranking import rank_samples

#: the writers' operations an upgrade is read on (time in seconds, lower is better), in the order they are told
OPERATIONS = {"total": "write", "append_total": "append", "read_cold": "cold full read",
              "read_region_cold": "cold cutouts"}
#: a separable change of at least this fraction is stated in words
NOTABLE = 0.1
#: the column naming the run a row comes from when rows of several runs are read together
RUN_COLUMN = "run_id"
#: the command that measures versions (shown where a run has none)
MEASURE_COMMAND = "iobench run writers -b zarr-python:zarr2 --versions 'zarr==2.18.7,3.1.6' --profile quick"


def version_key(version: str) -> tuple:
    """Sort key of a version string (PEP 440 where it parses; otherwise after every valid one, by its text)."""
    try:
        return (0, Version(version), "")
    except InvalidVersion:
        return (1, Version("0"), version)


def _size(nbytes: float) -> str:
    """A cutout's bytes as a person counts them: ``32 KiB``, ``2 MiB`` (cubes of powers of two), else decimal."""
    n = int(nbytes)
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n == nbytes and n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return format_bytes(nbytes)


@dataclass(frozen=True)
class Change:
    """One version of a library against its newest, on one operation of one group of equals: ``ratio`` is the
    version's time over the newest's (above 1: the newest is faster), with its interval and the rule's verdict."""

    library: str
    operation: str
    key: dict
    version: str
    newest: str
    ratio: TwoSample
    #: the Zarr format each side wrote (``zarr_format``: "2", "3"; "" where not recorded), the version's then the
    #: newest's
    formats: tuple[str, str] = ("", "")
    #: the cases measured (``case_id``) at the version, then at the newest: where their other rows are
    cases: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    @property
    def what(self) -> str:
        """The operation in words, with the cutout's size and kind where there is one: ``cold cutouts of 524 kB
        (unaligned)`` (two cutout sizes are two questions: the words tell them apart)."""
        kind, nbytes = self.key.get("cutout_kind"), self.key.get("nbytes")
        words = OPERATIONS.get(self.operation, self.operation)
        if not (isinstance(kind, str) and kind):
            return words
        size = f" of {_size(nbytes)}" if isinstance(nbytes, int | float) and nbytes > 0 else ""
        return f"{words}{size} ({kind})"

    @property
    def verdict(self) -> str:
        t = self.ratio
        if t.separable is None:
            return "too few rounds" if t.paired else "too few iterations"
        if t.equivalent:
            return "equivalent"
        if not t.separable:
            return "not separable"
        return "newest faster" if t.ratio > 1 else "newest slower"

    @property
    def notable(self) -> bool:
        """Separable by the rule, and the newest at least ``NOTABLE`` slower or faster."""
        t = self.ratio
        return bool(t.separable) and not t.equivalent and self.factor()[0] >= 1 + NOTABLE

    def factor(self) -> tuple[float, float, float, str]:
        """``(factor, lo, hi, word)``: how many times faster or slower (``word``) the newest is than the version,
        at least 1 at the median, with its interval."""
        t = self.ratio
        if t.ratio >= 1:  # the version takes longer: the newest is faster
            return t.ratio, t.lo, t.hi, "faster"
        return 1 / t.ratio, 1 / t.hi, 1 / t.lo, "slower"

    def sentence(self, escape: Callable[[str], str], formats: bool = True) -> str:
        """``3.1.6 is 1.80x slower than 2.18.7 for cold cutouts [1.60x, 2.00x]``: from the version a person has to
        the newest (the factor and interval of newest/version); with ``formats``, the Zarr formats compared."""
        factor, lo, hi, word = self.factor()
        return (f"{escape(self.newest)} is {factor:.2f}x {word} than {escape(self.version)} for {escape(self.what)} "
                f"[{lo:.2f}x, {hi:.2f}x]{self.formats_text(escape) if formats else ''}")

    def formats_text(self, escape: Callable[[str], str]) -> str:
        """`` (Zarr v2 format on both)``, `` (v2 format on 2.18.7, v3 on 3.1.6)``, or "" where not recorded."""
        old, new = self.formats
        if not old and not new:
            return ""
        if old == new:
            return f" (Zarr v{escape(old)} format on both)"
        return f" (Zarr v{escape(old or '?')} format on {escape(self.version)}, v{escape(new or '?')} on " \
               f"{escape(self.newest)})"


def _text(value: object) -> str:
    return "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def _format(rows: pd.DataFrame) -> str:
    if "zarr_format" not in rows:
        return ""
    found = sorted({_text(v).removesuffix(".0") for v in rows["zarr_format"].dropna()})
    return "/".join(found)


def version_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The countable rows of the upgrade's operations that carry a library version (``backend_version``)."""
    needed = {"backend", "backend_version", "operation", "elapsed_s"}
    if df is None or df.empty or not needed <= set(df):
        return pd.DataFrame()
    rows = countable(df)
    rows = rows[rows["operation"].isin(list(OPERATIONS)) & rows["backend_version"].notna()
                & ~rows["backend"].isin(["raw", "ceiling"])]
    if "test" in rows:  # the sharding sweep's layouts are another question
        rows = rows[rows["test"].astype("string").fillna("") != "sharding"]
    return rows.assign(backend_version=rows["backend_version"].astype(str))


def versioned(df: pd.DataFrame) -> dict[str, list[str]]:
    """library -> its versions (oldest first) for each library measured at more than one version."""
    rows = version_rows(df)
    if rows.empty:
        return {}
    out = {}
    for library, part in rows.groupby("backend", sort=True):
        versions = sorted(set(part["backend_version"]), key=version_key)
        if len(versions) > 1:
            out[str(library)] = versions
    return out


def _compare(newest: pd.DataFrame, other: pd.DataFrame) -> TwoSample:
    """``other``'s time over ``newest``'s, decided by the one rule (``rules.decision.decide`` on the pair): paired
    round by round where both were measured in the same rounds of one run, else each iteration a round."""
    same_run = RUN_COLUMN not in newest or set(newest[RUN_COLUMN].astype(str)) == set(other[RUN_COLUMN].astype(str))
    parts = {"newest": newest, "other": other}
    rounds = per_round(parts, "elapsed_s") if same_run else None
    r = rank_samples({n: p["elapsed_s"].to_numpy(float) for n, p in parts.items()}, False, rounds=rounds)
    if len(r.entries) < 2:
        nan = float("nan")
        return TwoSample(nan, nan, nan, len(newest), len(other), None, paired=rounds is not None)
    t = r.others[0].vs_leader
    if r.leader.name == "other":  # newest over other: turned round
        t = replace(t, ratio=1 / t.ratio, lo=1 / t.hi, hi=1 / t.lo)
    return replace(t, paired=rounds is not None)


def changes(df: pd.DataFrame) -> list[Change]:
    """Every version of every library measured at more than one version against its newest, per operation and
    group of equals (the operations in ``OPERATIONS``' order)."""
    rows = version_rows(df)
    libraries = versioned(df)
    if not libraries:
        return []
    rows = normalized(rows[rows["backend"].isin(list(libraries))])
    keys = ["backend", "operation", *equals_keys(rows)]
    out = []
    for values, group in rows.groupby(keys, dropna=False, sort=True):
        key = dict(zip(keys, values, strict=True))
        library, operation = str(key.pop("backend")), str(key.pop("operation"))
        parts = {str(v): p for v, p in group.groupby("backend_version", sort=False)}
        if len(parts) < 2:
            continue
        versions = sorted(parts, key=version_key)
        newest = versions[-1]
        for version in versions[:-1]:
            t = _compare(parts[newest], parts[version])
            ids = tuple(tuple(sorted({str(i) for i in parts[v].get("case_id", ())})) for v in (version, newest))
            out.append(Change(library, operation, key, version, newest, t,
                              (_format(parts[version]), _format(parts[newest])), ids))
    order = list(OPERATIONS)
    return sorted(out, key=lambda c: (c.library, order.index(c.operation), version_key(c.version),
                                      _text(c.key.get("cutout_kind")), _text(c.key.get("codec"))))


def headline(found: list[Change], escape: Callable[[str], str]) -> list[str]:
    """The sentences at the top: each separable change of ``NOTABLE`` or more, else per library and version "no
    separable difference of 10% or more" (with how many comparisons had too few rounds to tell)."""
    lines = []
    pairs = dict.fromkeys((c.library, c.version, c.newest) for c in found)
    for library, version, newest in pairs:
        mine = [c for c in found if (c.library, c.version, c.newest) == (library, version, newest)]
        notable = [c for c in mine if c.notable]
        head = f"**{escape(backend_name(library))}** {escape(version)} → {escape(newest)}: "
        once = len({c.formats for c in mine}) == 1  # the formats said once for the line
        tail = mine[0].formats_text(escape) if once else ""
        if notable:
            lines.append(head + "; ".join(c.sentence(escape, not once) for c in notable) + f"{tail}.")
            continue
        few = sum(c.ratio.separable is None for c in mine)
        tail += f" ({few} of {len(mine)} comparisons had too few rounds to tell)" if few else ""
        lines.append(f"{head}no separable difference of {NOTABLE:.0%} or more{tail}.")
    return lines


__all__ = ["MEASURE_COMMAND", "NOTABLE", "OPERATIONS", "RUN_COLUMN", "Change", "changes", "headline", "version_key",
           "version_rows", "versioned"]
