"""Figures a reader can read, checked on the matplotlib objects each chapter function returns: no sweep of fewer
than three x-values drawn as a line (a small table instead, with the numbers the tables state), no tick labels
printed over each other, no label or title running into a legend or another label, no label cut short (an
ellipsis), no legend entry for what is not drawn, and whiskers captioned with the n and coverage the tables state."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks_lib.base.stats import format_values
from benchmarks_lib.chapters import compression, threads
from benchmarks_lib.chapters.chapter import measuring
from benchmarks_lib.chapters.style import MIN_LINE_POINTS, log_axis, subplots, whiskers
from benchmarks_lib.records.store import SCHEMA_VERSION, load_run, run_dirs, to_frame

ROOT = Path(__file__).resolve().parent.parent


def _extent(artist, renderer):
    """The box of an artist's text (an annotation's without its leader line), None when nothing is shown."""
    from matplotlib.text import Text

    if artist is None or not artist.get_visible():
        return None
    if hasattr(artist, "get_text") and not artist.get_text().strip():
        return None
    if hasattr(artist, "update_positions"):  # an annotation: where it is drawn
        artist.update_positions(renderer)
    box = Text.get_window_extent(artist, renderer) if isinstance(artist, Text) else artist.get_window_extent(renderer)
    return box if box.width > 0 and box.height > 0 else None


def short_lines(fig) -> list[str]:
    """Sweeps (lines with markers, in data coordinates) through fewer than ``MIN_LINE_POINTS`` distinct x-values;
    a whisker, a reference line (a ceiling, "ideal") or a front has no markers."""
    import numpy as np

    found = []
    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_gid() == "reference" or line.get_transform() != ax.transData:
                continue
            blank = ("None", "none", "", " ", None)
            if line.get_linestyle() in blank or line.get_marker() in blank or len(line.get_xdata()) < 2:
                continue
            x = np.asarray(line.get_xdata(), dtype=float)
            distinct = np.unique(x[np.isfinite(x)])
            if len(distinct) < MIN_LINE_POINTS:
                found.append(f"{ax.get_title() or 'axes'}: line {line.get_label()!r} through {len(distinct)} x-values")
    return found


def overprinted_ticks(fig) -> list[str]:
    """Tick labels of one axis that overlap another of the same axis."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            boxes = []
            for label in axis.get_ticklabels():
                if (box := _extent(label, renderer)) is not None:
                    boxes.append(((box.x0, box.x1) if name == "x" else (box.y0, box.y1), label.get_text()))
            boxes.sort()
            for (lo_a, hi_a), text_a in boxes:
                for (lo_b, _), text_b in boxes:
                    if (lo_a, text_a) < (lo_b, text_b) and lo_b < hi_a - 1:
                        found.append(f"{ax.get_title() or 'axes'} {name}: {text_a!r} over {text_b!r}")
    return found


def colliding_labels(fig) -> list[str]:
    """Axis labels, titles, annotations and legends (each a box) that overlap one another, and any text cut short
    with an ellipsis."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    named = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        where = ax.get_title() or f"axes {i}"
        named += [(f"{where} {kind}", artist, i) for kind, artist in
                  (("x label", ax.xaxis.label), ("y label", ax.yaxis.label), ("title", ax.title))]
        named += [(f"{where} text {t.get_text()!r}", t, i) for t in ax.texts]
        if ax.get_legend() is not None:
            named.append((f"{where} legend", ax.get_legend(), -1))
    named += [(f"figure legend {j}", legend, -1) for j, legend in enumerate(fig.legends)]
    if fig._suptitle is not None:
        named.append(("suptitle", fig._suptitle, -1))
    boxes = [(name, b, owner) for name, artist, owner in named if (b := _extent(artist, renderer)) is not None]
    found = []
    for k, (name_a, a, _) in enumerate(boxes):
        for name_b, b, _ in boxes[k + 1:]:
            overlap_x = min(a.x1, b.x1) - max(a.x0, b.x0)
            overlap_y = min(a.y1, b.y1) - max(a.y0, b.y0)
            if overlap_x > -1 and overlap_y > -1:  # touching is running into, too
                found.append(f"{name_a} runs into {name_b}")
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and callable(a.get_text))
             if isinstance(t.get_text(), str)]
    found += [f"cut short: {t!r}" for t in texts if "\u2026" in t]
    return found


def problems(fig) -> list[str]:
    return short_lines(fig) + overprinted_ticks(fig) + colliding_labels(fig)


# -- the chapters' own figures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference() -> dict[str, pd.DataFrame]:
    runs = {}
    for run in run_dirs(ROOT / "reference"):
        df, meta = load_run(run)
        runs.setdefault(str(meta.get("suite")), df)
    if not runs:
        pytest.skip("no committed reference run")
    return runs


def test_every_chapter_figure_of_the_reference_runs_is_readable(reference):
    """Every figure every chapter declares, drawn from the committed reference runs (two thread counts, two
    latencies, crowded Pareto fronts, a sharding sweep over three decades in narrow panels): nothing to fix."""
    found = {}
    for suite, df in reference.items():
        for title, draw in measuring()[suite].figures.items():
            fig = draw(df)
            if bad := problems(fig):
                found[f"{suite}: {title}"] = bad[:3]
            plt.close("all")
    assert not found, found


def _threads(times: dict[int, list[float]]) -> pd.DataFrame:
    rows = [{"schema_version": SCHEMA_VERSION, "run_id": "r", "status": "ok", "suite": "threads", "backend": "zarrs",
             "operation": "write", "iteration": i, "threads": p, "codec": "zstd:3", "nbytes": 10**8, "elapsed_s": t,
             "cores": 8} for p, ts in times.items() for i, t in enumerate(ts)]
    return to_frame(rows)


def test_a_sweep_of_two_values_is_a_small_table_with_the_tables_numbers():
    two = {1: [1.0, 1.1, 0.9, 1.05, 0.95], 2: [0.6, 0.61, 0.59, 0.62, 0.58]}
    fig = threads.time_vs_threads(_threads(two))
    assert not short_lines(fig) and not any(ax.get_lines() for ax in fig.axes)
    cells = [cell.get_text().get_text().replace("\n", " ") for ax in fig.axes for table in ax.tables
             for cell in table.get_celld().values()]
    assert format_values(pd.Series(two[1])) in cells and format_values(pd.Series(two[2])) in cells  # n=5, 94%
    assert "2 thread counts measured (1 thread, 2 threads)" in fig._suptitle.get_text()
    three = threads.time_vs_threads(_threads({**two, 4: [0.4, 0.41, 0.39, 0.42, 0.38]}))
    sweeps = [ln for ln in three.axes[0].get_lines() if ln.get_marker() == "o" and len(ln.get_xdata())]
    assert sweeps and all(len(set(ln.get_xdata())) == MIN_LINE_POINTS for ln in sweeps)
    plt.close("all")


def test_whiskers_state_the_n_and_coverage_the_tables_state():
    rows = pd.DataFrame({"x": [1] * 5 + [2] * 8, "v": np.arange(13.0)})
    assert whiskers(rows[rows["x"] == 1], "x", "v") == "median [94% interval], n=5"
    assert "(n=5, 94% interval)" in format_values(rows["v"][:5])  # the same n and coverage in a table
    assert whiskers(rows, "x", "v") == "median [94-95% intervals], n=5-8"
    assert whiskers(rows.iloc[:1], "x", "v") == "median, n=1, no interval"


def test_a_narrow_log_axis_never_prints_its_ticks_over_each_other():
    """The sharding sweep's cutout panel: 2e-5 to 0.012 s in a third of the column ("5x10^-4 0.001 0.002" were
    printed over each other); its ticks thin out to what the axis has room for, and some are always there."""
    fig, axes = subplots(1, 3, figsize=(7.2, 2.5))
    for ax in axes:
        ax.barh([0, 1], [2e-5, 0.012])
        log_axis(ax)
    fig.tight_layout()
    assert not overprinted_ticks(fig)
    fig.canvas.draw()
    assert all(len([t for t in ax.get_xticklabels() if t.get_text()]) >= 2 for ax in axes)
    plt.close(fig)


def test_pareto_labels_are_whole_apart_and_the_legend_promises_only_what_is_drawn(reference):
    df = reference["compression"]
    fig = compression.pareto(df)
    labels = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert labels and not colliding_labels(fig)  # no "tensorstore blos…78c168", none over another
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "hollow: the codec alone, in memory" in legend  # the codecs alone (numcodecs) are drawn hollow
    stores = compression.pareto(df[df["backend"] != "numcodecs"])
    assert not any("hollow" in t.get_text() for t in stores.legends[0].get_texts())
    assert "hollow" not in stores._suptitle.get_text()
    plt.close("all")


def test_the_checks_catch_what_they_look_for():
    fig, ax = subplots(figsize=(3, 2))
    ax.plot([1, 2], [1, 2], marker="o")
    ax.annotate("tensorstore blos\u2026", (1, 1))
    ax.annotate("over it", (1, 1))
    ax.set_xticks([1, 1.01], ["0.001", "0.002"])
    assert short_lines(fig) and overprinted_ticks(fig)
    found = colliding_labels(fig)
    assert any("cut short" in f for f in found) and any("runs into" in f for f in found)
    plt.close(fig)


def test_a_small_table_of_record_strings_draws_them_as_they_are():
    """Backend names come from records: a "$" is itself (never math that fails the figure), a long name is
    shortened so that it cannot stretch the figure."""
    rows = _threads({1: [1.0, 1.1, 0.9], 2: [0.6, 0.61, 0.59]}).assign(backend="$\\frac{1}{0}$ " + "x" * 200)
    fig = threads.time_vs_threads(rows)
    fig.canvas.draw()
    cells = [cell.get_text().get_text() for table in fig.axes[0].tables for cell in table.get_celld().values()]
    assert any(c.startswith("$\\frac{1}{0}$") and len(c) <= 48 for c in cells)
    plt.close(fig)


def test_a_name_of_any_length_keeps_its_figure_in_the_column(tmp_path):
    """A record's name drawn whole widened its figure to 8,000 px (the book then shows every text at a tenth of its
    size): every text of a book figure is cut when drawn (``style.clip_text``): a tick label and a legend entry to
    ``LABEL_CHARS`` (less in a legend of several columns), a title to ``TEXT_CHARS`` a line, ``TEXT_LINES`` lines,
    each cut ending in an ellipsis. The figure is as wide with a name of 500 characters as with one of 50,000."""
    from matplotlib.image import imread

    from benchmarks_lib.chapters.style import LABEL_CHARS, TEXT_CHARS, TEXT_LINES, clip_text

    widths = []
    for length in (500, 50_000):
        fig, ax = subplots(figsize=(7.2, 3))
        ax.barh(["n" * length, "short"], [1, 2], label="l" * length)
        ax.set_title("t" * length + "\n" + "\n".join("line" for _ in range(9)))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.savefig(tmp_path / "f.png", bbox_inches="tight")
        widths.append(imread(tmp_path / "f.png").shape[1])
        ticks = [t.get_text() for t in ax.get_yticklabels()]
        assert ticks == ["n" * (LABEL_CHARS - 1) + "…", "short"]
        assert ax.get_legend().get_texts()[0].get_text() == "l" * (LABEL_CHARS - 1) + "…"
        title = ax.title.get_text().split("\n")
        assert len(title) == TEXT_LINES and title[0] == "t" * (TEXT_CHARS - 1) + "…" and title[-1] == "line …"
        plt.close(fig)
    assert widths[0] == widths[1] < 2 * 7.2 * 100, widths  # a tick label and a legend beside the axes, cut
    assert clip_text("as it is") == "as it is"
