"""Helpers for the handler shims ``portagent import`` generates (``portagent_shims_<agent>_<hash>.py``).

portagent calls a handler as ``handler(**args)`` and takes its return value as the output (ADR 0004).
Some native tool functions are written for another convention; a generated shim calls the original
function unchanged and converts only at the boundary:

- ``call_original``: the function takes the SDK's context object (openai-agents ``RunContextWrapper``,
  ADK ``ToolContext``) or a parameter named ``context``; the shim passes what it is told (``None`` for an
  SDK context portagent cannot provide) and awaits the result when it is a coroutine;
- ``from_mcp_content``: a Claude SDK MCP tool handler takes one ``args`` dict and returns MCP content
  (``{"content": [{"type": "text", "text": …}], "is_error": bool}``); a text block holding JSON becomes
  that value, other text ``{"text": …}``, ``is_error`` a ``handler_error`` failure.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

from portagent.tools.observations import ToolFailure


async def call_original(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    result = fn(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _block_text(block: Any) -> str | None:
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    return None


def from_mcp_content(result: Any) -> Any:
    """An MCP tool result (as SDK MCP tool handlers return it) → a portagent handler value."""
    if not isinstance(result, dict):
        return result
    blocks = result.get("content") or []
    texts = [t for t in (_block_text(b) for b in blocks) if t is not None]
    text = "\n".join(texts)
    if result.get("is_error") or result.get("isError"):
        raise ToolFailure("handler_error", text or "the tool reported an error")
    if len(blocks) != len(texts):
        kinds = sorted({str(b.get("type")) for b in blocks if isinstance(b, dict)} - {"text"})
        return {"text": text, "non_text_content": kinds}
    if len(texts) == 1:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return {"text": text}


async def call_mcp_handler(handler: Callable[[dict[str, Any]], Any], args: dict[str, Any]) -> Any:
    """Call a Claude SDK MCP tool handler with its ``args`` dict and convert what it returns."""
    return from_mcp_content(await call_original(handler, args))
