"""``{{…}}`` templates in scripted text and tool arguments.

Variables, read from the request being answered:

- ``last_tool_result`` — the most recent tool result in the request, parsed when it is JSON (or a
  Python literal, which some SDKs send: ``str(dict)``); ``last_tool_result.a.0.b`` walks into it.
- ``tool_results.N`` — the N-th tool result (0-based) in request order.
- ``first_user`` — the first user text.

Tool results are made comparable across vendors: Anthropic/Claude blocks are flattened to text,
Claude Code's ``<system-reminder>`` blocks are dropped (wire parser), and ADK's wrapping of a
non-dict return value as ``{"result": value}`` is undone (a one-key object under ``result``,
``output`` or ``return_value`` coming from Gemini becomes the bare value).

A placeholder whose path does not resolve is left as written, and a note is logged.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from portagent.wire.items import Item, RequestView

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}")
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


class TemplateContext:
    """Resolves placeholders against one request."""

    def __init__(self, view: RequestView) -> None:
        self._view = view
        self._results: list[Any] | None = None
        self.notes: list[str] = []

    def _tool_values(self) -> list[Any]:
        if self._results is None:
            self._results = [tool_result_value(i, self._view.api) for i in self._view.tool_results()]
        return self._results

    def lookup(self, expr: str) -> Any:
        head, *path = expr.split(".")
        value: Any
        if head == "last_tool_result":
            values = self._tool_values()
            value = values[-1] if values else _MISSING
        elif head == "tool_results":
            value = self._tool_values()
        elif head == "first_user":
            value = self._view.first_user_text() or ""
        else:
            value = _MISSING
        for part in path:
            if value is _MISSING:
                break
            if isinstance(value, Mapping):
                value = value.get(part, _MISSING)
            elif (
                isinstance(value, list)
                and part.lstrip("-").isdigit()
                and -len(value) <= int(part) < len(value)
            ):
                value = value[int(part)]
            else:
                value = _MISSING
        return value

    def render(self, text: str | None) -> str | None:
        if text is None or "{{" not in text:
            return text

        def sub(m: re.Match[str]) -> str:
            value = self.lookup(m.group(1))
            if value is _MISSING:
                self.notes.append(f"template {m.group(0)} did not resolve; left as written")
                return m.group(0)
            return render_value(value)

        return _PLACEHOLDER.sub(sub, text)

    def render_arguments(self, value: Any) -> Any:
        """Render templates inside an arguments object; a lone placeholder keeps the value's type."""
        if isinstance(value, str):
            m = _PLACEHOLDER.fullmatch(value.strip())
            if m:
                found = self.lookup(m.group(1))
                if found is not _MISSING:
                    return found
            return self.render(value)
        if isinstance(value, Mapping):
            return {k: self.render_arguments(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.render_arguments(v) for v in value]
        return value
