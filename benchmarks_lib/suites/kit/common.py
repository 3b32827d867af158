"""Small helpers every suite shares: parameter defaults, backend availability, output removal, the disk a run needs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from benchmarks_lib.adapters import backend_status
from benchmarks_lib.base.scratch import remove_tree
from benchmarks_lib.base.specs import ArraySpec, DimsSpec, SpecError, parse_codec
from benchmarks_lib.measure import sync_store
from benchmarks_lib.measure.ledger import phase
from benchmarks_lib.suites import Case

#: the parameters every suite takes, of the run rather than of its cases: the iterations (a suite in rounds: the cap of
#: rounds), the warm-ups, and the library versions each measured in an environment of its own (``run.versions``)
RUN_KEYS = ("iterations", "warmups", "versions")


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


@phase("teardown")
def remove_output(path: Path) -> None:
    """Remove one output (a file or a store directory) inside a case's marked scratch directory,
    then flush its filesystem: the next timed region starts on a quiet disk instead of paying for
    this output's leftover writeback (after a write without fsync) or its deletion."""
    remove_tree(path)
    sync_store(path.parent)


def preferred_spec(dims: DimsSpec, dtype: str, codecs: str | list[str], adapter=None,
                   operation: str = "write") -> ArraySpec:
    """The array spec with the first codec of the preference list (comma-separated, or a list) that ``adapter``
    can use for ``operation``; with none that fits, the first whose refusal is not about the codec, so that
    the skip row says why."""
    names = codecs.split(",") if isinstance(codecs, str) else list(codecs)
    specs = [ArraySpec(dims, dtype, parse_codec(c)) for c in names]
    if adapter is None:
        return specs[0]
    for spec in specs:
        if adapter.is_incompatible(spec, operation) is None:
            return spec
    return next((s for s in specs if "codec" not in (adapter.is_incompatible(s, operation) or "")), specs[0])


def ceiling_bytes(sizes: Iterable[int]) -> int:
    """Bytes the run's ceiling case moves: the largest case's data, at least 64 MiB, at most 2 GiB."""
    return min(max([64 * 2**20, *sizes]), 2 * 2**30)


def sized_by(case_nbytes: Callable[[Case], int], copies: int = 3) -> dict[str, Callable[[list[Case]], int]]:
    """A suite's ``scratch_bytes`` (``copies`` of its largest case's data at once) and ``ceiling_bytes`` (the
    ceiling on the largest case's data), from the bytes of one case: ``Suite(..., **sized_by(case_nbytes))``."""
    return {"scratch_bytes": lambda cases: copies * max((case_nbytes(c) for c in cases), default=0),
            "ceiling_bytes": lambda cases: ceiling_bytes(case_nbytes(c) for c in cases)}
