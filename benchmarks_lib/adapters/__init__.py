"""The registry of adapters: plain data, lazily imported, one namespace per kind.

Each entry maps a name to ``module:Class``. Kinds (``library.KINDS``): ``array`` (writers and
readers of array formats), ``mesh`` (mesh writers), ``codec`` (in-memory codecs), ``remote``
(readers over HTTP). Availability, versions and install hints come from the class's declared
data (``Library``) through :mod:`benchmarks_lib.availability`, so listing never imports a
measured library. Names with an option (``ome-writers:tensorstore``) pass the part after the
colon to the adapter as ``option``. Suites pick their participants with :func:`participants`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from ..availability import distribution_version
from ..specs import SpecError
from .base import Adapter
from .library import KINDS, Library

_A = "benchmarks_lib.adapters."
# Ordered within a kind: the raw baseline first, then the writers.
REGISTRY: dict[str, dict[str, str]] = {
    "array": {
        "raw": _A + "raw:RawAdapter",
        "zarr-python": _A + "zarr_python:ZarrPythonAdapter",
        "zarrs": _A + "zarrs:ZarrsAdapter",
        "tensorstore": _A + "tensorstore:TensorstoreAdapter",
        "acquire-zarr": _A + "acquire_zarr:AcquireZarrAdapter",
        "ome-writers": _A + "ome_writers:OmeWritersAdapter",
        "wkw": _A + "wkw:WkwAdapter",
        "h5py": _A + "h5py:H5pyAdapter",
    },
    "mesh": {
        "zvtk": _A + "zvtk:ZvtkWriter",
        "vtu": _A + "vtu:VtuWriter",
    },
    "codec": {
        "numcodecs": _A + "numcodecs:NumcodecsCodec",
        "blosc": _A + "numcodecs:BloscCodec",
    },
    # readers of the cache/prefetch chapter (adapters/remote.py): TTree, then Zarr over HTTP
    "remote": {
        "root": _A + "root:RootReader",
        "uproot": _A + "uproot:UprootReader",
        "zarr-fsspec": _A + "zarr_fsspec:ZarrFsspecReader",
        "zarr-obstore": _A + "zarr_obstore:ZarrObstoreReader",
        "tensorstore": _A + "tensorstore_http:TensorstoreHttpReader",
    },
}


def _register_plugins() -> None:
    """Extra array adapters from ``IOBENCH_PLUGINS="name=module:Class,..."`` (e.g. your own writer)."""
    for item in filter(None, os.environ.get("IOBENCH_PLUGINS", "").split(",")):
        name, _, target = item.partition("=")
        if not name or ":" not in target:
            raise SpecError(f"IOBENCH_PLUGINS entry {item!r} is not name=module:Class")
        REGISTRY["array"].setdefault(name.strip(), target.strip())


@dataclass(frozen=True)
class BackendStatus:
    name: str
    available: bool
    version: str | None
    #: why it cannot run here, with the install hint; None when it can
    reason: str | None
    install_hint: str
    capabilities: dict


def _split(name: str) -> tuple[str, str | None]:
    base, _, option = name.partition(":")
    return base, option or None


def _entries(kind: str) -> dict[str, str]:
    if kind not in REGISTRY:
        raise SpecError(f"adapter kind {kind!r} is unknown; allowed: {', '.join(KINDS)}")
    _register_plugins()
    return REGISTRY[kind]


def adapter_class(name: str, kind: str = "array") -> type[Library]:
    entries = _entries(kind)
    base, _ = _split(name)
    if base not in entries:
        raise SpecError(f"backend {name!r} is unknown; allowed: {', '.join(entries)}, all")
    module, _, cls = entries[base].partition(":")
    return getattr(importlib.import_module(module), cls)


#: capabilities shown by ``iobench backends`` (those a class declares)
_CAPABILITIES = ("format", "supports_sharding", "supports_append", "supports_read", "native_order",
                 "threads_setting", "notes")


def backend_status(name: str, kind: str = "array") -> BackendStatus:
    try:
        cls = adapter_class(name, kind)
    except ImportError as exc:
        return BackendStatus(name, False, None, f"adapter failed to import: {exc}", "", {})
    _, option = _split(name)
    caps = {k: getattr(cls, k) for k in _CAPABILITIES if hasattr(cls, k)}
    if hasattr(cls, "codecs"):
        caps["codecs"] = ",".join(sorted(cls.codecs)) if getattr(cls, "applies_codec", True) else "n/a (uncompressed)"
    reason = cls.missing_reason(option)
    version = distribution_version(cls.distribution) if reason is None or "not installed" not in reason else None
    return BackendStatus(name, reason is None, version, reason, cls.install_hint, caps)


def expand_backends(names: list[str] | tuple[str, ...], kind: str = "array") -> list[str]:
    """Validate backend names; ``all`` means every registered one (skips become rows)."""
    out: list[str] = []
    for name in names or ["all"]:
        if name == "all":
            for base in _entries(kind):
                out.extend(n for n in adapter_class(base, kind).expand_all() if n not in out)
            continue
        cls = adapter_class(name, kind)  # raises SpecError for unknown names
        _, option = _split(name)
        if option is not None and option not in cls.options:
            allowed = ", ".join(f"{name.partition(':')[0]}:{o}" for o in cls.options) or "none"
            raise SpecError(f"backend option {name!r} is unknown; allowed: {allowed}")
        if name not in out:
            out.append(name)
    return out


def participants(kind: str, accepts: Callable[[type[Library]], bool] = lambda cls: True) -> list[str]:
    """Registered names of ``kind`` whose declared capabilities ``accepts`` (no library is imported)."""
    return [name for name in _entries(kind) if accepts(adapter_class(name, kind))]


def make_adapter(name: str, threads: int | None = None, kind: str = "array") -> Library:
    _, option = _split(name)
    return adapter_class(name, kind)(threads=threads, option=option)


__all__ = ["KINDS", "REGISTRY", "Adapter", "BackendStatus", "Library", "adapter_class", "backend_status",
           "expand_backends", "make_adapter", "participants"]
