"""Write a :class:`Plan` as an Anthropic Messages response (JSON and SSE).

Shapes follow Anthropic's API reference ("Messages", "Streaming Messages": ``message_start``,
``content_block_start`` / ``content_block_delta`` (``text_delta``, ``input_json_delta``,
``thinking_delta``, ``signature_delta``) / ``content_block_stop``, ``message_delta``,
``message_stop``, ``ping``) and the two real recordings in ``shared/samples/vendor-recordings/anthropic``
(``caller``, ``stop_details``, ``cache_creation``, ``inference_geo`` are what the API sends today).

Usage: Anthropic's ``input_tokens`` *excludes* the cache buckets ("Prompt caching → tracking cache
performance"): the script's total input is split into ``input_tokens``,
``cache_read_input_tokens`` and ``cache_creation_input_tokens``.

Thinking blocks are sent only when the request enables thinking (the real API returns none
otherwise); their ``signature`` is a deterministic stand-in.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from portagent.emulator.plan import Plan, split_json, split_text
from portagent.wire.items import RequestView
from portagent.wire.sse import encode_event

_STOP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "content_filter": "refusal",
}


def _stop_reason(plan: Plan) -> str:
    if plan.calls and plan.stop_reason in ("end_turn", "tool_use"):
        return "tool_use"
    return _STOP[plan.stop_reason]


def _signature(plan: Plan) -> str:
    digest = hashlib.sha256(f"{plan.ident}:{plan.thinking}".encode()).digest()
    return base64.b64encode(b"portagent-emulator:" + digest).decode()


def _usage(plan: Plan, *, output_tokens: int | None = None, full: bool = True) -> dict[str, Any]:
    u = plan.usage
    out: dict[str, Any] = {
        "input_tokens": max(0, u.input_tokens - u.cache_read_tokens - u.cache_write_tokens),
        "cache_creation_input_tokens": u.cache_write_tokens,
        "cache_read_input_tokens": u.cache_read_tokens,
    }
    if full:
        out["cache_creation"] = {
            "ephemeral_5m_input_tokens": u.cache_write_tokens,
            "ephemeral_1h_input_tokens": 0,
        }
    out["output_tokens"] = u.output_tokens if output_tokens is None else output_tokens
    if full:
        out["service_tier"] = "standard"
        out["inference_geo"] = "not_available"
    if u.reasoning_tokens and output_tokens is None:
        out["output_tokens_details"] = {"thinking_tokens": u.reasoning_tokens}
    return out


def _thinking_on(plan: Plan, view: RequestView) -> bool:
    return bool(plan.thinking) and bool(view.options.get("thinking"))


def _tool_block(plan: Plan, i: int, input_value: Any) -> dict[str, Any]:
    call = plan.calls[i]
    return {
        "type": "tool_use",
        "id": f"toolu_{call.ident}",
        "name": call.name,
        "input": input_value,
        "caller": {"type": "direct"},
    }


def _message(plan: Plan, content: list[dict[str, Any]], *, final: bool) -> dict[str, Any]:
    return {
        "id": f"msg_{plan.ident}",
        "type": "message",
        "role": "assistant",
        "model": plan.model,
        "content": content,
        "stop_reason": _stop_reason(plan) if final else None,
        "stop_sequence": None,
        "stop_details": None,
        "usage": _usage(plan) if final else _usage(plan, output_tokens=1),
    }


def messages_json(plan: Plan, view: RequestView) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if _thinking_on(plan, view):
        content.append({"type": "thinking", "thinking": plan.thinking, "signature": _signature(plan)})
    if plan.text:
        content.append({"type": "text", "text": plan.text})
    for i, call in enumerate(plan.calls):
        # A malformed_arguments fault cannot cut an object in half; the JSON body carries the cut
        # text as a string where the object belongs.
        content.append(_tool_block(plan, i, call.arguments_json if call.malformed else call.arguments))
    return _message(plan, content, final=True)


def messages_events(plan: Plan, view: RequestView) -> list[bytes]:
    frames: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        frames.append(encode_event({"type": kind, **fields}, kind))
        if kind == "content_block_start" and fields["index"] == 0:
            # The API sends a ping after the first block starts (both recordings show it there).
            frames.append(encode_event({"type": "ping"}, "ping"))

    emit("message_start", message=_message(plan, [], final=False))
    index = 0
    if _thinking_on(plan, view):
        emit(
            "content_block_start",
            index=index,
            content_block={"type": "thinking", "thinking": "", "signature": ""},
        )
        for piece in split_text(plan.thinking or ""):
            emit("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
        emit(
            "content_block_delta",
            index=index,
            delta={"type": "signature_delta", "signature": _signature(plan)},
        )
        emit("content_block_stop", index=index)
        index += 1
    if plan.text:
        emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
        for piece in split_text(plan.text):
            emit("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        emit("content_block_stop", index=index)
        index += 1
    for i, call in enumerate(plan.calls):
        emit("content_block_start", index=index, content_block=_tool_block(plan, i, {}))
        # The API opens every tool_use with an empty partial_json, then sends the JSON in pieces.
        for piece in ["", *split_json(call.arguments_json)]:
            emit(
                "content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece}
            )
        emit("content_block_stop", index=index)
        index += 1
    emit(
        "message_delta",
        delta={"stop_reason": _stop_reason(plan), "stop_sequence": None, "stop_details": None},
        usage=_usage(plan, full=False),
    )
    emit("message_stop")
    return frames
