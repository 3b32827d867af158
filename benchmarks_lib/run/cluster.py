"""Independent cases as Dask tasks: ``--cluster local`` or a Dask scheduler address (``tcp://host:8786``).

The default stays in-process and serial (:class:`benchmarks_lib.run.executor.SerialExecutor`): a benchmark wants a
quiet machine. On a cluster (:class:`DaskExecutor`) every case is one task that runs the same fresh worker
process as the serial runner (:func:`benchmarks_lib.run.executor.run_one_case`), in a
marked scratch directory of its Dask worker, at most one measured case per worker at a time: a
``LocalCluster`` of single-threaded workers (one per usable core), or, on a scheduler of your own
(dask-jobqueue on an HPC system included), workers with one thread or the ``iobench_case=1`` resource.
The client writes every record into the one run directory, each row tagged with its worker's host and
the number of workers. A worker lost mid-case (killed, its node gone) becomes the case's error row and
the sweep goes on. A scheduler address is checked before the run creates anything: a port where nothing
listens, or where something other than a Dask scheduler answers (a web server), is refused in one line
within :data:`benchmarks_lib.base.dask_scheduler.CONNECT_TIMEOUT_S`.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from benchmarks_lib.base.dask_scheduler import (
    abandon_local_clusters,
    connect_client,
    import_dask,
    start_local_cluster,
)
from benchmarks_lib.base.scratch import claim_scratch, is_marked, remove_tree
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.run.executor import CaseFinished, Executor, run_one_case
from benchmarks_lib.suites import Case

#: a worker's scratch directory is ``<scratch root>/<run id>+dask-<worker>-<pid>`` ('+' is never in a run id,
#: so the client's clean-up of a killed worker's leftovers matches this run's directories only)
WORKER_SCRATCH = "+dask-"
#: the worker resource a scheduler of your own may offer instead of single-threaded workers
RESOURCE = "iobench_case"


def _scheduler_client(address: str) -> Any:
    """A client of the scheduler at ``address``, refused (one line) unless its workers run one case at a time."""
    client = connect_client(address)
    workers = client.scheduler_info().get("workers", {})
    crowded = [w for w, info in workers.items()
               if info.get("nthreads", 1) > 1 and RESOURCE not in (info.get("resources") or {})]
    if not workers or crowded:
        client.close()
        why = "has no workers" if not workers else f"has workers with several threads ({crowded[0]})"
        raise SpecError(f"the Dask cluster at {address} {why}: start workers with --nthreads 1, or with "
                        f"--resources {RESOURCE}=1, so that one measured case runs per worker at a time")
    return client


def _client(spec: str, local_directory: Path) -> tuple[Any, Callable[[], None]]:
    """A connected Dask client and the function that closes what this module started (a ``LocalCluster``
    keeps its files in ``local_directory``)."""
    import_dask()
    if not spec.startswith("local"):
        client = _scheduler_client(spec)
        return client, client.close
    from distributed import Client

    from benchmarks_lib.base.environment import usable_cores

    workers = int(spec.partition(":")[2] or usable_cores())
    # a lost worker fails its task at once (no silent re-run of a half-measured case elsewhere); a worker holds one
    # task at a time (saturation 1.0: nothing queued on it), so a lost worker fails no case it had not started
    cluster = start_local_cluster(workers, local_directory, {"distributed.scheduler.allowed-failures": 0,
                                                             "distributed.scheduler.worker-saturation": 1.0})
    client = Client(cluster)
    return client, lambda: (client.close(), cluster.close())


def check_cluster(spec: str) -> None:
    """Before a run creates anything: Dask is installed and, for an address, a Dask scheduler answers there
    with workers that run one case at a time (a one-line SpecError otherwise)."""
    import_dask()
    if not spec.startswith("local"):
        _scheduler_client(spec).close()


def case_task(case_json: str, job_base: dict, scratch_root: str, run_id: str, timeout_s: float) -> dict:
    """On a Dask worker: one case in a fresh process, in this worker's own marked scratch directory."""
    from distributed import get_worker

    worker = get_worker()
    slug = re.sub(r"[^A-Za-z0-9]+", "-", str(worker.name)).strip("-") or "worker"
    scratch = claim_scratch(scratch_root, f"{run_id}{WORKER_SCRATCH}{slug}-{os.getpid()}")
    started = time.perf_counter()
    try:
        rows, rc, stderr = run_one_case(Case.from_json(case_json), job_base, scratch, timeout_s)
    finally:
        remove_tree(scratch, scratch)
    return {"rows": rows, "rc": rc, "stderr": stderr, "host": socket.gethostname(), "worker": worker.address,
            "seconds": time.perf_counter() - started}


class DaskExecutor(Executor):
    """Every case a Dask task (:func:`case_task`) on the cluster ``spec`` names (``local``, ``local:N`` or a
    scheduler address); each finished case's rows get ``worker_host`` and ``cluster_workers``. A case whose
    worker was lost finishes without rows (its error row), and the sweep goes on."""

    def __init__(self, spec: str, scratch_root: Path, run_id: str) -> None:
        self.spec, self.scratch_root, self.run_id = spec, str(scratch_root.absolute()), run_id

    def run(self, cases: list[Case], job_base: dict, timeout_s: Mapping[str, float]) -> Iterator[CaseFinished]:
        from distributed import as_completed

        run_id = self.run_id
        try:  # from the start of the cluster to the end of its close: a stop anywhere leaves nothing of Dask's
            client, close = _client(self.spec, Path(self.scratch_root) / run_id / "dask")
            n_workers = len(client.scheduler_info().get("workers", {}))
            uses_resource = any(RESOURCE in (info.get("resources") or {})
                                for info in client.scheduler_info().get("workers", {}).values())
            started = time.perf_counter()
            futures = {}
            for case in cases:
                future = client.submit(case_task, case.to_json(), job_base, self.scratch_root, run_id,
                                       timeout_s[case.case_id], key=f"iobench-{run_id}-{case.case_id}", pure=False,
                                       resources={RESOURCE: 1} if uses_resource else None)
                futures[future] = case
            for future in as_completed(futures):
                case = futures[future]
                try:
                    out = future.result()
                except Exception as exc:  # KilledWorker, a lost connection: the case's error row, the sweep goes on
                    yield CaseFinished(case, None, -9, f"Dask worker lost during the case: {type(exc).__name__}: "
                                       f"{exc}", time.perf_counter() - started, {"cluster_workers": n_workers})
                    continue
                yield CaseFinished(case, out["rows"], out["rc"], out["stderr"], out["seconds"],
                                   {"worker_host": out["host"], "cluster_workers": n_workers})
            close()
        except BaseException:  # Ctrl-C, SIGTERM, a failure: the client and cluster stopped without Dask's own errors
            abandon_local_clusters()
            raise
        finally:
            for left in Path(self.scratch_root).glob(f"{run_id}{WORKER_SCRATCH}*"):  # a killed worker's, here
                if is_marked(left):
                    remove_tree(left, left)


__all__ = ["RESOURCE", "WORKER_SCRATCH", "DaskExecutor", "case_task", "check_cluster"]
