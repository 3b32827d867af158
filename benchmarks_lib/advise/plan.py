"""``iobench advise --measure``: the writers suite's (remote reads: the s3 suite's) own cases on the person's file,
fitted to a time budget.

No second measuring path: the plan is parameters of the writers suite (``run_suite("writers", ...)`` at the quick
profile, without the ceiling case), measured in its fresh workers with its timed regions, verification and
records, in a run of its own that ``--run-id`` resumes. Remote full reads (``remote-read:MS``) are the s3 suite's
instead: each writer that reads S3 writes a crop of the file to a versitygw on 127.0.0.1 behind the emulated link
of that latency and reads it back (refused in one line where it is not installed); remote cutouts are measured by
the cache suite on its own store, not on a person's file, so ``--measure`` refuses them. For cube cutouts of 3-D
data holding a cube of at least twice the cutout's side, the writers suite's ``sharding`` test searches the chunk and
shard shapes around the cutout (sharded with inner chunks of the cutout's size and half of it, and unsharded at each
size). Any other cutout (a thin stack or a short time series has fewer planes than the cube needs; 2-D data; a
cutout thinner along some axis) takes the ``read`` test on a crop fitted to the data's own shape
(:func:`fitted_read_dims`): the suite cuts cubes of the cutout's largest side clipped to the array, so the crop is
as deep as the cutout along an axis where the cutout is thinner, and its chunks are the cutout's size there, which
makes the cutouts measured the cutouts asked. Full reads take the ``read`` test, writes ``write`` and appends
``append``, on a crop of the file. The suite's own time
estimate (``preflight.estimate_seconds``) fits the plan to the budget: writers are dropped from the end of the
list, then inner-chunk sizes, then iterations, each drop stated; a budget that not even one writer fits is refused
before anything runs. The budget counts from the start of ``measure``: no case starts after STOP_SHARE of it, and
a case still running when all of it has passed (its data still being prepared, say) is stopped like Ctrl-C stops
it, the cases finished before it kept.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks_lib.advise.evidence import Workload
from benchmarks_lib.base.specs import SpecError

#: the share of the budget the suite's estimate may take (its estimate is for a 2-core machine, and a run also
#: starts workers and imports libraries)
BUDGET_SHARE = 0.5
#: the share of the budget after which no further case starts (the one in flight is stopped)
STOP_SHARE = 0.85
#: iterations (n per point) and warm-ups; a 95% interval of a median needs n >= 6
ITERATIONS, FEWEST_ITERATIONS, WARMUPS = 8, 6, 1
#: the largest side of a measured crop (the quick profile's sizes)
LARGEST_SIDE = 256
#: appends keep the file's frames whole up to this size (a larger frame is cropped, its largest side halved until
#: it fits), and append about APPEND_BYTES per repeat: a frame stream's speed depends on the frame's size
FRAME_BYTES, APPEND_BYTES = 32 << 20, 256 << 20
#: the fewest and most frames one append repeat writes
FRAMES = (8, 512)


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def _names(ndim: int) -> list[str]:
    return list(("t", "c", "z", "y", "x")[-ndim:]) if ndim <= 5 else [f"d{i}" for i in range(ndim)]


def _dims(shape: tuple[int, ...], chunk: int) -> str:
    """Dims for a crop of ``shape`` (each axis at most LARGEST_SIDE), chunks of ``chunk`` (at most the axis)."""
    sides = [min(n, LARGEST_SIDE) for n in shape]
    return ",".join(f"{name}:{n}:{min(chunk, n)}" for name, n in zip(_names(len(shape)), sides, strict=True))


def fitted_read_dims(shape: tuple[int, ...], cutout: tuple[int, ...]) -> str:
    """The ``read`` test's dims for cutouts of ``cutout`` on data of ``shape``, fitted so the suite's cutouts (cubes
    of the largest side, clipped to the array) are ``cutout``: an axis where the cutout is as long as its largest
    side keeps the data's length (at most LARGEST_SIDE, or the cutout's side where that is longer) in chunks of the
    side's power of two; an axis where it is shorter is cropped to the cutout, in one chunk."""
    side = max(cutout)
    axes = []
    for name, n, c in zip(_names(len(shape)), shape, cutout, strict=True):
        if c < side:
            axes.append(f"{name}:{c}:{c}")
        else:
            length = min(n, max(LARGEST_SIDE, side))
            axes.append(f"{name}:{length}:{min(_pow2_floor(side), length)}")
    return ",".join(axes)


def sharding_cube(shape: tuple[int, ...], cutout: tuple[int, ...]) -> tuple[int, int] | None:
    """(shard, volume) of the sharding test for cube cutouts of 3-D data holding a cube of at least twice the
    cutout's side (at most LARGEST_SIDE a side), shards of twice the cutout where they fit; None otherwise: the
    cutouts are measured on a crop of the data's own shape (:func:`fitted_read_dims`)."""
    side = max(cutout)
    if len(shape) != 3 or any(c != side for c in cutout):
        return None
    room = min(min(shape), LARGEST_SIDE)
    shard = min(_pow2_floor(2 * side), _pow2_floor(room))
    volume = room // shard * shard
    return (shard, volume) if shard >= side and volume >= 2 * side else None


def append_plan(shape: tuple[int, ...], dtype: str) -> tuple[str, int]:
    """(dims, frames) of a frame stream along the first axis: whole frames up to FRAME_BYTES (else the largest
    side halved until one fits), each frame in two chunks along its first axis as the writers suite's own stream
    (``t:64,y:1080:540,x:1920``), and about APPEND_BYTES of frames (FRAMES bounds, at most the file's)."""
    import numpy as np

    frame = list(shape[1:])
    itemsize = np.dtype(dtype).itemsize
    while math.prod(frame) * itemsize > FRAME_BYTES:
        frame[frame.index(max(frame))] //= 2
    frames = max(FRAMES[0], min(FRAMES[1], APPEND_BYTES // (math.prod(frame) * itemsize)))
    frames = min(frames, shape[0])
    chunks = [-(-frame[0] // 2), *frame[1:]]
    axes = [f"t:{frames}"] + [f"{name}:{n}:{c}" for name, n, c in zip(_names(len(shape))[1:], frame, chunks,
                                                                         strict=True)]
    return ",".join(axes), frames


def suite_for(workload: Workload) -> str:
    """The suite that measures the access pattern on a person's file."""
    if workload.access == "remote-cutout":
        raise SpecError("--measure cannot measure remote cutouts on your file: the cache suite measures them on its "
                        "own store (iobench run cache); remote full reads (remote-read:MS) are measured on your file")
    return "s3" if workload.remote else "writers"


def writers_for(workload: Workload) -> list[str]:
    """The installed writers that can do the access pattern, from what each adapter declares (a plug-in writer
    too), in listing order with the raw baseline last: a plan too long for the budget drops writers from the end."""
    from benchmarks_lib.adapters import adapter_class, backend_status, registered

    sweep = workload.access == "cutout" and sharding_cube(workload.shape, workload.cutout or ()) is not None
    out = []
    for name in sorted(registered("array"), key=lambda name: name == "raw"):
        cls = adapter_class(name)
        if cls.wraps_others or not backend_status(name).available:
            continue
        if workload.remote and ("s3" not in getattr(cls, "stores", ()) or not cls.supports_read):
            continue
        if sweep and not cls.supports_sharding:
            continue
        if workload.access == "append" and not cls.supports_append:
            continue
        out.append(name)
    if not out:
        raise SpecError(f"no installed writer can measure {workload.access}; see iobench backends")
    return out


def suite_params(workload: Workload, backends: list[str], inner: list[int]) -> dict:
    """The writers suite's (remote reads: the s3 suite's) parameters for the workload (quick profile underneath)."""
    dataset = workload.like
    if workload.remote:
        return {"backends": backends, "dataset": dataset, "latencies_ms": [workload.latency_ms],
                "dims": _dims(workload.shape, 64), "iterations": ITERATIONS, "warmups": WARMUPS}
    params = {"backends": backends, "dataset": dataset, "fsync": workload.fsync, "iterations": ITERATIONS,
              "warmups": WARMUPS}
    if workload.access == "cutout":
        cutout = workload.cutout or (32,) * len(workload.shape)
        params.update(cutout=max(cutout), cutout_positions=ITERATIONS)
        if (cube := sharding_cube(workload.shape, cutout)) is not None:
            shard, volume = cube
            params.update(tests=["sharding"], shard_datasets=[dataset], shard_volume=volume, shard=shard,
                          inner_chunks=[c for c in inner if shard % c == 0] or [shard])
        else:
            params.update(tests=["read"], read_dims=fitted_read_dims(workload.shape, cutout))
    elif workload.access == "full-read":
        params.update(tests=["read"], read_dims=_dims(workload.shape, 64), cutout=32, cutout_positions=1)
    elif workload.access == "write":
        params.update(tests=["write"], dims=_dims(workload.shape, 64), multipliers=[1])
    else:  # append: frames along the first axis
        dims, frames = append_plan(workload.shape, workload.dtype)
        params.update(tests=["append"], dims=dims, append_frames=frames, append_step=max(1, frames // 4))
    return params


def estimate(params: dict, suite: str = "writers") -> float:
    """The suite's own estimate (seconds) for a run of ``params`` (``runner.check_load``)."""
    from benchmarks_lib.run.runner import check_load, plan

    merged, cases, _ = plan(suite, params, "quick", ceiling=False)
    found = check_load(suite, "quick", cases, merged["iterations"] + merged["warmups"], None, True)
    return found[0] if found else 0.0


def fit_to_budget(workload: Workload, budget_s: float) -> tuple[dict, list[str]]:
    """The largest plan whose estimate fits BUDGET_SHARE of the budget, and what was dropped to fit it."""
    from benchmarks_lib.run.preflight import format_seconds

    backends = writers_for(workload)
    side = max(workload.cutout or (32,))
    inner = sorted({c for c in (_pow2_floor(side), _pow2_floor(side) // 2) if c >= 4}, reverse=True)
    dropped: list[str] = []
    iterations = ITERATIONS
    while True:
        params = suite_params(workload, backends, inner)
        params["iterations"] = iterations
        if workload.access == "cutout":
            params["cutout_positions"] = iterations
        seconds = estimate(params, suite_for(workload))
        if seconds <= BUDGET_SHARE * budget_s:
            return params, [f"plan: about {format_seconds(seconds)} by the suite's estimate; left out to fit the "
                            f"budget: {'; '.join(dropped)}" if dropped else
                            f"plan: about {format_seconds(seconds)} by the suite's estimate (budget "
                            f"{format_seconds(budget_s)})", *layout_notes(workload, params)]
        if len(backends) > 2:
            dropped.append(f"writer {backends.pop()}")
        elif len(inner) > 1 and params.get("tests") == ["sharding"]:
            dropped.append(f"inner chunks of {inner.pop()}")
        elif iterations > FEWEST_ITERATIONS:
            dropped.append(f"iterations {iterations} -> {FEWEST_ITERATIONS}")
            iterations = FEWEST_ITERATIONS
        elif len(backends) > 1:
            dropped.append(f"writer {backends.pop()}")
        else:
            raise SpecError(f"--budget {format_seconds(budget_s)} is too short: the smallest plan (one writer) "
                            f"takes about {format_seconds(seconds / BUDGET_SHARE)}; give a longer --budget")


def layout_notes(workload: Workload, params: dict) -> list[str]:
    """What the plan measures of a cutout workload: the sharding sweep's cube, or the one layout of the crop
    fitted to the data (and why)."""
    from benchmarks_lib.base.specs import parse_dims, shape_text

    if workload.access != "cutout":
        return []
    if params["tests"] == ["sharding"]:
        v, shard = params["shard_volume"], params["shard"]
        inner = ", ".join(map(str, params["inner_chunks"]))
        return [f"  layouts: a {v}^3 crop of your data, sharded {shard}^3 with inner chunks of {inner}, and unsharded "
                f"at each size; cutouts of {workload.cutout_text}"]
    dims = parse_dims(params["read_dims"])
    cube = len(set(workload.cutout or ())) == 1
    why = (f"the data is {len(workload.shape)}-D" if len(workload.shape) != 3 else
           "the data holds no cube of twice the cutout's side" if cube else
           "the cutout is not a cube: the suite cuts cubes clipped to the array, so the crop is as deep as the cutout "
           "where the cutout is thinner")
    return [f"  layout: chunks {shape_text(dims.chunks)} on a {shape_text(dims.shape)} crop of your data, one layout "
            f"per writer, no sharding sweep ({why}); cutouts of {workload.cutout_text}"]


class BudgetSpent(Exception):
    """The budget ran out with cases still to measure (STOP_SHARE of it at a case's start or end, all of it during a
    case): the run stops there (resumable)."""


def budget_guard(budget_s: float, progress=None, start: float | None = None):
    """``progress`` that raises :class:`BudgetSpent` at the first case event after STOP_SHARE of the budget
    (counted from ``start``, a ``time.monotonic()``; default now): the case in flight is stopped with it; the
    finished cases are recorded."""
    start = time.monotonic() if start is None else start

    def guarded(done: int, total: int, message: str, finished: bool) -> None:
        if progress is not None:
            progress(done, total, message, finished)
        if done < total and time.monotonic() - start > STOP_SHARE * budget_s:
            raise BudgetSpent(f"the budget ran out after {done} of {total} cases")

    return guarded


def _ring(signum: int, frame: object) -> None:
    raise BudgetSpent("the budget ran out during a case, which was stopped")


@contextlib.contextmanager
def budget_alarm(seconds: float) -> Iterator[None]:
    """While the block runs, :class:`BudgetSpent` is raised when ``seconds`` have passed, wherever this process
    waits (a case in flight is then stopped and its worker killed, as on Ctrl-C); only in the main thread, where a
    signal handler can be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    hook = sys.unraisablehook

    def ring_again(unraisable) -> None:  # raised where Python drops it (inside logging's lock, a __del__): again
        if isinstance(unraisable.exc_value, BudgetSpent):
            signal.setitimer(signal.ITIMER_REAL, 0.1)
        else:
            hook(unraisable)

    previous = signal.signal(signal.SIGALRM, _ring)
    sys.unraisablehook = ring_again
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1.0))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.unraisablehook = hook


def measure(workload: Workload, budget_s: float, results_dir: str | Path, run_id: str | None,
            scratch_dir: str | Path | None, progress=None):
    """Run the fitted plan (resuming ``run_id`` where it exists): (the ``RunResult``, lines saying what ran)."""
    start = time.monotonic()
    from benchmarks_lib.base.environment import machine_name
    from benchmarks_lib.records.store import load_run
    from benchmarks_lib.run.runner import RunResult, run_suite

    if workload.like is None:
        raise SpecError("--measure measures your data: give --like PATH")
    suite = suite_for(workload)
    if suite == "s3":
        from benchmarks_lib.servers.versitygw import versitygw_missing_reason

        if (missing := versitygw_missing_reason()) is not None:
            raise SpecError(f"--measure {workload.access} reads through an S3 server on this machine: {missing}")
    params, notes = fit_to_budget(workload, budget_s)
    run_id = run_id or f"advise-{workload.access}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    notes.append(f"run {run_id} in {results_dir} (resume it with --run-id {run_id})")
    try:
        with budget_alarm(budget_s - (time.monotonic() - start)):
            result = run_suite(suite, params, profile="quick", results_dir=results_dir, run_id=run_id,
                               scratch_dir=scratch_dir, ceiling=False,
                               progress=budget_guard(budget_s, progress, start))
    except BudgetSpent as stop:
        run_dir = Path(results_dir) / machine_name() / run_id
        df, meta = load_run(run_dir)
        notes.append(f"{stop}: the answer rests on the cases finished; --run-id {run_id} measures the rest")
        result = RunResult(run_dir, df, meta)
    return result, notes


__all__ = ["BudgetSpent", "budget_alarm", "budget_guard", "estimate", "fit_to_budget", "fitted_read_dims",
           "layout_notes", "measure", "sharding_cube", "suite_for", "suite_params", "writers_for"]
