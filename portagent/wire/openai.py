"""Parse OpenAI request bodies: Responses (``POST /v1/responses``) and Chat Completions.

Formats as documented in OpenAI's API reference ("Responses → Create a model response",
"Chat → Create chat completion") and as sent by ``openai`` 3.x / openai-agents 0.24:

- Responses ``input`` is a string or a list of items. Message items may omit ``type: "message"``
  (openai-agents sends ``{"role": "user", "content": "..."}``); content is a string or a list of
  ``input_text`` / ``output_text`` parts. Tool calls are separate ``function_call`` items with a JSON
  *string* ``arguments``; results are ``function_call_output`` items keyed by ``call_id``.
  ``instructions`` carries the system prompt; ``developer``/``system`` role messages count as system.
- Chat ``messages`` use roles ``system``/``developer``/``user``/``assistant``/``tool`` (and the legacy
  ``function``); an assistant message holds optional text plus ``tool_calls[].function``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from portagent.wire.items import (
    Item,
    RequestView,
    ToolDeclaration,
    WireFormatError,
    require_list,
    require_mapping,
    text_of,
)


def parse_arguments(raw: Any) -> Any:
    """OpenAI sends arguments as a JSON string; return the object, or the raw string if invalid."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def _content_parts(content: Any) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        out: list[str] = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                out.append(str(part["text"]))
            elif isinstance(part, Mapping) and isinstance(part.get("refusal"), str):
                out.append(str(part["refusal"]))
        return out
    raise WireFormatError(f"message content must be a string or a list, got {type(content).__name__}")


def _responses_tool(tool: Any) -> ToolDeclaration:
    if not isinstance(tool, Mapping):
        raise WireFormatError("each entry of 'tools' must be an object")
    kind = str(tool.get("type", "function"))
    if kind == "function":
        name = tool.get("name")
        if not isinstance(name, str):
            raise WireFormatError("a function tool needs a string 'name'")
        return ToolDeclaration(name, tool.get("description"), tool.get("parameters"), "function")
    # Built-in tools (web_search, file_search, computer_use…) are named by their type.
    return ToolDeclaration(str(tool.get("name") or kind), None, None, kind)


def parse_responses_request(body: Any) -> RequestView:
    """Parse a ``POST /v1/responses`` body."""
    body = require_mapping(body, "Responses request")
    system: list[str] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        system.append(body["instructions"])
    items: list[Item] = []
    raw_input = body.get("input", [])
    if isinstance(raw_input, str):
        raw_input = [{"role": "user", "content": raw_input}]
    for idx, entry in enumerate(require_list(raw_input, "'input'")):
        if not isinstance(entry, Mapping):
            raise WireFormatError(f"input[{idx}] must be an object")
        kind = entry.get("type", "message")
        if kind == "message" or (kind is None and "role" in entry):
            role = entry.get("role")
            texts = _content_parts(entry.get("content"))
            if role in ("system", "developer"):
                system.extend(t for t in texts if t)
            elif role == "user":
                items.extend(Item("user", "text", idx, text=t) for t in texts)
            elif role == "assistant":
                items.extend(Item("assistant", "text", idx, text=t) for t in texts)
                if not texts:
                    items.append(Item("assistant", "other", idx))
            else:
                raise WireFormatError(f"input[{idx}] has unknown role {role!r}")
        elif kind == "function_call":
            items.append(
                Item(
                    "assistant",
                    "tool_call",
                    idx,
                    name=entry.get("name"),
                    call_id=entry.get("call_id"),
                    arguments=parse_arguments(entry.get("arguments")),
                )
            )
        elif kind == "function_call_output":
            output = entry.get("output")
            items.append(
                Item(
                    "tool",
                    "tool_result",
                    idx,
                    text=text_of(output),
                    call_id=entry.get("call_id"),
                    output=output,
                )
            )
        elif kind == "reasoning":
            summary = entry.get("summary") or []
            items.append(Item("assistant", "thinking", idx, text=text_of(summary)))
        elif isinstance(kind, str) and kind.endswith("_output"):
            items.append(
                Item(
                    "tool",
                    "tool_result",
                    idx,
                    text=text_of(entry.get("output")),
                    call_id=entry.get("call_id"),
                    output=entry.get("output"),
                )
            )
        elif isinstance(kind, str) and kind.endswith("_call"):
            items.append(Item("assistant", "tool_call", idx, name=kind, call_id=entry.get("call_id")))
        # item_reference and unknown item types carry nothing the responder needs.
    tools = tuple(_responses_tool(t) for t in require_list(body.get("tools") or [], "'tools'"))
    options = {
        "previous_response_id": body.get("previous_response_id"),
        "instructions": body.get("instructions"),
        "tool_choice": body.get("tool_choice"),
        "raw_tools": body.get("tools") or [],
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "max_output_tokens": body.get("max_output_tokens"),
        "parallel_tool_calls": body.get("parallel_tool_calls"),
        "store": body.get("store"),
        "metadata": body.get("metadata"),
        "reasoning": body.get("reasoning"),
        "text": body.get("text"),
    }
    return RequestView(
        "openai.responses",
        _model(body),
        bool(body.get("stream")),
        "\n\n".join(system),
        tuple(items),
        tools,
        options,
    )


def _chat_tool(tool: Any) -> ToolDeclaration:
    if not isinstance(tool, Mapping):
        raise WireFormatError("each entry of 'tools' must be an object")
    fn = tool.get("function")
    if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
        return ToolDeclaration(str(fn["name"]), fn.get("description"), fn.get("parameters"), "function")
    kind = str(tool.get("type", "function"))
    return ToolDeclaration(str(tool.get("name") or kind), None, None, kind)


def parse_chat_request(body: Any) -> RequestView:
    """Parse a ``POST /v1/chat/completions`` body."""
    body = require_mapping(body, "Chat Completions request")
    system: list[str] = []
    items: list[Item] = []
    for idx, msg in enumerate(require_list(body.get("messages"), "'messages'")):
        if not isinstance(msg, Mapping):
            raise WireFormatError(f"messages[{idx}] must be an object")
        role = msg.get("role")
        texts = _content_parts(msg.get("content"))
        if role in ("system", "developer"):
            system.extend(t for t in texts if t)
        elif role == "user":
            items.extend(Item("user", "text", idx, text=t) for t in texts)
        elif role == "assistant":
            items.extend(Item("assistant", "text", idx, text=t) for t in texts if t)
            for call in msg.get("tool_calls") or []:
                if not isinstance(call, Mapping):
                    raise WireFormatError(f"messages[{idx}].tool_calls entries must be objects")
                fn = call.get("function")
                if not isinstance(fn, Mapping):
                    fn = {}
                items.append(
                    Item(
                        "assistant",
                        "tool_call",
                        idx,
                        name=fn.get("name"),
                        call_id=call.get("id"),
                        arguments=parse_arguments(fn.get("arguments")),
                    )
                )
            if not any(i.message_index == idx for i in items):
                items.append(Item("assistant", "other", idx))
        elif role in ("tool", "function"):
            content = msg.get("content")
            items.append(
                Item(
                    "tool",
                    "tool_result",
                    idx,
                    text="".join(texts),
                    name=msg.get("name"),
                    call_id=msg.get("tool_call_id"),
                    output=content,
                )
            )
        else:
            raise WireFormatError(f"messages[{idx}] has unknown role {role!r}")
    tools = tuple(_chat_tool(t) for t in require_list(body.get("tools") or [], "'tools'"))
    stream_options = body.get("stream_options") or {}
    options = {
        "include_usage": bool(isinstance(stream_options, Mapping) and stream_options.get("include_usage")),
        "n": body.get("n"),
    }
    return RequestView(
        "openai.chat",
        _model(body),
        bool(body.get("stream")),
        "\n\n".join(system),
        tuple(items),
        tools,
        options,
    )


def _model(body: Mapping[str, Any]) -> str | None:
    model = body.get("model")
    return model if isinstance(model, str) else None
