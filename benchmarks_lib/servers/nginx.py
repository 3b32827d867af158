"""nginx as the second server (optional, Debian's ``nginx-light``): counted from a JSON-lines access
log, with the emulated link in front (:class:`~benchmarks_lib.servers.link.LinkProcess`).

nginx runs as one process (``master_process off``): a master's workers outlive a killed master, one
process dies with its owner (PDEATHSIG) and leaves nothing listening. Started by root, it runs as
``nobody`` when ``nobody`` can read what it serves (else as root, still confined to its root and to
127.0.0.1). Its configuration, logs and pid file live in a marked directory next to the served root when
that lies in a marked scratch directory (a run's scratch: removed with it), else in the system's temporary
directory, removed at stop.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import socket
import subprocess
import time
import uuid
from dataclasses import replace
from pathlib import Path

from benchmarks_lib.base.availability import find_program, not_installed
from benchmarks_lib.base.scratch import ScratchError, create_marked_dir, make_temp_scratch, owning_scratch, remove_tree
from benchmarks_lib.measure.fresh import die_with_parent
from benchmarks_lib.servers.counters import ServerCounters, _proc_cpu_s, _proc_read_bytes, _process_tree, _Tally
from benchmarks_lib.servers.link import LinkProcess
from benchmarks_lib.servers.loopback import HOST, ServerUnavailable, free_port, stop_process
from benchmarks_lib.servers.ranges import ServedRoot, confine, parse_range_header

NGINX_INSTALL_HINT = "apt-get install nginx-light (Debian), or use server kind 'builtin'"


def nginx_path() -> str | None:
    """The nginx executable on PATH (or in /usr/sbin), or None."""
    return find_program("nginx")


def nginx_missing_reason() -> str | None:
    """None when nginx is installed, else a one-line reason with the install hint."""
    return None if nginx_path() else not_installed("nginx (no `nginx` on PATH or in /usr/sbin)", NGINX_INSTALL_HINT)


def _wait_for_port(port: int, proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with status {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.2):
            return
        time.sleep(0.02)
    raise RuntimeError(f"nginx did not listen on {HOST}:{port} within {timeout_s} s")


def _state_dir(root: Path) -> Path:
    """A new marked directory for nginx's files: beside ``root`` inside a marked scratch, else in the temp dir."""
    try:
        owning_scratch(root.parent)
    except ScratchError:
        state = make_temp_scratch("iobench-nginx-")
    else:
        state = create_marked_dir(root.parent / f"iobench-nginx-{uuid.uuid4().hex[:12]}")
    state.chmod(0o755)  # nginx, maybe as nobody, reads its configuration here
    return state


def _user_name(uid: int) -> str:
    with contextlib.suppress(KeyError):
        return pwd.getpwuid(uid).pw_name
    return str(uid)


def _unprivileged_user(*paths: Path) -> pwd.struct_passwd | None:
    """``nobody`` when we are root and ``nobody`` can read everything under ``paths``; else None (run as we are)."""
    find = shutil.which("find")
    if os.geteuid() != 0 or find is None:
        return None
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None
    # as nobody: the first directory it cannot enter or file it cannot read (find fails where a parent is closed)
    check = subprocess.run([find, *map(str, paths), "(", "-type", "d", "!", "-executable", "-o", "!", "-readable",
                            ")", "-print", "-quit"], user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)
    return nobody if check.returncode == 0 and not check.stdout else None


class NginxServer(ServedRoot):
    """nginx serving ``root`` (same interface as :class:`RangeHTTPServer`).

    Counters come from a JSON-lines access log; latency and bandwidth go through a
    :class:`LinkProcess` in front. Symlinks are refused (``disable_symlinks on``), so nothing
    outside the root can be served. ``user`` is the user it runs as (see the module docstring).
    """

    kind = "nginx"

    def __init__(self, root: str | Path, *, latency_ms: float = 0.0, bandwidth: float | None = None) -> None:
        self._serve_root(root, latency_ms, bandwidth)
        self.executable = nginx_path()
        if self.executable is None:
            raise ServerUnavailable(nginx_missing_reason())
        self._dir: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._proxy: LinkProcess | None = None
        self._offset = 0
        self._cpu0 = 0.0
        self._io0: int | None = 0
        self.nginx_port = 0
        self.user = ""  # the user nginx runs as (set at start)

    def _config(self, port: int) -> str:
        assert self._dir is not None
        d = self._dir / "state"
        temps = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        temp = "\n".join(f"  {name}_temp_path {d / name};" for name in temps)
        return f"""
daemon off;
master_process off;
pid {d / 'nginx.pid'};
error_log {d / 'error.log'} warn;
events {{ worker_connections 4096; }}
http {{
  log_format iobench escape=json '{{"method":"$request_method","uri":"$uri","status":$status,'
      '"body":$body_bytes_sent,"connection":$connection,"range":"$http_range"}}';
  access_log {d / 'access.log'} iobench;
{temp}
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush off;
  tcp_nodelay on;
  keepalive_timeout 300s;
  keepalive_requests 1000000;
  max_ranges 100000;
  server_tokens off;
  server {{
    listen {HOST}:{port} backlog=1024;
    root {self.root};
    disable_symlinks on;
    location / {{ autoindex off; }}
  }}
}}
"""

    @property
    def port(self) -> int:
        return self._proxy.port if self._proxy else self.nginx_port

    def start(self) -> NginxServer:
        """Start nginx (and the link in front); on any failure whatever was started is stopped and removed."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self._dir = _state_dir(self.root)
        user = _unprivileged_user(self.root, self._dir)
        state = self._dir / "state"  # what nginx writes: its own directory, owned by the user it runs as
        state.mkdir(mode=0o700)
        if user is not None:
            os.chown(state, user.pw_uid, user.pw_gid)
        self.user = user.pw_name if user is not None else _user_name(os.geteuid())
        as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []} if user is not None else {}
        for attempt in range(5):
            self.nginx_port = free_port()
            (self._dir / "nginx.conf").write_text(self._config(self.nginx_port))
            # die_with_parent runs after the switch of user, which would clear an earlier PDEATHSIG
            self._proc = subprocess.Popen(
                [self.executable, "-p", str(state), "-c", str(self._dir / "nginx.conf"),
                 "-e", str(state / "error.log")],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                preexec_fn=die_with_parent, **as_user)
            try:
                _wait_for_port(self.nginx_port, self._proc)
                break
            except RuntimeError:
                log = state / "error.log"
                err = log.read_text(errors="replace") if log.exists() else ""
                self._kill()
                if "Address already in use" not in err or attempt == 4:
                    raise RuntimeError(f"nginx failed to start: {err.strip()[-500:]}") from None
        if self.latency_ms or self.bandwidth:
            link = LinkProcess(self.nginx_port, latency_ms=self.latency_ms, bandwidth=self.bandwidth)
            self._proxy = link.__enter__()

    def _kill(self) -> None:
        stop_process(self._proc)
        self._proc = None

    def stop(self) -> None:
        """Stop the proxy and nginx and remove the config directory; safe to call twice."""
        if self._proxy is not None:
            self._proxy.__exit__()
            self._proxy = None
        self._kill()
        if self._dir is not None:
            remove_tree(self._dir, self._dir)
            self._dir = None

    def __enter__(self) -> NginxServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _log_lines(self) -> list[dict]:
        if self._dir is None:
            return []
        log = self._dir / "state" / "access.log"
        # nginx logs a request just after sending it: wait until the log stops growing
        size, deadline = -1, time.monotonic() + 1.0
        while time.monotonic() < deadline:
            new = log.stat().st_size if log.exists() else 0
            if new == size:
                break
            size = new
            time.sleep(0.02)
        if size <= self._offset:
            return []
        with open(log, "rb") as f:
            f.seek(self._offset)
            data = f.read(size - self._offset)
        return [json.loads(line) for line in data.decode().splitlines() if line.strip()]

    def counters(self) -> ServerCounters:
        tally = _Tally()
        connections: set[int] = set()
        for e in self._log_lines():
            uri, method, status = e["uri"], e["method"], int(e["status"])
            connections.add(int(e["connection"]))
            body = int(e["body"])
            if method == "HEAD" or status >= 300:
                tally.request(uri, method, status, 0, body, 0)
                continue
            target = confine(self.root, uri)
            size = target.stat().st_size if target is not None and target.is_file() else 0
            ranges = parse_range_header(e["range"] or None, size) if status == 206 else None
            if ranges:
                tally.request(uri, method, status, len(ranges), body, sum(b - a for a, b in ranges))
            else:
                tally.request(uri, method, status, 1, body, body)
        for _ in connections:
            tally.connection()
        cpu, io = self._usage()
        io_delta = io - self._io0 if io is not None and self._io0 is not None else None
        return replace(tally.snapshot(), cpu_s=cpu - self._cpu0, io_read_bytes=io_delta, max_in_flight=None)

    def _usage(self) -> tuple[float, int | None]:
        """CPU seconds and disk reads of nginx (one process); the link proxy's process is not included."""
        pids = _process_tree(self._proc.pid) if self._proc is not None else []
        cpu, io = 0.0, 0
        for pid in pids:
            with contextlib.suppress(OSError):
                cpu += _proc_cpu_s(pid)
            got = _proc_read_bytes(pid)
            io = None if got is None or io is None else io + got
        return cpu, io

    def reset(self) -> None:
        if self._dir is not None:
            self._log_lines()
            log = self._dir / "state" / "access.log"
            self._offset = log.stat().st_size if log.exists() else 0
            self._cpu0, self._io0 = self._usage()
