"""Comparing runs: the same cases measured twice (a library upgrade, a new disk, another machine).

Cases are matched by suite, backend, operation and their case parameters (``CASE_KEYS`` and the
suite's ``label_keys``). Per matched case, the ratio B/A of the median times comes with a seeded
bootstrap 95% interval over the iterations of each run (``stats.ratio_ci``); a case is called
"faster" or "slower" only when that whole interval lies beyond the threshold (10%: below 1/1.1 or
above 1.1), else "same". What else differs between the runs (library versions, CPU, filesystem,
kernel, git commit) is stated beside the table, since any of it may be the cause.

The interval covers the spread of the iterations within each run, not the drift between two runs of one
machine; with the quick profile's two iterations nothing is judged ("n too small"). Two quick runs of one
commit, each case judged from two iterations, flagged 63 of 287 cases; dividing each time by its own run's
ceiling made that worse (105), since the ceiling is measured as briefly: verdicts need ``MIN_N`` iterations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..records import find_run, load_run, read_run_json, run_dirs
from ..specs import SpecError, parse_items, parse_number
from ..stats import ratio_ci
from .flags import CASE_KEYS
from .markup import md, md_code
from .style import empty_figure, ratio_log_axis, subplots

DEFAULT_THRESHOLD = 0.1
#: iterations a run needs for a verdict: a bootstrap interval over two values is as narrow as they happen to be
#: close, and two quick runs of one commit then flagged a fifth of their cases (63 of 287 here)
MIN_N = 3
#: verdicts in the order a table lists them (flagged first, "same" last)
VERDICTS = ("slower", "faster", "only in A", "only in B", "n too small", "same")
#: environment keys that differ between any two runs without meaning anything
NOT_COMPARED = ("collected_at", "fs_free_bytes")
COLUMNS = ["suite", "backend", "operation", "case", "n A", "n B", "median s A", "median s B", "B/A time",
           "95% CI lo", "95% CI hi", "verdict"]


def parse_threshold(value: object) -> float:
    """The relative change a verdict needs: a number strictly between 0 and 1 (0.1 = 10%)."""
    number = parse_number(value, "threshold", minimum=0.0, maximum=1.0)
    if not 0 < number < 1:
        raise SpecError(f"threshold {number:g} must lie strictly between 0 and 1 (0.1 = 10%)")
    return number


def verdict(lo: float, hi: float, n_a: int, n_b: int, threshold: float = DEFAULT_THRESHOLD) -> str:
    """"slower"/"faster" when the whole interval of B/A lies beyond ``1 +- threshold``, else "same"."""
    if n_a == 0:
        return "only in B"
    if n_b == 0:
        return "only in A"
    if n_a < MIN_N or n_b < MIN_N or not (math.isfinite(lo) and math.isfinite(hi)):
        return "n too small"
    if lo > 1 + threshold:
        return "slower"
    if hi < 1 / (1 + threshold):
        return "faster"
    return "same"


def _label_keys(suite: str) -> tuple[str, ...]:
    from ..suites import get_suite

    try:
        return get_suite(suite).label_keys
    except (SpecError, KeyError, ImportError):
        return ()


def _text(value: object) -> str:
    """A case value as text that is the same in both runs whatever the column's dtype (1.0 and 1 agree)."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | float | np.integer | np.floating):
        return str(int(value)) if float(value).is_integer() else f"{float(value):g}"
    return str(value)


def case_keys(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """The columns that name a case in either run: ``CASE_KEYS`` and the runs' suites' ``label_keys``."""
    suites = sorted({str(s) for df in (a, b) if "suite" in df for s in df["suite"].dropna().unique()})
    candidates = dict.fromkeys([*CASE_KEYS, *(k for s in suites for k in _label_keys(s))])
    return [k for k in candidates if any(k in df and df[k].notna().any() for df in (a, b))]


def _cases(df: pd.DataFrame, keys: list[str]) -> dict[tuple[str, str, str, str], np.ndarray]:
    """(suite, backend, operation, "k=v, ...") -> the elapsed seconds of the successful iterations."""
    rows = df[(df["status"] == "ok") & df["elapsed_s"].notna()] if "status" in df else df.iloc[:0]
    out: dict[tuple[str, str, str, str], np.ndarray] = {}
    if rows.empty:
        return out
    rows = rows.assign(**{k: rows.get(k) for k in ("suite", *keys)})
    names = rows[keys].apply(lambda r: ", ".join(f"{k}={_text(v)}" for k, v in r.items() if not pd.isna(v)),
                             axis=1) if keys else pd.Series("", index=rows.index)
    for (suite, backend, operation, case), part in rows.assign(case=names).groupby(
            ["suite", "backend", "operation", "case"], dropna=False, sort=True):
        key = (_text(suite) if not pd.isna(suite) else "-", str(backend), str(operation), case or "-")
        out[key] = part["elapsed_s"].astype("float64").to_numpy()
    return out


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """One row per case in either run (``COLUMNS``): n and median time of each, the B/A time ratio with its
    bootstrap 95% interval, and the verdict; flagged rows first (``VERDICTS`` order), largest change first."""
    keys = case_keys(a, b)
    ca, cb = _cases(a, keys), _cases(b, keys)
    empty = np.array([], dtype=float)
    out = []
    for key in sorted(set(ca) | set(cb)):
        va, vb = ca.get(key, empty), cb.get(key, empty)
        ratio, lo, hi, n_a, n_b = ratio_ci(va, vb)
        out.append((*key, n_a, n_b, np.median(va) if n_a else np.nan, np.median(vb) if n_b else np.nan,
                    ratio, lo, hi, verdict(lo, hi, n_a, n_b, threshold)))
    table = pd.DataFrame(out, columns=COLUMNS)
    order = table["verdict"].map(VERDICTS.index)
    change = -np.abs(np.log(table["B/A time"].astype("float64"))).fillna(0)
    return table.assign(_o=order, _c=change).sort_values(["_o", "_c"], kind="stable").drop(
        columns=["_o", "_c"]).reset_index(drop=True)


def environment_differences(meta_a: dict, meta_b: dict) -> pd.DataFrame:
    """What differs between two runs' recorded environments (versions, CPU, filesystem, kernel, git commit)
    and their suite, profile and parameters: one row per key, ``key``, ``A``, ``B``."""
    def flat(meta: dict) -> dict:
        env = {k: v for k, v in (meta.get("environment") or {}).items() if k not in NOT_COMPARED}
        run = {k: meta.get(k) for k in ("suite", "profile")}
        params = {f"params.{k}": v for k, v in (meta.get("params") or {}).items()}
        return {**run, **env, **params}

    fa, fb = flat(meta_a), flat(meta_b)
    rows = [(k, fa.get(k), fb.get(k)) for k in dict.fromkeys([*fa, *fb]) if str(fa.get(k)) != str(fb.get(k))]
    return pd.DataFrame(rows, columns=["key", "A", "B"])


def resolve_runs(runs: object = None, results_dir: str | Path | None = None) -> list[Path]:
    """The run directories to compare: ``runs`` (two or more ids or directories, a list or a comma-separated
    string) or, when None, the two newest runs of one suite under ``results_dir`` (older first), or none."""
    if results_dir is None:
        from ..runner import checkout_dirs

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

    @classmethod
    def load(cls, dir_a: str | Path, dir_b: str | Path, threshold: float = DEFAULT_THRESHOLD) -> Comparison:
        (a, meta_a), (b, meta_b) = load_run(dir_a), load_run(dir_b)
        suites = dict.fromkeys([str(meta_a.get("suite")), str(meta_b.get("suite"))])
        return cls(str(meta_a.get("run_id", Path(dir_a).name)), str(meta_b.get("run_id", Path(dir_b).name)),
                   " vs ".join(suites), compare_runs(a, b, threshold), environment_differences(meta_a, meta_b),
                   threshold)

    @property
    def title(self) -> str:
        """Markdown: the suite and the two runs (their ids escaped: they come from the records)."""
        return f"{md(self.suite)}: {md_code(self.run_b)} (B) against {md_code(self.run_a)} (A)"

    @property
    def label(self) -> str:
        """The same as plain text (a figure's title, a terminal)."""
        return f"{self.suite}: {self.run_b} (B) against {self.run_a} (A)"

    def counts(self) -> str:
        """How many cases got each verdict, in one sentence."""
        got = self.table["verdict"].value_counts()
        parts = [f"{int(got[v])} {v}" for v in VERDICTS if v in got]
        return (f"{len(self.table)} case(s): " + ", ".join(parts) + f" (threshold {self.threshold:.0%}, "
                f"judged on the whole 95% interval of the time ratio)") if parts else "No case has a time."

    def flagged(self) -> pd.DataFrame:
        """The rows whose verdict is not "same"."""
        return self.table[self.table["verdict"] != "same"].reset_index(drop=True)


def compare_all(run_dirs_: list[Path], threshold: float = DEFAULT_THRESHOLD) -> list[Comparison]:
    """Every later run compared with the first (the baseline A)."""
    return [Comparison.load(run_dirs_[0], later, threshold) for later in run_dirs_[1:]]


def header(run_dirs_: list[Path], results_dir: str | Path | None) -> str:
    """Markdown: which runs are compared, or why there is nothing to compare."""
    if len(run_dirs_) < 2:
        where = results_dir if results_dir is not None else "the repository's results/"
        return (f"**Nothing to compare**: no suite has two recorded runs under {md_code(where)}. Measure a suite "
                "again (after an upgrade, on another disk) or set `RUNS` to two run ids or directories.")
    lines = ["Compared (A is the baseline, every later run is B):", ""]
    for i, run_dir in enumerate(run_dirs_):
        meta = read_run_json(run_dir / "run.json")
        lines.append(f"- {'A' if i == 0 else 'B'}: {md_code(meta.get('run_id', run_dir.name))}, "
                     f"{md(meta.get('suite'))} suite, {md(meta.get('profile'))} profile, started "
                     f"{md(meta.get('started_at', 'at an unrecorded time'))}")
    return "\n".join(lines)


def environment_markdown(comparison: Comparison) -> str:
    """Markdown: the comparison's title and whether anything recorded about the runs differs."""
    n = len(comparison.environment)
    said = (f"{n} recorded setting(s) differ between the runs (below): any of them may explain a change."
            if n else "Nothing recorded about the machine, the libraries or the parameters differs.")
    return f"**{comparison.title}**\n\n{said}"


def ratio_figure(comparison: Comparison, max_cases: int = 60):
    """The B/A time ratio of each case with its 95% interval, on a log axis, the band of +-threshold shaded;
    flagged cases first (at most ``max_cases``)."""
    rows = comparison.table.dropna(subset=["B/A time"]).head(max_cases)
    if rows.empty:
        return empty_figure(f"time ratio B/A ({comparison.suite})")
    t = comparison.threshold
    fig, ax = subplots(figsize=(7.2, 1.6 + 0.3 * len(rows)))
    labels = (rows["backend"] + " " + rows["operation"] + " " + rows["case"].where(rows["case"] != "-", "")).str.strip()
    y = np.arange(len(rows))
    ratio = rows["B/A time"].to_numpy(dtype=float)
    lo = np.nan_to_num(ratio - rows["95% CI lo"].to_numpy(dtype=float), nan=0.0)
    hi = np.nan_to_num(rows["95% CI hi"].to_numpy(dtype=float) - ratio, nan=0.0)
    ax.axvspan(1 / (1 + t), 1 + t, color="0.85", zorder=0, label=f"within {t:.0%} (same)")
    ax.axvline(1.0, color="0.4", lw=0.8)
    colors = {"slower": "tab:red", "faster": "tab:green"}
    for v in dict.fromkeys(rows["verdict"]):
        m = (rows["verdict"] == v).to_numpy()
        ax.errorbar(ratio[m], y[m], xerr=[lo[m], hi[m]], fmt="o", capsize=3, color=colors.get(v, "tab:gray"),
                    label=v)
    ax.set_yticks(y, labels, fontsize=10)
    ax.invert_yaxis()
    ratio_log_axis(ax, "x")
    ax.set_xlabel("time B / time A (ratio of medians; whiskers: its 95% bootstrap CI)")
    ax.set_title(comparison.label, fontsize=11)
    ax.legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def ratio_figures(comparisons: list[Comparison]) -> list:
    """One ``ratio_figure`` per comparison (a placeholder figure when there is none)."""
    return [ratio_figure(c) for c in comparisons] or [empty_figure("time ratio B/A: nothing to compare")]
