"""Build the book: execute the notebooks with papermill, write the generated pages (:mod:`.pages`), run
Jupyter Book.

Executed copies go to ``book/executed/`` (ignored by git); the HTML to ``_build/html``. A notebook's
``parameters`` cell is only ever read (``ast``, ``tokenize``), never executed here: it gives the names
``--set`` may use, the chapters' parameter tables and the reference page of every parameter.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from .records import read_run_json
from .specs import SpecError, parse_profile

ROOT = Path(__file__).resolve().parent.parent
EXECUTED = "book/executed/"
#: the committed reference run (``standard`` profile): the published book's numbers, shown beside the reader's
REFERENCE = ROOT / "reference"


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


def newest_runs(results_dir: Path) -> dict[str, Path]:
    """Suite -> its newest run under ``results_dir`` (none when the directory does not exist)."""
    from .records import read_run_json, run_dirs

    suites: dict[str, Path] = {}
    for run_dir in reversed(run_dirs(results_dir)):  # oldest first: the newest of a suite wins
        suites[read_run_json(run_dir / "run.json").get("suite")] = run_dir
    return suites


def recorded_runs(results_dir: Path, names: list[str], root: Path) -> dict[str, Path]:
    """Per notebook, the newest run of its suite under ``results_dir`` (``iobench book --from``);
    a notebook whose suite has no run there is refused before anything runs."""
    suites = newest_runs(results_dir)
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


def executed_run_id(path: Path) -> str | None:
    """The run an executed notebook shows: the ``RUN_ID`` papermill injected, or the run directory's name when
    it was drawn from a recorded run (``LOAD_RUN``, as ``--from`` injects it); None when neither is a literal."""
    injected = _assignments(path, "injected-parameters") if path.exists() else {}
    for key in ("RUN_ID", "LOAD_RUN"):
        with contextlib.suppress(ValueError, TypeError):
            value = ast.literal_eval(injected[key]) if key in injected else None
            if isinstance(value, str) and value:
                return value if key == "RUN_ID" else Path(value).name
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
            run_ids[name] = recorded[name].name  # its directory: what find_run finds, whatever run.json says
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
    from .pages import write_answers_page, write_machine_page, write_parameters_page  # pages read this module

    write_machine_page(results, out_dir, list(run_ids.values()))
    reference = root / REFERENCE.name
    write_answers_page(root, results, out_dir, run_ids, NOTEBOOKS,
                       reference=reference if reference.resolve() != results.resolve() else None)
    write_parameters_page(root, NOTEBOOKS, out_dir)
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(root), "-W", "-n", "--keep-going"]
    jb = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if jb.returncode != 0:
        sys.stderr.write(jb.stdout[-6000:] + jb.stderr[-6000:])
        raise BookError(f"jupyter-book build failed (exit {jb.returncode}); see the log above")
    return root / "_build" / "html" / "index.html"
