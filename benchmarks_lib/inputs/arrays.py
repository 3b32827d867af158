"""A synthetic dataset's values, generated once per run: the suites that hand a whole array (or its first rows) to
every backend (object storage, parallel writes, compression, threads) read them back from the run's ``inputs/``
instead of generating them again in each case (the s3 chapter's 268 MB em_like array: about 4 s to generate, 0.3 s
to load and check).

The file is an ``.npy`` beside a JSON holding the blake2b of its bytes: a file that does not match is generated
again (and replaced, atomically). A person's file (``user_data.FileDataset``) is read from its source each time:
its own reader accounts for it. All of it is the case's preparation (``phase("prep")``), before any clock.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np

from ..datasets import Dataset
from ..measure.ledger import phase
from ..records import write_atomic
from . import check_free, inputs_dir

#: arrays up to this size are kept for the run (a larger one is generated per case: the disk is the scratch's)
KEEP_LIMIT = 1 << 30


def _digest(data: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(data).data).hexdigest()


@phase("prep")
def generated(dataset, index: tuple[slice, ...], case_scratch: Path) -> np.ndarray:
    """``dataset.region(index)``, from the run's inputs where an earlier case generated it (a synthetic dataset
    up to KEEP_LIMIT); otherwise generated, and kept for the run's next case (a case outside a run, whose scratch
    is not in a run's marked scratch directory, keeps nothing)."""
    directory = inputs_dir(case_scratch)
    if not isinstance(dataset, Dataset) or directory.parent == case_scratch:  # a file's data, or no run to keep it for
        return dataset.region(index)
    bounds = [list(sl.indices(n)[:2]) for sl, n in zip(index, dataset.shape, strict=True)]
    nbytes = math.prod(b - a for a, b in bounds) * np.dtype(dataset.dtype).itemsize
    if nbytes > KEEP_LIMIT:
        return dataset.region(index)
    key = json.dumps([dataset.name, list(dataset.shape), dataset.seed, str(dataset.dtype), bounds])
    stem = directory / f"array-{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    data_path, meta_path = stem.with_suffix(".npy"), stem.with_suffix(".json")
    try:
        data = np.load(data_path, allow_pickle=False)
        if _digest(data) == json.loads(meta_path.read_text()).get("digest"):
            return data
    except (OSError, ValueError):
        pass
    data = dataset.region(index)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        check_free(directory, 2 * nbytes)
        write_atomic(data_path, lambda f: np.save(f, data))
        write_atomic(meta_path, lambda f: f.write(json.dumps({"digest": _digest(data), "key": key}).encode()))
    except OSError:  # no room to keep it: the next case generates it again
        pass
    return data


__all__ = ["KEEP_LIMIT", "generated"]
