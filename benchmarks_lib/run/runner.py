"""Runs a suite: cases x backends x iterations, each case in a worker subprocess.

- Parameters are validated (and unknown ones rejected) before anything is written; so are a run far
  longer than its profile's (the estimate is stated) and one starting too many processes (``--yes``).
- A run lives in ``<results>/<machine>/<run-id>/``; re-running the same run id skips the
  cases already recorded (resume after ``kill -9``: no lost, no duplicated rows). One iobench
  measures a run at a time: the run and its scratch are locked (``scratch.claim_run``).
- A case's process never sees the user's AWS variables unless the case names the user's own S3
  endpoint (:func:`worker_environ`).
- A case runs in a worker process (``workers``): a fresh one, or, for a suite that declares ``reuse_worker``,
  one per backend reused across that backend's cases; each records where its seconds went (``t_*_s``).
- A crash of a case (even a segfault in a native library) becomes an error row with the
  tail of its stderr, and the sweep goes on.
- Every run measures the machine's ceiling first (see ``ceiling.py``), or takes the one an earlier run of the same
  book build measured of the same bytes on the same machine (``shared_ceiling``).
- Scratch space: one marked directory per run, emptied after every case and removed at the
  end; nothing outside it is ever deleted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks_lib.adapters import tracked_packages
from benchmarks_lib.base.dask_scheduler import parse_cluster
from benchmarks_lib.base.environment import collect_environment, machine_name
from benchmarks_lib.base.paths import RESULTS_DIR, SCRATCH_ENV, checkout_dirs, resolve_scratch_root
from benchmarks_lib.base.scratch import check_scratch_available, claim_run, is_within, remove_tree
from benchmarks_lib.base.specs import SpecError, parse_count, parse_duration, parse_profile, parse_run_id
from benchmarks_lib.inputs.user_data import public_params
from benchmarks_lib.measure.allocator import allocator_state
from benchmarks_lib.measure.ledger import case_columns
from benchmarks_lib.records.questions import CAP_COLUMN
from benchmarks_lib.records.store import (
    SCHEMA_VERSION,
    find_run,
    load_run,
    read_run_json,
    record_is_complete,
    to_frame,
    write_atomic_parquet,
    write_json_atomic,
)
from benchmarks_lib.rules.decision import CAP, LOOKS
from benchmarks_lib.run.continuation import find_prior
from benchmarks_lib.run.environments import Environment, activated, build, make_harness, resolve
from benchmarks_lib.run.executor import CaseFinished, Executor, SerialExecutor
from benchmarks_lib.run.pool import CaseWorkers, Timeline, timed_share_line
from benchmarks_lib.run.preflight import (
    check_processes,
    check_space,
    check_time,
    check_writable_dir,
    estimate_seconds,
    format_seconds,
)
from benchmarks_lib.run.rounds import RoundDone, RoundsExecutor, round_seed
from benchmarks_lib.run.shared_ceiling import parse_ceiling_from, take_ceiling
from benchmarks_lib.run.versions import ENVIRONMENT, check_requests, companions, expand_cases, parse_versions
from benchmarks_lib.run.worker import MEMORY_POLICY, case_memory, error_row, finish_rows
from benchmarks_lib.suites import Case, ended_reason, get_suite
from benchmarks_lib.suites.ceiling import ceiling_case
from benchmarks_lib.suites.kit.common import RUN_KEYS, with_defaults

DEFAULT_CEILING_BYTES = {"quick": 64 * 2**20, "standard": 512 * 2**20, "seed": 2 * 2**30}
#: the iterations of the ceiling a run measures first (not the cap of a suite's rounds: the ceiling is no question)
CEILING_ITERATIONS = 5
RUN_COLUMNS_FROM_ENV = ("machine", "git_commit", "cpu_model", "cpu_count", "ram_bytes", "fs_type", "kernel", "python")


@dataclass
class RunResult:
    run_dir: Path
    df: pd.DataFrame
    meta: dict
    #: what ran when in this call (the serial runner's; empty for a loaded run): see ``workers.Timeline``
    timeline: Timeline = field(default_factory=Timeline)

    @property
    def failed(self) -> int:
        return int((self.df["status"] == "error").sum()) if len(self.df) else 0


def resolve_params(suite_name: str, params: dict | None, profile: str) -> dict:
    """Profile defaults overlaid with the given parameters (None means 'profile default')."""
    suite = get_suite(suite_name)
    merged = with_defaults(params or {}, parse_profile(profile), suite.profiles, suite_name)
    # a suite in rounds caps them at the rule's cap (``rules.decision.CAP``) unless the profile or the reader says
    merged["iterations"] = parse_count(merged.get("iterations", CAP if suite.rounds is not None else 3), "iterations",
                                       maximum=10_000)
    merged["warmups"] = parse_count(merged.get("warmups", 1), "warmups", minimum=0, maximum=1000)
    if merged.get("versions") is not None:
        merged["versions"] = [str(r) for r in parse_versions(merged["versions"])]  # [] : none (not the profile's)
    return merged


def plan(suite_name: str, params: dict | None, profile: str, ceiling: bool = True) -> tuple[dict, list[Case], int]:
    """Validated parameters, the cases (the ceiling first) and the scratch bytes the run needs at once."""
    suite = get_suite(suite_name)
    merged = resolve_params(suite_name, params, profile)
    suite_params = {k: v for k, v in merged.items() if k not in RUN_KEYS}
    cases = suite.build_cases(suite_params, profile)
    if requests := parse_versions(merged.get("versions")):  # each version of a library multiplies its cases
        check_requests(requests)
        cases = expand_cases(cases, requests)
    need = suite.scratch_bytes(cases)
    if ceiling and suite_name != "ceiling":
        nbytes = suite.ceiling_bytes(cases) if suite.ceiling_bytes else DEFAULT_CEILING_BYTES[profile]
        cases = [ceiling_case(nbytes), *cases]
        need = max(need, nbytes)
    return merged, cases, need


def planned_scratch_bytes(suite_name: str, profile: str) -> int:
    return plan(suite_name, None, profile)[2]


def expected_run(suite_name: str, profile: str) -> tuple[float | None, int]:
    """What the profile's own run of a suite should take: its seconds (the suite's stated time for the nearest
    profile that states one, scaled by the work: :func:`preflight.estimate_seconds`; None where none is stated) and
    the scratch bytes it needs at once."""
    merged, cases, need = plan(suite_name, None, profile)

    def defaults(name: str) -> tuple[int, list[Case]]:
        own, own_cases, _ = plan(suite_name, None, name, ceiling=False)
        return own["iterations"] + own["warmups"], own_cases

    runs = merged["iterations"] + merged["warmups"]
    estimate = estimate_seconds(get_suite(suite_name), profile, cases, runs, defaults)
    return (estimate[0] if estimate else None), need


def default_run_id(suite: str, profile: str) -> str:
    return f"{suite}-{profile}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def _existing_meta(meta_path: Path, request: dict, run_id: str) -> dict | None:
    """The run.json of a run being resumed (None for a new run); refused if unreadable or different."""
    if not meta_path.exists():
        return None
    old = read_run_json(meta_path)
    if {k: old.get(k) for k in request} != json.loads(json.dumps(request)):
        raise SpecError(f"run id {run_id!r} exists with other parameters; "
                        "pick another --run-id or the same parameters")
    return old


#: progress(done, total, message, finished): called before (finished=False) and after each case
Progress = Callable[[int, int, str, bool], None]


def print_progress(done: int, total: int, message: str, finished: bool) -> None:
    """Plain progress: one line per finished case on stderr (logs, notebooks)."""
    if finished:
        print(f"[{done}/{total}] {message}", file=sys.stderr, flush=True)


def run_suite(
    suite_name: str,
    params: dict | None = None,
    *,
    profile: str = "quick",
    results_dir: str | Path = RESULTS_DIR,
    run_id: str | None = None,
    scratch_dir: str | Path | None = None,
    ceiling: bool = True,
    case_timeout_s: float = 3600,
    progress: Progress | None = print_progress,
    assume_yes: bool | None = None,
    cluster: str | None = None,
    budget: float | str | None = None,
    continue_rounds: bool = False,
    ceiling_from: Sequence[str] | None = None,
) -> RunResult:
    """Measure a suite and return its rows; resumes when ``run_id`` names an existing run.

    ``continue_rounds``: a suite measured in rounds continues the newest earlier run of the suite on this machine
    where nothing that could change a time differs (:mod:`.continuation`): its undecided questions go on from the
    rounds recorded there, its decided ones are not measured again (``iobench book`` does, unless ``--fresh``).

    ``budget``: the time the run may take (seconds, or text such as ``2m``; None: the suite's ``time_budget_s``
    for the profile, no limit where it states none): the cases of a suite that measures in rounds (:mod:`.rounds`)
    stop when the next round would not fit, and say so.

    ``ceiling_from``: run ids of the same results directory (the runs an ``iobench book`` build made before this
    one): where one of them measured the same ceiling on the same machine, this run takes its rows instead of
    measuring it again (:mod:`.shared_ceiling`).

    ``cluster`` (``local``, or a Dask scheduler address ``tcp://host:port``) runs the cases as Dask tasks,
    at most one per worker at a time (:mod:`.cluster`); None (the default) runs them here, one after another."""
    if cluster is not None:
        cluster = parse_cluster(cluster)
    merged, cases, need = plan(suite_name, params, profile, ceiling)
    budget_s = run_budget(suite_name, profile, budget)
    ceiling_from = parse_ceiling_from(ceiling_from)
    requests = parse_versions(merged.get("versions"))
    if requests and cluster is not None:
        raise SpecError("--versions measures its cases here, each in the environment of its version; it does not "
                        f"run on --cluster {cluster!r} (allowed: one or the other)")
    if cluster is not None:
        from benchmarks_lib.run.cluster import check_cluster

        check_cluster(cluster)  # a scheduler that is not one, or unreachable: exit 2 before anything is created
    iterations, warmups = merged["iterations"], merged["warmups"]
    run_id = parse_run_id(run_id if run_id is not None else default_run_id(suite_name, profile))
    scratch_root = resolve_scratch_root(scratch_dir)
    if assume_yes is None:
        assume_yes = os.environ.get("IOBENCH_YES") == "1"

    # Everything is checked before anything is created: exit 2 means nothing was written.
    scratch_base = check_writable_dir(scratch_root, "scratch directory")
    results_base = check_writable_dir(Path(results_dir), "results directory")
    check_scratch_available(scratch_root, run_id)
    machine = machine_name()
    run_dir = Path(results_dir) / machine / run_id
    if run_dir.exists() and not run_dir.is_dir():
        raise SpecError(f"run directory {str(run_dir)!r} is a file, not a directory")
    run_abs, scratch_abs = run_dir.resolve(), (scratch_root / run_id).resolve()
    if is_within(run_abs, scratch_abs) or is_within(scratch_abs, Path(results_dir).resolve()):
        raise SpecError(f"scratch directory {str(scratch_root)!r} and results directory {str(results_dir)!r} "
                        "overlap; scratch is emptied after every case, so keep them apart")
    meta_path = run_dir / "run.json"
    # a person's own file is recorded by its name, never its directory (``user_data.public_label``)
    request = {"suite": suite_name, "profile": profile, "params": public_params(merged)}
    meta = _existing_meta(meta_path, request, run_id)
    records = run_dir / "records"
    todo = [c for c in cases if not record_is_complete(records / f"{c.case_id}.parquet")]
    estimate = check_load(suite_name, profile, todo, iterations + warmups, cluster, assume_yes)
    if meta is None:
        check_space(need, profile, scratch_base, results_base, assume_yes)
    # every version resolved (uv: its cache, else the index) before anything is created: a version that does not
    # exist, or no network and nothing cached, is one line
    resolved = []
    for asked in requests:
        for version in asked.versions:
            extra, modules = companions(cases, asked.key(version))
            resolved.append((resolve(asked, version, extra), modules))
    lock, scratch = claim_run(run_dir, scratch_root, run_id)
    if progress and budget_s is not None and todo and any(get_suite(c.suite).rounds for c in todo):
        progress(0, len(todo), f"time budget: {format_seconds(budget_s)} for {len(todo)} cases, measured in rounds "
                               "until each question is answered or the next round would not fit", True)
    elif progress and estimate and todo:
        progress(0, len(todo), f"estimated time: about {format_seconds(estimate[0])} for {len(todo)} cases "
                               f"(the {profile} profile's own run: about {format_seconds(estimate[1])})", True)
    try:
        harness = make_harness(scratch) if resolved else None
        environments = build_environments(resolved, harness, progress)
        with activated(environments, harness):
            return _measure(cases, request, run_dir, scratch, scratch_root, case_timeout_s=case_timeout_s,
                            progress=progress, cluster=cluster, budget_s=budget_s, environments=environments,
                            continue_rounds=continue_rounds and not requests, ceiling_from=ceiling_from)
    finally:
        remove_tree(scratch, scratch)
        os.close(lock)


def build_environments(resolved: list, harness: Path | None, progress: Progress | None) -> dict[str, Environment]:
    """The environment of each resolved version and the modules that must import there (``environments.build``:
    reused when built before), each said in a line: built or reused, and in how many seconds, or why its cases are
    skipped."""
    out = {}
    for item, modules in resolved:
        env = out[item.key] = build(item, modules, harness)
        if progress:
            how = (f"reused ({len(env.packages)} distributions, built in {env.build_s:.1f} s on {env.built_at}), "
                   f"found in {env.setup_s:.2f} s" if env.reused else
                   f"built in {env.setup_s:.1f} s ({len(env.packages)} distributions)")
            progress(0, 0, f"environment {item.key}: {how}" + (f"; its cases are skipped: {env.failed}"
                                                                if env.failed else ""), True)
    return out


def run_budget(suite_name: str, profile: str, budget: float | str | None) -> float | None:
    """The seconds a run may take: ``budget`` (a duration: ``parse_duration``), else the suite's stated time for
    the profile (``Suite.time_budget_s``), else None (no limit)."""
    if budget is not None:
        return parse_duration(budget, "budget")
    return get_suite(suite_name).time_budget_s.get(profile)


def check_load(suite_name: str, profile: str, todo: list[Case], runs: int, cluster: str | None,
               assume_yes: bool) -> tuple[float, float] | None:
    """Refuse (unless ``assume_yes``) a run estimated far beyond its profile's time or starting too many
    processes; the estimate (:func:`preflight.estimate_seconds`)."""
    suite = get_suite(suite_name)
    if suite.local_processes:
        check_processes(max((suite.local_processes(c) for c in todo if c.suite == suite_name), default=0),
                        f"this {suite_name} run", assume_yes)
    if cluster is not None and cluster.startswith("local:"):
        check_processes(int(cluster.partition(":")[2]), f"--cluster {cluster}", assume_yes)

    def defaults(name: str) -> tuple[int, list[Case]]:
        merged, cases, _ = plan(suite_name, None, name, ceiling=False)
        return merged["iterations"] + merged["warmups"], cases

    estimate = estimate_seconds(suite, profile, todo, runs, defaults)
    if estimate is not None:
        check_time(*estimate, profile, assume_yes)
    return estimate


def _measure(cases: list[Case], request: dict, run_dir: Path, scratch: Path, scratch_root: Path, *,
             case_timeout_s: float, progress: Progress | None, cluster: str | None,
             budget_s: float | None = None, environments: Mapping[str, Environment] | None = None,
             continue_rounds: bool = False, ceiling_from: tuple[str, ...] = ()) -> RunResult:
    """The cases not yet recorded, each in a fresh worker (or on the cluster), with the run locked and its
    scratch claimed; run.json is written for a new run and finished at the end."""
    run_id, profile = run_dir.name, request["profile"]
    iterations, warmups = request["params"]["iterations"], request["params"]["warmups"]
    meta_path = run_dir / "run.json"
    meta = _existing_meta(meta_path, request, run_id)  # read again under the lock: another run may have finished
    if meta is None:
        env = collect_environment(scratch_root, tracked_packages())
        meta = {**request, "schema_version": SCHEMA_VERSION, "run_id": run_id, "environment": env,
                "started_at": env["collected_at"], "cases": [c.case_id for c in cases],
                "worker_process": {"allocator": allocator_state(), "reuse": CaseWorkers.policy(request["suite"]),
                                   "memory_limit": MEMORY_POLICY}}
        if environments:
            meta["environments"] = {key: env.record() for key, env in environments.items()}
        write_json_atomic(meta, meta_path)
    elif environments:  # resumed: the environments as this session found them
        meta["environments"] = {**meta.get("environments", {}), **{k: e.record() for k, e in environments.items()}}
        write_json_atomic(meta, meta_path)
    records = run_dir / "records"
    records.mkdir(parents=True, exist_ok=True)
    todo = [c for c in cases if not record_is_complete(records / f"{c.case_id}.parquet")]
    env = meta["environment"]
    run_columns = {"run_id": run_id, "profile": profile, **{k: env.get(k) for k in RUN_COLUMNS_FROM_ENV}}
    if get_suite(request["suite"]).rounds is not None:  # the cap the rule decided at: a page replays it at that cap
        run_columns[CAP_COLUMN] = iterations
    if (resumed := len(cases) - len(todo)) and progress:
        progress(resumed, len(cases), f"resuming {run_id}: {resumed} cases already recorded", True)
    # the machine's ceiling an earlier run of the same book build measured: taken, not measured again
    for case in [c for c in todo if c.suite == "ceiling" and request["suite"] != "ceiling"] if ceiling_from else ():
        if (source := take_ceiling(case, ceiling_from, run_dir, env, run_columns)) is not None:
            todo.remove(case)
            meta["ceiling_from"] = source
            write_json_atomic(meta, meta_path)
            if progress:
                progress(len(cases) - len(todo), len(cases), f"the machine's ceiling of {case.params['nbytes']:,} "
                         f"bytes: taken from run {source} of this book build (the same bytes, machine and file "
                         "system), not measured again", True)
    # resumed with cases to measure: unfinished until it ends again, and no longer measured whole in one session
    if todo and [meta.pop(key) for key in ("finished_at", "measured_s") if key in meta]:
        write_json_atomic(meta, meta_path)
    job_base = {"iterations": iterations, "warmups": warmups, "profile": profile, "run_dir": str(run_dir.resolve()),
                "run_columns": run_columns}

    def limit_of(case: Case) -> float:
        owner = get_suite(case.suite)
        return owner.case_timeout_s(case, iterations + warmups) if owner.case_timeout_s else case_timeout_s

    finished = [len(cases) - len(todo)]
    timeline = Timeline()

    def record(ran: CaseFinished) -> None:
        """Write one finished case's record (an error row when its worker wrote none)."""
        case, rows = ran.case, ran.rows
        if rows is None:  # the worker wrote no rows of its own (crashed, killed, timed out, its host lost)
            reason = ended_reason(ran.rc, ran.stderr) or \
                f"worker exited with status {ran.rc}" + (" (killed by signal)" if ran.rc < 0 else "")
            if "bad_alloc" in ran.stderr or "MemoryError" in ran.stderr:  # a library that aborts when refused memory
                reason += f": {case_memory(case)[1]}"
            spent = case_columns(None, 0, int(ran.seconds * 1e9))  # its wall time still counts to the run's
            rows = finish_rows([{**error_row(case, f"{reason}\n{ran.stderr}"), **spent}], case, run_columns)
        out = records / f"{case.case_id}.parquet"
        write_atomic_parquet(to_frame([{**row, **ran.extra} for row in rows]), out)
        (partial / f"{case.case_id}.jsonl").unlink(missing_ok=True)  # its rounds so far: in the record now
        finished[0] += 1
        if progress:
            progress(finished[0], len(cases),
                     f"{get_suite(case.suite).describe(case)}: {_case_status(out)} ({ran.seconds:.1f} s)", True)

    t_start = time.perf_counter()
    partial = keep_interrupted_rounds(run_dir, progress)
    # a version whose environment did not install or import: its cases are skip rows, the others go on
    failed = {key: env.failed for key, env in (environments or {}).items() if env.failed}
    for case in [c for c in todo if c.params.get(ENVIRONMENT) in failed]:
        todo.remove(case)
        skip = {"operation": "case", "status": "skip", "reason": failed[case.params[ENVIRONMENT]]}
        record(CaseFinished(case, finish_rows([skip], case, run_columns), 0, "", 0.0))
    in_rounds = [c for c in todo if cluster is None and get_suite(c.suite).rounds is not None]
    ceiling = [c for c in todo if c.suite == "ceiling" and request["suite"] != "ceiling"]
    whole = [c for c in todo if c not in in_rounds and c not in ceiling]
    limits = {c.case_id: limit_of(c) for c in todo}
    rounds, afresh = None, ""
    # the machine's ceiling first, a fixed few iterations whatever the rounds' cap (it is no question)
    ceiling_job = {**job_base, "iterations": min(iterations, CEILING_ITERATIONS)}
    for part, job in ((ceiling, ceiling_job), (whole, job_base), (in_rounds, job_base)):
        if not part:
            continue
        if part is in_rounds:
            left = None if budget_s is None else max(0.0, budget_s - (time.perf_counter() - t_start))
            prior, afresh = find_prior(run_dir, meta, [c.case_id for c in part]) if continue_rounds else (None, "")
            if progress and (prior is not None or afresh):
                progress(finished[0], len(cases), prior.words() if prior is not None else afresh, True)
            executor = rounds = RoundsExecutor(scratch, timeline, round_seed(run_id), left, partial, prior=prior)
            before_s = time.perf_counter() - t_start  # the ceiling, the cases not in rounds, finding the prior
            timeline.one_worker = False
        else:
            executor = _executor(cluster, scratch, scratch_root, run_id, timeline)
        with contextlib.closing(executor.run(part, job, limits)) as events:
            for event in events:
                if isinstance(event, CaseFinished):
                    record(event)
                elif isinstance(event, RoundDone):
                    for line in event.left_out if progress else ():
                        progress(finished[0], len(cases), f"left out: {line}", True)
                    if progress:
                        answered = f"{event.answered} of {event.questions} questions answered" if event.questions \
                            else f"first look at round {LOOKS[0]}"
                        progress(finished[0], len(cases), f"round {event.rounds} ({event.seconds:.1f} s): {answered}, "
                                 f"{event.open_cases} cases still open", True)
                elif progress:
                    progress(finished[0], len(cases), get_suite(event.case.suite).describe(event.case), False)
    df, meta = load_run(run_dir)
    if rounds is not None:
        meta["rounds"] = {**rounds.record(), "before_s": round(before_s, 3)}
        if rounds.prior is None and continue_rounds:
            meta["rounds"]["afresh"] = afresh or "no earlier run of the suite on this machine"
    elif todo and not resumed:  # a run of fixed iterations, whole in this session: what the next book plans it by
        meta["measured_s"] = round(time.perf_counter() - t_start, 3)
    meta["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    write_json_atomic(meta, meta_path)
    if progress and todo and (line := timed_share_line(df)):
        progress(finished[0], len(cases), line, True)
    return RunResult(run_dir, df, meta, timeline)


def keep_interrupted_rounds(run_dir: Path, progress: Progress | None) -> Path:
    """The run's directory of rounds in progress (``partial/``: each open case's rows so far, a JSON line per row,
    so that a kill -9 loses no measured round); those an interrupted run left are moved to ``interrupted/``, kept and
    never read (a resumed run measures their cases again from their set-up, in rounds of its own)."""
    partial = run_dir / "partial"
    left = sorted(p for p in partial.glob("*.jsonl") if p.is_file() and not p.is_symlink()) \
        if partial.is_dir() and not partial.is_symlink() else []
    if left:
        kept = run_dir / "interrupted" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        kept.mkdir(parents=True, exist_ok=True)
        for path in left:
            path.rename(kept / path.name)
        if progress:
            progress(0, 0, f"the rounds an interrupted run measured of {len(left)} case(s) are kept in "
                           f"{kept.relative_to(run_dir)}/ (not shown); those cases are measured again", True)
    partial.mkdir(parents=True, exist_ok=True)
    return partial


def _executor(cluster: str | None, scratch: Path, scratch_root: Path, run_id: str, timeline: Timeline) -> Executor:
    """The cases here, one after another (``cluster`` None), or as tasks on a Dask cluster (:mod:`.cluster`)."""
    if cluster is None:
        return SerialExecutor(scratch, timeline)
    from benchmarks_lib.run.cluster import DaskExecutor

    return DaskExecutor(cluster, scratch_root, run_id)


def _case_status(path: Path) -> str:
    statuses = pd.read_parquet(path, columns=["status"])["status"]
    if (statuses == "error").any():
        return "error"
    if (statuses == "skip").all():
        return "skipped"
    return "ok"


#: a notebook's names for the run's own settings -> ``run_or_load``'s keywords
NOTEBOOK_SETTINGS = {"PROFILE": "profile", "RESULTS_DIR": "results_dir", "LOAD_RUN": "load", "RUN_ID": "run_id",
                     "BUDGET": "budget", "CONTINUE": "continue_rounds", "CEILING_FROM": "ceiling_from"}


def notebook_arguments(suite_name: str, namespace: Mapping[str, Any]) -> tuple[dict, dict]:
    """A notebook's parameters (its globals after the parameters cell and papermill's) as the suite's parameters
    and the run's settings: each of the suite's parameters from its name in upper case, which the notebook must
    assign; ``PROFILE``, ``RESULTS_DIR``, ``LOAD_RUN``, ``RUN_ID`` and ``BUDGET`` where it assigns them (a ``BUDGET``
    of None: the suite's own), and ``VERSIONS`` (the library versions: ``run.versions``) where it assigns one. Nothing
    else is read."""
    names = get_suite(suite_name).parameters
    missing = [name.upper() for name in names if name.upper() not in namespace]
    if missing:
        raise SpecError(f"the notebook assigns no {missing[0]}: its parameters cell assigns every parameter of the "
                        f"{suite_name!r} suite in upper case ({', '.join(n.upper() for n in names)})")
    settings = {keyword: namespace[name] for name, keyword in NOTEBOOK_SETTINGS.items() if name in namespace
                and (keyword != "budget" or namespace[name] is not None)}
    params = {name: namespace[name.upper()] for name in names}
    if namespace.get("VERSIONS") is not None and "versions" not in params:  # every suite's, where a notebook sets it
        params["versions"] = namespace["VERSIONS"]
    return params, settings


def _is_notebook_namespace(suite_name: str, params: Mapping[str, Any]) -> bool:
    """True when ``params`` names the suite's parameters or the run's settings in upper case (a notebook's)."""
    upper = {*NOTEBOOK_SETTINGS, "VERSIONS", *(name.upper() for name in get_suite(suite_name).parameters)}
    return any(key in upper for key in params)


def run_or_load(
    suite_name: str,
    params: Mapping[str, Any] | None = None,
    *,
    profile: str = "quick",
    results_dir: str | Path | None = None,
    load: str | Path | None = None,
    **kwargs,
) -> RunResult:
    """The one call a notebook makes: measure now, or load an earlier run (``load``).

    A notebook hands over its parameters with its globals, ``run_or_load("writers", globals())``: the suite's
    parameters and the run's settings are read from their upper-case names (:func:`notebook_arguments`), which
    then take the place of the keywords. Otherwise ``params`` are the suite's parameters by their own names.
    ``results_dir`` None means the checkout's ``results/`` (and, unless ``scratch_dir`` or ``$IOBENCH_SCRATCH``
    says otherwise, its ``.iobench-scratch/``): see :func:`benchmarks_lib.base.paths.checkout_dirs`.
    """
    if params is not None and _is_notebook_namespace(suite_name, params):
        params, settings = notebook_arguments(suite_name, params)
        profile = settings.pop("profile", profile)
        results_dir = settings.pop("results_dir", results_dir)
        load = settings.pop("load", load)
        kwargs.update(settings)  # the run id
    if results_dir is None:
        results_dir, scratch = checkout_dirs()
        if kwargs.get("scratch_dir") is None and SCRATCH_ENV not in os.environ:
            kwargs["scratch_dir"] = scratch
    if load:
        run_dir = find_run(results_dir, str(load))
        df, meta = load_run(run_dir)
        if meta.get("suite") != suite_name:
            raise SpecError(f"run {load!r} is a {meta.get('suite')!r} run, not {suite_name!r}")
        return RunResult(run_dir, df, meta)
    return run_suite(suite_name, None if params is None else dict(params), profile=profile, results_dir=results_dir,
                     **kwargs)
