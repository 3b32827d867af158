"""Strings from records on the terminal: printed as text, never as rich markup, with control characters visible.

A results directory may come from anyone, so a backend named ``[/]x``, a CPU model ``[link=https://evil]x[/link]``
or one holding ``\\x1b]8;;http://evil\\x07`` is data: :func:`text` makes a rich ``Text`` of it (no markup, no
emoji codes, no highlighting) and :func:`visible` shows every control character as its escape (``\\x1b``).
"""

from __future__ import annotations

import re

from rich.text import Text

#: C0 and C1 controls (ESC among them), DEL, the bidirectional overrides and isolates, line/paragraph separators
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def visible(value: object) -> str:
    """``str(value)`` with each control character shown as its Python escape (ESC as ``\\x1b``, newline as ``\\n``)."""
    return CONTROL.sub(lambda m: ascii(m.group())[1:-1], str(value))


def text(value: object, style: str = "") -> Text:
    """A record string (or any value) as rich ``Text``: printed as it is, never read as markup."""
    return Text(visible(value), style=style)
