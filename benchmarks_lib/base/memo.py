"""Results that are costly to compute and the same on every run, kept between processes in iobench's cache
(``base.paths.cache_dir``): a small JSON file per kind, keyed by what the result depends on (the computing code's
own digest among it, so that changed code never reads an old result).

A stored value is only a shortcut: the file is read as a regular file of at most :data:`MEMO_MAX_BYTES` (never
through a link), a value that fails the caller's check is computed again, and a cache that cannot be read or written
(a read-only home, a full disk) is passed over without a word. Every process that computes a value adds it; two
processes adding at once may lose one of them, which is computed again later.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks_lib.base.paths import cache_dir
from benchmarks_lib.base.untrusted import RecordError, read_regular_file

#: the most a memo file may hold; and the most keys it keeps (the newest)
MEMO_MAX_BYTES, MEMO_MAX_KEYS = 1 << 20, 500


def _path(kind: str) -> Path:
    return cache_dir() / f"{kind}.json"


def _stored(kind: str) -> dict:
    try:
        found = json.loads(read_regular_file(_path(kind), MEMO_MAX_BYTES, "memo"))
    except (OSError, RecordError, ValueError, RecursionError):
        return {}
    return found if isinstance(found, dict) else {}


def _store(kind: str, key: str, value: object) -> None:
    path = _path(kind)
    with contextlib.suppress(OSError, TypeError, ValueError):
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return  # not ours to replace
        path.parent.mkdir(parents=True, exist_ok=True)
        found = _stored(kind)
        found.pop(key, None)
        kept = dict(list(found.items())[-(MEMO_MAX_KEYS - 1):]) if MEMO_MAX_KEYS > 1 else {}
        text = json.dumps({**kept, key: value})
        if len(text) > MEMO_MAX_BYTES:
            text = json.dumps({key: value})
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{kind}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def memo(kind: str, key: str, compute: Callable[[], object], valid: Callable[[object], bool]) -> object:
    """The value stored under ``key`` in the memo ``kind`` where ``valid`` accepts it, else ``compute()`` (stored
    for the next process)."""
    value = _stored(kind).get(key)
    if value is not None and valid(value):
        return value
    value = compute()
    _store(kind, key, value)
    return value


__all__ = ["MEMO_MAX_BYTES", "MEMO_MAX_KEYS", "memo"]
