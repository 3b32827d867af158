"""A local directory served through S3 for remote reads: copied to versitygw on 127.0.0.1 (or to a user's endpoint),
behind the emulated link of :mod:`.link`; the same interface as the HTTP servers (``url_for``, ``reset``,
``counters``), so the cache/prefetch chapter reads a Zarr store over S3 as it reads one over HTTP.

The copy is made off the clock with obstore (``adapters.obstore_s3``) and removed at the end (only the prefix this
site made). The clients of the measured read run in processes started with :meth:`S3Site.reader_environ`: for the
bundled server, exactly its AWS variables (``AWS_ENDPOINT_URL`` naming the link in front of it) and nothing of the
user's; for a user's endpoint, the user's environment with ``AWS_ENDPOINT_URL`` set to it. This process's own
environment is never written. With the bundled versitygw the counters are the server's own (requests per S3
action, object bytes sent, its CPU time and disk reads, so a cold read can be proven); a user's endpoint tells
nothing, and its page cache is not ours to evict. A bundled server that dies while the site is up calls
``on_death`` with the reason (a case ends itself: ``suites.end_case``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from benchmarks_lib.adapters.obstore_s3 import delete_prefix, upload_tree
from benchmarks_lib.data.storage import S3Target, environ_with_aws, parse_s3
from benchmarks_lib.servers.counters import ServerCounters, _proc_cpu_s
from benchmarks_lib.servers.link import LinkProcess
from benchmarks_lib.servers.versitygw import S3Counts, VersityServer


class S3Site:
    """``root`` readable as ``s3://`` objects at ``target`` (a bucket and prefix), a context manager.

    ``endpoint`` None starts a :class:`VersityServer` (its data under ``scratch``); otherwise that endpoint is
    used with the caller's AWS credentials (the bucket must exist). ``latency_ms`` and ``bandwidth`` put a
    :class:`LinkProcess` between the clients and the bundled server (a user's endpoint has its own link).
    """

    kind = "s3"

    def __init__(self, root: str | Path, target: str, *, endpoint: str | None = None, scratch: Path | None = None,
                 latency_ms: float = 0.0, bandwidth: float | None = None,
                 on_death: Callable[[str], object] | None = None) -> None:
        self.root = Path(root)
        self._target = parse_s3(target, endpoint)
        self._scratch, self.latency_ms, self.bandwidth = scratch, latency_ms, bandwidth
        self.bundled: VersityServer | None = None
        self._on_death = on_death
        self.link: LinkProcess | None = None
        self.prefix: S3Target | None = None
        self._stack = ExitStack()
        self._before: tuple[S3Counts, int | None, float, dict] | None = None

    @property
    def server(self) -> str:
        return "versitygw" if self.bundled else "endpoint"

    @property
    def label(self) -> str:
        """The server as rows name it: the bundled one's name and version, or the endpoint."""
        return self.bundled.label if self.bundled else str(self._target.endpoint)

    @property
    def url(self) -> str:
        assert self.prefix is not None
        return self.prefix.url

    def url_for(self, path: str | Path) -> str:
        """The ``s3://`` URL of ``path`` (a directory or file under ``root``)."""
        rel = Path(path).resolve().relative_to(self.root.resolve()).as_posix()
        assert self.prefix is not None
        return self.prefix.child(rel).url if rel != "." else self.prefix.url

    @property
    def data_dir(self) -> Path | None:
        """Where the bundled server keeps the objects (to evict before a cold read); None for a user's endpoint."""
        return self.bundled.data_dir if self.bundled else None

    @property
    def client_endpoint(self) -> str:
        """Where the measured clients connect: the link in front of the bundled server, the server, or the user's
        endpoint."""
        assert self.prefix is not None and self.prefix.endpoint is not None
        return self.link.url if self.link else self.prefix.endpoint

    def reader_environ(self) -> dict[str, str]:
        """The whole environment of a process that reads from this site (see the module docstring)."""
        if self.bundled:
            return environ_with_aws(self.bundled.client_env(self.client_endpoint))
        return {**os.environ, "AWS_ENDPOINT_URL": self.client_endpoint}

    def __enter__(self) -> S3Site:
        try:
            endpoint = self._target.endpoint
            credentials = None
            if endpoint is None:
                self.bundled = self._stack.enter_context(VersityServer(bucket=self._target.bucket, root=self._scratch,
                                                                       on_death=self._on_death))
                endpoint, credentials = self.bundled.endpoint, self.bundled.store_credentials()
                if self.latency_ms or self.bandwidth:
                    self.link = self._stack.enter_context(
                        LinkProcess(self.bundled.port, latency_ms=self.latency_ms, bandwidth=self.bandwidth))
            self.prefix = S3Target(self._target.bucket, self._target.prefix, endpoint, self._target.region,
                                   credentials).child(f"site-{uuid.uuid4().hex[:8]}")
            self._stack.callback(self._delete)
            upload_tree(self.root, self.prefix)
        except BaseException:
            self.__exit__()
            raise
        return self


    def _delete(self) -> None:
        """Every object under this site's own prefix (a uuid it made)."""
        assert self.prefix is not None
        delete_prefix(self.prefix)

    def _state(self) -> tuple[S3Counts, int | None, float, dict]:
        assert self.bundled is not None and self.bundled.pid is not None
        cpu, disk = _proc_cpu_s(self.bundled.pid), self.bundled.read_bytes()  # before the counters' own request
        return self.bundled.counts(), disk, cpu, self.link.charged() if self.link else {}

    def reset(self) -> None:
        """Start counting anew (before a measured read)."""
        self._before = self._state() if self.bundled else None

    def counters(self) -> ServerCounters | None:
        """What the bundled server saw since :meth:`reset` (None for a user's endpoint): requests (HEAD among
        them), bytes sent (GetObject bodies, as versitygw counts them), connections (the link's, where there is
        one), the server's CPU time and disk reads."""
        if not self.bundled or self._before is None:
            return None
        counts, disk, cpu, link = self._state()
        c0, disk0, cpu0, link0 = self._before
        delta = counts - c0
        heads = int(sum(v for k, v in delta.requests.items() if k.startswith("head")))
        sent = int(delta.sent_bytes)
        return ServerCounters(
            requests=int(sum(delta.requests.values())), head_requests=heads, ranges=None, multi_range_requests=None,
            bytes_sent=sent, payload_bytes=sent,
            connections=link["connections"] - link0["connections"] if link else None, max_in_flight=None,
            cpu_s=cpu - cpu0, io_read_bytes=None if disk is None or disk0 is None else disk - disk0)

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


__all__ = ["S3Site"]
