"""The registry of writers/formats: plain data, lazily imported.

Each entry maps a CLI name to ``module:Class``; availability is checked with
``importlib.util.find_spec`` so listing backends never imports a writer library.
Names with an option (``ome-writers:tensorstore``) pass the part after the colon to the
adapter as ``option``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass
from importlib import metadata

from ..specs import SpecError
from .base import Adapter

# Ordered: the raw baseline first, then the writers.
REGISTRY: dict[str, str] = {
    "raw": "benchmarks_lib.adapters.raw:RawAdapter",
    "zarr-python": "benchmarks_lib.adapters.zarr_python:ZarrPythonAdapter",
    "zarrs": "benchmarks_lib.adapters.zarrs:ZarrsAdapter",
    "tensorstore": "benchmarks_lib.adapters.tensorstore:TensorstoreAdapter",
    "acquire-zarr": "benchmarks_lib.adapters.acquire_zarr:AcquireZarrAdapter",
    "ome-writers": "benchmarks_lib.adapters.ome_writers:OmeWritersAdapter",
    "wkw": "benchmarks_lib.adapters.wkw:WkwAdapter",
    "h5py": "benchmarks_lib.adapters.h5py:H5pyAdapter",
}


def _register_plugins() -> None:
    """Extra adapters from ``IOBENCH_PLUGINS="name=module:Class,..."`` (e.g. your own writer)."""
    for item in filter(None, os.environ.get("IOBENCH_PLUGINS", "").split(",")):
        name, _, target = item.partition("=")
        if not name or ":" not in target:
            raise SpecError(f"IOBENCH_PLUGINS entry {item!r} is not name=module:Class")
        REGISTRY.setdefault(name.strip(), target.strip())


@dataclass(frozen=True)
class BackendStatus:
    name: str
    available: bool
    version: str | None
    reason: str | None
    install_hint: str
    capabilities: dict


def _split(name: str) -> tuple[str, str | None]:
    base, _, option = name.partition(":")
    return base, option or None


def adapter_class(name: str) -> type[Adapter]:
    _register_plugins()
    base, _ = _split(name)
    if base not in REGISTRY:
        raise SpecError(f"backend {name!r} is unknown; allowed: {', '.join(REGISTRY)}, all")
    module, _, cls = REGISTRY[base].partition(":")
    return getattr(importlib.import_module(module), cls)


def backend_status(name: str) -> BackendStatus:
    try:
        cls = adapter_class(name)
    except ImportError as exc:
        return BackendStatus(name, False, None, f"adapter failed to import: {exc}", "", {})
    _, option = _split(name)
    caps = {k: getattr(cls, k) for k in ("format", "supports_sharding", "supports_append", "supports_read",
                                          "native_order", "threads_setting", "notes")}
    caps["codecs"] = ",".join(sorted(cls.codecs)) if cls.applies_codec else "n/a (uncompressed)"
    if importlib.util.find_spec(cls.module) is None:
        return BackendStatus(name, False, None, f"module {cls.module!r} is not installed", cls.install_hint, caps)
    try:
        version = metadata.version(cls.distribution)
    except metadata.PackageNotFoundError:
        version = None
    reason = cls.unavailable_reason(option)
    return BackendStatus(name, reason is None, version, reason, cls.install_hint, caps)


def expand_backends(names: list[str] | tuple[str, ...]) -> list[str]:
    """Validate backend names; ``all`` means every registered one (skips become rows)."""
    _register_plugins()
    out: list[str] = []
    for name in names or ["all"]:
        if name == "all":
            for base in REGISTRY:
                cls = adapter_class(base)
                expanded = cls.expand_all()
                out.extend(n for n in expanded if n not in out)
            continue
        adapter_class(name)  # raises SpecError for unknown names
        cls = adapter_class(name)
        _, option = _split(name)
        if option is not None and option not in cls.options:
            allowed = ", ".join(f"{name.partition(':')[0]}:{o}" for o in cls.options) or "none"
            raise SpecError(f"backend option {name!r} is unknown; allowed: {allowed}")
        if name not in out:
            out.append(name)
    return out


def make_adapter(name: str, threads: int | None = None) -> Adapter:
    _, option = _split(name)
    return adapter_class(name)(threads=threads, option=option)


__all__ = ["REGISTRY", "Adapter", "BackendStatus", "adapter_class", "backend_status", "expand_backends", "make_adapter"]
