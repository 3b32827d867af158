"""Environment metadata, collected once per run by small ``collect_*`` functions."""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import socket
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

#: distributions whose versions every run records besides the measured libraries
CORE_PACKAGES = ("numpy", "pyarrow", "pandas", "dask", "distributed")


def usable_cores() -> int:
    """CPU cores this process may run on (affinity-aware)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def collect_cpu() -> dict:
    model = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu_model": model, "cpu_count": os.cpu_count() or 1,
            "cpu_affinity": usable_cores()}


def collect_memory() -> dict:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return {"ram_bytes": int(line.split()[1]) * 1024}
    except OSError:
        pass
    return {"ram_bytes": None}


def machine_memory() -> int:
    """Bytes of memory this process's machine has for it: MemTotal, or its cgroup's limit where that is lower (a
    container's); 0 where neither can be read."""
    total = collect_memory()["ram_bytes"] or 0
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) > 0 and (not total or int(text) < total):
            return int(text)
    return total


def collect_filesystem(path: str | Path) -> dict:
    """Filesystem type and device of the mount that holds ``path``."""
    target = Path(path).resolve()
    best = ("", "", "")
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            device, mount, fstype = line.split()[:3]
            if (str(target) == mount or str(target).startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best[1]):
                best = (device, mount, fstype)
    except OSError:
        pass
    st = os.statvfs(target if target.exists() else target.parent)
    return {"fs_device": best[0], "fs_mount": best[1], "fs_type": best[2],
            "fs_free_bytes": st.f_bavail * st.f_frsize}


def collect_system() -> dict:
    return {"hostname": socket.gethostname(), "kernel": platform.release(), "os": platform.platform(),
            "python": platform.python_version(), "is_root": os.geteuid() == 0}


def collect_git() -> dict:
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", False
    return {"git_commit": commit, "git_dirty": dirty}


#: a repository address the book links to: https, a host and a path of plain characters (no credentials, no markup)
_REPOSITORY_URL = re.compile(r"https://[A-Za-z0-9.-]+(?::\d{1,5})?/[A-Za-z0-9._~/-]+")


def repository_url(root: Path) -> str | None:
    """The checkout's ``origin`` as a web address (``git@host:owner/name.git`` -> ``https://host/owner/name``);
    None where it has none, or one that is not a plain https address (a local path, credentials or odd characters
    are never shown)."""
    try:
        url = subprocess.run(["git", "-C", str(root), "remote", "get-url", "origin"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if found := re.fullmatch(r"git@([A-Za-z0-9.-]+):([A-Za-z0-9._~/-]+)", url):
        url = f"https://{found[1]}/{found[2]}"
    url = url.removesuffix(".git")
    return url if _REPOSITORY_URL.fullmatch(url) else None


def root_release() -> str | None:
    """ROOT's own release (e.g. 6.40.00), read from its installed RVersion header without importing ROOT: the pip
    distribution's version (``root`` 0.1a12) is the packaging's, not ROOT's."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("ROOT")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            header = (Path(folder) / "include" / "ROOT" / "RVersion.hxx").read_text()
        except OSError:
            continue
        parts = [re.search(rf"#define ROOT_VERSION_{p}\s+(\d+)", header) for p in ("MAJOR", "MINOR", "PATCH")]
        if all(parts):
            major, minor, patch = (int(m.group(1)) for m in parts)
            return f"{major}.{minor:02d}.{patch:02d}"
    return None


def collect_versions(packages: Iterable[str] = CORE_PACKAGES) -> dict:
    """``version_<name>`` of each distribution in ``packages`` (None where it is not installed)."""
    out = {}
    for name in packages:
        try:
            out[f"version_{name.replace('-', '_')}"] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[f"version_{name.replace('-', '_')}"] = None
    if out.get("version_root"):  # the pip package's version is kept beside ROOT's release
        out["version_root_pip"], out["version_root"] = out["version_root"], root_release() or out["version_root"]
    return out


def memory_gib(value: object) -> int | None:
    """Recorded memory (``ram_bytes``) to the GiB: the same machine reports a few KiB more or less from one boot to
    the next, so two runs are compared on this; None where it is no finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or abs(value) == float("inf"):
        return None
    return round(value / 2**30)


def machine_name() -> str:
    """A stable, filesystem-safe name for this machine (results are grouped by it)."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in socket.gethostname()) or "machine"


def collect_environment(scratch: str | Path, packages: Iterable[str] = CORE_PACKAGES) -> dict:
    """The machine, its CPU, memory, system, git commit, the filesystem of ``scratch`` and the versions of
    ``packages`` (the runner passes ``adapters.tracked_packages()``: this module knows no adapter)."""
    env = {"machine": machine_name(),
           "collected_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    for collect in (collect_cpu, collect_memory, collect_system, collect_git):
        env.update(collect())
    env.update(collect_versions(packages))
    env.update(collect_filesystem(scratch))
    return env
