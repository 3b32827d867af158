"""Measurement: the one timed region (``timed``/``measure``), a resource sampler, I/O counters, page-cache eviction, disk usage."""

from .cache import EvictionReport, evict_page_cache, resident_bytes
from .disk import DiskUsage, disk_usage, list_files
from .iocounters import IOCounters, read_io_counters
from .probe import Measurement, measure, timed
from .sampler import ResourceSampler

__all__ = [
    "DiskUsage",
    "EvictionReport",
    "IOCounters",
    "Measurement",
    "ResourceSampler",
    "disk_usage",
    "evict_page_cache",
    "list_files",
    "measure",
    "read_io_counters",
    "resident_bytes",
    "timed",
]
