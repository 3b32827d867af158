"""zarr-python on fsspec's HTTP filesystem (s3fs for an ``s3://`` location) through ``FsspecStore``; its
client cache is fsspec's block cache (:class:`benchmarks_lib.adapters.remote.fsspec_store.BlockCachedStore`)."""

from __future__ import annotations

from typing import Any

from benchmarks_lib.adapters.remote.zarr_http import ZarrPythonHttpReader
from benchmarks_lib.data.storage import S3Target, credentials, from_environment, is_s3


class ZarrFsspecReader(ZarrPythonHttpReader):
    name = "zarr-fsspec"
    order = 30
    extra_modules = ("fsspec", "aiohttp")
    extra_distributions = ("fsspec", "aiohttp")
    install_hint = "pip install 'zarr>=3' fsspec aiohttp"
    s3_modules = ("s3fs",)
    warm_up_modules = ("fsspec.implementations.http",)
    notes = "zarr.storage.FsspecStore; cache: fsspec block cache per key (1 MiB blocks)"

    @staticmethod
    def s3_options(target: S3Target) -> dict:
        """``s3fs.S3FileSystem`` keyword arguments for ``target`` (its credentials, else the environment's)."""
        names = {"access_key_id": "key", "secret_access_key": "secret", "token": "token"}
        options: dict = {names[k]: v for k, v in (target.credentials or credentials()).items()}
        options["client_kwargs"] = {"region_name": target.region} | (
            {"endpoint_url": target.endpoint} if target.endpoint else {})
        return options

    @classmethod
    def store(cls, url: str, client_cache: bool) -> Any:
        options = cls.s3_options(from_environment(url)) if is_s3(url) else {}
        if client_cache:
            from benchmarks_lib.adapters.remote.fsspec_store import BlockCachedStore

            return BlockCachedStore.from_url(url, storage_options=options)
        import zarr

        return zarr.storage.FsspecStore.from_url(url, read_only=True, storage_options=options)
