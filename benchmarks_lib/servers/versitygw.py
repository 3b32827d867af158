"""A real S3 server on 127.0.0.1: MinIO, started and stopped by whoever needs it (a test, a suite's case).

MinIO is one Go binary: ``make minio`` builds it once from the Go module proxy into a cache outside the
repository (``$XDG_CACHE_HOME/iobench-book/minio/bin/minio``); ``$IOBENCH_MINIO`` or a ``minio`` on PATH are
used first. Each start gets fresh random credentials (:func:`new_credentials`): never in a record, a log or
the book. Its clients get exactly these and nothing of the user's AWS environment (a session token, a
profile, a config file would break every request): :meth:`MinioServer.client_env` is the one mapping of AWS
variables they need, given to a child process as its whole AWS environment (``storage.environ_with_aws``),
or in a client's configuration (:meth:`MinioServer.store_credentials`). A case that may start one runs in a
process whose AWS variables the runner made for it (:func:`case_environ`; its server adopts them through
:func:`case_credentials`), so the libraries that read only the environment (acquire-zarr, TensorStore) and
the Dask workers the case starts see that server's credentials and no other. The server's own counters
(requests per S3 API call, bytes received and sent) come from its Prometheus v3 endpoint (public on this
private, loopback-only server), read before and after a timed region, as is its CPU time (/proc/PID/stat).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..availability import not_installed
from ..measure.fresh import die_with_parent
from ..scratch import create_marked_dir, make_temp_scratch, remove_tree
from ..storage import environ_with_aws, without_aws
from .loopback import HOST, ServerUnavailable, free_port, stop_process
from .sigv4 import signed_headers

#: the MinIO module version ``make minio`` builds (``go install github.com/minio/minio@VERSION``)
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"
MINIO_INSTALL_HINT = f"make minio (Go: go install github.com/minio/minio@{MINIO_VERSION}), or set IOBENCH_MINIO"
REGION = "us-east-1"
#: marks a case process's AWS credentials as the runner's, made for the MinIO the case may start (its value:
#: the access key id), never a user's
CASE_CREDENTIALS = "IOBENCH_CASE_CREDENTIALS"


def new_credentials() -> dict[str, str]:
    """Fresh random credentials for one MinIO, as the AWS variables its clients read (no endpoint yet)."""
    return {"AWS_ACCESS_KEY_ID": f"iobench{secrets.token_hex(4)}", "AWS_SECRET_ACCESS_KEY": secrets.token_urlsafe(24),
            "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_ALLOW_HTTP": "true",
            "AWS_EC2_METADATA_DISABLED": "true"}


def case_environ() -> dict[str, str]:
    """The environment of a case's process: this one's without any AWS variable, plus fresh credentials that a
    MinIO the case starts adopts (:func:`case_credentials`)."""
    credentials = new_credentials()
    return environ_with_aws(credentials) | {CASE_CREDENTIALS: credentials["AWS_ACCESS_KEY_ID"]}


def case_credentials() -> dict[str, str] | None:
    """The AWS variables :func:`case_environ` made for this case's process; None in any other process (a user's
    keys are never adopted)."""
    key = os.environ.get("AWS_ACCESS_KEY_ID")
    if not key or os.environ.get(CASE_CREDENTIALS) != key:
        return None
    return {k: v for k, v in os.environ.items() if k.startswith("AWS_")}


def cache_binary() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "iobench-book" / "minio" / "bin" / "minio"


def minio_path() -> str | None:
    """``$IOBENCH_MINIO``, a ``minio`` on PATH, or the one ``make minio`` built; None when there is none."""
    for candidate in (os.environ.get("IOBENCH_MINIO"), shutil.which("minio"), str(cache_binary())):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def minio_missing_reason() -> str | None:
    return None if minio_path() else not_installed("MinIO (no minio binary)", MINIO_INSTALL_HINT)


@dataclass(frozen=True)
class S3Counts:
    """What the server saw: requests per S3 API call and bytes in and out."""

    requests: dict[str, float] = field(default_factory=dict)
    received_bytes: float = 0.0
    sent_bytes: float = 0.0

    def __sub__(self, other: S3Counts) -> S3Counts:
        keys = set(self.requests) | set(other.requests)
        return S3Counts({k: self.requests.get(k, 0) - other.requests.get(k, 0) for k in keys
                         if self.requests.get(k, 0) - other.requests.get(k, 0)},
                        self.received_bytes - other.received_bytes, self.sent_bytes - other.sent_bytes)

    def as_row(self) -> dict:
        return {"s3_requests": int(sum(self.requests.values())),
                "s3_multipart_parts": int(sum(v for k, v in self.requests.items() if k in ("putobjectpart",
                                                                                          "uploadpart"))),
                "s3_put_requests": int(sum(v for k, v in self.requests.items() if k.startswith(("put", "upload",
                                                                                                "createmultipart",
                                                                                                "completemultipart")))),
                "s3_get_requests": int(sum(v for k, v in self.requests.items() if k.startswith(("get", "head")))),
                "s3_received_bytes": int(self.received_bytes), "s3_sent_bytes": int(self.sent_bytes)}


#: MinIO's v3 API metrics (live: the v2 endpoints serve a cached snapshot, useless around a timed region)
METRICS_PATH = "/minio/metrics/v3/api/requests"
_METRIC = re.compile(r'^(minio_api_requests_total|minio_api_requests_traffic_received_bytes'
                     r'|minio_api_requests_traffic_sent_bytes)(\{[^}]*\})?\s+([0-9.eE+-]+)$')


class MinioServer:
    """``minio server`` on 127.0.0.1 over a marked temporary directory; a context manager.

    ``endpoint`` is its URL, :meth:`client_env` the AWS variables an S3 client needs (``credentials``, as
    :func:`new_credentials` makes them; fresh ones by default), ``bucket`` an empty bucket created at start."""

    kind = "minio"

    def __init__(self, bucket: str = "iobench", root: str | Path | None = None,
                 credentials: dict[str, str] | None = None) -> None:
        self.executable = minio_path()
        self._root = Path(root) if root is not None else None
        if self.executable is None:
            raise ServerUnavailable(minio_missing_reason())
        self.bucket = bucket
        self.port = 0
        self._proc: subprocess.Popen | None = None
        self._dir: Path | None = None
        self._credentials = dict(credentials or new_credentials())
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
        from .counters import _proc_read_bytes

        return _proc_read_bytes(self._proc.pid) if self._proc is not None else None

    def cpu_s(self) -> float | None:
        """CPU seconds (user + system, all its threads) the server process has used so far (/proc/PID/stat); read
        it before and after a timed region, never inside. None where unreadable."""
        from .counters import _proc_cpu_s

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

    def __enter__(self) -> MinioServer:
        t0 = time.perf_counter()
        self._dir = create_marked_dir(self._root / f"minio-{secrets.token_hex(4)}") if self._root else \
            make_temp_scratch("iobench-minio-")
        self.port = free_port()
        # the server's own settings only: none of the user's AWS or MINIO variables
        env = {k: v for k, v in without_aws().items() if not k.startswith("MINIO_")} | {
            "MINIO_ROOT_USER": self._credentials["AWS_ACCESS_KEY_ID"],
            "MINIO_ROOT_PASSWORD": self._credentials["AWS_SECRET_ACCESS_KEY"], "MINIO_PROMETHEUS_AUTH_TYPE": "public",
            "MINIO_BROWSER": "off", "MINIO_UPDATE": "off", "MINIO_REGION": REGION}
        self._proc = subprocess.Popen(
            [self.executable, "server", str(self._dir / "data"), "--address", f"{HOST}:{self.port}", "--quiet"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
            preexec_fn=die_with_parent)  # a crashed case must not leave its server writing into deleted scratch
        try:
            self._wait_ready()
            self._make_bucket()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.start_s = time.perf_counter() - t0
        return self

    def _wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                err = (self._proc.stderr.read() if self._proc.stderr else "")[-500:]
                raise RuntimeError(f"minio exited with status {self._proc.returncode} before it was ready: {err}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.endpoint}/minio/health/ready",
                                                                        timeout=1) as r:
                if r.status == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"minio was not ready on {self.endpoint} within {timeout_s} s")

    def _make_bucket(self, timeout_s: float = 60.0) -> None:
        """The run's bucket: one PUT signed with this server's credentials (:mod:`.sigv4`: obstore, the clients'
        store, cannot create buckets), again while the server answers 503 (ready, but still initialising)."""
        deadline = time.monotonic() + timeout_s
        url = f"{self.endpoint}/{self.bucket}"
        while True:
            headers = signed_headers("PUT", url, b"", self._credentials["AWS_ACCESS_KEY_ID"],
                                     self._credentials["AWS_SECRET_ACCESS_KEY"], region=REGION)
            request = urllib.request.Request(url, data=b"", method="PUT", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30):
                    return
            except urllib.error.HTTPError as exc:
                if exc.code != 503 or time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    def store_credentials(self) -> dict[str, str]:
        """This server's credentials as ``storage.S3Target.credentials`` names them (never record them)."""
        return {"access_key_id": self._credentials["AWS_ACCESS_KEY_ID"],
                "secret_access_key": self._credentials["AWS_SECRET_ACCESS_KEY"]}

    def counts(self) -> S3Counts:
        """The server's request and byte counters now (Prometheus v3 API metrics)."""
        with urllib.request.urlopen(f"{self.endpoint}{METRICS_PATH}", timeout=10) as r:
            text = r.read().decode()
        requests: dict[str, float] = {}
        received = sent = 0.0
        for line in text.splitlines():
            m = _METRIC.match(line.strip())
            if not m:
                continue
            name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
            if 'type="s3"' not in labels:
                continue
            if name == "minio_api_requests_total":
                api = re.search(r'name="([^"]+)"', labels)
                key = api.group(1).lower() if api else "other"
                requests[key] = requests.get(key, 0) + value
            elif name == "minio_api_requests_traffic_received_bytes":
                received += value
            else:
                sent += value
        return S3Counts(requests, received, sent)

    def __exit__(self, *exc: object) -> None:
        stop_process(self._proc)
        self._proc = None
        if self._dir is not None:
            remove_tree(self._dir, self._dir)
            self._dir = None


__all__ = ["MINIO_INSTALL_HINT", "MINIO_VERSION", "MinioServer", "S3Counts", "case_credentials", "case_environ",
           "minio_missing_reason", "minio_path", "new_credentials"]
