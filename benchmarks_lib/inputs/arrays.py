"""A synthetic dataset's values, generated once per run: the suites that hand a whole array (or its first rows) to
every backend (object storage, parallel writes, compression, threads) read them back from the run's ``inputs/``
instead of generating them again in each case (the s3 chapter's 268 MB em_like array: about 4 s to generate, 0.3 s
to load and check).

The file is an ``.npy`` beside a JSON holding the xxh3-128 (blake2b without xxhash) of its bytes: a file that does
not match is generated again (and replaced, atomically). A person's file (``user_data.FileDataset``) is read from its
source each time: its own reader accounts for it. All of it is the case's preparation (``phase("prep")``), before
any clock.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks_lib.data.datasets import FAST_CHECKSUM, Dataset, checksum_algorithm
from benchmarks_lib.inputs import check_free, inputs_dir
from benchmarks_lib.measure.ledger import phase
from benchmarks_lib.records.store import write_atomic

#: arrays up to this size are kept for the run (a larger one is generated per case: the disk is the scratch's)
KEEP_LIMIT = 1 << 30


def _digest(data: np.ndarray, algorithm: str | None = None) -> str:
    """The file check: xxh3-128 (``xxh3:`` first; 4 ms for 133 MB, where blake2b took 100 ms in each case that
    loaded it), or blake2b where xxhash is not installed (a library version's own environment)."""
    view = np.ascontiguousarray(data).data
    if (algorithm or FAST_CHECKSUM) == "xxh3":
        from xxhash import xxh3_128

        return "xxh3:" + xxh3_128(view).hexdigest()
    return hashlib.blake2b(view).hexdigest()


def stem_of(prefix: str, key: object) -> str:
    """A kept file's stem: ``prefix`` and the hash of what makes the array (JSON)."""
    return f"{prefix}-{hashlib.sha1(json.dumps(key).encode()).hexdigest()[:16]}"


def kept(directory: Path, stem: str, make: Callable[[], tuple[np.ndarray, dict]]) -> tuple[np.ndarray, dict]:
    """(array, metadata) kept in ``directory`` as ``stem.npy`` beside ``stem.json`` (the array's digest and what
    ``make`` adds, e.g. a checksum that took long to compute): loaded where its bytes match, else ``make()`` and
    saved atomically for the run's next case (no room: not kept, the next case makes it again)."""
    data_path, meta_path = directory / f"{stem}.npy", directory / f"{stem}.json"
    try:
        meta = json.loads(meta_path.read_text())
        algorithm = checksum_algorithm(str(meta.get("digest")))
        if algorithm == "xxh3" != FAST_CHECKSUM:  # kept by the run's own environment: left as it is
            data, extra = make()
            return data, {**extra, "digest": _digest(data)}
        data = np.load(data_path, allow_pickle=False)
        if _digest(data, algorithm) == meta.get("digest"):
            return data, meta
    except (OSError, ValueError):
        pass
    data, extra = make()
    meta = {**extra, "digest": _digest(data)}
    try:
        directory.mkdir(parents=True, exist_ok=True)
        check_free(directory, 2 * data.nbytes)
        write_atomic(data_path, lambda f: np.save(f, data))
        write_atomic(meta_path, lambda f: f.write(json.dumps(meta).encode()))
    except OSError:
        pass
    return data, meta


@phase("prep")
def generated(dataset, index: tuple[slice, ...], case_scratch: Path) -> np.ndarray:
    """``dataset.region(index)``, from the run's inputs where an earlier case generated it (a synthetic dataset
    up to KEEP_LIMIT); otherwise generated, and kept for the run's next case (a case outside a run, whose scratch
    is not in a run's marked scratch directory, keeps nothing)."""
    directory = inputs_dir(case_scratch)
    if not isinstance(dataset, Dataset) or directory.parent == case_scratch:  # a file's data, or no run to keep it for
        return dataset.region(index)
    bounds = [list(sl.indices(n)[:2]) for sl, n in zip(index, dataset.shape, strict=True)]
    if math.prod(b - a for a, b in bounds) * np.dtype(dataset.dtype).itemsize > KEEP_LIMIT:
        return dataset.region(index)
    key = [dataset.name, list(dataset.shape), dataset.seed, str(dataset.dtype), bounds]
    return kept(directory, stem_of("array", key), lambda: (dataset.region(index), {}))[0]


__all__ = ["KEEP_LIMIT", "generated", "kept", "stem_of"]
