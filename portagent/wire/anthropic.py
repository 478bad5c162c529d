"""Parse Anthropic Messages request bodies (``POST /v1/messages``, also ``?beta=true``).

Format per Anthropic's API reference ("Messages → Create a Message"): ``system`` is a string or a
list of text blocks; ``messages[].content`` is a string or a list of blocks (``text``, ``tool_use``
with an *object* ``input``, ``tool_result`` with ``tool_use_id`` and string-or-blocks ``content``,
``thinking`` / ``redacted_thinking``, images, documents). Tool results travel in *user* messages.

Claude Code quirk (SDK_NOTES §4.5): the CLI prepends ``<system-reminder>…</system-reminder>`` text
(environment, date, token/USD budget) to the first user turn — as separate text blocks or inside
the prompt's own block — and appends more to tool results. :func:`strip_system_reminders` removes
them, so a conversation can be recognised by what the user actually typed.
"""

from __future__ import annotations

import re
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

_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)


def strip_system_reminders(text: str) -> str:
    """Remove Claude Code's ``<system-reminder>`` blocks and the blank space they leave."""
    if "<system-reminder>" not in text:
        return text
    return _REMINDER.sub("", text).strip()


def _blocks(content: Any, where: str) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return require_list(content, where)


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return strip_system_reminders(content)
    if isinstance(content, list):
        texts = [
            strip_system_reminders(text_of(b))
            for b in content
            if isinstance(b, Mapping) and b.get("type", "text") == "text"
        ]
        return "\n".join(t for t in texts if t)
    return text_of(content)


def _system_text(system: Any) -> str:
    """The text of a ``system`` field or message: a string, or a list of text blocks."""
    if isinstance(system, list):
        return "\n\n".join(text_of(b) for b in system if isinstance(b, Mapping))
    return system if isinstance(system, str) else ""


def parse_messages_request(body: Any) -> RequestView:
    """Parse a ``POST /v1/messages`` body."""
    body = require_mapping(body, "Messages request")
    system = body.get("system")
    system_text = _system_text(system)
    items: list[Item] = []
    for idx, msg in enumerate(require_list(body.get("messages"), "'messages'")):
        if not isinstance(msg, Mapping):
            raise WireFormatError(f"messages[{idx}] must be an object")
        role = msg.get("role")
        if role == "system":
            # Claude Code sends its environment notes as a system message among the turns for some models
            # (the aliases ``opus``/``sonnet`` among them): instructions, not a turn of the conversation
            extra = _system_text(_blocks(msg.get("content"), f"messages[{idx}].content"))
            system_text = "\n\n".join(t for t in (system_text, extra) if t)
            continue
        if role not in ("user", "assistant"):
            raise WireFormatError(
                f"messages[{idx}].role must be 'user', 'assistant' or 'system', got {role!r}"
            )
        blocks = _blocks(msg.get("content"), f"messages[{idx}].content")
        before = len(items)
        for block in blocks:
            if not isinstance(block, Mapping):
                raise WireFormatError(f"messages[{idx}].content entries must be objects")
            kind = block.get("type")
            if kind == "text":
                text = str(block.get("text", ""))
                if role == "user":
                    text = strip_system_reminders(text)
                    if not text:
                        continue  # a block that was only reminders
                items.append(Item(role, "text", idx, text=text))
            elif kind == "tool_use" and role == "assistant":
                items.append(
                    Item(
                        "assistant",
                        "tool_call",
                        idx,
                        name=block.get("name"),
                        call_id=block.get("id"),
                        arguments=block.get("input"),
                    )
                )
            elif kind == "tool_result":
                content = block.get("content")
                items.append(
                    Item(
                        "tool",
                        "tool_result",
                        idx,
                        text=_tool_result_text(content),
                        call_id=block.get("tool_use_id"),
                        output=content,
                        details={"is_error": bool(block.get("is_error"))},
                    )
                )
            elif kind in ("thinking", "redacted_thinking") and role == "assistant":
                items.append(Item("assistant", "thinking", idx, text=str(block.get("thinking", ""))))
            elif role == "assistant":
                items.append(Item("assistant", "other", idx))
        if role == "assistant" and len(items) == before:
            items.append(Item("assistant", "other", idx))
    tools: list[ToolDeclaration] = []
    for tool in require_list(body.get("tools") or [], "'tools'"):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise WireFormatError("each entry of 'tools' must be an object with a string 'name'")
        tools.append(
            ToolDeclaration(
                str(tool["name"]),
                tool.get("description"),
                tool.get("input_schema"),
                str(tool.get("type") or "custom"),
            )
        )
    thinking = body.get("thinking")
    thinking_on = isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")
    options = {"thinking": thinking_on, "max_tokens": body.get("max_tokens")}
    model = body.get("model") if isinstance(body.get("model"), str) else None
    return RequestView(
        "anthropic.messages",
        model,
        bool(body.get("stream")),
        system_text,
        tuple(items),
        tuple(tools),
        options,
    )
