"""Read-back verification: every written store is read back, by a different library where one
exists, and compared with the checksum of what was handed to the writer."""

from __future__ import annotations

from pathlib import Path

from ..adapters import backend_status, make_adapter
from ..adapters.base import Adapter, IndependentRead
from ..datasets import checksum_blocks
from ..measure.ledger import phase
from ..specs import ArraySpec
from .blocks import block_indices

#: readers used to verify a format, in order of preference (a different library first)
VERIFIERS = {
    "zarr3": ("zarr-python", "tensorstore"),
    "zarr2": ("zarr-python", "tensorstore"),
    "ome-zarr": ("zarr-python", "tensorstore"),
    "hdf5": ("h5py",),
    "wkw": ("wkw",),
    "raw": ("raw",),
}


def verifier(writer: Adapter, spec: ArraySpec) -> str | None:
    """A different library that is installed and can read this codec, or None when there is none."""
    for name in VERIFIERS.get(writer.format, ()):
        if name != writer.name and backend_status(name).available and \
                make_adapter(name).is_incompatible(spec, "read") is None:
            return name
    return None


def read_checksum(reader: Adapter, spec: ArraySpec, step: int) -> str:
    """Read block by block, untimed; return the checksum."""
    return checksum_blocks(reader.read(index) for index in block_indices(spec, step))


@phase("verify")
def verify(path: Path, spec: ArraySpec, writer: Adapter, expected: str, step: int) -> dict:
    """Read a written store back and compare its checksum (dtype, shape and bytes) with ``expected``.

    The reader is, in order: a different library that reads the format; else the writer's
    ``independent_read`` (file I/O and the codec library, none of the writer's code); else the
    writer itself, and then ``verified_independently`` is False and ``verify_note`` says why.
    """
    name = verifier(writer, spec)
    by, note = name or f"{writer.name} independent reader", ""
    try:
        independent = writer.independent_read(path, spec) if name is None else None
        if isinstance(independent, IndependentRead):
            by = independent.by
            got = checksum_blocks(independent.blocks)
        else:
            by = name or writer.name
            if independent:
                note = f"no other installed library reads {writer.format} with {spec.codec}; {independent}"
            reader = make_adapter(by)
            try:
                reader.open_reader(writer.array_path(path) if name else path, spec)
                got = read_checksum(reader, spec, step)
            finally:
                reader.close_reader()
    except Exception as exc:  # a failed read-back is recorded, the measured rows are kept
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        got, detail = None, f"{by} could not read it back: {type(exc).__name__}: {first}"
    else:
        detail = "" if got == expected else f"checksum mismatch: wrote {expected}, {by} read {got}"
    return {"verified": got == expected, "verified_by": by, "verified_independently": not note,
            "verify_note": note, "verify_detail": detail}


def verify_rows(check: dict, rows: list[dict], extra: dict, target: str = "total") -> list[dict]:
    """Mark the ``target`` rows verified or not; a mismatch adds an error row."""
    for row in rows:
        if row["operation"] == target:
            row.update({k: v for k, v in check.items() if k != "verify_detail"})
    if not check["verified"]:
        rows.append({"operation": "verify", "status": "error", "reason": check["verify_detail"], **extra})
    return rows
