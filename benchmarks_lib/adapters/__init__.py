"""The registry of adapters: discovered through entry points, lazily imported, one namespace per kind.

Each kind (``library.KINDS``: ``array`` writers and readers of array formats, ``mesh`` writers, ``codec``
in-memory codecs, ``remote`` readers over HTTP) is an entry-point group (``library.ENTRY_POINT_GROUPS``) whose
entries map a name to ``module:Class``: the built-ins are declared in this package's ``pyproject.toml``, a
third party's writer in its own package's, and nothing here lists them. Availability, versions, install
hints, the verifier and the recorded versions come from the class's declared data (``Library``) through
:mod:`benchmarks_lib.base.availability`, so listing imports the adapter modules, never a measured library.
Names with an option (``ome-writers:tensorstore``) pass the part after the colon to the adapter as
``option``. Suites pick their participants with :func:`participants`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks_lib.adapters.base import Adapter
from benchmarks_lib.adapters.library import ENTRY_POINT_GROUPS, KINDS, Library
from benchmarks_lib.base.availability import distribution_version
from benchmarks_lib.base.entrypoints import declared, load
from benchmarks_lib.base.environment import CORE_PACKAGES
from benchmarks_lib.base.specs import SpecError


def _listing_key(name: str, target: str, builtin: bool) -> tuple:
    """Built-ins first, then by the declared ``order`` and the name; an entry that fails to import last."""
    try:
        order = load(target).order
    except ImportError:  # a third party's broken module: listed, and ``backend_status`` says why
        return (not builtin, 1, 0, name)
    return (not builtin, 0, order, name)


@functools.cache
def _discovered(kind: str) -> dict[str, str]:
    """name -> ``module:Class`` of ``kind``, in listing order. A name is the built-in's where a plug-in takes it
    too, else the first distribution's on sys.path."""
    if kind not in ENTRY_POINT_GROUPS:
        raise SpecError(f"adapter kind {kind!r} is unknown; allowed: {', '.join(KINDS)}")
    found = declared(ENTRY_POINT_GROUPS[kind])
    if not found:
        raise SpecError(f"no {kind} adapters are registered (entry-point group {ENTRY_POINT_GROUPS[kind]!r}): "
                        "install this package (pip install -e .) so that its entry points are found")
    keys = {name: _listing_key(name, target, builtin) for name, (target, builtin) in found.items()}
    return {name: found[name][0] for name in sorted(found, key=keys.__getitem__)}


def registered(kind: str = "array") -> tuple[str, ...]:
    """Every registered name of ``kind``, in listing order (the raw baseline first, then the writers)."""
    return tuple(_discovered(kind))


def forget_discovered() -> None:
    """Discover the entry points again on next use (after a distribution was added to sys.path)."""
    _discovered.cache_clear()


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


def adapter_class(name: str, kind: str = "array") -> type[Library]:
    """The class registered as ``name`` of ``kind`` (its module imported: never the measured library); ImportError
    when that fails (a third party's module may be broken: it is then listed with the reason, never fatal)."""
    entries = _discovered(kind)
    base, _ = _split(name)
    if base not in entries:
        raise SpecError(f"backend {name!r} is unknown; allowed: {', '.join(entries)}, all")
    return load(entries[base])


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
    if hasattr(cls, "writes_format"):  # an option may pick the format (tensorstore:zarr2)
        caps["format"] = cls.writes_format(option)
    if hasattr(cls, "codecs"):
        caps["codecs"] = ",".join(sorted(cls.codecs)) if getattr(cls, "applies_codec", True) else "n/a (uncompressed)"
    reason = cls.missing_reason(option)
    version = distribution_version(cls.distribution) if reason is None or "not installed" not in reason else None
    return BackendStatus(name, reason is None, version, reason, cls.install_hint, caps)


def _checked(name: str, kind: str) -> str:
    """``name``, registered and with an offered option (SpecError otherwise); a plug-in whose module fails to
    import passes (its skip row says why)."""
    try:
        cls = adapter_class(name, kind)
    except ImportError:
        return name
    _, option = _split(name)
    if option is not None and option not in cls.options:
        allowed = ", ".join(f"{name.partition(':')[0]}:{o}" for o in cls.options) or "none"
        raise SpecError(f"backend option {name!r} is unknown; allowed: {allowed}")
    return name


def _expand_all(name: str, kind: str) -> list[str]:
    try:
        return adapter_class(name, kind).expand_all()
    except ImportError:
        return [name]


def expand_backends(names: list[str] | tuple[str, ...], kind: str = "array") -> list[str]:
    """Validate backend names; ``all`` means every registered one (skips become rows)."""
    out: list[str] = []
    for name in names or ["all"]:
        expanded = ([n for base in registered(kind) for n in _expand_all(base, kind)] if name == "all"
                    else [_checked(name, kind)])
        out.extend(n for n in expanded if n not in out)
    return out


def _importable(kind: str) -> dict[str, type[Library]]:
    """The registered classes of ``kind`` whose modules import (a broken plug-in takes part in nothing)."""
    out = {}
    for name in registered(kind):
        try:
            out[name] = adapter_class(name, kind)
        except ImportError:
            continue
    return out


def participants(kind: str, accepts: Callable[[type[Library]], bool] = lambda cls: True) -> list[str]:
    """Registered names of ``kind`` whose declared capabilities ``accepts`` (no library is imported)."""
    return [name for name, cls in _importable(kind).items() if accepts(cls)]


def _shares_code(a: type, b: type) -> bool:
    """``a`` and ``b`` share an adapter class (one derives from the other, or both from one: zarrs and a plug-in
    built on zarr-python's adapter run zarr-python's code)."""
    return bool(set(a.__mro__) & set(b.__mro__) - set(Adapter.__mro__))


def readers_of(writer: Adapter, store: str = "file") -> list[str]:
    """The array adapters that may verify what ``writer`` wrote to ``store``, in listing order: those that read its
    ``format`` from that store and are another library (no adapter class in common with it). The one rule every
    suite verifies by (:func:`benchmarks_lib.suites.kit.verification.verifier`)."""
    return participants("array", lambda cls: cls.reads_format(writer.format) and store in cls.stores
                        and not _shares_code(cls, type(writer)))


def declared_distributions() -> list[str]:
    """The distributions every registered adapter declares (``distribution``, ``extra_distributions``), once each
    in listing order: the versions a run records."""
    names = (d for kind in KINDS for cls in _importable(kind).values()
             for d in (cls.distribution, *cls.extra_distributions))
    return list(dict.fromkeys(names))


def tracked_packages() -> list[str]:
    """The distributions whose versions every run records (missing ones as absent): the core ones, then those
    each registered adapter declares (``distribution``, ``extra_distributions``), a plug-in's included."""
    return list(dict.fromkeys((*CORE_PACKAGES, *declared_distributions())))


def make_adapter(name: str, threads: int | None = None, kind: str = "array") -> Library:
    _, option = _split(name)
    return adapter_class(name, kind)(threads=threads, option=option)


__all__ = ["KINDS", "Adapter", "BackendStatus", "Library", "adapter_class", "backend_status", "declared_distributions",
           "expand_backends", "forget_discovered", "make_adapter", "participants", "readers_of", "registered"]
