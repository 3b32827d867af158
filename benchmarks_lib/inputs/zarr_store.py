"""The Zarr v3 store the cache/prefetch chapter reads over HTTP: its name, writing it once and checking
it, the workload's selections and their CRC-32s.

The store holds a seeded dataset (zstd), unsharded or sharded per ``dims``; zarr-python writes it
(:func:`benchmarks_lib.adapters.remote.zarr_http.write_store`), so its availability is that of the
``zarr-python`` array adapter (:data:`WRITER`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import zlib
from pathlib import Path

from benchmarks_lib.base.specs import SpecError, parse_dims
from benchmarks_lib.data.input_formats import ZARR_DATASET, zarr_selections
from benchmarks_lib.inputs import check_free
from benchmarks_lib.records.store import write_atomic

ZARR_LAYOUTS = ("unsharded", "sharded")
#: the array adapter whose library writes the store
WRITER = "zarr-python"


def zarr_store_path(directory: str | Path, dims: str, layout: str, dataset: str = ZARR_DATASET,
                    seed: int = 0) -> Path:
    slug = "".join(c if c.isalnum() else "-" for c in f"{dataset}-{dims}-{layout}-s{seed}")
    return Path(directory) / f"{slug}.zarr"


def store_bytes_bound(dims: str) -> int:
    """An upper bound of a store's size: its array bytes (uint16) plus metadata."""
    spec = parse_dims(dims)
    chunks = math.prod(math.ceil(n / c) for n, c in zip(spec.shape, spec.chunks, strict=True))
    return 2 * math.prod(spec.shape) + 1024 * chunks + 2**20


def _stored_bytes(store: Path) -> int:
    return sum(f.stat().st_size for f in store.rglob("*") if f.is_file() and f.name != ".complete")


def check_zarr_store(target: Path, expected: dict) -> dict | None:
    """The store's record when ``target`` is intact: its record matches ``expected``, the bytes on disk
    are the recorded ones and its array metadata (``zarr.json``) has the recorded shape. None otherwise.

    Cheap on purpose (no zarr import, no data read): it runs before every case; the data were
    checked in full (CRC-32) when written, and every read is checked again.
    """
    try:
        info = json.loads((target / ".complete").read_text())
        meta = json.loads((target / "zarr.json").read_text())
        if any(info.get(k) != v for k, v in expected.items()) or _stored_bytes(target) != info["stored_bytes"]:
            return None
        return info if meta.get("node_type") == "array" and meta.get("shape") == info["shape"] else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def ensure_zarr_store(directory: str | Path, dims: str, layout: str, dataset: str = ZARR_DATASET, *,
                      seed: int = 0) -> Path:
    """The store for these parameters in ``directory``, written once.

    Written under a temporary name, read back whole and compared (CRC-32) with the generated data,
    then renamed into place with its record (``.complete``: shapes, bytes, CRC-32). A store that
    fails :func:`check_zarr_store` is deleted (:func:`benchmarks_lib.base.scratch.remove_tree`, so only
    inside an iobench scratch directory) and written again.
    """
    from benchmarks_lib.base.scratch import remove_tree

    spec = parse_dims(dims)
    if layout not in ZARR_LAYOUTS:
        raise SpecError(f"zarr layout {layout!r} is unknown; allowed: {', '.join(ZARR_LAYOUTS)}")
    shards = spec.shards if layout == "sharded" else None
    if layout == "sharded" and shards is None:
        raise SpecError(f"zarr_dims {dims!r} has no shard sizes (name:size:chunk:shard); sharded layout needs them")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = zarr_store_path(directory, dims, layout, dataset, seed)
    expected = {"dims": dims, "layout": layout, "dataset": dataset, "seed": seed}
    with open(directory / ".zarr.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if check_zarr_store(target, expected) is not None:
            return target
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        for stale in (target, tmp):
            if stale.exists() or stale.is_symlink():
                remove_tree(stale)
        check_free(directory, store_bytes_bound(dims))
        from benchmarks_lib.adapters.remote.zarr_http import write_store
        from benchmarks_lib.data.datasets import Dataset

        try:
            data = Dataset(dataset, spec.shape, seed=seed)
            crc = write_store(tmp, spec, shards, data)
            info = {**expected, "shape": list(spec.shape), "array_bytes": data.nbytes,
                    "stored_bytes": _stored_bytes(tmp), "crc32": crc}
            (tmp / ".complete").write_text(json.dumps(info))
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                remove_tree(tmp)
        if check_zarr_store(target, expected) is None:
            raise OSError(f"zarr store {target} failed its check right after it was written")
    return target


def zarr_store_info(store: str | Path) -> dict:
    """What :func:`ensure_zarr_store` recorded: dims, layout, dataset, shape, array and stored bytes, CRC-32."""
    return json.loads((Path(store) / ".complete").read_text())


def expected_crc32s(store: Path, workload: str, cutout: list[int], cutouts: int) -> list[int]:
    """CRC-32 of each selection of the workload in the written store (read locally with zarr-python).

    The store was checked in full against the generated data when it was written, so these are
    the written data's. Computed once per store and workload, kept next to the store for the run.
    """
    info = zarr_store_info(store)
    if workload == "whole":
        return [info["crc32"]]
    key = zlib.crc32(json.dumps([workload, list(cutout), cutouts]).encode())
    cached = store.with_name(f"{store.name}.crc-{key:08x}.json")
    with contextlib.suppress(OSError, ValueError):
        got = json.loads(cached.read_text())
        if got["stored_bytes"] == info["stored_bytes"] and got["crc32"] == info["crc32"]:
            return got["crc32s"]
    from benchmarks_lib.adapters.remote.zarr_http import read_crc32s

    spec = parse_dims(info["dims"])
    crcs = read_crc32s(store, zarr_selections(spec.shape, spec.chunks, workload, tuple(cutout), cutouts))
    text = json.dumps({"stored_bytes": info["stored_bytes"], "crc32": info["crc32"], "crc32s": crcs})
    write_atomic(cached, lambda f: f.write(text.encode()))
    return crcs


__all__ = ["WRITER", "ZARR_DATASET", "ZARR_LAYOUTS", "check_zarr_store", "ensure_zarr_store", "expected_crc32s",
           "store_bytes_bound", "zarr_selections", "zarr_store_info", "zarr_store_path"]
