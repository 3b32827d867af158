"""The remote-reader contract (kind ``remote``): one small class per client that reads an input over
HTTP or from a local path, for the cache/prefetch chapter.

Lifecycle of a measured read (the suite evicts the input and resets the server before it)::

    reader = adapter_class("uproot", "remote")
    metrics = reader.read(location, timeout_s=600, **settings)   # one fresh Python process

``read`` runs ``measure_target`` (``module:function``) in a fresh process through
:func:`benchmarks_lib.measure.fresh.call`, so that a library's global state (ROOT's gEnv, caches,
event loops) never leaks from one configuration to the next and the RSS baseline is the reader's
own; a case that reads in rounds passes ``forks`` (:meth:`RemoteReader.forks`): each read is then a process forked
from a server that imported the library once (:meth:`RemoteReader.preload`), still one process per read.
The function times exactly one region with :func:`timed_read` and returns a JSON dict: the
timed region's row (``elapsed_s``, ``cpu_s``, ``io_read_bytes``...), ``rss_baseline_bytes`` and
``rss_after_bytes`` of the fresh process, ``nbytes`` (bytes of data returned), what the reader
needs to be verified (``branch_sums``, or ``verified`` itself), and its own counters.

A reader that also writes the input it reads (ROOT and uproot write the TTree sample file)
implements :meth:`RemoteReader.write_sample` and :meth:`RemoteReader.sample_shape`. Availability,
versions and install hints are the :class:`Library` data, as for every adapter; the library is
imported only inside the measured function, in the fresh process.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from benchmarks_lib.adapters.library import Library
from benchmarks_lib.base.availability import Unavailable
from benchmarks_lib.measure import fresh

#: the key under which the fresh process hands its timed region's interval (ns, CLOCK_MONOTONIC) to the case
TIMED_SPAN = "_timed_span_ns"


def is_url(location: str | os.PathLike) -> bool:
    return str(location).startswith(("http://", "https://"))


def timed_read(read: Callable[[], dict]) -> dict:
    """``read()`` as one timed region (:func:`benchmarks_lib.measure.measure`): its row, the RSS of the
    fresh process before and after, and the dict ``read()`` returns."""
    from benchmarks_lib.measure import measure
    from benchmarks_lib.measure.ledger import LEDGER
    from benchmarks_lib.measure.sampler import current_rss_and_threads

    baseline, _ = current_rss_and_threads()
    result = measure(read)
    after, _ = current_rss_and_threads()
    span = list(LEDGER.intervals[-1]) if LEDGER.intervals else None  # CLOCK_MONOTONIC: the parent's clock too
    return {**result.as_row(), "rss_baseline_bytes": baseline, "rss_after_bytes": after, **result.value,
            TIMED_SPAN: span}


def preload(reader: str) -> None:
    """In a fork server: ``reader``'s :meth:`RemoteReader.preload`."""
    from benchmarks_lib.adapters import adapter_class

    adapter_class(reader, "remote").preload()


class RemoteReader(Library):
    """A reader measured by the cache/prefetch chapter; see :class:`Library` for what it declares."""

    kind = "remote"
    #: ``module:function`` that measures one read in the fresh process (keyword arguments: ``location``
    #: and the reader's settings; returns the metrics dict described above)
    measure_target: ClassVar[str]

    @classmethod
    def require(cls) -> None:
        """Raise :class:`Unavailable` (with the install hint) when the library is missing here."""
        reason = cls.missing_reason()
        if reason:
            raise Unavailable(reason)

    @classmethod
    def preload(cls) -> None:
        """What a fork server (:meth:`forks`) does once, so that each read forked from it starts past it: the
        library's modules imported. Nothing started: a thread (zarr's event loop, a pool) would not be in the
        forked processes, whose library would wait on it."""
        for module in (cls.module, *getattr(cls, "warm_up_modules", ())):
            importlib.import_module(module)

    @classmethod
    def forks(cls, environ: dict[str, str] | None = None) -> contextlib.AbstractContextManager[fresh.Forks]:
        """A fork server for this reader's reads (:class:`benchmarks_lib.measure.fresh.Forks`), as a context
        manager: without ``environ``, the one this process shares (``fresh.shared_forks``: the cases of a worker
        that read with this reader fork from one server; it stops when the process exits); with ``environ`` (the
        environment of each read's process, as :meth:`read`'s: an S3 server's credentials), a server of its own,
        stopped on exit."""
        preload = (f"{__name__}:preload", {"reader": cls.name})
        if not environ:
            return contextlib.nullcontext(fresh.shared_forks(cls.measure_target, preload=preload))
        return fresh.Forks(cls.measure_target, preload=preload, base_env=environ)

    @classmethod
    def read(cls, location: str | Path, *, timeout_s: float | None = None, environ: dict[str, str] | None = None,
             forks: fresh.Forks | None = None, **settings: object) -> dict:
        """One measured read of ``location`` (a path, an http(s) or s3 URL) in a fresh process whose environment
        is ``environ`` (default: this process's; for S3, the AWS variables of the server it reads): its metrics.
        With ``forks`` (this reader's :meth:`forks`, made with the same ``environ``), the process is forked from it."""
        from benchmarks_lib.measure.ledger import LEDGER

        kwargs = {"location": str(location), **settings}
        metrics = forks.call(kwargs, timeout_s=timeout_s) if forks is not None else \
            fresh.call(cls.measure_target, kwargs, timeout_s=timeout_s, base_env=environ)
        span = metrics.pop(TIMED_SPAN, None) if isinstance(metrics, dict) else None
        if isinstance(span, list) and len(span) == 2:  # the fresh process's timed region is the case's
            LEDGER.add_timed(int(span[0]), int(span[1]))
        return metrics

    @classmethod
    def write_sample(cls, path: Path, entries: int, branches: int, auto_flush: int,
                     seed: int) -> tuple[list[float], list[float]]:
        """Write the TTree sample file (:mod:`benchmarks_lib.data.input_formats` describes it); returns
        the per-branch sums of the values written and of their magnitudes."""
        raise NotImplementedError(f"{cls.name} does not write sample files")

    @classmethod
    def sample_shape(cls, path: Path) -> tuple[int, int]:
        """(entries, branches) of the sample tree in ``path``, read back with this library."""
        raise NotImplementedError(f"{cls.name} does not read sample files back")


__all__ = ["RemoteReader", "is_url", "preload", "timed_read"]
