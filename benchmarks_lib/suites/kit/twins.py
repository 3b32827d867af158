"""Real data beside its synthetic twin (the compression suite's ``real_datasets``).

Each item is ``[KIND=]SOURCE``: ``SOURCE`` a real array, ``example:NAME`` (a package's own file,
:mod:`benchmarks_lib.data.examples`, whose ``KIND`` is declared) or ``file:PATH[:INNER][@ORIGIN]`` (``KIND=`` then
required); ``KIND`` the synthetic dataset it is like (:data:`~benchmarks_lib.data.datasets.DATASETS`). The twin is
that synthetic dataset generated at the real crop's dtype and shape (``Dataset(KIND, shape, dtype, seed)``), so
that both are measured on the same chunks by the same codecs: the only difference left is the values.

Rows of a pair say so: ``pair_of`` (the real data's label), ``pair_role`` (``real`` or ``synthetic twin``) and
``pair_kind`` (the synthetic dataset). An example whose package is missing here is refused when named, and a
skip row when it is a profile's default (every profile measures both examples).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks_lib.base.specs import SpecError, parse_items
from benchmarks_lib.data.datasets import DATASETS, Dataset
from benchmarks_lib.data.examples import ALLOWED_EXAMPLES, example_missing, example_of, is_example
from benchmarks_lib.inputs.user_data import FileSpec, is_file_dataset, parse_file_dataset

#: the library that measures the pairs: every codec's chunks encoded and decoded in memory, as a store would
PAIR_BACKEND = "numcodecs"
#: what a row of a pair is (its ``pair_role``): the chapter reads the same names
ROLE_REAL, ROLE_TWIN = "real", "synthetic twin"
ROLES = (ROLE_REAL, ROLE_TWIN)
FORMS = (f"[KIND=]example:NAME ({ALLOWED_EXAMPLES}) or KIND=file:PATH[:INNER][@ORIGIN], KIND one of "
         f"{', '.join(DATASETS)}")


@dataclass(frozen=True)
class RealPair:
    """A real array and the synthetic dataset (``kind``) it is compared with; ``spec`` None where it cannot be
    read here (``missing`` says why)."""

    real: str
    kind: str
    spec: FileSpec | None
    missing: str | None = None

    @property
    def twin(self) -> str:
        """The twin's ``dataset`` label: unique per real array (two of them may share a dtype)."""
        return twin_label(self.kind, self.real)

    def to_param(self) -> dict:
        """What a case carries (JSON): the labels, the twin's kind and dtype, and why it is missing here."""
        return {"real": self.real, "kind": self.kind, "twin": self.twin, "missing": self.missing,
                "dtype": self.spec.dtype if self.spec else None}


def twin_label(kind: str, real: str) -> str:
    return f"{kind} twin of {real}"


def _parse_pair(text: Any, named: bool) -> RealPair:
    if not isinstance(text, str):
        raise SpecError(f"real_datasets item {text!r} is not a string; give {FORMS}")
    kind, sep, source = text.partition("=")
    kind, source = (kind.strip(), source.strip()) if sep else (None, text.strip())
    if kind is not None and kind not in DATASETS:
        raise SpecError(f"real_datasets item {text!r}: {kind!r} is no synthetic dataset; allowed: "
                        f"{', '.join(DATASETS)}")
    if is_example(source):
        name, example = example_of(source)
        label = f"example:{name}"
        if not named and (why := example_missing(source)):  # a profile's default: a skip row
            return RealPair(label, kind or example.kind, None, why)
        return RealPair(label, kind or example.kind, parse_file_dataset(source))
    if not is_file_dataset(source):
        raise SpecError(f"real_datasets item {text!r} is not real data; give {FORMS}")
    if kind is None:
        raise SpecError(f"real_datasets item {text!r} names no synthetic twin; give KIND={source}, KIND one of "
                        f"{', '.join(DATASETS)}")
    spec = parse_file_dataset(source)
    return RealPair(spec.label, kind, spec)


def parse_real_datasets(value: Any, named: bool = True) -> list[RealPair]:
    """The pairs of ``real_datasets`` (a list, or one comma-separated string; ``[]`` measures none), duplicates
    dropped; ``named`` False for a profile's default (a missing example's package is then a skip, not refused)."""
    items = [] if value is None else parse_items(value, "real_datasets", '["example:frog_tissues"]')
    pairs = (_parse_pair(item, named) for item in items)
    return list({(p.real, p.kind): p for p in pairs}.values())


def pairs_param(pairs: list[RealPair]) -> dict:
    """The ``pairs`` a case carries: each dataset label of a pair (the real one, its twin) -> the pair."""
    return {label: pair.to_param() for pair in pairs for label in (pair.real, pair.twin)}


def pair_dataset(params: dict, name: str, shape: tuple[int, ...]) -> tuple[Dataset | None, dict]:
    """For the dataset ``name`` of a case: the synthetic twin at ``shape`` (its real data's dtype) where ``name``
    is one, and the columns of a pair's row ({} where ``name`` is in no pair)."""
    pair = params.get("pairs", {}).get(name)
    if pair is None:
        return None, {}
    twin = name == pair["twin"]
    columns = {"pair_of": pair["real"], "pair_role": ROLES[twin], "pair_kind": pair["kind"]}
    return (Dataset(pair["kind"], shape, dtype=pair["dtype"], seed=params["seed"]) if twin else None), columns


def pair_missing(params: dict, name: str) -> str | None:
    """Why the pair of dataset ``name`` cannot be measured here (a profile's example without its package)."""
    return params.get("pairs", {}).get(name, {}).get("missing")


__all__ = ["FORMS", "PAIR_BACKEND", "ROLES", "ROLE_REAL", "ROLE_TWIN", "RealPair", "pair_dataset", "pair_missing",
           "pairs_param", "parse_real_datasets", "twin_label"]
