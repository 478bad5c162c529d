"""Where a known value hides in an encoded text: the decoded views of a text (JSON string escapes and
percent-encoding undone, level after level) and the way back from a view to the text's own offsets.

A tool output travels JSON-encoded inside a JSON request body, so a protected value holding a quote or a
backslash reaches a cassette written with two or more levels of escapes that no list of the value's
encodings can foresee. ``core.secrets.scan`` searches the text as written with its patterns, and asks
this module for the protected values it cannot see there (:func:`found_in_views`).
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Finding:
    """One secret in a text: where it is and what it looks like."""

    start: int
    end: int
    kind: str


_MAX_VIEWS = 16
"""Bound on the decoded views of one text (levels of escaping seen in practice: two or three)."""

_JSON_ESCAPE = re.compile(
    r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|([\"\\/bfnrt]))"
)
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


_Decoder = Callable[[re.Match[str]], list[tuple[str, int]]]
"""A match of an escape → the characters it stands for, each at its offset in the match."""


def _unescape_json(m: re.Match[str]) -> list[tuple[str, int]]:
    """The character a JSON escape stands for (a surrogate pair: one character), at the escape's start."""
    high, low, unit, simple = m.groups()
    if high is not None:
        return [(chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00)), 0)]
    if unit is not None:
        return [(chr(int(unit, 16)), 0)]
    return [(_SIMPLE_ESCAPES[simple], 0)]


def _unescape_percent(m: re.Match[str]) -> list[tuple[str, int]]:
    """The characters of a run of ``%XX`` bytes (UTF-8), each at the offset of its first byte's ``%``."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    out: list[tuple[str, int]] = []
    start = 0
    for i in range(0, len(m.group(0)), 3):
        chars = decoder.decode(bytes.fromhex(m.group(0)[i + 1 : i + 3]))
        out += [(c, start) for c in chars]
        if chars:
            start = i + 3
    out += [(c, start) for c in decoder.decode(b"", final=True)]
    return out


def _plain(decode: _Decoder, m: re.Match[str]) -> str:
    return "".join(c for c, _ in decode(m))


def _decoded(
    text: str, pattern: re.Pattern[str], decode: _Decoder, pos: list[int] | None
) -> tuple[str, list[int]] | None:
    """``text`` with every match of ``pattern`` decoded, and where each of its characters came from:
    character ``i`` of the result stands for ``text[p[i]:p[i + 1]]`` (``p`` mapped through ``pos``,
    the offsets of ``text`` itself in the original, when given), always whole escape sequences. None when
    nothing matches."""
    parts: list[str] = []
    offsets: list[int] = []
    last = 0
    for m in pattern.finditer(text):
        parts.append(text[last : m.start()])
        offsets.extend(range(last, m.start()))
        for char, at in decode(m):
            parts.append(char)
            offsets.append(m.start() + at)
        last = m.end()
    if not parts:
        return None
    parts.append(text[last:])
    offsets.extend(range(last, len(text) + 1))
    decoded = "".join(parts)
    if pos is not None:
        offsets = [pos[o] for o in offsets]
    return decoded, offsets


def found_in_views(text: str, values: list[str]) -> list[Finding]:
    """The protected values found in the decoded views of ``text`` (JSON string escapes and
    percent-encoding undone, one level at a time, in every order), as spans of ``text``.

    Only literal values are looked for there: the key-shaped patterns match characters no encoder escapes.
    A view is built as plain text first (``re.sub``); the offsets mapping it back to ``text`` only when a
    value is found in it (the recorder masks every event: most texts hold escapes and no secret)."""
    decoders = (("\\", _JSON_ESCAPE, _unescape_json), ("%", _PERCENT_RUN, _unescape_percent))
    found: list[Finding] = []
    seen = {text}
    # each view: its text and the decoders that lead to it from ``text``
    frontier: list[tuple[str, tuple[int, ...]]] = [(text, ())]
    views = 0
    while frontier and views < _MAX_VIEWS:
        nxt: list[tuple[str, tuple[int, ...]]] = []
        for current, chain in frontier:
            for i, (gate, pattern, decode) in enumerate(decoders):
                if gate not in current or views >= _MAX_VIEWS:
                    continue
                view = pattern.sub(functools.partial(_plain, decode), current)
                if view in seen:
                    continue
                seen.add(view)
                views += 1
                nxt.append((view, (*chain, i)))
                hits = [v for v in values if v in view]
                if not hits:
                    continue
                mapped, pos = text, list(range(len(text) + 1))
                for step in (*chain, i):
                    _, pat, dec = decoders[step]
                    result = _decoded(mapped, pat, dec, pos)
                    assert result is not None
                    mapped, pos = result
                found += [Finding(pos[f.start], pos[f.end], f.kind) for f in literal_findings(mapped, hits)]
        frontier = nxt
    return found


_NEVER_ESCAPED = re.compile(r"[A-Za-z0-9_.~-]+")
"""Characters no JSON or URL encoder in common use escapes (JSON escapes quotes, backslashes and control
characters, with ``ensure_ascii`` anything beyond ASCII, some encoders ``/`` or ``<>&``; percent-encoding
anything but these)."""


@lru_cache(maxsize=256)
def _anchor(value: str) -> str | None:
    """The longest run of never-escaped characters in ``value`` ("" when it has none), or None when the
    value is made of them only: then every encoder writes it as it is, and the plain search finds it."""
    if _NEVER_ESCAPED.fullmatch(value):
        return None
    return max(_NEVER_ESCAPED.findall(value), key=len, default="")


def may_be_encoded_in(value: str, text: str) -> bool:
    """Could ``value`` be in ``text`` in an encoded form? (It has a character an encoder escapes, and its
    longest run of characters none escapes is in ``text``.) The cheap test before building the views."""
    anchor = _anchor(value)
    return anchor is not None and anchor in text


def literal_findings(text: str, values: list[str]) -> list[Finding]:
    """Every occurrence of each value in ``text`` as it is written."""
    found: list[Finding] = []
    for value in values:
        start = text.find(value)
        while start != -1:
            found.append(Finding(start, start + len(value), "env-value"))
            start = text.find(value, start + len(value))
    return found
