"""Small helpers every suite shares: parameter defaults, backend availability, output removal."""

from __future__ import annotations

from pathlib import Path

from ..adapters import backend_status
from ..measure import sync_store
from ..scratch import remove_tree
from ..specs import SpecError

RUN_KEYS = ("iterations", "warmups")


def with_defaults(params: dict, profile: str, profiles: dict[str, dict], suite: str) -> dict:
    """Profile defaults overlaid with the given (non-None) parameters; unknown names are refused."""
    if profile not in profiles:
        raise SpecError(f"profile {profile!r} is unknown; allowed: {', '.join(profiles)}")
    defaults = profiles[profile]
    allowed = set(defaults) | set(RUN_KEYS)
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise SpecError(f"parameter {unknown[0]!r} is unknown for suite {suite!r}; "
                        f"allowed: {', '.join(sorted(allowed))}")
    return {**defaults, **{k: v for k, v in params.items() if v is not None}}


def unavailable_reason(backend: str) -> str | None:
    """Why a registered backend cannot run here (not installed), with the install hint; or None."""
    return backend_status(backend).reason


def remove_output(path: Path) -> None:
    """Remove one output (a file or a store directory) inside a case's marked scratch directory,
    then flush its filesystem: the next timed region starts on a quiet disk instead of paying for
    this output's leftover writeback (after a write without fsync) or its deletion."""
    remove_tree(path)
    sync_store(path.parent)
