"""Measurement: the one timed region (``timed``/``measure``), a resource sampler, I/O counters,
page-cache eviction and its proof, syncfs, disk usage."""

from benchmarks_lib.measure.disk import DiskUsage, disk_usage, list_files
from benchmarks_lib.measure.eviction import EvictionReport, cold_read_state, evict_page_cache, resident_bytes
from benchmarks_lib.measure.iocounters import IOCounters, read_io_counters
from benchmarks_lib.measure.probe import Measurement, measure, timed
from benchmarks_lib.measure.sampler import ResourceSampler
from benchmarks_lib.measure.sync import sync_store

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
