"""Measurement: the one timed region (``timed``/``measure``), a resource sampler, I/O counters,
page-cache eviction and its proof, syncfs, disk usage."""

from .cache import EvictionReport, cold_read_state, evict_page_cache, resident_bytes
from .disk import DiskUsage, disk_usage, list_files
from .iocounters import IOCounters, read_io_counters
from .probe import Measurement, measure, timed
from .sampler import ResourceSampler
from .sync import sync_store

__all__ = [
    "DiskUsage",
    "EvictionReport",
    "IOCounters",
    "Measurement",
    "ResourceSampler",
    "cold_read_state",
    "disk_usage",
    "evict_page_cache",
    "list_files",
    "measure",
    "read_io_counters",
    "resident_bytes",
    "sync_store",
    "timed",
]
