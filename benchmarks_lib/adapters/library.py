"""What every adapter declares, whatever it measures (array writer, mesh writer, codec, remote
reader): its name, the library and modules it needs, how to install them, its variants.

These are class variables (data), so the registry, the CLI and the book can show them without
importing the measured library; an adapter imports its library inside its methods. An adapter is found
through the entry-point group of its kind (``ENTRY_POINT_GROUPS``): the built-ins are declared in this
package's ``pyproject.toml``, a third party's writer in its own package's.
"""

from __future__ import annotations

from typing import ClassVar

from benchmarks_lib.base.availability import missing_modules, not_installed

#: the entry-point group of each kind of adapter (``name = "module:Class"``), each a namespace of names
ENTRY_POINT_GROUPS = {"array": "iobench.adapters", "mesh": "iobench.adapters.mesh",
                      "codec": "iobench.adapters.codec", "remote": "iobench.adapters.remote"}
#: kinds of adapters
KINDS = tuple(ENTRY_POINT_GROUPS)


class Library:
    name: ClassVar[str]
    #: one of KINDS
    kind: ClassVar[str] = "array"
    #: importable module whose presence means the library is available
    module: ClassVar[str]
    #: further modules it needs (e.g. aiohttp for an HTTP client)
    extra_modules: ClassVar[tuple[str, ...]] = ()
    #: distribution whose version is recorded
    distribution: ClassVar[str]
    #: the versions of ``distribution`` it measures, a PEP 440 specifier ("" = any): ``run --versions`` refuses others
    supported_versions: ClassVar[str] = ""
    #: further distributions it runs through, whose versions every run records too (a codec plugin, a client)
    extra_distributions: ClassVar[tuple[str, ...]] = ()
    #: how to install it
    install_hint: ClassVar[str]
    #: where the threads knob lives, or None when the library has no such setting
    threads_setting: ClassVar[str | None] = None
    #: True when a thread count is accepted and ignored (a single-threaded baseline such as raw)
    ignores_threads: ClassVar[bool] = False
    #: variants selectable as ``name:option`` (e.g. tensorstore:zarr2)
    options: ClassVar[tuple[str, ...]] = ()
    notes: ClassVar[str] = ""
    #: where it is listed within its kind, lower first (and preferred first as a verifier); the built-ins come
    #: before any plug-in, the raw baseline first
    order: ClassVar[int] = 100

    @classmethod
    def missing_reason(cls, option: str | None = None) -> str | None:
        """Why this adapter (or one of its options) cannot run here, with the install hint; None if it can."""
        missing = missing_modules((cls.module, *cls.extra_modules))
        if missing:
            return not_installed(f"module {missing[0]!r} (needed by {cls.name})", cls.install_hint)
        reason = cls.unavailable_reason(option)
        return f"{reason}; install: {cls.install_hint}" if reason else None

    @classmethod
    def unavailable_reason(cls, option: str | None) -> str | None:
        """Why this adapter (or one of its options) cannot run although its modules are installed; None if it can."""
        return None

    @classmethod
    def expand_all(cls) -> list[str]:
        """The names ``all`` stands for (the adapter itself, or each of its runnable options)."""
        return [cls.name]


__all__ = ["ENTRY_POINT_GROUPS", "KINDS", "Library"]
