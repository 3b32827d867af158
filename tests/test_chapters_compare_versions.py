"""Compare knows versions: two runs whose libraries differ name the version change beside each case that moved (its
backend's libraries: the rows' ``backend_version``, else run.json's), in the table and on the command line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmarks_lib.chapters.compare import VERSION_COLUMN, Comparison, version_changes
from benchmarks_lib.cli.main import main
from benchmarks_lib.records.store import write_atomic_parquet, write_json_atomic

TIMES = [1.00, 1.02, 0.99, 1.03, 1.01, 0.98]


def frame(cases: dict[tuple[str, str], float], versions: dict[str, str]) -> pd.DataFrame:
    """Rows of (backend, codec) cases, each ``TIMES`` scaled; ``versions``: backend -> its rows' backend_version."""
    rows = [{"suite": "writers", "backend": backend, "operation": "write", "codec": codec, "iteration": i,
             "status": "ok", "elapsed_s": t * scale, "backend_version": versions.get(backend)}
            for (backend, codec), scale in cases.items() for i, t in enumerate(TIMES)]
    return pd.DataFrame(rows)


def write_run(results: Path, run_id: str, df: pd.DataFrame, env: dict) -> Path:
    run_dir = results / "vm" / run_id
    (run_dir / "records").mkdir(parents=True)
    write_atomic_parquet(df.assign(run_id=run_id), run_dir / "records" / "case.parquet")
    write_json_atomic({"suite": "writers", "profile": "quick", "params": {}, "run_id": run_id, "schema_version": 2,
                       "started_at": "2026-11-27T10:00:00+00:00", "environment": {"machine": "vm", **env}},
                      run_dir / "run.json")
    return run_dir


def test_each_moved_case_names_its_backends_version_change(tmp_path: Path, capsys):
    cases = {("zarr-python", "lz4"): 1.0, ("zarr-python", "zstd"): 1.0, ("tensorstore", "lz4"): 1.0}
    a = write_run(tmp_path, "a", frame(cases, {"zarr-python": "2.18.7"}),
                  {"version_zarr": "2.18.7", "version_numcodecs": "0.15.2", "version_tensorstore": "0.1.86"})
    slower = {**cases, ("zarr-python", "lz4"): 2.0}  # one zarr-python case moved, the other did not
    b = write_run(tmp_path, "b", frame(slower, {"zarr-python": "3.1.6"}),
                  {"version_zarr": "3.1.6", "version_numcodecs": "0.15.2", "version_tensorstore": "0.1.86"})
    table = Comparison.load(a, b).table
    said = dict(zip(table["case"] + " " + table["backend"], table[VERSION_COLUMN], strict=True))
    moved = table[table["verdict"] == "slower"]
    assert moved["backend"].tolist() == ["zarr-python"] and moved[VERSION_COLUMN].tolist() == ["zarr 2.18.7 → 3.1.6"]
    assert sum(v == "" for v in said.values()) == 2  # the cases that did not move: nothing beside them
    assert main(["compare", "a", "b", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "version change" in out and "zarr 2.18.7 → 3.1.6" in out


def test_versions_come_from_the_environment_where_rows_do_not_say(tmp_path: Path):
    df = frame({("tensorstore", "lz4"): 1.0, ("ceiling", "write"): 1.0}, {})
    found = version_changes(df, {"environment": {"version_tensorstore": "0.1.71"}},
                            df, {"environment": {"version_tensorstore": "0.1.86"}})
    assert found == {"tensorstore": "tensorstore 0.1.71 → 0.1.86"}
    assert version_changes(df, {"environment": {}}, df, {"environment": {}}) == {}


def test_without_a_version_change_the_table_is_as_before(tmp_path: Path):
    cases = {("zarr-python", "lz4"): 1.0}
    env = {"version_zarr": "3.1.6"}
    a = write_run(tmp_path, "a", frame(cases, {"zarr-python": "3.1.6"}), env)
    b = write_run(tmp_path, "b", frame({("zarr-python", "lz4"): 2.0}, {"zarr-python": "3.1.6"}), env)
    assert VERSION_COLUMN not in Comparison.load(a, b).table
