"""Sphinx extension (listed in _config.yml): every page of the book works offline and without console errors.

Jupyter Book 1.x always loads sphinx-thebe and sphinx-togglebutton, whose setup code adds its inline scripts twice
(``const THEBE_JS_URL`` declared twice is a SyntaxError in the browser), and sphinx-thebe points the page at
thebe on unpkg.com. Launch buttons are off in this book, so thebe is dropped and every other script kept once.
The theme's colour mode defaults to "" on a reader's first visit ("Got invalid theme mode" on the console): "auto".
The explorer's page (only a page whose body holds :data:`..chapters.explore.charts.MARK`) loads vega, vega-lite
and vega-embed from the book's ``_static`` (:mod:`..vendor` fetches the pinned packages at build time), never from
a CDN. No page loads ipywidgets' scripts (myst-nb's default is a CDN): the book's explorer needs no kernel. Widget
state saved in a page all the same, JSON inside a ``<script>`` element, may hold names from records: every ``<``
in it is written ``\\u003c``, so that no string can close the element (myst-nb escapes only the exact
``</script>``).
"""

from __future__ import annotations

import os
from pathlib import Path

#: set (to "1") in the environment of the Jupyter Book build when the chart scripts cannot be had: this extension
#: then serves none, and the explorer page shows static figures
STATIC_CHARTS = "IOBENCH_STATIC_CHARTS"
#: the chart scripts load after the theme's own and before the page's body runs
CHART_PRIORITY = 600


def _key(js) -> tuple:
    attributes = getattr(js, "attributes", {}) or {}
    return str(getattr(js, "filename", js) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items()))


def _is_thebe(js) -> bool:
    filename = str(getattr(js, "filename", js) or "")
    body = str((getattr(js, "attributes", {}) or {}).get("body", ""))
    return "thebe" in filename.lower() or "THEBE_JS_URL" in body


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _script_safe(js):
    """The widget state's script with every ``<`` of its JSON escaped (the same JSON value; no end tag inside)."""
    attributes = getattr(js, "attributes", {}) or {}
    if attributes.get("type") != WIDGET_STATE or "<" not in str(attributes.get("body", "")):
        return js
    body = str(attributes["body"]).replace("<", "\\u003c")
    return type(js)(js.filename, priority=js.priority, **{**attributes, "body": body})


def offline_scripts(app, pagename, templatename, context, doctree) -> None:
    from benchmarks_lib.book.vendor import scripts
    from benchmarks_lib.chapters.explore.charts import MARK

    if MARK in str(context.get("body", "")) and os.environ.get(STATIC_CHARTS) != "1":
        for path in scripts():  # this page only (Sphinx adds a file given in html-page-context to the page)
            app.add_js_file(path, priority=CHART_PRIORITY)
    seen, kept = set(), []
    for js in context.get("script_files", []):
        if _is_thebe(js) or _key(js) in seen:
            continue
        seen.add(_key(js))
        kept.append(_script_safe(js))
    context["script_files"] = kept
    context.setdefault("default_mode", "auto")


def local_chart_scripts(app, config) -> None:
    from sphinx.errors import ExtensionError

    from benchmarks_lib.book.vendor import VENDOR_ROOT, VendorError, install

    config.nb_ipywidgets_js = {}  # no page needs them, and myst-nb's default fetches them from a CDN
    if os.environ.get(STATIC_CHARTS) == "1":  # `iobench book` found no chart scripts and said so
        return
    # not under _static: Jupyter Book adds every .js file it finds there to every page
    root = Path(app.srcdir) / VENDOR_ROOT
    try:
        install(root)
    except VendorError as exc:
        raise ExtensionError(str(exc)) from None
    config.html_static_path = [*config.html_static_path, str(root)]


def setup(app):
    app.connect("config-inited", local_chart_scripts, priority=100)
    app.connect("html-page-context", offline_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
