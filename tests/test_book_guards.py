"""The book's own guards: a hung cell is one line naming the notebook and the cell, Ctrl-C is one line (no
traceback, no kernel left), and a bad --timeout is refused before anything runs."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import write_notebook

from benchmarks_lib.book.build import BookError, execute_notebook, notebook_timeout
from benchmarks_lib.suites import get_suite

ROOT = Path(__file__).resolve().parent.parent


def kernels_of(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker`` (a kernel's or a worker's)."""
    out = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            out.append(cmd)
    return out


@contextlib.contextmanager
def checkout_notebook_kept(name: str):
    """The CLI builds in the checkout: its executed copy of ``name`` is put back as it was afterwards."""
    executed = ROOT / "book" / "executed" / f"{name}.ipynb"
    kept = executed.read_bytes() if executed.exists() else None
    try:
        yield
    finally:
        if kept is None:
            executed.unlink(missing_ok=True)
        else:
            executed.write_bytes(kept)


def processes_marked(marker: str) -> list[int]:
    """Live processes whose environment holds ``IOBENCH_TEST_MARK=marker`` (a command's kernels and workers
    inherit it), whatever else runs on the machine."""
    out = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if f"IOBENCH_TEST_MARK={marker}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                out.append(int(proc.name))
    return out


def test_a_hung_cell_is_one_line_naming_the_notebook_and_the_cell(tmp_path):
    write_notebook(tmp_path, "hang", "import time  # iobench-hang-test\n\ntime.sleep(120)")
    out = tmp_path / "executed"
    out.mkdir()
    t0 = time.monotonic()
    with pytest.raises(BookError) as info:
        execute_notebook(tmp_path / "notebooks" / "hang.ipynb", profile=None, results_dir=tmp_path, parameters={},
                         out_dir=out, root=tmp_path, timeout=3)
    message = str(info.value)
    assert "\n" not in message and "notebook hang hung" in message
    assert "cell 3 ('import time  # iobench-hang-test')" in message and "--timeout" in message
    assert time.monotonic() - t0 < 100  # a guard against the hang itself, not a timing claim
    assert (tmp_path / "_build" / "logs" / "hang.kernel.log").exists()
    assert not kernels_of(str(out / "hang.ipynb")) and not [c for c in kernels_of("ipykernel") if "hang" in c]


def test_each_chapter_may_run_a_multiple_of_its_stated_time():
    for suite in ("writers", "cache", "compression"):
        budget = get_suite(suite).time_budget_s
        assert notebook_timeout(suite, "quick") >= 4 * budget["quick"]
        assert notebook_timeout(suite, "standard") >= 4 * budget["standard"]
        assert notebook_timeout(suite, "seed") >= notebook_timeout(suite, "standard")
    assert notebook_timeout(None, None) >= 300


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "1e9"])
def test_a_bad_timeout_is_refused_before_anything_runs(tmp_path, value):
    res = subprocess.run([sys.executable, "-m", "benchmarks_lib", "book", "--timeout", value, "--results-dir",
                          str(tmp_path / "r")], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "--timeout" in res.stderr and "allowed" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "r").exists()


def test_the_explorers_live_widgets_are_refused_in_the_book_before_anything_runs(tmp_path):
    """No kernel runs behind the book's pages: its explorer is drawn by the browser ("charts") or static."""
    res = subprocess.run([sys.executable, "-m", "benchmarks_lib", "book", "--notebook", "explorer", "--set",
                          'explorer:VIEW="widgets"', "--results-dir", str(tmp_path / "r")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "VIEW 'widgets' needs a kernel" in res.stderr and "charts, static" in res.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "status", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                     (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_ctrl_c_in_book_is_one_line_and_leaves_no_kernel(tmp_path, sig, status, said):
    """Ctrl-C as a terminal sends it (SIGINT to the whole process group), or SIGTERM, while a chapter executes: one
    line, its exit status, no kernel left, and not its connection file (which holds the kernel's key) either."""
    smoke = get_suite("writers").smoke
    sets = [a for k, v in smoke.items() for a in ("--set", f"writers:{k.upper()}={json.dumps(v)}")]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks_lib", "book", "--notebook", "writers", "--results-dir",
         str(tmp_path / "results"), *sets], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        env={**os.environ, "IOBENCH_SCRATCH": str(tmp_path / "scratch"), "TMPDIR": str(tmp)})
    with checkout_notebook_kept("writers"):
        try:
            said_first = [proc.stderr.readline()]  # the plan's lines, then the chapter's
            while "executing" not in said_first[-1] and said_first[-1] and len(said_first) < 20:
                said_first.append(proc.stderr.readline())
            assert "executing writers.ipynb" in said_first[-1], said_first
            time.sleep(4)
            os.killpg(proc.pid, sig) if sig == signal.SIGINT else proc.send_signal(sig)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == status, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err + out
    assert f"book {said} while executing writers" in err and "--run-id" not in err
    time.sleep(1)
    assert not kernels_of(str(tmp_path / "scratch")) and not kernels_of(str(tmp_path / "results"))
    assert not [p.name for p in tmp.rglob("*") if p.name.startswith(("kernel-", "iobench-kernel-"))]


def test_static_the_explorer_draws_its_first_selection_as_static_figures(tmp_path, monkeypatch):
    from test_chapters_explore import record_run

    from benchmarks_lib.base.specs import SpecError
    from benchmarks_lib.chapters import explore

    record_run(tmp_path / "r", "old")
    record_run(tmp_path / "r", "new")
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, *a, **k: shown.append(obj))
    assert explore.explorer([tmp_path / "r"], view="static") is None
    from matplotlib.figure import Figure

    assert shown and all(isinstance(f, Figure) for f in shown)
    assert len(explore.newest_per_directory(explore.find_runs([tmp_path / "r"]))) == 1
    shown.clear()
    explore.explorer([tmp_path / "nowhere"], view="static")  # no run: a figure that says so
    assert "no data" in shown[0].axes[0].texts[0].get_text()
    with pytest.raises(SpecError, match="VIEW 'no' is unknown; allowed: widgets, charts, static"):
        explore.explorer([tmp_path / "r"], view="no")


def test_the_explorer_names_each_directory_once(tmp_path):
    """``book --from reference/`` hands the explorer reference/ twice (its results and the default other runs)."""
    from benchmarks_lib.base.paths import REFERENCE
    from benchmarks_lib.chapters import explore

    assert explore.results_dirs(REFERENCE) == [REFERENCE]
    assert explore.results_dirs(tmp_path, [str(REFERENCE), str(REFERENCE / ".." / REFERENCE.name)]) == [tmp_path,
                                                                                                       REFERENCE]


@pytest.mark.slow
def test_a_cell_past_its_limit_is_one_line_through_the_cli(tmp_path):
    """``iobench book --timeout 1``: the explorer's drawing cell takes longer than a second, so it stands in for a
    hang; the book stops with one line naming the notebook and the cell, and no kernel is left."""
    with checkout_notebook_kept("explorer"):
        res = subprocess.run([sys.executable, "-m", "benchmarks_lib", "book", "--notebook", "explorer", "--timeout",
                              "1", "--results-dir", str(tmp_path / "results")], cwd=tmp_path, capture_output=True,
                             text=True, timeout=600, stdin=subprocess.DEVNULL,
                             env={**os.environ, "IOBENCH_TEST_MARK": tmp_path.name})
    lines = [line for line in res.stderr.splitlines() if not line.startswith(("executing", "note:"))]
    assert res.returncode == 1 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "notebook explorer hung: cell" in lines[0] and "ran past 1 s" in lines[0] and "--timeout" in lines[0]
    time.sleep(1)
    assert not processes_marked(tmp_path.name)  # the kernel it started is gone
