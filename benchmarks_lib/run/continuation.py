"""Builds that continue: a run in rounds that picks up where the last one of the same question left off.

A question the budget ended before it was decided (``rules.decision``: open) is asked again by the next build of
the same suite on the same machine; so that its rounds add up instead of starting from nothing, the next run
*continues* the newest earlier run of the suite when everything that could change a time is the same: the profile
and parameters, the machine (CPU, cores, memory to the GiB, filesystem, kernel, OS, Python), the code that measures
and decides (the package's own source but the pages it draws, uncommitted changes included: ``code_fingerprint``)
and every library version (a new commit that changes only the pages, the notebooks or the prose continues). The
earlier run's measured rounds (its rows with a ``round``, of cases that ended without an error) are carried into the
new run's records, their rounds numbered first; the new rounds follow them, and the one rule is
asked at the same looks over all of them: the rounds of two builds are one sequence of looks, never a second
chance at the first look. A question decided earlier (a leader, equivalent, or a tie at the cap) is not asked
again: its cases are not measured again. Anything different starts afresh, and the run says why.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks_lib.base.environment import memory_gib
from benchmarks_lib.records.questions import BUILD_COLUMN
from benchmarks_lib.records.store import load_run, read_run_json, run_dirs, run_is_finished

#: the recorded environment that must be the same for a run to continue another (besides every ``version_*``)
SAME_ENVIRONMENT = ("machine", "cpu_model", "cpu_count", "cpu_affinity", "fs_type", "fs_device", "kernel", "os",
                    "python", "is_root")
#: the package's folders that only draw what was recorded (the chapters' tables, figures and words, the book's
#: pages): a change there changes no time and no decision, so a build after it continues
DRAWING_ONLY = ("chapters", "book")


@dataclass(frozen=True)
class Prior:
    """The earlier run a run continues: its id, its measured rounds per case, how many rounds and builds they hold."""

    run_id: str
    rows: dict[str, list[dict]]
    rounds: int
    builds: int

    def words(self) -> str:
        return (f"continues run {self.run_id}: {self.rounds} rounds from {self.builds} "
                f"build{'s' if self.builds != 1 else ''}, the rounds of this run follow them")


def _value(v: object) -> object:
    """A value read from a record as the runner writes one: a list for an array, a plain number, None if missing."""
    if isinstance(v, np.ndarray | list | tuple):
        return [_value(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    return None if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT else v


def plain_row(record: dict) -> dict:
    """A row read from a record as the runner wrote it: only its own columns (a run's frame fills the others with
    nothing), plain values, and not the stop of the build that measured it."""
    values = ((k, _value(v)) for k, v in record.items() if k != "rounds_stop")
    return {k: v for k, v in values if v is not None}


def differences(mine: dict, theirs: dict) -> list[str]:
    """What differs between two runs' requests and environments (``suite``, ``profile``, ``params``, ``environment``)
    that could change a time, by name (``cpu_model``, ``version_zarr``, ``params``, ``the code``); empty where one
    may continue the other."""
    out = [what for what in ("suite", "profile", "params") if mine.get(what) != theirs.get(what)]
    a, b = mine.get("environment") or {}, theirs.get("environment") or {}
    versions = sorted({k for k in (*a, *b) if str(k).startswith("version_")})
    out += [k for k in (*SAME_ENVIRONMENT, *versions) if a.get(k) != b.get(k)]
    if memory_gib(a.get("ram_bytes")) != memory_gib(b.get("ram_bytes")):
        out.append("ram_bytes")
    if (mine.get("rounds") or {}).get("code") != (theirs.get("rounds") or {}).get("code"):
        out.append("the code")
    return list(dict.fromkeys(out))


def code_fingerprint(root: Path | None = None) -> str:
    """A digest of the code that measures and decides (every ``.py`` of ``benchmarks_lib``, or of ``root``, by path
    and content, but those under ``DRAWING_ONLY``): uncommitted changes included, which the git commit does not say,
    and nothing that only draws, which a commit of the pages would change."""
    root = root or Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] in DRAWING_ONLY:
            continue
        if path.is_file() and not path.is_symlink():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def afresh_words(differ: list[str], run: str) -> str:
    """Why a run starts afresh, in words: ``starts afresh: the code differs from run R``."""
    verb = "differ" if len(differ) > 1 or differ == ["params"] else "differs"
    return f"starts afresh: {', '.join(differ)} {verb} from run {run}"


def find_prior(run_dir: Path, meta: dict, cases: list[str]) -> tuple[Prior | None, str]:
    """The run ``run_dir`` (with ``meta``, its run.json) continues, and why in words: the newest other finished run of
    its suite on its machine, continued where nothing differs (:func:`differences`); else None and what differed
    ('' where there is no earlier run). Only its rows of ``cases`` measured in rounds and ended without an error are
    carried."""
    for other in run_dirs(run_dir.parent.parent):  # newest first; only the matching one's rows are read
        if other.parent != run_dir.parent or other.name == run_dir.name:
            continue
        try:
            theirs = read_run_json(other / "run.json")
        except Exception:  # a results directory may hold anything: a damaged run is never continued
            continue
        if theirs.get("suite") == meta.get("suite") and run_is_finished(theirs) and theirs.get("rounds"):
            break
    else:
        return None, ""
    try:
        df, theirs = load_run(other)
    except Exception:  # its records damaged: it is not continued
        return None, f"starts afresh: run {other.name} cannot be read"
    differ = differences({**meta, "rounds": {"code": code_fingerprint()}}, theirs)
    if differ:
        return None, afresh_words(differ, other.name)
    if "round" not in df or "case_id" not in df or df.empty:
        return None, f"starts afresh: run {other.name} recorded no rounds"
    rows: dict[str, list[dict]] = {}
    wanted = set(cases)
    for case_id, part in df.groupby(df["case_id"].astype(str), sort=True):
        if case_id not in wanted or (part["status"].astype(str) == "error").any():
            continue  # a case that ended with an error is measured afresh
        # a skip row (a point its backend does not offer: a codec, a layout) is written again when the case opens
        measured = part[part["round"].notna()]
        if measured.empty:
            continue
        rows[case_id] = [plain_row(r) | {BUILD_COLUMN: _value(r.get(BUILD_COLUMN)) or other.name}
                         for r in measured.to_dict("records")]
    if not rows:
        return None, f"starts afresh: run {other.name} holds no rounds of this run's cases"
    rounds = int(max(int(r["round"]) for part in rows.values() for r in part)) + 1
    builds = int((theirs.get("rounds") or {}).get("builds") or 1)
    return Prior(other.name, rows, rounds, builds), ""


__all__ = ["DRAWING_ONLY", "SAME_ENVIRONMENT", "Prior", "afresh_words", "code_fingerprint", "differences", "find_prior"]
