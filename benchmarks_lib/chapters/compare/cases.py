"""Comparing runs: the same cases measured twice (a library upgrade, a new disk, another machine).

A case is its suite, backend, operation and the suite's declared ``case_keys`` (every parameter that varies
within a run: parallel W, the Zarr client cache, the S3 link's latency, ...; ``key_problems`` is what a test
holds each suite's declaration to). Its value per iteration is the iteration's time; where one iteration has
parts (``iteration_parts``: the frames and steps of one append repeat) the median part is that iteration's
value, so 64 frames of one repeat count as n=1 (the sum of the parts is the repeat's own ``append_total`` row).

Per matched case, ``rules.changes.case_changes`` gives the change B/A (exp of the difference of the case's mean log
times, each time first taken relative to its round's run-wide level where the runs were measured in rounds) and the
95% interval of that same quantity, whose variance holds each run's standard error, the between-run component
estimated from how the cases scatter around the run's drift, and each run's level uncertainty (the whole rule is in
that module's docstring). The threshold is a factor either way (10%: 1.1 and 1/1.1 = 0.909), and a verdict needs the
whole interval: "slower" when it lies above 1.1, "faster" when below 1/1.1, "same" when it lies within [1/1.1, 1.1] (a
change smaller than the threshold, even where the interval excludes 1), and *not separable* when it reaches both
inside and outside that band (0.79 [0.60, 0.92]: 8% to 40% less time, within the threshold or beyond it); "too few
iterations" below ``stats.MIN_RANK_N`` a side. Each row says why (``why``). What else differs between the runs
(library versions, CPU, filesystem, kernel, git commit) is stated beside the table, since any of it may be the cause.

Where both runs share ``DRIFT_MIN_CASES`` cases or more, a case "slower" or "faster" is also judged against the
run's drift (the median of the cases' log ratios): where the drift itself lies beyond the threshold the same way
and the case's change against it does not, the case "moved with the run" (a new disk that makes every case 2x faster
reads: every case moved with the run, whose median B/A is 0.5). A case beyond the threshold against the run is never
that, and nothing moves with a run whose drift is within the threshold. ``tools/simulate_compare.py`` measures the
rule on simulated A/A runs (book/methodology.md, "Comparing runs").

The ceiling's rows (raw write, read and memcpy of the same bytes, no library) are the machine, not cases: they are
judged alike, but one beyond the threshold is "ceiling moved" (``MACHINE``), context that may explain the cases
using the same resource, and they take no part in the drift. On this VM the flush of ``write_fsync`` (67 MB) took
about 31 ms in some runs and 40 ms in others, each run in one mode for seconds whatever its process, core or
directory; eleven A/A repetitions flagged 28 of 528 ceiling rows (5.3%) against 3 of 3168 cases (0.09%).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks_lib.base.environment import memory_gib
from benchmarks_lib.base.paths import shown_path
from benchmarks_lib.base.specs import SpecError, parse_number
from benchmarks_lib.chapters import tables
from benchmarks_lib.rules.changes import (
    DEFAULT_THRESHOLD,
    DRIFT_MIN_CASES,
    FLAGGED,
    MACHINE,
    MOVED,
    NOT_SEPARABLE,
    ONE_SIDE,
    TOO_FEW,
    VERDICTS,
    WITH_RUN,
    bounds,
    case_changes,
    judge,
    threshold_words,
    verdict,
)
from benchmarks_lib.rules.words import case_text

#: the suite whose rows are the machine's own ceilings (every run measures them)
CEILING_SUITE = "ceiling"
#: a ratio figure's case label wraps at this many characters (the axes keep most of the column's width)
LABEL_CHARS = 42
#: environment keys that differ between any two runs without meaning anything
NOT_COMPARED = ("collected_at", "fs_free_bytes")
#: the column naming a moved case's version change (only where a backend's library versions differ between the runs)
VERSION_COLUMN = "version change"
#: the chapter's section listing every case of each comparison (the front page's like-for-like tables link to it)
MATCHED_SECTION = "Every matched case"
COLUMNS = ["suite", "backend", "operation", "case", "n A", "n B", "median s A", "median s B", "B/A time",
           "95% CI lo", "95% CI hi", "verdict", "why"]


def parse_threshold(value: object) -> float:
    """The relative change a verdict needs: a number strictly between 0 and 1 (0.1 = 10%)."""
    number = parse_number(value, "threshold", minimum=0.0, maximum=1.0)
    if not 0 < number < 1:
        raise SpecError(f"threshold {number:g} must lie strictly between 0 and 1 (0.1 = 10%)")
    return number


def _text(value: object) -> str:
    """A case value as text that is the same in both runs whatever the column's dtype (1.0 and 1 agree)."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | float | np.integer | np.floating):
        return str(int(value)) if float(value).is_integer() else f"{float(value):g}"
    return str(value)


def declared_keys(suites: list[str]) -> tuple[list[str], list[str]]:
    """The union of the suites' declared ``case_keys`` and ``iteration_parts``; a SpecError for a suite that
    iobench does not know (its cases cannot be told apart)."""
    from benchmarks_lib.suites import get_suite

    declared = [get_suite(s) for s in suites]
    keys = dict.fromkeys(k for suite in declared for k in suite.case_keys)
    parts = dict.fromkeys(k for suite in declared for k in suite.iteration_parts)
    return list(keys), list(parts)


def _successful(df: pd.DataFrame) -> pd.DataFrame:
    """The rows with a time from a finished iteration."""
    if "status" not in df or "elapsed_s" not in df:
        return df.iloc[:0]
    return df[(df["status"] == "ok") & df["elapsed_s"].notna()]


def _case_names(rows: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Per row, "k=v, ..." over the key columns it has a value in ("-" for none)."""
    present = [k for k in keys if k in rows]
    if not present or rows.empty:
        return pd.Series("-", index=rows.index, dtype="object")
    # column by column, each distinct value and each distinct row of them named once: a row-wise apply was most of
    # a large comparison's time
    parts = [_named(key, rows[key].tolist()) for key in present]
    joined: dict[tuple[str, ...], str] = {}
    names = [joined.get(row) or joined.setdefault(row, ", ".join(p for p in row if p) or "-")
             for row in zip(*parts, strict=True)]
    return pd.Series(names, index=rows.index, dtype="object")


#: the values whose text and missingness follow from their type and value alone
_BY_VALUE = (str, int, float, np.integer, np.floating, type(None))


def _named(key: str, values: list) -> list[str]:
    """Per value, ``key=value`` as text ('' where it is missing), each distinct value named once."""
    seen: dict[tuple, str] = {}
    out = []
    for v in values:
        memo = (type(v), v) if isinstance(v, _BY_VALUE) else None
        if memo is None or (text := seen.get(memo)) is None:
            text = f"{key}={_text(v)}" if not _missing(v) else ""
            if memo is not None:
                seen[memo] = text
        out.append(text)
    return out


def _case_labels(df: pd.DataFrame, keys: list[str]) -> dict[str, str]:
    """Each case of ``df``'s successful rows ("k=v, ...", as runs are matched) -> the case in words
    (``words.case_text``: ``lz4, 1.05 MB, fsync included``), what a table and a figure show."""
    rows = _successful(df)
    present = [k for k in keys if k in rows]
    if not present or rows.empty:
        return {}
    named = rows.assign(_case=_case_names(rows, keys)).drop_duplicates("_case")
    return {case: case_text(dict(zip(present, values, strict=True)), escape=lambda v: str(_shown_value(v))) or "-"
            for case, *values in named[["_case", *present]].itertuples(index=False)}


def _missing(value: object) -> bool:
    if value is None or (isinstance(value, float) and value != value):  # the common ones, without pandas
        return True
    return not isinstance(value, list | tuple | np.ndarray) and bool(pd.isna(value))


def per_iteration(df: pd.DataFrame, keys: list[str], parts: list[str] = ()) -> pd.DataFrame:
    """One row per (suite, backend, operation, case, iteration) of the successful rows: ``elapsed_s`` is the
    iteration's time, or the median of its parts (frames, steps) where it has several; ``round`` the round it was
    measured in (NaN where the run was not measured in rounds)."""
    rows = _successful(df)
    columns = ["suite", "backend", "operation", "case", "iteration", "elapsed_s", "round"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    rows = rows.assign(suite=rows["suite"].map(lambda v: "-" if _missing(v) else _text(v)) if "suite" in rows
                       else "-", case=_case_names(rows, keys),
                       iteration=rows["iteration"] if "iteration" in rows else range(len(rows)),
                       round=pd.to_numeric(rows["round"], errors="coerce") if "round" in rows else np.nan)
    rows = rows.assign(backend=rows["backend"].astype(str), operation=rows["operation"].astype(str))
    return rows.groupby(columns[:5], sort=True).agg(elapsed_s=("elapsed_s", "median"),
                                                    round=("round", "first")).reset_index()


def key_problems(df: pd.DataFrame, keys: list[str], parts: list[str] = ()) -> list[str]:
    """Why ``keys`` (with suite, backend and operation) do not name the cases of one run's successful rows, one
    sentence per problem: two rows share the key, the iteration and its parts (a parameter that varies is missing
    from the key; the columns that differ between them are named), or the keys split every iteration of one case
    and operation (three or more) into a case of its own (a measured column in the key)."""
    rows = _successful(df)
    if rows.empty:
        return []
    named = rows.assign(case=_case_names(rows, keys), **{p: rows[p].astype("string") for p in parts if p in rows})
    group = ["backend", "operation", "case", "iteration", *(p for p in parts if p in rows)]
    problems = []
    sizes = named.groupby(group, dropna=False).size()
    for where in sizes[sizes > 1].index[:3]:
        same = named.set_index(group).loc[[where]]
        differ = sorted(c for c in same.columns if c not in ("elapsed_s", "gbps", "cpu_s")
                        and same[c].astype(str).nunique() > 1)
        problems.append(f"{len(same)} rows share {dict(zip(group, where, strict=True))}; they differ in {differ}")
    whole = named.assign(case_id=named.get("case_id", "-"))
    for (case_id, operation), its in whole.groupby(["case_id", "operation"]):
        n = its.groupby(["backend", "case"])["iteration"].nunique()
        if its["iteration"].nunique() >= 3 and len(n) >= 3 and (n == 1).all():  # (one position per cutout kind: 2)
            problems.append(f"every key of {operation} in case {case_id} holds one iteration: a key column is measured")
            break
    return problems


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD,
                 versions: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per case in either run (``COLUMNS``): n (iterations) and median time of each, the change B/A with its
    95% interval and the verdict and why (``rules.changes.case_changes``); flagged rows first (``VERDICTS`` order),
    largest change first. Cases are matched by the runs' suites' declared keys and named in words. With
    ``versions`` (backend -> its libraries' version change, :func:`version_changes`), each case that moved names its
    backend's version change (``VERSION_COLUMN``)."""
    suites = sorted({_text(s) for df in (a, b) if "suite" in df for s in _successful(df)["suite"].dropna().unique()})
    keys, parts = declared_keys(suites)
    named = ["suite", "backend", "operation", "case"]
    a_rows, b_rows = ((per_iteration(df, keys, parts).pipe(
        lambda t: pd.DataFrame({"case": list(t[named].itertuples(index=False, name=None)),
                                "value": t["elapsed_s"].astype("float64"), "round": t["round"].astype("float64")})))
        for df in (a, b))
    changes = case_changes(a_rows, b_rows, machine=lambda case: case[0] == CEILING_SUITE, threshold=threshold)
    out = [(*key, c.n_a, c.n_b, c.median_a, c.median_b, c.ratio, c.lo, c.hi, c.verdict, c.why)
           for key, c in sorted(changes.cases.items())]
    table = pd.DataFrame(out, columns=COLUMNS)
    labels = {**_case_labels(a, keys), **_case_labels(b, keys)}
    table["case"] = table["case"].map(lambda case: labels.get(case, case))
    if versions:
        moved = table["verdict"].isin(MOVED)
        table[VERSION_COLUMN] = table["backend"].map(lambda b: versions.get(str(b), "")).where(moved, "")
    order = table["verdict"].map(VERDICTS.index)
    change = -np.abs(np.log(table["B/A time"].astype("float64"))).fillna(0)
    ordered = table.assign(_o=order, _c=change).sort_values(["_o", "_c"], kind="stable").drop(
        columns=["_o", "_c"]).reset_index(drop=True)
    return tables.table(ordered, keys=["backend", "operation", "case"])  # wrapped where wider than the column


def _run_versions(df: pd.DataFrame, meta: Mapping, backend: str) -> dict[str, str | None]:
    """A backend's libraries and their versions in one run: its adapter's distributions as run.json recorded them
    (``version_<name>``), the measured library's as its rows say (``backend_version``) where they do."""
    from benchmarks_lib.adapters import adapter_class

    env = meta.get("environment") or {}
    try:
        cls = adapter_class(backend)
        names = [cls.distribution, *cls.extra_distributions]
    except (SpecError, ImportError):  # not an adapter here (the ceiling, a plug-in not installed)
        cls, names = None, []
    found = {name: env.get(f"version_{name.replace('-', '_')}") for name in names}
    rows = df[df["backend"].astype(str) == backend] if "backend" in df else df.iloc[:0]
    measured = sorted({str(v) for v in rows["backend_version"].dropna()}) if "backend_version" in rows else []
    if measured:
        found[names[0] if names else backend] = ", ".join(measured)
    return {k: None if v is None else str(v) for k, v in found.items()}


def version_changes(a: pd.DataFrame, meta_a: Mapping, b: pd.DataFrame, meta_b: Mapping) -> dict[str, str]:
    """backend -> ``zarr 2.18.7 → 3.1.6`` (each of its libraries whose version differs between the runs, ``;``
    between them), for the backends measured in both runs; record strings (escape them where shown)."""
    backends = sorted({str(x) for df in (a, b) if "backend" in df for x in _successful(df)["backend"].unique()})
    out = {}
    for backend in backends:
        va, vb = _run_versions(a, meta_a, backend), _run_versions(b, meta_b, backend)
        moved = [f"{name} {va.get(name) or 'absent'} → {vb.get(name) or 'absent'}"
                 for name in dict.fromkeys([*va, *vb]) if va.get(name) != vb.get(name)]
        if moved:
            out[backend] = "; ".join(moved)
    return out


def run_drift(table: pd.DataFrame) -> tuple[float, float] | None:
    """``(drift, spread)`` of the cases in both runs (the ceiling's rows are the machine, not cases): the median of
    their log B/A ratios and 1.4826 x the median absolute deviation around it (their own noise and the between-run
    component together); None below ``DRIFT_MIN_CASES`` cases."""
    ratios = table.loc[table["suite"] != CEILING_SUITE, "B/A time"].astype("float64")
    logs = np.log(ratios[np.isfinite(ratios) & (ratios > 0)])
    if len(logs) < DRIFT_MIN_CASES:
        return None
    drift = float(np.median(logs))
    return drift, 1.4826 * float(np.median(np.abs(logs - drift)))


def environment_differences(meta_a: dict, meta_b: dict) -> pd.DataFrame:
    """What differs between two runs' recorded environments (versions, CPU, filesystem, kernel, git commit)
    and their suite, profile and parameters: one row per key, ``key``, ``A``, ``B`` (memory to the GiB)."""
    def flat(meta: dict) -> dict:
        env = {k: v for k, v in (meta.get("environment") or {}).items() if k not in NOT_COMPARED}
        run = {k: meta.get(k) for k in ("suite", "profile")}
        params = {f"params.{k}": v for k, v in (meta.get("params") or {}).items()}
        return {**run, **env, **params}

    def shown(key: str, value: object) -> object:  # short enough that A and B stand side by side in the column
        value = _shown_value(value)
        if key == "git_commit" and isinstance(value, str):
            return value[:12]
        if isinstance(value, str):
            return value.replace(",", ", ").replace(",  ", ", ")  # a dims spec breaks between its axes
        return "[" + ", ".join(map(str, value)) + "]" if isinstance(value, list) else value

    def same(key: str, a: object, b: object) -> bool:  # the memory a kernel reports moves by a few KiB: the GiB
        if key == "ram_bytes" and memory_gib(a) is not None:
            return memory_gib(a) == memory_gib(b)
        return str(a) == str(b)

    fa, fb = flat(meta_a), flat(meta_b)
    rows = [(k, shown(k, fa.get(k)), shown(k, fb.get(k))) for k in dict.fromkeys([*fa, *fb])
            if not same(k, fa.get(k), fb.get(k))]
    unset = "not recorded in that run, or left as None (the default)"
    return tables.table(pd.DataFrame(rows, columns=["key", "A", "B"]), {"A": unset, "B": unset}, keys=["key"])


def _shown_value(value: object) -> object:
    """A recorded value as a page shows it: an absolute path (a mount point, a dataset's ``file:PATH``) as
    ``paths.shown_path`` shows it, never a path of the machine; a list item by item; anything else as it is."""
    if isinstance(value, list | tuple):
        return [_shown_value(v) for v in value]
    if not isinstance(value, str):
        return value
    scheme, path = ("file:", value[5:]) if value.startswith("file:") else ("", value)
    return scheme + shown_path(path) if path.startswith(("/", "~")) or Path(path).is_absolute() else value


__all__ = ["CEILING_SUITE", "COLUMNS", "DEFAULT_THRESHOLD", "DRIFT_MIN_CASES", "FLAGGED", "LABEL_CHARS", "MACHINE",
           "MATCHED_SECTION", "MOVED", "NOT_COMPARED", "NOT_SEPARABLE", "ONE_SIDE", "TOO_FEW", "VERDICTS",
           "VERSION_COLUMN", "WITH_RUN", "bounds", "compare_runs", "declared_keys", "environment_differences", "judge",
           "key_problems", "parse_threshold", "per_iteration", "run_drift", "threshold_words", "verdict",
           "version_changes"]
