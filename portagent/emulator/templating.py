"""``{{…}}`` templates in scripted text and tool arguments.

Variables, read from the request being answered:

- ``last_tool_result`` — the most recent tool result in the request, parsed when it is JSON (or a
  Python literal, which some SDKs send: ``str(dict)``); ``last_tool_result.a.0.b`` walks into it.
- ``tool_results.N`` — the N-th tool result (0-based) in request order.
- ``first_user`` — the first user text.
- ``occurrence`` — how many times this emulator has answered this turn (1, 2, …): a script can word a
  tool call differently each time it is asked, as a live model does.

Tool results are made comparable across vendors: Anthropic/Claude blocks are flattened to text,
Claude Code's ``<system-reminder>`` blocks are dropped (wire parser), and ADK's wrapping of a
non-dict return value as ``{"result": value}`` is undone (a one-key object under ``result``,
``output`` or ``return_value`` coming from Gemini becomes the bare value).

A placeholder may list alternatives, the first that resolves wins: ``{{last_tool_result.error |
last_tool_result.status | "done"}}`` (a quoted text always resolves). The grammar and the variable names
are checked when the script loads (``contracts.emulator_script.template_spans``); a placeholder none of
whose alternatives resolves against the request raises ``UnresolvedTemplate`` — the emulator answers an
error naming it, never the literal ``{{…}}`` text as if the model had said it.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from portagent.contracts.emulator_script import template_spans
from portagent.wire.items import Item, RequestView

_WRAPPER_KEYS = ("result", "output", "return_value")
_MISSING = object()


def tool_result_value(item: Item, api: str) -> Any:
    """The value of a tool result, parsed to an object when possible."""
    raw = item.output
    if api == "gemini.generate_content" and isinstance(raw, Mapping):
        if len(raw) == 1 and next(iter(raw)) in _WRAPPER_KEYS:
            raw = next(iter(raw.values()))
        if not isinstance(raw, str):
            return raw
        return _parse_text(raw)
    return _parse_text(item.text)


def _parse_text(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] in ("{", "[", '"') or stripped in ("true", "false", "null") or _is_number(stripped):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    if stripped[:1] in ("{", "["):
        try:
            return ast.literal_eval(stripped)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def render_value(value: Any) -> str:
    """How a value is written into text: strings as they are, everything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class UnresolvedTemplate(Exception):
    """A placeholder none of whose alternatives resolves against the request."""


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object with " + (", ".join(map(str, list(value)[:12])) or "no keys")
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {render_value(value)[:80]!r}"


class TemplateContext:
    """Resolves placeholders against one request."""

    def __init__(self, view: RequestView, occurrence: int = 1) -> None:
        self._view = view
        self._occurrence = occurrence
        self._results: list[Any] | None = None
        self.notes: list[str] = []

    def _tool_values(self) -> list[Any]:
        if self._results is None:
            self._results = [tool_result_value(i, self._view.api) for i in self._view.tool_results()]
        return self._results

    def lookup(self, expr: str) -> Any:
        """The value of one variable path, or the module's ``_MISSING`` marker."""
        return self._walk(expr.split("."))[0]

    def _walk(self, parts: list[str]) -> tuple[Any, str]:
        """(value or _MISSING, why it is missing)."""
        head, *path = parts
        value: Any
        if head == "last_tool_result":
            values = self._tool_values()
            if not values:
                return _MISSING, "the request holds no tool result yet"
            value = values[-1]
        elif head == "tool_results":
            value = self._tool_values()
        elif head == "first_user":
            value = self._view.first_user_text() or ""
        elif head == "occurrence":
            value = self._occurrence
        else:
            return _MISSING, f"unknown variable {head!r}"
        walked = head
        for part in path:
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            elif (
                isinstance(value, list)
                and part.lstrip("-").isdigit()
                and -len(value) <= int(part) < len(value)
            ):
                value = value[int(part)]
            else:
                return _MISSING, f"{walked} is {_describe(value)}, without {part!r}"
            walked += "." + part
        return value, ""

    def _resolve(self, alts: list[tuple[str, Any]], shown: str) -> Any:
        why: list[str] = []
        for kind, alt in alts:
            if kind == "text":
                return alt
            value, reason = self._walk(alt)
            if value is not _MISSING:
                return value
            why.append(reason)
        raise UnresolvedTemplate(
            f"template {shown} did not resolve: {'; '.join(why)}. Script the turn for what this request "
            f'holds, or give alternatives ({{{{a.error | a.status | "text"}}}})'
        )

    def render(self, text: str | None) -> str | None:
        if text is None or "{{" not in text:
            return text
        out, i = [], 0
        for start, end, alts in template_spans(text):
            out += [text[i:start], render_value(self._resolve(alts, text[start:end]))]
            i = end
        return "".join(out) + text[i:]

    def render_arguments(self, value: Any) -> Any:
        """Render templates inside an arguments object; a lone placeholder keeps the value's type."""
        if isinstance(value, str):
            spans = template_spans(value) if "{{" in value else []
            stripped = value.strip()
            if len(spans) == 1 and spans[0][1] - spans[0][0] == len(stripped):
                start, end, alts = spans[0]
                return self._resolve(alts, value[start:end])
            return self.render(value)
        if isinstance(value, Mapping):
            return {k: self.render_arguments(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.render_arguments(v) for v in value]
        return value
