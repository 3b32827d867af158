"""Reaching a Dask scheduler: its address (``tcp://host:port``; the one parser of it), checking within a few
seconds that a Dask scheduler answers there, a client of it, or a ``LocalCluster`` of our own. What the runner's
``--cluster`` (:mod:`benchmarks_lib.run.cluster`) and the parallel-writes suite both use; imports Dask only when
called.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import re
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks_lib.base.specs import SpecError

SCHEMES = ("tcp", "tls")
EXAMPLE = "tcp://10.0.0.5:8786"
#: how long connecting to a scheduler, and its greeting, may take (Dask's own client waits for the greeting forever)
CONNECT_TIMEOUT_S = 5.0
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


def import_dask() -> None:
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

    _quiet_resource_tracker()
    with dask.config.set({"temporary-directory": str(directory), **(config or {})}):
        try:
            # the scheduler's HTTP routes (no dashboard) on a free port of 127.0.0.1: by default on 8787, where
            # another cluster's would make it warn and move
            return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                                silence_logs=logging.CRITICAL, local_directory=str(directory))
        except BaseException:  # Ctrl-C while it starts: what it started is stopped here, without its own errors
            abandon_local_clusters()
            raise


def abandon_local_clusters() -> None:
    """Stop every Dask client and local cluster of this process (a run's process, or a case's worker, holds only its
    own), their errors suppressed, and forget them: after Ctrl-C or SIGTERM a cluster caught half-started (workers
    still starting) fails its own close, and Dask's exit hook would print that traceback and a failed removal of its
    files (which the run's scratch removes)."""
    from distributed import Client
    from distributed.deploy.spec import SpecCluster

    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    for client in [obj for obj in gc.get_objects() if isinstance(obj, Client)]:
        with contextlib.suppress(Exception):
            client.close(timeout=5)
        # a close cut short (the signal came while the client closed) or timed out (its loop busy) leaves the client
        # "closing": at the interpreter's exit its __del__ would close it again, wait 60 s on a loop that no longer
        # runs and print that traceback after the run's one line. It is closed as far as it can be: say so.
        if client.status != "closed":
            client.status = "closed"
            with contextlib.suppress(Exception):
                client._loop_runner.stop(timeout=5)
    for cluster in list(SpecCluster._instances):
        with contextlib.suppress(Exception):
            cluster.close(timeout=5)
        with contextlib.suppress(Exception):  # a close that timed out leaves the cluster's event loop running on
            cluster._loop_runner.stop(timeout=5)  # its thread, still making nannies and their folders: stop it
        SpecCluster._instances.discard(cluster)
    # a half-started cluster's close can time out with its worker processes (this process's multiprocessing children)
    # still starting; each is started by a thread of its own, from a queue: a start still queued would make the
    # worker's folder in the run's scratch after the run removed it. Each thread does what it was given, then stops.
    import multiprocessing

    starters = [thread for thread in threading.enumerate() if thread.name.startswith("AsyncProcess ")
                and thread.name.endswith(" watch message queue")]
    for thread in starters:
        queue = (getattr(thread, "_args", None) or [None] * 5)[4]
        if hasattr(queue, "put_nowait"):
            queue.put_nowait({"op": "stop"})
    for thread in starters:
        thread.join(timeout=5)
    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    deadline = time.monotonic() + 5
    for child in children:  # one that does not end on SIGTERM within the time (hung, or stopped) is killed
        child.join(timeout=max(0.0, deadline - time.monotonic()))
        if child.is_alive():
            child.kill()
            child.join(timeout=5)


#: what multiprocessing's resource tracker prints when the process that made semaphores (a worker's queues, in
#: the nanny) ends without releasing them, as a stopped run does; it removes them all the same
_TRACKER_WARNING = "ignore:resource_tracker:UserWarning"


def _quiet_resource_tracker() -> None:
    """The resource tracker this process starts (with the cluster's first semaphore) removes a stopped run's
    semaphores without its warning, which would come after the run's one line. It takes the interpreter's -W options
    when it starts; one already running is left as it is."""
    if _TRACKER_WARNING not in sys.warnoptions:
        sys.warnoptions.append(_TRACKER_WARNING)


__all__ = ["CONNECT_TIMEOUT_S", "EXAMPLE", "INSTALL_HINT", "SCHEMES", "abandon_local_clusters", "connect_client",
           "import_dask", "parse_address", "parse_cluster", "probe_scheduler", "start_local_cluster"]
