"""Making written data durable, the same way for every backend: ``syncfs(2)`` per store.

One ``syncfs`` on the store's filesystem flushes every dirty page of it, whatever the layout:
a store of ten thousand chunk files pays one call, not one fsync per file and per directory
(which would charge many-file layouts a cost the seed benchmarks never paid). It also
flushes other dirty data on that filesystem, which is why a benchmark wants a quiet disk.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def sync_store(path: str | Path) -> None:
    """Flush the filesystem holding ``path`` (a file or a store directory) to the device."""
    p = Path(path)
    fd = os.open(p if p.exists() else p.parent, os.O_RDONLY)
    try:
        if _libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs failed: {os.strerror(err)}", str(p))
    finally:
        os.close(fd)
