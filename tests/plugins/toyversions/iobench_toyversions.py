"""A toy library with releases of its own, and its writer: what ``iobench run --versions`` measures in the tests.

``tests/test_run_versions.py`` builds this module into two wheels of the distribution ``iobench-toyversions``
(versions 1.0 and 2.0, with this writer's entry point) in a local folder that uv installs from, so the tests need no
package index. Its writer is the raw baseline's under a library of its own (an independent reader verifies it); what
a version changes is recorded, not measured differently.
"""

from __future__ import annotations

from importlib import metadata

from benchmarks_lib.adapters.raw import RawAdapter

DISTRIBUTION = "iobench-toyversions"


def version() -> str | None:
    """This library's installed version (None where it runs from a source folder)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


class ToyVersionsWriter(RawAdapter):
    name = "toyv"
    order = 100
    module = "iobench_toyversions"
    distribution = DISTRIBUTION
    install_hint = "tests/test_run_versions.py builds its wheels"
    supported_versions = ">=1,<3"
    notes = "a toy library with releases 1.0 and 2.0 (the tests' --versions)"
