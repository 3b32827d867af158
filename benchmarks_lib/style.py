"""The one place the figures' look is set: ``apply_theme()`` (idempotent), called once by ``plots``."""

from __future__ import annotations

import seaborn as sns

_applied = False


def apply_theme() -> None:
    """The seaborn theme of every figure in the book (applied once per process)."""
    global _applied
    if not _applied:
        sns.set_theme(style="whitegrid", context="notebook")
        _applied = True


__all__ = ["apply_theme"]
