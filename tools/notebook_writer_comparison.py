"""Source of notebooks/writer_comparison.ipynb (run: python tools/notebook_writer_comparison.py)."""

from make_notebook import make_notebook

CELLS = [
    ("md", """
# Writer comparison

Which writer should store my arrays? This chapter measures every available writer on **this
machine** with the same data, chunks and codec: writing a new store per size (seed 000), appending
frames to one store (seeds 000 and 003), reading it back cold and warm, reading small cutouts
(seed 001), and the effect of sharding (seed 001). Every write is read back by a different library
and checked by checksum; every throughput is shown beside this machine's own ceiling, measured in
the same run.

How to read it: bars and lines are medians, whiskers the spread (min-max or sd, as labelled);
"% of ceiling" compares a writer with plain sequential file I/O of the same bytes.
"""),
    ("params", """
# Size profile: "quick" (small, minutes), "standard", or "seed" (the seeds' own sizes, hours).
PROFILE = "quick"
# Where runs are stored: RESULTS_DIR/<machine>/<run-id>/ (parquet records + run.json).
RESULTS_DIR = "results"
# Load an earlier run (its run id or directory) instead of measuring; None measures now.
LOAD_RUN = None
# Name of the run to record (None: writers-<profile>-<timestamp>); an existing run of that name is resumed.
RUN_ID = None
# Every parameter below left as None takes the profile's default (`iobench suites` lists them).
# Writers to compare, e.g. ["raw", "zarr-python", "tensorstore"]; ["all"] = every registered one.
BACKENDS = None
# Tests: any of "write", "append", "read", "sharding".
TESTS = None
# Data for write/append/read: "em_like" (uint8), "labels" (uint32), "microscopy" (uint16), "random" (worst case).
DATASET = None
# Codec: none, lz4, zstd[:level], gzip[:level], blosc-<lz4|zstd|...>[:clevel[:shuffle]], or a preference
# list "a,b,c": each writer uses the first it can write (the summary's "codec" row shows which).
CODEC = None
# Write test base shape and chunks, "name:size[:chunk[:shard]],..."; the first dimension grows by MULTIPLIERS.
DIMS = None
# Multipliers of the first dimension, one new store per value (seed 000), e.g. [1, 2, 4].
MULTIPLIERS = None
# True: the write time includes fsync of every output file (the figure says so).
FSYNC = None
# Append test: total frames, frames generated per step (memory holds one step), repeats.
APPEND_FRAMES = None
APPEND_STEP = None
APPEND_REPEATS = None
# Read test volume ("name:size[:chunk],..."), cutout side per dimension, cutout positions per kind.
READ_DIMS = None
CUTOUT = None
CUTOUT_POSITIONS = None
# Sharding sweep: datasets, cube side, shard side, inner chunk sides (each divides the shard).
SHARD_DATASETS = None
SHARD_VOLUME = None
SHARD = None
INNER_CHUNKS = None
# Measured iterations and discarded warm-ups per point.
ITERATIONS = None
WARMUPS = None
"""),
    ("code", """
from IPython.display import Markdown, display

import benchmarks_lib as ib
from benchmarks_lib import plots

params = {
    "backends": BACKENDS, "tests": TESTS, "dataset": DATASET, "codec": CODEC, "dims": DIMS,
    "multipliers": MULTIPLIERS, "fsync": FSYNC, "append_frames": APPEND_FRAMES, "append_step": APPEND_STEP,
    "append_repeats": APPEND_REPEATS, "read_dims": READ_DIMS, "cutout": CUTOUT, "cutout_positions": CUTOUT_POSITIONS,
    "shard_datasets": SHARD_DATASETS, "shard_volume": SHARD_VOLUME, "shard": SHARD, "inner_chunks": INNER_CHUNKS,
    "iterations": ITERATIONS, "warmups": WARMUPS,
}
result = ib.run_or_load("writers", params, profile=PROFILE, results_dir=RESULTS_DIR, load=LOAD_RUN, run_id=RUN_ID)
df = result.df
env = result.meta["environment"]
display(Markdown(
    f"Run `{result.meta['run_id']}` ({result.meta['profile']} profile) on {env['cpu_model']}, "
    f"{env['cpu_count']} cores, {env['ram_bytes'] / 2**30:.0f} GiB RAM, {env['fs_type']} on {env['fs_device']}; "
    f"parameters: `{result.meta['params']}`."
))
"""),
    ("md", """
## This machine's ceiling

Plain sequential writes (with and without fsync) and a cold read of the same number of bytes, plus
memcpy: nothing a writer does can beat these for long.
"""),
    ("code", """
display(ib.ceiling_table(df))
plots.ceiling_bars(df);
"""),
    ("md", """
## Write test: a new store per size

As seed 000: the first dimension grows by the multipliers; each point is a fresh store. The time
is create + write + finalize (+ fsync when included, as the title says).
"""),
    ("code", "plots.write_gbps_vs_size(df);"),
    ("code", "plots.mean_bars(df);"),
    ("md", """
## Append test: frames streamed into one store

Frames are appended one call at a time; memory holds one generated step. Per-step bandwidth shows
whether a writer slows down as the store grows; the latency distribution shows stalls.
"""),
    ("code", "plots.append_gbps_vs_step(df);"),
    ("code", "plots.frame_latency(df);"),
    ("md", """
## Reads: full (cold and warm) and cutouts

Cold reads start with the store's files evicted from the page cache (fadvise, verified with
mincore); warm reads follow a full untimed read. Cutouts are read cold, aligned to chunks and not.
"""),
    ("code", "plots.read_times(df);"),
    ("md", """
## Sharding sweep

Shards with small inner chunks versus unsharded chunks of the inner size (many files) and of the
shard size (large reads for small cutouts): write, read, cutout time, bytes and inodes.
"""),
    ("code", "plots.sharding_grid(df);"),
    ("md", """
## Memory and threads

Peak RSS growth divided by the bytes written (seed 000's "3:1") and the most threads seen.
"""),
    ("code", "plots.memory_and_threads(df);"),
    ("md", "## Summary"),
    ("code", """
display(ib.writers_summary(df))
bad = ib.failures(df)
if len(bad):
    display(Markdown(f"**Warning: {len(bad)} error row(s): these numbers are missing or failed verification.**"))
    display(bad)
skipped = ib.skips(df)
if len(skipped):
    display(Markdown("Skipped (not installed or not supported):"))
    display(skipped)
"""),
    ("md", "## Conclusion (computed from this run)"),
    ("code", "display(Markdown(ib.writers_conclusion(df)))"),
]

if __name__ == "__main__":
    make_notebook("notebooks/writer_comparison.ipynb", CELLS)
