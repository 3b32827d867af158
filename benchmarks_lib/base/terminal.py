"""Strings from records shown to a person: printed as text, never as rich markup, with invisible characters visible.

A results directory may come from anyone, so a backend named ``[/]x``, a CPU model ``[link=https://evil]x[/link]``
or one holding ``\\x1b]8;;http://evil\\x07`` is data: :func:`text` makes a rich ``Text`` of it (no markup, no
emoji codes, no highlighting) and :func:`visible` shows every character that is not shown as itself as its escape
(``\\x1b``, ``\\u202e``): controls, and the format characters that reorder or hide text (a right-to-left override
makes ``exe.txt`` of ``txt.exe``). This is the one definition of those characters: the book's Markdown and HTML
(``base.markup``) and the records as read (``base.untrusted``) use it too. rich is imported only by :func:`text`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

#: controls (Unicode category Cc: C0, DEL, C1)
CONTROL_RANGES = ((0x00, 0x1F), (0x7F, 0x9F))
#: format characters (Cf, Unicode 15): bidirectional marks, embeddings, overrides and isolates, zero-width
#: characters, the soft hyphen, invisible operators, tags
FORMAT_RANGES = ((0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891),
                 (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064),
                 (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
                 (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F))
#: line and paragraph separators (Zl, Zp)
SEPARATOR_RANGES = ((0x2028, 0x2029),)


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    """A regular-expression character class of ``ranges``, in escapes both Python and RE2 (Arrow) read."""
    def char(c: int) -> str:
        return f"\\x{{{c:x}}}" if c > 0xFF else f"\\x{c:02x}"

    return "[" + "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in ranges) + "]"


def _python(pattern: str) -> str:
    """``\\x{hhhh}`` (RE2) as Python writes it (``\\uhhhh``, ``\\Uhhhhhhhh``)."""
    return re.sub(r"\\x\{([0-9a-f]+)\}", lambda m: f"\\U{int(m.group(1), 16):08x}", pattern)


#: the format characters as an RE2 class (``pyarrow.compute``)
FORMAT_RE2 = _class(FORMAT_RANGES)
#: the format characters (what a record string read keeps escaped: its line breaks stay, to be shown as lines)
FORMAT = re.compile(_python(FORMAT_RE2))
#: every character never shown as itself: controls, format characters, line and paragraph separators
HIDDEN = re.compile(_python(_class(CONTROL_RANGES + FORMAT_RANGES + SEPARATOR_RANGES)))


def _escape(match: re.Match) -> str:
    return ascii(match.group())[1:-1]


def visible(value: object) -> str:
    """``str(value)`` with each hidden character shown as its Python escape (ESC as ``\\x1b``, newline as ``\\n``,
    a right-to-left override as ``\\u202e``)."""
    return HIDDEN.sub(_escape, str(value))


def visible_format(value: str) -> str:
    """``value`` with its format characters shown as escapes, its line breaks and other controls kept."""
    return FORMAT.sub(_escape, value)


def text(value: object, style: str = "") -> Text:
    """A record string (or any value) as rich ``Text``: printed as it is, never read as markup."""
    from rich.text import Text

    return Text(visible(value), style=style)
