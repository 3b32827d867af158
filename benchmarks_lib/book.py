"""Build the book: execute the notebooks with papermill, write the machine page, run Jupyter Book.

Executed copies go to ``book/executed/`` (ignored by git); the HTML to ``_build/html``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from .records import load_run
from .report import ceiling_table
from .specs import parse_profile

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ("writer_comparison", "compression_sweep", "thread_scaling", "cache_prefetch")


def project_root(root: str | Path | None = None) -> Path:
    """The directory holding _config.yml (the repository checkout, by default)."""
    root = Path(root) if root else ROOT
    if not (root / "_config.yml").exists():
        raise FileNotFoundError(f"no _config.yml in {root}: `iobench book` runs from a source checkout")
    return root


def execute_notebook(name: str, *, profile: str, results_dir: Path, parameters: dict, out_dir: Path,
                     root: Path) -> Path:
    import papermill as pm

    source = root / "notebooks" / f"{name}.ipynb"
    target = out_dir / f"{name}.ipynb"
    params = {"PROFILE": profile, "RESULTS_DIR": str(results_dir.resolve()), **parameters}
    print(f"executing {source.name} ({profile}) ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    pm.execute_notebook(str(source), str(target), parameters=params, cwd=str(root), progress_bar=False,
                        kernel_name="python3", log_output=False)
    print(f"  done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return target


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


def build_book(
    *,
    profile: str = "quick",
    results_dir: str | Path = "results",
    execute: bool = True,
    notebooks: list[str] | None = None,
    parameters: dict | None = None,
    root: str | Path | None = None,
) -> Path:
    """Execute the notebooks (unless ``execute`` is false) and build the HTML; return index.html.

    ``parameters`` go to every notebook; a key ``"<notebook>:<NAME>"`` goes to that notebook only.
    """
    profile = parse_profile(profile)
    root = project_root(root)
    names = notebooks or list(NOTEBOOKS)
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown:
        from .specs import SpecError

        raise SpecError(f"notebook {unknown[0]!r} is unknown; allowed: {', '.join(NOTEBOOKS)}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_ids = {}
    out_dir = root / "book" / "executed"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = Path(results_dir)
    if not results.is_absolute():
        results = Path.cwd() / results
    for name in NOTEBOOKS:
        target = out_dir / f"{name}.ipynb"
        if execute and name in names:
            run_ids[name] = f"book-{profile}-{stamp}-{name}"
            own = {"RUN_ID": run_ids[name], **{k: v for k, v in (parameters or {}).items() if ":" not in k}}
            own.update({k.split(":", 1)[1]: v for k, v in (parameters or {}).items() if k.startswith(f"{name}:")})
            execute_notebook(name, profile=profile, results_dir=results, parameters=own, out_dir=out_dir, root=root)
        elif not target.exists():
            target.write_text((root / "notebooks" / f"{name}.ipynb").read_text())
    write_machine_page(results, out_dir, list(run_ids.values()))
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(root), "-W", "-n", "--keep-going"]
    jb = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if jb.returncode != 0:
        sys.stderr.write(jb.stdout[-6000:] + jb.stderr[-6000:])
        raise RuntimeError(f"jupyter-book build failed (exit {jb.returncode}); see the log above")
    return root / "_build" / "html" / "index.html"
