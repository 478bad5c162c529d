"""Text from models, tools and stores, made safe to print on a person's terminal.

What a model wrote, a tool returned or an agent remembered reaches people through listings (``memory
list``, ``approvals show``, ``sessions show``). Printed raw, an escape sequence in it can move the cursor,
erase the line above ("IRREVERSIBLE" on an approval card) or retitle the window, and a bidirectional
override can make text read in another order than it is stored: the reviewer would decide on something
other than what runs. ``printable`` writes such characters as visible escapes (``\\x1b``, ``\\u202e``);
every other character, emoji and their joiners included, is left as it is. The stored text is never
changed: ``--json`` prints it exactly (JSON escapes control characters itself).
"""

from __future__ import annotations

import unicodedata

# Bidirectional formatting characters: the marks, embeddings, overrides and isolates. Other format
# characters (the zero-width joiner in emoji, soft hyphens) only shape how text looks, so they stay.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` with control characters, line/paragraph separators and bidi controls escaped.

    ``lines=True`` keeps newlines and tabs (a multi-line body, as ``sessions show`` prints a turn);
    otherwise they are escaped too, so one record stays on one line and cannot fake the next one."""
    if text.isprintable() and not (_BIDI & set(text)):
        return text
    out = []
    for ch in text:
        if lines and ch in "\n\t":
            out.append(ch)
        elif ch in _BIDI or unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)
