"""The result record: tidy rows, one per (case, backend, operation, iteration).

Schema history (bump ``SCHEMA_VERSION`` on any change of meaning):
  1 - first version.
  2 - ``cpu_s`` (process CPU time of the timed region); write/append times are one wall-clock
      region from the first call to the end of finalize.
  3 - one vocabulary of durability columns for every suite (``durability``): ``sync_method`` is
      ``syncfs+writer``/``writer`` where the writer fsyncs too, and ``none`` (not missing) on S3;
      rows of older runs are read in it (``durability.read_old_spellings``).

A run lives in ``<results>/<machine>/<run-id>/``: ``run.json`` holds the environment and the
run's parameters once; ``records/<case-id>.parquet`` holds the rows of one finished case
(written atomically, so a killed run never leaves half a case behind). pandas is imported only
by the functions that make or read frames: the measuring worker never loads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.base.untrusted import (
    LONG_TEXT_MAX_CHARS,
    RUN_JSON_MAX_BYTES,
    ReadBudget,
    RecordError,
    bounded_json,
    bounded_text,
    listed_files,
    read_parquet_bounded,
    read_regular_file,
)
from benchmarks_lib.measure.ledger import CASE_COLUMNS
from benchmarks_lib.records.durability import read_old_spellings

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

SCHEMA_VERSION = 3

# Typed columns every row has (suite-specific scalar columns may be added beside them).
COLUMNS: dict[str, str] = {
    "schema_version": "int64",
    "run_id": "string",
    "machine": "string",
    "git_commit": "string",
    "profile": "string",
    "suite": "string",
    "case_id": "string",
    "backend": "string",
    "operation": "string",
    "iteration": "int64",
    # measured in rounds (``run.rounds``): the round, the case's place in that round's shuffled order, and why its
    # case stopped being measured (missing for a case measured whole, its iterations back to back)
    "round": "Int64",
    "round_position": "Int64",
    "rounds_stop": "string",
    "status": "string",
    "reason": "string",
    "dataset": "string",
    "dtype": "string",
    "codec": "string",
    "threads": "Int64",
    "elapsed_s": "float64",
    "cpu_s": "float64",
    "nbytes": "Int64",
    "gbps": "float64",
    "bytes_on_disk": "Int64",
    "inodes": "Int64",
    "peak_rss_bytes": "Int64",
    "rss_growth_bytes": "Int64",
    "memory_ratio": "float64",
    "threads_max": "Int64",
    "io_read_bytes": "Int64",
    "io_write_bytes": "Int64",
    "io_syscr": "Int64",
    "io_syscw": "Int64",
    "fsync_included": "boolean",
    "cache_state": "string",
    "verified": "boolean",
    "worker_host": "string",
    "cluster_workers": "Int64",
    # where the case's wall time went (seconds, the same on every row of a case; ``measure.ledger``):
    # t_start_s + t_import_s + t_prep_s + t_evict_s + t_timed_s + t_verify_s + t_other_s + t_teardown_s = t_case_s
    **dict.fromkeys(CASE_COLUMNS, "float64"),
    "worker_peak_rss_bytes": "Int64",  # the worker process's peak RSS during the case (VmHWM, reset at its start)
    "runner_peak_rss_bytes": "Int64",  # the runner's own peak RSS during the case
    "worker_reused": "boolean",  # the case ran in a worker an earlier case of its backend started (``workers``)
    # measured in rounds: CPU seconds the other (idle) workers of the run used while this case was measured
    "idle_workers_cpu_s": "float64",
}


def finish_row(row: dict) -> dict:
    """Fill derived columns: GB/s (1e9 bytes/s) and memory ratio (RSS growth / bytes)."""
    out = dict(row)
    nbytes, elapsed = out.get("nbytes"), out.get("elapsed_s")
    if out.get("gbps") is None and nbytes and elapsed:
        out["gbps"] = nbytes / elapsed / 1e9
    growth = out.get("rss_growth_bytes")
    if out.get("memory_ratio") is None and nbytes and growth is not None:
        out["memory_ratio"] = growth / nbytes
    return out


def to_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows to a DataFrame with the schema's dtypes; extra columns keep inferred types."""
    import pandas as pd

    df = pd.DataFrame([finish_row(r) for r in rows])
    for col, dtype in COLUMNS.items():
        if col not in df:
            df[col] = pd.Series([None] * len(df), dtype=dtype)
        else:
            df[col] = df[col].astype(dtype)
    extra = [c for c in df.columns if c not in COLUMNS]
    for col in extra:
        if df[col].dtype == object:
            values = [v for v in df[col] if isinstance(v, list | tuple) or not pd.isna(v)]
            kinds = {type(v) for v in values}
            if kinds and kinds <= {list, tuple}:
                df[col] = df[col].map(lambda v: [int(x) for x in v] if isinstance(v, list | tuple) else None)
            elif kinds and kinds <= {bool, np.bool_}:
                df[col] = df[col].astype("boolean")
            elif kinds and kinds <= {int, np.int64, bool}:
                df[col] = df[col].astype("Int64")
            elif kinds and kinds <= {int, float, np.int64, np.float64}:
                df[col] = df[col].astype("float64")
            elif kinds and not kinds <= {str}:
                df[col] = df[col].map(lambda v: str(v) if isinstance(v, list | tuple) or not pd.isna(v) else None)
    return df[list(COLUMNS) + sorted(extra)]


def write_atomic(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write to a new temporary file (created exclusively, so it is ours), fsync, then rename into place.

    On any failure (a full disk, say) the temporary file, which this call created, is removed
    and ``path`` is left as it was: a reader sees the whole file or the old one, never a part.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "xb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def write_atomic_parquet(df: pd.DataFrame, path: Path) -> None:
    write_atomic(path, lambda fh: df.to_parquet(fh, index=False))


def write_json_atomic(data: dict, path: Path) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, default=str).encode()
    write_atomic(path, lambda fh: fh.write(text))


#: what run.json must hold, and of which type (``read_run_json`` refuses anything else)
RUN_JSON_KEYS = {"suite": str, "profile": str, "params": dict, "environment": dict}


def read_run_json(path: Path) -> dict:
    """A run's run.json (a regular file of at most 1 MiB holding ``RUN_JSON_KEYS``), or a RecordError naming it.

    Its strings are bounded as the records' are (``untrusted.bounded_json``); the parameters' (compared as they
    are when a run is resumed, escaped wherever shown) only cut past the length of a path."""
    data = read_regular_file(path, RUN_JSON_MAX_BYTES, "run file")
    try:
        meta = json.loads(data)
        if isinstance(meta, dict):
            meta = {bounded_text(k): bounded_json(v, LONG_TEXT_MAX_CHARS, escape=False) if k == "params" else
                    bounded_json(v) for k, v in meta.items()}
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # ValueError: bad JSON, an int of 5000 digits
        raise RecordError(f"run file {str(path)!r} cannot be read ({type(exc).__name__}); "
                          "it is not a run.json written by iobench") from None
    if not isinstance(meta, dict) or not set(RUN_JSON_KEYS) <= set(meta):
        raise RecordError(f"run file {str(path)!r} is incomplete (no suite/profile/params/environment)")
    for key, kind in RUN_JSON_KEYS.items():
        if not isinstance(meta[key], kind):
            raise RecordError(f"run file {str(path)!r}: {key!r} holds a {type(meta[key]).__name__}; "
                              f"a run.json written by iobench holds a {kind.__name__} there")
    return meta


def run_is_finished(meta: dict) -> bool:
    """True when the runner wrote ``finished_at`` (it does at the end): else the run is still running or was
    interrupted, and its records are incomplete."""
    return bool(meta.get("finished_at"))


def _check_column_types(table: pa.Table, path: Path) -> None:
    """A RecordError naming the first schema column whose type is not of the kind iobench writes there (text,
    booleans, numbers), so that no summary meets text where it counts."""
    import pyarrow as pa

    kinds = {"string": (pa.types.is_string, pa.types.is_large_string), "boolean": (pa.types.is_boolean,)}
    for field in table.schema:
        expected = COLUMNS.get(field.name)
        tests = kinds.get(expected, (pa.types.is_floating, pa.types.is_integer)) if expected else ()
        if tests and not pa.types.is_null(field.type) and not any(test(field.type) for test in tests):
            raise RecordError(f"record file {str(path)!r}: column {field.name!r} holds {field.type}; iobench writes "
                              f"{'numbers' if expected not in kinds else expected} there")


#: what a row is ranked by: a value there that is not a positive finite number makes the row invalid
RANKED_COLUMNS = ("elapsed_s", "gbps")
#: a case's numeric parameters, which the chapters count with (``int(cutout)``): infinite in no run's record
PARAMETER_NUMBERS = ("cutout", "step", "nbytes", "threads", "level", "multiplier", "workers", "latency_ms",
                     "cache_bytes", "inner_chunk", "shard_size", "frame", "iteration", "round")


def invalid_as_errors(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every row whose time or rate (``RANKED_COLUMNS``) is there but not a positive finite number
    (a forged -5000 s, an infinity), or whose other number is infinite (a cutout's side, a step), made an error row
    saying so, the values dropped: nothing counts, ranks or draws it."""
    import pandas as pd

    reasons = pd.Series(None, index=df.index, dtype="object")
    infinite: list[str] = []
    for col in (c for c in PARAMETER_NUMBERS if c in df and pd.api.types.is_numeric_dtype(df[c])):
        values = df[col].astype("float64")  # a parameter (a cutout's side, a step) no run records as infinite
        bad = np.isinf(values)
        if bad.any():
            infinite.append(col)
            reasons[bad & reasons.isna()] = [f"the record's {col} {v:g} is not a finite number; the row is not "
                                             "counted" for v in values[bad & reasons.isna()]]
    for col in (c for c in RANKED_COLUMNS if c in df):
        values = df[col].astype("float64")
        bad = values.notna() & ~(np.isfinite(values) & (values > 0))
        reasons[bad] = [f"the record's {col} {v:g} is not a positive finite number; the row is not counted"
                        for v in values[bad]]
    bad = reasons.notna()
    if not bad.any():
        return df
    df = df.assign(**({} if "reason" in df else {"reason": pd.Series(None, index=df.index, dtype="object")}))
    for col in infinite:
        df[col] = df[col].astype("float64").where(~np.isinf(df[col].astype("float64")))
    df.loc[bad, [c for c in RANKED_COLUMNS if c in df]] = np.nan
    bad &= df["status"] != "error"  # an error row keeps its own reason
    df.loc[bad, "status"] = "error"
    df.loc[bad, "reason"] = reasons[bad]
    return df


def read_records(path: Path, columns: list[str] | None = None, budget: ReadBudget | None = None) -> pd.DataFrame:
    """One case's records (only ``columns`` when given), within ``budget`` (a run's limits by default), or a
    RecordError naming the file. A row with a time that is no positive finite number is an error row
    (``invalid_as_errors``)."""
    table = read_parquet_bounded(Path(path), budget or ReadBudget(), columns)
    if "status" not in table.column_names or "operation" not in table.column_names:
        raise RecordError(f"record file {str(path)!r} has no status/operation columns; not an iobench record")
    _check_column_types(table, Path(path))
    try:
        df = table.to_pandas()
    except Exception:  # pandas metadata in the file that does not fit its columns (forged): read the columns alone
        df = table.to_pandas(ignore_metadata=True)
    return invalid_as_errors(df)


def with_schema_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every schema column (``COLUMNS``): one a record lacks is added empty, with its dtype (nullable)."""
    import pandas as pd

    missing = {col: pd.Series([None] * len(df), dtype="Int64" if dtype == "int64" else dtype, index=df.index)
               for col, dtype in COLUMNS.items() if col not in df}
    return df.assign(**missing) if missing else df


def record_is_complete(path: Path) -> bool:
    """True when a case's record file exists, reads back and holds a measurement (or a skip).

    A damaged file is set aside (renamed ``*.damaged-<time>``, never deleted) and a record of
    error rows only (a crash, a full disk) holds nothing measured: either way a resume measures
    the case again, and its new record replaces the error atomically.
    """
    if not path.exists():
        return False
    try:
        df = read_records(path, columns=["status", "operation"])
    except RecordError:
        path.rename(path.with_name(f"{path.name}.damaged-{int(time.time())}"))
        return False
    return not (len(df) and (df["status"] == "error").all())


def _real_dirs(root: Path) -> list[Path]:
    """The directories in ``root`` that are not symbolic links."""
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    return []


def run_dirs(results_dir: str | Path) -> list[Path]:
    """Every run directory under a results directory (``<machine>/<run id>/run.json``), newest first.

    Symbolic links are not followed (a results directory may come from anyone, and a link may lead anywhere):
    a linked machine or run directory, or a run.json that is not a regular file, is not listed. A run named
    by its path is read where it is (``find_run``).
    """
    runs = []
    for machine in _real_dirs(Path(results_dir)):
        for run in _real_dirs(machine):
            with contextlib.suppress(OSError):
                st = os.lstat(run / "run.json")
                if stat.S_ISREG(st.st_mode):
                    runs.append((st.st_mtime, run))
    return [run for _, run in sorted(runs, key=lambda r: r[0], reverse=True)]


def newest_run(results_dir: str | Path, suite: str, profile: str | None = None,
               machine: str | None = None) -> tuple[Path, dict] | None:
    """The newest finished run of ``suite`` under ``results_dir`` (of ``profile`` and from ``machine``'s folder
    where given) and its ``run.json``; None where there is none. A damaged run.json is passed over."""
    for run in run_dirs(results_dir):  # newest first
        if machine is not None and run.parent.name != machine:
            continue
        try:
            meta = read_run_json(run / "run.json")
        except Exception:  # a damaged run.json is no run to read
            continue
        if meta.get("suite") == suite and run_is_finished(meta) and profile in (None, meta.get("profile")):
            return run, meta
    return None


def find_run(results_dir: str | Path, run: str) -> Path:
    """A run given by path, by ``machine/run-id`` or by run id alone."""
    p = Path(run)
    if (p / "run.json").exists():
        return p
    for candidate in run_dirs(results_dir):
        if candidate.name == run or f"{candidate.parent.name}/{candidate.name}" == run:
            return candidate
    known = ", ".join(d.name for d in run_dirs(results_dir)[:10]) or "none"
    raise FileNotFoundError(f"run {run!r} not found under {results_dir}; known runs: {known}")


#: how a row recorded on the MinIO this project bundled until 2026-11 names its server (its version was not recorded)
OLD_MINIO = "MinIO (version not recorded)"


def named_s3_servers(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``s3_server`` (the S3 server and its version) on the rows recorded before it existed: those of
    the bundled MinIO (their ``server`` column starts with ``minio``) name it :data:`OLD_MINIO`."""
    import pandas as pd

    if "server" not in df:
        return df
    named = df["s3_server"].astype("string") if "s3_server" in df else pd.Series(pd.NA, index=df.index,
                                                                                    dtype="string")
    old = df["server"].astype("string").str.startswith("minio").fillna(False) & named.isna()
    return df.assign(s3_server=named.mask(old, OLD_MINIO)) if old.any() else df


def load_run(run_dir: str | Path) -> tuple[pd.DataFrame, dict]:
    """All rows of a run (case files concatenated) and its run.json.

    Only regular files inside the run directory are read, within the limits of ``untrusted`` (1 MiB of run.json,
    64 MiB per record file; 1,000,000 rows and 1 GiB decoded per run); a link or anything else is refused.
    """
    import pandas as pd

    run_dir = Path(run_dir)
    meta = read_run_json(run_dir / "run.json")
    budget = ReadBudget()  # the run's limits, over all its files
    frames = [read_records(f, budget=budget) for f in listed_files(run_dir / "records", ".parquet",
                                                                      "records directory")]
    df = with_schema_columns(named_s3_servers(read_old_spellings(pd.concat(frames, ignore_index=True)))) if frames \
        else to_frame([])
    return df, meta


def load_results(path: str | Path) -> pd.DataFrame:
    """Rows of one run directory, or of every run under a results directory."""
    import pandas as pd

    path = Path(path)
    if (path / "run.json").exists():
        return load_run(path)[0]
    frames = [load_run(d)[0] for d in run_dirs(path)]
    if not frames:
        raise FileNotFoundError(f"no runs found under {path}")
    return pd.concat(frames, ignore_index=True)


def pack_run(run_dir: str | Path, dest: str | Path) -> Path:
    """A copy of a finished run in the results directory ``dest`` (``dest/<machine>/<run id>/``): its run.json and
    all its rows in one zstd-compressed parquet file, as the committed ``reference/`` holds runs. It is never
    written over: an existing target is refused."""
    run_dir, dest = Path(run_dir), Path(dest)
    if dest.exists() and not dest.is_dir():
        raise SpecError(f"pack destination {str(dest)!r} is not a directory; give a results directory")
    df, meta = load_run(run_dir)
    target = dest / run_dir.parent.name / run_dir.name
    if target.exists() or target.is_symlink():
        raise SpecError(f"pack target {str(target)!r} exists; remove it yourself or pick another directory")
    # made beside the target under a name of its own, then renamed: a pack that fails (a full disk) leaves nothing
    # in the way of the next
    partial = target.with_name(f".{target.name}.packing-{os.getpid()}")
    try:
        write_atomic(partial / "records" / "all.parquet",
                     lambda fh: df.to_parquet(fh, index=False, compression="zstd"))
        write_json_atomic(meta, partial / "run.json")
        partial.rename(target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return target


#: a spreadsheet runs a cell that begins with one of these as a formula (OWASP: CSV injection)
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: object) -> object:
    """A text cell that would begin a formula, prefixed with ``'`` (shown as text); a list cell (a shape, a chunk
    grid) as its JSON text, ``[32, 540, 1920]``, not numpy's print of it (``[  32  540 1920]``, cut with ``...``
    past a thousand values); anything else as it is."""
    if isinstance(value, np.ndarray | list | tuple):
        return json.dumps(value.tolist() if isinstance(value, np.ndarray) else list(value), default=str)
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_PREFIXES) else value


def csv_safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every text cell and column name made safe for a spreadsheet (``csv_safe``); numbers stay numbers."""
    import pandas as pd

    out = df.copy()
    for i in range(df.shape[1]):  # by position: two names may be made equal
        column = df.iloc[:, i]
        if column.dtype == object or pd.api.types.is_string_dtype(column):
            out.isetitem(i, column.map(csv_safe, na_action="ignore"))
    out.columns = [csv_safe(str(c)) for c in df.columns]
    return out


def export_csv(run_dir: str | Path, out: str | Path | None = None, *, overwrite: bool = False) -> Path:
    """A run's rows as CSV, text that a spreadsheet would run as a formula neutralised (``csv_safe``); an
    existing file is never replaced unless ``overwrite``, and never one that is not a regular file (a device, a
    FIFO, a symbolic link: not even with ``overwrite``)."""
    target = Path(out) if out else Path(run_dir) / "records.csv"
    if any(len(os.fsencode(part)) > os.pathconf("/", "PC_NAME_MAX") for part in target.parts):
        raise SpecError(f"export target {str(target)[:80]!r}... has a name too long for the filesystem")
    if target.is_dir():
        raise SpecError(f"export target {str(target)!r} is a directory; give a file name")
    if target.is_symlink() or (target.exists() and not target.is_file()):  # a device, a FIFO, a socket, a link
        raise SpecError(f"export target {str(target)!r} is not a regular file; only a regular file is ever replaced "
                        "(--force too): give a new file name")
    if target.exists() and not overwrite:
        raise SpecError(f"export target {str(target)!r} exists; pass --force to replace it")
    if not target.parent.is_dir():
        raise SpecError(f"export target {str(target)!r}: its directory does not exist")
    df, _ = load_run(run_dir)
    text = csv_safe_frame(df).to_csv(index=False).encode()
    try:
        write_atomic(target, lambda fh: fh.write(text))
    except OSError as exc:
        raise SpecError(f"export target {str(target)!r} cannot be written: {exc.strerror}") from None
    return target


def newest_runs(results_dir: Path, unfinished: dict[str, Path] | None = None) -> dict[str, Path]:
    """Suite -> its newest finished run under ``results_dir`` (none when the directory does not exist). A run
    still in progress or interrupted (no ``finished_at``) is passed over; ``unfinished`` gets the newest of each."""
    suites: dict[str, Path] = {}
    for run_dir in reversed(run_dirs(results_dir)):  # oldest first: the newest of a suite wins
        meta = read_run_json(run_dir / "run.json")
        if run_is_finished(meta):
            suites[meta["suite"]] = run_dir
        elif unfinished is not None:
            unfinished[meta["suite"]] = run_dir
    return suites
