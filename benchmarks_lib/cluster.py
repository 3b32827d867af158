"""Independent cases as Dask tasks: ``--cluster local`` or a Dask scheduler address (``tcp://host:8786``).

The default stays in-process and serial: a benchmark wants a quiet machine. On a cluster every case is
one task that runs the same fresh worker process as the serial runner (``runner.run_one_case``), in a
marked scratch directory of its Dask worker, at most one measured case per worker at a time: a
``LocalCluster`` of single-threaded workers (one per usable core), or, on a scheduler of your own
(dask-jobqueue on an HPC system included), workers with one thread or the ``iobench_case=1`` resource.
The client writes every record into the one run directory, each row tagged with its worker's host and
the number of workers. A worker lost mid-case (killed, its node gone) becomes the case's error row and
the sweep goes on. A scheduler address is checked before the run creates anything: a port where nothing
listens, or where something other than a Dask scheduler answers (a web server), is refused in one line
within :data:`CONNECT_TIMEOUT_S`.
"""

from __future__ import annotations

import os
import re
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .specs import SpecError
from .suites import Case

SCHEMES = ("tcp", "tls")
EXAMPLE = "tcp://10.0.0.5:8786"
#: how long connecting to a scheduler, and its greeting, may take (Dask's own client waits for the greeting forever)
CONNECT_TIMEOUT_S = 5.0
#: a worker's scratch directory is ``<scratch root>/<run id>+dask-<worker>-<pid>`` ('+' is never in a run id,
#: so the client's clean-up of a killed worker's leftovers matches this run's directories only)
WORKER_SCRATCH = "+dask-"
#: the worker resource a scheduler of your own may offer instead of single-threaded workers
RESOURCE = "iobench_case"
INSTALL_HINT = "pip install 'iobench-book[cluster]' (dask and distributed)"


_ADDRESS = re.compile(r"^([a-z][a-z0-9+.-]*)://([A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,10})$")


def parse_address(value: object) -> tuple[str, str, int]:
    """A scheduler's ``scheme://host:port`` (a scheme in ``SCHEMES``, port 1-65535) as (scheme, host, port)."""
    what = "cluster"
    match = _ADDRESS.match(value.strip()) if isinstance(value, str) else None
    if match is None or match.group(1) not in SCHEMES:
        forms = " or ".join(f"{s}://host:port" for s in SCHEMES)
        raise SpecError(f"{what} {value!r} is not an address; allowed: {forms}, e.g. {EXAMPLE}")
    scheme, host, port = match.group(1), match.group(2).strip("[]"), int(match.group(3))
    if not 1 <= port <= 65535:
        raise SpecError(f"{what} {value!r}: port {port} is out of range; allowed 1-65535")
    return scheme, host, port


def parse_cluster(value: object, *, local_workers: bool = True) -> str:
    """``local``, ``local:N`` (N workers; unless ``local_workers`` is False) or a scheduler address
    ``tcp://host:port`` (port 1-65535); a one-line SpecError otherwise. Nothing is contacted."""
    text = value.strip() if isinstance(value, str) else None
    if text == "local" or (local_workers and text and re.fullmatch(r"local:[1-9]\d{0,3}", text)):
        return text
    if text and text.startswith(tuple(f"{s}://" for s in SCHEMES)):
        parse_address(text)
        return text
    local = "local, local:N (N workers)" if local_workers else "local"
    raise SpecError(f"cluster {value!r} is not allowed; give {local} or a Dask scheduler address such as {EXAMPLE}")


def _receive(sock: socket.socket, nbytes: int, timeout_s: float) -> bytes:
    """Up to ``nbytes`` from ``sock`` within ``timeout_s`` (less when the peer stops or closes)."""
    data, deadline = b"", time.monotonic() + timeout_s
    while len(data) < nbytes and (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            chunk = sock.recv(nbytes - len(data))
        except OSError:  # the time is up, or the peer reset the connection
            break
        if not chunk:
            break
        data += chunk
    return data


def _is_dask_greeting(data: bytes) -> bool:
    """Dask's handshake frame: its length, its count of sub-frames and their lengths (little-endian uint64)."""
    if len(data) < 24:
        return False
    total, frames, _ = struct.unpack("<QQQ", data[:24])
    return 1 <= frames <= 1024 and 8 * (frames + 1) <= total < 2**26


def _what_answered(sock: socket.socket, greeting: bytes, timeout_s: float) -> str:
    """What the peer at ``sock`` is, in a few words, when its greeting (maybe none) was not Dask's."""
    if greeting:
        return "it spoke HTTP" if greeting.startswith(b"HTTP/") else f"it sent {greeting[:32]!r}"
    try:
        sock.sendall(b"HEAD / HTTP/1.0\r\n\r\n")  # a scheduler greets first: this one waits for a request
    except OSError:
        return "it closed the connection"
    reply = _receive(sock, 32, 1.0)
    if reply.startswith(b"HTTP/"):
        return f"it sent no Dask greeting within {timeout_s:g} s and spoke HTTP"
    return f"it sent no Dask greeting within {timeout_s:g} s" + (f", then {reply!r}" if reply else "")


def probe_scheduler(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """A one-line SpecError unless a Dask scheduler greets us at ``address`` within ``timeout_s``.

    Dask's client waits for the scheduler's greeting without a limit, so a port that speaks anything else (a web
    server) would hang it: connect and read the greeting here first. TLS (the client speaks first) is only
    checked for a listener; Dask's TLS handshake has its own limit."""
    scheme, host, port = parse_address(address)
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except ConnectionRefusedError:
        raise SpecError(f"cluster: nothing listens at {address} (connection refused); start a Dask scheduler there "
                        "or give local") from None
    except TimeoutError:
        raise SpecError(f"cluster: nothing answered at {address} within {timeout_s:g} s") from None
    except OSError as exc:
        raise SpecError(f"cluster: cannot reach {address}: {exc.strerror or exc}") from None
    with sock:
        if scheme == "tls":
            return
        greeting = _receive(sock, 24, timeout_s)
        if _is_dask_greeting(greeting):
            return
        what = _what_answered(sock, greeting, timeout_s)
    raise SpecError(f"cluster: {address} answered but is not a Dask scheduler ({what}); give the address the "
                    f"scheduler prints (dask scheduler: tcp://HOST:8786)")


def connect_client(address: str) -> Any:
    """A Dask client of the scheduler at ``address``, connected within :data:`CONNECT_TIMEOUT_S` (one-line
    SpecError otherwise)."""
    from distributed import Client

    probe_scheduler(address)
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        raise SpecError(f"cluster: cannot connect to the Dask scheduler at {address} ({exc})") from None


def _import_dask() -> None:
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise SpecError(f"--cluster needs Dask: {INSTALL_HINT}") from None


def start_local_cluster(workers: int, directory: Path, config: dict | None = None) -> Any:
    """A ``LocalCluster`` of ``workers`` single-threaded worker processes on 127.0.0.1 (Dask ``config`` set while
    it starts); the scheduler's and the workers' files go in ``directory`` (a run's scratch), not in $TMPDIR."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"temporary-directory": str(directory), **(config or {})}):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                            silence_logs=40, local_directory=str(directory))


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
    _import_dask()
    if not spec.startswith("local"):
        client = _scheduler_client(spec)
        return client, client.close
    from distributed import Client

    from .environment import usable_cores

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
    _import_dask()
    if not spec.startswith("local"):
        _scheduler_client(spec).close()


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

    client, close = _client(spec, Path(scratch_root) / run_id / "dask")
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


__all__ = ["CONNECT_TIMEOUT_S", "INSTALL_HINT", "RESOURCE", "case_task", "check_cluster", "connect_client",
           "parse_cluster", "probe_scheduler", "run_on_cluster", "start_local_cluster"]
