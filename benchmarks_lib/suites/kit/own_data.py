"""A person's own data in the suites that write arrays (:mod:`benchmarks_lib.inputs.user_data`): the checks before a run
(every writer named for it takes its dtype and rank; a fixed-size test fits in it) and a case's dataset with the
columns that say what it is."""

from __future__ import annotations

from collections.abc import Iterable

from benchmarks_lib.adapters import adapter_class
from benchmarks_lib.base.specs import Dim, DimsSpec, SpecError
from benchmarks_lib.data.datasets import Dataset
from benchmarks_lib.inputs.user_data import FileDataset, FileSpec, dataset_columns, make_dataset
from benchmarks_lib.suites.kit.twins import pair_dataset


def _writer_class(name: str) -> type | None:
    """The array writer or in-memory codec called ``name`` (None for another kind: a mesh writer)."""
    for kind in ("array", "codec"):
        try:
            return adapter_class(name, kind)
        except SpecError:
            continue
    return None


def refuse_unwritable(spec: FileSpec | None, backends: Iterable[str], ndim: int) -> None:
    """A SpecError naming each of ``backends`` (the writers named, not those ``all`` stands for: their refusals are
    skip rows) that cannot write ``spec``'s data at rank ``ndim`` (``Adapter.refuses_data``); nothing for
    synthetic data."""
    if spec is None:
        return
    refusals = []
    for name in backends:
        refuses = getattr(_writer_class(name), "refuses_data", None) if name != "all" else None
        if refuses is not None and (why := refuses(spec.dtype, ndim)):
            refusals.append(why)
    if refusals:
        raise SpecError(f"dataset {spec.label} ({ndim}-D {spec.dtype}) cannot be written by a writer named: "
                        f"{'; '.join(refusals)}; leave them out of backends")


def fit_crops(spec: FileSpec, backends: Iterable[str], **dims: tuple[DimsSpec, bool]) -> tuple[DimsSpec, ...]:
    """Each of ``dims`` (its parameter's name -> (dims, measured here)) fitted to the file where it is measured
    (:meth:`FileSpec.fit`: the crop it measures), the others as they are; then the writers named that cannot write
    the file at the rank measured are refused (:func:`refuse_unwritable`)."""
    out = tuple(spec.fit(given, name) if used else given for name, (given, used) in dims.items())
    for ndim in {len(d.dims) for d, (_, used) in zip(out, dims.values(), strict=True) if used}:
        refuse_unwritable(spec, backends, ndim)
    return out


def refuse_small(spec: FileSpec | None, volume: int) -> None:
    """The writers' sharding test measures a cube of ``volume`` per side: a file must hold one (3-D, that large)."""
    if spec is not None:
        cube = DimsSpec(tuple(Dim(n, volume, volume) for n in ("z", "y", "x")))
        if spec.fit(cube, "the sharding cube (shard_volume)") != cube:
            raise SpecError(f"shard_datasets {spec.label} is {'x'.join(map(str, spec.source_shape))}: the sharding "
                            f"test measures a {volume}-cube; give shard_volume <= its smallest side")


def case_dataset(params: dict, name: str, shape: tuple[int, ...]) -> tuple[Dataset | FileDataset, dict]:
    """The dataset ``name`` of a case (synthetic, a file's crop: the case's ``sources``, or a real array's synthetic
    twin: its ``pairs``) at ``shape``, and the columns that say what it is (``dataset``, ``dtype``, a file's source,
    crop and digest: read now, before any clock; a pair's labels)."""
    twin, pair = pair_dataset(params, name, shape)
    dataset = twin or make_dataset(name, shape, params["seed"], params.get("sources"))
    return dataset, {"dataset": name, "dtype": dataset.dtype, **dataset_columns(dataset), **pair}


__all__ = ["case_dataset", "fit_crops", "refuse_small", "refuse_unwritable"]
