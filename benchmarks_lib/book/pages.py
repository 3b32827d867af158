"""The pages the book generates from its notebooks and runs: each chapter's table of parameters and
the reference page of every parameter (read from the ``parameters`` cells with ``ast``/``tokenize``,
never executed), the page describing the machine, and the front page of answers."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchmarks_lib.base.markup import md, md_code
from benchmarks_lib.base.paths import ROOT, shown_path
from benchmarks_lib.book.frontpage import anchor, comparison, verdict_box
from benchmarks_lib.book.notebooks import chapter_notebooks, tagged_source, template
from benchmarks_lib.chapters.chapter import chapter_named
from benchmarks_lib.chapters.common import ceiling_table
from benchmarks_lib.chapters.compare import CHAPTER as COMPARE
from benchmarks_lib.chapters.compare import MATCHED_SECTION
from benchmarks_lib.records.store import load_run, newest_runs
from benchmarks_lib.rules.ceilings import ceiling_measured_by
from benchmarks_lib.rules.decision import legend
from benchmarks_lib.run.pool import SHOWN_PHASES, peak_rss_mb, phase_totals


@dataclass(frozen=True)
class NotebookParameter:
    """One parameter of a notebook: its name, default (as written) and meaning (the comment documenting it).

    Parameters documented by one comment heading their group share ``group`` (that comment's line).
    """

    name: str
    default: str
    meaning: str
    group: int


def parameter_docs(path: Path) -> list[NotebookParameter]:
    """The parameters of a notebook's ``parameters`` cell, in order, read with ast and tokenize (never executed).

    A parameter's meaning is its own trailing comment, else the block of comment lines heading its group
    (the assignments directly below one comment, up to a blank line or the next comment).
    """
    source = tagged_source(path, "parameters")
    lines = source.splitlines()
    comments = {tok.start[0]: tok.string.lstrip("#").strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}

    def comment_only(n: int) -> bool:
        return lines[n - 1].lstrip().startswith("#")

    out = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        trailing = [comments[n] for n in range(node.lineno, node.end_lineno + 1) if n in comments]
        if trailing:
            meaning, group = " ".join(trailing), node.lineno
        else:
            n = node.lineno - 1
            while n >= 1 and lines[n - 1].strip() and not comment_only(n):  # the group's earlier assignments
                n -= 1
            block = []
            while n >= 1 and comment_only(n):
                block.insert(0, comments[n])
                n -= 1
            meaning, group = " ".join(block), n + 1
        default = ast.get_source_segment(source, node.value) or ""
        out += [NotebookParameter(t.id, default, meaning, group) for t in node.targets if isinstance(t, ast.Name)]
    return out


def _markdown_cell(text: str) -> str:
    """A notebook's own text (a parameter's meaning, its default as written) in a markdown table cell: pipes
    escaped, ``<`` outside code spans escaped (not HTML)."""
    parts = text.replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else p.replace("<", "\\<") for i, p in enumerate(parts))


def _code(value: object) -> str:
    """A parameter's value (from a run, or given to papermill: data) as a code span in a table cell."""
    return md_code(repr(value), in_table=True)


#: the parameters that name a place on the reader's machine: shown as ``shown_path`` shows a path
PATH_PARAMETERS = ("RESULTS_DIR", "LOAD_RUN", "OTHER_DIRS", "RUNS", "LIKE", "REFERENCE_DIR")


def _shown_paths(name: str, value: object) -> object:
    """A path parameter's value as the book shows it (``shown_path``: relative, or by its last part such as the
    run id), each item of a list alike; ``LIKE``'s inner path (``file.h5:/data``) kept; anything else as it is."""
    if name not in PATH_PARAMETERS:
        return value
    if isinstance(value, list | tuple):
        return [_shown_paths(name, v) for v in value]
    if not isinstance(value, str | Path):
        return value
    text, inner = str(value), ""
    if name == "LIKE" and ":" in text:
        text, inner = text.rsplit(":", 1)
        inner = ":" + inner
    return shown_path(text) + inner


def _listed_value(name: str, value: object, text: bool = False) -> object:
    """A list parameter given as one comma-separated string (``"lz4,zstd:3"``, as ``papermill -p`` passes it) as
    the list it means; a shape spec (``*DIMS``: ``"t:64,y:1080:540"``, ``*SHAPE``: ``"512,512,512"``), a ``text``
    parameter (its default is a string: ``ACCESS = "cutout:32,32,32"``) and anything unparseable stay as given; a
    fraction to four digits."""
    from benchmarks_lib.base.specs import SpecError, parse_items

    if isinstance(value, float) and math.isfinite(value):  # a share of the book's budget: 104.6, not 104.59701...
        return float(f"{value:.4g}")
    if text or not isinstance(value, str) or "," not in value or "DIMS" in name.upper() or \
            name.upper().endswith("SHAPE"):
        return value
    try:
        return parse_items(value, name)
    except SpecError:
        return value


def _grouped(params: list[NotebookParameter]) -> list[list[NotebookParameter]]:
    """Consecutive parameters that share their documenting comment, one list per table row."""
    rows: list[list[NotebookParameter]] = []
    for p in params:
        if rows and rows[-1][-1].group == p.group:
            rows[-1].append(p)
        else:
            rows.append([p])
    return rows


def _notebook_path(notebook: str) -> Path:
    """A chapter notebook's template: in the working directory (a checkout, or notebooks/ in JupyterLab), else where
    its chapter is (this checkout's notebooks/, or the package that ships it)."""
    from benchmarks_lib.base.specs import SpecError

    for path in (Path.cwd() / "notebooks" / f"{notebook}.ipynb", Path.cwd() / f"{notebook}.ipynb"):
        if path.exists():
            return path
    with contextlib.suppress(SpecError):
        if (path := template(notebook, ROOT)).exists():
            return path
    raise FileNotFoundError(f"notebook {notebook}.ipynb not found in notebooks/, the working directory or {ROOT}")


def parameters_table(notebook: str, values: Mapping[str, object], run=None) -> str:
    """Markdown: the notebook's parameters, the values this run used and what each means.

    ``values`` are the notebook's globals after its parameters cell (and papermill's); ``run`` (a
    :class:`~benchmarks_lib.run.runner.RunResult`) gives what a parameter left as None resolved to, and for a
    loaded run (``LOAD_RUN``) the values that run was measured with.
    """
    meta = run.meta if run is not None else {}
    recorded = {str(k).upper(): v for k, v in meta.get("params", {}).items()}
    recorded.update({k: meta[k.lower()] for k in ("PROFILE", "RUN_ID") if meta.get(k.lower()) is not None})
    loaded = bool(values.get("LOAD_RUN"))

    def shown(p: NotebookParameter) -> str:
        name, text = p.name, p.default.startswith(("'", '"'))
        if name not in recorded:
            return _code(_shown_paths(name, _listed_value(name, values.get(name), text)))
        given = values.get(name)
        marker = " *(profile)*" if given is None and not loaded and name != "RUN_ID" else ""
        return _code(_shown_paths(name, _listed_value(name, recorded[name], text))) + marker

    lead = ("**Parameters of this run** (measured earlier and loaded: the values it was measured with)" if loaded
            else "**Parameters of this run** (*(profile)*: left as `None`, so the profile's default)" if meta
            else "**Parameters of this run**")
    lines = [lead, "", "| parameter | value | meaning |", "|---|---|---|"]
    for row in _grouped(parameter_docs(_notebook_path(notebook))):
        names = ", ".join(f"`{p.name}`" for p in row)
        lines.append(f"| {names} | {', '.join(shown(p) for p in row)} | "
                     f"{_markdown_cell(row[0].meaning)} |")
    return "\n".join(lines)


def _notebook_title(path: Path) -> str:
    """The first ``# `` heading of a notebook's markdown (its chapter title), else its file name."""
    for cell in json.loads(path.read_text()).get("cells", []):
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def write_parameters_page(root: Path, names: list[str] | tuple[str, ...], out_dir: Path) -> Path:
    """The reference page of every chapter notebook's parameters, read from their parameters cells."""
    lines = ["# Notebook parameters", "",
             "Every parameter of every chapter, read from the notebooks' `parameters` cells when the book was "
             "built. Set them with `papermill -p NAME VALUE` or `iobench book --set NAME=VALUE` (see "
             "[Reproduce and extend](../reproduce.md)); a parameter left as `None` takes the profile's "
             "default, which `iobench suites --profile quick` lists.", ""]
    for name in names:
        path = template(name, root)
        source = (md_code(path.relative_to(root)) if path.is_relative_to(root)
                  else f"{md_code(path.name)}, shipped with its package")
        lines += [f"## {_notebook_title(path)}", "",
                  f"[The chapter](./{name}.ipynb), from {source}.", "",
                  "| parameter | default | meaning |", "|---|---|---|"]
        for row in _grouped(parameter_docs(path)):
            lines.append(f"| {', '.join(f'`{p.name}`' for p in row)} | "
                         f"{_markdown_cell(', '.join(f'`{p.default}`' for p in row))} | "
                         f"{_markdown_cell(row[0].meaning)} |")
        lines.append("")
    page = out_dir / "parameters.md"
    page.write_text("\n".join(lines))
    return page


def harness_lines(runs: list[tuple[str, str, object]]) -> list[str]:
    """The machine page's section on where the runs' time went: per run (suite, run id, records), the cases'
    wall time, the share inside timed regions and the seconds of each other phase; then the runner's and the workers'
    peak RSS (Markdown, text escaped; the run ids head the ceiling sections above it)."""
    rows = [(suite, totals, df) for suite, _, df in runs if (totals := phase_totals(df)) and totals["case"]]
    if not rows:
        return []
    lines = ["", "## Where the time went", "",
             "The share of each run's case time spent inside timed regions (the measurements themselves), and "
             "the seconds of everything around them (see the methodology, *The process a case runs in*).", "",
             "| suite | case time (s) | timed share | " + " | ".join(f"{n} (s)" for n, _ in SHOWN_PHASES) + " |",
             "|---|---|---|" + "---|" * len(SHOWN_PHASES)]
    for suite, t, _ in rows:
        lines.append(f"| {md(suite)} | {t['case']:.1f} | {t['timed'] / t['case']:.0%} | "
                     + " | ".join(f"{t.get(name, 0.0):.1f}" for name, _ in SHOWN_PHASES) + " |")
    lines += ["", "The largest peak RSS over each run's cases: of the runner (the process that plans and records the "
              "cases) and of the workers (where the measured libraries hold the case's data).", "",
              "| suite | runner peak RSS (MB) | worker peak RSS (MB) |", "|---|---|---|"]
    for suite, _, df in rows:
        peaks = (peak_rss_mb(df, f"{who}_peak_rss_bytes") for who in ("runner", "worker"))
        lines.append(f"| {md(suite)} | " + " | ".join("" if mb is None else f"{mb:.0f}" for mb in peaks) + " |")
    return lines


def write_machine_page(results_dir: Path, out_dir: Path, run_ids: list[str]) -> Path:
    """A page describing the machine, from the environment recorded by the runs."""
    from benchmarks_lib.records.store import find_run

    lines = ["# This machine", "",
             "Every number in this book was measured on the machine described here, in the runs listed below.", ""]
    env: dict = {}
    ceilings, harness = [], []
    for run_id in run_ids:
        try:
            run_dir = find_run(results_dir, run_id)
        except FileNotFoundError:
            continue
        df, meta = load_run(run_dir)
        env = env or meta.get("environment", {})
        table = ceiling_table(df)
        if len(table):
            ceilings.append((str(meta["suite"]), run_id, table, ceiling_measured_by(df)))
        harness.append((str(meta["suite"]), run_id, df))
    if env:
        lines += ["| property | value |", "|---|---|"]
        for key in sorted(env):
            value = env[key]
            if key == "ram_bytes" and isinstance(value, int | float) and value:
                value = f"{value / 2**30:.1f} GiB"
            if key == "fs_free_bytes" and isinstance(value, int | float) and value:
                value = f"{value / 1e9:.0f} GB"
            lines.append(f"| {md(key)} | {'' if value is None else md(value)} |")
    else:
        lines.append("No run was found (build without execution).")
    # a ceiling a run took from an earlier one of the build (``run.shared_ceiling``) is listed once, where measured
    listed = {run_id for _, run_id, _, source in ceilings if not source}
    for suite, run_id, table, source in ceilings:
        if source in listed:
            continue
        taken = [s for s, _, _, theirs in ceilings if theirs == run_id]
        also = f", and taken by the {md(', '.join(taken))} run(s) of this build" if taken else ""
        head = f"Ceiling of the {md(suite)} run ({md_code(run_id)}), measured by run {md_code(source)}" if source \
            else f"Ceiling measured in the {md(suite)} run ({md_code(run_id)})"
        lines += ["", f"## {head}{also}", "",
                  "| ceiling | what it is | GB/s median | GB/s min | GB/s max | n |", "|---|---|---|---|---|---|"]
        for _, r in table.iterrows():
            lines.append(f"| {md(r['ceiling'])} | {md(r['what it is'])} | {r['GB/s median']:.3f} | "
                         f"{r['GB/s min']:.3f} | {r['GB/s max']:.3f} | {r['n']} |")
    lines += harness_lines(harness)
    page = out_dir / "machine.md"
    page.write_text("\n".join(lines) + "\n")
    return page


def _when(meta: dict) -> str:
    """A run's start as ``YYYY-MM-DD HH:MM UTC`` (as recorded when it cannot be read)."""
    from datetime import UTC, datetime

    stamp = str(meta.get("started_at") or "")
    with contextlib.suppress(ValueError):
        return datetime.fromisoformat(stamp).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return stamp or "time not recorded"


def _machine_line(metas: list[dict]) -> str:
    """Which machine, CPU, cores, profile and when: the runs' first environment."""
    env = metas[0].get("environment", {})
    cores = env.get("cpu_affinity") or env.get("cpu_count")
    return (f"**{md(env.get('machine', 'this machine'))}** ({md(env.get('cpu_model') or 'CPU not recorded')}"
            f"{f', {md(cores)} usable cores' if cores else ''}), "
            f"{', '.join(md(p) for p in sorted({str(m.get('profile')) for m in metas}))} profile, "
            f"{md(min(_when(m) for m in metas))}")


#: the page setting this machine beside the reference run (``book/executed/<BESIDE>.md``, in ``_toc.yml``)
BESIDE = "beside-reference"


#: the beside-reference page's section of the front page's answers on both machines
BOTH_SECTION = "The answers on both machines"
#: what of two machines' recorded environments may explain different answers (not the run's own parameters)
_MACHINE_KEYS = ("cpu_model", "cpu_count", "cpu_affinity", "ram_bytes", "fs_type", "kernel", "python")


def _machine_differences(mine: Sequence[dict], theirs: Sequence[dict]) -> list[str]:
    """``cpu_model Intel Xeon / AMD EPYC``: what differs between the two machines' first runs' environments (their
    hardware, system and library versions; memory to the GiB)."""
    from benchmarks_lib.chapters.compare.cases import environment_differences

    diff = environment_differences({"environment": mine[0].get("environment") or {}},
                                   {"environment": theirs[0].get("environment") or {}})
    keep = diff[diff["key"].isin(_MACHINE_KEYS) | diff["key"].astype(str).str.startswith("version_")]
    return [f"{md(row.key)} {md(row.A)} / {md(row.B)}" for row in keep.itertuples()]


def _beside_line(mine: list, theirs: list, metas: Sequence[dict], ref_metas: Sequence[dict]) -> str:
    """The front page's one line on how its answers stand beside the reference machine's (``words.agreement``)."""
    from benchmarks_lib.rules.words import CHANCE, MACHINES, SAME, agreement

    refs = {a.question.key: a for a in theirs}
    said = [agreement(a, refs[a.question.key]) for a in mine if a.question.key in refs]
    said = [x for x in said if x]
    if not said:
        return ""
    differs = _machine_differences(metas, ref_metas)
    machines = (f" What differs between the machines (here / there): {'; '.join(differs[:6])}"
                f"{f'; {len(differs) - 6} more' if len(differs) > 6 else ''}." if differs else "")
    profiles = [sorted({str(m.get("profile")) for m in side}) for side in (metas, ref_metas)]
    if profiles[0] != profiles[1]:  # other sizes: an answer may differ with the size, not the machine
        machines += (f" This book measured the {md(', '.join(profiles[0]))} profile, the reference the "
                     f"{md(', '.join(profiles[1]))}: their sizes differ too.")
    return (f"**Beside the reference machine:** {said.count(SAME)} of {len(said)} answers the same; "
            f"{said.count(MACHINES)} differ where both machines decided (so the machines differ); "
            f"{said.count(CHANCE)} differ where one of them did not decide (chance may explain them).{machines} "
            f"Each, side by side: [{BOTH_SECTION}]({BESIDE}.md#{anchor(BOTH_SECTION)}).")


def _section_shown(notebook: Path, heading: str) -> bool:
    """Whether the chapter ``notebook`` (its executed copy, or the template copied where it was not executed)
    shows the section ``heading``: a section that showed nothing is hidden (``build.hide_empty_sections``), and a
    link to it would lead nowhere (a compare page executed before a reference run was there). True where there is
    no copy yet to tell (the book copies the template, which shows every section)."""
    try:
        cells = json.loads(notebook.read_text()).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return True
    return any(c.get("cell_type") == "markdown" and "".join(c.get("source", "")).startswith(f"## {heading}")
               and "remove-cell" not in c.get("metadata", {}).get("tags", []) for c in cells if isinstance(c, dict))


def write_beside_page(out_dir: Path, runs: Mapping[str, tuple], ref_runs: Mapping[str, tuple],
                      titles: Mapping[str, str], suites: Mapping[str, str | None], reference: Path | None,
                      answers: tuple[list, list] = ([], [])) -> int:
    """The like-for-like page: the front page's answers on both machines (``answers``: this machine's and the
    reference's, each with ``words.agreement``), then per chapter measured by both, this machine beside the
    reference's newest run of its suite on the cases both measured (:func:`.frontpage.comparison`); a sentence where
    there is nothing to set side by side. Returns how many chapters it compares."""
    from benchmarks_lib.rules.words import agreement, pick_text

    lines = ["# This machine beside the reference", ""]
    mine, theirs = answers
    refs = {a.question.key: a for a in theirs}
    both = [(a, refs[a.question.key]) for a in mine if a.question.key in refs and agreement(a, refs[a.question.key])]
    if both:
        lines += [f"## {BOTH_SECTION}", "", "| question | this machine | reference machine | beside each other |",
                  "|---|---|---|---|"]
        lines += [f"| {a.question.label} | {pick_text(a)} ({md(a.status.value if a.status else '-')}) | "
                  f"{pick_text(r)} ({md(r.status.value if r.status else '-')}) | {agreement(a, r)} |" for a, r in both]
        lines.append("")
    shown = COMPARE.notebook in titles and _section_shown(out_dir / f"{COMPARE.notebook}.ipynb", MATCHED_SECTION)
    more = f"{COMPARE.notebook}.ipynb#{anchor(MATCHED_SECTION)}" if shown else None
    tables = [(name, comparison(runs[name][0], ref_runs[name][0], suites[name], more)) for name in titles
              if name in runs and name in ref_runs]
    tables = [(name, table) for name, table in tables if table]
    if tables:
        lines += [f"The **reference run** committed with the book ({md_code(reference.name + '/')}): "
                  f"{_machine_line([meta for _, meta in ref_runs.values()])}. Like for like: the same case (bytes, "
                  "codec, dataset, layout, fsync, cache state) and the same contenders, each against its own "
                  "ceiling; what only one run measured is named, not compared.", ""]
        for name, table in tables:
            lines += [f"## {titles[name]}", "", table, "",
                      f"The figures, the tables and every ranking: [{titles[name]}]({name}.ipynb).", ""]
    elif not both:
        lines.append("Nothing to set side by side: this book has no reference run, or no chapter measured on this "
                     "machine that the reference measured too.")
    (out_dir / f"{BESIDE}.md").write_text("\n".join(lines).rstrip() + "\n")
    return len(tables)


def _numbers_csv(out_dir: Path, name: str, df: pd.DataFrame) -> str:
    """Write the rows a chapter shows beside its page (``NAME.csv``, every text cell a spreadsheet would run as a
    formula neutralised: ``records.store.csv_safe_frame``, as ``iobench export``); its name, for the link the book
    turns into a download."""
    from benchmarks_lib.records.store import csv_safe_frame, write_atomic

    target = out_dir / f"{name}.csv"
    text = csv_safe_frame(df).to_csv(index=False).encode()
    write_atomic(target, lambda fh: fh.write(text))  # renamed into place: a link there is replaced, never followed
    return target.name


#: the front page's summary picture (``chapters.writers.ceiling_summary``), written beside the page
SUMMARY_SVG = "summary.svg"


def _summary_figure(out_dir: Path, df: pd.DataFrame, chapter: str) -> list[str]:
    """The front page's summary picture of a writers run, written beside the page as SVG (its text kept as text:
    sharp at any zoom, legible where ``figures.js`` keeps it at 65% on a phone), and the Markdown lines that show
    it (``chapter``: the notebook of the writers run, linked for its numbers); none when the run has no share of
    the ceiling to draw. Its labels are escaped by matplotlib's SVG writer, and an image runs no script."""
    import io

    import matplotlib
    import matplotlib.pyplot as plt

    from benchmarks_lib.chapters.writers import ceiling_summary
    from benchmarks_lib.records.store import write_atomic

    fig = ceiling_summary(df)
    if fig is None:
        return []
    svg = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "iobench"}):
        fig.savefig(svg, format="svg")
    plt.close(fig)
    write_atomic(out_dir / SUMMARY_SVG, lambda fh: fh.write(svg.getvalue()))
    return [f"```{{figure}} {SUMMARY_SVG}", ":class: iobench-figure",
            ":alt: Each writer's median throughput as a share of this machine's ceiling, per test", "",
            "Each writer's median throughput per test, as a share of this machine's raw I/O of the same bytes in the "
            f"same run. Medians only: the answers above say what the rule separated ([numbers]({chapter}.ipynb)).",
            "```", ""]


def run_it(root: Path) -> list[str]:
    """The front page's box saying how a reader measures their own machine, linking the repository where the
    checkout names one (``environment.repository_url``)."""
    from benchmarks_lib.base.environment import repository_url

    url = repository_url(root)
    where = f"[the repository]({url})" if url else "the repository"
    return ["```{admonition} Run it on your machine", ":class: tip",
            f"`make book` in a checkout of {where} measures your machine (7 minutes on 2 cores) and builds this "
            "book; each chapter's numbers are its CSV below.", "```"]


def write_answers_page(root: Path, results_dir: Path, out_dir: Path, run_ids: Mapping[str, str],
                       names: tuple[str, ...] | list[str] | None = None, reference: Path | None = None) -> Path:
    """The front page: the verdict box first (:func:`.frontpage.verdict_box`: one line per question of
    :mod:`benchmarks_lib.rules.answers`, answered from the run each chapter shows, each linked to its evidence),
    then every chapter (``names``; None: every declared chapter) linked, with its answer where no question of the
    box is its; without a run, how to get one. With a ``reference`` results directory (the committed ``reference/``
    run), tables set this machine beside the reference's newest run of each suite on the cases both measured
    (:func:`.frontpage.comparison`) on a page of their own (:func:`write_beside_page`), and the box answers from the
    reference what this machine did not measure."""
    from benchmarks_lib.book.plan import prior_need
    from benchmarks_lib.records.store import find_run
    from benchmarks_lib.rules.answers import QUESTIONS, answers, upgrade_answer
    from benchmarks_lib.rules.words import open_line

    runs = {}
    for name, run_id in run_ids.items():
        with contextlib.suppress(FileNotFoundError):
            runs[name] = load_run(find_run(results_dir, run_id))
    names = chapter_notebooks() if names is None else names
    suites = {name: chapter_named(name).suite for name in names}
    ref_dirs = newest_runs(reference) if reference is not None else {}
    ref_runs = {name: load_run(ref_dirs[suite]) for name, suite in suites.items() if suite in ref_dirs}
    boxed = {q.suite for q in QUESTIONS}
    lines = ["# The answers", ""]
    if runs:
        lines += [f"Measured on {_machine_line([meta for _, meta in runs.values()])} ([this machine](machine.md)).", ""]
    else:
        lines += ["No run was found in the results directory (the book was built without executing its chapters). "
                  "Run `make book` (or `iobench book`) to measure this machine; the answers then appear here.", ""]
    measured = {suites[n]: runs[n] for n in names if n in runs and suites[n]}
    mine = answers(measured)
    # a library measured at more than one version (the upgrades chapter, or writers with --versions): will the
    # upgrade hurt?
    upgrade = next((found for suite in ("upgrades", "writers") if suite in measured
                    and (found := upgrade_answer(*measured[suite])).measured), None)
    if upgrade is not None:
        mine.append(upgrade)
    theirs = answers({suites[n]: ref_runs[n] for n in names if n in ref_runs and suites[n]}) if ref_runs else None
    lines += [verdict_box(mine, theirs, set(names)), "",
              ":::{dropdown} What the verdicts mean",  # folded: the answers first, the key one click away
              f"{legend()} Each answer is the decision of the run its chapter shows; "
              "[Statistics](../methodology.md#statistics) says how.", ":::", ""]
    if still := open_line(mine, {suites[n]: prior_need(runs[n][1], True) for n in names if n in runs and suites[n]}):
        lines += [still, ""]
    if chapter := next((n for n in names if suites[n] == "writers" and n in runs), None):
        lines += _summary_figure(out_dir, runs[chapter][0], chapter)
    if theirs and runs and ref_runs:
        lines += [_beside_line(mine, theirs, [m for _, m in runs.values()], [m for _, m in ref_runs.values()]), ""]
    if "seeds" in names and measured:  # the seeds' claims, held against the runs this page answers from
        from benchmarks_lib.book.frontpage import seed_lines
        from benchmarks_lib.chapters.seeds import counts_line
        from benchmarks_lib.rules.seeds import check_claims

        checked = check_claims({suite: (df, str(meta.get("run_id") or "")) for suite, (df, meta) in measured.items()})
        tested = seed_lines(checked, mine)
        lines += [f"**The seeds' claims:** {counts_line(checked)} ([the seeds, checked here](seeds.ipynb))"
                  + (". Per answer:" if tested else "."), "", *tested, ""]
    lines += [*run_it(root), "", "## Every chapter", ""]
    for name in names:
        title = _notebook_title(template(name, root))
        chapter, suite = chapter_named(name), suites[name]
        text = ""
        if suite is None:  # a chapter that measures nothing states what it shows
            text = chapter.answer_of(pd.DataFrame())
        elif suite not in boxed and name in runs:
            text = chapter.answer_of(runs[name][0])
        elif suite not in boxed and name in ref_runs:
            text = f"Not measured in this build. **Reference machine:** {chapter.answer_of(ref_runs[name][0])}"
        elif suite not in boxed:
            text = "Not measured in this build: run `make book` to answer it."
        numbers = f" ([CSV]({_numbers_csv(out_dir, name, runs[name][0])}))" if name in runs else ""
        lines.append(f"- [{title}]({name}.ipynb){numbers}" + (f": {text}" if text else ""))
    compared = write_beside_page(out_dir, {n: runs[n] for n in names if n in runs},
                                 {n: ref_runs[n] for n in names if n in ref_runs},
                                 {n: _notebook_title(template(n, root)) for n in names}, suites, reference,
                                 (mine, theirs or []))
    if compared:
        lines += ["", f"[This machine beside the reference]({BESIDE}.md): {compared} chapter(s) like for like with the "
                  "reference run committed with the book."]
    page = out_dir / "answers.md"
    page.write_text("\n".join(lines).rstrip() + "\n")
    return page
