"""The scripts a page with embedded ipywidgets loads, served from the book itself, never from a CDN.

At build time the pinned npm packages (require.js and the widgets' HTML manager) are fetched from the npm
registry once, checked against their pinned sha512 integrity, cached outside the repository
(``$XDG_CACHE_HOME/iobench-book/npm``) and unpacked into ``.iobench-vendor/vendor/`` (ignored by git; not
under ``_static``, whose every script Jupyter Book adds to every page), an extra static path from which
Sphinx copies them into the HTML's ``_static/vendor/``. Nothing is committed; a reader's browser asks no other host.
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
#: name -> (version, sha512 integrity as npm records it, files of the package to serve)
PACKAGES = {
    "requirejs": ("2.3.8", "7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
                  ("require.js",)),
    "@jupyter-widgets/html-manager": (
        "1.0.15", "5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        ("dist/embed-amd.js", "dist/*.woff2", "dist/*.woff", "dist/*.ttf", "dist/*.eot", "dist/*.svg")),
}
#: the extra static directory (under the book's source) and, inside it, where the files go:
#: ``vendor/<package>/<path in it>``,
#: the npm layout, so that the manager finds its fonts where it looks for them (next to its own module URL)
VENDOR = "vendor"
VENDOR_ROOT = ".iobench-vendor"
#: loaded between require.js and the manager: module URLs (hence the manager's fonts) and the base URL of
#: widget modules it does not bundle resolve to this folder, whatever the page's depth; never to a CDN
CONFIG_JS = """// written by benchmarks_lib.book.vendor: the widget manager's files are served from this folder
(function () {
  var here = document.currentScript.src.replace(/[^/]*$/, "");
  require.config({ baseUrl: here });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("script[data-jupyter-widgets-cdn]").forEach(function (s) {
      s.setAttribute("data-jupyter-widgets-cdn", here);
    });
  });
})();
"""


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
            raise VendorError(f"could not fetch {name}@{version} from {url} ({why}); the explorer's widgets need it "
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


def install(static_dir: Path) -> dict[str, dict[str, str]]:
    """Unpack the pinned packages under ``static_dir/vendor/`` (once per version); return the
    ``nb_ipywidgets_js`` setting (paths relative to the HTML's ``_static``) that loads them in order."""
    from fnmatch import fnmatch

    vendor = static_dir / VENDOR
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
    # the manager's bundle asks for its fonts both next to itself and one package level up (its webpack public
    # path is the scope's folder): they are served from both, so no icon ever fails to load
    scope = vendor / "@jupyter-widgets"
    for font in (scope / "html-manager" / "dist").glob("*"):
        if font.suffix in (".woff2", ".woff", ".ttf", ".eot", ".svg") and not (scope / font.name).exists():
            shutil.copyfile(font, scope / font.name)
    (vendor / "widgets-config.js").write_text(CONFIG_JS)
    require, manager = (f"{VENDOR}/{name}/{PACKAGES[name][2][0]}" for name in PACKAGES)
    # the CDN attribute is rewritten to this folder by CONFIG_JS: a widget module the manager does not bundle
    # then fails on this machine rather than asking another host
    return {require: {}, f"{VENDOR}/widgets-config.js": {},
            manager: {"data-jupyter-widgets-cdn": "", "data-jupyter-widgets-cdn-only": ""}}
