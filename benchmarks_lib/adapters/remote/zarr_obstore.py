"""zarr-python on obstore's ``HTTPStore`` (``S3Store`` for an ``s3://`` location) through
``zarr.storage.ObjectStore``; its client cache is zarr's ``CacheStore`` over a memory store."""

from __future__ import annotations

from typing import Any

from benchmarks_lib.adapters.remote.zarr_http import CLIENT_CACHE_BYTES, ZarrPythonHttpReader


class ZarrObstoreReader(ZarrPythonHttpReader):
    name = "zarr-obstore"
    order = 40
    extra_modules = ("obstore",)
    extra_distributions = ("obstore",)
    install_hint = "pip install 'zarr>=3' obstore"
    warm_up_modules = ("obstore.store", "zarr.experimental.cache_store")
    notes = "zarr.storage.ObjectStore(obstore HTTPStore or S3Store); cache: zarr.experimental CacheStore (256 MiB)"

    @classmethod
    def store(cls, url: str, client_cache: bool) -> Any:
        import zarr
        from obstore.store import HTTPStore

        from benchmarks_lib.adapters.obstore_s3 import s3_store
        from benchmarks_lib.data.storage import from_environment, is_s3

        objects = s3_store(from_environment(url)) if is_s3(url) else HTTPStore.from_url(
            url, client_options={"allow_http": True})
        store = zarr.storage.ObjectStore(objects, read_only=True)
        if client_cache:
            from zarr.experimental.cache_store import CacheStore

            store = CacheStore(store, cache_store=zarr.storage.MemoryStore(), max_size=CLIENT_CACHE_BYTES)
        return store
