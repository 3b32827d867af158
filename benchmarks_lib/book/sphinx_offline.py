"""Sphinx extension (listed in _config.yml): every page of the book works offline and without console errors.

Jupyter Book 1.x always loads sphinx-thebe and sphinx-togglebutton, whose setup code adds its inline scripts twice
(``const THEBE_JS_URL`` declared twice is a SyntaxError in the browser), and sphinx-thebe points the page at
thebe on unpkg.com. Launch buttons are off in this book, so thebe is dropped and every other script kept once.
The theme's colour mode defaults to "" on a reader's first visit ("Got invalid theme mode" on the console): "auto".
Pages with embedded ipywidgets (only those) load require.js and the widgets' HTML manager from the book's ``_static``
(:mod:`..vendor` fetches the pinned packages at build time), never from the CDN myst-nb defaults to. The widgets'
saved state, JSON inside a ``<script>`` element, holds names from records: every ``<`` in it is written ``\\u003c``,
so that no string can close the element (myst-nb escapes only the exact ``</script>``).
"""

from __future__ import annotations

#: set (to "1") in the environment of the Jupyter Book build when the widget scripts cannot be had: this extension
#: then loads none, and the explorer page shows its static figure
STATIC_WIDGETS = "IOBENCH_STATIC_WIDGETS"


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
    seen, kept = set(), []
    for js in context.get("script_files", []):
        if _is_thebe(js) or _key(js) in seen:
            continue
        seen.add(_key(js))
        kept.append(_script_safe(js))
    context["script_files"] = kept
    context.setdefault("default_mode", "auto")


def local_widget_scripts(app, config) -> None:
    import os
    from pathlib import Path

    from sphinx.errors import ExtensionError

    from benchmarks_lib.book.vendor import VENDOR_ROOT, VendorError, install

    if os.environ.get(STATIC_WIDGETS) == "1":  # `iobench book` found no widget scripts and said so
        config.nb_ipywidgets_js = {}
        return

    # not under _static: Jupyter Book adds every .js file it finds there to every page
    root = Path(app.srcdir) / VENDOR_ROOT
    try:
        config.nb_ipywidgets_js = install(root)
    except VendorError as exc:
        raise ExtensionError(str(exc)) from None
    config.html_static_path = [*config.html_static_path, str(root)]


def setup(app):
    app.connect("config-inited", local_widget_scripts, priority=100)
    app.connect("html-page-context", offline_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
