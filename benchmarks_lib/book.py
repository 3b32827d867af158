"""Build the book: execute the notebooks with papermill, write the answers, machine and parameters pages, run
Jupyter Book.

Executed copies go to ``book/executed/`` (ignored by git); the HTML to ``_build/html``. A notebook's
``parameters`` cell is only ever read (``ast``, ``tokenize``), never executed here: it gives the names
``--set`` may use, the chapters' parameter tables and the reference page of every parameter.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .chapters.common import ceiling_table
from .records import load_run, read_run_json
from .specs import SpecError, parse_profile

ROOT = Path(__file__).resolve().parent.parent
EXECUTED = "book/executed/"


def chapter_notebooks(root: Path = ROOT) -> tuple[str, ...]:
    """The chapters that are executed notebooks, in the order of ``_toc.yml`` (the one list of chapters)."""
    import yaml

    if not (root / "_toc.yml").exists():  # an installed package without the book's sources
        return ()
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", []) if "file" in c]
    return tuple(f[len(EXECUTED):] for f in files
                 if f.startswith(EXECUTED) and (root / "notebooks" / f"{f[len(EXECUTED):]}.ipynb").exists())


NOTEBOOKS = chapter_notebooks()


def project_root(root: str | Path | None = None) -> Path:
    """The directory holding _config.yml (the repository checkout, by default)."""
    root = Path(root) if root else ROOT
    if not (root / "_config.yml").exists():
        raise FileNotFoundError(f"no _config.yml in {root}: `iobench book` runs from a source checkout")
    return root


#: parameters the book itself sets (from its own options)
BOOK_PARAMETERS = ("PROFILE", "RESULTS_DIR", "RUN_ID")


class BookError(RuntimeError):
    """A notebook failed to execute or the book failed to build (one line; the log says more)."""


def _tagged_source(path: Path, tag: str) -> str:
    """The source of a notebook's first cell tagged ``tag`` ('' when there is none)."""
    nb = json.loads(path.read_text())
    for cell in nb.get("cells", []):
        if tag in cell.get("metadata", {}).get("tags", []):
            return "".join(cell["source"])
    return ""


def _assignments(path: Path, tag: str) -> dict[str, ast.expr]:
    """Name -> value expression of the assignments in a notebook's cell tagged ``tag`` (read, never executed)."""
    tree = ast.parse(_tagged_source(path, tag))
    return {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def notebook_suite(path: Path) -> str | None:
    """The suite a chapter notebook measures: the name in its one ``run_or_load("<suite>", ...)`` call; None for a
    chapter that measures nothing and reads the recorded runs instead (``compare``)."""
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb.get("cells", []) if c.get("cell_type") == "code")
    names = set(re.findall(r"run_or_load\(\s*[\"']([\w-]+)[\"']", code))
    if not names and "run_or_load(" not in code:
        return None
    if len(names) != 1:
        raise SpecError(f"notebook {path.name} must call run_or_load exactly once with a suite name; found {names}")
    return names.pop()


def recorded_runs(results_dir: Path, names: list[str], root: Path) -> dict[str, Path]:
    """Per notebook, the newest run of its suite under ``results_dir`` (``iobench book --from``);
    a notebook whose suite has no run there is refused before anything runs."""
    from .records import read_run_json, run_dirs

    suites: dict[str, Path] = {}
    for run_dir in reversed(run_dirs(results_dir)):  # oldest first: the newest of a suite wins
        suites[read_run_json(run_dir / "run.json").get("suite")] = run_dir
    out = {}
    for name in names:
        suite = notebook_suite(root / "notebooks" / f"{name}.ipynb")
        if suite is None:  # reads the runs, measures nothing
            continue
        if suite not in suites:
            raise SpecError(f"--from {results_dir}: no {suite!r} run there for {name}; runs found for: "
                            f"{', '.join(sorted(s for s in suites if s)) or 'none'}")
        out[name] = suites[suite]
    return out


def notebook_parameters(path: Path) -> list[str]:
    """The names assigned in a notebook's cell tagged ``parameters``."""
    return list(_assignments(path, "parameters"))


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
    source = _tagged_source(path, "parameters")
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
    """``text`` safe in a markdown table cell: pipes escaped, ``<`` outside code spans escaped (not HTML)."""
    parts = text.replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else p.replace("<", "\\<") for i, p in enumerate(parts))


def _code(value: object) -> str:
    return "`" + repr(value).replace("`", "'") + "`"


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
    """A chapter notebook's template: in the working directory (a checkout, or notebooks/ in JupyterLab)."""
    for folder in (Path.cwd() / "notebooks", Path.cwd(), ROOT / "notebooks"):
        if (folder / f"{notebook}.ipynb").exists():
            return folder / f"{notebook}.ipynb"
    raise FileNotFoundError(f"notebook {notebook}.ipynb not found in notebooks/, the working directory or {ROOT}")


def parameters_table(notebook: str, values: Mapping[str, object], run=None) -> str:
    """Markdown: the notebook's parameters, the values this run used and what each means.

    ``values`` are the notebook's globals after its parameters cell (and papermill's); ``run`` (a
    :class:`~benchmarks_lib.runner.RunResult`) gives what a parameter left as None resolved to, and for a
    loaded run (``LOAD_RUN``) the values that run was measured with.
    """
    meta = run.meta if run is not None else {}
    recorded = {str(k).upper(): v for k, v in meta.get("params", {}).items()}
    recorded.update({k: meta[k.lower()] for k in ("PROFILE", "RUN_ID") if meta.get(k.lower()) is not None})
    loaded = bool(values.get("LOAD_RUN"))

    def shown(name: str) -> str:
        if name not in recorded:
            return _code(values.get(name))
        given = values.get(name)
        marker = " *(profile)*" if given is None and not loaded and name != "RUN_ID" else ""
        return _code(recorded[name]) + marker

    lead = ("**Parameters of this run** (measured earlier and loaded: the values it was measured with)" if loaded
            else "**Parameters of this run** (*(profile)*: left as `None`, so the profile's default)" if meta
            else "**Parameters of this run**")
    lines = [lead, "", "| parameter | value | meaning |", "|---|---|---|"]
    for row in _grouped(parameter_docs(_notebook_path(notebook))):
        names = ", ".join(f"`{p.name}`" for p in row)
        lines.append(f"| {names} | {_markdown_cell(', '.join(shown(p.name) for p in row))} | "
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
        path = root / "notebooks" / f"{name}.ipynb"
        lines += [f"## {_notebook_title(path)}", "",
                  f"[The chapter](./{name}.ipynb), from `notebooks/{name}.ipynb`.", "",
                  "| parameter | default | meaning |", "|---|---|---|"]
        for row in _grouped(parameter_docs(path)):
            lines.append(f"| {', '.join(f'`{p.name}`' for p in row)} | "
                         f"{_markdown_cell(', '.join(f'`{p.default}`' for p in row))} | "
                         f"{_markdown_cell(row[0].meaning)} |")
        lines.append("")
    page = out_dir / "parameters.md"
    page.write_text("\n".join(lines))
    return page


def executed_run_id(path: Path) -> str | None:
    """The run id papermill injected into an executed notebook (a literal), or None."""
    value = _assignments(path, "injected-parameters").get("RUN_ID") if path.exists() else None
    with contextlib.suppress(ValueError, TypeError):
        return str(ast.literal_eval(value)) if value is not None else None
    return None


def split_parameters(parameters: dict, names: list[str], root: Path) -> dict[str, dict]:
    """Per notebook, the ``--set`` parameters it receives; unknown keys are refused before anything runs.

    ``NAME`` goes to every selected notebook that declares it (at least one must); ``NOTEBOOK:NAME``
    to that notebook only. Keys are only ever names from the parameters cells; values stay data.
    """
    declared = {n: notebook_parameters(root / "notebooks" / f"{n}.ipynb") for n in names}
    out: dict[str, dict] = {n: {} for n in names}
    for key, value in parameters.items():
        notebook, _, name = key.rpartition(":")
        if name in BOOK_PARAMETERS:
            raise SpecError(f"parameter {name!r} is set by the book itself; use --profile / --results-dir")
        targets = [notebook] if notebook else [n for n in names if name in declared[n]]
        if notebook and notebook not in declared:
            raise SpecError(f"--set {key!r}: notebook {notebook!r} is not among those built; "
                            f"allowed: {', '.join(names)}")
        if not targets or any(name not in declared[t] for t in targets):
            where = notebook or "any selected notebook"
            known = sorted({p for t in (targets or names) for p in declared[t]} - set(BOOK_PARAMETERS))
            raise SpecError(f"--set {key!r}: {name!r} is not a parameter of {where}; allowed: {', '.join(known)}")
        for t in targets:
            out[t][name] = value
    return out


def execute_notebook(name: str, *, profile: str | None, results_dir: Path, parameters: dict, out_dir: Path,
                     root: Path) -> Path:
    """Run one chapter with papermill; ``profile`` None for a chapter that measures nothing (no ``PROFILE``)."""
    import papermill as pm

    source = root / "notebooks" / f"{name}.ipynb"
    target = out_dir / f"{name}.ipynb"
    params = {**({"PROFILE": profile} if profile else {}), "RESULTS_DIR": str(results_dir.resolve()), **parameters}
    print(f"executing {source.name} ({profile or 'recorded runs'}) ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(str(source), str(target), parameters=params, cwd=str(root), progress_bar=False,
                            kernel_name="python3", log_output=False)
    except pm.PapermillExecutionError as exc:
        raise BookError(f"notebook {name} failed: {exc.ename}: {' '.join(str(exc.evalue).split())[:300]} "
                        f"(executed copy with the error: {target})") from None
    hide_injected_parameters(target)
    print(f"  done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return target


def hide_injected_parameters(path: Path) -> None:
    """Tag the cell papermill injected (``injected-parameters``) ``remove-cell``: the book shows the
    parameters as a table, not as code."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    nbformat.write(nb, path)


def write_machine_page(results_dir: Path, out_dir: Path, run_ids: list[str]) -> Path:
    """A page describing the machine, from the environment recorded by the runs."""
    from .records import find_run

    lines = ["# This machine", "",
             "Every number in this book was measured on the machine described here, in the runs listed below.", ""]
    env: dict = {}
    ceilings = []
    for run_id in run_ids:
        try:
            run_dir = find_run(results_dir, run_id)
        except FileNotFoundError:
            continue
        df, meta = load_run(run_dir)
        env = env or meta.get("environment", {})
        table = ceiling_table(df)
        if len(table):
            ceilings.append((meta["suite"], run_id, table))
    if env:
        lines += ["| property | value |", "|---|---|"]
        for key in sorted(env):
            value = env[key]
            if key == "ram_bytes" and value:
                value = f"{value / 2**30:.1f} GiB"
            if key == "fs_free_bytes" and value:
                value = f"{value / 1e9:.0f} GB"
            lines.append(f"| {key} | {'' if value is None else str(value).replace('|', '/')} |")
    else:
        lines.append("No run was found (build without execution).")
    for suite, run_id, table in ceilings:
        lines += ["", f"## Ceiling measured in the {suite} run (`{run_id}`)", "",
                  "| operation | GB/s median | GB/s min | GB/s max | n |", "|---|---|---|---|---|"]
        for _, r in table.iterrows():
            lines.append(f"| {r['operation']} | {r['GB/s median']:.3f} | {r['GB/s min']:.3f} | "
                         f"{r['GB/s max']:.3f} | {r['n']} |")
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


def write_answers_page(root: Path, results_dir: Path, out_dir: Path, run_ids: Mapping[str, str],
                       names: tuple[str, ...] | list[str] = NOTEBOOKS) -> Path:
    """The front page: per chapter (``names``), its answer (``answer(df)`` of the chapter module named after the
    run's suite) computed from the run the chapter shows, and a link to the chapter; without a run, how to get one."""
    import importlib

    from .records import find_run

    runs = {}
    for name, run_id in run_ids.items():
        with contextlib.suppress(FileNotFoundError):
            runs[name] = load_run(find_run(results_dir, run_id))
    lines = ["# The answers", ""]
    if runs:
        metas = [meta for _, meta in runs.values()]
        env = metas[0].get("environment", {})
        cores = env.get("cpu_affinity") or env.get("cpu_count")
        lines += [f"Measured on **{env.get('machine', 'this machine')}** ({env.get('cpu_model') or 'CPU not recorded'}"
                  f"{f', {cores} usable cores' if cores else ''}), "
                  f"{', '.join(sorted({str(m.get('profile')) for m in metas}))} profile, "
                  f"{min(_when(m) for m in metas)}; [this machine](machine.md) has the details and its ceiling. "
                  "Each answer is computed from the run its chapter shows.", ""]
    else:
        lines += ["No run was found in the results directory (the book was built without executing its chapters). "
                  "Run `make book` (or `iobench book`) to measure this machine; the answers then appear here.", ""]
    for name in names:
        title = _notebook_title(root / "notebooks" / f"{name}.ipynb")
        if name in runs:
            df, meta = runs[name]
            text = importlib.import_module(f"{__package__}.chapters.{meta['suite']}").answer(df)
        elif notebook_suite(root / "notebooks" / f"{name}.ipynb") is None:
            text = "This chapter measures nothing: it sets two recorded runs of a suite side by side, case by case."
        else:
            text = "Not measured in this build: run `make book` to answer it."
        lines += [f"## {title}", "", text, "", f"The figures, the tables and every ranking: [{title}]({name}.ipynb).",
                  ""]
    page = out_dir / "answers.md"
    page.write_text("\n".join(lines).rstrip() + "\n")
    return page


def build_book(
    *,
    profile: str = "quick",
    results_dir: str | Path = "results",
    execute: bool = True,
    notebooks: list[str] | None = None,
    parameters: dict | None = None,
    root: str | Path | None = None,
    assume_yes: bool = False,
    from_runs: str | Path | None = None,
) -> Path:
    """Execute the notebooks (unless ``execute`` is false) and build the HTML; return index.html.

    ``parameters`` go to every notebook that declares them; a key ``"<notebook>:<NAME>"`` goes to
    that notebook only. ``from_runs`` (a results directory, e.g. ``reference/``) draws every chapter
    from the newest recorded run of its suite there (``LOAD_RUN``) instead of measuring. Everything
    is validated before the first notebook runs.
    """
    from .preflight import check_writable_dir

    profile = parse_profile(profile)
    root = project_root(root)
    names = notebooks or list(NOTEBOOKS)
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown:
        raise SpecError(f"notebook {unknown[0]!r} is unknown; allowed: {', '.join(NOTEBOOKS)}")
    per_notebook = split_parameters(parameters or {}, names, root)
    recorded: dict[str, Path] = {}
    if from_runs is not None:
        if any("LOAD_RUN" in p for p in per_notebook.values()):
            raise SpecError("--set LOAD_RUN and --from both name the runs to draw; give one of them")
        results_dir = Path(from_runs)
        if not results_dir.is_dir():
            raise SpecError(f"--from {from_runs}: not a directory of recorded runs")
        recorded = recorded_runs(results_dir, names, root) if execute else {}
    else:
        check_writable_dir(Path(results_dir), "results directory")
    if assume_yes:
        os.environ["IOBENCH_YES"] = "1"  # read by the runner inside each notebook's kernel
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_ids = {}
    out_dir = root / "book" / "executed"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = Path(results_dir)
    if not results.is_absolute():
        results = Path.cwd() / results
    measuring = {n: notebook_suite(root / "notebooks" / f"{n}.ipynb") is not None for n in NOTEBOOKS}
    for name in sorted(NOTEBOOKS, key=lambda n: not measuring[n]):  # the runs first, then the chapters reading them
        target = out_dir / f"{name}.ipynb"
        if execute and name in names and not measuring[name]:
            execute_notebook(name, profile=None, results_dir=results, parameters=per_notebook[name], out_dir=out_dir,
                             root=root)
        elif execute and name in recorded:
            meta = read_run_json(recorded[name] / "run.json")
            run_ids[name] = meta["run_id"]
            own = {"LOAD_RUN": str(recorded[name].resolve()), **per_notebook[name]}
            execute_notebook(name, profile=meta.get("profile", profile), results_dir=results, parameters=own,
                             out_dir=out_dir, root=root)
        elif execute and name in names:
            run_ids[name] = f"book-{profile}-{stamp}-{name}"
            own = {"RUN_ID": run_ids[name], **per_notebook[name]}
            execute_notebook(name, profile=profile, results_dir=results, parameters=own, out_dir=out_dir, root=root)
        elif not target.exists():
            target.write_text((root / "notebooks" / f"{name}.ipynb").read_text())
        elif run_id := executed_run_id(target):  # built earlier: its machine figures still belong here
            run_ids[name] = run_id
    write_machine_page(results, out_dir, list(run_ids.values()))
    write_answers_page(root, results, out_dir, run_ids, NOTEBOOKS)
    write_parameters_page(root, NOTEBOOKS, out_dir)
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(root), "-W", "-n", "--keep-going"]
    jb = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if jb.returncode != 0:
        sys.stderr.write(jb.stdout[-6000:] + jb.stderr[-6000:])
        raise BookError(f"jupyter-book build failed (exit {jb.returncode}); see the log above")
    return root / "_build" / "html" / "index.html"
