"""What is declared through entry points: adapters (one group per kind, ``adapters.library.ENTRY_POINT_GROUPS``),
suites (``iobench.suites``) and the book's chapters (``iobench.chapters``).

Each entry maps a name to ``module:attr``. The built-ins are declared in this package's ``pyproject.toml``, a third
party's in its own package's, and nothing in this package lists them. Only the metadata is read here; a module is
imported when its object is asked for (:func:`load`).
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

#: the distribution whose entry points are the built-ins (listed before any plug-in)
DISTRIBUTION = "iobench-book"
#: the entry-point groups of the suites (``name = "module:SUITE"``) and chapters (``notebook = "module:CHAPTER"``)
SUITES_GROUP = "iobench.suites"
CHAPTERS_GROUP = "iobench.chapters"


def declared(group: str) -> dict[str, tuple[str, bool]]:
    """name -> (``module:attr``, True when this package declares it) of an entry-point group, as found. A name is the
    built-in's where a plug-in takes it too, else the first distribution's on sys.path."""
    found: dict[str, tuple[str, bool]] = {}
    for ep in entry_points(group=group):
        builtin = ep.dist is not None and ep.dist.name == DISTRIBUTION
        if ep.name not in found or (builtin and not found[ep.name][1]):
            found[ep.name] = (ep.value, builtin)
    return found


def load(target: str) -> object:
    """The object ``module:attr`` names, its module imported; ImportError naming ``target`` when that fails (a third
    party's module may be broken: the caller says so, with the reason)."""
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ImportError:
        raise
    except Exception as exc:
        raise ImportError(f"{target}: {type(exc).__name__}: {exc}") from exc


__all__ = ["CHAPTERS_GROUP", "DISTRIBUTION", "SUITES_GROUP", "declared", "load"]
