"""Build the book: execute the notebooks with papermill, write the generated pages (:mod:`.pages`), run
Jupyter Book.

Executed copies go to ``book/executed/`` (ignored by git); the HTML to ``_build/html``. A notebook's
``parameters`` cell is only ever read (``ast``, ``tokenize``), never executed here: it gives the names
``--set`` may use, the chapters' parameter tables and the reference page of every parameter.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks_lib.base.importpath import SAFE_PATH, child_env
from benchmarks_lib.base.paths import REFERENCE, RESULTS_DIR, ROOT
from benchmarks_lib.base.specs import SpecError, parse_duration, parse_profile, parse_seconds
from benchmarks_lib.base.terminal import visible
from benchmarks_lib.book.notebooks import (
    chapter_notebooks,
    executed_run_id,
    notebook_parameters,
    table_of_contents,
    template,
    write_table_of_contents,
)
from benchmarks_lib.book.plan import (
    BOOK_BUDGET_S,
    MAX_PASSES,
    BudgetShares,
    continues,
    front_page_open,
    newest_run,
    open_needs,
    pass_line,
    plan_lines,
    prior_need,
)
from benchmarks_lib.book.sphinx_offline import STATIC_CHARTS
from benchmarks_lib.chapters.chapter import chapter_named, notebook_name
from benchmarks_lib.records.store import newest_runs, read_run_json


def project_root(root: str | Path | None = None) -> Path:
    """The directory holding _config.yml (the repository checkout, by default)."""
    root = Path(root) if root else ROOT
    if not (root / "_config.yml").exists():
        raise FileNotFoundError(f"no _config.yml in {root}: `iobench book` runs from a source checkout")
    return root


#: parameters the book itself sets (from its own options)
BOOK_PARAMETERS = ("PROFILE", "RESULTS_DIR", "RUN_ID", "BUDGET", "CONTINUE", "CEILING_FROM")


class BookError(RuntimeError):
    """A notebook failed to execute or the book failed to build (one line; the log says more)."""


def recorded_runs(results_dir: Path, names: list[str]) -> dict[str, Path]:
    """Per notebook, the newest finished run of its suite under ``results_dir`` (``iobench book --from``);
    a notebook whose suite has no finished run there is refused before anything runs."""
    unfinished: dict[str, Path] = {}
    suites = newest_runs(results_dir, unfinished)
    out = {}
    for name in names:
        suite = chapter_named(name).suite
        if suite is None:  # reads the runs, measures nothing
            continue
        if suite not in suites and suite in unfinished:
            raise SpecError(f"--from {results_dir}: run {str(unfinished[suite])!r} is incomplete (still running or "
                            f"interrupted: its run.json has no finished_at), and no finished {suite!r} run is there")
        if suite not in suites:
            raise SpecError(f"--from {results_dir}: no {suite!r} run there for {name}; runs found for: "
                            f"{', '.join(sorted(s for s in suites if s)) or 'none'}")
        out[name] = suites[suite]
    return out


def split_parameters(parameters: dict, names: list[str], root: Path) -> dict[str, dict]:
    """Per notebook, the ``--set`` parameters it receives; unknown keys are refused before anything runs.

    ``NAME`` goes to every selected notebook that declares it (at least one must); ``NOTEBOOK:NAME``
    to that notebook only. Keys are only ever names from the parameters cells; values stay data.
    """
    declared = {n: notebook_parameters(template(n, root)) for n in names}
    out: dict[str, dict] = {n: {} for n in names}
    for key, value in parameters.items():
        notebook, _, name = key.rpartition(":")
        notebook = notebook_name(notebook)
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


#: a measuring chapter's cell may run this many times its suite's stated time on the profile, and at least
#: ``TIMEOUT_MIN_S`` (a chapter that only reads runs gets that); the seed profile states no time
TIMEOUT_FACTOR = 4
TIMEOUT_MIN_S = 600
TIMEOUT_SEED_S = 6 * 3600


def notebook_timeout(suite: str | None, profile: str | None) -> float:
    """Seconds one cell of a chapter may run before the book calls it hung: scaled to the time its suite states
    for ``profile`` (``suite`` None: a chapter that measures nothing, or one drawn from a recorded run)."""
    from benchmarks_lib.suites import get_suite

    if suite is None or profile is None:
        return TIMEOUT_MIN_S
    budget = get_suite(suite).time_budget_s.get(profile)
    return TIMEOUT_SEED_S if budget is None else max(TIMEOUT_MIN_S, TIMEOUT_FACTOR * budget)


def _kernel_manager(log, env: dict[str, str], runtime: Path):
    """A kernel manager whose kernel writes its own log (ZMQ warnings, tracebacks of its shutdown) to ``log``, not
    to the reader's terminal, and gets ``env`` on top of this process's environment (passed, never set here).

    The kernel imports nothing from its working directory: safe-path on, only absolute ``PYTHONPATH`` entries
    (``importpath.child_env``), and IPython told not to add the directory back. It starts as ``-m ipykernel``, not
    ``-m ipykernel_launcher``, which drops the first entry of its path when that names the working directory (as
    Python without safe-path puts it there): in a book built in its own checkout, that is this package's parent.

    Its connection file (which holds the key that signs every message to the kernel) is written in ``runtime``, a
    directory of this build's own that :func:`execute_notebook` removes however the notebook ends, a signal
    included: never left in ``$TMPDIR`` or Jupyter's runtime directory."""
    from jupyter_client.manager import AsyncKernelManager

    class LoggedKernelManager(AsyncKernelManager):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.connection_file = str(runtime / f"kernel-{self.kernel_id or 'book'}.json")

        async def _async_pre_start_kernel(self, **kw):
            cmd, kw = await super()._async_pre_start_kernel(**kw)
            kw["stderr"] = kw["stdout"] = log
            kw["env"] = child_env({**kw.get("env", os.environ), **env})
            if cmd[1:3] == ["-m", "ipykernel_launcher"]:  # Jupyter's own kernel (not one of a person's)
                cmd = [cmd[0], SAFE_PATH, "-m", "ipykernel", *cmd[3:]]
            return [*cmd, "--IPKernelApp.ignore_cwd=True"], kw

    return LoggedKernelManager


@contextlib.contextmanager
def _logging_to(path: Path):
    """papermill's, nbclient's and asyncio's log lines ("Kernel died ...", a cell's task left behind by Ctrl-C) go to
    the kernel's log while a chapter runs."""
    import logging

    handler = logging.FileHandler(path, mode="a")
    loggers = [logging.getLogger(n) for n in ("papermill", "nbclient", "traitlets", "asyncio")]
    saved = [(lg.propagate, lg.handlers[:]) for lg in loggers]
    for lg in loggers:
        lg.propagate, lg.handlers = False, [handler]
    kept: set[str] = set()
    try:
        yield
    except KeyboardInterrupt:
        # the cell's abandoned task may fail after this (its kernel dying): asyncio says so into the kernel's log for
        # the rest of this process, which is ending, never as a traceback under the one line Ctrl-C prints
        kept.add("asyncio")
        raise
    finally:
        for lg, (propagate, handlers) in zip(loggers, saved, strict=True):
            if lg.name not in kept:
                lg.propagate, lg.handlers = propagate, handlers
        if not kept:
            handler.close()


def _hung_cell(path: Path) -> str:
    """'cell N (its first line)' for the last cell papermill started in an executed copy."""
    nb = json.loads(path.read_text()) if path.exists() else {"cells": []}
    started = [(i, c) for i, c in enumerate(nb["cells"], 1) if (c.get("metadata", {}).get("papermill") or {})
               .get("start_time")]
    if not started:
        return "a cell"
    i, cell = started[-1]
    first = next((line.strip() for line in "".join(cell.get("source", "")).splitlines() if line.strip()), "")
    return f"cell {i} ({first[:80]!r})"


@contextlib.contextmanager
def _removed(directory: Path):
    """``directory`` (this build's own, made by ``tempfile``) removed with what it holds when the block ends,
    however it ends."""
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def execute_notebook(source: Path, *, profile: str | None, results_dir: Path, parameters: dict, out_dir: Path,
                     root: Path, timeout: float, env: dict[str, str] | None = None) -> Path:
    """Run one chapter's notebook (``source``, its template) with papermill in ``root``; ``profile`` None for a
    chapter that measures nothing (no ``PROFILE``).

    A cell that runs longer than ``timeout`` seconds fails the book with one line naming the notebook and the
    cell; Ctrl-C raises KeyboardInterrupt naming the notebook. The kernel's own log goes to ``_build/logs/``."""
    import papermill as pm
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    name = source.stem
    target = out_dir / f"{name}.ipynb"
    params = {**({"PROFILE": profile} if profile else {}), "RESULTS_DIR": str(results_dir.resolve()), **parameters}
    log_path = root / "_build" / "logs" / f"{name}.kernel.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    print(f"executing {source.name} ({visible(profile or 'recorded runs')}) ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    runtime = Path(tempfile.mkdtemp(prefix="iobench-kernel-"))  # mode 0700: the kernel's key is the reader's
    with open(log_path, "ab") as log, _logging_to(log_path), _removed(runtime):
        try:
            pm.execute_notebook(str(source), str(target), parameters=params, cwd=str(root), progress_bar=False,
                                kernel_name="python3", log_output=False, execution_timeout=timeout,
                                kernel_manager_class=_kernel_manager(log, env or {}, runtime))
        except pm.PapermillExecutionError as exc:
            raise BookError(f"notebook {name} failed: {exc.ename}: {' '.join(str(exc.evalue).split())[:300]} "
                            f"(executed copy with the error: {target})") from None
        except CellTimeoutError:
            raise BookError(f"notebook {name} hung: {_hung_cell(target)} ran past {timeout:.0f} s, the limit for "
                            f"its profile (--timeout SECONDS changes it); finished cases are kept, the kernel's log "
                            f"is {log_path}") from None
        except DeadKernelError:
            raise BookError(f"notebook {name}: its kernel died in {_hung_cell(target)}; the kernel's log is "
                            f"{log_path}") from None
        except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM (``signals.Terminated``): kept as which it was
            import gc

            gc.collect()  # nbclient's abandoned cell task says "exception never retrieved" now, into the log
            raise type(stop)(name) from None
    hide_injected_parameters(target)
    hide_empty_sections(target)
    without_local_paths(target, {str(results_dir.resolve()): "results", str(Path(root).resolve()): ".",
                                 str(Path.home()): "~"})
    print(f"  done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return target


def without_local_paths(path: Path, places: dict[str, str]) -> None:
    """The executed notebook ``path`` (the one a reader downloads) with the build machine's paths (keys of
    ``places``: the results directory, the checkout, the home directory; the longest first) named as a reader of
    any machine would (``results/vm/RUN``, ``./notebooks/NAME.ipynb``, ``~``): the injected parameters,
    papermill's record of its input and output, what the outputs print. A path is replaced whole, never where it
    is the start of a longer name (``/work/main2``)."""
    import re

    text = path.read_text(encoding="utf-8")
    for local, shown in sorted(places.items(), key=lambda kv: -len(kv[0])):
        if len(local) > 1:  # never the root directory itself
            named = json.dumps(shown)[1:-1]
            text = re.sub(re.escape(json.dumps(local)[1:-1]) + r"(?![\w.-])", lambda _m, named=named: named, text)
    path.write_text(text, encoding="utf-8")


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


def hide_empty_sections(path: Path) -> None:
    """Tag ``remove-cell`` each section of the executed notebook ``path`` that shows nothing: a heading cell (its
    prose with it) and the code cells up to the next heading of its level or above, where every code cell the
    book would show printed nothing (a comparison with no second run has no differences, flags or ratios to show:
    one sentence says why in the section before). The cells stay in the notebook a reader downloads."""
    import re

    import nbformat

    def level(cell) -> int | None:
        found = re.match(r"(#{2,6})\s", cell.source) if cell.cell_type == "markdown" else None
        return len(found.group(1)) if found else None

    nb = nbformat.read(path, as_version=4)
    starts = [i for i, cell in enumerate(nb.cells) if level(cell)]
    for i in starts:
        end = next((j for j in starts if j > i and level(nb.cells[j]) <= level(nb.cells[i])), len(nb.cells))
        cells = nb.cells[i + 1:end]
        shown = [c for c in cells if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", [])]
        if shown and all(c.cell_type == "code" for c in cells) and not any(c.get("outputs") for c in shown):
            for cell in nb.cells[i:end]:
                tags = cell.metadata.get("tags", [])
                cell.metadata["tags"] = tags if "remove-cell" in tags else [*tags, "remove-cell"]
    nbformat.write(nb, path)


def chart_scripts(root: Path) -> str | None:
    """Fetch (once; then cached) the explorer's pinned chart scripts before anything runs: None when they are
    there, else one line saying what is missing and how to fetch it."""
    from benchmarks_lib.book.vendor import VENDOR_ROOT, VendorError, install

    try:
        install(root / VENDOR_ROOT)
    except VendorError as exc:
        return (f"{exc}. The book is built without the explorer's charts: it shows its first selection as "
                f"static figures. To fetch them, build once with access to the npm registry (or a mirror: "
                f"IOBENCH_NPM_REGISTRY=https://...).")
    return None


def build_book(
    *,
    profile: str = "quick",
    results_dir: str | Path = RESULTS_DIR,
    execute: bool = True,
    notebooks: list[str] | None = None,
    parameters: dict | None = None,
    root: str | Path | None = None,
    assume_yes: bool = False,
    from_runs: str | Path | None = None,
    timeout: float | None = None,
    html: bool = True,
    budget: float | str | None = None,
    fresh: bool = False,
) -> Path:
    """Execute the notebooks (unless ``execute`` is false) and build the HTML (unless ``html`` is false: the
    generated pages only); return index.html.

    ``parameters`` go to every notebook that declares them; a key ``"<notebook>:<NAME>"`` goes to
    that notebook only. ``from_runs`` (a results directory, e.g. ``reference/``) draws every chapter
    from the newest recorded run of its suite there (``LOAD_RUN``) instead of measuring. Everything
    is validated before the first notebook runs. ``timeout`` (seconds a cell may run) overrides each chapter's
    own limit (:func:`notebook_timeout`). ``budget`` (a duration) is the time the measuring notebooks may take
    together (:class:`BudgetShares`). Without the explorer's chart scripts (offline, nothing cached) the book
    is built with the explorer's first selection drawn as static figures, and one line says how to fetch them.
    Each measuring chapter continues this machine's last run of its suite where nothing that could change a time
    differs (``run.continuation``: its undecided questions go on), unless ``fresh``.
    """
    from benchmarks_lib.run.preflight import check_writable_dir

    profile = parse_profile(profile)
    if timeout is not None:
        timeout = parse_seconds(timeout, "--timeout", minimum=1)
    if budget is not None:
        budget = parse_duration(budget, "--budget")
    root = project_root(root)
    chapters = chapter_notebooks()
    table_of_contents(root)  # a _toc.yml without the chapters' part is refused before anything runs
    names = [notebook_name(n) for n in notebooks] if notebooks else list(chapters)
    unknown = [n for n in names if n not in chapters]
    if unknown:
        raise SpecError(f"notebook {unknown[0]!r} is unknown; allowed: {', '.join(chapters)}")
    per_notebook = split_parameters(parameters or {}, names, root)
    recorded: dict[str, Path] = {}
    if from_runs is not None:
        if any("LOAD_RUN" in p for p in per_notebook.values()):
            raise SpecError("--set LOAD_RUN and --from both name the runs to draw; give one of them")
        results_dir = Path(from_runs)
        if not results_dir.is_dir():
            raise SpecError(f"--from {from_runs}: not a directory of recorded runs")
        recorded = recorded_runs(results_dir, names) if execute else {}
    else:
        check_writable_dir(Path(results_dir), "results directory")
    kernel_env = {"IOBENCH_YES": "1"} if assume_yes else {}  # read by the runner inside each notebook's kernel
    viewed = [name for name in names if "VIEW" in notebook_parameters(template(name, root))]
    for name in viewed:
        if per_notebook[name].get("VIEW") == "widgets":
            raise SpecError(f"{name}: VIEW 'widgets' needs a kernel, and none runs behind the book's pages; "
                            "allowed in the book: charts, static")
    charts = chart_scripts(root)
    if charts is not None:
        print(f"note: {charts}", file=sys.stderr, flush=True)
    for name in viewed:  # no kernel behind a web page: the explorer's charts redraw in the browser, else static
        per_notebook[name].setdefault("VIEW", "charts" if charts is None else "static")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_ids = {}
    out_dir = root / "book" / "executed"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = Path(results_dir)
    if not results.is_absolute():
        results = Path.cwd() / results
    suites = {n: chapter_named(n).suite for n in chapters}
    budgeted = [n for n in names if execute and suites[n] is not None and n not in recorded
                and "BUDGET" in notebook_parameters(template(n, root))]
    if budget is None and from_runs is None:
        budget = BOOK_BUDGET_S.get(profile)
    needs = {n: prior_need(found[1], not fresh and continues(found[1]))
             if (found := newest_run(results, str(suites[n]), profile)) else None for n in budgeted}
    shares = BudgetShares(budget, {n: suites[n] for n in budgeted}, profile,
                          reading=sum(1 for n in names if execute and suites[n] is None), needs=needs)
    measuring = shares.in_order([n for n in names if execute and suites[n] is not None and n not in recorded])
    for line in plan_lines(measuring, suites, shares, profile, results, fresh):
        print(line, file=sys.stderr, flush=True)
    if execute and "seeds" in names and measuring:  # what the seeds chapter will check, at which sizes
        from benchmarks_lib.rules.seeds import sizes_lines
        from benchmarks_lib.run.runner import resolve_params

        said = sizes_lines(profile, lambda suite: resolve_params(suite, {}, profile))
        for line in said if profile == "seed" else said[:1]:  # each claim's sizes where the seeds' own are the aim
            print(f"  {line}", file=sys.stderr, flush=True)
    # the reference run committed with the book, set beside this machine's (none where the book is drawn from it)
    reference = root / REFERENCE.name
    reference = reference if reference.is_dir() and reference.resolve() != results.resolve() else None
    measured: list[str] = []  # the runs this build made so far: a later one takes a ceiling they measured

    def measure(name: str, run_id: str, share: float | None, going_on: bool) -> None:
        """Run chapter ``name``'s notebook as run ``run_id`` (its share of the budget), going on from this machine's
        last run of its suite where ``going_on``, the time counted."""
        run_ids[name] = run_id
        source = template(name, root)
        own = {"RUN_ID": run_id, **per_notebook[name]}
        if "BUDGET" in notebook_parameters(source):
            own["BUDGET"] = share
        if "CONTINUE" in notebook_parameters(source):
            own["CONTINUE"] = going_on
        if "CEILING_FROM" in notebook_parameters(source):  # the ceiling once per book (``run.shared_ceiling``)
            own["CEILING_FROM"] = list(measured)
            measured.append(run_id)
        limit = timeout or notebook_timeout(suites[name], profile)
        with shares.spending():
            execute_notebook(source, profile=profile, parameters=own, timeout=limit, results_dir=results,
                             out_dir=out_dir, root=root, env=kernel_env)

    for name in measuring:  # those that need least first
        measure(name, f"book-{profile}-{stamp}-{name}", shares.next(name), not fresh)
    # what the chapters left of the budget goes to those whose questions are still open: each goes on with its run
    for again in range(2, MAX_PASSES + 1):
        needs = open_needs(results, run_ids, suites, profile)
        first = front_page_open(results, run_ids, suites, profile, needs)
        if (shares := shares.another_pass(needs, first)) is None:
            break
        going = shares.in_order(list(shares.needs))
        print(pass_line(again, going, shares), file=sys.stderr, flush=True)
        for name in going:
            measure(name, f"book-{profile}-{stamp}-{name}-pass{again}", shares.next(name), True)
    # then the chapters reading them
    for name in sorted((n for n in chapters if n not in measuring), key=lambda n: suites[n] is None):
        target = out_dir / f"{name}.ipynb"
        common = {"results_dir": results, "out_dir": out_dir, "root": root, "env": kernel_env}
        source = template(name, root)
        if execute and name in names and suites[name] is None:
            beside = {"REFERENCE_DIR": str(reference or "")} if "REFERENCE_DIR" in notebook_parameters(source) else {}
            execute_notebook(source, profile=None, parameters={**beside, **per_notebook[name]},
                             timeout=timeout or TIMEOUT_MIN_S, **common)
        elif execute and name in recorded:
            meta = read_run_json(recorded[name] / "run.json")
            run_ids[name] = recorded[name].name  # its directory: what find_run finds, whatever run.json says
            own = {"LOAD_RUN": str(recorded[name].resolve()), **per_notebook[name]}
            execute_notebook(source, profile=meta.get("profile", profile), parameters=own,
                             timeout=timeout or TIMEOUT_MIN_S, **common)
        elif not target.exists():
            target.write_text(source.read_text())
        elif run_id := executed_run_id(target):  # built earlier: its machine figures still belong here
            run_ids[name] = run_id
    from benchmarks_lib.book.pages import write_answers_page, write_machine_page, write_parameters_page

    write_machine_page(results, out_dir, list(run_ids.values()))
    write_answers_page(root, results, out_dir, run_ids, chapters, reference=reference)
    write_parameters_page(root, chapters, out_dir)
    toc = write_table_of_contents(root, out_dir)
    if not html:
        return root / "_build" / "html" / "index.html"
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(root), "--toc", str(toc), "-W", "-n",
           "--keep-going"]
    jb_env = child_env({**os.environ, **({STATIC_CHARTS: "1"} if charts is not None else {})})
    jb = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=jb_env)
    if jb.returncode != 0:
        sys.stderr.write(jb.stdout[-6000:] + jb.stderr[-6000:])
        raise BookError(f"jupyter-book build failed (exit {jb.returncode}); see the log above")
    return root / "_build" / "html" / "index.html"
