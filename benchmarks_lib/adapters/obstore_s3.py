"""obstore at an S3 location (:class:`~benchmarks_lib.data.storage.S3Target`): the store zarr-python
(``zarr.storage.ObjectStore``) and the zarr-obstore reader measure with, and the client of what is never
measured: listing and deleting under a prefix this package made, and uploading a local directory (the S3
suite's outputs, the cache chapter's S3 copy). obstore is imported inside each function, when S3 is used.

A target's own ``credentials`` (a server of ours) are given to obstore through a provider, so that no session
token of the user's environment is added to them; without them the AWS environment's are used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks_lib.data.storage import S3Target, credentials

#: objects one delete request removes at most (S3's DeleteObjects limit is 1000)
DELETE_BATCH = 500


@dataclass(frozen=True)
class StaticCredentials:
    """obstore's credential provider for given keys (and no session token, whatever the environment holds)."""

    access_key_id: str
    secret_access_key: str = field(repr=False)

    def __call__(self) -> dict:
        return {"access_key_id": self.access_key_id, "secret_access_key": self.secret_access_key, "token": None,
                "expires_at": None}


def s3_store(target: S3Target) -> Any:
    """An obstore ``S3Store`` at ``target`` (its credentials, else the environment's)."""
    from obstore.store import S3Store

    if target.credentials:  # a provider: obstore would add a session token from the environment to given keys
        options: dict = {"region": target.region, "credential_provider": StaticCredentials(**target.credentials)}
    else:
        options = {"region": target.region, **credentials()}
    if target.endpoint:
        options |= {"endpoint": target.endpoint, "client_options": {"allow_http": target.endpoint.startswith("http:")}}
    return S3Store(target.bucket, prefix=target.prefix.rstrip("/") or None, **options)


def list_objects(target: S3Target) -> list[tuple[str, int]]:
    """(path under the prefix, size) of every object under ``target``'s prefix."""
    import obstore

    return [(meta["path"], meta["size"]) for batch in obstore.list(s3_store(target)) for meta in batch]


def delete_prefix(target: S3Target) -> None:
    """Delete every object under ``target``'s prefix: only ever a prefix the caller made (a new uuid)."""
    import obstore

    if not target.prefix:
        raise ValueError(f"refusing to delete a whole bucket ({target.url}): only a prefix this tool made")
    store = s3_store(target)
    paths = [path for path, _ in list_objects(target)]
    for i in range(0, len(paths), DELETE_BATCH):
        obstore.delete(store, paths[i:i + DELETE_BATCH])


def upload_tree(root: Path, target: S3Target) -> None:
    """Every file under ``root`` as an object under ``target``, keyed by its path relative to ``root``."""
    import obstore

    store = s3_store(target)
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        obstore.put(store, path.relative_to(root).as_posix(), path.read_bytes())


__all__ = ["StaticCredentials", "delete_prefix", "list_objects", "s3_store", "upload_tree"]
