"""Parse Anthropic Messages response bodies (``POST /v1/messages``), JSON and SSE.

Formats per Anthropic's API reference ("Messages", "Streaming Messages") and the two real
recordings in ``shared/samples/vendor-recordings/anthropic``:

- ``content[]`` blocks: ``text``, ``tool_use`` (``id``, ``name``, *object* ``input``), ``thinking`` /
  ``redacted_thinking``, server tools (``server_tool_use`` + ``web_search_tool_result`` …) and the MCP
  connector's ``mcp_tool_use`` / ``mcp_tool_result``.
- A stream is ``message_start`` (id, model, first usage) → per block ``content_block_start`` /
  ``content_block_delta`` (``text_delta``, ``input_json_delta`` pieces of the tool input as a JSON
  string, ``thinking_delta``, ``signature_delta``) / ``content_block_stop`` → ``message_delta``
  (``stop_reason`` and the *cumulative* usage, whose fields replace the earlier ones) →
  ``message_stop``; ``ping`` and ``error`` events may appear anywhere. The llm-anthropic recording
  has ``input_json_delta`` with an empty ``partial_json`` for a tool without arguments: the input
  is then the block's start ``input`` (``{}``).
- Usage ("Prompt caching → Tracking cache performance"): ``input_tokens`` *excludes* the cache
  buckets. OTel's input is ``input_tokens + cache_read_input_tokens +
  cache_creation_input_tokens``; the buckets are kept separately.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from portagent.wire.finish import reply_finish
from portagent.wire.items import Item, WireFormatError, require_mapping
from portagent.wire.response import (
    ResponseView,
    UsageView,
    as_int,
    body_form,
    finish,
    load_json,
    mapping_or_empty,
    sub,
)
from portagent.wire.sse import parse_sse

_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)
# Anthropic's stop_reason in the trace's words: ``wire.finish`` (the adapters' table: tool_use with calls →
# tool_calls, max_tokens → length, refusal → content_filter, pause_turn and newer values → other).


def anthropic_usage(usage: Any) -> UsageView | None:
    """Anthropic usage → OTel semantics (cache buckets added back into the input)."""
    if not isinstance(usage, Mapping):
        return None
    read = as_int(usage.get("cache_read_input_tokens"))
    write = as_int(usage.get("cache_creation_input_tokens"))
    return UsageView(
        input_tokens=as_int(usage.get("input_tokens")) + read + write,
        output_tokens=as_int(usage.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
        # Anthropic bills thinking as output and does not split it out; a breakdown is read when sent.
        reasoning_tokens=as_int(sub(usage, "output_tokens_details", "thinking_tokens")),
        raw=dict(usage),
    )


def _blocks_to_items(blocks: list[Any]) -> list[Item]:
    items: list[Item] = []
    for idx, block in enumerate(blocks):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            items.append(Item("assistant", "text", idx, text=str(block.get("text") or "")))
        elif kind == "tool_use":
            items.append(
                Item(
                    "assistant",
                    "tool_call",
                    idx,
                    name=block.get("name"),
                    call_id=block.get("id"),
                    arguments=block.get("input") if block.get("input") is not None else {},
                )
            )
        elif kind in ("server_tool_use", "mcp_tool_use"):
            via = "mcp" if kind == "mcp_tool_use" else "builtin"
            extra = {"server_name": block["server_name"]} if block.get("server_name") else {}
            items.append(
                Item(
                    "assistant",
                    "tool_call",
                    idx,
                    name=block.get("name"),
                    call_id=block.get("id"),
                    arguments=block.get("input") if block.get("input") is not None else {},
                    details={"builtin": True, "via": via, **extra},
                )
            )
        elif isinstance(kind, str) and kind.endswith("tool_result") and block.get("tool_use_id"):
            # Server/MCP tool results come back inside the same response, paired by tool_use_id.
            items.append(
                Item(
                    "tool",
                    "tool_result",
                    idx,
                    call_id=block.get("tool_use_id"),
                    output=block.get("content"),
                    details={"is_error": bool(block.get("is_error"))},
                )
            )
        elif kind in ("thinking", "redacted_thinking"):
            items.append(Item("assistant", "thinking", idx, text=str(block.get("thinking") or "")))
        else:
            items.append(Item("assistant", "other", idx, details={"type": str(kind)}))
    return items


def _view(
    message: Mapping[str, Any],
    blocks: list[Any],
    usage: Any,
    *,
    stream: bool,
    complete: bool,
    error: Mapping[str, Any] | None = None,
) -> ResponseView:
    items = _blocks_to_items(blocks)
    raw = message.get("stop_reason")
    raw_str = str(raw) if raw is not None else None
    has_calls = any(i.kind == "tool_call" and not i.details.get("builtin") for i in items)
    normalized = reply_finish("anthropic", raw_str, has_calls=has_calls) if raw_str is not None else None
    if not complete or error is not None:
        normalized = "error"
    return ResponseView(
        "anthropic.messages",
        message.get("id"),
        message.get("model"),
        tuple(items),
        anthropic_usage(usage),
        finish(normalized, has_calls),
        raw_str,
        stream,
        complete,
        error,
    )


def _stream(text: str) -> ResponseView:
    message: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, str] = {}
    error: Mapping[str, Any] | None = None
    stopped = recognised = False
    for frame in parse_sse(text):
        if not frame.data:
            continue
        try:
            event = frame.json()
        except ValueError:
            continue  # a frame cut in the middle (truncated stream)
        if not isinstance(event, Mapping):
            continue
        kind = event.get("type") or frame.event
        recognised = recognised or kind in _EVENTS
        if kind == "message_start" and isinstance(event.get("message"), Mapping):
            message = dict(event["message"])
            usage.update(message.get("usage") or {})
        elif kind == "content_block_start" and isinstance(event.get("content_block"), Mapping):
            blocks[as_int(event.get("index"))] = dict(event["content_block"])
        elif kind == "content_block_delta" and isinstance(event.get("delta"), Mapping):
            index = as_int(event.get("index"))
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            delta = event["delta"]
            match delta.get("type"):
                case "text_delta":
                    block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
                case "input_json_delta":
                    partial_json[index] = partial_json.get(index, "") + str(delta.get("partial_json") or "")
                case "thinking_delta":
                    block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
                case _:
                    pass  # signature_delta, citations_delta: nothing the trace needs
        elif kind == "message_delta":
            delta = mapping_or_empty(event.get("delta"))
            if delta.get("stop_reason") is not None:
                message["stop_reason"] = delta["stop_reason"]
            # message_delta usage is cumulative: its fields replace message_start's.
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            stopped = True
        elif kind == "error":
            err = mapping_or_empty(event.get("error"))
            error = {"type": err.get("type") or "error", "message": err.get("message") or ""}
    if not recognised:
        raise WireFormatError("no Anthropic Messages stream event in the body")
    for index, raw in partial_json.items():
        if raw.strip():
            try:
                blocks[index]["input"] = json.loads(raw)
            except ValueError:
                blocks[index]["input"] = raw  # cut or malformed: kept as the raw string
    ordered = [blocks[i] for i in sorted(blocks)]
    return _view(message, ordered, usage or None, stream=True, complete=stopped, error=error)


def parse_messages_response(body: Any) -> ResponseView:
    """Parse a ``/v1/messages`` response body: JSON (text or parsed) or an SSE stream."""
    if body_form(body) == "sse":
        return _stream(body.decode("utf-8") if isinstance(body, bytes) else body)
    value = require_mapping(load_json(body, "Messages body"), "Messages response")
    if value.get("type") not in (None, "message"):
        raise WireFormatError(f"not a Messages response (type={value.get('type')!r})")
    content = value.get("content")
    if not isinstance(content, list):
        raise WireFormatError("a Messages response needs a 'content' list")
    return _view(value, content, value.get("usage"), stream=False, complete=True)
