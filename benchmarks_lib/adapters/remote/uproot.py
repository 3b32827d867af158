"""uproot: ``TTree.iterate`` over all branches through one of its sources (fsspec, HTTPSource, the
multithreaded source), with a step in entries or in bytes; and the uproot variant of the sample writer.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from benchmarks_lib.adapters.remote.base import RemoteReader, is_url, timed_read
from benchmarks_lib.base.specs import SpecError
from benchmarks_lib.data.input_formats import ARRAY_LENGTH, ELEMENT_TYPES, TREE_NAME, entry_bytes

#: uproot source name -> class path (uproot.source.*)
SOURCES = {
    "fsspec": "uproot.source.fsspec.FSSpecSource",
    "http": "uproot.source.http.HTTPSource",
    "multithreaded": "uproot.source.http.MultithreadedHTTPSource",
}


class UprootReader(RemoteReader):
    name = "uproot"
    order = 20
    module = "uproot"
    distribution = "uproot"
    install_hint = "pip install uproot  (or the package extra: pip install 'iobench-book[root]')"
    measure_target = "benchmarks_lib.adapters.remote.uproot:measure_read"
    notes = "TTree.iterate(step_size) over every branch; sources: " + ", ".join(SOURCES)

    @classmethod
    def write_sample(cls, path: Path, entries: int, branches: int, auto_flush: int,
                     seed: int) -> tuple[list[float], list[float]]:
        """One basket per branch per ``extend`` (a cluster of ``auto_flush`` entries)."""
        cls.require()
        import numpy as np
        import uproot

        # auto_flush < 0 is bytes per cluster: entries, estimating ~1.2x compression of these random values
        step = auto_flush if auto_flush > 0 else max(1, int(-auto_flush * 1.2 // max(1, entry_bytes(1, branches))))
        step = min(step, entries)
        rng = np.random.default_rng(seed)
        dtypes = {f"b{b}": ELEMENT_TYPES[b % 4][1] for b in range(branches)}
        sums, abs_sums = [0.0] * branches, [0.0] * branches
        with uproot.recreate(path, compression=uproot.ZLIB(1)) as f:
            tree = f.mktree(TREE_NAME, {name: np.dtype((dt, (ARRAY_LENGTH,))) for name, dt in dtypes.items()},
                            title="iobench cache/prefetch sample (seed 004, uproot)",
                            initial_basket_capacity=entries // step + 2)
            for start in range(0, entries, step):
                n = min(step, entries - start)
                shape = (n, ARRAY_LENGTH)
                batch = {}
                for b, (name, dt) in enumerate(dtypes.items()):
                    if dt == "float32":
                        batch[name] = rng.random(shape, dtype=np.float32)
                    elif dt == "float64":
                        batch[name] = rng.standard_normal(shape)
                    elif dt == "int32":
                        batch[name] = rng.integers(0, 1 << 20, shape, dtype=np.int32)
                    else:
                        batch[name] = rng.integers(0, 1000, shape, dtype=np.int16)
                    sums[b] += float(batch[name].sum(dtype=np.float64))
                    abs_sums[b] += float(np.abs(batch[name]).sum(dtype=np.float64))
                tree.extend(batch)
        return sums, abs_sums

    @classmethod
    def sample_shape(cls, path: Path) -> tuple[int, int]:
        import uproot

        with uproot.open(path) as f:
            return int(f[TREE_NAME].num_entries), len(f[TREE_NAME].keys())


def measure_read(location: str, *, source: str = "fsspec", step_size: int | str = "100 MB",
                 num_workers: int = 1, tree: str = TREE_NAME) -> dict:
    """uproot's ``TTree.iterate`` over all branches in this (fresh) process; ``step_size`` in entries
    (int) or bytes (str such as "100 MB": uproot then reads every basket header first). Adds the
    source's request counts and the per-branch sums of what it read."""
    UprootReader.require()
    import uproot

    options: dict = {"num_workers": int(num_workers)}
    if is_url(location):
        if source not in SOURCES:
            raise SpecError(f"uproot source {source!r} is unknown; allowed: {', '.join(SOURCES)}")
        module, _, cls = SOURCES[source].rpartition(".")
        options["handler"] = getattr(importlib.import_module(module), cls)
        if source == "fsspec":  # imported lazily by fsspec on first use: keep it out of the timed read
            importlib.import_module("fsspec.implementations.http")
    state: dict = {}

    import numpy as np

    def read() -> dict:
        f = uproot.open(location, **options)
        t = f[tree]
        names = list(t.keys())
        sums = dict.fromkeys(names, 0.0)
        nbytes = steps = 0
        for arrays in t.iterate(step_size=step_size, library="np"):
            for name, a in arrays.items():
                nbytes += a.nbytes
                sums[name] += float(a.sum(dtype=np.float64))  # checked against the writer's sums
            steps += 1
        state["file"] = f
        return {"nbytes": nbytes, "entries": int(t.num_entries), "branches": len(names), "steps": steps,
                "branch_sums": [sums[n] for n in names]}

    row = timed_read(read)
    f = state["file"]
    src = f.file.source
    row.update(client_requests=int(src.num_requests), client_chunks=int(src.num_requested_chunks),
               client_bytes=int(src.num_requested_bytes), source_class=type(src).__name__)
    f.close()
    return row
