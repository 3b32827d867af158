"""The cache/prefetch chapter (seed 004): TTree and Zarr reads, local, over HTTP and through S3. The plan only.

The readers are ``remote`` adapters; each configuration is one :class:`Case`, measured in rounds
(``suites.Rounds``): set up once (its input, the values its reads must return, its server started and kept until
the case closes), then each round one measured read, a fresh Python process with the input evicted from the page
cache first (forked from one that imported the reader's library, shared by the worker's cases of the reader:
``measure.fresh.shared_forks``):

- ``root``: seed 004's benchmark with real ROOT: TTreeCache size x ``TFile.AsyncPrefetching``
  x location (local file; HTTP through ``TWebFile`` at each latency) on seed 004's sample file.
- ``uproot``: the same file through uproot's sources (fsspec, HTTPSource, the multithreaded
  source) and step sizes in entries and in bytes.
- ``zarr``: a Zarr v3 store (unsharded and sharded) on the same server, read whole or as a pan
  of overlapping cutouts by ``zarr-fsspec``, ``zarr-obstore`` and ``tensorstore``, without and
  with a client cache, at several concurrency levels; and the same store through S3 (location
  ``s3``): copied to a versitygw on 127.0.0.1 behind the same emulated link (``servers.s3site``), or to
  the user's endpoint (``s3_endpoint``, credentials from the AWS environment).

Rows carry the client's own counters next to the server's (requests, ranges, bytes, its CPU time
and disk reads), the real and CPU time, and the RSS over the fresh process's baseline. Every read
is checked by value: per-branch sums of the TTree against the writer's, CRC-32s of the Zarr data
against the written. Inputs (:mod:`benchmarks_lib.inputs`) are built once per run in the run's
scratch directory; a case runs only where the registry has its reader and its input's writer.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks_lib.base.specs import (
    SpecError,
    parse_choice,
    parse_count,
    parse_dims,
    parse_flags,
    parse_int_list,
    parse_ints,
    parse_items,
    parse_names,
    parse_number,
    parse_seconds,
    parse_size,
)
from benchmarks_lib.data.storage import parse_s3
from benchmarks_lib.inputs import root_sample, zarr_store
from benchmarks_lib.inputs.zarr_store import ZARR_DATASET, ZARR_LAYOUTS
from benchmarks_lib.suites import Case, Suite
from benchmarks_lib.suites.cache.reads import config_label, rounds, run_case, unavailable_reason
from benchmarks_lib.suites.kit.common import RUN_KEYS, with_defaults

NAME = "cache"
READERS = ("root", "uproot", "zarr")
#: ``s3`` applies to the Zarr reads only (ROOT and uproot read the sample file locally or over HTTP, as seed 004)
LOCATIONS = ("local", "http", "s3")
SERVERS = ("builtin", "nginx")
UPROOT_SOURCES = ("fsspec", "http", "multithreaded")
#: the ``remote`` adapters that read the Zarr store
ZARR_CLIENTS = ("zarr-fsspec", "zarr-obstore", "tensorstore")
ZARR_WORKLOADS = ("whole", "cutouts")

#: ``quick`` answers the chapter's question (what a read cache buys a remote read) in rounds (``run.rounds``: at most
#: ``iterations``, each question stopped once answered, the whole run within the profile's time), one read per
#: configuration per round, each a fresh process on a cold input (forked from one that imported the reader's library:
#: about 0.15 s of start-up around a 0.3-3 s read on 2 cores, where a new interpreter took 1.5 s): ROOT without and with
#: a TTreeCache, and one Zarr client (tensorstore) without and with its cache, over one emulated link (10 ms, 50 MB/s).
#: Its Zarr cases are the standard profile's own (the same store, layout, cutouts, concurrency, link and bandwidth: a
#: quick run compares with the standard reference); its TTree is smaller than standard's (750 entries x 16 branches: a
#: few dozen transactions without a cache instead of thousands). zarr-python's clients (fsspec: 16.5 s of the quick
#: book's 64 s here), uproot, local files, async prefetching, the unsharded layout and S3 are standard's. ``standard``
#: sets local reads beside the 10 ms link: ROOT with and without a TTreeCache, uproot (its default fsspec source) at a
#: small and a large step, and every Zarr client and layout, with and without its cache, reading cutouts at concurrency
#: 8 over HTTP and through S3 (about 10 minutes on 2 cores at the reference's n = 5; each Zarr read ~1 s in a ~2.5 s
#: case, ROOT without a TTreeCache ~20 s, uproot's 100 MB step ~22 s). A 0 ms link, async prefetching, whole-array
#: reads, concurrency 1 and uproot's other sources are parameters (``latencies_ms``, ``async_prefetch``,
#: ``zarr_workloads``, ``zarr_concurrency``, ``uproot_sources``); the reference of 2026-11-22 measured them at n = 3
#: (async prefetching moved ROOT's 10 ms read by under 1%).
PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "readers": ["root", "zarr"], "entries": 750, "branches": 16, "auto_flush": 300,
        "sample_writer": "root", "cache_sizes": [0, "100MB"], "async_prefetch": [0],
        "locations": ["http"], "latencies_ms": [10], "bandwidth": "50MB", "servers": ["builtin"],
        "uproot_sources": ["fsspec", "multithreaded"], "uproot_steps": [750, "100MB"],
        "uproot_workers": 4, "zarr_clients": ["tensorstore"], "zarr_layouts": ["sharded"],
        "zarr_workloads": ["cutouts"], "zarr_cache": [False, True], "zarr_concurrency": [8],
        "zarr_dims": "z:128:32:64,y:512:128:256,x:512:128:256", "zarr_cutout": "48,192,192", "zarr_cutouts": 8,
        "s3_endpoint": None, "s3_target": "s3://iobench/cache", "s3_workloads": None, "s3_concurrency": None,
        "read_timeout_s": 600, "warmups": 0,
    },
    "standard": {
        "readers": ["root", "uproot", "zarr"], "entries": 2000, "branches": 128, "auto_flush": None,
        "sample_writer": "root", "cache_sizes": [0, "100MB"], "async_prefetch": [0],
        "locations": ["local", "http", "s3"], "latencies_ms": [10], "bandwidth": "50MB", "servers": ["builtin"],
        "uproot_sources": ["fsspec"], "uproot_steps": [1000, "100MB"],
        "uproot_workers": 8, "zarr_clients": list(ZARR_CLIENTS), "zarr_layouts": list(ZARR_LAYOUTS),
        "zarr_workloads": ["cutouts"], "zarr_cache": [False, True], "zarr_concurrency": [8],
        "zarr_dims": "z:128:32:64,y:512:128:256,x:512:128:256", "zarr_cutout": "48,192,192", "zarr_cutouts": 8,
        "s3_endpoint": None, "s3_target": "s3://iobench/cache", "s3_workloads": ["cutouts"], "s3_concurrency": [8],
        "read_timeout_s": 1800, "warmups": 0,
    },
    "seed": {
        "readers": ["root", "uproot"], "entries": 10_000, "branches": 2000, "auto_flush": None,
        "sample_writer": "root", "cache_sizes": [0, "100MB"], "async_prefetch": [0, 1],
        "locations": ["local", "http"], "latencies_ms": [0, 10], "bandwidth": None, "servers": ["builtin"],
        "uproot_sources": ["http", "multithreaded"], "uproot_steps": [1000, "100MB"], "uproot_workers": 8,
        "zarr_clients": list(ZARR_CLIENTS), "zarr_layouts": list(ZARR_LAYOUTS), "zarr_workloads": ["whole", "cutouts"],
        "zarr_cache": [False, True], "zarr_concurrency": [1, 8, 32],
        "zarr_dims": "z:256:64:128,y:1024:128:512,x:1024:128:512", "zarr_cutout": "96,384,384", "zarr_cutouts": 8,
        "s3_endpoint": None, "s3_target": "s3://iobench/cache", "s3_workloads": ["cutouts"], "s3_concurrency": [8],
        "read_timeout_s": 4 * 3600, "warmups": 0,
    },
}
PARAMETERS = tuple(k for k in PROFILES["quick"] if k not in RUN_KEYS)


# -- parameters ------------------------------------------------------------------------------

def _cache_size(value: Any) -> int:
    """A TTreeCache size: 0 (no cache) or a size such as ``100MB``."""
    if value in (0, "0", "0B", "0MB") and not isinstance(value, bool):
        return 0
    return parse_size(value)


def _step(value: Any) -> int | str:
    """An uproot step: an int (entries) or a size string such as ``100MB`` (bytes, as "N B" for uproot)."""
    if isinstance(value, int | bool) or (isinstance(value, str) and value.strip().isdigit()):
        return parse_count(value, "uproot_steps value", maximum=2**62)
    return f"{parse_size(value)} B"


def _nonempty(values: list, what: str, example: str) -> tuple:
    if not values:
        raise SpecError(f"{what} is empty; give {example}")
    return tuple(dict.fromkeys(values))


def parse_params(params: dict | None, profile: str) -> dict[str, Any]:
    """Profile defaults overlaid with ``params`` (None values mean "profile default"), validated: every
    parameter of ``PARAMETERS`` parsed (sizes in bytes, lists as tuples without duplicates)."""
    p = with_defaults(params or {}, profile, PROFILES, NAME)
    auto_flush = p["auto_flush"]
    if auto_flush is not None:
        auto_flush = parse_count(auto_flush, "auto_flush", minimum=-2**62, maximum=2**62)
        if auto_flush == 0:
            raise SpecError("auto_flush 0 is not allowed; use entries (> 0), bytes (< 0) or None for ROOT's default")
    latencies = [parse_number(v, "latencies_ms value", minimum=0, maximum=10_000, unit="ms")
                 for v in parse_items(p["latencies_ms"], "latencies_ms", "[0, 2, 10]")]
    dims = parse_dims(p["zarr_dims"], "zarr_dims")
    cutout = parse_int_list(parse_items(p["zarr_cutout"], "zarr_cutout", '"48,192,192"'), "zarr_cutout")
    if len(cutout) != len(dims.shape):
        raise SpecError(f"zarr_cutout {cutout} has {len(cutout)} sizes; zarr_dims has {len(dims.shape)} dimensions")
    for size, n, name in zip(cutout, dims.shape, dims.names, strict=True):
        if size > n:
            raise SpecError(f"zarr_cutout size {size} exceeds the size {n} of dimension {name!r}")
    return dict(
        readers=tuple(parse_names(p["readers"], "readers", READERS)),
        entries=parse_count(p["entries"], "entries", maximum=10**9),
        branches=parse_count(p["branches"], "branches", maximum=100_000),
        auto_flush=auto_flush,
        sample_writer=parse_choice(p["sample_writer"], "sample_writer", root_sample.WRITERS),
        cache_sizes=_nonempty([_cache_size(v) for v in parse_items(p["cache_sizes"], "cache_sizes", '[0, "100MB"]')],
                              "cache_sizes", "e.g. [0, '100MB']"),
        async_prefetch=_nonempty([int(f) for f in parse_flags(p["async_prefetch"], "async_prefetch")],
                                 "async_prefetch", "0 and/or 1"),
        locations=tuple(parse_names(p["locations"], "locations", LOCATIONS)),
        latencies_ms=_nonempty(latencies, "latencies_ms", "at least one latency, e.g. [0]"),
        bandwidth=None if p["bandwidth"] in (None, 0, "0", "none") else parse_size(p["bandwidth"]),
        servers=tuple(parse_names(p["servers"], "servers", SERVERS)),
        uproot_sources=tuple(parse_names(p["uproot_sources"], "uproot_sources", UPROOT_SOURCES)),
        uproot_steps=_nonempty([_step(v) for v in parse_items(p["uproot_steps"], "uproot_steps", '[1000, "100MB"]')],
                               "uproot_steps", "entries (int) and/or sizes such as '100MB'"),
        uproot_workers=parse_count(p["uproot_workers"], "uproot_workers", maximum=1024),
        zarr_clients=tuple(parse_names(p["zarr_clients"], "zarr_clients", ZARR_CLIENTS)),
        zarr_layouts=tuple(parse_names(p["zarr_layouts"], "zarr_layouts", ZARR_LAYOUTS)),
        zarr_workloads=tuple(parse_names(p["zarr_workloads"], "zarr_workloads", ZARR_WORKLOADS)),
        zarr_cache=tuple(parse_flags(p["zarr_cache"], "zarr_cache")) or (False,),
        zarr_concurrency=tuple(dict.fromkeys(parse_ints(p["zarr_concurrency"], "zarr_concurrency", minimum=1,
                                                        maximum=1024))),
        zarr_dims=str(dims), zarr_cutout=cutout,
        zarr_cutouts=parse_count(p["zarr_cutouts"], "zarr_cutouts", maximum=10_000),
        s3=parse_s3(p["s3_target"], p["s3_endpoint"]),
        s3_workloads=None if p["s3_workloads"] is None else
        tuple(parse_names(p["s3_workloads"], "s3_workloads", ZARR_WORKLOADS)),
        s3_concurrency=None if p["s3_concurrency"] is None else
        tuple(dict.fromkeys(parse_ints(p["s3_concurrency"], "s3_concurrency", minimum=1, maximum=1024))),
        read_timeout_s=parse_seconds(p["read_timeout_s"], "read_timeout_s"),
    )


# -- cases -----------------------------------------------------------------------------------

def _http_places(p: dict) -> list[dict]:
    """Each HTTP server at each latency (none unless ``http`` is a location)."""
    return [{"location": "http", "server": server, "latency_ms": latency, "bandwidth": p["bandwidth"]}
            for server in p["servers"] for latency in p["latencies_ms"]] if "http" in p["locations"] else []


def _zarr_places(p: dict) -> list[dict]:
    """Where the Zarr store is read from: each HTTP link, and S3: the bundled versitygw behind each link, or the
    user's endpoint as it is (its own network: no emulated link)."""
    places = _http_places(p)
    if "s3" in p["locations"]:
        s3 = {"location": "s3", "s3_target": p["s3"].url, "s3_endpoint": p["s3"].endpoint}
        if p["s3"].endpoint:
            places.append({**s3, "server": "endpoint", "latency_ms": 0.0, "bandwidth": None})
        else:
            places += [{**s3, "server": "versitygw", "latency_ms": latency, "bandwidth": p["bandwidth"]}
                       for latency in p["latencies_ms"]]
    return places


def build_cases(params: dict | None, profile: str) -> list[Case]:
    """One case per configuration; raises SpecError on a bad parameter before any work."""
    p = parse_params(params, profile)
    sample = {"entries": p["entries"], "branches": p["branches"], "auto_flush": p["auto_flush"],
              "writer": p["sample_writer"]}
    local = {"location": "local", "server": None, "latency_ms": None, "bandwidth": None}
    places = ([local] if "local" in p["locations"] else []) + _http_places(p)
    timeout, cutout = p["read_timeout_s"], list(p["zarr_cutout"])
    cases: list[Case] = []
    if "root" in p["readers"]:
        for place in places:
            for cache in p["cache_sizes"]:
                for flag in p["async_prefetch"]:
                    cases.append(Case(NAME, "root", {"reader": "root", "sample": sample, **place, "cache_bytes": cache,
                                                     "async_prefetch": flag, "timeout_s": timeout}))
    if "uproot" in p["readers"]:
        for place in places:
            sources = ["local"] if place["location"] == "local" else list(p["uproot_sources"])
            for source in sources:
                for step in p["uproot_steps"]:
                    workers = p["uproot_workers"] if source == "multithreaded" else 1
                    cases.append(Case(NAME, "uproot", {"reader": "uproot", "sample": sample, **place, "source": source,
                                                       "step": step, "num_workers": workers, "timeout_s": timeout}))
    if "zarr" in p["readers"]:
        store = {"dims": p["zarr_dims"], "dataset": ZARR_DATASET}
        for place in _zarr_places(p):
            s3 = place["location"] == "s3"
            workloads = p["s3_workloads"] if s3 and p["s3_workloads"] is not None else p["zarr_workloads"]
            levels = p["s3_concurrency"] if s3 and p["s3_concurrency"] is not None else p["zarr_concurrency"]
            for client in p["zarr_clients"]:
                for layout in p["zarr_layouts"]:
                    for workload in workloads:
                        for cache in p["zarr_cache"]:
                            for conc in levels:
                                cases.append(Case(NAME, client, {
                                    "reader": "zarr", "store": store, **place, "client": client,
                                    "layout": layout, "workload": workload, "client_cache": cache, "concurrency": conc,
                                    "cutout": cutout, "cutouts": p["zarr_cutouts"], "timeout_s": timeout}))
    return cases


def input_bytes(params: dict) -> int:
    """An upper bound of the disk one case's input (a sample file or a Zarr store) takes."""
    if "sample" in params:
        return root_sample.sample_bytes_bound(params["sample"]["entries"], params["sample"]["branches"])
    return zarr_store.store_bytes_bound(params["store"]["dims"])


def _input_key(params: dict) -> str:
    return json.dumps(params["sample"] if "sample" in params else [params["store"], params["layout"]], sort_keys=True)


def scratch_bytes(cases: list[Case]) -> int:
    """Disk the run needs on scratch: every input (sample files, Zarr stores: they live in the run's
    scratch directory until the run ends), the bundled S3 server's copy of the store for every S3 case (measured in
    rounds, every case is open at once, each with its own server), and a margin for the cases' own scratch."""
    inputs = {_input_key(c.params): input_bytes(c.params) for c in cases}
    s3 = [input_bytes(c.params) for c in cases if c.params.get("server") == "versitygw"]
    return sum(inputs.values()) + sum(s3) + 16 * 2**20


SUITE = Suite(
    name=NAME,
    title="Cache and prefetch: TTree and Zarr reads, local, over HTTP and through S3",
    measures="ROOT-style TTreeCache and prefetch, uproot, Zarr clients: reads local, over HTTP and through S3",
    build_cases=build_cases,
    run_case=run_case,
    rounds=rounds,
    questions=("root_read", "uproot_iterate", "zarr_read_cutouts", "zarr_read_whole"),
    contenders=("config",),
    question_keys=("dataset", "location", "server", "latency_ms", "bandwidth_bytes_s", "nbytes"),
    # a case's process only starts servers and fresh readers (each read is a process of its own), so one worker per
    # reader holds its open cases (the standard profile opens 32 at once)
    reuse_worker=True,
    profiles=PROFILES,
    scratch_bytes=scratch_bytes,
    label_keys=("reader", "client", "location", "latency_ms", "cache_bytes", "async_prefetch", "layout",
                "concurrency"),
    case_keys=("location", "server", "latency_ms", "bandwidth_bytes_s", "s3_target", "client", "cache_bytes",
               "async_prefetch", "step", "concurrency", "layout", "client_cache", "cutout", "dataset", "entries",
               "branches", "zarr_dims"),
    # every read has its own limit; the case may also build the sample file once
    case_timeout_s=lambda case, runs: float(case.params.get("timeout_s", 600)) * (runs + 1) + 600,
    # quick: 46 s since each read is forked from a process that imported its library (85 s by a fresh interpreter per
    # read, 2026-12-07); standard: its first look, 8 rounds of 73-96 s, on 2 cores (before the forks)
    time_budget_s={"quick": 46, "standard": 810},
    user_s3=lambda case: case.params.get("s3_endpoint") is not None,
    smoke={"readers": ["root", "uproot", "zarr"], "entries": 50, "branches": 4, "cache_sizes": [0, "10MB"],
           "async_prefetch": [0], "locations": ["local", "http"], "latencies_ms": [0], "uproot_sources": ["fsspec"],
           "uproot_steps": [25], "zarr_clients": ["zarr-fsspec", "tensorstore"], "zarr_layouts": ["sharded"],
           "zarr_cache": [False], "zarr_concurrency": [2], "zarr_dims": "z:8:4:8,y:32:16:32,x:32:16:32",
           "zarr_cutout": "4,8,8", "zarr_cutouts": 2, "iterations": 1},
)

__all__ = ["LOCATIONS", "PROFILES", "READERS", "SUITE", "ZARR_CLIENTS", "ZARR_WORKLOADS", "build_cases",
           "config_label", "parse_params", "rounds", "run_case", "scratch_bytes", "unavailable_reason"]
