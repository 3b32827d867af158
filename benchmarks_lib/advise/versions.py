"""Is the recommended library's version on this machine the slow one? Where the run the advice rests on measured
the recommended writer at more than one version (``iobench run --versions``), the version installed here against
the others, by the rule of the Upgrades chapter (:mod:`benchmarks_lib.rules.upgrades`: each version against the
newest), on the workload's own rows (its operation, dtype, fsync policy or cutout).

Lines are plain text holding record strings (``terminal.visible``), as the rest of ``advise``'s.
"""

from __future__ import annotations

from benchmarks_lib.advise.evidence import Evidence, Workload, matching_rows
from benchmarks_lib.base.terminal import visible
from benchmarks_lib.rules.upgrades import Change, changes


def installed_version(backend: str) -> str | None:
    """The version of ``backend``'s library on this machine (None where it is not installed or not an adapter)."""
    from benchmarks_lib.adapters import backend_status
    from benchmarks_lib.base.specs import SpecError

    try:
        return backend_status(backend).version
    except SpecError:
        return None


def slower_here(evidence: Evidence, workload: Workload, installed: str | None) -> list[Change]:
    """The measured changes in which ``installed`` (the recommended writer's version here) is separably slower than
    another measured version: installed as the newest and an older one faster, or installed older than the newest
    and the newest faster."""
    if installed is None:
        return []
    backend = str(evidence.ranking.leader.rows["backend"].iloc[0])
    rows = matching_rows(evidence.run_rows, workload)
    found = [c for c in changes(rows[rows["backend"] == backend]) if c.ratio.separable and not c.ratio.equivalent]
    return ([c for c in found if c.newest == installed and c.ratio.ratio < 1]
            + [c for c in found if c.version == installed and c.ratio.ratio > 1])


def version_lines(evidence: Evidence, workload: Workload) -> list[str]:
    """``Version: zarr-python 3.1.6 (installed here) is 1.80x slower than 2.18.7 for cold cutouts [1.60x, 2.00x]
    ...``, one line per such change; nothing where the installed version is not separably slower than another."""
    backend = str(evidence.ranking.leader.rows["backend"].iloc[0])
    installed = installed_version(backend)
    lines = []
    for c in slower_here(evidence, workload, installed):
        factor, lo, hi, _ = c.factor()
        faster = c.version if c.newest == installed else c.newest
        lines.append(f"Version: {visible(c.library)} {visible(installed)} (installed here) is {factor:.2f}x slower "
                     f"than {visible(faster)} for {visible(c.what)} [{lo:.2f}x, {hi:.2f}x] in run "
                     f"{visible(evidence.run_id)}{c.formats_text(visible)}; the Upgrades chapter compares every "
                     "version measured")
    return lines


__all__ = ["installed_version", "slower_here", "version_lines"]
