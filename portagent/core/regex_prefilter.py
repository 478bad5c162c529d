"""A fast yes/no gate in front of a Python regex: an RE2 pattern that matches wherever it might.

Python's ``re`` scans a long text in time proportional to the text for every pattern, and the secret
scanner runs some forty patterns over every report, cassette and trace it writes. RE2 (``google-re2``,
already a dependency for policy regexes) answers "is there any match at all?" an order of magnitude
faster, but its syntax and character classes differ (no lookaround, ASCII ``\\w``/``\\d``/``\\s``). So
it is used only to *skip* a pattern: :func:`prefilter` translates a Python pattern into an RE2 pattern
whose language contains the original's —

- zero-width assertions (``\\b``, ``\\B``, ``\\A``, ``\\Z``, ``^``, ``$``, lookahead, lookbehind) are
  dropped: a match without the constraint is still a match;
- ``\\d``, ``\\w``, ``\\s`` become the Unicode categories that contain Python's Unicode classes;
  ``\\D``, ``\\W``, ``\\S`` stay (RE2's ASCII complements contain Python's Unicode ones);
- in a negated class they stay as they are: RE2's ASCII ``\\w`` is inside Python's, so the
  complement is wider;
- anything whose widening is not obvious (backreferences, nested sets, verbose mode, conditionals,
  atomic groups) gives ``None``: that pattern always runs.

When the gate says no, the Python pattern cannot match; when it says yes, the Python pattern decides.
The findings are therefore exactly those of the Python patterns alone (a property test compares them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_WIDE_CLASS = {"d": r"\pN", "w": r"\pL\pN\pM_", "s": r"\s\pZ\x{0b}\x{1c}-\x{1f}\x{85}"}
_ZERO_WIDTH = {"b", "B", "A", "Z"}
_COUNTED = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
"""A counted repeat as Python reads it: ``{m}``, ``{m,}``, ``{m,n}``, and ``{,n}`` / ``{,}`` (from 0)."""
_RE2_MAX_REPEAT = 1000


class _Unsupported(Exception):
    pass


def prefilter(pattern: re.Pattern[str]) -> Any | None:
    """A compiled RE2 pattern matching a superset of ``pattern``'s matches, or None."""
    source = _gate_source(pattern)
    return None if source is None else _compile(source)


def prefilter_any(patterns: Sequence[re.Pattern[str]]) -> Any | None:
    """One RE2 pattern matching wherever *any* of ``patterns`` might (the alternation of their gates), or
    None when one of them has no gate: a text it finds nothing in needs none of the patterns run."""
    sources = [_gate_source(p) for p in patterns]
    if not sources or any(s is None for s in sources):
        return None
    return _compile("|".join(f"(?:{s})" for s in sources), max_mem=64 << 20)


def _gate_source(pattern: re.Pattern[str]) -> str | None:
    """The RE2 source of ``pattern``'s gate, its flags inline, or None."""
    if pattern.flags & re.VERBOSE and re.search(r"[\s#]", pattern.pattern):
        return None  # verbose mode changes what whitespace and '#' mean; without them it changes nothing
    try:
        text = _translate(pattern.pattern)
    except _Unsupported:
        return None
    flags = ""
    if pattern.flags & re.IGNORECASE:
        flags += "i"
    if pattern.flags & re.MULTILINE:
        flags += "m"
    if pattern.flags & re.DOTALL:
        flags += "s"
    source = f"(?{flags}:{text})" if flags else text
    return source if _compile(source) is not None else None


def _compile(source: str, max_mem: int | None = None) -> Any | None:
    try:
        import re2
    except ImportError:  # pragma: no cover - a core dependency
        return None
    options = re2.Options()
    options.log_errors = False
    if max_mem is not None:
        options.max_mem = max_mem
    try:
        return re2.compile(source, options)
    except Exception:  # re2.error, or a size limit: the pattern simply runs every time
        return None


def _translate(src: str) -> str:
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            if i + 1 >= n:
                raise _Unsupported
            e = src[i + 1]
            if e in _ZERO_WIDTH:
                i += 2
                continue
            if e.isdigit():  # a backreference (or an octal escape): not a regular language
                raise _Unsupported
            if e in _WIDE_CLASS:
                out.append(f"[{_WIDE_CLASS[e]}]")
            else:
                out.append(src[i : i + 2])
            i += 2
        elif c == "[":
            end, body = _char_class(src, i)
            out.append(body)
            i = end
        elif c in "^$":
            i += 1
        elif c == "{" and (m := _COUNTED.match(src, i)) and (m.group(1) or m.group(2)):
            low, comma, high = int(m.group(1) or 0), m.group(2), m.group(3)
            if low > _RE2_MAX_REPEAT:
                raise _Unsupported
            # RE2 refuses counts above 1000 (an open upper bound only widens), and reads "{,n}" as text
            if not comma:
                out.append(f"{{{low}}}")
            elif not high or int(high) > _RE2_MAX_REPEAT:
                out.append(f"{{{low},}}")
            else:
                out.append(f"{{{low},{high}}}")
            i = m.end()
        elif c == "(" and src.startswith("(?", i):
            if src.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
                i = _group_end(src, i)
                out.append("(?:)")  # keeps a following quantifier attached to something
            elif src.startswith(("(?:", "(?P<"), i) or re.match(r"\(\?[aiLmsux-]+[:)]", src[i:]):
                out.append(c)
                i += 1
            else:  # (?>…), (?(…)…), (?#…), (?P=…): not translated
                raise _Unsupported
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _char_class(src: str, start: int) -> tuple[int, str]:
    """The class starting at ``src[start] == "["``: (index after it, its RE2 form)."""
    i = start + 1
    negated = i < len(src) and src[i] == "^"
    if negated:
        i += 1
    parts = ["[^" if negated else "["]
    first = True
    while i < len(src):
        c = src[i]
        if c == "]" and not first:
            parts.append("]")
            return i + 1, "".join(parts)
        first = False
        if c == "\\":
            if i + 1 >= len(src):
                raise _Unsupported
            e = src[i + 1]
            if e in _WIDE_CLASS and not negated:
                parts.append(_WIDE_CLASS[e])
            elif e.isdigit() or e in "bAZ":
                raise _Unsupported
            else:
                parts.append(src[i : i + 2])
            i += 2
            continue
        if c == "[":  # a nested set (a FutureWarning in Python) or a POSIX class: not translated
            raise _Unsupported
        parts.append(c)
        i += 1
    raise _Unsupported


def _group_end(src: str, start: int) -> int:
    """Index just after the group opening at ``start`` (escapes and classes skipped)."""
    depth = 0
    i = start
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i, _ = _char_class_span(src, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise _Unsupported


def _char_class_span(src: str, start: int) -> tuple[int, None]:
    i = start + 1
    if i < len(src) and src[i] == "^":
        i += 1
    first = True
    while i < len(src):
        c = src[i]
        if c == "]" and not first:
            return i + 1, None
        first = False
        i += 2 if c == "\\" else 1
    raise _Unsupported
