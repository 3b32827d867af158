"""Comparing runs: the same cases measured twice (a library upgrade, a new disk, another machine). What a
case is and how two runs' cases are judged (``rules.changes``: each case's change with the run-to-run variance, the
run's drift; what else differs): ``cases``;
here, which runs are compared, the comparison of two runs and how the chapter shows it.

Beside the reference machine: where a suite has one run here (a quick book), ``reference_pairs`` sets it beside
the reference's run of that suite (the ``reference/`` committed with the book): A is the reference machine's run,
B this machine's, by the same rule. Such a comparison is across machines (``Comparison.across``: the
reference's CPU from its run.json) and says so in its title and text: every difference between the machines is
part of every ratio. Only the cases both measured are listed (``Comparison.matched``); the cases one machine alone
measured (the reference's other sizes) are counted.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import md, md_code
from benchmarks_lib.base.paths import shown_path
from benchmarks_lib.base.specs import SpecError, parse_items
from benchmarks_lib.chapters import tables
from benchmarks_lib.chapters.chapter import Chapter
from benchmarks_lib.chapters.compare.cases import (  # noqa: F401 - the chapter's names
    CEILING_SUITE,
    COLUMNS,
    DEFAULT_THRESHOLD,
    DRIFT_MIN_CASES,
    FLAGGED,
    LABEL_CHARS,
    MACHINE,
    MATCHED_SECTION,
    MOVED,
    NOT_COMPARED,
    NOT_SEPARABLE,
    ONE_SIDE,
    TOO_FEW,
    VERDICTS,
    VERSION_COLUMN,
    WITH_RUN,
    bounds,
    compare_runs,
    declared_keys,
    environment_differences,
    judge,
    key_problems,
    parse_threshold,
    per_iteration,
    run_drift,
    threshold_words,
    verdict,
    version_changes,
)
from benchmarks_lib.chapters.style import (
    CEILING_LABELS,
    MAX_WIDTH_IN,
    SMALL,
    empty_figure,
    legend_outside,
    ratio_log_axis,
    subplots,
)
from benchmarks_lib.records.store import find_run, load_run, read_run_json, run_dirs


def resolve_runs(runs: object = None, results_dir: str | Path | None = None) -> list[Path]:
    """The run directories to compare: ``runs`` (two or more ids or directories, a list or a comma-separated
    string) or, when None, the two newest runs of one suite under ``results_dir`` (older first), or none."""
    if results_dir is None:
        from benchmarks_lib.base.paths import checkout_dirs

        results_dir = checkout_dirs()[0]
    if runs is not None:
        names = [str(r) for r in parse_items(runs, "RUNS", '["run-a", "run-b"]')]
        if len(names) < 2:
            raise SpecError(f"RUNS {runs!r} names {len(names)} run(s); give two or more to compare")
        return [find_run(results_dir, name) for name in names]
    newest: dict[str, Path] = {}
    for run_dir in run_dirs(results_dir):  # newest first
        suite = str(read_run_json(run_dir / "run.json").get("suite"))
        if suite in newest:
            return [run_dir, newest[suite]]
        newest[suite] = run_dir
    return []


@dataclass(frozen=True)
class Comparison:
    """Run B set beside run A: the case table and the environment differences."""

    run_a: str
    run_b: str
    suite: str
    table: pd.DataFrame
    environment: pd.DataFrame
    threshold: float
    #: the reference machine in words (``machine_text``: plain text from its run.json) where A is the reference
    #: machine's run and B this machine's: a comparison across machines; "" for two runs of one machine
    across: str = ""

    @classmethod
    def load(cls, dir_a: str | Path, dir_b: str | Path, threshold: float = DEFAULT_THRESHOLD,
             across: bool = False) -> Comparison:
        """Run B (``dir_b``) against run A; ``across``: A is the reference machine's run, B this machine's."""
        (a, meta_a), (b, meta_b) = load_run(dir_a), load_run(dir_b)
        suites = dict.fromkeys([str(meta_a.get("suite")), str(meta_b.get("suite"))])
        versions = version_changes(a, meta_a, b, meta_b)
        return cls(str(meta_a.get("run_id", Path(dir_a).name)), str(meta_b.get("run_id", Path(dir_b).name)),
                   " vs ".join(suites), compare_runs(a, b, threshold, versions),
                   environment_differences(meta_a, meta_b), threshold, machine_text(meta_a) if across else "")

    @property
    def title(self) -> str:
        """Markdown: the suite and the two runs (their ids escaped: they come from the records); across machines,
        "this machine against the reference machine (its CPU)"."""
        if self.across:
            return f"{md(self.suite)}: this machine against the reference machine ({md(self.across)})"
        return f"{md(self.suite)}: {md_code(self.run_b)} (B) against {md_code(self.run_a)} (A)"

    @property
    def label(self) -> str:
        """The same as plain text (a figure's title, a terminal)."""
        if self.across:
            return f"{self.suite}: this machine against the reference machine ({self.across})"
        return f"{self.suite}: {self.run_b} (B) against {self.run_a} (A)"

    def counts(self) -> str:
        """How many cases got each verdict, in one sentence; across machines, the cases both machines measured,
        and how many only one of them measured (not compared)."""
        table = self.matched() if self.across else self.table
        got = table["verdict"].value_counts()
        parts = [f"{int(got[v])} {v}" for v in VERDICTS if v in got]
        drift = f"; {moved}" if (moved := self.drift()) else ""
        machine = self.table[self.table["verdict"] == MACHINE]
        if len(machine):
            drift += "; the machine itself moved (its ceiling, no library): " + ", ".join(
                f"{CEILING_LABELS.get(str(op), 'an unknown operation')} {float(r):.3g}x"  # (record text: never shown)
                for op, r in zip(machine["operation"], machine["B/A time"], strict=True))
        both = " measured on both machines" if self.across else ""
        said = (f"{len(table)} case(s){both}: " + ", ".join(parts) + f" (threshold: {threshold_words(self.threshold)}"
                f"; judged on the whole 95% interval of the time ratio){drift}") if parts else \
            ("No case was measured on both machines" if self.across else "No case has a time.")
        if self.across:
            alone = self.table["verdict"].value_counts()
            said += (f"; not compared: {int(alone.get('only in A', 0))} case(s) only the reference machine measured "
                     f"and {int(alone.get('only in B', 0))} only this machine measured (other sizes, codecs or "
                     "settings)")
        return said

    def drift(self) -> str:
        """How the cases measured in both runs moved together: the median of their B/A ratios and the share slower
        in B; where three in four moved one way, that what they share is the first suspect."""
        cases = self.table[self.table["suite"] != CEILING_SUITE]  # the ceiling's rows are the machine, not cases
        ratios = cases["B/A time"].astype("float64").dropna()
        if len(ratios) < DRIFT_MIN_CASES:
            return (f"fewer than {DRIFT_MIN_CASES} cases in both runs: the intervals hold each run's own spread, "
                    "not how cases move between runs" if len(ratios) else "")
        slower, faster = float((ratios > 1).mean()), float((ratios < 1).mean())
        alike = (", most cases moved alike: look first at what they share (the machine's load, clock or caches, "
                 "a library every case uses)") if max(slower, faster) >= 0.75 and not self.across else ""
        spread = run_drift(self.table)
        stray = (f"; single cases strayed from it by {np.expm1(spread[1]):.0%} (robust SD; what of it their own noise "
                 "does not explain is in the intervals of the cases of like duration), and a case moved with the run "
                 "where the drift lies beyond the threshold and the case's change against it does not"
                 if spread else "")
        if self.across:
            return (f"the median time ratio (this machine / the reference machine) of the {len(ratios)} cases both "
                    f"measured is {float(np.median(ratios)):.3g}, {slower:.0%} of them slower on this machine: "
                    f"what the machines as a whole differ by{stray}")
        return (f"the median B/A of the {len(ratios)} cases in both runs is {float(np.median(ratios)):.3g}, "
                f"{slower:.0%} of them slower in B{alike}{stray}")

    def flagged(self) -> pd.DataFrame:
        """The rows that changed or could not be judged (``FLAGGED``); "same", *not separable* and "moved with the
        run" are counted (``counts``), not listed; across machines, only the changes are (the cases one machine alone
        measured are counted, and those with too few iterations are in ``matched``)."""
        flagged = [v for v in FLAGGED if not (self.across and v in (*ONE_SIDE, TOO_FEW))]
        return _reading_order(self.table[self.table["verdict"].isin(flagged)])

    def matched(self) -> pd.DataFrame:
        """The rows of the cases both runs measured (the table a chapter lists across machines, where the cases one
        machine alone measured are only counted: a quick run beside the reference's standard sizes)."""
        return self.table[~self.table["verdict"].isin(ONE_SIDE)].reset_index(drop=True)

    def shown(self) -> pd.DataFrame:
        """The table the chapter lists whole: every case, or across machines the cases both measured."""
        return _reading_order(self.matched() if self.across else self.table)

    def folded(self) -> Folded:
        """The whole table folded under one line (its title and how many cases): opened on a click, so that the
        chapter reads as its flagged cases and figures first, not as pages of rows."""
        shown = self.shown()
        return Folded(f"{self.label} ({len(shown)} case{'s' if len(shown) != 1 else ''}): every case",
                      shown._repr_html_())


@dataclass(frozen=True)
class Folded:
    """HTML folded under a summary line (``<details>``): ``summary`` is text (escaped here), ``body`` HTML made by
    the chapter's tables (which escape every record string)."""

    summary: str
    body: str

    def _repr_html_(self) -> str:
        return f"<details><summary>{html.escape(self.summary)}</summary>{self.body}</details>"


#: the columns of a listed table in the order a reader reads them: the case, its ratio and verdict, then the rest (a
#: table wider than the column is cut into parts, and the first part is the one beside the case)
READING_ORDER = ["backend", "operation", "case", "B/A time", "95% CI lo", "95% CI hi", "verdict", VERSION_COLUMN,
                 "n A", "n B", "median s A", "median s B", "why", "suite"]


def _reading_order(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as a book table in ``READING_ORDER`` (columns it does not name last)."""
    columns = [c for c in READING_ORDER if c in table] + [c for c in table.columns if c not in READING_ORDER]
    return tables.table(table.reset_index(drop=True)[columns], keys=["backend", "operation", "case"])


def compare_all(run_dirs_: list[Path], threshold: float = DEFAULT_THRESHOLD) -> list[Comparison]:
    """Every later run compared with the first (the baseline A)."""
    return [Comparison.load(run_dirs_[0], later, threshold) for later in run_dirs_[1:]]


def machine_text(meta: dict) -> str:
    """The machine a run was measured on, as its run.json states it: its CPU and usable cores (plain text from the
    records: escape it where shown)."""
    env = meta.get("environment") if isinstance(meta.get("environment"), dict) else {}
    cores = env.get("cpu_affinity") or env.get("cpu_count")
    return f"{env.get('cpu_model') or 'CPU not recorded'}" + (f", {cores} usable cores" if cores else "")


#: (the reference machine's run, this machine's run) of one suite
RunPair = tuple[Path, Path]


def reference_pairs(results_dir: str | Path | None = None, reference: str | Path | None = None) -> list[RunPair]:
    """Per suite with a finished run under ``results_dir`` and one under ``reference`` (None: the checkout's
    committed ``reference/``; "": none), in the chapters' order: (the reference's newest run, the newest run here),
    the runs the front page sets side by side. Empty where ``reference`` is ``results_dir`` itself (a book drawn from
    the reference) or does not exist."""
    from benchmarks_lib.base.paths import REFERENCE, checkout_dirs
    from benchmarks_lib.chapters.chapter import chapters
    from benchmarks_lib.records.store import newest_runs

    if reference is not None and not str(reference):  # "": no reference
        return []
    results = Path(results_dir) if results_dir is not None else checkout_dirs()[0]
    reference = Path(reference) if reference is not None else REFERENCE
    if not reference.is_dir() or not results.is_dir() or reference.resolve() == results.resolve():
        return []
    theirs, mine = newest_runs(reference), newest_runs(results)
    order = {c.suite: c.order for c in chapters() if c.suite}
    return [(theirs[s], mine[s]) for s in sorted(set(theirs) & set(mine), key=lambda s: (order.get(s, 999), s))
            if theirs[s].resolve() != mine[s].resolve()]


def compare_reference(pairs: list[RunPair], threshold: float = DEFAULT_THRESHOLD) -> list[Comparison]:
    """Each of ``reference_pairs`` as a comparison across machines (A: the reference machine's run)."""
    return [Comparison.load(ref, mine, threshold, across=True) for ref, mine in pairs]


def _short_run(run_dir: Path) -> str:
    """A run in a few words: its id and profile."""
    meta = read_run_json(run_dir / "run.json")
    return f"{md_code(meta.get('run_id', run_dir.name))} ({md(meta.get('profile'))} profile)"


def _run_line(run_dir: Path) -> str:
    meta = read_run_json(run_dir / "run.json")
    return (f"{md_code(meta.get('run_id', run_dir.name))}, {md(meta.get('suite'))} suite, {md(meta.get('profile'))} "
            f"profile, started {md(meta.get('started_at', 'at an unrecorded time'))}")


def header(run_dirs_: list[Path], results_dir: str | Path | None, beside: list[RunPair] | None = None) -> str:
    """Markdown: which runs are compared (``run_dirs_``: runs of this machine; ``beside``: ``reference_pairs``, each
    suite's run here against the reference machine's), or why there is nothing to compare."""
    lines = []
    if len(run_dirs_) >= 2:
        lines += ["Compared (A is the baseline, every later run is B):", ""]
        lines += [f"- {'A' if i == 0 else 'B'}: {_run_line(run_dir)}" for i, run_dir in enumerate(run_dirs_)]
    if beside:
        machines = ", ".join(md(m) for m in dict.fromkeys(machine_text(read_run_json(ref / "run.json"))
                                                           for ref, _ in beside))
        where = md_code(shown_path(beside[0][0].parent.parent) + "/")
        lines += ["",
                  f"**This machine against the reference machine ({machines})**: each suite's newest run here (B) "
                  f"against the reference run of that suite committed with the book in {where} (A), over the cases "
                  "both measured. **Two machines**: every difference between them (*What differs between the runs*) "
                  "is part of every ratio, and no row of one run is paired with a row of the other (each case's "
                  "interval is that of two runs).", ""]
        lines += [f"- {_short_run(mine)} (B) against {_short_run(ref)} (A)" for ref, mine in beside]
    if lines:
        return "\n".join(lines).strip("\n")
    from benchmarks_lib.base.paths import REFERENCE

    if results_dir is not None and Path(results_dir).resolve() == REFERENCE.resolve():
        return (f"**Nothing to compare**: this book is drawn from the reference run itself ({md_code('reference/')}), "
                "one run per suite, and the book keeps no earlier reference to set it beside (a new reference "
                "replaces the old one). Built on your machine (`make book`), this chapter sets your runs beside this "
                "reference, case by case.")
    where = shown_path(results_dir) if results_dir is not None else "the repository's results/"
    return (f"**Nothing to compare**: no suite has two recorded runs under {md_code(where)}, and no reference run "
            "is there to set them beside. Measure a suite again (after an upgrade, on another disk) or set `RUNS` to "
            "two run ids or directories.")


def environment_markdown(comparison: Comparison) -> str:
    """Markdown: the comparison's title and whether anything recorded about the runs differs."""
    n = len(comparison.environment)
    if comparison.across:
        said = (f"{n} recorded setting(s) differ between the two machines' runs (below): across machines, every one "
                "of them is part of every ratio." if n else "Nothing recorded about the two machines differs.")
    else:
        said = (f"{n} recorded setting(s) differ between the runs (below): any of them may explain a change."
                if n else "Nothing recorded about the machine, the libraries or the parameters differs.")
    return f"**{comparison.title}**\n\n{said}"


#: the most lines a case's label takes in a figure (a real case needs up to three)
LABEL_LINES = 3


def ratio_figure(comparison: Comparison, max_cases: int = 30):
    """The change B/A of each case (``rules.changes``: exp of the difference of mean log times, its 95% interval of
    the same quantity), on a log axis, the band of "same" shaded; flagged cases first (at most ``max_cases``)."""
    rows = comparison.table.dropna(subset=["B/A time"]).head(max_cases)
    if rows.empty:
        return empty_figure(f"time ratio B/A ({comparison.suite})")
    down, up = bounds(comparison.threshold)
    named = rows["backend"] + " " + rows["operation"] + " " + rows["case"].where(rows["case"] != "-", "")
    labels = [textwrap.fill(text, LABEL_CHARS, break_on_hyphens=False, max_lines=LABEL_LINES, placeholder=" …")
              for text in named.str.strip()]  # a label of more lines is cut: the table below has it whole
    lines = sum(label.count("\n") + 1 for label in labels)  # a long case label wraps: its row takes its lines
    fig, ax = subplots(figsize=(MAX_WIDTH_IN, 2.2 + 0.17 * lines + 0.1 * len(rows)))
    y = np.arange(len(rows))
    ratio = rows["B/A time"].to_numpy(dtype=float)
    lo = np.nan_to_num(ratio - rows["95% CI lo"].to_numpy(dtype=float), nan=0.0)
    hi = np.nan_to_num(rows["95% CI hi"].to_numpy(dtype=float) - ratio, nan=0.0)
    ax.axvspan(down, up, color="0.85", zorder=0, label=f"within {down:.3g}-{up:.3g} (same)")
    ax.axvline(1.0, color="0.4", lw=0.8)
    colors = {"slower": "tab:red", "faster": "tab:green", WITH_RUN: "tab:blue", MACHINE: "tab:purple",
              NOT_SEPARABLE: "tab:orange"}
    for v in dict.fromkeys(rows["verdict"]):
        m = (rows["verdict"] == v).to_numpy()
        ax.errorbar(ratio[m], y[m], xerr=[lo[m], hi[m]], fmt="o", capsize=3, color=colors.get(v, "tab:gray"),
                    label=v)
    ax.set_yticks(y, labels, fontsize=SMALL)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first case on top, no empty rows around them
    ratio_log_axis(ax, "x")
    ax.set_xlabel(("time here / time on the reference machine" if comparison.across else "time B / time A")
                  + "\n(the change: exp of the mean log-time difference; whiskers: its 95% interval)")
    height = fig.get_size_inches()[1]  # the title over the whole figure (the labels take its left), 0.6 in kept for it
    fig.suptitle(textwrap.fill(comparison.label, 90, max_lines=2, placeholder=" …"), fontsize=11,
                 y=1 - 0.1 / height, va="top")
    legend_outside(ax, below=True)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / height))
    return fig


def ratio_figures(comparisons: list[Comparison]) -> list:
    """One ``ratio_figure`` per comparison (none: nothing is shown, and the book leaves the section out)."""
    return [ratio_figure(c) for c in comparisons]


CHAPTER = Chapter("compare", title="Comparing runs", order=90, answer="This chapter measures nothing: it sets two "
                  "recorded runs of a suite side by side, case by case, and this machine's runs against the reference "
                  "machine's.")
