"""The cache/prefetch chapter (seed 004): TTree and Zarr reads, local and over HTTP.

Three readers, each configuration one :class:`Case`, each measured read one fresh Python
process with the input evicted from the page cache first:

- ``root``: seed 004's benchmark with real ROOT: TTreeCache size x ``TFile.AsyncPrefetching``
  x location (local file; HTTP through ``TWebFile`` at each latency) on seed 004's sample file.
- ``uproot``: the same file through uproot's sources (fsspec, HTTPSource, the multithreaded
  source) and step sizes in entries and in bytes.
- ``zarr``: a Zarr v3 store (unsharded and sharded) on the same server, read whole or as a pan
  of overlapping cutouts by zarr-python (fsspec or obstore store) and tensorstore (http kvstore),
  without and with a client cache, at several concurrency levels.

Rows carry the client's own counters (ROOT's GetBytesRead/GetReadCalls, uproot's requests) next
to the server's (requests, ranges, bytes, its own CPU time and disk reads), the real and CPU time,
and the RSS over the fresh process's baseline. Every read is checked by value: per-branch sums of
the TTree against the writer's, a CRC-32 of the Zarr data against the written.

Inputs (sample files, Zarr stores) are built once per run in the run's scratch directory
(``<scratch>/<run id>/inputs``), the disk the runner checks for space; :func:`scratch_bytes`
counts them. Each is written under a temporary name, verified, then renamed into place; an input
that fails its check later is written again.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import importlib.util
import json
import math
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..availability import Unavailable
from ..measure import fresh
from ..specs import SpecError, parse_dims, parse_int_list, parse_items, parse_size
from . import Case, CaseContext, Suite

NAME = "cache"
READERS = ("root", "uproot", "zarr")
LOCATIONS = ("local", "http")
ZARR_CLIENTS = ("zarr-fsspec", "zarr-obstore", "tensorstore")
ZARR_LAYOUTS = ("unsharded", "sharded")
ZARR_WORKLOADS = ("whole", "cutouts")
ZARR_DATASET = "microscopy"
#: bytes a client cache may hold when caching is on (tensorstore cache_pool, zarr CacheStore)
CLIENT_CACHE_BYTES = 256 * 2**20
#: fsspec block size for the block-cached store
FSSPEC_BLOCK_SIZE = 1 << 20
_ZARR_MODULES = {"zarr-fsspec": ("zarr", "fsspec", "aiohttp"), "zarr-obstore": ("zarr", "obstore"),
                 "tensorstore": ("tensorstore",)}
_ZARR_HINTS = {"zarr-fsspec": "pip install 'zarr>=3' fsspec aiohttp", "zarr-obstore": "pip install 'zarr>=3' obstore",
               "tensorstore": "pip install tensorstore"}

#: ``quick`` is sized so that every timed read lasts >= 100 ms on a small machine (2 cores), a
#: shorter read measuring process and timer noise rather than the reader, and the whole run stays
#: near a minute there: each case costs ~1-2 s of fixed process start-up (worker, fresh reader,
#: server), so quick keeps two Zarr clients (tensorstore, and zarr-python with the block cache)
#: and a 5 ms link; ``standard`` has every client and 2 and 10 ms.
PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "readers": ["root", "uproot", "zarr"], "entries": 3000, "branches": 16, "auto_flush": 300,
        "sample_writer": "root", "cache_sizes": [0, "100MB"], "async_prefetch": [0, 1],
        "locations": ["local", "http"], "latencies_ms": [0, 5], "bandwidth": None, "servers": ["builtin"],
        "uproot_sources": ["fsspec", "multithreaded"], "uproot_steps": [750, "100MB"],
        "uproot_workers": 4, "zarr_clients": ["tensorstore", "zarr-fsspec"], "zarr_layouts": list(ZARR_LAYOUTS),
        "zarr_workloads": ["cutouts"], "zarr_cache": [False, True], "zarr_concurrency": [4],
        "zarr_dims": "z:64:16:32,y:256:64:128,x:1280:64:128", "zarr_cutout": "48,256,192", "zarr_cutouts": 12,
        "read_timeout_s": 600, "iterations": 1, "warmups": 0,
    },
    "standard": {
        "readers": ["root", "uproot", "zarr"], "entries": 2000, "branches": 128, "auto_flush": None,
        "sample_writer": "root", "cache_sizes": [0, "10MB", "100MB"], "async_prefetch": [0, 1],
        "locations": ["local", "http"], "latencies_ms": [0, 2, 10], "bandwidth": "50MB", "servers": ["builtin"],
        "uproot_sources": ["fsspec", "http", "multithreaded"], "uproot_steps": [1000, "100MB"],
        "uproot_workers": 8, "zarr_clients": list(ZARR_CLIENTS), "zarr_layouts": list(ZARR_LAYOUTS),
        "zarr_workloads": ["whole", "cutouts"], "zarr_cache": [False, True], "zarr_concurrency": [1, 8, 32],
        "zarr_dims": "z:128:32:64,y:512:128:256,x:512:128:256", "zarr_cutout": "48,192,192", "zarr_cutouts": 8,
        "read_timeout_s": 1800, "iterations": 3, "warmups": 0,
    },
    "seed": {
        "readers": ["root", "uproot"], "entries": 10_000, "branches": 2000, "auto_flush": None,
        "sample_writer": "root", "cache_sizes": [0, "100MB"], "async_prefetch": [0, 1],
        "locations": ["local", "http"], "latencies_ms": [0, 10], "bandwidth": None, "servers": ["builtin"],
        "uproot_sources": ["http", "multithreaded"], "uproot_steps": [1000, "100MB"], "uproot_workers": 8,
        "zarr_clients": list(ZARR_CLIENTS), "zarr_layouts": list(ZARR_LAYOUTS), "zarr_workloads": ["whole", "cutouts"],
        "zarr_cache": [False, True], "zarr_concurrency": [1, 8, 32],
        "zarr_dims": "z:256:64:128,y:1024:128:512,x:1024:128:512", "zarr_cutout": "96,384,384", "zarr_cutouts": 8,
        "read_timeout_s": 4 * 3600, "iterations": 3, "warmups": 0,
    },
}
#: the runner's own parameters, passed through to it (iterations per configuration; warm-ups unused)
RUNNER_PARAMETERS = ("iterations", "warmups")
PARAMETERS = tuple(k for k in PROFILES["quick"] if k not in RUNNER_PARAMETERS)


# ---------------------------------------------------------------------------------------------
# parameters


@dataclass(frozen=True)
class CacheParams:
    """Validated parameters of the chapter (see ``PROFILES`` for defaults per profile)."""

    readers: tuple[str, ...]
    entries: int
    branches: int
    auto_flush: int | None
    sample_writer: str
    cache_sizes: tuple[int, ...]
    async_prefetch: tuple[int, ...]
    locations: tuple[str, ...]
    latencies_ms: tuple[float, ...]
    bandwidth: int | None
    servers: tuple[str, ...]
    uproot_sources: tuple[str, ...]
    uproot_steps: tuple[int | str, ...]
    uproot_workers: int
    zarr_clients: tuple[str, ...]
    zarr_layouts: tuple[str, ...]
    zarr_workloads: tuple[str, ...]
    zarr_cache: tuple[bool, ...]
    zarr_concurrency: tuple[int, ...]
    zarr_dims: str
    zarr_cutout: tuple[int, ...]
    zarr_cutouts: int
    read_timeout_s: float


#: parameters that take a list (a JSON list, or a comma-separated string)
_LIST_PARAMETERS = ("readers", "cache_sizes", "async_prefetch", "locations", "latencies_ms", "servers",
                    "uproot_sources", "uproot_steps", "zarr_clients", "zarr_layouts", "zarr_workloads", "zarr_cache",
                    "zarr_concurrency", "zarr_cutout")


def _number(value: Any, what: str, allowed: str) -> float:
    """A JSON number (or a numeric string); bools and other types are a SpecError."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SpecError(f"{what} {value!r} is not a number; allowed: {allowed}")
    try:
        number = float(value)
    except ValueError:
        raise SpecError(f"{what} {value!r} is not a number; allowed: {allowed}") from None
    if not math.isfinite(number):
        raise SpecError(f"{what} {value!r} is not finite; allowed: {allowed}")
    return number


def _integer(value: Any, what: str, allowed: str) -> int:
    number = _number(value, what, allowed)
    if number != int(number):
        raise SpecError(f"{what} {value!r} is not an integer; allowed: {allowed}")
    return int(number)


def _choices(value: Any, what: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    items = parse_items(value, what)
    if not items:
        raise SpecError(f"{what} is empty; allowed: {', '.join(allowed)}")
    for item in items:
        if item not in allowed:
            raise SpecError(f"{what} value {item!r} is unknown; allowed: {', '.join(allowed)}")
    return tuple(dict.fromkeys(items))


def _cache_size(value: Any) -> int:
    if value in (0, "0", "0B", "0MB"):
        return 0
    if isinstance(value, bool):
        raise SpecError(f"cache_sizes value {value!r} is not a size; use e.g. 0, 10MB, 100MB or bytes")
    return parse_size(value)


def _step(value: Any) -> int | str:
    """An uproot step: an int (entries) or a size string such as ``100MB`` (bytes)."""
    if isinstance(value, bool):
        raise SpecError(f"uproot_steps value {value!r} must be entries (int) or a size such as '100MB'")
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        n = int(value)
        if n < 1:
            raise SpecError(f"uproot_steps value {n} must be >= 1 entries")
        return n
    nbytes = parse_size(value)
    return f"{nbytes} B"


def _flag(value: Any, what: str) -> bool:
    if value in (True, 1, "1", "true", "on", "yes"):
        return True
    if value in (False, 0, "0", "false", "off", "no"):
        return False
    raise SpecError(f"{what} value {value!r} is not a flag; allowed: 0/1, true/false, on/off")


def parse_params(params: dict | None, profile: str) -> CacheParams:
    """Profile defaults overlaid with ``params`` (None values mean "profile default"), validated."""
    if profile not in PROFILES:
        raise SpecError(f"profile {profile!r} is unknown; allowed: {', '.join(PROFILES)}")
    params = {k: v for k, v in (params or {}).items() if k not in RUNNER_PARAMETERS}
    unknown = sorted(set(params) - set(PARAMETERS))
    if unknown:
        raise SpecError(f"cache suite parameter {unknown[0]!r} is unknown; allowed: {', '.join(PARAMETERS)}")
    p = {**PROFILES[profile], **{k: v for k, v in params.items() if v is not None}}
    if "auto_flush" in params and params["auto_flush"] is None:
        p["auto_flush"] = PROFILES[profile]["auto_flush"]
    lists = {k: parse_items(p[k], k) for k in _LIST_PARAMETERS}
    auto_flush = p["auto_flush"]
    if auto_flush is not None:
        auto_flush = _integer(auto_flush, "auto_flush", "entries (> 0), bytes (< 0) or null for ROOT's default")
        if auto_flush == 0:
            raise SpecError("auto_flush 0 is not allowed; use entries (> 0), bytes (< 0) or None for ROOT's default")
    latencies = []
    for v in lists["latencies_ms"]:
        ms = _number(v, "latencies_ms value", "milliseconds 0..10000")
        if not 0 <= ms <= 10_000:
            raise SpecError(f"latencies_ms value {ms:g} is out of range; allowed 0..10000 ms")
        latencies.append(ms)
    if not latencies:
        raise SpecError("latencies_ms is empty; give at least one latency, e.g. [0]")
    bandwidth = None if p["bandwidth"] in (None, 0, "0", "none") else parse_size(p["bandwidth"])
    async_flags = tuple(dict.fromkeys(int(_flag(v, "async_prefetch")) for v in lists["async_prefetch"]))
    if not async_flags:
        raise SpecError("async_prefetch is empty; allowed values 0 and 1")
    cache_sizes = tuple(dict.fromkeys(_cache_size(v) for v in lists["cache_sizes"]))
    if not cache_sizes:
        raise SpecError("cache_sizes is empty; give e.g. [0, '100MB']")
    steps = tuple(dict.fromkeys(_step(v) for v in lists["uproot_steps"]))
    if not steps:
        raise SpecError("uproot_steps is empty; give entries (int) and/or sizes such as '100MB'")
    if not isinstance(p["zarr_dims"], str):
        raise SpecError(f"zarr_dims {p['zarr_dims']!r} is not a string; give e.g. 'z:64:16:32,y:256:64:128'")
    dims = parse_dims(p["zarr_dims"])
    cutout = parse_int_list(lists["zarr_cutout"], "zarr_cutout")
    if len(cutout) != len(dims.shape):
        raise SpecError(f"zarr_cutout {cutout} has {len(cutout)} sizes; zarr_dims has {len(dims.shape)} dimensions")
    for size, n, name in zip(cutout, dims.shape, dims.names, strict=True):
        if size > n:
            raise SpecError(f"zarr_cutout size {size} exceeds the size {n} of dimension {name!r}")
    zarr_cache = tuple(dict.fromkeys(_flag(v, "zarr_cache") for v in lists["zarr_cache"]))
    writer = p["sample_writer"]
    if writer not in ("root", "uproot"):
        raise SpecError(f"sample_writer {writer!r} is unknown; allowed: root, uproot")
    timeout = _number(p["read_timeout_s"], "read_timeout_s", "a positive number of seconds")
    if timeout <= 0:
        raise SpecError(f"read_timeout_s {timeout:g} must be positive (seconds)")
    scalars = {k: _integer(p[k], k, "a positive integer") for k in ("entries", "branches", "uproot_workers",
                                                                   "zarr_cutouts")}
    return CacheParams(
        readers=_choices(p["readers"], "readers", READERS),
        entries=parse_int_list([scalars["entries"]], "entries", maximum=10**9)[0],
        branches=parse_int_list([scalars["branches"]], "branches", maximum=100_000)[0],
        auto_flush=auto_flush, sample_writer=writer, cache_sizes=cache_sizes, async_prefetch=async_flags,
        locations=_choices(p["locations"], "locations", LOCATIONS), latencies_ms=tuple(dict.fromkeys(latencies)),
        bandwidth=bandwidth, servers=_choices(p["servers"], "servers", ("builtin", "nginx")),
        uproot_sources=_choices(p["uproot_sources"], "uproot_sources", ("fsspec", "http", "multithreaded")),
        uproot_steps=steps,
        uproot_workers=parse_int_list([scalars["uproot_workers"]], "uproot_workers", maximum=1024)[0],
        zarr_clients=_choices(p["zarr_clients"], "zarr_clients", ZARR_CLIENTS),
        zarr_layouts=_choices(p["zarr_layouts"], "zarr_layouts", ZARR_LAYOUTS),
        zarr_workloads=_choices(p["zarr_workloads"], "zarr_workloads", ZARR_WORKLOADS),
        zarr_cache=zarr_cache or (False,),
        zarr_concurrency=tuple(dict.fromkeys(parse_int_list(lists["zarr_concurrency"], "zarr_concurrency",
                                                            maximum=1024))),
        zarr_dims=str(dims), zarr_cutout=cutout,
        zarr_cutouts=parse_int_list([scalars["zarr_cutouts"]], "zarr_cutouts", maximum=10_000)[0],
        read_timeout_s=timeout,
    )


# ---------------------------------------------------------------------------------------------
# cases


def _links(p: CacheParams) -> list[dict]:
    return [{"server": s, "latency_ms": lat, "bandwidth": p.bandwidth} for s in p.servers for lat in p.latencies_ms]


def build_cases(params: dict | None, profile: str) -> list[Case]:
    """One case per configuration; raises SpecError on a bad parameter before any work."""
    p = parse_params(params, profile)
    sample = {"entries": p.entries, "branches": p.branches, "auto_flush": p.auto_flush, "writer": p.sample_writer}
    local = {"location": "local", "server": None, "latency_ms": None, "bandwidth": None}
    remote = [{"location": "http", **link} for link in _links(p)] if "http" in p.locations else []
    places = ([local] if "local" in p.locations else []) + remote
    timeout = p.read_timeout_s
    cases: list[Case] = []
    if "root" in p.readers:
        for place in places:
            for cache in p.cache_sizes:
                for flag in p.async_prefetch:
                    cases.append(Case(NAME, "root", {"reader": "root", "sample": sample, **place, "cache_bytes": cache,
                                                     "async_prefetch": flag, "timeout_s": timeout}))
    if "uproot" in p.readers:
        for place in places:
            sources = ["local"] if place["location"] == "local" else list(p.uproot_sources)
            for source in sources:
                for step in p.uproot_steps:
                    workers = p.uproot_workers if source == "multithreaded" else 1
                    cases.append(Case(NAME, "uproot", {"reader": "uproot", "sample": sample, **place, "source": source,
                                                       "step": step, "num_workers": workers, "timeout_s": timeout}))
    if "zarr" in p.readers:
        store = {"dims": p.zarr_dims, "dataset": ZARR_DATASET}
        for link in _links(p):
            for client in p.zarr_clients:
                for layout in p.zarr_layouts:
                    for workload in p.zarr_workloads:
                        for cache in p.zarr_cache:
                            for conc in p.zarr_concurrency:
                                cases.append(Case(NAME, client, {
                                    "reader": "zarr", "store": store, "location": "http", **link, "client": client,
                                    "layout": layout, "workload": workload, "client_cache": cache, "concurrency": conc,
                                    "cutout": list(p.zarr_cutout), "cutouts": p.zarr_cutouts, "timeout_s": timeout}))
    return cases


def input_bytes(params: dict) -> int:
    """An upper bound of the disk one case's input takes: a sample file at most its entry bytes plus
    ROOT's headers (random values barely compress), a Zarr store at most its array bytes plus metadata."""
    from ..rootio import entry_bytes

    if "sample" in params:
        s = params["sample"]
        return entry_bytes(s["entries"], s["branches"]) + 2**20 + 4096 * s["branches"]
    shape = parse_dims(params["store"]["dims"]).shape
    chunks = math.prod(math.ceil(n / c) for n, c in zip(shape, parse_dims(params["store"]["dims"]).chunks,
                                                      strict=True))
    return 2 * math.prod(shape) + 1024 * chunks + 2**20


def _input_key(params: dict) -> str:
    return json.dumps(params["sample"] if "sample" in params else [params["store"], params["layout"]], sort_keys=True)


def scratch_bytes(cases: list[Case]) -> int:
    """Disk the run needs on scratch: every input (sample files, Zarr stores: they live in the run's
    scratch directory until the run ends) plus a margin for a case's own scratch."""
    inputs = {_input_key(c.params): input_bytes(c.params) for c in cases}
    return sum(inputs.values()) + 16 * 2**20


# ---------------------------------------------------------------------------------------------
# running a case


def _fmt_bytes(n: int) -> str:
    if n == 0:
        return "0"
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def config_label(params: dict) -> str:
    """A short human label of one configuration, used by the figures."""
    reader = params["reader"]
    if reader == "root":
        return f"cache {_fmt_bytes(params['cache_bytes'])}, async {params['async_prefetch']}"
    if reader == "uproot":
        step = params["step"]
        step_text = f"{step} entries" if isinstance(step, int) else _fmt_bytes(int(str(step).split()[0]))
        workers = f" x{params['num_workers']}" if params["source"] == "multithreaded" else ""
        return f"{params['source']}{workers}, step {step_text}"
    return f"{params['client']} {params['layout']}, cache {'on' if params['client_cache'] else 'off'}"


def inputs_dir(ctx: CaseContext) -> Path:
    """Where a case's inputs live: ``inputs/`` in the run's scratch directory (the marked parent of
    the case's scratch, kept for the whole run and checked for space by the runner), else in the
    case's own scratch. Never the results directory."""
    from ..scratch import is_marked

    run_scratch = ctx.scratch.parent
    return (run_scratch if is_marked(run_scratch) else ctx.scratch) / "inputs"


def _check_free(directory: Path, need: int) -> None:
    """Fail before writing an input that cannot fit (rather than leave a partial one behind)."""
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    if need > free:
        raise OSError(f"{directory} has {free / 1e9:.2f} GB free; this case's input needs up to {need / 1e9:.2f} GB")


def _missing(case: Case) -> str | None:
    from .. import rootio

    reader = case.params["reader"]
    if reader in ("root", "uproot"):
        writer = case.params["sample"]["writer"]
        needs = {reader, writer}
        for lib in ("root", "uproot"):
            reason = (rootio.root_missing_reason if lib == "root" else rootio.uproot_missing_reason)()
            if lib in needs and reason:
                return reason
        return None
    client = case.params["client"]
    for module in _ZARR_MODULES[client]:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (needed by {client}); {_ZARR_HINTS[client]}"
    if importlib.util.find_spec("zarr") is None:
        return "zarr is not installed (it writes the store every client reads); pip install 'zarr>=3'"
    return None


def _base_row(case: Case) -> dict:
    q = case.params
    row: dict[str, Any] = {
        "location": q["location"], "server": q.get("server"), "latency_ms": q.get("latency_ms"),
        "bandwidth_bytes_s": q.get("bandwidth"), "config": config_label(q), "reader": q["reader"],
    }
    if q["reader"] in ("root", "uproot"):
        s = q["sample"]
        row.update(dataset="seed004-ttree", codec="zlib:1", entries=s["entries"], branches=s["branches"],
                   auto_flush=s["auto_flush"], sample_writer=s["writer"])
    if q["reader"] == "root":
        row.update(operation="root_read", client="ROOT", cache_bytes=q["cache_bytes"],
                   async_prefetch=q["async_prefetch"])
    elif q["reader"] == "uproot":
        step = q["step"]
        row.update(operation="uproot_iterate", client=f"uproot-{q['source']}", step=str(step),
                   step_unit="entries" if isinstance(step, int) else "bytes", concurrency=q["num_workers"])
    else:
        row.update(operation=f"zarr_read_{q['workload']}", client=q["client"], dataset=ZARR_DATASET, dtype="uint16",
                   codec="zstd:0", layout=q["layout"], workload=q["workload"], client_cache=q["client_cache"],
                   concurrency=q["concurrency"], zarr_dims=q["store"]["dims"],
                   cutout="x".join(str(c) for c in q["cutout"]) if q["workload"] == "cutouts" else "whole")
    return row


def _skip_rows(case: Case, reason: str) -> list[dict]:
    return [{**_base_row(case), "iteration": 0, "status": "skip", "reason": reason}]


def run_case(case: Case, ctx: CaseContext) -> list[dict]:
    """Measure one configuration ``ctx.iterations`` times, each read a fresh process on a cold input.

    Warm-ups are not run: every iteration starts cold by design (fresh process, evicted input).
    """
    from .. import servers

    reason = _missing(case)
    if reason:
        return _skip_rows(case, reason)
    q = case.params
    if q["location"] == "http" and q["server"] == "nginx" and servers.nginx_missing_reason():
        return _skip_rows(case, servers.nginx_missing_reason())
    try:
        return _measure_case(case, ctx)
    except Unavailable as exc:  # found missing only in the child (e.g. a broken install)
        return _skip_rows(case, str(exc))


def _prepare_input(q: dict, inputs: Path) -> tuple[Path, dict, Any]:
    """The case's input (written or reused, verified), the row columns describing it, and its record."""
    from .. import rootio

    inputs.mkdir(parents=True, exist_ok=True)
    if q["reader"] in ("root", "uproot"):
        s = q["sample"]
        name = rootio.sample_file_name(s["entries"], s["branches"], s["auto_flush"], s["writer"])
        if not (inputs / name).exists():
            _check_free(inputs, input_bytes(q))
        sample = rootio.ensure_sample_file(inputs, s["entries"], s["branches"], s["auto_flush"], writer=s["writer"])
        return Path(sample.path), {"file_bytes": sample.file_bytes}, sample
    if not (inputs / f"{_zarr_slug(q['store']['dims'], q['layout'], q['store']['dataset'], 0)}.zarr").exists():
        _check_free(inputs, input_bytes(q))
    target = ensure_zarr_store(inputs, q["store"]["dims"], q["layout"], q["store"]["dataset"])
    info = zarr_store_info(target)
    return target, {"file_bytes": info["stored_bytes"],
                    "compression_ratio": info["array_bytes"] / info["stored_bytes"]}, info


def _read_once(q: dict, location: str, server: Any, expected: list[int] | None) -> dict:
    from .. import rootio

    if q["reader"] == "root":
        return rootio.read_with_root(location, q["cache_bytes"], q["async_prefetch"], timeout_s=q["timeout_s"])
    if q["reader"] == "uproot":
        return rootio.read_with_uproot(location, source=q["source"] if server else "local", step_size=q["step"],
                                       num_workers=q["num_workers"], timeout_s=q["timeout_s"])
    return fresh.call(f"{__name__}:measure_zarr_read", {
        "url": location, "client": q["client"], "workload": q["workload"], "client_cache": q["client_cache"],
        "concurrency": q["concurrency"], "cutout": q["cutout"], "cutouts": q["cutouts"],
        "dims": q["store"]["dims"], "dataset": q["store"]["dataset"], "expected_crc32s": expected},
        timeout_s=q["timeout_s"])


def _measure_case(case: Case, ctx: CaseContext) -> list[dict]:
    from .. import rootio, servers
    from ..measure import cold_read_state, evict_page_cache

    q = case.params
    inputs = inputs_dir(ctx)
    target, input_columns, info = _prepare_input(q, inputs)
    base = {**_base_row(case), **input_columns}
    file_bytes = input_columns["file_bytes"]
    # before any eviction: computing them may read the store (and so fill the page cache)
    expected = expected_crc32s(target, q["workload"], q["cutout"], q["cutouts"]) if q["reader"] == "zarr" else None
    server_cm = (servers.serve(inputs, q["server"], latency_ms=q["latency_ms"], bandwidth=q["bandwidth"])
                 if q["location"] == "http" else contextlib.nullcontext())
    rows = []
    with server_cm as server:
        location = server.url_for(target) if server is not None else str(target)
        for iteration in range(max(1, ctx.iterations)):
            report = evict_page_cache(target, drop_caches=False)
            if server is not None:
                server.reset()
            metrics = _read_once(q, location, server, expected)
            sums = metrics.pop("branch_sums", None)
            row = {**base, **metrics, **report.as_row(), "iteration": iteration, "status": "ok"}
            if q["reader"] in ("root", "uproot"):
                row["verified"] = (metrics.get("nbytes") == info.entry_bytes and metrics.get("entries") == info.entries
                                   and rootio.sums_match(sums, info))
            if server is not None:
                counters = server.counters()
                row.update(counters.as_row())
                # the server read the file: its disk reads prove the read was cold
                disk_read, needed = counters.io_read_bytes, min(counters.payload_bytes, file_bytes)
                if q["reader"] == "zarr" and metrics.get("cutout_bytes"):
                    # bytes moved per byte asked for; "_stored" divides by the cutout's compressed share
                    row["read_amplification"] = counters.payload_bytes / metrics["cutout_bytes"]
                    row["read_amplification_stored"] = row["read_amplification"] * base["compression_ratio"]
            else:
                asked = metrics.get("root_bytes_read", metrics.get("client_bytes")) or 0
                disk_read, needed = metrics.get("io_read_bytes"), min(asked, file_bytes)
            row["cache_state"] = cold_read_state(report, disk_read, needed)
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# Zarr store and reads


def _zarr_slug(dims: str, layout: str, dataset: str, seed: int) -> str:
    return "".join(c if c.isalnum() else "-" for c in f"{dataset}-{dims}-{layout}-s{seed}")


def _stored_bytes(store: Path) -> int:
    return sum(f.stat().st_size for f in store.rglob("*") if f.is_file() and f.name != ".complete")


def _array_crc32(arr: Any, step: int) -> int:
    """CRC-32 of an array's bytes in C order, read in slabs of ``step`` along the first axis."""
    import numpy as np

    crc = 0
    for start in range(0, arr.shape[0], step):
        crc = zlib.crc32(np.ascontiguousarray(arr[start:start + step]), crc)
    return crc


def check_zarr_store(target: Path, expected: dict) -> dict | None:
    """The store's record when ``target`` is intact: its record matches ``expected``, the bytes on disk
    are the recorded ones and its array metadata (``zarr.json``) has the recorded shape. None otherwise.

    Cheap on purpose (no zarr import, no data read): it runs before every case; the data were
    checked in full (CRC-32) when written, and every read is checked again.
    """
    try:
        info = json.loads((target / ".complete").read_text())
        meta = json.loads((target / "zarr.json").read_text())
        if any(info.get(k) != v for k, v in expected.items()) or _stored_bytes(target) != info["stored_bytes"]:
            return None
        return info if meta.get("node_type") == "array" and meta.get("shape") == info["shape"] else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def ensure_zarr_store(directory: str | Path, dims: str, layout: str, dataset: str = ZARR_DATASET, *,
                      seed: int = 0) -> Path:
    """A Zarr v3 store of a seeded dataset (zstd), unsharded or sharded per ``dims``; written once.

    Written under a temporary name, read back whole and compared (CRC-32) with the generated data,
    then renamed into place with its record (``.complete``: shapes, bytes, CRC-32). A store that
    fails :func:`check_zarr_store` is deleted (:func:`benchmarks_lib.scratch.remove_tree`, so only
    inside an iobench scratch directory) and written again.
    """
    from ..scratch import remove_tree

    spec = parse_dims(dims)
    if layout not in ZARR_LAYOUTS:
        raise SpecError(f"zarr layout {layout!r} is unknown; allowed: {', '.join(ZARR_LAYOUTS)}")
    shards = spec.shards if layout == "sharded" else None
    if layout == "sharded" and shards is None:
        raise SpecError(f"zarr_dims {dims!r} has no shard sizes (name:size:chunk:shard); sharded layout needs them")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{_zarr_slug(dims, layout, dataset, seed)}.zarr"
    expected = {"dims": dims, "layout": layout, "dataset": dataset, "seed": seed}
    with open(directory / ".zarr.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if check_zarr_store(target, expected) is not None:
            return target
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        for stale in (target, tmp):
            if stale.exists() or stale.is_symlink():
                remove_tree(stale)
        import numpy as np
        import zarr

        from ..datasets import Dataset

        try:
            data = Dataset(dataset, spec.shape, seed=seed)
            arr = zarr.create_array(store=str(tmp), shape=spec.shape, dtype=data.dtype, chunks=spec.chunks,
                                    shards=shards, dimension_names=spec.names, zarr_format=3, fill_value=0)
            step = (shards or spec.chunks)[0]
            crc = 0
            for start, block in data.blocks(step):
                block = np.ascontiguousarray(block)
                arr[start:start + block.shape[0]] = block
                crc = zlib.crc32(block, crc)
            back = _array_crc32(zarr.open_array(store=str(tmp), mode="r", zarr_format=3), step)
            if back != crc:
                raise OSError(f"zarr store {tmp} reads back with CRC-32 {back:08x}, written {crc:08x}")
            info = {**expected, "shape": list(spec.shape), "array_bytes": data.nbytes,
                    "stored_bytes": _stored_bytes(tmp), "crc32": crc}
            (tmp / ".complete").write_text(json.dumps(info))
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                remove_tree(tmp)
        if check_zarr_store(target, expected) is None:
            raise OSError(f"zarr store {target} failed its check right after it was written")
    return target


def zarr_store_info(store: str | Path) -> dict:
    """What :func:`ensure_zarr_store` recorded: dims, layout, dataset, shape, array and stored bytes, CRC-32."""
    return json.loads((Path(store) / ".complete").read_text())


def zarr_selections(shape: tuple[int, ...], chunks: tuple[int, ...], workload: str, cutout: tuple[int, ...],
                    count: int) -> list[tuple[slice, ...]]:
    """``whole``: the full array. ``cutouts``: a pan of ``count`` boxes starting half a chunk in,
    each shifted by half the cutout along the last axis (wrapping), so neighbours overlap."""
    if workload == "whole":
        return [tuple(slice(0, n) for n in shape)]
    out = []
    starts = [min(c // 2, n - s) for c, n, s in zip(chunks, shape, cutout, strict=True)]
    span = shape[-1] - cutout[-1]
    for i in range(count):
        pos = list(starts)
        pos[-1] = (starts[-1] + i * max(1, cutout[-1] // 2)) % (span + 1) if span > 0 else 0
        out.append(tuple(slice(a, a + s) for a, s in zip(pos, cutout, strict=True)))
    return out


def _fsspec_block_cache_store(url: str, block_size: int = FSSPEC_BLOCK_SIZE, cache_type: str = "blockcache") -> Any:
    """A read-only zarr store over HTTP whose reads go through fsspec file caches.

    Each key is opened once as an fsspec ``HTTPFile`` with ``cache_type`` (block cache by
    default) and kept open, so later range reads of the same shard are served from its blocks.
    Reads of one key are serialised (a file's cache is not thread-safe); different keys are
    fetched concurrently, up to zarr's concurrency.
    """
    import fsspec
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
    from zarr.storage import FsspecStore, WrapperStore

    class BlockCachedStore(WrapperStore):
        def __init__(self, store: FsspecStore) -> None:
            super().__init__(store)
            self._fs = fsspec.filesystem("http", skip_instance_cache=True)
            self._files: dict[str, Any] = {}
            self._locks: dict[str, asyncio.Lock] = {}

        def _read(self, key: str, byte_range: Any) -> bytes | None:
            f = self._files.get(key)
            if f is None:
                try:
                    f = self._fs.open(f"{url.rstrip('/')}/{key}", "rb", block_size=block_size, cache_type=cache_type)
                except FileNotFoundError:
                    return None
                self._files[key] = f
            size = f.size
            if byte_range is None:
                start, stop = 0, size
            elif isinstance(byte_range, RangeByteRequest):
                start, stop = byte_range.start, byte_range.end
            elif isinstance(byte_range, OffsetByteRequest):
                start, stop = byte_range.offset, size
            elif isinstance(byte_range, SuffixByteRequest):
                start, stop = max(0, size - byte_range.suffix), size
            else:
                raise TypeError(f"unexpected byte range {byte_range!r}")
            f.seek(start)
            return f.read(stop - start)

        async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = asyncio.Lock()
            async with lock:  # one file's cache is not thread-safe; different keys go in parallel
                data = await asyncio.to_thread(self._read, key, byte_range)
            return None if data is None else prototype.buffer.from_bytes(data)

    return BlockCachedStore(FsspecStore.from_url(url, read_only=True))


def _open_zarr_reader(url: str, client: str, client_cache: bool, concurrency: int) -> Any:
    """An object whose ``[selection]`` returns a numpy array, for one client configuration."""
    if client == "tensorstore":
        import tensorstore as ts

        context = {"cache_pool": {"total_bytes_limit": CLIENT_CACHE_BYTES if client_cache else 0},
                   "data_copy_concurrency": {"limit": concurrency},
                   "http_request_concurrency": {"limit": concurrency}}
        store = ts.open({"driver": "zarr3", "kvstore": {"driver": "http", "base_url": url}, "context": context,
                         "recheck_cached_data": not client_cache}, read=True).result()

        class _TensorStoreReader:
            def __getitem__(self, sel: tuple[slice, ...]) -> Any:
                return store[sel].read().result()

        return _TensorStoreReader()
    import zarr

    zarr.config.set({"async.concurrency": concurrency, "threading.max_workers": concurrency})
    if client == "zarr-fsspec":
        if client_cache:
            store = _fsspec_block_cache_store(url)
        else:
            store = zarr.storage.FsspecStore.from_url(url, read_only=True)
    elif client == "zarr-obstore":
        from obstore.store import HTTPStore

        store = zarr.storage.ObjectStore(HTTPStore.from_url(url, client_options={"allow_http": True}), read_only=True)
        if client_cache:
            from zarr.experimental.cache_store import CacheStore

            store = CacheStore(store, cache_store=zarr.storage.MemoryStore(), max_size=CLIENT_CACHE_BYTES)
    else:
        raise SpecError(f"zarr client {client!r} is unknown; allowed: {', '.join(ZARR_CLIENTS)}")
    return zarr.open_array(store=store, mode="r", zarr_format=3)


def warm_up_zarr_client(client: str) -> None:
    """Import the client's libraries and round-trip a tiny in-memory array, so that one-time
    costs (imports, codec set-up, zarr's event-loop thread) stay out of the timed read."""
    import numpy as np

    if client == "tensorstore":
        import tensorstore as ts

        arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "memory"}}, create=True, dtype=ts.uint16,
                      shape=[4, 4]).result()
        arr.write(np.ones((4, 4), dtype=np.uint16)).result()
        arr.read().result()
        return
    import zarr
    import zarr.storage

    for shards in (None, (4, 4)):
        arr = zarr.create_array(store=zarr.storage.MemoryStore(), shape=(4, 4), chunks=(2, 2), shards=shards,
                                dtype="uint16", zarr_format=3)
        arr[:] = np.ones((4, 4), dtype=np.uint16)
        arr[:]
    if client == "zarr-fsspec":
        importlib.import_module("fsspec.implementations.http")
    else:
        importlib.import_module("obstore.store")
        importlib.import_module("zarr.experimental.cache_store")


def expected_crc32s(store: Path, workload: str, cutout: list[int], cutouts: int) -> list[int]:
    """CRC-32 of each selection of the workload in the written store (read locally with zarr-python).

    The store was checked in full against the generated data when it was written, so these are
    the written data's. Computed once per store and workload, kept next to the store for the run.
    """
    info = zarr_store_info(store)
    if workload == "whole":
        return [info["crc32"]]
    key = zlib.crc32(json.dumps([workload, list(cutout), cutouts]).encode())
    cached = store.with_name(f"{store.name}.crc-{key:08x}.json")
    with contextlib.suppress(OSError, ValueError):
        got = json.loads(cached.read_text())
        if got["stored_bytes"] == info["stored_bytes"] and got["crc32"] == info["crc32"]:
            return got["crc32s"]
    import numpy as np
    import zarr

    spec = parse_dims(info["dims"])
    arr = zarr.open_array(store=str(store), mode="r", zarr_format=3)
    crcs = [zlib.crc32(np.ascontiguousarray(arr[sel]))
            for sel in zarr_selections(spec.shape, spec.chunks, workload, tuple(cutout), cutouts)]
    tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"stored_bytes": info["stored_bytes"], "crc32": info["crc32"], "crc32s": crcs}))
    os.replace(tmp, cached)
    return crcs


def measure_zarr_read(url: str, client: str, workload: str, client_cache: bool, concurrency: int,
                      cutout: list[int], cutouts: int, dims: str, dataset: str = ZARR_DATASET,
                      expected_crc32s: list[int] | None = None) -> dict:
    """Open the store and read the workload's selections one after another; verify by CRC-32.

    Timed from opening (metadata reads included) to the last selection; the client's libraries are
    warmed up on an in-memory array first. Each selection's CRC-32 is compared with
    ``expected_crc32s`` (the written data's, :func:`expected_crc32s`); without it, with the same
    region of the generated data.
    """
    import numpy as np

    from ..rootio import _timed_read

    spec = parse_dims(dims)
    selections = zarr_selections(spec.shape, spec.chunks, workload, tuple(cutout), cutouts)
    results: list = []
    warm_up_zarr_client(client)

    def read() -> dict:
        reader = _open_zarr_reader(url, client, client_cache, concurrency)
        for sel in selections:
            results.append(np.asarray(reader[sel]))
        return {"nbytes": sum(r.nbytes for r in results)}

    row = _timed_read(read)
    crcs = [zlib.crc32(np.ascontiguousarray(r)) for r in results]
    if expected_crc32s is None:
        from ..datasets import Dataset

        data = Dataset(dataset, spec.shape)
        expected_crc32s = [zlib.crc32(np.ascontiguousarray(data.region(sel))) for sel in selections]
    row["verified"] = crcs == list(expected_crc32s) and all(
        r.shape == tuple(s.stop - s.start for s in sel) for r, sel in zip(results, selections, strict=True))
    row["data_crc32"] = crcs[0] if len(crcs) == 1 else zlib.crc32(b"".join(c.to_bytes(4, "big") for c in crcs))
    row["cutout_bytes"] = row["nbytes"]
    row["selections"] = len(selections)
    itemsize = results[0].dtype.itemsize if results else 2
    row["selection_bytes"] = int(math.prod(cutout) * itemsize) if workload == "cutouts" else row["nbytes"]
    return row


SUITE = Suite(
    name=NAME,
    title="ROOT-style cache and prefetch: TTree and Zarr reads, local and over HTTP",
    build_cases=build_cases,
    run_case=run_case,
    profiles=PROFILES,
    scratch_bytes=scratch_bytes,
    label_keys=("reader", "client", "location", "latency_ms", "cache_bytes", "async_prefetch", "layout",
                "concurrency"),
    # every read has its own limit; the case may also build the sample file once
    case_timeout_s=lambda case, runs: float(case.params.get("timeout_s", 600)) * (runs + 1) + 600,
    time_budget_s={"quick": 95},
)

__all__ = [
    "LOCATIONS", "PROFILES", "READERS", "SUITE", "ZARR_CLIENTS", "ZARR_LAYOUTS", "ZARR_WORKLOADS", "CacheParams",
    "build_cases", "config_label", "ensure_zarr_store", "measure_zarr_read", "parse_params", "run_case",
    "warm_up_zarr_client", "zarr_selections", "zarr_store_info",
]
