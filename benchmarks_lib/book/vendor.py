"""The scripts the explorer's charts load, served from the book itself, never from a CDN.

The explorer's page in the HTML book draws Vega-Lite charts in the reader's browser (controls redraw without a
kernel): it needs vega, vega-lite and vega-embed. At build time these pinned npm packages are fetched from the npm
registry once, checked against their pinned sha512 integrity, cached outside the repository
(``$XDG_CACHE_HOME/iobench-book/npm``) and unpacked into ``.iobench-vendor/vendor/`` (ignored by git; not under
``_static``, whose every script Jupyter Book adds to every page), an extra static path from which Sphinx copies
them into the HTML's ``_static/vendor/``; only a page that draws charts loads them
(:mod:`.sphinx_offline`). Nothing is committed; a reader's browser asks no other host.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import tarfile
import urllib.request
from pathlib import Path

#: where the pinned packages are fetched from; IOBENCH_NPM_REGISTRY names a mirror
DEFAULT_REGISTRY = "https://registry.npmjs.org"
#: name -> (version, sha512 integrity as npm records it, the script to load (first), then the other files served).
#: The majors follow altair's (``altair.VEGA_VERSION``, ``VEGALITE_VERSION``, ``VEGAEMBED_VERSION``: the specs
#: it writes; vega 6.4.0, as 6.3.0's bundle calls itself 5.33.1 and vega-embed then warns of a mismatch); all
#: three are BSD-3-Clause, their licences served beside them.
PACKAGES = {
    "vega": ("6.4.0", "rHXCq2LpEWCLMjXBEj7hocY9G0/i5TGYRayGGSj06VTF4+l2IG2Z7oeZKCjWbUh/7hTE/mVhbaOPB72wCElh6g==",
             ("build/vega.min.js", "LICENSE")),
    "vega-lite": ("6.4.1", "KO3ybHNouRK4A0al/+2fN9UqgTEfxrd/ntGLY933Hg5UOYotDVQdshR3zn7OfXwQ7uj0W96Vfa5R+QxO8am3IQ==",
                  ("build/vega-lite.min.js", "LICENSE")),
    "vega-embed": ("7.3.0", "wQ8s5GaSzqoKgmRfbRolgBrjE2CP7ZKHXqH7NijxMqPjpdWxSs4Dn8tvp9g0giQvh2cK+3p56sxjWWM0wNngGw==",
                   ("build/vega-embed.min.js", "LICENSE")),
}
#: the extra static directory (under the book's source) and, inside it, where the files go:
#: ``vendor/<package>/<path in it>``
VENDOR = "vendor"
VENDOR_ROOT = ".iobench-vendor"

class VendorError(RuntimeError):
    """A pinned package could not be fetched or did not match its integrity (one line)."""


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "iobench-book" / "npm"


def _tarball(name: str, version: str, integrity: str) -> bytes:
    cached = cache_dir() / f"{name.replace('/', '__')}-{version}.tgz"
    data = cached.read_bytes() if cached.exists() else None
    if data is None or _sha512(data) != integrity:
        registry = os.environ.get("IOBENCH_NPM_REGISTRY") or DEFAULT_REGISTRY
        url = f"{registry.rstrip('/')}/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read()
        except (OSError, ValueError) as exc:
            why = getattr(exc, "reason", None) or exc
            raise VendorError(f"could not fetch {name}@{version} from {url} ({why}); the explorer's charts need it "
                              f"once (then it is cached in {cache_dir()})") from None
        if _sha512(data) != integrity:
            raise VendorError(f"{name}@{version} from {url} does not match its pinned sha512 integrity; not used")
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        tmp.replace(cached)
    return data


def _sha512(data: bytes) -> str:
    return base64.b64encode(hashlib.sha512(data).digest()).decode()


def scripts() -> list[str]:
    """The chart scripts in the order a page loads them (vega-lite needs vega; vega-embed both), relative to the
    HTML's ``_static``."""
    return [f"{VENDOR}/{name}/{files[0]}" for name, (_, _, files) in PACKAGES.items()]


def install(static_dir: Path) -> list[str]:
    """Unpack the pinned packages under ``static_dir/vendor/`` (once per version); return :func:`scripts`."""
    from fnmatch import fnmatch

    vendor = static_dir / VENDOR
    for old in vendor.iterdir() if vendor.is_dir() else ():
        if old.name in PACKAGES:  # else unpacked by an earlier version of this module (the widget scripts)
            continue
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        else:
            old.unlink()
    for name, (version, integrity, wanted) in PACKAGES.items():
        target = vendor / name
        stamp = target / f".{version}"
        if not stamp.exists():
            shutil.rmtree(target, ignore_errors=True)  # our own unpacked copy of an older version
            with tarfile.open(fileobj=io.BytesIO(_tarball(name, version, integrity)), mode="r:gz") as tar:
                for member in tar.getmembers():
                    inner = member.name.removeprefix("package/")
                    if member.isfile() and ".." not in inner.split("/") and any(fnmatch(inner, w) for w in wanted):
                        out = target / inner
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_bytes(tar.extractfile(member).read())
            stamp.touch()
    return scripts()
