"""Is a library or program here? The one place that answers, with the install hint to show.

Adapters declare the modules they need (``Library.requires``); the registry asks this module,
so listing what is available never imports a measured library. Programs (nginx, fio) are found
on PATH or in the sbin directories.
"""

from __future__ import annotations

import importlib.util
import shutil
from importlib import metadata


class Unavailable(RuntimeError):
    """A library or program a measurement needs is missing; the message carries the install hint."""


def missing_modules(modules: tuple[str, ...] | list[str]) -> list[str]:
    """The modules of ``modules`` that cannot be imported here (checked without importing them)."""
    out = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a missing parent package of a dotted name
            found = False
        if not found:
            out.append(module)
    return out


def distribution_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def find_program(name: str) -> str | None:
    """An executable on PATH, or in /usr/sbin and /usr/local/sbin (not on a user's PATH)."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")


def not_installed(what: str, install_hint: str) -> str:
    """The one wording of "missing": ``<what> is not installed; install: <hint>``."""
    return f"{what} is not installed; install: {install_hint}"


__all__ = ["Unavailable", "distribution_version", "find_program", "missing_modules", "not_installed"]
