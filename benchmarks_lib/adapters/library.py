"""What every adapter declares, whatever it measures (array writer, mesh writer, codec, remote
reader): its name, the library and modules it needs, how to install them, its variants.

These are class variables (data), so the registry, the CLI and the book can show them without
importing the measured library; an adapter imports its library inside its methods.
"""

from __future__ import annotations

from typing import ClassVar

from ..availability import missing_modules, not_installed

#: kinds of adapters, each a namespace of the registry
KINDS = ("array", "mesh", "codec", "remote")


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
    #: how to install it
    install_hint: ClassVar[str]
    #: where the threads knob lives, or None when the library has no such setting
    threads_setting: ClassVar[str | None] = None
    #: True when a thread count is accepted and ignored (a single-threaded baseline such as raw)
    ignores_threads: ClassVar[bool] = False
    #: variants selectable as ``name:option`` (e.g. tensorstore:zarr2)
    options: ClassVar[tuple[str, ...]] = ()
    notes: ClassVar[str] = ""

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


__all__ = ["KINDS", "Library"]
