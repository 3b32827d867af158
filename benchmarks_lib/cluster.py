"""Independent cases as Dask tasks: ``--cluster local`` or a Dask scheduler address (``tcp://host:8786``).

The default stays in-process and serial: a benchmark wants a quiet machine. On a cluster every case is
one task that runs the same fresh worker process as the serial runner (``runner.run_one_case``), in a
marked scratch directory of its Dask worker, at most one measured case per worker at a time: a
``LocalCluster`` of single-threaded workers (one per usable core), or, on a scheduler of your own
(dask-jobqueue on an HPC system included), workers with one thread or the ``iobench_case=1`` resource.
The client writes every record into the one run directory, each row tagged with its worker's host and
the number of workers. A worker lost mid-case (killed, its node gone) becomes the case's error row and
the sweep goes on.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .specs import SpecError
from .suites import Case

#: a Dask scheduler address: tcp://host:port (or tls://)
ADDRESS = re.compile(r"^(tcp|tls)://[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")
#: a worker's scratch directory is ``<scratch root>/<run id>+dask-<worker>-<pid>`` ('+' is never in a run id,
#: so the client's clean-up of a killed worker's leftovers matches this run's directories only)
WORKER_SCRATCH = "+dask-"
#: the worker resource a scheduler of your own may offer instead of single-threaded workers
RESOURCE = "iobench_case"
INSTALL_HINT = "pip install 'iobench-book[cluster]' (dask and distributed)"


def parse_cluster(value: object) -> str:
    """``local``, ``local:N`` (N workers) or a scheduler address ``tcp://host:port``; a one-line error otherwise."""
    text = value.strip() if isinstance(value, str) else None
    if text == "local" or (text and re.fullmatch(r"local:[1-9]\d{0,3}", text)) or (text and ADDRESS.match(text)):
        return text
    raise SpecError(f"cluster {value!r} is not allowed; give local, local:N (N workers) or a Dask scheduler "
                    "address such as tcp://10.0.0.5:8786")


def _client(spec: str) -> tuple[Any, Callable[[], None]]:
    """A connected Dask client and the function that closes what this module started."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise SpecError(f"--cluster needs Dask: {INSTALL_HINT}") from None
    if spec.startswith("local"):
        from .environment import usable_cores

        workers = int(spec.partition(":")[2] or usable_cores())
        # a lost worker fails its task at once (no silent re-run of a half-measured case elsewhere)
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=40)
            client = Client(cluster)
        return client, lambda: (client.close(), cluster.close())
    try:
        client = Client(spec, timeout=30)
    except OSError as exc:
        raise SpecError(f"cannot reach the Dask scheduler at {spec} ({exc})") from None
    workers = client.scheduler_info().get("workers", {})
    crowded = [w for w, info in workers.items()
               if info.get("nthreads", 1) > 1 and RESOURCE not in (info.get("resources") or {})]
    if not workers or crowded:
        client.close()
        why = "has no workers" if not workers else f"has workers with several threads ({crowded[0]})"
        raise SpecError(f"the Dask cluster at {spec} {why}: start workers with --nthreads 1, or with "
                        f"--resources {RESOURCE}=1, so that one measured case runs per worker at a time")
    return client, client.close


def case_task(case_json: str, job_base: dict, scratch_root: str, run_id: str, timeout_s: float) -> dict:
    """On a Dask worker: one case in a fresh process, in this worker's own marked scratch directory."""
    from distributed import get_worker

    from .runner import run_one_case
    from .scratch import claim_scratch, remove_tree

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


def run_on_cluster(spec: str, cases: list[Case], job_base: dict, scratch_root: str, run_id: str,
                   limit_of: Callable[[Case], float], record: Callable[..., None]) -> None:
    """Submit every case; ``record(case, rows, rc, stderr, seconds, extra)`` as each one finishes (any order).

    ``extra`` holds the columns every row of the case gets: ``worker_host`` and ``cluster_workers``."""
    from distributed import as_completed

    client, close = _client(spec)
    try:
        n_workers = len(client.scheduler_info().get("workers", {}))
        uses_resource = any(RESOURCE in (info.get("resources") or {})
                            for info in client.scheduler_info().get("workers", {}).values())
        started = time.perf_counter()
        futures = {}
        for case in cases:
            future = client.submit(case_task, case.to_json(), job_base, scratch_root, run_id, limit_of(case),
                                   key=f"iobench-{run_id}-{case.case_id}", pure=False,
                                   resources={RESOURCE: 1} if uses_resource else None)
            futures[future] = case
        for future in as_completed(futures):
            case = futures[future]
            try:
                out = future.result()
            except Exception as exc:  # KilledWorker, a lost connection: the case's error row, the sweep goes on
                record(case, None, -9, f"Dask worker lost during the case: {type(exc).__name__}: {exc}",
                       time.perf_counter() - started, {"cluster_workers": n_workers})
                continue
            record(case, out["rows"], out["rc"], out["stderr"], out["seconds"],
                   {"worker_host": out["host"], "cluster_workers": n_workers})
    finally:
        close()
        from .scratch import is_marked, remove_tree

        for left in Path(scratch_root).glob(f"{run_id}{WORKER_SCRATCH}*"):  # a killed worker's, on this host
            if is_marked(left):
                remove_tree(left, left)


__all__ = ["INSTALL_HINT", "RESOURCE", "case_task", "parse_cluster", "run_on_cluster"]
