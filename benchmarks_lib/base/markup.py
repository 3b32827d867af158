"""Strings from records made safe where the book shows them: a results directory may come from anyone.

Every string a run brings (environment, backend, dataset and codec names, reasons, parameters, run ids,
versions) is data. MyST and the Markdown outputs of notebooks pass raw HTML through and read MyST syntax
(roles, substitutions, math), so such a string enters Markdown only through ``md`` (text), ``md_code`` (a code
span) or ``markdown_table`` (every cell escaped), and HTML only through ``html_text``. pandas' own HTML tables
escape their cells; figures never read ``$`` as math (``style.subplots``), and ``short`` keeps a long name from
stretching a figure.

Nothing a record says becomes a link: the notebooks' Markdown is rendered with linkify on (GFM), which makes
``https://x``, ``//127.0.0.1``, ``www.x.org``, ``x.org/a`` and ``a@x.org`` live links, so ``md`` escapes a
scheme's ``:`` and ``//`` and a domain's ``.`` (an escaped character is a token of its own: no link spans it), and
a link never forms in a code span. Nor does a record change the text's direction: format characters (a
right-to-left override, U+202E) are shown as their escapes, as on the terminal (``base.terminal``).
"""

from __future__ import annotations

import hashlib
import html
import re
import string

import pandas as pd

from benchmarks_lib.base.terminal import visible, visible_format

#: escaped wherever they stand: raw HTML and entities (``< > &``), code spans and MyST roles, links and images,
#: emphasis, table cells, MyST substitutions and math, headings and footnotes
_ALWAYS = frozenset("\\`*_{}[]()<>&!|$~#^")
#: escaped where a link could form: a scheme's ``:`` and ``//`` (``https://``, ``//127.0.0.1``, ``mailto:``) and a
#: ``.`` before a letter (a domain: ``www.x.org``, ``x.org/a``, ``a@x.org``); ``label: value``, ``14:31`` and
#: ``1.5`` stay as they are
_LINK = re.compile(r":(?=//)|/(?=/)|(?i:(?<=mailto)):|\.(?=[^\W\d_])")
#: a leading ``1.`` or ``1)`` would start an ordered list where a value opens a line
_ORDERED = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")
#: control characters (C0, DEL and C1): a space each on one line
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(value: object) -> str:
    """``value`` as text on one line: line breaks (any Unicode kind) and other control characters become spaces,
    format characters (bidirectional overrides, zero-width characters) their escapes (``\\u202e``)."""
    return visible_format(_CONTROL.sub(" ", " ".join(str(value).splitlines())))


def md(value: object) -> str:
    """``value`` as literal Markdown text (MyST or GFM, in a paragraph, a list or a table cell): it renders as
    the same characters and can never form HTML, a link (linkify's bare ones included), an image, a role, a
    directive, math or a table cell."""
    text = one_line(value)
    out = "".join("\\" + c if c in _ALWAYS else c for c in text)
    out = _LINK.sub(lambda m: "\\" + m.group(), out)
    if text and text[0] in string.punctuation and not out.startswith("\\"):  # "-", "+", "=", "%" open a line
        out = "\\" + out
    return _ORDERED.sub(r"\1\\\2", out)


def md_code(value: object, *, in_table: bool = False) -> str:
    """``value`` as a Markdown code span, whatever backticks it holds (its text shown literally); ``in_table``:
    pipes escaped as a GFM table cell needs them, even inside code."""
    text = one_line(value)
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ") and text.strip()):
        text = f" {text} "
    text = text or " "
    return f"{fence}{text.replace('|', chr(92) + '|') if in_table else text}{fence}"


def short(value: object, limit: int = 48) -> str:
    """``value`` on one line and at most ``limit`` characters, for a figure's label: a longer one is cut, with an
    ellipsis and a short hash of the whole, so that two long names stay apart."""
    text = one_line(value)
    if len(text) <= limit:
        return text
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{text[:max(limit - 8, 1)]}\u2026{digest}"


def html_text(value: object) -> str:
    """``value`` as HTML text (quotes too, so it is safe in an attribute), its hidden characters shown as escapes."""
    return html.escape(visible(value), quote=True)


def _cell(value: object) -> str:
    """A table cell: ``-`` for a missing value, else the value escaped."""
    try:
        missing = value is None or bool(pd.isna(value))
    except (TypeError, ValueError):  # an array or a list: shown as it is
        missing = False
    return "-" if missing else md(value)


def markdown_table(table) -> str:
    """A DataFrame as a GFM table, no index, every header and cell escaped with ``md``."""
    lines = ["| " + " | ".join(_cell(c) for c in table.columns) + " |", "|" + " --- |" * len(table.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


__all__ = ["html_text", "markdown_table", "md", "md_code", "one_line", "short"]
