"""Parse Gemini ``generateContent`` / ``streamGenerateContent`` request bodies.

Format per Google's Gemini API reference ("models.generateContent"): ``contents[]`` with role
``user`` or ``model`` and ``parts[]`` (``text`` with optional ``thought: true``, ``functionCall``
``{name, args, id?}``, ``functionResponse`` ``{name, response, id?}``), ``systemInstruction``,
``tools[].functionDeclarations[]`` and ``generationConfig``. The REST API takes camelCase, but
google-genai passes some keys through in snake_case (``function_call``, ``parameters_json_schema``,
``system_instruction`` — seen in the llm-gemini recording and from ADK, SDK_NOTES §6), so both
spellings are read.

ADK quirk (google-adk 2.x, ``flows/llm_flows/context/_fencing.py``): after a transfer, the new agent
sees the *other* agent's turns rewritten as user contents that start with "For context: …" and hold
``[agent] said:``, ``[agent] called tool `name` with parameters:`` or ``[agent] `name` tool returned
result:`` parts, each payload fenced by ``<<<BEGIN_QUOTED_AGENT_CONTENT>>>`` markers. They are parsed
back into assistant / tool items (``details.relayed_from``) so the turn count survives a transfer.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from portagent.wire.items import (
    Item,
    RequestView,
    Role,
    ToolDeclaration,
    WireFormatError,
    require_list,
    require_mapping,
    text_of,
)

_CONTEXT_PREFIX = "For context:"
_FENCE = re.compile(r"<<<BEGIN_QUOTED_AGENT_CONTENT>>>\n?(.*?)\n?<<<END_QUOTED_AGENT_CONTENT>>>", re.DOTALL)
_SAID = re.compile(r"^\[(?P<agent>[^\]]+)\] said:\s*(?P<rest>.*)$", re.DOTALL)
_CALLED = re.compile(
    r"^\[(?P<agent>[^\]]+)\] called tool `(?P<name>[^`]*)` with parameters:\s*(?P<rest>.*)$", re.DOTALL
)
_RETURNED = re.compile(
    r"^\[(?P<agent>[^\]]+)\] `(?P<name>[^`]*)` tool returned result:\s*(?P<rest>.*)$", re.DOTALL
)


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    return obj[camel] if camel in obj else obj.get(snake)


def _unfence(text: str) -> str:
    m = _FENCE.search(text)
    return m.group(1) if m else text.strip()


def _literal(text: str) -> Any:
    """ADK renders relayed arguments/results with ``str(dict)``: read them back when possible."""
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return text


def _relayed_items(parts: list[Any], idx: int) -> list[Item] | None:
    """Items for an ADK "For context:" content, or None when the content is not one."""
    texts = [p.get("text") for p in parts if isinstance(p, Mapping)]
    if not texts or not isinstance(texts[0], str) or not texts[0].startswith(_CONTEXT_PREFIX):
        return None
    out: list[Item] = []
    for text in texts[1:]:
        if not isinstance(text, str):
            continue
        if m := _SAID.match(text):
            out.append(
                Item("assistant", "text", idx, text=_unfence(m["rest"]), details={"relayed_from": m["agent"]})
            )
        elif m := _CALLED.match(text):
            out.append(
                Item(
                    "assistant",
                    "tool_call",
                    idx,
                    name=m["name"],
                    arguments=_literal(_unfence(m["rest"])),
                    details={"relayed_from": m["agent"]},
                )
            )
        elif m := _RETURNED.match(text):
            value = _literal(_unfence(m["rest"]))
            out.append(
                Item(
                    "tool",
                    "tool_result",
                    idx,
                    name=m["name"],
                    text=_unfence(m["rest"]),
                    output=value,
                    details={"relayed_from": m["agent"]},
                )
            )
    # Older ADK versions put the whole relay into the first part: keep it as relayed text.
    if not out:
        out.append(Item("assistant", "text", idx, text=texts[0], details={"relayed_from": "?"}))
    return out


def parse_generate_content_request(
    body: Any, *, model: str | None = None, stream: bool = False
) -> RequestView:
    """Parse a ``generateContent`` body; ``model`` and ``stream`` come from the URL."""
    body = require_mapping(body, "generateContent request")
    system_text = ""
    sys_inst = _get(body, "systemInstruction", "system_instruction")
    if isinstance(sys_inst, Mapping):
        system_text = "\n".join(text_of(p) for p in sys_inst.get("parts") or [] if isinstance(p, Mapping))
    elif isinstance(sys_inst, str):
        system_text = sys_inst
    items: list[Item] = []
    for idx, content in enumerate(require_list(body.get("contents") or [], "'contents'")):
        if not isinstance(content, Mapping):
            raise WireFormatError(f"contents[{idx}] must be an object")
        role = content.get("role", "user")
        parts = require_list(content.get("parts") or [], f"contents[{idx}].parts")
        if role == "user" and (relayed := _relayed_items(parts, idx)) is not None:
            items.extend(relayed)
            continue
        before = len(items)
        for part in parts:
            if not isinstance(part, Mapping):
                raise WireFormatError(f"contents[{idx}].parts entries must be objects")
            call = _get(part, "functionCall", "function_call")
            response = _get(part, "functionResponse", "function_response")
            if isinstance(call, Mapping):
                items.append(
                    Item(
                        "assistant",
                        "tool_call",
                        idx,
                        name=call.get("name"),
                        call_id=call.get("id"),
                        arguments=call.get("args") if call.get("args") is not None else {},
                    )
                )
            elif isinstance(response, Mapping):
                value = response.get("response")
                items.append(
                    Item(
                        "tool",
                        "tool_result",
                        idx,
                        name=response.get("name"),
                        call_id=response.get("id"),
                        output=value,
                        text=value if isinstance(value, str) else json.dumps(value, ensure_ascii=False),
                    )
                )
            elif isinstance(part.get("text"), str):
                who: Role = "assistant" if role == "model" else "user"
                if part.get("thought"):
                    if who == "assistant":
                        items.append(Item(who, "thinking", idx, text=part["text"]))
                    continue
                items.append(Item(who, "text", idx, text=part["text"]))
            elif role == "model":
                items.append(Item("assistant", "other", idx))
        if role == "model" and len(items) == before:
            items.append(Item("assistant", "other", idx))
    tools: list[ToolDeclaration] = []
    for tool in require_list(body.get("tools") or [], "'tools'"):
        if not isinstance(tool, Mapping):
            raise WireFormatError("each entry of 'tools' must be an object")
        decls = _get(tool, "functionDeclarations", "function_declarations")
        if decls is None:
            tools.extend(ToolDeclaration(str(k), None, None, str(k)) for k in tool)
            continue
        for decl in require_list(decls, "'functionDeclarations'"):
            if not isinstance(decl, Mapping) or not isinstance(decl.get("name"), str):
                raise WireFormatError("each function declaration needs a string 'name'")
            params = (
                decl.get("parameters")
                or decl.get("parametersJsonSchema")
                or decl.get("parameters_json_schema")
            )
            tools.append(ToolDeclaration(str(decl["name"]), decl.get("description"), params, "function"))
    config = _get(body, "generationConfig", "generation_config") or {}
    thinking = _get(config, "thinkingConfig", "thinking_config") if isinstance(config, Mapping) else None
    include_thoughts = bool(
        isinstance(thinking, Mapping) and _get(thinking, "includeThoughts", "include_thoughts")
    )
    return RequestView(
        "gemini.generate_content",
        model,
        stream,
        system_text,
        tuple(items),
        tuple(tools),
        {"include_thoughts": include_thoughts},
    )
