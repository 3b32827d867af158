"""The thread-scaling suite at tiny sizes: every backend's round trip, validation, the Amdahl fit."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import (
    assert_refused_naming_the_value,
    case_in_rounds,
    count_calls,
    count_round_trip_writes,
    small_run_in_rounds,
)

from benchmarks_lib.base.scratch import create_marked_dir
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.chapters.threads import amdahl_speedup, fit_amdahl
from benchmarks_lib.records.store import to_frame
from benchmarks_lib.run.worker import finish_rows
from benchmarks_lib.suites import CaseContext
from benchmarks_lib.suites.threads import BACKENDS, SUITE, build_cases, default_threads

TINY = {"backends": list(BACKENDS), "mesh_n": 5, "dims": "z:8:2,y:32:16,x:32:16", "threads": [1, 2], "seed": 1}
MODULES = {"zvtk": "zvtk", "tensorstore": "tensorstore", "zarr-python": "zarr", "zarrs": "zarrs", "blosc": "numcodecs",
           "acquire-zarr": "acquire_zarr"}
#: backends whose library is installed here (the others must be recorded as skips)
AVAILABLE = {c for c, m in MODULES.items() if importlib.util.find_spec(m)}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> pd.DataFrame:
    """Every backend at 1 and 2 threads, run in-process (1 iteration, no warm-up)."""
    rows = []
    for case in build_cases(TINY, "quick"):
        scratch = create_marked_dir(tmp_path_factory.mktemp(f"{case.backend}-{case.params['threads']}") / "s")
        out = SUITE.run_case(case, CaseContext(scratch=scratch, iterations=1, warmups=0, profile="quick"))
        assert [p.name for p in scratch.iterdir()] == [".iobench-scratch"], f"{case.backend} left files behind"
        rows += finish_rows(out, case, {"run_id": "test", "machine": "test", "profile": "quick"})
    return to_frame(rows)


# -- Amdahl ---------------------------------------------------------------------------------
@pytest.mark.parametrize("serial", [0.0, 0.05, 0.2, 0.5, 1.0])
def test_fit_amdahl_recovers_a_known_serial_fraction(serial: float):
    threads = [1, 2, 3, 4, 8, 16]
    times = [7.0 * (serial + (1 - serial) / p) for p in threads]
    assert fit_amdahl(threads, times) == pytest.approx(serial, abs=1e-9)


def test_fit_amdahl_with_noise_and_repeats():
    rng = np.random.default_rng(0)
    threads = np.repeat([1, 2, 4, 8], 5)
    times = 3.0 * (0.1 + 0.9 / threads) * rng.normal(1.0, 0.02, threads.size)
    assert fit_amdahl(threads, times) == pytest.approx(0.1, abs=0.03)
    # faster than ideal (superlinear) clips to 0; slower with more threads clips to 1
    assert fit_amdahl([1, 2, 4], [1.0, 0.4, 0.15]) == 0.0
    assert fit_amdahl([1, 2, 4], [1.0, 1.1, 1.3]) == 1.0


def test_fit_amdahl_refuses_what_it_cannot_fit():
    with pytest.raises(ValueError, match="3 or more"):
        fit_amdahl([1, 2, 2], [1.0, 0.6, 0.5])
    with pytest.raises(ValueError, match="differ in length"):
        fit_amdahl([1, 2, 4], [1.0])
    with pytest.raises(ValueError, match="positive"):
        fit_amdahl([1, 2, 4], [1.0, 0.5, 0.0])


def test_amdahl_speedup_curve():
    assert amdahl_speedup([1, 2, 1000], 0.0).tolist() == pytest.approx([1, 2, 1000])
    assert amdahl_speedup([4], 0.25, base_threads=1)[0] == pytest.approx(1 / (0.25 + 0.75 / 4))
    assert amdahl_speedup([1e9], 0.1)[0] == pytest.approx(10, rel=1e-6)


# -- parameters -----------------------------------------------------------------------------
@pytest.mark.parametrize(("params", "message"), [
    ({"threads": [0]}, "threads"),
    ({"threads": [1, "two"]}, "two"),
    ({"threads": []}, "threads is empty"),
    ({"backends": ["numpy"]}, "numpy"),
    ({"level": 23}, "23"),
    ({"codec": "brotli"}, "brotli"),
    ({"dataset": "faces"}, "faces"),
    ({"dims": "z"}, "malformed"),
    ({"mesh_n": 0}, "mesh_n 0"),
    ({"time_cap_s": 5}, "parameter 'time_cap_s' is unknown"),  # rounds and the run's budget replaced it
    ({"cores": 4}, "cores"),
    # wrong JSON types: refused in one line at build time, never iterated or coerced
    ({"threads": "abc"}, "threads 'abc'"),
    ({"threads": {"n": 2}}, "must be a list"),
    ({"threads": [1.5]}, "threads 1.5"),
    ({"threads": True}, "threads True"),
    ({"backends": 5}, "backends 5"),
    ({"backends": "zvtk,numpy"}, "numpy"),
    ({"level": [3]}, "not a list"),
    ({"level": "3,5"}, "not a list"),
    ({"level": "high"}, "level 'high'"),
    ({"codec": ["zstd:3"]}, "one codec string"),
    ({"dataset": ["microscopy"]}, "dataset \\['microscopy'\\]"),
    ({"fsync": 1}, "fsync 1"),
])
def test_bad_parameters_are_refused_in_one_line(params: dict, message: str):
    with pytest.raises(SpecError, match=message) as info:
        build_cases({**TINY, **params}, "quick")
    assert "\n" not in str(info.value)


def test_scalars_and_strings_are_one_item_lists():
    cases = build_cases({**TINY, "threads": 2, "backends": "zvtk"}, "quick")
    assert [(c.backend, c.params["threads"]) for c in cases] == [("zvtk", 2)]
    cases = build_cases({**TINY, "threads": "1,2", "backends": ["blosc"]}, "quick")
    assert [c.params["threads"] for c in cases] == [1, 2]


def test_quick_profile_counts_threads_up_to_the_cores(monkeypatch):
    from benchmarks_lib.suites import threads

    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    quick = build_cases({}, "quick")
    assert sorted({c.params["threads"] for c in quick}) == [1, 2]
    assert "blosc" not in {c.backend for c in quick}  # in memory it lasts a few ms at quick sizes
    assert {c.backend for c in build_cases({}, "standard")} == set(BACKENDS)


def test_threads_default_to_every_core_and_accept_more(monkeypatch):
    from benchmarks_lib.suites import threads

    assert default_threads(4) == [1, 2, 3, 4]
    monkeypatch.setattr(threads, "usable_cores", lambda: 16)
    cases = build_cases({**TINY, "threads": None}, "quick")
    assert sorted({c.params["threads"] for c in cases}) == list(range(1, 17))
    assert len(cases) == 16 * len(BACKENDS)
    cases = build_cases({**TINY, "threads": [24, 1, 2, 2]}, "quick")  # oversubscription allowed; sorted, unique
    assert sorted({c.params["threads"] for c in cases}) == [1, 2, 24]
    seed = build_cases({}, "seed")
    assert sorted({c.params["threads"] for c in seed}) == [1, 2, 3, 4, 5, 6, 7, 8, 16, 24]
    # a run short of time may leave out the oversubscribed counts first (``Suite.optional``)
    assert {c.params["threads"] for c in seed if SUITE.optional(c)} == {24}


# -- the suite -----------------------------------------------------------------------------
def test_every_backend_round_trips_verified(tiny_run: pd.DataFrame):
    assert not (tiny_run["status"] == "error").any(), tiny_run[tiny_run["status"] == "error"]["reason"].tolist()
    ok = tiny_run[tiny_run["status"] == "ok"]
    assert set(ok["backend"]) == AVAILABLE
    assert set(tiny_run[tiny_run["status"] == "skip"]["backend"]) == set(BACKENDS) - AVAILABLE
    assert ok["verified"].all()
    assert set(ok["threads"]) == {1, 2}
    ops = {b: set(part["operation"]) for b, part in ok.groupby("backend")}
    expected = {"blosc": {"encode", "decode"}, "acquire-zarr": {"write"}}  # acquire-zarr: verified via zarr-python
    assert all(ops[c] == expected.get(c, {"write", "read"}) for c in AVAILABLE)
    assert (ok["cores"] >= 1).all() and ok["threads_setting"].notna().all()
    reads = ok[ok["operation"] == "read"]
    assert set(reads["cache_state"]) <= {"cold", "cold_unverified"} and reads["eviction_verified"].notna().all()
    assert (reads["cache_state"] == "cold").eq(reads["eviction_verified"].astype(bool)).all()


def test_every_write_row_says_what_its_time_includes(tiny_run: pd.DataFrame):
    """acquire-zarr fsyncs its own files: its rows say so, and that they are not like the others'."""
    writes = tiny_run[(tiny_run["status"] == "ok") & tiny_run["operation"].isin(["write", "encode"])]
    own = writes["backend"] == "acquire-zarr"
    assert (writes["fsync_included"] == own).all() and (writes["writer_fsyncs"] == own).all()
    assert (writes["fsync_comparable"] == ~own).all()
    assert set(writes[~own]["sync_method"]) == {"none"} and set(writes[own]["sync_method"]) <= {"writer"}


def test_the_fsync_policy_is_the_same_syncfs_for_every_backend(tmp_path):
    rows = []
    for case in build_cases({**TINY, "fsync": True, "threads": [1], "backends": ["zarr-python", "blosc"]},
                            "quick"):
        scratch = create_marked_dir(tmp_path / case.case_id)
        out = SUITE.run_case(case, CaseContext(scratch=scratch, iterations=1, warmups=0, profile="quick"))
        rows += finish_rows(out, case, {"run_id": "test", "machine": "test", "profile": "quick"})
    methods = {r["backend"]: (r["sync_method"], r["fsync_included"]) for r in rows
               if r["operation"] in ("write", "encode") and r["status"] == "ok"}
    if "zarr-python" in AVAILABLE:
        assert methods["zarr-python"] == ("syncfs", True)
    assert methods["blosc"] == ("none", False)  # in memory: nothing to flush
    # the figure's write ceiling follows the policy: the raw write that paid the same syncfs
    from benchmarks_lib.chapters.common import write_ceiling_op

    frame = pd.DataFrame(rows)
    assert write_ceiling_op(frame) == ("write_fsync" if "zarr-python" in AVAILABLE else "write_nofsync")
    assert write_ceiling_op(frame.assign(sync_method="none")) == "write_nofsync"


def test_a_codec_a_backend_lacks_is_a_skip_row(tmp_path):
    pytest.importorskip("numcodecs")
    case = next(c for c in build_cases({**TINY, "codec": "zstd:3", "threads": [1]}, "quick") if c.backend == "blosc")
    rows = SUITE.run_case(case, CaseContext(scratch=tmp_path, iterations=1, warmups=0, profile="quick"))
    assert {r["status"] for r in rows} == {"skip"} and "blosc codec" in rows[0]["reason"]


def test_summary_and_conclusion_from_a_tiny_run(tiny_run: pd.DataFrame):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks_lib.chapters import threads as pt

    summary = pt.scaling_table(tiny_run)
    assert (summary[summary["threads"] == 1]["speedup"] == 1).all()
    table = pt.amdahl_table(tiny_run)
    assert set(table["backend"]) == AVAILABLE
    assert table["serial fraction"].isna().all()  # two thread counts: no fit, and the reason says why
    assert table["reason"].str.contains("distinct thread count").all()
    text = pt.conclusion(tiny_run)
    assert "usable cores" in text and "No Amdahl fit" in text
    for fig in (pt.time_vs_threads(tiny_run), pt.throughput_vs_threads(tiny_run), pt.speedup(tiny_run)):
        assert fig.axes
        plt.close(fig)


@pytest.mark.parametrize("params", [{"threads": "abc"}, {"threads": {"n": 2}}, {"threads": [1.5]},
                                    {"backends": 5}, {"level": [3]}, {"codec": ["zstd:3"]},
                                    {"dataset": ["microscopy"]}, {"fsync": 1}])
def test_a_wrong_type_names_the_value_and_what_is_allowed(params: dict):
    assert_refused_naming_the_value(build_cases, TINY, params)


def test_backends_are_the_adapters_that_declare_a_threads_setting():
    from benchmarks_lib.adapters import adapter_class, registered

    declared = {name for kind in ("mesh", "array", "codec") for name in registered(kind)
                if (cls := adapter_class(name, kind)).threads_setting is not None and not cls.ignores_threads}
    assert set(BACKENDS) == declared == {"zvtk", "tensorstore", "zarr-python", "zarrs", "blosc", "acquire-zarr"}


@pytest.mark.parametrize("name", ["zvtk", "zarr-python", "blosc"])
def test_a_missing_library_is_a_skip_row_with_the_install_hint(name: str, tmp_path, monkeypatch):
    from benchmarks_lib.adapters import library

    monkeypatch.setattr(library, "missing_modules", lambda modules: list(modules[:1]))
    case = build_cases({**TINY, "backends": [name], "threads": [2]}, "quick")[0]
    rows = SUITE.run_case(case, CaseContext(scratch=tmp_path, iterations=1, warmups=0, profile="quick"))
    assert {r["status"] for r in rows} == {"skip"} and len(rows) == 2
    assert all("install" in r["reason"] and r["threads_setting"] and r["threads"] == 2 for r in rows)


def test_a_write_only_writer_without_a_reader_here_is_a_skip_row(tmp_path, monkeypatch):
    from benchmarks_lib.adapters import library

    pytest.importorskip("acquire_zarr")

    readers = {"zarr", "zarrs", "tensorstore"}
    monkeypatch.setattr(library, "missing_modules", lambda modules: [m for m in modules if m in readers])
    case = build_cases({**TINY, "backends": ["acquire-zarr"], "threads": [1]}, "quick")[0]
    rows = SUITE.run_case(case, CaseContext(scratch=tmp_path, iterations=1, warmups=0, profile="quick"))
    assert {r["status"] for r in rows} == {"skip"} and "verify" in rows[0]["reason"]


# -- rounds --------------------------------------------------------------------------------
def test_a_case_is_set_up_once_and_each_round_measures_it_once(tmp_path: Path, monkeypatch):
    """The mesh built or the array made and the warm-up run once, in the case's set-up; then each round one write
    and one read, numbered by the round."""
    from benchmarks_lib.suites import threads
    from benchmarks_lib.suites.kit import backends

    made: Counter = Counter()
    count_calls(monkeypatch, threads, "array_data", made)
    count_calls(monkeypatch, backends, "build_tet_mesh", made)
    count_round_trip_writes(monkeypatch, made)
    for case in build_cases({**TINY, "backends": ["zvtk", "zarr-python"], "threads": [2]}, "quick"):
        made.clear()
        setup, *rounds = case_in_rounds(SUITE, case, tmp_path / case.case_id, 9)
        assert setup == [] and len(rounds) == 9
        made_once = "build_tet_mesh" if case.backend == "zvtk" else "array_data"
        assert made == {"warm-up": 1, "write": 9, made_once: 1}
        for r, rows in enumerate(rounds):
            assert [(row["operation"], row["iteration"], row["threads"]) for row in rows] == [
                ("write", r, 2), ("read", r, 2)]
            assert {row["status"] for row in rows} == {"ok"} and all(row["verified"] for row in rows)


def test_a_small_run_is_measured_in_rounds(tmp_path: Path):
    df, _ = small_run_in_rounds("threads", tmp_path)
    asked = df[df["operation"].isin(["write", "read"]) & (df["status"] == "ok")]
    # each case (a backend at a thread count) once per round, in the same rounds as the others
    assert (asked.groupby(["case_id", "operation", "round"]).size() == 1).all()
    assert set(asked["threads"]) == {1, 2}


def test_a_questions_key_keeps_its_whole_numbers_where_some_rows_lack_the_column():
    """Rows without a ``level`` (as a continued build's carried rows of other cases) make pandas hold the level as a
    float: the run's question still says ``level: 3``, as the first build did, not ``3.0``."""
    from benchmarks_lib.run.rounds import _plain

    rows = pd.DataFrame([{"level": 3}, {"other": 1}])
    assert isinstance(rows["level"].iloc[0], float) and _plain(rows["level"].iloc[0]) == 3
    assert type(_plain(rows["level"].iloc[0])) is int and _plain(np.float64(2.5)) == 2.5 and _plain(np.nan) is None
    assert _plain(True) is True and _plain("3.0") == "3.0"


def test_a_question_of_the_run_is_one_backends_thread_counts_as_the_front_page_ranks_them():
    """The runner's questions (``run.rounds.suite_questions``) group the threads rows as the front page and the
    chapter rank them (``rules.answers``: per side and backend): two backends at 1 and 2 threads make two questions
    of two contenders each, never one of four (which the paired rule cannot decide before round 12)."""
    from benchmarks_lib.run.rounds import suite_questions
    from benchmarks_lib.suites import get_suite

    rows = pd.DataFrame([{"suite": "threads", "backend": b, "operation": "write", "threads": t, "dataset": "em_like",
                          "codec": "zstd:3", "level": 3, "nbytes": 1024, "round": r, "elapsed_s": 1.0,
                          "case_id": f"{b}-{t}"} for b in ("tensorstore", "zarrs") for t in (1, 2) for r in range(3)])
    questions = list(suite_questions(get_suite("threads"), rows))
    assert len(questions) == 2
    for key, group in questions:
        assert group["backend"].nunique() == 1 and group["_entry"].nunique() == 2 and key["backend"] in key.values()
