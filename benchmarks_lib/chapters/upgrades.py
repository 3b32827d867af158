"""Upgrades: one workload across library versions, side by side.

The chapter measures the upgrades suite (``suites.upgrades``: the writers' cases, each library at several
versions in environments of its own, measured in the same rounds), or reads the runs it is given (one run of
``iobench run writers --versions ...``, or several runs, one version each), and states, per library, each
operation's time at every version as a ratio of the newest version's, by the book's one rule
(:mod:`benchmarks_lib.rules.upgrades`): the separable changes of 10% or more in words at the top, a figure
(ratio by version and operation) and a table that says which Zarr format each side wrote. Without versions it says
how to measure them. Every string from the runs is escaped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import md, md_code, short
from benchmarks_lib.base.paths import shown_path
from benchmarks_lib.base.specs import SpecError, format_bytes, parse_items, shape_text
from benchmarks_lib.chapters import tables
from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.chapters.common import no_answer, ok_rows, problems, run_header
from benchmarks_lib.chapters.style import empty_figure, legend_outside, ratio_log_axis, subplots
from benchmarks_lib.chapters.tables import duration_text, num3
from benchmarks_lib.records.questions import normalized
from benchmarks_lib.records.store import find_run, load_run, read_run_json, run_dirs
from benchmarks_lib.rules.names import backend_name
from benchmarks_lib.rules.upgrades import (
    MEASURE_COMMAND,
    NOTABLE,
    OPERATIONS,
    Change,
    changes,
    headline,
    version_key,
    versioned,
)
from benchmarks_lib.rules.words import case_text

#: the suites whose runs hold versions: the chapter's own, and the writers' run with ``--versions``
SUITES = ("upgrades", "writers")
#: the newest runs looked at for versions when none are named
LOOK_BACK = 20
COLUMNS = ["library", "operation", "case", "version", "newest", "Zarr format (version → newest)", "time / newest",
           "95% CI lo", "95% CI hi", "n", "rule"]


def resolve_runs(runs: object = None, results_dir: str | Path | None = None) -> list[Path]:
    """The runs to read: the named ones (run ids or directories, read together), or, with None, the newest upgrades
    or writers run under ``results_dir`` whose rows hold a library at more than one version (none: an empty
    list)."""
    from benchmarks_lib.base.paths import checkout_dirs

    base = Path(results_dir) if results_dir is not None else checkout_dirs()[0]
    if runs is not None:
        names = [str(r) for r in parse_items(runs, "RUNS", '["writers-a", "writers-b"]')]
        if not names:
            raise SpecError("RUNS is empty; give run ids or run directories, or None for the newest with versions")
        return [find_run(base, name) for name in names]
    found = [d for d in run_dirs(base) if read_run_json(d / "run.json").get("suite") in SUITES]  # newest first
    for run in found[:LOOK_BACK]:
        if versioned(load_run(run)[0]):
            return [run]
    return []


def load(runs: list[Path]) -> pd.DataFrame:
    """The rows of ``runs`` together (each keeps its ``run_id``: rows of different runs are never paired)."""
    frames = [load_run(run)[0] for run in runs]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def runs_header(runs: list[Path], results_dir: str | Path | None, df: pd.DataFrame) -> str:
    """What was read, then the answer at the top: the separable changes of 10% or more per library and version, or
    that there is none; without versions, the command that measures them."""
    where = ", ".join(md_code(shown_path(r)) for r in runs) or "no run"
    lines = [f"Runs read: {where}."]
    found = changes(df)
    if not found:
        lines += ["", "No library was measured at more than one version in "
                  f"{'these runs' if runs else md_code(shown_path(results_dir or 'results/'))}. "
                  f"Measure versions side by side with {md_code(MEASURE_COMMAND)} (each version in its own "
                  "environment, the same cases in the same rounds), or run the same suite once per version and read "
                  "the runs together."]
        return "\n".join(lines)
    return "\n".join([*lines, "", *_changes(found)])


def _changes(found: list[Change]) -> list[str]:
    """The answer at the top: each separable change of 10% or more, per library and version (Markdown lines)."""
    return [f"Separable changes of {NOTABLE:.0%} or more, from each older version to the newest (the factor and its "
            "95% interval):", "", *(f"- {line}" for line in headline(found, md))]


def header(result) -> str:
    """The run header (the machine, n, what the times include), then the answer at the top: the separable changes
    of 10% or more per library and version, or that there is none."""
    found = changes(result.df)
    top = _changes(found) if found else [f"No library was measured at more than one version in this run: set "
                                         f"`VERSIONS` (or run {md_code(MEASURE_COMMAND)})."]
    return "\n".join([run_header(result, TIMES), "", *top])


def conclusion(df: pd.DataFrame) -> str:
    """The conclusion computed from the run: each library's changes in words (the same as the header's)."""
    found = changes(df)
    return "\n".join(f"- {line}" for line in headline(found, md)) if found else answer(df)


def _number(value: float) -> float:
    return float(value) if np.isfinite(value) else np.nan


def _formats(c: Change) -> str:
    old, new = c.formats
    if not old and not new:
        return "-"
    return f"v{old}" if old == new else f"v{old or '?'} → v{new or '?'}"


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per library, operation, case and older version: its time over the newest's, with the interval, n
    and what the rule says; the Zarr format each side wrote. Its cells are record strings as they are (shown as a
    book table, whose HTML escapes them), in parts that fit the column, the library, operation and case in each."""
    rows = []
    for c in changes(df):
        case = case_text({k: v for k, v in c.key.items() if k != "cutout_kind"}, str) or "-"
        rows.append([c.library, c.what, case, c.version, c.newest, _formats(c),
                     _number(c.ratio.ratio), _number(c.ratio.lo), _number(c.ratio.hi),
                     min(c.ratio.n_a, c.ratio.n_b), c.verdict])
    return tables.table(pd.DataFrame(rows, columns=COLUMNS), keys=["library", "operation", "case"])


def ratio_figure(df: pd.DataFrame):
    """Per library, each operation's time at each older version over the newest's (points, whiskers: the 95%
    interval) on a log axis; the band within 10% shaded. Points, never lines: the x-values are versions."""
    found = changes(df)
    if not found:
        return empty_figure("time at each version / time at the newest", "no library measured at two versions")
    libraries = list(dict.fromkeys(c.library for c in found))
    heights = [len({(c.what, tuple(map(str, c.key.values()))) for c in found if c.library == lib}) for lib in libraries]
    fig, axes = subplots(len(libraries), 1, figsize=(7.2, 1.4 + 0.45 * sum(heights) + 0.6 * len(libraries)),
                         squeeze=False, height_ratios=[h + 1 for h in heights])
    for ax, library in zip(axes[:, 0], libraries, strict=True):
        mine = [c for c in found if c.library == library]
        # a case named by what differs between the library's cases only (the codec and dataset are said once)
        varying = {k for k in {k for c in mine for k in c.key}
                   if len({str(c.key.get(k)) for c in mine}) > 1 and k != "cutout_kind"}

        def label(c: Change, varying=varying) -> str:
            return case_text({k: v for k, v in c.key.items() if k in varying}, str)

        cases = list(dict.fromkeys((c.what, label(c)) for c in mine))
        y_of = {case: i for i, case in enumerate(cases)}
        versions = list(dict.fromkeys(c.version for c in mine))
        ax.axvspan(1 / (1 + NOTABLE), 1 + NOTABLE, color="0.9", zorder=0, label=f"within {NOTABLE:.0%}")
        ax.axvline(1.0, color="0.4", lw=0.8)
        for k, version in enumerate(versions):
            at = [c for c in mine if c.version == version]
            offset = (k - (len(versions) - 1) / 2) * 0.18
            y = np.array([y_of[(c.what, label(c))] + offset for c in at])
            ratio = np.array([c.ratio.ratio for c in at])
            lo = np.nan_to_num(ratio - np.array([c.ratio.lo for c in at]), nan=0.0)
            hi = np.nan_to_num(np.array([c.ratio.hi for c in at]) - ratio, nan=0.0)
            ax.errorbar(ratio, y, xerr=[lo, hi], fmt="o", capsize=3, label=short(f"{version} / {at[0].newest}"))
        whats = [what for what, _ in cases]  # an operation measured on several cases: each named by its case
        ax.set_yticks(range(len(cases)), [short(what if whats.count(what) == 1 or not case else f"{what}, {case}", 60)
                                          for what, case in cases])
        ax.set_ylim(len(cases) - 0.5, -0.5)
        ratio_log_axis(ax, "x")
        ax.set_title(short(backend_name(library)))
        legend_outside(ax, below=True)
    axes[-1, 0].set_xlabel("time at the version / time at the newest (above 1: the newest is faster)")
    fig.tight_layout()
    return fig


def packages(meta: object) -> pd.DataFrame:
    """Every package whose version differs between the environments of one library's versions (``run.json``'s
    ``environments``: what uv installed for each), one row per library and package, the library itself first: its
    version in each environment ("-": not installed there). A change the ratios include beside the library's own
    (numcodecs 0.15.2 beside zarr 2.18.7, 0.16.6 beside 3.1.6). Record strings as they are: a book table escapes
    them."""
    found = meta.get("environments") if isinstance(meta, dict) else None
    by_library: dict[str, list[dict]] = {}
    for env in found.values() if isinstance(found, dict) else ():
        if isinstance(env, dict) and isinstance(env.get("packages"), dict):
            by_library.setdefault(str(env.get("distribution")), []).append(env)
    rows = []
    for library, envs in by_library.items():
        names = sorted({str(n) for e in envs for n in e["packages"]}, key=lambda n: (n != library, n.lower()))
        for name in names:
            at = [str(e["packages"].get(name, "-")) for e in envs]
            if len(set(at)) > 1:
                rows.append([library, name, "; ".join(f"{library} {e.get('version')}: {v}"
                                                      for e, v in zip(envs, at, strict=True))])
    return tables.table(pd.DataFrame(rows, columns=["library", "package", "version in each environment"]),
                        keys=["library", "package"])


#: the parts of a write's timed region, as its rows record them (the write's time is from the first to the last)
PHASES = {"create": "create", "write": "the write calls (encoding, handing the bytes to the OS)",
          "finalize": "finalize", "fsync": "fsync (to the disk)"}
#: a change in time this share of which (or more) is CPU time is "CPU work"; under ``WAITING`` of it, "waiting"
CPU_WORK, WAITING = 0.5, 0.25


def _medians(rows: pd.DataFrame, c: Change, version: str, cases: tuple[str, ...]) -> dict[str, float]:
    """The median wall time, CPU time and bytes (written, or read by a read) of the operation of change ``c`` at
    ``version`` over ``cases`` (its rows of ``c``'s group of equals: a cutout's size and kind), and of each write
    phase (``PHASES``) of a write."""
    operation = c.operation
    # its cases' rows (a record without case ids: the library's)
    ours = rows["case_id"].astype(str).isin(cases) if "case_id" in rows else rows["backend"] == c.library
    mine = rows[ours & (rows["backend_version"].astype(str) == version)]
    for column, value in c.key.items():  # the phases' rows are the same case's, whatever their own columns say
        if column in mine and not pd.isna(value):
            mine = mine[(mine["operation"] != operation) | (mine[column] == value).fillna(False)]

    def median(op: str, column: str) -> float:
        values = pd.to_numeric(mine.loc[mine["operation"] == op, column], errors="coerce") if column in mine else ()
        values = [float(v) for v in values if np.isfinite(v)]
        return float(np.median(values)) if values else float("nan")

    moved = "io_read_bytes" if operation.startswith("read") else "io_write_bytes"
    out = {"wall": median(operation, "elapsed_s"), "cpu": median(operation, "cpu_s"), "bytes": median(operation, moved)}
    if operation == "total":
        out |= {phase: median(phase, "elapsed_s") for phase in PHASES}
    return out


def _cause(old: dict[str, float], new: dict[str, float], reads: bool = False) -> str:
    """Where a change of wall time went, in words: CPU work (CPU time moved by at least half as much, the same way),
    waiting (under a quarter: the disk, fsync, or threads left idle) or both; the write phase that moved most; the
    bytes where they moved by 10% or more."""
    d_wall, d_cpu = new["wall"] - old["wall"], new["cpu"] - old["cpu"]
    if not (np.isfinite(d_wall) and d_wall):
        return "the run cannot tell"
    share = d_cpu / d_wall if np.isfinite(d_cpu) else float("nan")
    parts = [f"wall time {duration_text(old['wall'])} → {duration_text(new['wall'])}"]
    if np.isfinite(share):
        work = "decoding, copying" if reads else "encoding, copying"
        kind = (f"mostly CPU work ({work})" if share >= CPU_WORK else
                "mostly waiting (the disk, fsync, or threads left idle), not CPU work" if abs(share) < WAITING else
                "CPU work and waiting, both")
        parts.append(f"CPU time {duration_text(old['cpu'])} → {duration_text(new['cpu'])}: {kind}")
    else:
        parts.append("no CPU time recorded, so CPU work and waiting are not told apart")
    moved = {p: new[p] - old[p] for p in PHASES if p in old and np.isfinite(new[p] - old[p])}
    if moved:
        phase = max(moved, key=lambda p: abs(moved[p]))
        parts.append(f"most of it in {PHASES[phase]} ({duration_text(old[phase])} → {duration_text(new[phase])})")
    if np.isfinite(old["bytes"]) and np.isfinite(new["bytes"]) and old["bytes"] > 0 and \
            abs(new["bytes"] / old["bytes"] - 1) >= NOTABLE:
        parts.append(f"bytes moved {format_bytes(old['bytes'])} → {format_bytes(new['bytes'])}")
    return "; ".join(parts)


def drivers(df: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """What drives each separable change of 10% or more, where the run can tell: per change a line (wall and CPU
    time at the version and the newest, whether the change is CPU work or waiting, the write phase that moved
    most, the bytes where they moved) and a table of the medians behind it ('' and an empty table: no such
    change). Medians of each side's own rows, not paired: what the rule decided is the change's own line above."""
    found = [c for c in changes(df) if c.notable]
    rows = normalized(df[df["status"] == "ok"] if "status" in df else df)
    lines, table = [], []
    names = {"wall": "wall time", "cpu": "CPU time (all threads)", "bytes": "bytes moved"} | PHASES
    for c in found:
        old, new = (_medians(rows, c, v, ids) for v, ids in zip((c.version, c.newest), c.cases, strict=True))
        lines.append(f"- **{md(backend_name(c.library))}** {md(c.version)} → {md(c.newest)}, {md(c.what)}: "
                     f"{md(_cause(old, new, c.operation.startswith('read')))}.")
        for measure, name in names.items():
            a, b = old.get(measure, np.nan), new.get(measure, np.nan)
            if np.isfinite(a) or np.isfinite(b):
                shown = format_bytes if measure == "bytes" else duration_text
                table.append([backend_name(c.library), c.what, f"{c.version} → {c.newest}", name,
                              shown(a) if np.isfinite(a) else "-", shown(b) if np.isfinite(b) else "-",
                              f"{num3(b / a)}x" if np.isfinite(a) and np.isfinite(b) and a > 0 else "-"])
    frame = pd.DataFrame(table, columns=["library", "test", "versions", "measure", "older", "newest",
                                         "newest / older"])
    return "\n".join(lines), tables.table(frame, keys=["library", "test", "versions"])


def _change_cell(c: Change | None) -> str:
    """One machine's change in a cell: ``2.23x slower [1.9x, 2.6x]``, or the rule's words where it is not
    separable ("-": not measured there)."""
    if c is None:
        return "-"
    if not c.ratio.separable or c.ratio.equivalent:
        return c.verdict
    factor, lo, hi, word = c.factor()
    return f"{num3(factor)}x {word} [{num3(lo)}x, {num3(hi)}x]"


def _machine(meta: dict, df: pd.DataFrame) -> str:
    """A run's machine and sizes in a few words: CPU, cores, the bytes its write measured, its rounds."""
    env = meta.get("environment") if isinstance(meta.get("environment"), dict) else {}
    writes = pd.to_numeric(df.loc[df["operation"] == "total", "nbytes"], errors="coerce").dropna() \
        if {"operation", "nbytes"} <= set(df) else pd.Series(dtype=float)
    rounds = meta.get("rounds", {}).get("rounds") if isinstance(meta.get("rounds"), dict) else None
    cpu = [md(short(str(env["cpu_model"]), 40)) if env.get("cpu_model") else "",
           f"{md(str(env['cpu_count']))} cores" if env.get("cpu_count") else ""]
    parts = [", ".join(p for p in cpu if p),
             f"a write of {format_bytes(float(writes.max()))}" if len(writes) and np.isfinite(writes.max()) else "",
             f"{rounds} rounds" if isinstance(rounds, int) else ""]
    return "; ".join(p for p in parts if p)


def beside_reference(result, reference: str | Path | None = None) -> tuple[str, pd.DataFrame]:
    """This run's changes beside the reference machine's upgrades run (``reference``: a results directory; None:
    the checkout's committed ``reference/``): a line naming both runs (CPU, cores, write size, rounds: what may make
    them differ) and a table, one row per library, test and versions either measured, each machine's change as the
    rule decided it ('' and an empty table: no reference run, or this run is the reference's own)."""
    from benchmarks_lib.base.paths import REFERENCE
    from benchmarks_lib.records.store import newest_runs

    columns = ["library", "test", "versions", "this machine", "reference machine"]
    empty = "", tables.table(pd.DataFrame(columns=columns), keys=["library", "test"])
    theirs = newest_runs(Path(reference) if reference is not None else REFERENCE).get("upgrades")
    here = getattr(result, "path", None)
    if theirs is None or (here is not None and Path(here).resolve() == theirs.resolve()):
        return empty
    ref_df, ref_meta = load_run(theirs)
    mine, ref = changes(result.df), changes(ref_df)
    if not mine and not ref:
        return empty

    def key(c: Change) -> tuple:
        return c.library, c.what, c.version, c.newest

    by_ref, by_mine = {key(c): c for c in ref}, {key(c): c for c in mine}
    order = list(OPERATIONS)
    both = sorted({key(c): c for c in [*ref, *mine]}.values(),
                  key=lambda c: (c.library, order.index(c.operation), c.what, version_key(c.version)))
    rows = [[backend_name(c.library), c.what, f"{c.version} → {c.newest}", _change_cell(by_mine.get(key(c))),
             _change_cell(by_ref.get(key(c)))] for c in both]
    line = (f"The reference machine's run ({md_code(shown_path(theirs))}: {_machine(ref_meta, ref_df)}) beside "
            f"this one ({_machine(result.meta if isinstance(result.meta, dict) else {}, result.df)}). A change that "
            "differs between them may be the machines (CPU, cores, disk), the sizes or chance: each side's interval "
            "says how sure it is.")
    return line, tables.table(pd.DataFrame(rows, columns=columns), keys=["library", "test"])


#: the settings a case of the upgrades suite is measured with, as a reader says them
SETTINGS = {"dataset": "data", "shape": "shape", "nbytes": "bytes", "chunks": "chunks", "codec": "codec",
            "threads": "threads", "zarr_format": "Zarr format", "fsync_included": "fsync in the time"}


def _setting(column: str, value: object) -> str:
    """One recorded setting as a reader says it ("-": not recorded; threads not set: the library's default)."""
    if column in ("shape", "chunks"):
        return shape_text(value, missing="-")
    if not isinstance(value, str | bool | int | float | np.number | np.bool_) or pd.isna(value) or \
            (isinstance(value, float | np.floating) and not np.isfinite(value)):
        return "the library's default" if column == "threads" else "-"
    try:
        if column == "nbytes":
            return format_bytes(float(value))
        if column == "threads":
            return str(int(value))
        if column == "zarr_format":
            return f"v{int(value)}"
    except (TypeError, ValueError, OverflowError):  # a record's column of another type: its text, as it is
        return str(value)
    if column == "fsync_included":
        return "yes" if bool(value) else "no"
    return str(value)


def settings(df: pd.DataFrame) -> pd.DataFrame:
    """What each library was measured with, per test and version: the data, its shape and bytes, the chunks, codec,
    threads, the Zarr format it wrote and whether a write's time includes fsync (every value a test took, where it
    took several). The versions of one library share every setting but the format their defaults write."""
    rows = ok_rows(df) if "status" in df else df.iloc[0:0]
    keep = ["total", "append_total", "read_cold", "read_region_cold"]
    rows = rows[(rows["backend"] != "ceiling") & rows["operation"].isin(keep)] if len(rows) else rows
    if rows.empty or "test" not in rows:
        return tables.table(pd.DataFrame(columns=["library", "test", "versions", *SETTINGS.values()]),
                            keys=["library", "test"])
    out = []
    for (backend, test), part in rows.groupby(["backend", "test"], sort=False, dropna=False):
        found = part.get("backend_version", pd.Series(dtype=object)).dropna()
        versions = ", ".join(sorted({str(v) for v in found}, key=version_key))
        cells = [", ".join(dict.fromkeys(_setting(c, v) for v in part[c])) if c in part else "-" for c in SETTINGS]
        out.append([backend_name(backend), str(test), versions or "-", *cells])
    return tables.table(pd.DataFrame(out, columns=["library", "test", "versions", *SETTINGS.values()]),
                        keys=["library", "test"])


def answer(df: pd.DataFrame) -> str:
    """The front page's sentence: the changes at the top, or how to measure versions."""
    found = changes(df)
    if not found:
        return no_answer("library measured at two versions")
    return " ".join(headline(found, md))


#: what a time includes, as every writers row states it (``total_includes``): the header says it once
TIMES = ("each time is one timed region: a write from its first call to the end of its finalize (and fsync where "
         "the row says so); a cold read after the page cache was evicted and proven")

CHAPTER = Chapter("upgrades", suite="upgrades", order=85, answer=answer, summary=summary, conclusion=conclusion,
                  problems=problems, figures={"Time ratio to the newest version": ratio_figure})

__all__ = ["CHAPTER", "COLUMNS", "OPERATIONS", "PHASES", "SETTINGS", "SUITES", "TIMES", "answer", "beside_reference",
           "conclusion", "drivers", "header", "load", "packages", "problems", "ratio_figure", "resolve_runs",
           "runs_header", "settings", "summary"]
