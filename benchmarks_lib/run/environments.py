"""An environment of its own for each library version a run measures (``--versions``: :mod:`.versions`), built with
uv, cached and reused.

- **Resolved** (:func:`resolve`) before anything is created: the harness's own pins (``HARNESS_DISTRIBUTIONS``: what a
  worker imports besides the measured library) and ``library==version``, constrained by this package's other pins
  where they fit (else by the harness's only, as a person installing that version would get it). uv answers from its
  cache first (offline), then from the index. A version the index does not have, or that cannot be resolved, or no
  network and nothing cached: one line (SpecError, exit 2). A resolution is kept in iobench's cache
  (``base.paths.cache_dir``) by a digest of what was asked, so a request resolved once is answered offline, always
  alike.
- **Built** (:func:`build`) once per resolution, in ``<cache>/envs/<digest>/`` (the digest of the resolved
  requirements and the interpreter): ``uv venv`` and ``uv pip install`` of exactly the resolved pins, in a directory
  of its own renamed into place when complete, then the library imported there once. A built environment is reused
  as it is, offline; one that does not install or import is a reason, and its cases are skip rows while the others
  go on.
- **Run** (:func:`launch_of`): a case's worker is that environment's interpreter, with ``PYTHONPATH`` the run's
  harness directory only (:func:`make_harness`: a copy of this package and its entry points, nothing of this
  interpreter's site), so the measured library's rivals are never importable beside it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

from benchmarks_lib.base.entrypoints import DISTRIBUTION
from benchmarks_lib.base.importpath import PACKAGE_PARENT, SAFE_PATH, child_env
from benchmarks_lib.base.paths import cache_dir
from benchmarks_lib.base.scratch import create_marked_dir, is_marked, remove_tree
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.run.versions import ENVIRONMENT, HARNESS_DISTRIBUTIONS, Request
from benchmarks_lib.suites import Case

#: uv's pin in this package's extras (``versions``); the hint when it is missing
UV_HINT = "pip install 'iobench-book[versions]' (uv)"
#: the settings of uv's that change what a resolution finds: part of a resolution's digest (values never stored)
UV_SETTINGS = ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_FIND_LINKS", "UV_NO_INDEX")
#: seconds one uv call may take (an install downloads the library and its dependencies)
UV_TIMEOUT_S = 900
#: the file of a complete environment, written last: what it holds and how it was built
ENV_FILE = "iobench-env.json"
#: the characters of uv's error a line quotes
UV_ERROR_CHARS = 300


def envs_root() -> Path:
    return cache_dir() / "envs"


def uv_binary() -> str:
    """uv's executable: the one installed with this package (``uv`` on PyPI), else one on PATH; SpecError if none."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
    if not found:
        raise SpecError(f"versions need uv, which is not installed; install: {UV_HINT}")
    return found


def _uv(args: list[str], stdin: str = "", pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess:
    """uv with ``args``, run in iobench's cache directory and reading no configuration file (a ``uv.toml`` where the
    reader runs iobench is data, never settings)."""
    cwd = cache_dir()
    cwd.mkdir(parents=True, exist_ok=True)
    try:
        return subprocess.run([uv_binary(), *args, "--no-config", "--quiet"], input=stdin, capture_output=True,
                              text=True, cwd=cwd, env=dict(os.environ), timeout=UV_TIMEOUT_S, pass_fds=pass_fds)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"uv did not finish within {UV_TIMEOUT_S} s")


def uv_error(stderr: str) -> str:
    """uv's error in one line: its causes joined, at most ``UV_ERROR_CHARS`` characters."""
    lines = [line.strip().removeprefix("cause:").removeprefix("error:").strip() for line in stderr.splitlines()]
    text = "; ".join(line for line in lines if line and not line.startswith("hint:"))
    return text if len(text) <= UV_ERROR_CHARS else text[:UV_ERROR_CHARS - 1] + "\u2026"


def _failure(stderr: str) -> str:
    """What a failed uv call says: ``missing`` (the index has no such version or package), ``cache`` (offline, not
    in uv's cache), ``network`` (the index cannot be reached) or ``conflict`` (anything else)."""
    if "no version of" in stderr or "not found in the package registry" in stderr or "was not found in the provided" \
            in stderr:
        return "missing"
    if "not found in the cache" in stderr or "network was disabled" in stderr or "network connectivity is disabled" \
            in stderr.lower():
        return "cache"
    if any(word in stderr for word in ("Failed to fetch", "error sending request", "dns error", "tcp connect error",
                                       "Could not connect", "Request failed")):
        return "network"
    return "conflict"


def our_pins() -> dict[str, str]:
    """This package's pins (its own and every extra's), canonical name -> ``name==version``."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    out: dict[str, str] = {}
    for text in metadata.requires(DISTRIBUTION) or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        spec = [s for s in req.specifier if s.operator == "=="]
        if len(spec) == 1:
            out.setdefault(canonicalize_name(req.name), f"{req.name}=={spec[0].version}")
    return out


def harness_requirements() -> list[str]:
    """The pins of what a worker imports besides the measured library (``HARNESS_DISTRIBUTIONS``): this package's
    pins, else the versions running here."""
    pins = our_pins()
    return [pins.get(name) or f"{name}=={metadata.version(name)}" for name in HARNESS_DISTRIBUTIONS]


def python_tag() -> str:
    """The interpreter an environment is built on, as part of its digest."""
    return f"{sys.implementation.name}-{platform.python_version()}-{platform.machine()}-{sys.executable}"


@dataclass(frozen=True)
class Resolved:
    """One version's environment as uv resolved it: every distribution pinned."""

    key: str
    distribution: str
    version: str
    requirements: tuple[str, ...]
    #: which of this package's pins constrained it: ``ours`` (every pin that fits) or ``harness`` (the harness's only)
    pins: str

    @property
    def digest(self) -> str:
        text = json.dumps([python_tag(), sorted(self.requirements)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _compile(requirements: list[str], constraints: list[str]) -> tuple[list[str] | None, str, str]:
    """uv's resolution of ``requirements`` under ``constraints``: (pinned lines, "", "") or (None, what failed
    (``_failure``), uv's error). Offline first (uv's cache), then the index."""
    failures: list[tuple[str, str]] = []
    for offline in (True, False):
        read, write = os.pipe()
        with os.fdopen(write, "w") as f:  # a few hundred bytes: within a pipe's buffer
            f.write("\n".join(constraints) + "\n")
        try:
            proc = _uv(["pip", "compile", "-", "--constraint", f"/dev/fd/{read}", "--python", sys.executable,
                        "--no-header", "--no-annotate", *(["--offline"] if offline else [])],
                       stdin="\n".join(requirements) + "\n", pass_fds=(read,))
        finally:
            os.close(read)
        if proc.returncode == 0:
            lines = [line.split("#")[0].strip() for line in proc.stdout.splitlines()]
            return [line for line in lines if line and not line.startswith("-")], "", ""
        failures.append((_failure(proc.stderr), uv_error(proc.stderr)))
    (offline_kind, offline_error), (kind, error) = failures
    if kind == "network" and offline_kind != "cache":  # no index, but the cache answered: its answer stands
        return None, offline_kind, offline_error
    if kind == "network":
        return None, "network", error
    return None, kind, error


def resolve(request: Request, version: str, companions: tuple[str, ...] = ()) -> Resolved:
    """``request``'s library at ``version`` resolved, with the further distributions its adapters run through
    (``companions``: each at the version that fits, this package's pin where it does); see the module's docstring.
    SpecError naming it when it cannot be."""
    key = request.key(version)
    wanted = [*harness_requirements(), key, *companions]
    others = [pin for name, pin in our_pins().items() if name != request.distribution
              and name not in HARNESS_DISTRIBUTIONS]
    asked = json.dumps([python_tag(), wanted, others, [os.environ.get(k) for k in UV_SETTINGS]])
    kept = envs_root() / "resolved" / f"{hashlib.sha256(asked.encode()).hexdigest()[:24]}.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if kept.is_file() and not kept.is_symlink():
            data = json.loads(kept.read_text())
            return Resolved(key, request.distribution, version, tuple(data["requirements"]), data["pins"])
    lines, kind, error = _compile(wanted, others)
    pins = "ours"
    if lines is None and kind == "conflict":  # this package's other pins do not fit that version: the harness's only
        lines, kind, error = _compile(wanted, [])
        pins = "harness"
    if lines is None:
        raise SpecError(_unresolved(key, kind, error))
    resolved = Resolved(key, request.distribution, version, tuple(lines), pins)
    _envs_dir()  # marked as iobench's before anything is kept in it
    _write_json(kept, {"requirements": lines, "pins": pins})
    return resolved


def _unresolved(key: str, kind: str, error: str) -> str:
    if kind == "missing":
        return f"versions {key!r}: the package index has no such version (uv: {error}); allowed: released versions"
    if kind in ("network", "cache"):
        return (f"versions {key!r}: no network and nothing cached to resolve it from (uv: {error}); connect once "
                "(then it is cached), or name a version resolved before")
    harness = ", ".join(harness_requirements())
    return f"versions {key!r} cannot be installed beside the harness's {harness} (uv: {error})"


def _write_json(path: Path, data: dict) -> None:
    """``data`` as ``path``, atomically (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


@dataclass
class Environment:
    """A built environment (or why it could not be built, ``failed``), as run.json records it (no path of this
    machine)."""

    key: str
    distribution: str
    version: str
    digest: str
    python_version: str
    #: every distribution installed in it, name -> version
    packages: dict[str, str] = field(default_factory=dict)
    pins: str = "ours"
    built_at: str = ""
    #: seconds its build took (when it was built)
    build_s: float = 0.0
    #: True when this run found it built; then ``setup_s`` is the seconds it took to find it
    reused: bool = False
    setup_s: float = 0.0
    #: why its cases cannot run (it did not install or import), or None
    failed: str | None = None

    @property
    def path(self) -> Path:
        return envs_root() / self.digest

    @property
    def python(self) -> str:
        return str(self.path / "bin" / "python")

    def record(self) -> dict:
        return asdict(self)


def _envs_dir() -> Path:
    """``<cache>/envs``, marked as iobench's (its unfinished builds may be removed); SpecError if something else."""
    root = envs_root()
    if not root.exists():
        with contextlib.suppress(SpecError):  # another run made it meanwhile
            create_marked_dir(root)
    if not is_marked(root):
        raise SpecError(f"{str(root)!r} exists and was not created by iobench; move it away to measure --versions")
    return root


def _import_check(python: str, modules: tuple[str, ...], harness: Path | None) -> tuple[dict[str, str], str | None]:
    """Every distribution installed in the environment of ``python`` (name -> version), and why ``modules`` do not
    import there (None when they do), as a worker imports them: the harness its only ``PYTHONPATH`` (a plug-in's
    library may import it), nothing from the working directory or the user's site."""
    code = ("import importlib, importlib.metadata as m, json, sys\n"
            f"packages = {{d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name'] != "
            f"{DISTRIBUTION!r}}}\n"
            "try:\n"
            f"    [importlib.import_module(name) for name in {list(modules)!r}]\n"
            "    failed = None\n"
            "except Exception as exc:\n"
            "    failed = f'{type(exc).__name__}: {exc}'.splitlines()[0]\n"
            "print(json.dumps({'packages': packages, 'failed': failed}))\n")
    try:
        proc = subprocess.run([python, SAFE_PATH, "-s", "-c", code], capture_output=True, text=True,
                              timeout=UV_TIMEOUT_S, stdin=subprocess.DEVNULL, cwd=cache_dir(),
                              env={**child_env(), "PYTHONPATH": str(harness or "")})
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        return dict(data["packages"]), data["failed"]
    except (subprocess.TimeoutExpired, ValueError, IndexError, KeyError, OSError) as exc:
        return {}, f"the interpreter of the environment did not answer: {type(exc).__name__}"


def build(resolved: Resolved, modules: tuple[str, ...], harness: Path | None) -> Environment:
    """The environment of ``resolved``: reused when built before (offline), else built (see the module's
    docstring) and ``modules`` imported there once, beside ``harness`` (:func:`make_harness`). One that does not
    install or import says so in ``failed``."""
    t0 = time.perf_counter()
    root = _envs_dir()
    final = root / resolved.digest
    with contextlib.suppress(OSError, ValueError, TypeError):
        if (final / ENV_FILE).is_file():
            env = Environment(**json.loads((final / ENV_FILE).read_text()))
            env.reused, env.setup_s = True, round(time.perf_counter() - t0, 3)
            return env
    env = Environment(resolved.key, resolved.distribution, resolved.version, resolved.digest,
                      platform.python_version(), pins=resolved.pins,
                      built_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    work = create_marked_dir(root / f".build-{resolved.digest}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        venv = work / "env"
        made = _uv(["venv", "--relocatable", "--python", sys.executable, str(venv)])
        lines = "\n".join(resolved.requirements) + "\n"
        installed = made if made.returncode else _install(venv, lines)
        if installed.returncode:
            env.failed = f"{resolved.key} does not install: {uv_error(installed.stderr)}"
            env.setup_s = round(time.perf_counter() - t0, 3)
            return env  # not kept: the index or the network may do better next time
        env.packages, failed = _import_check(str(venv / "bin" / "python"), modules, harness)
        if failed:
            env.failed = f"{resolved.key} installs but does not import: {failed}"
        env.build_s = env.setup_s = round(time.perf_counter() - t0, 3)
        _write_json(venv / ENV_FILE, env.record())
        try:
            venv.rename(final)
        except OSError:  # another run built it meanwhile: its copy is used, this one removed
            if not (final / ENV_FILE).is_file():
                raise
        return env
    finally:
        remove_tree(work, root)


def _install(venv: Path, lines: str) -> subprocess.CompletedProcess:
    """Exactly the resolved pins into ``venv``: from uv's cache (offline), else from the index."""
    args = ["pip", "install", "--python", str(venv / "bin" / "python"), "--no-deps", "-r", "-"]
    proc = _uv([*args, "--offline"], stdin=lines)
    return proc if proc.returncode == 0 else _uv(args, stdin=lines)


def make_harness(scratch: Path) -> Path:
    """``scratch/harness``: a copy of this package and its distribution's metadata (its entry points: the adapters,
    suites and chapters it declares), the only ``PYTHONPATH`` of a worker in an environment of its own. A copy, not
    a link: the worker's own children find it as this package's parent (``importpath.PACKAGE_PARENT``)."""
    harness = scratch / "harness"
    harness.mkdir()
    shutil.copytree(Path(PACKAGE_PARENT) / "benchmarks_lib", harness / "benchmarks_lib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    dist = metadata.distribution(DISTRIBUTION)
    info = harness / f"{DISTRIBUTION.replace('-', '_')}-{dist.version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: {dist.version}\n")
    (info / "entry_points.txt").write_text(dist.read_text("entry_points.txt") or "")
    return harness


#: the environments of the run in progress: environment key -> (its interpreter, the harness directory)
_ACTIVE: dict[str, tuple[str, str]] = {}


@contextlib.contextmanager
def activated(environments: Mapping[str, Environment], harness: Path | None) -> Iterator[None]:
    """While the run measures, each case naming one of ``environments`` runs in it (:func:`launch_of`)."""
    _ACTIVE.update({key: (env.python, str(harness)) for key, env in environments.items() if not env.failed})
    try:
        yield
    finally:
        _ACTIVE.clear()


def launch_of(case: Case) -> tuple[str, str] | None:
    """The interpreter and ``PYTHONPATH`` of ``case``'s worker when it runs in an environment of its own; None for
    this interpreter."""
    key = case.params.get(ENVIRONMENT)
    if key is None:
        return None
    if key not in _ACTIVE:
        raise RuntimeError(f"case {case.case_id} names environment {key!r}, which this run did not build")
    return _ACTIVE[key]


__all__ = ["Environment", "Resolved", "activated", "build", "launch_of", "make_harness", "resolve", "uv_binary"]
