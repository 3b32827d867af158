"""TensorStore's ``zarr3`` driver on its ``http`` kvstore (or ``s3`` for an ``s3://`` location); its client
cache is the ``cache_pool``."""

from __future__ import annotations

from benchmarks_lib.adapters.remote.zarr_http import CLIENT_CACHE_BYTES, SelectionReader, ZarrHttpReader


class TensorstoreHttpReader(ZarrHttpReader):
    name = "tensorstore"
    order = 50
    module = "tensorstore"
    distribution = "tensorstore"
    install_hint = "pip install tensorstore"
    threads_setting = "Context data_copy_concurrency.limit + http_request_concurrency.limit (s3_request_concurrency)"
    notes = "zarr3 driver, http or s3 kvstore; cache: cache_pool (256 MiB), recheck_cached_data off"

    @classmethod
    def warm_up(cls) -> None:
        import numpy as np
        import tensorstore as ts

        arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "memory"}}, create=True, dtype=ts.uint16,
                      shape=[4, 4]).result()
        arr.write(np.ones((4, 4), dtype=np.uint16)).result()
        arr.read().result()

    @classmethod
    def open_array(cls, url: str, client_cache: bool, concurrency: int) -> SelectionReader:
        import tensorstore as ts

        from benchmarks_lib.adapters.tensorstore import TensorstoreAdapter
        from benchmarks_lib.data.storage import from_environment, is_s3

        context = {"cache_pool": {"total_bytes_limit": CLIENT_CACHE_BYTES if client_cache else 0},
                   "data_copy_concurrency": {"limit": concurrency},
                   "http_request_concurrency": {"limit": concurrency},
                   "s3_request_concurrency": {"limit": concurrency}}
        http = {"driver": "http", "base_url": url}
        kvstore = TensorstoreAdapter.kvstore(from_environment(url)) if is_s3(url) else http
        store = ts.open({"driver": "zarr3", "kvstore": kvstore, "context": context,
                         "recheck_cached_data": not client_cache}, read=True).result()
        return lambda sel: store[sel].read().result()
