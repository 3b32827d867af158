"""The library versions a run measures (``iobench run --versions 'zarr==2.18.7,3.1.6'``, the ``versions`` parameter
of every suite, a notebook's ``VERSIONS``): what is asked, checked against what the adapters declare, and the cases
it makes.

A request names one library (an adapter's ``distribution``) and its versions; each version multiplies the cases of
the backends whose library it is, so that the versions are contenders of the same questions, measured on the same
data in the same rounds. Each such case names its environment (``environment``: ``zarr==2.18.7``) and its version
(``backend_version``), which its rows carry; the environment itself (a virtual environment with that version, built
once and cached) is :mod:`benchmarks_lib.run.environments`'. Everything here is checked before anything is created:
a bad request is one line naming the bad value and what is allowed (SpecError, exit 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from benchmarks_lib.adapters import KINDS, adapter_class, registered
from benchmarks_lib.adapters.library import Library
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.suites import Case

#: the distributions the harness itself runs on in every environment (its own pins): their versions are not varied
HARNESS_DISTRIBUTIONS = ("numpy",)
#: the case parameters (and so row columns) that name a case's environment and its library's version
ENVIRONMENT, VERSION = "environment", "backend_version"
#: one request: a distribution name, ``==``, one or more versions separated by commas
_REQUEST = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*==\s*([^=<>!~;@\s][^=<>!~;@]*)$")
SYNTAX = "NAME==VERSION[,VERSION...] (e.g. 'zarr==2.18.7,3.1.6')"


@dataclass(frozen=True)
class Request:
    """A library (its distribution's canonical name) at the versions asked for, in the order given."""

    distribution: str
    versions: tuple[str, ...]

    def key(self, version: str) -> str:
        """The environment of one version, as cases and run.json name it: ``zarr==2.18.7``."""
        return f"{self.distribution}=={version}"

    def __str__(self) -> str:
        return f"{self.distribution}=={','.join(self.versions)}"


def parse_versions(value: object) -> list[Request]:
    """``value`` (a string, a list of strings, or None: no versions) as requests, syntax only; SpecError naming the
    bad value."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(v, str) for v in items):
        raise SpecError(f"versions {value!r} is not a list of {SYNTAX}")
    out: list[Request] = []
    for item in items:
        match = _REQUEST.match(item)
        if not match:
            raise SpecError(f"versions {item!r} is not {SYNTAX}")
        name = canonicalize_name(match.group(1))
        versions: list[str] = []
        for text in match.group(2).split(","):
            try:
                version = str(Version(text.strip()))
            except InvalidVersion:
                raise SpecError(f"versions {item!r}: {text.strip()!r} is not a version (PEP 440, e.g. 2.18.7); "
                                f"allowed: {SYNTAX}") from None
            if version in versions:
                raise SpecError(f"versions {item!r} names {version} twice; name each version once")
            versions.append(version)
        if any(r.distribution == name for r in out):
            raise SpecError(f"versions names {name!r} twice; give each library once, all its versions together "
                            f"({name}==A,B)")
        out.append(Request(name, tuple(versions)))
    return out


def libraries() -> dict[str, list[type[Library]]]:
    """Each library an adapter measures (its ``distribution``, canonical) -> the adapter classes of every kind that
    measure it (whose modules import)."""
    out: dict[str, list[type[Library]]] = {}
    for kind in KINDS:
        for name in registered(kind):
            try:
                cls = adapter_class(name, kind)
            except ImportError:
                continue
            out.setdefault(canonicalize_name(cls.distribution), []).append(cls)
    return out


def check_requests(requests: list[Request]) -> None:
    """Each request names an adapter's library, not one the harness runs on, at versions each of its adapters
    declares it supports (``supported_versions``); SpecError naming the bad value and what is allowed."""
    known = libraries()
    for request in requests:
        name = request.distribution
        if name in HARNESS_DISTRIBUTIONS:
            raise SpecError(f"versions {str(request)!r}: {name} is what the harness itself runs on; its version is "
                            f"not varied (allowed: {', '.join(sorted(set(known) - set(HARNESS_DISTRIBUTIONS)))})")
        if name not in known:
            raise SpecError(f"versions {str(request)!r}: {name!r} is no adapter's library; allowed: "
                            f"{', '.join(sorted(set(known) - set(HARNESS_DISTRIBUTIONS)))}")
        for cls in known[name]:
            try:
                supported = SpecifierSet(cls.supported_versions)
            except InvalidSpecifier:
                raise SpecError(f"adapter {cls.name!r} declares supported_versions {cls.supported_versions!r}, "
                                "which is no PEP 440 specifier set (e.g. '>=2.18,<4')") from None
            outside = [v for v in request.versions if not supported.contains(v, prereleases=True)]
            if outside:
                raise SpecError(f"versions {str(request)!r}: {cls.name} supports {name} {supported}, not "
                                f"{outside[0]}; allowed: versions in {supported}")


def _adapter_of(backend: str) -> type[Library] | None:
    """The adapter class of a case's backend, of whichever kind registers it; None if none does."""
    for kind in KINDS:
        try:
            return adapter_class(backend, kind)
        except (SpecError, ImportError):
            continue
    return None


def _library_of(backend: str) -> str | None:
    """The library (canonical distribution) of a case's backend; None if no adapter registers it."""
    cls = _adapter_of(backend)
    return canonicalize_name(cls.distribution) if cls is not None else None


def companions(cases: list[Case], key: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the environment ``key`` (``zarr==2.18.7``) holds besides its library, and what must import there: the
    further distributions (``extra_distributions``) and the modules of the adapters whose cases run in it."""
    classes = [cls for backend in dict.fromkeys(c.backend for c in cases if c.params.get(ENVIRONMENT) == key)
               if (cls := _adapter_of(backend)) is not None]
    distributions = dict.fromkeys(d for cls in classes for d in cls.extra_distributions)
    modules = dict.fromkeys(m for cls in classes for m in (cls.module, *cls.extra_modules))
    return tuple(distributions), tuple(modules)


def expand_cases(cases: list[Case], requests: list[Request]) -> list[Case]:
    """``cases`` with each case of a requested library's backend replaced by one case per version (the versions
    next to each other), each naming its ``environment`` and ``backend_version``; SpecError for a request no case
    measures."""
    if not requests:
        return cases
    by_name = {r.distribution: r for r in requests}
    out: list[Case] = []
    used: set[str] = set()
    for case in cases:
        request = by_name.get(_library_of(case.backend) or "")
        if request is None:
            out.append(case)
            continue
        used.add(request.distribution)
        out.extend(Case(case.suite, case.backend, {**case.params, ENVIRONMENT: request.key(v), VERSION: v})
                   for v in request.versions)
    unused = [r for r in requests if r.distribution not in used]
    if unused:
        backends = sorted({c.backend for c in cases if c.suite != "ceiling"})
        raise SpecError(f"versions {str(unused[0])!r}: no case of this run measures {unused[0].distribution} "
                        f"(its backends: {', '.join(backends) or 'none'}); allowed: the libraries of those backends")
    return out


__all__ = ["ENVIRONMENT", "HARNESS_DISTRIBUTIONS", "VERSION", "Request", "check_requests", "companions", "expand_cases",
           "libraries",
           "parse_versions"]
