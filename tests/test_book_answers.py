"""The front page: each chapter's ``answer(df)`` on small synthetic records, and the page built from runs (its
verdict box first)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import version_rows

from benchmarks_lib.base.paths import ROOT
from benchmarks_lib.book.frontpage import verdict_box
from benchmarks_lib.book.notebooks import chapter_notebooks
from benchmarks_lib.book.pages import write_answers_page
from benchmarks_lib.book.plan import prior_need
from benchmarks_lib.chapters import cache, compression, parallel, s3, threads, writers
from benchmarks_lib.chapters.chapter import Chapter, chapters
from benchmarks_lib.records.questions import CAP_COLUMN
from benchmarks_lib.records.store import SCHEMA_VERSION, to_frame, write_atomic_parquet, write_json_atomic
from benchmarks_lib.rules.answers import QUESTIONS
from benchmarks_lib.rules.answers import answer as question_answer
from benchmarks_lib.rules.decision import BUILD_ROUNDS, Verdict
from benchmarks_lib.rules.words import open_line, pick_text, rests_text, sure_text

MB = 10**6
NOTEBOOKS = chapter_notebooks()
#: 8 iterations: each stands for a round, and the rule's first look is at round 8
FAST = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.03, 0.97]
SLOW = [2.0, 2.01, 1.99, 2.02, 1.98, 2.0, 2.03, 1.97]
#: 20 iterations, one build's rounds and the cap of these rows' runs (``_frame``): a contender this noisy is never
#: told from FAST20 (a tie at the cap)
FAST20 = (FAST * 3)[:20]
NOISY = [0.6, 3.0, 1.5, 2.5, 1.0, 0.7, 2.0, 0.8, 0.5, 2.2, 1.1, 0.9, 3.1, 0.6, 1.7, 0.75, 1.2, 2.6, 0.65, 1.4]
#: every declared chapter, plug-ins included: each is held to the front page's rules below
CHAPTERS = chapters()


def _frame(rows: list[dict]) -> pd.DataFrame:
    """Rows of one run capped at one build's rounds (as each run was before builds went on past them)."""
    return to_frame([{"schema_version": SCHEMA_VERSION, "run_id": "r", "status": "ok", CAP_COLUMN: BUILD_ROUNDS, **r}
                     for r in rows])


def _writes(backend: str, codec: str, times, *, nbytes: int = 100 * MB, test: str = "write",
            operation: str = "total") -> list[dict]:
    return [{"suite": "writers", "backend": backend, "test": test, "operation": operation, "iteration": i,
             "codec": codec, "nbytes": nbytes, "elapsed_s": t, "fsync_included": True, "threads_max": 2}
            for i, t in enumerate(times)]


def _ceiling(seconds: float = 0.05) -> list[dict]:
    return [{"suite": "writers", "backend": "ceiling", "operation": op, "iteration": i, "nbytes": 100 * MB,
             "elapsed_s": seconds} for op in ("write_fsync", "write_nofsync", "read_cold") for i in range(3)]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.notebook)
def test_an_empty_or_all_skipped_run_has_nothing_to_answer_yet(chapter: Chapter):
    """A measuring chapter's answer, table, conclusion and problems take a run without a successful row; a chapter
    that measures nothing says so on the front page."""
    if chapter.suite is None:
        assert isinstance(chapter.answer, str) and chapter.answer.startswith("This chapter measures nothing")
        return
    skipped = _frame([{"suite": chapter.suite, "backend": "zarrs", "operation": "write", "iteration": 0,
                       "status": "skip", "reason": "not installed"}])
    for df in (to_frame([]), skipped):
        assert chapter.answer_of(df).startswith("Nothing to answer yet"), chapter.notebook
        for text in (chapter.conclusion, chapter.problems):
            assert text is None or isinstance(text(df), str), chapter.notebook
        assert chapter.summary is None or isinstance(chapter.summary(df), pd.DataFrame), chapter.notebook


def test_writers_answer_names_the_fastest_among_equals_never_raw():
    codec = "blosc-lz4:5:shuffle"
    df = _frame(_ceiling() + _writes("raw", "none", [0.5] * 5) + _writes("a", codec, FAST)
                + _writes("b", codec, SLOW) + _writes("lone", "zstd:3", [0.1] * 5)
                + _writes("a", codec, FAST20, test="read", operation="read_cold")
                + _writes("c", codec, NOISY, test="read", operation="read_cold"))
    lines = writers.answer(df).splitlines()
    write = next(x for x in lines if x.startswith("- **Write**"))
    assert "**a** (a winner (by more than 5%) at round 8: b 2.00x slower than a [" in write
    assert "], separated; blosc-lz4:5:shuffle, 100 MB" in write
    assert "best median 0.1 GB/s (n=8; 5% of this machine's ceiling)" in write  # of the 2 GB/s write_fsync ceiling
    assert "1 more group(s) of equals" in write
    assert "raw" not in write and "lone" not in write  # the baseline and another codec never compete
    read = next(x for x in lines if x.startswith("- **Cold full read**"))
    assert "tie between a and c (a tie at the cap after 20 rounds: c 1.22x slower than a [" in read
    assert "], not told apart; a decision would need about " in read and "**a**" not in read
    assert not any(x.startswith("- **Append**") for x in lines)  # not measured: no line, no exception


def test_writers_answer_names_flagged_points_and_lone_codecs():
    df = _frame(_ceiling() + _writes("quick", "lz4", [0.02, 0.021, 0.019]))
    text = writers.answer(df)
    assert "above the ceiling: noise or caching" in text and "under 100 ms" in text
    assert "quick (only one measured; lz4, 100 MB)" in text and "**quick**" not in text
    assert writers.answer(_frame(_writes("raw", "none", FAST))).startswith("Nothing to answer yet")


def _points(backend: str, codec: str, write_s: float, ratio: float, dataset: str = "smooth", n: int = 3) -> list[dict]:
    return [{"suite": "compression", "backend": backend, "operation": op, "iteration": i, "dataset": dataset,
             "codec": codec, "nbytes": 100 * MB, "elapsed_s": t * (1 + 0.01 * (i % 3 - 1)),
             "compression_ratio": ratio, "verified": True}
            for op, t in (("write", write_s), ("read", 0.5)) for i in range(n)]


def test_compression_answer_takes_the_best_ratio_within_2x_of_the_fastest_write():
    df = _frame(_points("zarrs", "lz4", 0.2, 1.5) + _points("zarrs", "zstd:3", 0.35, 2.5)
                + _points("zarrs", "zstd:19", 2.0, 3.0) + _points("zvtk", "zstd:1", 0.3, 3.1, dataset="tet_mesh"))
    text = compression.answer(df)
    assert "no more than 2x slower than the fastest" in text  # the rule is stated
    # 3 iterations: below the rule's first look, so the pick's write time is stated without an interval, and the
    # pick is not in bold: nothing is decided yet
    assert "- zarrs zstd:3 so far, undecided, ratio 2.50 (zarrs zstd:3 1.75x slower (no interval yet) than zarrs " \
        "lz4, no interval yet; smooth); 286 MB/s written" in text
    assert "separated" not in text
    assert "the fastest, zarrs `lz4`, writes 500 MB/s at ratio 1.50" in text and "zstd:19" not in text
    assert "- zvtk zstd:1, ratio 3.10 (only one measured; tet\\_mesh); 333 MB/s written; also the fastest write" in text
    assert text.index("smooth") < text.index("tet")  # a mesh is answered last


def _thread_rows(times: dict[int, float], backend: str = "zarrs", side: str = "write", n: int = 3) -> list[dict]:
    """``n`` iterations of each thread count: a drift all counts share (each iteration a round) and a little noise
    of each count's own."""
    return [{"suite": "threads", "backend": backend, "operation": side, "iteration": i, "threads": p,
             "codec": "zstd:3", "nbytes": 100 * MB, "cores": 8,
             "elapsed_s": t * (1 + 0.05 * (i - n // 2)) * (1 + 0.002 * ((i * p) % 3 - 1))}
            for p, t in times.items() for i in range(n)]


def test_threads_answer_is_the_fewest_threads_within_the_margin_of_the_fastest():
    df = _frame(_thread_rows({1: 1.0, 2: 0.5, 4: 0.49, 8: 0.48}, n=8)
                + _thread_rows({1: 1.0, 2: 0.6, 4: 0.4}, backend="tensorstore", side="read", n=8)
                + _thread_rows({1: 0.01, 2: 0.01}, backend="quick", side="read"))
    text = threads.answer(df)
    assert "the fewest threads within 5% of the fastest by the ranking rule, on 8 usable cores" in text
    # 8 threads lead; 2 and 4 threads write within 5% of them (the whole interval): the fewest of them, not the leader
    line = next(x for x in text.splitlines() if "zarrs write" in x)
    assert line.startswith("- **2 threads** (2 threads 1.04x slower than 8 threads [") and "], within 5%;" in line
    assert "- **4 threads** (a winner (by more than 5%) at round 8: 2 threads 1.50x slower than 4 threads [" in text
    assert "tensorstore read" in text and "still gaining at the most threads measured" in text
    # 3 iterations: below the first look, undecided: the paired leader so far, never a pick in bold
    quick = next(x for x in text.splitlines() if "quick read" in x)
    assert " so far, undecided (open after 3 rounds: " in quick and "(no interval yet)" in quick
    assert "**" not in quick


def test_the_threads_headline_is_a_decided_question_where_one_is():
    """The headline is the first decided question (write first, then the fastest backend by median), so that a later
    build, whose medians may order the backends otherwise, never heads the answer with an open question where an
    earlier build headed it with a decision."""
    from benchmarks_lib.rules.answers import answer

    fast_open = _thread_rows({1: 0.5, 2: 0.3}, backend="fast", n=3)  # below the first look: open
    slow_decided = _thread_rows({1: 2.0, 2: 1.0}, backend="slow", n=8)
    got = answer("threads", _frame(fast_open + slow_decided))
    assert got.of == "slow write" and got.ranking.decided and [a.of for a in got.more] == ["fast write"]
    # all open: the fastest first, as before
    got = answer("threads", _frame(fast_open + _thread_rows({1: 2.0, 2: 1.0}, backend="slow", n=3)))
    assert got.of == "fast write" and not got.ranking.decided


def test_a_later_build_keeps_the_threads_headline_between_two_decided_questions():
    """Two backends' questions decided at round 8; a later build measures 8 more rounds, in which "b" gets faster
    than "a" by median: the headline stays "a", the backend that was faster over the rounds each decision rests on
    (a quick book headed Threads with zarrs' "1 thread, equivalent" and, continued, with tensorstore's "2 threads, a
    winner", neither question re-opened)."""
    from benchmarks_lib.rules.answers import answer

    def rounds(rows: list[dict]) -> list[dict]:
        return [{**r, "round": r["iteration"]} for r in rows]

    a = rounds(_thread_rows({1: 1.0, 2: 0.5}, backend="a", n=16))
    b = rounds(_thread_rows({1: 1.0, 2: 0.55}, backend="b", n=16))
    later = [{**r, "elapsed_s": 0.36 * r["elapsed_s"]} if r["iteration"] >= 8 else r for r in b]
    first = answer("threads", _frame([r for r in a + b if r["iteration"] < 8]))
    again = answer("threads", _frame(a + later))
    assert first.ranking.decided and first.of == "a write"
    assert [m.ranking.decision.stops for m in (again, *again.more)] == [8, 8]  # both decided at round 8, as before
    assert again.of == "a write" and [m.of for m in again.more] == ["b write"]


def _root(latency: float, cache_bytes: int, seconds: list[float]) -> list[dict]:
    return [{"suite": "cache", "backend": "root", "operation": "root_read", "iteration": i, "reader": "root",
             "config": f"cache {cache_bytes}", "location": "http", "latency_ms": latency, "server": "builtin",
             "cache_bytes": cache_bytes, "async_prefetch": 0, "elapsed_s": t} for i, t in enumerate(seconds)]


def _zarr(client: str, cache_on: bool, seconds: float) -> list[dict]:
    return [{"suite": "cache", "backend": client, "operation": "zarr_read_cutouts", "iteration": i,
             "reader": "zarr", "client": client, "layout": "sharded", "client_cache": cache_on, "workload": "cutouts",
             "concurrency": 4, "location": "http", "latency_ms": 5.0, "server": "builtin", "config": client,
             "elapsed_s": seconds} for i in range(3)]


def test_the_cache_question_is_asked_per_location_as_the_run_asks_it():
    """HTTP and S3 ranked apart, as the run keys its questions (a standard book's front page ranked both locations'
    24 settings as one question, which no run asks: open after 12 rounds, 1.01x between the two locations' leaders,
    while the run had decided each location, a winner at round 12)."""
    def zarr(location: str, cache_on: bool, seconds: float) -> list[dict]:
        return [{"suite": "cache", "backend": "tensorstore", "operation": "zarr_read_cutouts", "iteration": i,
                 "round": i, "reader": "zarr", "client": "tensorstore", "layout": "sharded", "client_cache": cache_on,
                 "workload": "cutouts", "concurrency": 4, "location": location, "latency_ms": 5.0,
                 "server": "builtin", "config": "tensorstore", "elapsed_s": seconds * (1 + 0.01 * (i % 3))}
                for i in range(8)]

    df = _frame(zarr("http", True, 0.5) + zarr("http", False, 1.0) + zarr("s3", True, 0.505) + zarr("s3", False, 1.0))
    found = question_answer("cache", df)
    assert [a.pick for a in (found, *found.more)] == ["tensorstore, sharded, http, client cache on",
                                                      "tensorstore, sharded, s3, client cache on"]
    for a in (found, *found.more):
        assert a.ranking.decision.verdict == Verdict.WINNER and a.ranking.decision.stops == 8
        assert len(a.ranking.entries) == 2


def test_cache_answer_states_the_ttreecache_and_client_cache_effect_at_the_highest_latency():
    df = _frame(_root(0, 0, [0.3] * 3) + _root(0, 10 * MB, [0.28] * 3) + _root(5, 0, [1.6, 1.61, 1.59])
                + _root(5, 10 * MB, [0.4, 0.41, 0.39]) + _zarr("tensorstore", False, 1.0) + _zarr("tensorstore", True,
                                                                                                    0.5))
    text = cache.answer(df)
    assert "- 10 MB TTreeCache so far, undecided (open after 3 rounds: no TTreeCache 4.00x slower (no interval yet) " \
        "than 10 MB TTreeCache, no interval yet; ROOT over HTTP, 5 ms link); 0.40 s against 1.60 s (medians)" in text
    assert "faster" not in text and "separated" not in text and "**" not in text  # n=3: nothing ranked
    assert "- tensorstore, sharded, http, client cache on so far, undecided (open after 3 rounds: tensorstore, " \
        "sharded, http, client cache off 2.00x slower (no interval yet) than tensorstore, sharded, http, client " \
        "cache on, no interval yet; cutouts, 5 ms link, 4 in flight); 0.50 s against 1.00 s" in text
    assert text.index("client cache") < text.index("TTreeCache")  # Zarr's cache first: the verdict box's
    two = _frame(_zarr("tensorstore", False, 1.0) + _zarr("tensorstore", True, 0.5) + _zarr("zarr-fsspec", False, 2.0)
                 + _zarr("zarr-fsspec", True, 1.5))
    assert "the client cache took 0.50x to 0.75x the time (best: tensorstore sharded http)" in cache.answer(two)
    close = _frame(_root(0, 0, [0.3, 0.4, 0.35]) + _root(0, 10 * MB, [0.31, 0.41, 0.36]))
    assert "open after 3 rounds" in cache.answer(close) and "separated" not in cache.answer(close)
    # 9 and 8 iterations: compared on the 8 rounds both have, decided at the first look
    apart = _frame(_root(5, 0, [1.6, 1.61, 1.59, 1.62, 1.58, 1.6, 1.63, 1.57, 1.6])
                   + _root(5, 10 * MB, [0.4, 0.41, 0.39, 0.42, 0.38, 0.4, 0.41, 0.39]))
    assert "- **10 MB TTreeCache** (a winner (by more than 5%) at round 8: no TTreeCache 4.00x slower than 10 MB " \
        "TTreeCache [" in cache.answer(apart)
    only_local = _frame([{**r, "location": "local", "latency_ms": None} for r in _root(0, 0, [0.3] * 3)])
    assert cache.answer(only_local).startswith("Nothing to answer yet")


def _write_run(results: Path, run_id: str, suite: str, df: pd.DataFrame) -> None:
    run_dir = results / "vm" / run_id
    (run_dir / "records").mkdir(parents=True)
    write_atomic_parquet(df, run_dir / "records" / "case.parquet")
    write_json_atomic({"suite": suite, "profile": "quick", "params": {}, "run_id": run_id,
                       "started_at": "2026-11-22T14:31:38+00:00",
                       "environment": {"machine": "vm", "cpu_model": "Test CPU", "cpu_count": 2}}, run_dir / "run.json")


def test_the_front_page_opens_with_the_verdict_box_and_links_every_chapter(tmp_path):
    df = _frame(_ceiling() + _writes("a", "lz4", FAST) + _writes("b", "lz4", SLOW))
    _write_run(tmp_path / "results", "run-w", "writers", df)
    page = write_answers_page(ROOT, tmp_path / "results", tmp_path, {"writers": "run-w",
                                                                     "threads": "gone"}).read_text()
    assert page.startswith("# ") and "**vm** (Test CPU, 2 usable cores), quick profile, 2026-11-22 14:31 UTC" in page
    assert "[this machine](machine.md)" in page
    box = [line for line in page.splitlines() if line.startswith("| [")]
    assert len(box) == len(QUESTIONS) and page.index(box[0]) < page.index("## Every chapter")  # the box comes first
    write = question_answer("write", df)
    assert box[0] == f"| [Write](writers.ipynb#write-test-a-new-store-per-size) | {pick_text(write)} | " \
        f"{sure_text(write)} | {rests_text(write, run=False)} |"
    assert "| **a** | a winner (by more than 5%) at round 8: b 2.00x slower than a [" in box[0]
    assert sum("| not measured here |" in line for line in box) == len(QUESTIONS) - 1
    for name in NOTEBOOKS:
        assert f"]({name}.ipynb" in page, name
    boxed = {q.suite for q in QUESTIONS}
    measuring = [c.notebook for c in CHAPTERS if c.suite and c.suite not in boxed]
    assert page.count("Not measured in this build") == len(measuring)  # chapters without a line in the box
    assert "This chapter measures nothing" in page  # the compare chapter: no run of its own, still linked
    # each answer a seed's claim tests links to the claims, with the claim's verdict here
    seeds = [line for line in page.splitlines() if line.startswith("- [") and "(seeds.ipynb#the-claims)" in line]
    assert [line[3:line.index("]")] for line in seeds] == ["Write", "Append", "Codec", "Threads",
                                                           "Sharding for cutouts", "Cache for remote reads"]
    assert seeds[0] == ("- [Write](seeds.ipynb#the-claims): **cannot be tested here**: 000 write, 000 OME-Zarr, 003 "
                        "zarrs, 003 acquire-zarr")
    empty = write_answers_page(ROOT, tmp_path / "none", tmp_path, {}).read_text()
    assert "No run was found" in empty and "`make book`" in empty
    # each measured chapter's rows beside the page, to download; text a spreadsheet would run stays text
    assert "(writers.ipynb) ([CSV](writers.csv))" in page
    numbers = pd.read_csv(tmp_path / "writers.csv")
    assert len(numbers) == len(df) and set(numbers["backend"]) == set(df["backend"])
    assert "threads.csv" not in page and not (tmp_path / "threads.csv").exists()
    # the summary picture of the writers run, beside the page (its text as SVG text), under the verdict box
    assert page.index("```{figure} summary.svg") > page.index(box[-1]) and "summary.svg" not in empty
    svg = (tmp_path / "summary.svg").read_text()
    assert svg.startswith("<?xml") and ">write</text>" in svg and ">b</text>" in svg
    # how to measure one's own machine, before the list of chapters, whatever was measured
    for text in (page, empty):
        box = text.index("```{admonition} Run it on your machine")
        assert box < text.index("## Every chapter") and "`make book` in a checkout" in text[box:]


@pytest.mark.parametrize(("origin", "shown"), [
    ("git@github.com:owner/iobench-book.git", "https://github.com/owner/iobench-book"),
    ("https://github.com/owner/iobench-book.git", "https://github.com/owner/iobench-book"),
    ("https://user:token@github.com/owner/iobench-book", None), ("/srv/git/iobench-book.git", None),
    ("https://example.org/x)](javascript:alert(1)", None), (None, None)])
def test_the_run_it_box_links_the_repository_the_checkout_names(tmp_path, origin, shown):
    """A plain https origin (or an SSH one, as its web address) is linked; credentials, a local path, markup or no
    origin at all: the box names the repository without a link."""
    import subprocess

    from benchmarks_lib.base.environment import repository_url
    from benchmarks_lib.book.pages import run_it

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    if origin:
        subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", origin], check=True)
    assert repository_url(tmp_path) == shown
    box = "\n".join(run_it(tmp_path))
    assert f"in a checkout of [the repository]({shown}) measures" in box if shown else \
        "in a checkout of the repository measures" in box


def test_the_summary_picture_shows_each_writers_share_of_the_ceiling():
    """Each writer's median throughput over the same run's ceiling for the same bytes (a write of 100 MB in 1 s
    against a raw write + fsync in 0.05 s: 5%), one row per writer in the first test's order, raw named the
    baseline; nothing to draw without a ceiling."""
    df = _frame(_ceiling() + _writes("a", "lz4", FAST) + _writes("b", "lz4", SLOW) + _writes("raw", "none", FAST)
                + _writes("a", "lz4", FAST, test="read", operation="read_cold"))
    fig = writers.ceiling_summary(df)
    ax = fig.axes[0]
    shares = {text.get_text(): [] for text in ax.get_yticklabels()}
    assert list(shares) == ["a", "raw (baseline)", "b"]  # by the write's share: a and raw 5%, b 2.5%
    marks = {c.get_label(): c.get_offsets() for c in ax.collections}
    assert list(marks) == ["write", "cold full read"]
    assert [round(x, 2) for x, _ in marks["write"]] == [5.0, 2.5, 5.0]
    assert [round(x, 2) for x, _ in marks["cold full read"]] == [5.0] and marks["cold full read"][0][1] == 0
    assert writers.ceiling_summary(_frame(_writes("a", "lz4", FAST))) is None


# -- the one ranking rule in every chapter's answer -------------------------------------------------------


def test_writers_answer_states_every_entry_against_the_leader_never_chained():
    codec = "lz4"
    df = _frame(_writes("h5py", codec, FAST) + _writes("zarrs", codec, [1.46 * t for t in FAST])
                + _writes("zarr-python", codec, [3.5 * t for t in FAST]))
    text = writers.conclusion(df)
    line = next(x for x in text.splitlines() if x.startswith("- **write**"))
    assert "3.50x slower than h5py [" in line and "1.46x slower than h5py [" in line
    assert "ahead" not in line and "than zarrs" not in line  # no ratio refers to the previous entry
    assert "**h5py** fastest, by more than 5%: zarrs 1.46x slower [" in line and "(3 backends)" in line


def test_too_few_iterations_are_never_ranked():
    df = _frame(_writes("a", "lz4", [1.0, 1.01]) + _writes("b", "lz4", [5.0, 5.1]))
    answer = writers.answer(df)
    conclusion = next(x for x in writers.conclusion(df).splitlines() if x.startswith("- **write**"))
    assert "a so far, undecided (open after 2 rounds: b 5.02x slower (no interval yet) than a" in answer
    assert "open after 2 rounds: b 5.02x slower (no interval yet) than a; next look at round 8" in conclusion
    for text in (answer, conclusion):  # neither a leader nor a tie: undecided
        assert "**a**" not in text and "tie" not in text and "separated" not in text and "told apart" not in text


def test_failed_verification_never_ranks():
    rows = _writes("a", "lz4", FAST) + _writes("b", "lz4", SLOW)
    lost = [{**r, "verified": False} for r in _writes("fast-but-wrong", "lz4", [0.1 * t for t in FAST])]
    text = writers.answer(_frame(rows + lost))
    assert "**a**" in text and "fast-but-wrong" not in text
    assert "rows that failed verification are not ranked: fast-but-wrong" in writers.conclusion(_frame(rows + lost))


def test_reads_are_ranked_by_the_library_that_read():
    rows = [{**r, "read_by": "zarr-python"} for r in _writes("acquire-zarr", "lz4", FAST, test="read",
                                                                operation="read_cold")]
    rows += [{**r, "read_by": "zarr-python"} for r in _writes("zarr-python", "lz4", SLOW, test="read",
                                                               operation="read_cold")]
    line = next(x for x in writers.answer(_frame(rows)).splitlines() if x.startswith("- **Cold full read**"))
    assert "**zarr-python \\(reading acquire-zarr's store\\)**" in line
    assert "a winner (by more than 5%) at round 8: zarr-python 2.00x slower than zarr-python \\(reading " \
        "acquire-zarr's store\\) [" in line and "], separated;" in line


def test_markup_in_record_strings_is_escaped_in_answers():
    df = _frame(_writes("<b>x*y</b>", "lz4", FAST) + _writes("z", "lz4", SLOW))
    text = writers.answer(df) + writers.conclusion(df)
    assert "<b>" not in text and "x*y" not in text


def _s3_rows(backend: str, op: str, seconds, verified=True) -> list[dict]:
    return [{"suite": "s3", "backend": backend, "operation": op, "iteration": i, "codec": "lz4", "nbytes": 100 * MB,
             "elapsed_s": t, "gbps": 0.1 / t, "latency_ms": 0.0, "verified": verified, "objects": 4,
             "s3_requests": 8} for i, t in enumerate(seconds)]


def test_s3_answer_ranks_by_the_rule_on_verified_rows_only():
    df = _frame(_s3_rows("zarr-python", "write", FAST20) + _s3_rows("tensorstore", "write", NOISY)
                + _s3_rows("fast-but-wrong", "write", [0.01] * 5, verified=False)
                + _s3_rows("zarr-python", "read", FAST) + _s3_rows("tensorstore", "read", SLOW))
    text = s3.answer(df)
    assert "fast-but-wrong" not in text
    write, read = text.split("; read: ")
    assert "write: zarr-python at 0.1 GB/s: a tie after 20 rounds: tensorstore 1.22x slower [" in write
    assert "(2 clients)" in write and "**" not in write  # no leader named
    assert read.startswith("zarr-python at 0.1 GB/s: **zarr-python** fastest, by more than 5%: tensorstore 2.00x "
                           "slower [") and "(decided at round 8)" in read
    few = s3.answer(_frame(_s3_rows("a", "write", [1.0, 1.1]) + _s3_rows("b", "write", [3.0, 3.1])))
    assert "open after 2 rounds: b 2.91x slower (no interval yet) than a; next look at round 8" in few
    assert "**a**" not in few


def _parallel(workers: int, seconds, alignment: str = "chunk", verified: bool = True) -> list[dict]:
    return [{"suite": "parallel", "backend": "zarr-python", "operation": "write", "iteration": i,
             "workers": workers, "alignment": alignment, "store": "file", "nbytes": 100 * MB, "elapsed_s": t,
             "gbps": 0.1 / t, "verified": verified, "slabs": 8, "slabs_wrong": 0 if verified else 3, "cores": 8,
             "worker_gbps_median": 0.1} for i, t in enumerate(seconds)]


def test_parallel_answer_chooses_workers_by_the_rule_not_the_median():
    # 8 workers have the best median and lead, but 4 are within 5% of them: the answer takes the fewer workers
    df = _frame(_parallel(1, FAST) + _parallel(4, [0.505 * t for t in FAST]) + _parallel(8, [0.5 * t for t in FAST])
                + _parallel(2, [0.1] * 5, alignment="unaligned", verified=False))
    text = parallel.answer(df)
    assert "with 4 workers (chunk-aligned, 1.98x one worker; the fewest workers within 5% of the fastest; " \
        "**8 workers \\(chunk-aligned\\)** ahead of 4 workers \\(chunk-aligned\\) by 1% [" in text
    assert "**Parallel writes that lose data**: **zarr-python \\(files\\)** lost data (read back whole: 5 of 5 " \
        "unaligned arrays wrong" in text
    # not separable is not within the margin: a noisy 4 workers is never taken for the leader's 8
    noisy = parallel.answer(_frame(_parallel(1, FAST20) + _parallel(4, [0.5 * t for t in NOISY])
                                   + _parallel(8, [0.5 * t for t in FAST20])))
    assert "with 8 workers (chunk-aligned, 2.00x one worker; open after 20 rounds: 4 workers" in noisy
    assert "fewest workers" not in noisy
    clear = parallel.answer(_frame(_parallel(1, FAST) + _parallel(4, [0.5 * t for t in FAST])))
    assert "with 4 workers (chunk-aligned, 2.00x one worker; **4 workers \\(chunk-aligned\\)** fastest, by more " \
        "than 5%: 1 worker \\(chunk-aligned\\) 2.00x slower [" in clear
    few = parallel.answer(_frame(_parallel(1, [1.0, 1.1]) + _parallel(4, [0.5, 0.55])))
    assert "open after 2 rounds: 1 worker \\(chunk-aligned\\) 2.00x slower (no interval yet)" in few
    assert "fastest" not in few


def test_threads_answer_keeps_the_not_comparable_caveat():
    rows = [{**r, "fsync_comparable": False} for r in _thread_rows({1: 1.0, 2: 0.5}, backend="acquire-zarr")]
    text = threads.answer(_frame(rows + _thread_rows({1: 1.0, 2: 0.5})))
    acquire = text.split("acquire-zarr", 1)[1].split("zarrs", 1)[0]
    assert "not comparable: the writer fsyncs every file itself" in acquire
    assert "not comparable" not in text.split("acquire-zarr", 1)[1].split("zarrs", 1)[1]


def test_compression_answer_states_the_fastest_write_by_the_rule():
    """The pick (the codec worth taking) is stated against the fastest write, by the rule: without an interval
    below the first look, separated at it."""
    few = _frame(_points("zarrs", "lz4", 0.2, 1.5) + _points("zarrs", "zstd:3", 0.35, 2.5))
    assert "zarrs zstd:3 so far, undecided, ratio 2.50 (zarrs zstd:3 1.75x slower (no interval yet) than zarrs lz4, " \
        "no interval yet;" in compression.answer(few)
    df = _frame(_points("zarrs", "lz4", 0.2, 1.5, n=8) + _points("zarrs", "zstd:3", 0.35, 2.5, n=8))
    assert "**zarrs zstd:3**, ratio 2.50 (zarrs zstd:3 1.75x slower than zarrs lz4 [1.75x, 1.75x], separated; " \
        "smooth)" in compression.answer(df)  # the chapter states its rule once, above its answers
    # the front page's box says why the slower setting is the answer before it states it against the fastest
    codec = question_answer("codec", df)
    assert verdict_box([codec], linked=set()).splitlines()[3] == (
        "| Codec | **zarrs zstd:3**, ratio 2.50 | worth taking \\(the best ratio within 2x of the fastest write\\): "
        "zarrs zstd:3 1.75x slower than zarrs lz4 [1.75x, 1.75x], separated | smooth |")


def test_a_writers_run_with_versions_adds_the_upgrade_answer_to_the_box(tmp_path):
    """One line, "X A to B" (the label says "Upgrading"), only where the writers run measured a library at two
    versions."""
    df = pd.concat([version_rows("2.18.7", 1.0, seed=1), version_rows("3.1.6", 1.8, seed=2)], ignore_index=True)
    _write_run(tmp_path / "results", "run-v", "writers", df.assign(run_id="run-v"))
    page = write_answers_page(ROOT, tmp_path / "results", tmp_path, {"writers": "run-v"}).read_text()
    (line,) = [line for line in page.splitlines() if "Upgrading" in line]
    assert "**zarr-python** 2.18.7 to 3.1.6: 3.1.6 is 1.7" in line or "is 1.8" in line
    # 12 rounds measured, decided at the first look (round 8): the interval rests on the rounds of its decision
    assert "x slower for cold cutouts of 32 KiB \\(aligned\\) | separated: [" in line
    assert "paired over 8 rounds |" in line
    assert "Zarr v2 format" in line
    _write_run(tmp_path / "results", "run-1", "writers", version_rows("3.1.6", 1.0).assign(run_id="run-1"))
    page = write_answers_page(ROOT, tmp_path / "results", tmp_path, {"writers": "run-1"}).read_text()
    assert "Upgrading" not in page



def test_the_front_page_says_how_many_questions_are_open_and_what_another_build_would_take():
    """How many questions are still open, and about how long another build measures to bring them to their next
    looks: per chapter with one open, what its last run says that costs (``book.plan.prior_need``, as the plan
    shares the budget); nothing where none is open."""
    noisy = [1.0, 1.3, 0.8, 1.2, 0.9, 1.25, 0.85, 1.1, 0.95, 1.15]
    df = _frame([{**r, "round": r["iteration"]} for r in _writes("a", "lz4", noisy) + _writes("b", "lz4", noisy[::-1])])
    found = question_answer("write", df)
    assert "open after 10 rounds" in sure_text(found)
    # its run: 12 s before its first round, rounds of 2 s, 10 done: 2 rounds to round 12, 15% more
    meta = {"rounds": {"rounds": 10, "rounds_s": [2.0] * 10, "before_s": 10.0, "opened_s": 2.0,
                       "questions": [{"answer": "budget spent"}]}}
    need = prior_need(meta, True)
    assert need == pytest.approx(1.15 * (12 + 2 * 2))
    assert open_line([found], {"writers": need}) == ("**1 of 1 questions open:** `make book` again goes on with them "
                                                     "(about 18.4 s more of measuring).")
    assert open_line([found], {}) == "**1 of 1 questions open:** `make book` again goes on with them."
    decided = question_answer("write", _frame([{**r, "round": r["iteration"]} for r in _writes("a", "lz4", FAST)
                                                + _writes("b", "lz4", SLOW)]))
    assert open_line([decided], {"writers": need}) == ""
    assert prior_need({"rounds": {"rounds": 10, "rounds_s": [2.0], "before_s": 1.0, "opened_s": 1.0,
                                  "questions": 5}}, True) == pytest.approx(1.15 * 2)  # a forged list: none open
