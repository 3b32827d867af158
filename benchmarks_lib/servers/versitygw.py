"""A real S3 server on 127.0.0.1: versitygw (Versity S3 Gateway, Apache-2.0), its posix backend, started and
stopped by whoever needs it (a test, a suite's case).

versitygw is one Go binary: ``make versitygw`` builds it once from the Go module proxy into a cache outside the
repository (``$XDG_CACHE_HOME/iobench-book/versitygw/bin/versitygw``); ``$IOBENCH_VERSITYGW`` or a ``versitygw``
on PATH are used first. The version it reports is read from the binary itself (the Go build information), so a row
names the server that answered. Its posix backend stores each object as a file under the server's data directory
and its metadata in user extended attributes; where the filesystem has none (``user.*`` refused), in a sidecar
directory beside the data (``posix --sidecar``). It never calls fsync: an acknowledged PUT is in the page cache
(:data:`DURABILITY`).

Each start gets fresh random credentials (:func:`new_credentials`): never in a record, a log, the book or the
server's command line (they reach it through its environment, which holds nothing else of the user's). Its clients
get exactly these and nothing of the user's AWS environment (a session token, a profile, a config file would break
every request): :meth:`VersityServer.client_env` is the one mapping of AWS variables they need, given to a child
process as its whole AWS environment (``storage.environ_with_aws``), or in a client's configuration
(:meth:`VersityServer.store_credentials`). A case that may start one runs in a process whose AWS variables the
runner made for it (:func:`case_environ`; its server adopts them through :func:`case_credentials`), so the
libraries that read only the environment (acquire-zarr, TensorStore) and the Dask workers the case starts see that
server's credentials and no other.

The server's own counters (requests per S3 action, object bytes received and sent) come from its StatsD stream,
pushed to a listener of the owning process (:mod:`.statsd`), read before and after a timed region, as is its CPU
time (/proc/PID/stat). The server queues its updates before it answers a request, and sends them in order: a
signed ListBuckets of our own (never a client's request) after the region, once its update has arrived, says that
every update before it has too.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import mmap
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks_lib.base.availability import not_installed
from benchmarks_lib.base.scratch import create_marked_dir, make_temp_scratch, remove_tree
from benchmarks_lib.data.storage import environ_with_aws
from benchmarks_lib.measure.fresh import die_with_parent
from benchmarks_lib.servers.loopback import HOST, ServerUnavailable, free_port, stop_process
from benchmarks_lib.servers.sigv4 import signed_headers
from benchmarks_lib.servers.statsd import StatsdListener

#: the versitygw module version ``make versitygw`` builds (``go install MODULE/cmd/versitygw@VERSION``)
VERSITYGW_VERSION = "v1.8.0"
MODULE = "github.com/versity/versitygw"
LICENCE = "Apache-2.0"
INSTALL_HINT = f"make versitygw (Go: go install {MODULE}/cmd/versitygw@{VERSITYGW_VERSION}), or set IOBENCH_VERSITYGW"
#: what the server does with a PUT (its posix backend: no fsync, checked in the v1.8.0 source)
DURABILITY = ("a PUT is written to a file of the server's filesystem and acknowledged without fsync: acknowledged "
              "means in the page cache, not on the disk")
REGION = "us-east-1"
#: marks a case process's AWS credentials as the runner's, made for the server the case may start (its value:
#: the access key id), never a user's
CASE_CREDENTIALS = "IOBENCH_CASE_CREDENTIALS"
#: the S3 action of the marker request that closes a count (ListBuckets: no client of ours lists buckets)
MARKER_ACTION = "ListAllMyBuckets"
#: seconds to wait for the marker's update (the server flushes every 100 ms)
FLUSH_TIMEOUT_S = 10.0
HEALTH_PATH = "/health"
#: starts tried on a fresh port when the one chosen was taken meanwhile
PORT_TRIES = 3


def new_credentials() -> dict[str, str]:
    """Fresh random credentials for one server, as the AWS variables its clients read (no endpoint yet)."""
    return {"AWS_ACCESS_KEY_ID": f"iobench{secrets.token_hex(4)}", "AWS_SECRET_ACCESS_KEY": secrets.token_urlsafe(24),
            "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_ALLOW_HTTP": "true",
            "AWS_EC2_METADATA_DISABLED": "true"}


def case_environ() -> dict[str, str]:
    """The environment of a case's process: this one's without any AWS variable, plus fresh credentials that a
    server the case starts adopts (:func:`case_credentials`)."""
    credentials = new_credentials()
    return environ_with_aws(credentials) | {CASE_CREDENTIALS: credentials["AWS_ACCESS_KEY_ID"]}


def case_credentials() -> dict[str, str] | None:
    """The AWS variables :func:`case_environ` made for this case's process; None in any other process (a user's
    keys are never adopted)."""
    key = os.environ.get("AWS_ACCESS_KEY_ID")
    if not key or os.environ.get(CASE_CREDENTIALS) != key:
        return None
    return {k: v for k, v in os.environ.items() if k.startswith("AWS_")}


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "iobench-book" / "versitygw"


def cache_binary() -> Path:
    return cache_dir() / "bin" / "versitygw"


def versitygw_path() -> str | None:
    """``$IOBENCH_VERSITYGW``, a ``versitygw`` on PATH, or the one ``make versitygw`` built; None when there is
    none."""
    for candidate in (os.environ.get("IOBENCH_VERSITYGW"), shutil.which("versitygw"), str(cache_binary())):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def versitygw_missing_reason() -> str | None:
    """None where a binary exists; else one line: not installed, and why where ``make versitygw`` left a log of
    a failed build."""
    if versitygw_path():
        return None
    log = cache_dir() / "build.log"
    why = f"; its last build failed, see {log}" if log.is_file() else ""
    return not_installed(f"versitygw (the S3 server{why})", INSTALL_HINT)


@functools.lru_cache(maxsize=4)
def binary_version(path: str, mtime_ns: int = 0) -> str | None:
    """The module version a Go build of versitygw records in its binary (``go version -m``: ``mod MODULE
    VERSION``), else the one ``versitygw --version`` prints; None where neither says (``mtime_ns``: a rebuilt
    binary is read again)."""
    with contextlib.suppress(OSError, ValueError), open(path, "rb") as f, \
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        at = m.find(f"\nmod\t{MODULE}\t".encode())
        if at >= 0:
            version = m[at:at + 200].split(b"\t")[2].decode("ascii", "replace")
            if version.startswith("v"):
                return version
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, env={},
                             preexec_fn=die_with_parent).stdout
        if said := re.search(r"^Version\s*:\s*(v\S+)", out, re.MULTILINE):
            return said.group(1)
    return None


def server_label(path: str, sidecar: bool) -> str:
    """How a row names this server: ``versitygw v1.8.0 (posix)``, ``... (posix, sidecar metadata)``."""
    version = binary_version(path, Path(path).stat().st_mtime_ns) or "(version unknown)"
    return f"versitygw {version} (posix{', sidecar metadata' if sidecar else ''})"


def has_user_xattrs(directory: Path) -> bool:
    """True when files in ``directory`` take ``user.*`` extended attributes (tried on a file of ours, removed)."""
    probe = directory / f".xattr-probe-{secrets.token_hex(4)}"
    probe.touch(exist_ok=False)
    try:
        os.setxattr(probe, "user.iobench", b"1")
        return True
    except OSError as exc:  # not supported, or refused: the server could not set them either
        if exc.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM, errno.EACCES):
            raise
        return False
    finally:
        probe.unlink()


@dataclass(frozen=True)
class S3Counts:
    """What the server saw: requests per S3 action (lower case) and object bytes in (PUT and part bodies) and out
    (GET bodies)."""

    requests: dict[str, float] = field(default_factory=dict)
    received_bytes: float = 0.0
    sent_bytes: float = 0.0

    def __sub__(self, other: S3Counts) -> S3Counts:
        keys = set(self.requests) | set(other.requests)
        return S3Counts({k: self.requests.get(k, 0) - other.requests.get(k, 0) for k in keys
                         if self.requests.get(k, 0) - other.requests.get(k, 0)},
                        self.received_bytes - other.received_bytes, self.sent_bytes - other.sent_bytes)

    def as_row(self) -> dict:
        """The row's columns: requests in all, per kind and per action (``s3_actions``: ``getobject 33,
        headobject 2``), and bytes (MinIO's name for an upload part, ``putobjectpart``, is still counted)."""
        return {"s3_requests": int(sum(self.requests.values())),
                "s3_actions": ", ".join(f"{k} {int(v)}" for k, v in sorted(self.requests.items())),
                "s3_multipart_parts": int(sum(v for k, v in self.requests.items() if k in ("putobjectpart",
                                                                                          "uploadpart"))),
                "s3_put_requests": int(sum(v for k, v in self.requests.items() if k.startswith(("put", "upload",
                                                                                                "createmultipart",
                                                                                                "completemultipart")))),
                "s3_get_requests": int(sum(v for k, v in self.requests.items() if k.startswith(("get", "head")))),
                "s3_received_bytes": int(self.received_bytes), "s3_sent_bytes": int(self.sent_bytes)}


def counts_from(totals: dict[tuple[str, str], int]) -> S3Counts:
    """versitygw's StatsD totals (``success_count``/``failed_count``, ``bytes_written``, ``bytes_read`` per
    action) as :class:`S3Counts`, the marker requests left out."""
    requests: dict[str, float] = {}
    received = sent = 0
    for (metric, action), value in totals.items():
        if action == MARKER_ACTION:
            continue
        if metric in ("success_count", "failed_count"):
            requests[action.lower()] = requests.get(action.lower(), 0) + value
        elif metric == "bytes_written":
            received += value
        elif metric == "bytes_read":
            sent += value
    return S3Counts(requests, received, sent)


class VersityServer:
    """``versitygw posix`` on 127.0.0.1 over a marked temporary directory; a context manager.

    ``endpoint`` is its URL, :meth:`client_env` the AWS variables an S3 client needs (``credentials``, as
    :func:`new_credentials` makes them; fresh ones by default), ``bucket`` an empty bucket created at start,
    ``label`` the server and its version as rows name it. ``on_death`` (a case's :func:`..suites.end_case`) is
    called with one line when the server dies while in use: a client would otherwise retry its requests for
    minutes."""

    kind = "versitygw"

    def __init__(self, bucket: str = "iobench", root: str | Path | None = None,
                 credentials: dict[str, str] | None = None, on_death: Callable[[str], object] | None = None) -> None:
        self.executable = versitygw_path()
        if self.executable is None:
            raise ServerUnavailable(versitygw_missing_reason())
        self._root = Path(root) if root is not None else None
        self.bucket = bucket
        self.port = 0
        self._proc: subprocess.Popen | None = None
        self._dir: Path | None = None
        self._credentials = dict(credentials or new_credentials())
        self._on_death = on_death
        self._stopping = False
        self._stats: StatsdListener | None = None
        self._markers = 0
        self.sidecar = False
        self.label = ""
        self.start_s = float("nan")

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def client_env(self, endpoint: str | None = None) -> dict[str, str]:
        """Every AWS variable a client of this server needs, and only those: its credentials, region and
        ``AWS_ENDPOINT_URL`` (``endpoint``, e.g. a link in front of it; by default the server's)."""
        return {**self._credentials, "AWS_ENDPOINT_URL": endpoint or self.endpoint}

    @property
    def env(self) -> dict[str, str]:
        """:meth:`client_env` at the server's own endpoint."""
        return self.client_env()

    @property
    def data_dir(self) -> Path:
        """Where the server keeps the objects (for page-cache eviction before a cold read)."""
        assert self._dir is not None
        return self._dir / "data"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def read_bytes(self) -> int | None:
        """Bytes the server process has read from storage so far (/proc/PID/io), None where unreadable."""
        from benchmarks_lib.servers.counters import _proc_read_bytes

        return _proc_read_bytes(self._proc.pid) if self._proc is not None else None

    def cpu_s(self) -> float | None:
        """CPU seconds (user + system, all its threads) the server process has used so far (/proc/PID/stat); read
        it before and after a timed region, never inside. None where unreadable."""
        from benchmarks_lib.servers.counters import _proc_cpu_s

        if self._proc is None:
            return None
        try:
            return _proc_cpu_s(self._proc.pid)
        except (OSError, IndexError, ValueError):
            return None

    def cores(self) -> int | None:
        """The cores the server may run on (its CPU affinity; Go's GOMAXPROCS defaults to this many)."""
        if self._proc is None:
            return None
        try:
            return len(os.sched_getaffinity(self._proc.pid))
        except OSError:
            return None

    def __enter__(self) -> VersityServer:
        t0 = time.perf_counter()
        self._dir = create_marked_dir(self._root / f"versitygw-{secrets.token_hex(4)}") if self._root else \
            make_temp_scratch("iobench-versitygw-")
        try:
            self.data_dir.mkdir()
            self.sidecar = not has_user_xattrs(self.data_dir)
            if self.sidecar:
                (self._dir / "meta").mkdir()
            self.label = server_label(self.executable, self.sidecar)
            self._stats = StatsdListener().__enter__()
            for attempt in range(PORT_TRIES):
                try:
                    self._start()
                    break
                except PortTaken as exc:
                    if attempt == PORT_TRIES - 1:
                        raise PortTaken(f"{exc} ({PORT_TRIES} ports tried, each taken before it bound it)") from None
            self._make_bucket()
            threading.Thread(target=self._watch, name="versitygw-watch", daemon=True).start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.start_s = time.perf_counter() - t0
        return self

    def _start(self) -> None:
        """One start on a free port, until it answers its health check."""
        assert self._dir is not None and self._stats is not None
        self.port = free_port()
        # the server's own settings only: its credentials, and nothing of the user's environment (versitygw reads
        # VGW_*, ROOT_*, LOGFILE, WEBHOOK ... from it)
        env = {"PATH": os.defpath, "ROOT_ACCESS_KEY_ID": self._credentials["AWS_ACCESS_KEY_ID"],
               "ROOT_SECRET_ACCESS_KEY": self._credentials["AWS_SECRET_ACCESS_KEY"]}
        backend = ["posix", *(["--sidecar", str(self._dir / "meta")] if self.sidecar else []), str(self.data_dir)]
        self._proc = subprocess.Popen(
            [self.executable, "--port", f"{HOST}:{self.port}", "--region", REGION, "--health", HEALTH_PATH,
             "--keep-alive", "--quiet", "--metrics-service-name", "iobench",
             "--metrics-statsd-servers", self._stats.address, *backend],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
            preexec_fn=die_with_parent)  # a crashed case must not leave its server writing into deleted scratch
        self._stats.sender_pid = self._proc.pid
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                err = (self._proc.stderr.read() if self._proc.stderr else "")[-500:]
                status = self._exit_status()
                stop_process(self._proc)
                self._proc = None
                if "address already in use" in err:
                    raise PortTaken(f"versitygw could not bind port {self.port} of {HOST}: address already in use")
                raise RuntimeError(f"versitygw exited with status {status} before it was ready: "
                                   f"{' '.join(err.split()) or 'no message'}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.endpoint}{HEALTH_PATH}",
                                                                        timeout=1) as r:
                if r.status == 200:
                    return
            time.sleep(0.02)
        raise RuntimeError(f"versitygw was not ready on {self.endpoint} within {timeout_s} s")

    def _exit_status(self, proc: subprocess.Popen | None = None) -> str:
        """``1``, or ``killed by signal 9 (SIGKILL)``."""
        code = (proc or self._proc).returncode if (proc or self._proc) else None
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by signal {-code} ({signal.Signals(-code).name})"
        return f"{code}"

    def _request(self, method: str, path: str) -> None:
        """One request of ours, signed with this server's credentials (:mod:`.sigv4`)."""
        url = f"{self.endpoint}{path}"
        headers = signed_headers(method, url, b"", self._credentials["AWS_ACCESS_KEY_ID"],
                                 self._credentials["AWS_SECRET_ACCESS_KEY"], region=REGION)
        request = urllib.request.Request(url, data=b"" if method == "PUT" else None, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as r:
            r.read()

    def _make_bucket(self) -> None:
        """The run's bucket (obstore, the clients' store, cannot create buckets)."""
        self._request("PUT", f"/{self.bucket}")

    def _watch(self) -> None:
        """Waits for the server's exit: one that is not ours (killed, crashed) ends the case through
        ``on_death``, with the reason."""
        proc = self._proc
        if proc is None or self._on_death is None:
            return
        try:
            fd = os.pidfd_open(proc.pid)
        except OSError:
            return
        try:
            select.select([fd], [], [])
        finally:
            os.close(fd)
        if not self._stopping:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)
            self._on_death(f"the case's S3 server (versitygw, pid {proc.pid}) died during the case: "
                           f"{self._exit_status(proc)}")

    def store_credentials(self) -> dict[str, str]:
        """This server's credentials as ``storage.S3Target.credentials`` names them (never record them)."""
        return {"access_key_id": self._credentials["AWS_ACCESS_KEY_ID"],
                "secret_access_key": self._credentials["AWS_SECRET_ACCESS_KEY"]}

    def counts(self) -> S3Counts:
        """The server's request and byte counters now: every update it sent before this call's marker request."""
        assert self._stats is not None
        self._request("GET", "/")
        self._markers += 1
        if not self._stats.wait_for("success_count", MARKER_ACTION, self._markers, FLUSH_TIMEOUT_S):
            raise RuntimeError(f"versitygw's counters did not arrive within {FLUSH_TIMEOUT_S:g} s (its StatsD "
                               f"stream to {self._stats.address}; {self._stats.refused} datagrams refused)")
        return counts_from(self._stats.totals())

    def __exit__(self, *exc: object) -> None:
        self._stopping = True
        stop_process(self._proc)
        self._proc = None
        if self._stats is not None:
            self._stats.__exit__(None, None, None)
            self._stats = None
        if self._dir is not None:
            remove_tree(self._dir, self._dir)
            self._dir = None


class PortTaken(RuntimeError):
    """The port chosen was taken between the choice and the server's start: tried again on another."""


__all__ = ["DURABILITY", "INSTALL_HINT", "LICENCE", "VERSITYGW_VERSION", "S3Counts", "VersityServer",
           "case_credentials", "case_environ", "new_credentials", "server_label", "versitygw_missing_reason",
           "versitygw_path"]
