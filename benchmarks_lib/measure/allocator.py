"""The memory allocator a case runs with: the same stated glibc malloc configuration in every worker, and
the heap settled at the start of every case.

A writer's speed can depend on its process's allocator history. glibc's defaults adapt to it: the mmap
threshold rises to the size of the largest block freed so far (so a process that once freed a 100 MB buffer
serves the next one from its heap, already mapped, while a fresh process maps new pages and pays their page
faults), and the top of the heap is returned to the system once 128 KiB of it is free (so a later
allocation faults its pages in again). A frame buffer a writer allocates per stream then costs page faults
in one worker and not in another. Fixing these parameters (``MALLOC_ENV``, set in the worker's environment
when it is spawned; never in this process) turns the adaptation off, and :func:`settle_heap` (a garbage
collection, then ``malloc_trim(0)``) gives every case, in a fresh worker or a reused one, a heap without
free memory held from an earlier case; each case's warm-up iterations then bring it to its steady state.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os

#: glibc malloc parameters of every worker (bytes): large blocks (at least 32 MiB, glibc's largest mmap
#: threshold on 64-bit) are always mapped and unmapped (the threshold no longer follows what was freed); the
#: heap keeps up to 256 MiB of free memory at its top instead of 128 KiB, and grows by 16 MiB at a time
MALLOC_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(256 * 2**20),
    "MALLOC_TOP_PAD_": str(16 * 2**20),
}


def settle_heap() -> bool:
    """Collect garbage, then return the heap's free memory to the system (glibc ``malloc_trim(0)``);
    False where there is no glibc."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        return bool(ctypes.CDLL(None).malloc_trim(0)) or True
    return False


def allocator_state() -> dict:
    """What run.json records about the allocator (``MALLOC_ENV`` as the workers get it, and what each case
    does first); the glibc version where there is one."""
    libc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else None
    return {"libc": libc, "malloc_env": dict(MALLOC_ENV),
            "at_case_start": "gc.collect(); malloc_trim(0); peak RSS reset (clear_refs 5)"}
