"""A toy writer from a package of its own: what a third party's plug-in is.

Its ``pyproject.toml`` declares it in the ``iobench.adapters`` entry-point group; nothing under
``benchmarks_lib`` names it. It is zarr-python under a name and distribution of its own, so it
declares (by inheritance) a ``threads_setting``, compressed unsharded Zarr v3 chunks and a reader:
the threads and compression suites take it, and another library (not zarr-python nor its
subclass zarrs: tensorstore) verifies what it writes.
"""

from __future__ import annotations

from benchmarks_lib.adapters.zarr_python import ZarrPythonAdapter


class ToyWriter(ZarrPythonAdapter):
    name = "toy"
    distribution = "iobench-toywriter"
    install_hint = "pip install tests/plugins/toywriter"
    notes = "a plug-in from its own package: zarr-python under another name"
