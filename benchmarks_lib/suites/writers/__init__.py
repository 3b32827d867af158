"""The writer comparison: write, append, full/cutout read and sharding, per backend.

One case is one (backend, test); inside it the sizes or layouts are swept, each with
warm-ups and iterations. A write is ONE timed region (``measure.timed``) from the first
``write``/``append`` call to the end of ``finalize``, so a writer's background threads cannot
work off the clock; data is generated and hashed before it, and nothing is generated, hashed
or deleted inside it. Every measured write is read back by a different library where one exists
and compared with what was written: whole (checksum) for a point's first; a later one whose files are byte for
byte the first's holds the same array and is verified by their digest, any other is read back whole
(``verified_scope``: ``full`` or ``identical``).

Tests (seeds 000, 001, 003):
- ``write``: a new store per size; the first dimension grows by ``multipliers``. Rows:
  ``create``; ``write`` and ``finalize``, the two consecutive parts of the one region (split
  where ``finalize`` is called); ``fsync`` (one ``syncfs`` per store, when ``fsync`` is true);
  ``total`` = create + region (+ fsync), as its ``total_includes`` column says. Per-call
  latencies are columns (``write_call_p50_s``...), never summed into a time.
- ``append``: one store, frames appended one call at a time until ``append_frames``; one
  region from the first append to the end of finalize (and syncfs when ``fsync``); per-frame
  latency, per-step wall time (laps of the region), sustained fps, peak-memory ratio.
- ``read``: full read cold (page cache evicted and proven: ``cache_state`` is ``cold`` or
  ``cold_unverified``; every cache dropped once per store, then its files only: ``eviction``) and warm,
  each one timed region; cutouts of each side in ``cutout`` (one side, or a list: 32 and 64 in quick and standard),
  aligned to chunks and unaligned, one of each kind and side a round at the round's position (``cutout_positions``
  of each kind, in turn); each row records its side (``cutout``).
- ``sharding``: a cube with shards of ``shard`` and inner chunks ``inner_chunks`` versus
  unsharded chunks of the inner size and of the shard size: write, read, cutout (of the first side in ``cutout``),
  bytes, inodes.

The plan only; its machinery lives beside it: ``blocks`` (the data, made before any clock),
``timed_io`` (the timed regions and their rows), ``verification``, ``cutouts`` (positions), ``writers_sizes``
(bytes per case, scratch and ceiling sizes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from benchmarks_lib.adapters import backend_status, expand_backends, make_adapter
from benchmarks_lib.adapters.base import Adapter
from benchmarks_lib.base.specs import (
    ArraySpec,
    Dim,
    DimsSpec,
    SpecError,
    parse_bool,
    parse_codecs,
    parse_count,
    parse_dims,
    parse_int_list,
    parse_names,
)
from benchmarks_lib.data.datasets import Dataset, same_array
from benchmarks_lib.inputs import inputs_dir
from benchmarks_lib.inputs.user_data import FileDataset, parse_dataset, parse_datasets, sources_param
from benchmarks_lib.measure import disk_usage
from benchmarks_lib.measure.eviction import StoreEvictions
from benchmarks_lib.records.durability import durability_columns
from benchmarks_lib.records.questions import equals_keys, question_groups
from benchmarks_lib.suites import Case, CaseContext, Rounds, Suite
from benchmarks_lib.suites.kit.blocks import BlockSource, block_step
from benchmarks_lib.suites.kit.common import preferred_spec, remove_output, unavailable_reason, with_defaults
from benchmarks_lib.suites.kit.cutouts import MIN_CUTOUT_POSITIONS, plan_cutouts
from benchmarks_lib.suites.kit.in_rounds import Point, in_rounds, whole_case
from benchmarks_lib.suites.kit.own_data import case_dataset, fit_crops, refuse_small, refuse_unwritable
from benchmarks_lib.suites.kit.timed_io import (
    append_store,
    latency_columns,
    phase_rows,
    timed_read,
    write_store,
)
from benchmarks_lib.suites.kit.verification import Proven, verify, verify_rows
from benchmarks_lib.suites.writers.sizes import ceiling_bytes, scratch_bytes, shard_layouts, work_bytes

TESTS = ("write", "append", "read", "sharding")
#: the sharding sweep writes and reads each layout whole every this many rounds (its cutouts: every round)
SWEEP_EVERY = 4

#: seed 000 used "LZ4"; each writer takes the first of these it can write (the row records which)
LZ4_FAMILY = "blosc-lz4:5:shuffle,lz4,blosc-lz4:5:bitshuffle"

#: the quick profile's writers: the raw baseline and each engine once (ome-writers wraps these engines: standard)
QUICK_BACKENDS = ["raw", "zarr-python", "zarrs", "tensorstore", "acquire-zarr", "wkw", "h5py"]
#: the quick profile's sharding sweep: the baseline and the two most used sharded engines (the other writers' sweeps
#: cost 4 s of a 5 s round here, and left the quick book's share before the first look: standard's); None: every
#: writer of ``backends``
QUICK_SHARDING = ["raw", "zarr-python", "tensorstore"]

PROFILES = {
    # quick: measured in rounds (``run.rounds``: at least 8, at most 40, each question stopped once answered, the
    # whole run within the profile's time), each point one of the standard profile's cases (the same shape, chunks,
    # codec, data and flush: a quick run compares with the standard reference): its smallest write (multiplier 1,
    # 133 MB), its read volume (67 MB) and its sharding layouts of the labels cube; appends are 16 frames (standard:
    # 64), one append of the whole stream per round.
    # The data of writes, appends and reads is uint16 microscopy frames (the commonest microscopy dtype; the seeds'
    # em_like uint8 until 2026-11-27), at the bytes the uint8 shapes had (half the frames, half the read volume's
    # depth), so a round costs what it did; the read test cuts cutouts of 32^3 and 64^3 (two more cold cutouts per
    # writer a round), the sharding sweep of 32^3.
    # A representative set of writers (the baseline, each engine once; the other ome-writers backends wrap the
    # same engines and are in standard). Warm reads and cutouts are latencies by nature.
    "quick": {
        "backends": QUICK_BACKENDS, "tests": list(TESTS), "dataset": "microscopy", "codec": LZ4_FAMILY,
        "dims": "t:32,y:1080:540,x:1920", "multipliers": [1], "fsync": True,
        "append_frames": 16, "append_step": 8,
        "read_dims": "z:128:64,y:512:64,x:512:64", "cutout": [32, 64], "cutout_positions": 8,
        "shard_datasets": ["labels"], "shard_volume": 256, "shard": 128, "inner_chunks": [32],
        "sharding_writers": QUICK_SHARDING, "seed": 0, "warmups": 1, "pool_mib": 32,
    },
    # standard: every writer; 64^3 inner chunks (110 s of 452 s on 2026-11-26) are the seed's, or ``inner_chunks``
    "standard": {
        "backends": ["all"], "tests": list(TESTS), "dataset": "microscopy", "codec": LZ4_FAMILY,
        "dims": "t:32,y:1080:540,x:1920", "multipliers": [1, 2], "fsync": True,
        "append_frames": 64, "append_step": 32,
        "read_dims": "z:128:64,y:512:64,x:512:64", "cutout": [32, 64], "cutout_positions": 8,
        "shard_datasets": ["labels"], "shard_volume": 256, "shard": 128, "inner_chunks": [32],
        "sharding_writers": None, "seed": 0, "warmups": 1, "pool_mib": 512,
    },
    "seed": {
        "backends": ["all"], "tests": list(TESTS), "dataset": "em_like", "codec": LZ4_FAMILY,
        "dims": "t:64,y:1080:540,x:1920", "multipliers": [1, 5, 10, 15, 20, 25, 30, 35], "fsync": True,
        "append_frames": 24000, "append_step": 64,
        "read_dims": "z:1024:512,y:1024:512,x:1024:512", "cutout": 32, "cutout_positions": 8,
        "shard_datasets": ["em_like", "labels"], "shard_volume": 1024, "shard": 512, "inner_chunks": [32, 64, 128],
        "sharding_writers": None, "seed": 0, "warmups": 1, "pool_mib": 512,
    },
}


# -- parameters --------------------------------------------------------------------------
def build_cases(params: dict, profile: str) -> list[Case]:
    """Validate the parameters (SpecError before any work): one case per (test, backend)."""
    params = with_defaults(params, profile, PROFILES, "writers")
    tests = parse_names(params["tests"], "tests", TESTS)
    dataset, source = parse_dataset(params["dataset"])
    shard_choices = parse_datasets(params["shard_datasets"], "shard_datasets")
    codecs = parse_codecs(params["codec"], "codec")
    if not codecs:
        raise SpecError("codec is empty; give at least one, e.g. blosc-lz4:5:shuffle, lz4, zstd:3")
    codec = ",".join(codecs)
    dims = parse_dims(params["dims"])
    read_dims = parse_dims(params["read_dims"], "read_dims")
    if len(read_dims.dims) < 2 or len(dims.dims) < 2:
        raise SpecError("dims and read_dims need at least 2 dimensions")
    multipliers = parse_int_list(params["multipliers"], "multipliers", maximum=10_000)
    n = {key: parse_count(params[key], key, maximum=10**7) for key in
         ("append_frames", "append_step", "cutout_positions", "shard_volume", "shard", "pool_mib")}
    cutouts = parse_int_list(params["cutout"], "cutout", maximum=10**7)
    if len(set(cutouts)) != len(cutouts):
        raise SpecError(f"cutout {list(cutouts)} repeats a side; give each side once, e.g. [32, 64]")
    n["cutout"] = cutouts[0] if len(cutouts) == 1 else list(cutouts)  # one side: the parameter as it always was
    inner = parse_int_list(params["inner_chunks"], "inner_chunks")
    if n["shard"] > n["shard_volume"] or n["shard_volume"] % n["shard"]:
        raise SpecError(f"shard {n['shard']} must divide shard_volume {n['shard_volume']}")
    for c in inner:
        if n["shard"] % c:
            raise SpecError(f"inner chunk {c} does not divide shard {n['shard']}")
    fsync = parse_bool(params["fsync"], "fsync")
    seed = parse_count(params["seed"], "seed", minimum=0, maximum=2**32 - 1)
    named = parse_names(params["backends"], "backends")
    backends = expand_backends(named)
    sharded = params.get("sharding_writers")
    sharded = None if sharded is None else set(expand_backends(parse_names(sharded, "sharding_writers")))
    if source is not None:  # a person's own data: the crops the dims measure, in the tests that measure them
        dims, read_dims = fit_crops(source, named, dims=(dims, bool({"write", "append"} & set(tests))),
                                    read_dims=(read_dims, "read" in tests))
    if "sharding" in tests:
        for _, spec in shard_choices:
            refuse_small(spec, n["shard_volume"])
            refuse_unwritable(spec, named, 3)
    common = {"codec": codec, "seed": seed, "fsync": fsync, "pool_bytes": n["pool_mib"] * 2**20}
    if sources := sources_param([source, *(spec for _, spec in shard_choices)]):
        common["sources"] = sources
    cases = []
    for test in tests:
        for backend in backends:
            if test == "sharding" and sharded is not None and backend not in sharded:
                continue
            p = {"test": test, **common}
            if test == "write":
                p.update(dataset=dataset, dims=str(dims), multipliers=list(multipliers))
            elif test == "append":
                p.update(dataset=dataset, dims=str(dims), append_frames=n["append_frames"],
                         append_step=n["append_step"])
            elif test == "read":
                p.update(dataset=dataset, dims=str(read_dims), cutout=n["cutout"],
                         cutout_positions=n["cutout_positions"])
            else:
                p.update(datasets=[name for name, _ in shard_choices], shard_volume=n["shard_volume"], shard=n["shard"],
                         inner_chunks=list(inner), cutout=cutouts[0], cutout_positions=n["cutout_positions"])
            cases.append(Case("writers", backend, p))
    return cases


# -- helpers ------------------------------------------------------------------------------
def _skip(reason: str, **extra) -> list[dict]:
    return [{"operation": extra.pop("operation", "case"), "status": "skip", "reason": reason, **extra}]


def _codec_used(adapter: Adapter, spec: ArraySpec) -> str:
    return str(spec.codec) if adapter.applies_codec else "none"


def _disk_columns(path: Path) -> dict:
    """What a store occupies on disk (allocated bytes, inodes), measured untimed after it is written."""
    usage = disk_usage(path)
    return {"bytes_on_disk": usage.allocated_bytes, "inodes": usage.inodes}


def _same_blocks(blocks: list, source: BlockSource) -> bool:
    """A full read (blocks of the source's step) is exactly the source's blocks, compared in memory (no hashing)."""
    expected = list(source)
    return len(blocks) == len(expected) and all(same_array(b, e) for b, (_, e) in zip(blocks, expected, strict=True))


# -- tests: each a set-up of points (``kit.in_rounds``), measured once per round ----------------------------------
def write_points(case: Case, ctx: CaseContext) -> Iterator[Point | list[dict]]:
    p = case.params
    base = parse_dims(p["dims"])
    for m in p["multipliers"]:
        dims = base.with_size(0, base.shape[0] * m)
        dataset, data = case_dataset(p, p["dataset"], dims.shape)
        adapter = make_adapter(case.backend)
        spec = preferred_spec(dims, dataset.dtype, p["codec"], adapter)
        extra = {"test": "write", "multiplier": m, "shape": list(dims.shape), "chunks": list(dims.chunks),
                 **data, "codec": _codec_used(adapter, spec)}
        if reason := adapter.is_incompatible(spec, "write"):
            yield _skip(reason, operation="total", **extra)
            continue
        step = block_step(dims, dataset.dtype, adapter.write_alignment(spec), p["pool_bytes"])
        source = BlockSource(dataset, step, p["pool_bytes"]).prepare(inputs_dir(ctx.scratch))
        extra["data_tiled"] = source.tiled
        for w in range(ctx.warmups):
            write_store(make_adapter(case.backend), ctx.scratch / f"store-{m}-warmup-{w}", spec, source, p["fsync"])
            remove_output(ctx.scratch / f"store-{m}-warmup-{w}")

        def measure(r: int, m=m, spec=spec, source=source, step=step, extra=extra, nbytes=dataset.nbytes,
                    proven=Proven()) -> list:  # noqa: B008 - one per point, made as the point is
            path = ctx.scratch / f"store-{m}-{r}"
            adapter = make_adapter(case.backend)
            phases = write_store(adapter, path, spec, source, p["fsync"])
            it_rows = phase_rows(phases, r, nbytes, p["fsync"], {**extra, **_disk_columns(path)}, adapter.fsyncs)
            check = verify(path, spec, adapter, source.checksum, step, source=source, scope="identical",
                           proven=proven)
            remove_output(path)
            return verify_rows(check, it_rows, extra)

        yield Point(measure)


def append_points(case: Case, ctx: CaseContext) -> Iterator[Point | list[dict]]:
    p = case.params
    base = parse_dims(p["dims"])
    frames, step = p["append_frames"], p["append_step"]
    dims = DimsSpec((Dim(base.dims[0].name, frames, 1), *base.dims[1:]))
    dataset, data = case_dataset(p, p["dataset"], dims.shape)
    probe = make_adapter(case.backend)
    spec = preferred_spec(dims, dataset.dtype, p["codec"], probe, "append")
    extra = {"test": "append", "shape": list(dims.shape), "chunks": list(dims.chunks), **data,
             "codec": _codec_used(probe, spec)}
    if reason := probe.is_incompatible(spec, "append"):
        yield _skip(reason, operation="append_total", **extra)
        return
    if probe.write_alignment(spec) > 1:
        yield _skip(f"{probe.name} writes whole files of {probe.write_alignment(spec)} frames with this codec, "
                    "not single frames", operation="append_total", **extra)
        return
    frame_bytes = dataset.nbytes // frames
    source = BlockSource(dataset, step, p["pool_bytes"]).prepare(inputs_dir(ctx.scratch))
    extra["data_tiled"] = source.tiled
    for w in range(ctx.warmups):  # untimed: first-call costs (imports, pools) stay out of the frames
        warm = make_adapter(case.backend)
        warm.create(ctx.scratch / f"append-warmup-{w}", spec, append=True)
        _, block = next(iter(source))
        for f in range(block.shape[0]):
            warm.append(block[f:f + 1])
        warm.finalize()
        remove_output(ctx.scratch / f"append-warmup-{w}")

    proven = Proven()

    def measure(r: int) -> list[dict]:
        path = ctx.scratch / f"append-{r}"
        adapter = make_adapter(case.backend)
        timing = append_store(adapter, path, spec, source, p["fsync"])
        region, fin, sync_s = timing["region"], timing["finalize_s"], timing["sync_s"]
        common = {"iteration": r, **extra}
        part = durability_columns(p["fsync"], adapter.fsyncs, "writer")  # our syncfs ends the region, after these
        rows: list[dict] = []
        for n, elapsed in enumerate(timing["frames"]):
            rows.append({"operation": "append_frame", "frame": n, "elapsed_s": elapsed, "nbytes": frame_bytes,
                         **part, **common})
        for k, (elapsed, nbytes) in enumerate(timing["steps"]):
            rows.append({"operation": "append_step", "step": k, "elapsed_s": elapsed, "nbytes": nbytes,
                         **part, **common})
        total_row = {**region.as_row(), "operation": "append_total", "nbytes": dataset.nbytes,
                     "create_s": timing["create_s"], "finalize_s": fin, "sync_s": sync_s,
                     "total_includes": "append+finalize" + ("+syncfs" if p["fsync"] else ""),
                     **latency_columns("frame", timing["frames"]), "fps": frames / region.elapsed_s,
                     **durability_columns(p["fsync"], adapter.fsyncs), **common}
        total_row.update(_disk_columns(path))
        check = verify(path, spec, adapter, source.checksum, step, source=source, scope="identical", proven=proven)
        remove_output(path)
        return rows + verify_rows(check, [total_row], extra, "append_total")

    yield Point(measure)


def _read_point(case: Case, ctx: CaseContext, name: str, dims: DimsSpec, dataset: Dataset | FileDataset, codec: str,
                extra: dict, cutouts: list[int], positions: int, fsync: bool, pool_bytes: int,
                every: int = 0) -> Iterator[Point | list[dict]]:
    """A store's reads as a point: each round a cold full read (page cache evicted and proven), a warm one and one
    cold cutout of each kind (aligned, unaligned) and side (``cutouts``) at the round's position; one store written
    (untimed, read back whole) in the set-up. With ``every`` (the sharding sweep: ``SWEEP_EVERY``), the cutouts are
    the question: every round reads them, and only every ``every``-th round (0, 4, 8, ...) writes a new store first,
    timed and verified, and reads it whole, cold and warm (a layout's write and full read are measured, in fewer
    rounds).

    The store holds the (tiled) pool of a ``BlockSource``, so no data is generated while anything is timed; full
    reads and cutouts are checked against that same pool."""
    writer = make_adapter(case.backend)
    spec = preferred_spec(dims, dataset.dtype, codec, writer)
    extra = {**extra, "codec": _codec_used(writer, spec)}
    if reason := writer.is_incompatible(spec, "write"):
        yield _skip(reason, operation="read_cold", **extra)
        return
    step = block_step(dims, dataset.dtype, writer.write_alignment(spec), pool_bytes)
    source = BlockSource(dataset, step, pool_bytes).prepare(inputs_dir(ctx.scratch))
    extra["data_tiled"] = source.tiled
    path = ctx.scratch / "".join(c if c.isalnum() else "-" for c in f"store-{name}")  # a layout's "128/32": no folder
    # per side, ``positions`` of each kind, aligned first
    plans = [(side, plan_cutouts(dims.shape, side, positions)) for side in cutouts]
    files: list[Path] = []
    state: dict = {}
    proven = Proven()

    def release() -> None:
        """The store's files let go by its evictions (held open between its cold reads), before it is removed."""
        if "evictions" in state:
            state["evictions"].close()

    def remove() -> None:
        release()
        remove_output(path)

    def write(r: int | None) -> list[dict]:
        """A new store at ``path`` (timed rows when ``r`` is a round's number), and the reader that reads it."""
        release()
        remove_output(path)
        writer = make_adapter(case.backend)
        phases = write_store(writer, path, spec, source, fsync)
        disk = _disk_columns(path)
        if r is None:
            check = verify(path, spec, writer, source.checksum, step, proven=proven)
            rows = verify_rows(check, [], extra)
        else:
            it_rows = phase_rows(phases, r, dataset.nbytes, fsync, {**extra, **disk}, writer.fsyncs)
            check = verify(path, spec, writer, source.checksum, step, source=source, scope="identical", proven=proven)
            rows = verify_rows(check, it_rows, {**extra, **disk})
        reader, read_path = make_adapter(case.backend), path
        if reader.is_incompatible(spec, "read"):
            # a writer that cannot read (acquire-zarr) is read by the library that verified it
            reader, read_path = make_adapter(check["verified_by"]), writer.array_path(path)
        files[:] = writer.output_files(path)
        # every cache dropped before the point's first cold read, then its files only (see .eviction): a store
        # written again at the path (the sweep's every ``every``-th round) is flushed and advised out, as a round
        # trip's is; a drop of every cache per new store (84 in a quick run) evicted every worker's libraries too
        if "evictions" in state:
            state["evictions"].rewrote()
        else:
            state["evictions"] = StoreEvictions()
        state.update(reader=reader, read_path=read_path, extra={**extra, **disk, "read_by": reader.name})
        return rows

    def reads(r: int, whole: bool = True) -> list[dict]:
        reader, read_path, row_extra, evictions = (state[k] for k in ("reader", "read_path", "extra", "evictions"))
        rows = []
        for cold in (True, False) if whole else ():  # the cold read leaves the store in the page cache for the warm one
            row, blocks = timed_read(reader, read_path, spec, files, cold, step, evictions=evictions)
            rows.append({"operation": f"read_{'cold' if cold else 'warm'}", "iteration": r,
                         "verified": _same_blocks(blocks, source), **row, **row_extra})
            del blocks
        # one cold cutout of each kind and side a round, at the round's position (the same for every writer and
        # layout in the round, so they pair): over the rounds the positions cover where a cutout falls
        for side, plan in plans:
            for n, (kind, index) in enumerate(plan):
                if n % positions != max(r, 0) % positions:
                    continue
                row, data = timed_read(reader, read_path, spec, files, True, step, index, evictions=evictions)
                rows.append({"operation": "read_region_cold", "iteration": r, "cutout": side, "cutout_kind": kind,
                             "cutout_index": n, "cutout_origin": [s.start for s in index],
                             "verified": same_array(data, source.region(index)), **row, **row_extra})
        return rows

    setup_rows = write(None)
    for w in range(ctx.warmups):  # warm the writer (timed in some rounds) and the reader
        if every and w:
            write(None)
        reads(-1)
    if any(row.get("status") == "error" for row in setup_rows):
        yield setup_rows
        remove()
        return
    if not every:
        yield Point(reads, remove)
        return

    def measure(r: int) -> list[dict]:
        fresh = r % every == 0
        return (write(r) if fresh else []) + reads(r, whole=fresh)

    yield Point(measure, remove)


def read_points(case: Case, ctx: CaseContext) -> Iterator[Point | list[dict]]:
    p = case.params
    dims = parse_dims(p["dims"])
    dataset, data = case_dataset(p, p["dataset"], dims.shape)
    extra = {"test": "read", "shape": list(dims.shape), "chunks": list(dims.chunks), **data}
    sides = p["cutout"] if isinstance(p["cutout"], list) else [p["cutout"]]
    yield from _read_point(case, ctx, "read", dims, dataset, p["codec"], extra, sides, p["cutout_positions"],
                           p["fsync"], p["pool_bytes"])


def sharding_points(case: Case, ctx: CaseContext) -> Iterator[Point | list[dict]]:
    p = case.params
    v = p["shard_volume"]
    for name in p["datasets"]:
        for label, chunk, shard in shard_layouts(v, p["shard"], p["inner_chunks"]):
            dims = DimsSpec(tuple(Dim(n, v, chunk, shard) for n in ("z", "y", "x")))
            dataset, data = case_dataset(p, name, dims.shape)
            extra = {"test": "sharding", "layout": label, "inner_chunk": chunk, "shard_size": shard or 0,
                     "sharded": shard is not None, "shape": list(dims.shape), "chunks": list(dims.chunks), **data}
            yield from _read_point(case, ctx, f"{name}-{label}", dims, dataset, p["codec"], extra, [p["cutout"]],
                                   p.get("cutout_positions", MIN_CUTOUT_POSITIONS), p["fsync"], p["pool_bytes"],
                                   every=SWEEP_EVERY)


POINTS = {"write": write_points, "append": append_points, "read": read_points, "sharding": sharding_points}


def rounds(case: Case, ctx: CaseContext) -> Rounds:
    """The case in rounds (``kit.in_rounds``): its points set up once, each measured once per round."""
    if reason := unavailable_reason(case.backend):
        return _skip(reason, test=case.params["test"])
    columns = {"backend_version": backend_status(case.backend).version, **make_adapter(case.backend).row_columns()}
    return (yield from in_rounds(POINTS[case.params["test"]](case, ctx), columns))


def questions(rows):
    """The questions the rounds ask (``Suite.question_groups``), as the book answers them (``rules.answers``): each
    operation of the write, append and read tests in its group of equals, the writers its contenders; and, of the
    sharding sweep, the cold cutouts of one dataset and kind, every writer with every layout a contender ("tensorstore,
    sharded 128/32": ``rules.answers.sharding_rows``' names), so that the book's sharding answer is this question's
    decision."""
    sweep = rows["test"] == "sharding" if "test" in rows else rows["operation"] != rows["operation"]
    for operation, part in rows[~sweep].groupby("operation", sort=True):
        for key, group in question_groups(part, [k for k in equals_keys(part) if k in part]):
            yield {"operation": operation, **key}, group
    cut = rows[sweep & (rows["operation"] == "read_region_cold")]
    keys = [k for k in ("dataset", "cutout_kind") if k in cut]
    for values, group in (cut.groupby(keys, dropna=False, sort=True) if len(cut) and "layout" in cut else []):
        key = dict(zip(keys, values if isinstance(values, tuple) else (values,), strict=True))
        entry = group["backend"].astype(str) + ", " + group["layout"].astype(str)
        yield {"operation": "read_region_cold", "test": "sharding", **key}, group.assign(_entry=entry)


SUITE = Suite(
    name="writers",
    title="Writer comparison",
    measures="write, append, read, cutouts, sharding",
    build_cases=build_cases,
    run_case=whole_case(rounds),
    rounds=rounds,
    questions=("total", "append_total", "read_cold", "read_region_cold"), question_groups=questions,
    profiles=PROFILES,
    scratch_bytes=scratch_bytes, work_bytes=work_bytes,
    ceiling_bytes=ceiling_bytes,
    label_keys=("test", "dataset", "codec"),
    # ``environment``: a library's version measured in an environment of its own (``--versions``), a case of its own
    case_keys=("test", "dataset", "codec", "nbytes", "multiplier", "layout", "inner_chunk", "shard_size", "cutout_kind",
               "fsync_included", "environment"),
    iteration_parts=("frame", "step"),
    time_budget_s={"quick": 62, "standard": 345},
    # the sharding sweep of the writers other than the two most used sharded engines: the dearest cases of a round
    optional=lambda case: case.params["test"] == "sharding" and case.backend not in ("zarr-python", "tensorstore"),
    reuse_worker=True,
    smoke={"backends": ["raw", "zarr-python", "tensorstore"], "dims": "t:2,y:64:32,x:96", "multipliers": [1, 2],
           "append_frames": 6, "append_step": 3, "read_dims": "z:8:4,y:32:16,x:32:16",
           "cutout": 8, "cutout_positions": 1, "shard_datasets": ["labels"], "shard_volume": 32, "shard": 32,
           "inner_chunks": [16], "iterations": 1, "warmups": 0},
)
