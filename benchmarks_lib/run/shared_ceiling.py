"""One ceiling per book: a run takes the machine's ceiling an earlier run of the same book build measured.

Every run measures the machine's ceiling of its own bytes first (``suites.ceiling``: raw sequential write and read,
memcpy), and a book's chapters are runs made one after another on the same machine, minutes apart, most of them of
the same bytes. So that the book spends its time on its questions, a run that names the runs made before it in the
same build (``ceiling_from``: ``iobench book`` names them) takes the ceiling of one of them instead of measuring it
again, where it is the same ceiling: the same case (the same bytes), measured whole (no error row) on the same
machine, file system and kernel (``run.continuation.SAME_ENVIRONMENT``). Each row taken keeps its measurement and
names the run that measured it (``records.questions.BUILD_COLUMN``); ``run.json`` says ``ceiling_from``, and the
chapter's header says where its ceiling was measured. Anything else (another size, machine or file system, a record
that does not read) and the run measures its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks_lib.base.specs import SpecError, parse_run_id
from benchmarks_lib.base.untrusted import RecordError
from benchmarks_lib.measure.ledger import CASE_COLUMNS
from benchmarks_lib.records.questions import BUILD_COLUMN, CAP_COLUMN
from benchmarks_lib.records.store import read_records, read_run_json, to_frame, write_atomic_parquet
from benchmarks_lib.run.continuation import SAME_ENVIRONMENT, plain_row
from benchmarks_lib.suites import Case

#: the columns a row taken leaves behind: where the measuring run's time and memory went (its case's seconds by phase,
#: its worker's and runner's peak RSS: this run spent none of them) and that run's cap of rounds
NOT_TAKEN = (*CASE_COLUMNS, "worker_peak_rss_bytes", "runner_peak_rss_bytes", "worker_reused", CAP_COLUMN)


def parse_ceiling_from(value: object) -> tuple[str, ...]:
    """The run ids a run may take its ceiling from: a list of run ids (None or empty: none)."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise SpecError(f"ceiling_from {value!r} is not allowed; give a list of run ids (of the same results "
                        "directory), or None")
    return tuple(parse_run_id(v) for v in value)


def take_ceiling(case: Case, sources: Sequence[str], run_dir: Path, environment: dict,
                 run_columns: dict) -> str | None:
    """Write ``case``'s record (a ceiling) into ``run_dir`` from the newest of ``sources`` (run ids beside it) that
    holds the same ceiling of the same machine (see the module's docstring), measured there or taken in turn; the
    id of the run that measured it, or None where none holds it (the run measures its own)."""
    for source in reversed(sources):
        other = run_dir.parent / source
        if other.name == run_dir.name:
            continue
        try:
            meta = read_run_json(other / "run.json")
            theirs = meta["environment"]
            if any(theirs.get(k) != environment.get(k) for k in SAME_ENVIRONMENT):
                continue
            df = read_records(other / "records" / f"{case.case_id}.parquet")
        except (RecordError, OSError):
            continue
        if df.empty or (df["status"] != "ok").any() or "case_id" not in df or "nbytes" not in df \
                or (df["case_id"] != case.case_id).any() or (df["nbytes"] != case.params["nbytes"]).any():
            continue
        rows = [{k: v for k, v in plain_row(r).items() if k not in NOT_TAKEN} for r in df.to_dict("records")]
        # the run that measured them: ``source``, or the one it took them from in turn
        measured = {str(r.get(BUILD_COLUMN) or source) for r in rows}
        if len(measured) != 1:
            continue
        by = measured.pop()
        # this run's columns (its id, its cap of rounds where it has one), the run that measured them named
        write_atomic_parquet(to_frame([r | run_columns | {BUILD_COLUMN: by} for r in rows]),
                             run_dir / "records" / f"{case.case_id}.parquet")
        return by
    return None


__all__ = ["parse_ceiling_from", "take_ceiling"]
