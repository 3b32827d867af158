"""Comparing runs: the same cases measured twice (a library upgrade, a new disk, another machine).

A case is its suite, backend, operation and the suite's declared ``case_keys`` (every parameter that varies
within a run: parallel W, the Zarr client cache, the S3 link's latency, ...; ``key_problems`` is what a test
holds each suite's declaration to). Its value per iteration is the iteration's time; where one iteration has
parts (``iteration_parts``: the frames and steps of one append repeat) the median part is that iteration's
value, so 64 frames of one repeat count as n=1 (the sum of the parts is the repeat's own ``append_total`` row).

Per matched case, ``stats.two_sample`` gives the ratio B/A of the median times with its distribution-free 95%
interval (Hodges-Lehmann, exact Mann-Whitney bounds; the rows of two runs are not paired, so the two-sample rule).
The threshold is a factor either way (10%: 1.1 and 1/1.1 = 0.909), and a verdict needs the whole interval: "slower"
when it lies above 1.1, "faster" when below 1/1.1, "same" when it lies within [1/1.1, 1.1] (a change smaller than
the threshold, even where the interval excludes 1), and "not separable" when it reaches both inside and outside
that band (0.79 [0.60, 0.92]: 8% to 40% less time, within the threshold or beyond it); "too few iterations" below
``stats.MIN_RANK_N`` a side. Identical cases are flagged at most at the test's level (5%). Each row says why
(``why``). What else differs between the runs (library versions, CPU, filesystem, kernel, git commit) is stated
beside the table, since any of it may be the cause.

The interval covers the spread of the iterations within each run, not how a case moves between two runs of one
machine. Where both runs share ``DRIFT_MIN_CASES`` cases or more, that is measured from the cases themselves: the
run's common drift (the median log ratio) and how far single cases stray from it (1.4826 x the median absolute
deviation of the log ratios). A case is then "slower" or "faster" only when its interval also lies beyond the
drift by more than the threshold and by ``SPREAD_K`` times that stray (the drift gate); a case the gate absorbs is
"moved with the run", and its row says which way its own interval pointed and the run's drift (a new disk that
makes every case 2x faster reads: every case moved with the run, whose median B/A is 0.5). The gate only absorbs:
"same" and "not separable" are judged against 1, not against the drift. On this 2-core VM, A/A runs (one commit
measured four times, six pairs of 56 cases) flagged 4-130 of 336 cases on the interval and the threshold alone
(the host once slowed a whole run 1.31x, tiny cases more than others), 1-2 with the drift.

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

from benchmarks_lib.base.paths import shown_path
from benchmarks_lib.base.specs import SpecError, parse_number
from benchmarks_lib.base.stats import MIN_RANK_N, TwoSample, two_sample
from benchmarks_lib.chapters import tables
from benchmarks_lib.rules.words import case_text

DEFAULT_THRESHOLD = 0.1
TOO_FEW = "too few iterations"
#: neither beyond the threshold nor within it: the interval reaches both sides of one of its bounds
NOT_SEPARABLE = "not separable"
#: cases in both runs from which their common drift (the median B/A) is stated
DRIFT_MIN_CASES = 10
#: how many robust standard deviations of the cases' log ratios around the drift a case must lie beyond
SPREAD_K = 3.0
WITH_RUN = "moved with the run"
#: the verdict of a ceiling row (the machine's raw write, read and memcpy, no library) beyond the threshold: the
#: machine itself moved, which may explain a case that moved with it; context, not a change of a case
MACHINE = "ceiling moved"
#: the suite whose rows are the machine's own ceilings (every run measures them)
CEILING_SUITE = "ceiling"
#: a ratio figure's case label wraps at this many characters (the axes keep most of the column's width)
LABEL_CHARS = 42
#: verdicts in the order a table lists them (flagged first, "same" last)
VERDICTS = ("slower", "faster", MACHINE, WITH_RUN, "only in A", "only in B", TOO_FEW, NOT_SEPARABLE, "same")
#: the verdicts ``Comparison.flagged`` lists: a change, or a case that could not be judged
FLAGGED = ("slower", "faster", "only in A", "only in B", TOO_FEW)
#: the verdicts of a case one run alone measured
ONE_SIDE = ("only in A", "only in B")
#: environment keys that differ between any two runs without meaning anything
NOT_COMPARED = ("collected_at", "fs_free_bytes")
#: the verdicts of a case that moved, beside which its backend's version change is named
MOVED = ("slower", "faster", MACHINE, WITH_RUN)
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


def bounds(threshold: float) -> tuple[float, float]:
    """The band of "same" for a threshold stated as a factor either way: ``(1 / (1 + t), 1 + t)``."""
    return 1 / (1 + threshold), 1 + threshold


def threshold_words(threshold: float) -> str:
    """The threshold as the factor it is: "a factor of 1.1 either way, 0.909-1.1"."""
    down, up = bounds(threshold)
    return f"a factor of {up:.3g} either way, {down:.3g}-{up:.3g}"


def judge(result: TwoSample, threshold: float = DEFAULT_THRESHOLD) -> tuple[str, str]:
    """``(verdict, why)`` of B against A on the whole interval of B/A and the band ``bounds(threshold)``: "slower"
    above it, "faster" below it, "same" within it, "not separable" when the interval reaches both inside and outside
    it; "too few iterations" below ``stats.MIN_RANK_N`` a side (or without an interval)."""
    if result.n_a == 0:
        return "only in B", "not measured in A"
    if result.n_b == 0:
        return "only in A", "not measured in B"
    if result.separable is None:
        return TOO_FEW, f"n={result.n_a} and {result.n_b}: {MIN_RANK_N} a side needed"
    down, up = bounds(threshold)
    if result.lo > up:
        return "slower", f"whole interval above {up:.3g}"
    if result.hi < down:
        return "faster", f"whole interval below {down:.3g}"
    if down <= result.lo and result.hi <= up:
        return "same", f"whole interval within {down:.3g}-{up:.3g}"
    return NOT_SEPARABLE, f"interval partly within, partly beyond {down:.3g}-{up:.3g}"


def verdict(result: TwoSample, threshold: float = DEFAULT_THRESHOLD) -> str:
    """The verdict of :func:`judge`."""
    return judge(result, threshold)[0]


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
    return rows[present].apply(lambda r: ", ".join(f"{k}={_text(v)}" for k, v in r.items() if not _missing(v))
                               or "-", axis=1)


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
    return value is None or (not isinstance(value, list | tuple | np.ndarray) and bool(pd.isna(value)))


def per_iteration(df: pd.DataFrame, keys: list[str], parts: list[str] = ()) -> pd.DataFrame:
    """One row per (suite, backend, operation, case, iteration) of the successful rows: ``elapsed_s`` is the
    iteration's time, or the median of its parts (frames, steps) where it has several."""
    rows = _successful(df)
    columns = ["suite", "backend", "operation", "case", "iteration", "elapsed_s"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    rows = rows.assign(suite=rows["suite"].map(lambda v: "-" if _missing(v) else _text(v)) if "suite" in rows
                       else "-", case=_case_names(rows, keys),
                       iteration=rows["iteration"] if "iteration" in rows else range(len(rows)))
    rows = rows.assign(backend=rows["backend"].astype(str), operation=rows["operation"].astype(str))
    return (rows.groupby(columns[:-1], sort=True)["elapsed_s"].median().reset_index())


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
    """One row per case in either run (``COLUMNS``): n (iterations) and median time of each, the B/A time ratio
    with its 95% interval (``stats.two_sample``), the verdict and why (:func:`judge`, then the drift gate); flagged
    rows first (``VERDICTS`` order), largest change first. Cases are matched by the runs' suites' declared keys and
    named in words. With ``versions`` (backend -> its libraries' version change, :func:`version_changes`), each case
    that moved names its backend's version change (``VERSION_COLUMN``)."""
    suites = sorted({_text(s) for df in (a, b) if "suite" in df for s in _successful(df)["suite"].dropna().unique()})
    keys, parts = declared_keys(suites)
    values = {}
    for side, df in (("a", a), ("b", b)):
        for case, part in per_iteration(df, keys, parts).groupby(["suite", "backend", "operation", "case"]):
            values.setdefault(case, {})[side] = part["elapsed_s"].to_numpy(dtype="float64")
    empty = np.array([], dtype=float)
    out = []
    for case in sorted(values):
        va, vb = values[case].get("a", empty), values[case].get("b", empty)
        result = two_sample(va, vb)
        out.append((*case, result.n_a, result.n_b, np.median(va) if va.size else np.nan,
                    np.median(vb) if vb.size else np.nan, result.ratio, result.lo, result.hi,
                    *judge(result, threshold)))
    table = _the_machine(_against_the_run(pd.DataFrame(out, columns=COLUMNS), threshold))
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
    their log B/A ratios and 1.4826 x the median absolute deviation around it; None below ``DRIFT_MIN_CASES``
    cases."""
    ratios = table.loc[table["suite"] != CEILING_SUITE, "B/A time"].astype("float64")
    logs = np.log(ratios[np.isfinite(ratios) & (ratios > 0)])
    if len(logs) < DRIFT_MIN_CASES:
        return None
    drift = float(np.median(logs))
    return drift, 1.4826 * float(np.median(np.abs(logs - drift)))


def _against_the_run(table: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The drift gate: a "slower"/"faster" case whose interval does not also lie beyond the run's common drift (by
    the threshold and by ``SPREAD_K`` times the cases' stray around it) is "moved with the run"; each judged row's
    ``why`` says so, with the drift and the gate."""
    measured = run_drift(table)
    if measured is None:
        return table
    drift, spread = measured
    gate = max(np.log1p(threshold), SPREAD_K * spread)
    lo = np.log(table["95% CI lo"].astype("float64")) - drift
    hi = np.log(table["95% CI hi"].astype("float64")) - drift
    changed = table["verdict"].isin(["slower", "faster"])
    moved = changed & ~((lo > gate) | (hi < -gate))
    run = f"the run's drift ({np.exp(drift):.3g}) by a factor of {np.exp(gate):.3g}"
    why = table["why"].where(~changed, table["why"] + f", and beyond {run}")
    why = why.where(~moved, table["verdict"] + f" on its own interval; drift gate: not beyond {run}")
    return table.assign(verdict=table["verdict"].where(~moved, WITH_RUN), why=why)


def _the_machine(table: pd.DataFrame) -> pd.DataFrame:
    """A ceiling row that is "slower" or "faster" says the machine itself moved (``MACHINE``): the raw write, read
    or memcpy of the same bytes, no library, whose speed on one machine varies between runs (see the module's
    docstring); its row says which way, and that cases using the same resource may have moved with it."""
    ceiling = (table["suite"] == CEILING_SUITE) & table["verdict"].isin(["slower", "faster"])
    why = table["verdict"] + " (" + table["why"] + "): the machine's own ceiling, no library; cases using the same " \
        "resource may have moved with it"
    return table.assign(verdict=table["verdict"].where(~ceiling, MACHINE), why=table["why"].where(~ceiling, why))


def environment_differences(meta_a: dict, meta_b: dict) -> pd.DataFrame:
    """What differs between two runs' recorded environments (versions, CPU, filesystem, kernel, git commit)
    and their suite, profile and parameters: one row per key, ``key``, ``A``, ``B``."""
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

    fa, fb = flat(meta_a), flat(meta_b)
    rows = [(k, shown(k, fa.get(k)), shown(k, fb.get(k))) for k in dict.fromkeys([*fa, *fb])
            if str(fa.get(k)) != str(fb.get(k))]
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
           "MATCHED_SECTION", "MOVED", "NOT_COMPARED", "NOT_SEPARABLE", "ONE_SIDE", "SPREAD_K", "TOO_FEW", "VERDICTS",
           "VERSION_COLUMN", "WITH_RUN", "bounds", "compare_runs", "declared_keys", "environment_differences", "judge",
           "key_problems", "parse_threshold", "per_iteration", "run_drift", "threshold_words", "verdict",
           "version_changes"]
