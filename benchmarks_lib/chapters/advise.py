"""The book's advise page (``notebooks/advise.ipynb``): ``iobench advise``'s answer for a workload given as notebook
parameters, with the table of its candidates and the trade-off between time per access, files on disk and
compression ratio.

The answer is the command's own (:func:`.advise_command.answer`: the same evidence, the same lines); this module only
reads the notebook's parameters (data, validated here before anything runs: a bad one is one ``SpecError`` line that
names the parameter) and shows what the answer holds. The page's default workload is the one the quick writers run
answers (its sharding test's cutouts of the ``labels`` cube), so the book draws it from that run without measuring.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks_lib.advise.command import Advice, answer
from benchmarks_lib.advise.evidence import Workload, parse_budget, parse_workload
from benchmarks_lib.base.specs import SpecError, parse_bool, parse_run_id
from benchmarks_lib.chapters.chapter import Chapter

if TYPE_CHECKING:
    import pandas as pd

#: the workload when neither LIKE nor SHAPE and DTYPE are given: the quick writers run's sharding cube (``labels``)
DEFAULT_SHAPE, DEFAULT_DTYPE, DEFAULT_ACCESS = "256,256,256", "uint32", "cutout:32,32,32"
#: the command's options as the notebook names them (the library's messages name the options)
PARAMETERS = {"--like": "LIKE", "--shape": "SHAPE", "--dtype": "DTYPE", "--access": "ACCESS", "--threads": "THREADS",
              "--budget": "BUDGET", "--measure": "MEASURE True", "--run-id": "MEASURE_RUN_ID",
              "--results-dir": "RESULTS_DIR", "--fsync": "FSYNC True", "--no-fsync": "FSYNC False"}
_OPTION = re.compile(r"--[a-z][a-z-]*")
#: how each access pattern's time is named on the page
TIMES = {"cutout": "time per cutout", "full-read": "time per full read", "write": "time per write",
         "append": "time per append"}


def _text(value: object, name: str, example: str) -> str | None:
    """A parameter given as text (a number, or a list of numbers, as ``papermill -p``/``-y`` may pass it)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list | tuple) and value and all(isinstance(v, int) and not isinstance(v, bool)
                                                         for v in value):
        return ",".join(map(str, value))
    raise SpecError(f"{name} {value!r} is not allowed; e.g. {name} = {example}")


def _in_notebook_terms(exc: SpecError) -> SpecError:
    """The library's message with each command-line option named as the notebook's parameter."""
    return SpecError(_OPTION.sub(lambda m: PARAMETERS.get(m[0], m[0]), str(exc)))


@dataclass
class Settings:
    """The page's parameters, validated: the workload, the budget, where runs are read (and a measured one goes)."""

    workload: Workload
    budget_s: float
    dirs: list[Path]
    measure: bool
    run_id: str | None
    scratch_dir: Path | None


def settings(like: object = None, shape: object = None, dtype: object = None, access: object = DEFAULT_ACCESS,
             fsync: object = True, threads: object = None, measure: object = False, budget: object = "3m",
             results_dir: object = None, other_dirs: object = None, run_id: object = None) -> Settings:
    """The notebook's parameters read as the command reads its options (:func:`.advise.parse_workload`), before
    anything runs; a SpecError naming the parameter for a bad one."""
    from benchmarks_lib.base.paths import SCRATCH_ENV, checkout_dirs
    from benchmarks_lib.chapters.explore import results_dirs

    try:
        like = _text(like, "LIKE", '"/data/stack.zarr"')
        shape, dtype = _text(shape, "SHAPE", '"512,512,512"'), _text(dtype, "DTYPE", '"uint16"')
        if like is None and shape is None and dtype is None:
            shape, dtype = DEFAULT_SHAPE, DEFAULT_DTYPE
        access = _text(access, "ACCESS", '"cutout:64,64,64"')
        if access is None:
            raise SpecError(f"ACCESS None is not allowed; e.g. ACCESS = {DEFAULT_ACCESS!r}")
        workload = parse_workload(like, shape, dtype, access, parse_bool(fsync, "FSYNC"),
                                  _text(threads, "THREADS", "8"))
        budget_s = parse_budget(_text(budget, "BUDGET", '"3m"'))
        measure = parse_bool(measure, "MEASURE")
        if run_id is not None and not measure:
            raise SpecError(f"MEASURE_RUN_ID {run_id!r} names the run MEASURE True makes; set MEASURE = True too")
        run_id = None if run_id is None else parse_run_id(run_id)
        if results_dir is not None and not isinstance(results_dir, str | Path):
            raise SpecError(f"RESULTS_DIR {results_dir!r} is not a directory's path")
        dirs = results_dirs(results_dir, other_dirs)
    except SpecError as exc:
        raise _in_notebook_terms(exc) from None
    scratch = checkout_dirs()[1] if results_dir is None and SCRATCH_ENV not in os.environ else None
    return Settings(workload, budget_s, dirs, measure, run_id, scratch)


@dataclass
class AdvicePage:
    """What the page shows: the command's answer and where it was looked for."""

    settings: Settings
    answer: Advice

    @property
    def workload(self) -> Workload:
        return self.answer.workload

    def header(self) -> str:
        """Markdown: where the answer comes from, whether that is the reader's data, and the book's answer to the
        same question from the same run (:meth:`book_answer`)."""
        from benchmarks_lib.base.markup import md, md_code
        from benchmarks_lib.base.paths import shown_path

        s, evidence = self.settings, self.answer.evidence
        where = ", ".join(md_code(shown_path(d)) for d in s.dirs)
        lines = [f"Measured for this page within a budget of {s.budget_s:.0f} s, then answered from that run."
                 if s.measure else f"Answered from the runs recorded in {where}; nothing is measured."]
        if evidence is None:
            lines.append("**No recorded run covers this workload.** Set `LIKE` to your file and `MEASURE` to `True` "
                         "to measure it within `BUDGET`.")
        elif not evidence.own_data:
            dataset = md(evidence.rows["dataset"].iloc[0])
            mine = (" No recorded run measured your file: set `MEASURE` to `True` to measure it within `BUDGET`."
                    if self.workload.like else " Set `LIKE` to your file and `MEASURE` to `True` to measure yours "
                    "within `BUDGET`.")
            lines.append(f"**The evidence is synthetic data** (dataset {dataset}), not yours: it answers for data of "
                         f"this shape and type, not for how well your data compresses.{mine}")
        if (found := self.book_answer()) is not None:
            from benchmarks_lib.rules.words import verdict_line

            lines.append(f"**The book's answer** from the same run (its front page and chapter say the same): "
                         f"{verdict_line(found)}.")
        return "\n\n".join(lines)

    def book_answer(self):
        """The book's answer (:func:`benchmarks_lib.rules.answers.answer`) to the question the evidence's rows
        ask of their run: sharding for cutouts of the sharding sweep, the writers' write, append, cold full read or
        cutouts of a kind; None for another run (remote reads), without evidence, or where the book's pick rests on
        other rows (another dtype or cutout size of the same run)."""
        from benchmarks_lib.rules.answers import answer as question_answer

        evidence = self.answer.evidence
        if evidence is None or evidence.meta.get("suite") != "writers":
            return None
        first = evidence.rows.iloc[0]
        key = {"total": "write", "append_total": "append", "read_cold": "cold-read"}.get(str(first["operation"]))
        if first["test"] == "sharding":
            key = "sharding"
        elif key is None and first.get("cutout_kind") in ("aligned", "unaligned"):
            key = f"cutouts-{first['cutout_kind']}"
        found = None if key is None else question_answer(key, evidence.run_rows, evidence.meta)
        pick = None if found is None else found.pick_entry
        return found if pick is not None and set(pick.rows.index) <= set(evidence.rows.index) else None

    def answer_markdown(self) -> str:
        """Markdown: the command's lines, word for word (each escaped): a line that opens a block as a paragraph
        (its label, or the whole line where it ends with a colon, in bold), the indented lines under it as a list."""
        from benchmarks_lib.base.markup import md

        blocks: list[list[str]] = []
        for line in self.answer.lines:
            if line.startswith(" ") and blocks:
                blocks[-1].append(f"- {md(line.strip())}")
                continue
            label, sep, rest = line.partition(": ")
            blocks.append([f"**{md(line)}**" if line.endswith(":") else
                           f"**{md(label)}:** {md(rest)}" if sep and len(label) <= 40 else md(line)])
        return "\n\n".join(head + ("\n\n" + "\n".join(items) if items else "") for head, *items in blocks)

    def candidates(self) -> pd.DataFrame:
        """Every candidate of the answer, best median first (:func:`candidate_frame`); empty without evidence."""
        return candidate_frame(self.answer)

    def table(self):
        """The candidates as the book shows a table (:func:`candidate_table`)."""
        return candidate_table(self.candidates(), self.workload)

    def figure(self):
        """The trade-off (:func:`tradeoff_figure`)."""
        return tradeoff_figure(self.candidates(), self.workload)


def page(like: object = None, shape: object = None, dtype: object = None, access: object = DEFAULT_ACCESS,
         fsync: object = True, threads: object = None, measure: object = False, budget: object = "3m",
         results_dir: object = None, other_dirs: object = None, run_id: object = None, progress=None) -> AdvicePage:
    """The notebook's one call: its parameters validated (:func:`settings`), then the command's answer
    (:func:`.advise_command.answer`), measured first with ``measure``."""
    s = settings(like, shape, dtype, access, fsync, threads, measure, budget, results_dir, other_dirs, run_id)
    try:
        found = answer(s.workload, s.budget_s, s.dirs, s.measure, s.run_id, s.scratch_dir, progress)
    except SpecError as exc:
        raise _in_notebook_terms(exc) from None
    return AdvicePage(s, found)


# -- the candidates and the trade-off -----------------------------------------------------------------------------
def _raw_bytes(row) -> float:
    """The array's bytes uncompressed (its shape times its dtype's size), NaN where a record does not say."""
    import numpy as np

    try:
        return float(np.prod([int(v) for v in row["shape"]])) * np.dtype(str(row["dtype"])).itemsize
    except (KeyError, TypeError, ValueError):
        return math.nan


def candidate_frame(found: Advice) -> pd.DataFrame:
    """One row per candidate of the answer's ranking, best median first: its writer, codec, chunks and shards, the
    ranked value (median, 95% interval, n; its factor to the recommendation and whether it is separable from it),
    its time per access (median and interval, seconds), files and bytes on disk and compression ratio (the array's
    bytes over its bytes on disk), all from the rows the answer rests on."""
    import pandas as pd

    from benchmarks_lib.advise.text import candidate_fields
    from benchmarks_lib.base.stats import median_ci

    evidence = found.evidence
    if evidence is None:
        return pd.DataFrame()
    ranking, out = evidence.ranking, []
    for rank, entry in enumerate(ranking.entries, 1):
        rows = entry.rows
        first = rows.iloc[0]
        t, t_lo, t_hi, _ = median_ci(rows["elapsed_s"].astype(float))
        files = rows["inodes"].astype(float).median() if "inodes" in rows else math.nan
        on_disk = rows["bytes_on_disk"].astype(float).median() if "bytes_on_disk" in rows else math.nan
        separable = None if entry.vs_leader is None else entry.vs_leader.separable
        out.append({"rank": rank, "candidate": entry.name, "writer": str(first["backend"]),
                    "codec": str(first["codec"]), "chunks": str(first["chunks_text"]),
                    "shards": str(first["shards_text"]), "sharded": str(first["shards_text"]) != "none",
                    "reads": candidate_fields(entry.name)["via"],
                    "median": entry.median, "lo": entry.lo, "hi": entry.hi, "n": entry.n,
                    "factor": entry.factor(ranking.higher)[0],
                    "separable": "best" if rank == 1 else "too few iterations" if separable is None
                    else "yes" if separable else "no",
                    "time_s": t, "time_lo_s": t_lo, "time_hi_s": t_hi, "files": files, "bytes_on_disk": on_disk,
                    "ratio": _raw_bytes(first) / on_disk if on_disk and on_disk > 0 else math.nan,
                    "recommended": rank == 1})
    return pd.DataFrame(out)


def _ranked_unit(workload: Workload) -> tuple[float, str]:
    """(scale, unit) the ranked value is shown in: times in ms, throughputs in GB/s."""
    return (1e3, "ms") if workload.question.value == "elapsed_s" else (1.0, "GB/s")


def candidate_table(frame: pd.DataFrame, workload: Workload):
    """The candidates as a book table, best median first: what is recommended, the ranked value's median with its
    95% interval and n, how many times worse than the best and whether separable from it, files on disk and
    compression ratio."""
    from benchmarks_lib.chapters.tables import num3, table

    if frame.empty:
        return table(frame)
    scale, unit = _ranked_unit(workload)
    interval = [f"[{num3(lo * scale)}, {num3(hi * scale)}]" if math.isfinite(lo) and math.isfinite(hi) else None
                for lo, hi in zip(frame["lo"], frame["hi"], strict=True)]
    columns = ["writer", "codec", "chunks", "shards"] + (["reads"] if (frame["reads"] != "").any() else [])
    shown = frame[columns].assign(**{
        f"median ({unit})": frame["median"] * scale, "95% interval": interval, "n": frame["n"],
        "x best": frame["factor"], "separable": frame["separable"], "files": frame["files"],
        "ratio": frame["ratio"]})
    unrecorded = "not recorded for these rows"
    return table(shown, {"95% interval": "too few iterations for an interval", "files": unrecorded,
                         "ratio": unrecorded}, keys=["writer", "codec", "chunks", "shards"])


def tradeoff_figure(frame: pd.DataFrame, workload: Workload, title: str = "What sharding buys"):
    """Time per access (x, log; whiskers: its 95% interval) against files on disk (y, log), one point per
    candidate coloured by compression ratio, sharded as squares, unsharded as circles; the same writer, codec and
    chunks sharded and unsharded joined by a line; the recommendation ringed and named."""
    from benchmarks_lib.base.markup import short
    from benchmarks_lib.chapters.style import SMALL, empty_figure, legend_under_figure, log_axis, plt, subplots

    if frame.empty:
        return empty_figure(title, "no recorded run covers this workload")
    drawn = frame[(frame["files"] > 0) & (frame["time_s"] > 0)]
    if drawn.empty:
        return empty_figure(title, "the rows record no files on disk")
    what = TIMES.get(workload.access, f"time per {workload.access}")
    fig, ax = subplots(figsize=(7.2, 4.6))
    ms = drawn.assign(x=drawn["time_s"] * 1e3, lo=drawn["time_lo_s"] * 1e3, hi=drawn["time_hi_s"] * 1e3)
    for _, pair in ms.groupby(["writer", "codec", "chunks"], sort=False):
        if pair["sharded"].nunique() == 2:
            ax.plot(pair["x"], pair["files"], color="0.7", lw=0.8, ls="--", zorder=1)
    whiskers = ms[ms["lo"].notna() & ms["hi"].notna()]
    ax.hlines(whiskers["files"], whiskers["lo"], whiskers["hi"], color="0.6", lw=0.8, zorder=1)
    ratio = ms["ratio"].where(ms["ratio"] > 0)
    norm = plt.Normalize(*(ratio.min(), ratio.max())) if ratio.notna().any() else None
    for sharded, marker, label in ((False, "o", "unsharded"), (True, "s", "sharded")):
        part = ms[ms["sharded"] == sharded]
        if len(part):
            points = ax.scatter(part["x"], part["files"], c=ratio[part.index].fillna(0) if norm else "C0",
                                cmap="viridis", norm=norm, marker=marker, s=46, edgecolor="0.3", lw=0.5, zorder=2)
            ax.scatter([], [], marker=marker, s=46, color="0.75", edgecolor="0.3", lw=0.5, label=label)
    if norm is not None:
        fig.colorbar(points, ax=ax, pad=0.02).set_label("compression ratio (array bytes / bytes on disk)")
    best = ms[ms["recommended"]]
    if len(best):
        b = best.iloc[0]
        ax.scatter([b["x"]], [b["files"]], s=190, facecolor="none", edgecolor="C3", lw=2, zorder=3,
                   label="recommended" if (frame["separable"] != "no").all() else "best median (no winner claimed)")
        ax.annotate(short(f"{b['writer']}, chunks {b['chunks']}, shards {b['shards']}", 44), (b["x"], b["files"]),
                    xytext=(8, -6), textcoords="offset points", va="top", fontsize=SMALL, color="C3")
    ax.plot([], [], color="0.7", lw=0.8, ls="--", label="same writer, codec, chunks: sharded vs unsharded")
    log_axis(ax, "x")
    log_axis(ax, "y")
    ax.set_ylim(ms["files"].min() / 1.8, ms["files"].max() * 1.8)  # the top and bottom rows off the frame
    ax.set_xlabel(f"{what} (ms; median, whiskers: 95% interval)")
    ax.set_ylabel("files on disk")
    ax.set_title(f"{title}: {what} vs files on disk ({len(ms)} candidates)")
    legend_under_figure(fig, [ax])
    return fig


CHAPTER = Chapter("advise", title="Advice for your workload", order=85,
                  answer="This chapter measures nothing unless asked to (`MEASURE`): it answers one workload (shape, "
                  "dtype, access pattern) with the writer, codec, chunks and shards the recorded writers runs rank "
                  "best, as `iobench advise` does, and draws what sharding buys: time per access against files on "
                  "disk and compression ratio.")

__all__ = ["CHAPTER", "DEFAULT_ACCESS", "DEFAULT_DTYPE", "DEFAULT_SHAPE", "AdvicePage", "Settings", "candidate_frame",
           "candidate_table", "page", "settings", "tradeoff_figure"]
