"""The explorer: recorded runs side by side, filtered and drawn as the reader chooses.

Runs come from results directories: this machine's ``results/``, the committed ``reference/`` run and
any directory copied from another machine (each holds ``<machine>/<run-id>/`` with parquet records and
run.json). For one chapter (suite) the explorer draws either one of the chapter's standard figures
(the ``figures`` its ``Chapter`` declares), once per selected run, or an overview: one metric per backend and
operation, the runs side by side, as median with its 95% distribution-free interval, absolute or as a percentage
of each run's own ceiling. ``explorer()`` wraps this in ipywidgets controls (imported on first use); the HTML book,
where no kernel runs, shows a chart drawn by the browser instead (:mod:`.charts`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks_lib.base.markup import html_text, md, md_code, short
from benchmarks_lib.base.paths import shown_path
from benchmarks_lib.base.specs import SpecError, parse_items
from benchmarks_lib.base.stats import summarize
from benchmarks_lib.chapters.chapter import Chapter, measuring
from benchmarks_lib.chapters.common import ok_rows, with_ceiling_fraction
from benchmarks_lib.chapters.flags import LATENCIES, WRITER_PHASES
from benchmarks_lib.chapters.style import empty_figure, plt, subplots, whiskers
from benchmarks_lib.records.store import load_run, read_run_json, run_dirs

OVERVIEW = "Overview: a metric per backend, runs side by side"
#: metric label -> (column, scale applied to it, higher is better)
METRICS = {"throughput (GB/s)": ("gbps", 1.0, True), "time (s)": ("elapsed_s", 1.0, False),
           "peak RSS (MB)": ("peak_rss_bytes", 1e-6, False)}
SCALES = ("absolute", "% of ceiling")
#: how the explorer is shown: live ipywidgets (JupyterLab), charts drawn by the browser (the HTML book), static
#: figures (a book built without the chart scripts)
VIEWS = ("widgets", "charts", "static")
ALL = "(all)"


@dataclass(frozen=True)
class Run:
    """One recorded run and how the explorer names it."""

    path: Path
    suite: str
    label: str


def find_runs(dirs: list[str | Path]) -> list[Run]:
    """Every run under the results directories ``dirs`` (those that exist), newest first per directory.

    A run's label: suite, profile, machine, start date, run id and the directory it came from (each shortened: they
    come from the run's files, and the label names the run in menus and figures)."""
    runs = []
    for d in dict.fromkeys(Path(x).expanduser().resolve() for x in dirs):
        for path in run_dirs(d) if d.is_dir() else []:
            try:
                meta = read_run_json(path / "run.json")
            except (OSError, ValueError, SpecError):
                continue  # a corrupt run.json: the run is skipped, never deleted
            parts = (meta.get("suite"), meta.get("profile"), path.parent.name, str(meta.get("started_at", ""))[:10])
            label = " · ".join(short(p) for p in (*parts, path.name)) + f" [{short(d.name)}/]"
            runs.append(Run(path, str(meta.get("suite")), label))
    return runs


def results_dirs(results_dir: str | Path | None = None, other_dirs: object = None) -> list[Path]:
    """Where the explorer looks: ``results_dir`` (None: the checkout's ``results/``) and ``other_dirs`` (a
    list, or a comma-separated string as ``papermill -p`` passes it; None: the committed ``reference/``).
    Other directories must exist and hold runs; this machine's results directory may still be empty."""
    from benchmarks_lib.base.paths import REFERENCE, checkout_dirs

    first = Path(results_dir).expanduser() if results_dir is not None else checkout_dirs()[0]
    if other_dirs is None:
        dirs = [first, *([REFERENCE] if REFERENCE.is_dir() else [])]
    else:
        dirs = [first, *(check_dir(d) for d in parse_items(other_dirs, "OTHER_DIRS", '["reference", "~/runs"]'))]
    return [d for i, d in enumerate(dirs) if d.resolve() not in {e.resolve() for e in dirs[:i]}]  # each once


def check_dir(value: object) -> Path:
    """A results directory given by a reader: it must exist and hold at least one run."""
    if not isinstance(value, str | Path) or not str(value).strip():
        raise SpecError(f"results directory {value!r} must be a path, e.g. reference/ or ~/runs-from-gpu-node")
    path = Path(str(value).strip()).expanduser()
    if not path.is_dir():
        raise SpecError(f"results directory {str(path)!r} does not exist")
    if not run_dirs(path):
        raise SpecError(f"results directory {str(path)!r} holds no run (<machine>/<run-id>/run.json)")
    return path


def found_text(dirs: list[Path]) -> str:
    """Markdown: how many runs of each chapter were found, and where."""
    runs = find_runs(dirs)
    if not runs:
        return ("No recorded run was found in " + ", ".join(md_code(shown_path(d)) for d in dirs) + ". Measure this "
                "machine with `make book` (or `iobench run writers`), or add a directory of runs below.")
    titles = {suite: chapter.label for suite, chapter in measuring().items()}
    counts = ", ".join(f"{sum(r.suite == s for r in runs)} {md(titles.get(s, s).lower())}"
                       for s in dict.fromkeys(r.suite for r in runs))
    return f"{len(runs)} recorded runs ({counts}) in " + ", ".join(md_code(shown_path(d)) for d in dirs) + "."


def load_rows(runs: list[Run]) -> pd.DataFrame:
    """The records of ``runs``, each row tagged with its run's label (``run_label``)."""
    frames = [load_run(r.path)[0].assign(run_label=r.label) for r in runs]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def backends_of(df: pd.DataFrame) -> list[str]:
    return sorted(set(df["backend"]) - {"ceiling"}) if "backend" in df else []


def datasets_of(df: pd.DataFrame) -> list[str]:
    if "dataset" not in df:
        return []
    return sorted(str(v) for v in set(df.loc[df["backend"] != "ceiling", "dataset"].dropna()))


def short_names(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every string longer than ``short`` allows shortened (the names a figure labels with), so that a
    long name from a record cannot stretch a figure; distinct names stay distinct. ``run_label`` (made of shortened
    parts already) names the runs the figures are drawn for, as it is."""
    out = df.copy()
    for col in out.columns.drop("run_label", errors="ignore"):
        values = out[col]
        if values.dtype.kind in "OSU" or isinstance(values.dtype, pd.StringDtype):
            texts = values.map(lambda v: isinstance(v, str) and len(v) > 48)
            if texts.any():
                out[col] = values.where(~texts, values[texts].map(short))
    return out


def select(df: pd.DataFrame, backends: list[str] | tuple[str, ...] = (), dataset: str = ALL) -> pd.DataFrame:
    """Rows of the chosen backends (all when none is chosen) and dataset; the ceiling rows always stay."""
    if df.empty:
        return df
    keep = df["backend"] == "ceiling"
    chosen = df["backend"].isin(backends) if backends else df["backend"] != "ceiling"
    if dataset != ALL and "dataset" in df:
        chosen &= df["dataset"].astype(str) == dataset
    return df[keep | chosen]


def overview(df: pd.DataFrame, metric: str = "throughput (GB/s)", scale: str = "absolute") -> plt.Figure:
    """Median and 95% distribution-free interval of ``metric`` per backend, one panel per whole operation (a writer's
    create/write/finalize phases and per-frame or per-cutout latencies are left to the chapters' figures), one
    colour per run.

    ``scale`` "% of ceiling" divides each GB/s by its own run's ceiling (same fsync policy and cache
    state), so that machines of different speeds can be set side by side; it applies to throughput only."""
    if metric not in METRICS or scale not in SCALES:
        raise SpecError(f"metric {metric!r} / scale {scale!r}: allowed {', '.join(METRICS)} / {', '.join(SCALES)}")
    column, factor, _ = METRICS[metric]
    relative = scale == SCALES[1]
    if relative and column != "gbps":
        return empty_figure(f"{metric} as % of ceiling (only throughput has a ceiling)")
    rows = ok_rows(df)
    if relative:
        rows = with_ceiling_fraction(rows)
        column, factor = "pct_of_ceiling", 1.0
    if len(rows):  # whole operations: a writer's phases and per-frame latencies are not throughputs of the array
        rows = rows[(rows["backend"] != "ceiling") & ~rows["operation"].isin(LATENCIES)]
        if "suite" in rows:
            rows = rows[~((rows["suite"] == "writers") & rows["operation"].isin(WRITER_PHASES))]
    if rows.empty or column not in rows or rows[column].notna().sum() == 0:
        return empty_figure(f"{metric}")
    rows = rows.assign(value=pd.to_numeric(rows[column], errors="coerce").astype(float) * factor)
    points = summarize(rows.dropna(subset=["value"]), ["operation", "backend", "run_label"], "value")
    operations = list(dict.fromkeys(points["operation"]))[:8]
    labels = list(dict.fromkeys(points["run_label"]))
    colours = dict(zip(labels, plt.rcParams["axes.prop_cycle"].by_key()["color"] * 4, strict=False))
    height = sum(1.1 + 0.3 * points.loc[points["operation"] == op, "backend"].nunique() for op in operations)
    fig, axes = subplots(len(operations), 1, squeeze=False, layout="constrained",
                         figsize=(7.2, 0.6 + 0.3 * len(labels) + height))
    for ax, op in zip(axes[:, 0], operations, strict=True):
        part = points[points["operation"] == op]
        backends = sorted(set(part["backend"]))
        step = 0.8 / max(1, len(labels))
        for k, label in enumerate(labels):
            mine = part[part["run_label"] == label].set_index("backend").reindex(backends)
            y = np.arange(len(backends)) + (k - (len(labels) - 1) / 2) * step
            lo = (mine["median"] - mine["ci_lo"]).clip(lower=0).fillna(0)
            hi = (mine["ci_hi"] - mine["median"]).clip(lower=0).fillna(0)
            ax.errorbar(mine["median"], y, xerr=[lo, hi], fmt="o", color=colours[label], capsize=3,
                        label=label if op == operations[0] else None)
        ax.set_yticks(range(len(backends)), backends)
        ax.invert_yaxis()
        shown = rows[rows["operation"] == op]
        ax.set(title=op, xlabel=f"{scale if relative else metric} "
               f"({whiskers(shown, ['backend', 'run_label'], 'value')})", ylabel="")
        if relative:
            ax.axvline(100, color="0.4", lw=1, ls="--")
    if len(labels):
        fig.legend(loc="outside upper center", fontsize=10, title_fontsize=10,
                   title="run (each point: every selected case of a backend, all codecs, sizes and datasets "
                         "pooled; filter to compare like with like)")
    return fig


def figures(runs: list[Run], figure: str = OVERVIEW, backends: list[str] | tuple[str, ...] = (), dataset: str = ALL,
            metric: str = "throughput (GB/s)", scale: str = "absolute") -> list[plt.Figure]:
    """The figures for a selection: the overview over every run, or the chapter figure once per run."""
    if not runs:
        return [empty_figure("no run selected")]
    suites = {r.suite for r in runs}
    if len(suites) != 1:
        raise SpecError(f"runs of one chapter at a time, not {', '.join(sorted(suites))}")
    df = short_names(select(load_rows(runs), backends, dataset))
    if figure == OVERVIEW:
        return [overview(df, metric, scale)]
    suite = suites.pop()
    drawn = chapter_figures(suite)
    if figure not in drawn:
        raise SpecError(f"figure {figure!r} is unknown; allowed: {', '.join(figure_names(suite))}")
    out = []
    for run in runs:
        fig = drawn[figure](df[df["run_label"] == run.label])
        fig.suptitle(run.label, fontsize=10, y=1.0)
        out.append(fig)
    return out


def chapter_figures(suite: str) -> Mapping[str, Callable[[pd.DataFrame], plt.Figure]]:
    """The figures the chapter of ``suite`` declares, by title (none for a suite without a chapter)."""
    chapter = measuring().get(suite)
    return chapter.figures if chapter else {}


def figure_names(suite: str) -> list[str]:
    return [OVERVIEW, *chapter_figures(suite)]


def chapter_menu() -> list[tuple[str, str]]:
    """The explorer's chapters, (title, suite), in the book's order: every declared chapter that measures a suite."""
    return [(chapter.label, suite) for suite, chapter in measuring().items()]


def png_bytes(fig) -> bytes:
    """A figure as PNG (as the notebook shows it inline), closed afterwards."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def newest_per_directory(runs: list[Run]) -> list[Run]:
    """The newest run of each results directory (``runs`` newest first per directory): the first selection."""
    return list({r.path.parents[1]: r for r in reversed(runs)}.values())


def explorer(dirs: list[str | Path], chapter: str = "writers", figure: str = OVERVIEW,
             metric: str = "throughput (GB/s)", scale: str = "absolute", view: str = "widgets"):
    """The explorer over the runs under ``dirs``, shown as ``view`` says (:data:`VIEWS`). "widgets": ipywidgets
    controls (choose runs, chapter, figure, backends, dataset, metric and scale; the figures redraw on every
    change: live in JupyterLab, where a kernel runs). "charts": the HTML book's page (:mod:`.charts`):
    a chart drawn in the browser, whose menus redraw it without a kernel. "static": the first selection as static
    figures (a book built without the chart scripts)."""
    from IPython.display import HTML, display

    if view not in VIEWS:
        raise SpecError(f"VIEW {view!r} is unknown; allowed: {', '.join(VIEWS)}")

    menu = chapter_menu()
    if chapter not in (suite for _, suite in menu):
        raise SpecError(f"chapter {chapter!r} is unknown; allowed: {', '.join(suite for _, suite in menu)}")
    if figure not in figure_names(chapter):
        raise SpecError(f"figure {figure!r} is unknown for {chapter}; allowed: {', '.join(figure_names(chapter))}")
    if metric not in METRICS or scale not in SCALES:
        raise SpecError(f"metric {metric!r} / scale {scale!r}: allowed {', '.join(METRICS)} / {', '.join(SCALES)}")
    if view == "charts":
        from benchmarks_lib.chapters.explore.charts import chart_page

        found = find_runs(dirs)
        newest = [r for _, suite in menu for r in newest_per_directory([r for r in found if r.suite == suite])]
        display(HTML(chart_page(newest, menu, chapter, metric)))
        return None
    if view == "static":
        chosen = newest_per_directory([r for r in find_runs(dirs) if r.suite == chapter])
        for fig in figures(chosen, figure, (), ALL, metric, scale) if chosen else [empty_figure(
                f"No run of this chapter under {', '.join(shown_path(d) for d in dirs)}")]:
            display(fig)
            plt.close(fig)
        return None
    import ipywidgets as w

    dirs = list(dirs)
    state = {"runs": find_runs(dirs), "quiet": False}
    layout = {"width": "95%"}
    chapter_w = w.Dropdown(options=menu, value=chapter, description="chapter")
    runs_w = w.SelectMultiple(description="runs", rows=5, layout=layout)
    figure_w = w.Dropdown(description="figure", layout=layout)
    backends_w = w.SelectMultiple(description="backends", rows=6, layout={"width": "45%"})
    dataset_w = w.Dropdown(description="dataset")
    metric_w = w.Dropdown(options=list(METRICS), value=metric, description="metric")
    scale_w = w.ToggleButtons(options=list(SCALES), value=scale, description="scale")
    add_w = w.Text(placeholder="another results directory, e.g. ~/runs-from-node42", layout={"width": "60%"})
    add_button = w.Button(description="add runs")
    message = w.HTML()
    # figures as Image widgets, not an Output widget: nbclient echoes an Output widget's contents back to the kernel
    # without waiting for the send, and a figure of a few hundred KB stalls a headless run (papermill) for good
    drawn = w.VBox(layout={"width": "100%"})

    def _runs_of(suite: str) -> list[Run]:
        return [r for r in state["runs"] if r.suite == suite]

    def _refresh_chapter(*_) -> None:
        state["quiet"] = True  # one redraw at the end, not one per control that changes
        mine = _runs_of(chapter_w.value)
        runs_w.options = [r.label for r in mine]
        runs_w.value = tuple(r.label for r in newest_per_directory(mine))
        names = figure_names(chapter_w.value)
        figure_w.options = names
        figure_w.value = figure if figure in names else OVERVIEW
        _refresh_filters()
        state["quiet"] = False
        _draw()

    def _chosen() -> list[Run]:
        return [r for r in _runs_of(chapter_w.value) if r.label in runs_w.value]

    def _refresh_filters(*_) -> None:
        quiet, state["quiet"] = state["quiet"], True
        try:
            df = load_rows(_chosen())
        except SpecError as exc:  # a corrupt record file: said, never deleted
            message.value, df = f"<b>{html_text(exc)}</b>", pd.DataFrame()
        backends_w.options = backends_of(df)
        backends_w.value = ()
        dataset_w.options = [ALL, *datasets_of(df)]
        dataset_w.value = ALL
        state["quiet"] = quiet
        _draw()

    def _draw(*_) -> None:
        if state["quiet"]:
            return
        metric_w.disabled = scale_w.disabled = figure_w.value != OVERVIEW
        drawn.children = ()
        if not _chosen():
            message.value = ("<b>No run of this chapter selected.</b> Runs are found under: "
                             + ", ".join(html_text(shown_path(d)) for d in dirs)
                             + ". Measure one with <code>make book</code>.")
            return
        message.value = ""
        try:
            figs = figures(_chosen(), figure_w.value, backends_w.value, dataset_w.value, metric_w.value,
                           scale_w.value)
        except SpecError as exc:
            message.value = f"<b>{html_text(exc)}</b>"
            return
        drawn.children = [w.Image(value=png_bytes(fig), format="png", layout={"max_width": "100%"}) for fig in figs]

    def _add(*_) -> None:
        try:
            path = check_dir(add_w.value)
        except SpecError as exc:
            message.value = f"<b>{html_text(exc)}</b>"
            return
        dirs.append(path)
        state["runs"] = find_runs(dirs)
        _refresh_chapter()
        message.value = f"added {html_text(shown_path(path))}"

    _refresh_chapter()
    chapter_w.observe(_refresh_chapter, "value")
    runs_w.observe(_refresh_filters, "value")
    for control in (figure_w, backends_w, dataset_w, metric_w, scale_w):  # chapter and runs redraw via refresh
        control.observe(_draw, "value")
    add_button.on_click(_add)
    controls = w.VBox([w.HBox([chapter_w, figure_w]), runs_w, w.HBox([backends_w, w.VBox([dataset_w, metric_w])]),
                       scale_w, w.HBox([add_w, add_button]), message])
    return w.VBox([controls, drawn])


CHAPTER = Chapter("explorer", title="Explorer", answer="This chapter measures nothing: it draws the recorded runs.",
                  order=95)
