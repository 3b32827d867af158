"""zarrs-python: zarr-python's API with the Rust ``zarrs.ZarrsCodecPipeline`` doing chunk I/O.

Same calls as the zarr-python adapter; only the codec pipeline differs, so the pair
isolates what the Rust pipeline buys. ``codec_pipeline.strict`` is on: an array the Rust
side cannot handle raises instead of silently falling back to the Python pipeline (which
would measure zarr-python under the zarrs label). The config is restored on finalize and
close_reader (by the zarr-python adapter), so later runs in the process are not switched to zarrs.
"""

from __future__ import annotations

from benchmarks_lib.adapters.zarr_python import ZarrPythonAdapter


class ZarrsAdapter(ZarrPythonAdapter):
    name = "zarrs"
    order = 20
    module = "zarrs"
    distribution = "zarrs"
    install_hint = "pip install 'iobench-book[zarrs]'  (zarrs, with zarr>=3)"
    # zarrs 0.2 has no numcodecs.lz4 codec (strict mode raises UnsupportedMetadataError).
    codecs = frozenset({"none", "zstd", "gzip", "blosc"})
    threads_setting = "zarr.config threading.max_workers (Rust threads) + codec_pipeline.chunk_concurrent_maximum"
    notes = "zarr-python API, Rust codec pipeline (strict: no silent fallback)"
    codec_pipeline = "zarrs.ZarrsCodecPipeline"
    #: the Rust pipeline measured on the v3 format only (zarr-python's options are its own)
    options = ()
    supported_versions = ">=0.2,<0.3"
    #: its Rust pipeline reads and writes local stores; an obstore S3 store is not measured through it here
    stores = ("file",)

    def _config(self) -> dict:
        config = super()._config()
        config["codec_pipeline.strict"] = True
        if self.threads:
            config["codec_pipeline.chunk_concurrent_maximum"] = self.threads
        return config
