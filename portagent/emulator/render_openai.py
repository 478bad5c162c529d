"""Write a :class:`Plan` as OpenAI Responses or Chat Completions (JSON and SSE).

Shapes follow OpenAI's API reference ("The response object", "Streaming events" for Responses;
"The chat completion object" / "chunk object" for Chat) and the two real recordings in
``shared/samples/vendor-recordings/openai``. Newer fields the typed ``openai`` 3.x client knows
(``sequence_number`` on every Responses event, ``logprobs`` on text events) are included.

OpenAI has no thinking text on these APIs for non-reasoning models, so ``thinking`` is not rendered.
"""

from __future__ import annotations

from typing import Any

from portagent.emulator.plan import EPOCH, Plan, split_json, split_text
from portagent.wire.items import RequestView
from portagent.wire.sse import encode_event

# -- Responses ---------------------------------------------------------------------------------


def _responses_usage(plan: Plan) -> dict[str, Any]:
    u = plan.usage
    return {
        "input_tokens": u.input_tokens,
        "input_tokens_details": {
            "cached_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
        },
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.total_tokens,
    }


def _message_item(plan: Plan, status: str, text: str | None) -> dict[str, Any]:
    content = (
        [] if text is None else [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    )
    return {
        "type": "message",
        "id": f"msg_{plan.ident}",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _call_item(plan: Plan, index: int, status: str, arguments: str) -> dict[str, Any]:
    call = plan.calls[index]
    return {
        "type": "function_call",
        "id": f"fc_{call.ident}",
        "call_id": f"call_{call.ident}",
        "name": call.name,
        "arguments": arguments,
        "status": status,
    }


def _responses_output(plan: Plan) -> list[dict[str, Any]]:
    out = [_message_item(plan, "completed", plan.text)] if plan.text else []
    out.extend(_call_item(plan, i, "completed", c.arguments_json) for i, c in enumerate(plan.calls))
    return out


def _responses_object(plan: Plan, view: RequestView, *, final: bool) -> dict[str, Any]:
    o = view.options
    incomplete = plan.stop_reason in ("max_tokens", "content_filter")
    status = ("incomplete" if incomplete else "completed") if final else "in_progress"
    return {
        "id": f"resp_{plan.ident}",
        "object": "response",
        "created_at": EPOCH,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": (
            {"reason": "max_output_tokens" if plan.stop_reason == "max_tokens" else "content_filter"}
            if final and incomplete
            else None
        ),
        "instructions": o.get("instructions"),
        "max_output_tokens": o.get("max_output_tokens"),
        "model": plan.model,
        "output": _responses_output(plan) if final else [],
        "parallel_tool_calls": o.get("parallel_tool_calls")
        if o.get("parallel_tool_calls") is not None
        else True,
        "previous_response_id": o.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": o.get("store") if o.get("store") is not None else True,
        "temperature": o.get("temperature") if o.get("temperature") is not None else 1.0,
        "text": o.get("text") or {"format": {"type": "text"}},
        "tool_choice": o.get("tool_choice") or "auto",
        "tools": o.get("raw_tools") or [],
        "top_p": o.get("top_p") if o.get("top_p") is not None else 1.0,
        "truncation": "disabled",
        "usage": _responses_usage(plan) if final else None,
        "user": None,
        "metadata": o.get("metadata") or {},
    }


def responses_json(plan: Plan, view: RequestView) -> dict[str, Any]:
    return _responses_object(plan, view, final=True)


def responses_events(plan: Plan, view: RequestView) -> list[bytes]:
    """The ``response.*`` event sequence (OpenAI "Streaming events"), one SSE frame each."""
    events: list[dict[str, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    emit("response.created", response=_responses_object(plan, view, final=False))
    emit("response.in_progress", response=_responses_object(plan, view, final=False))
    index = 0
    if plan.text:
        item_id = f"msg_{plan.ident}"
        emit("response.output_item.added", output_index=index, item=_message_item(plan, "in_progress", None))
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        emit("response.content_part.added", item_id=item_id, output_index=index, content_index=0, part=part)
        for piece in split_text(plan.text):
            emit(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        emit(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=plan.text,
            logprobs=[],
        )
        emit(
            "response.content_part.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part={**part, "text": plan.text},
        )
        emit(
            "response.output_item.done", output_index=index, item=_message_item(plan, "completed", plan.text)
        )
        index += 1
    for i, call in enumerate(plan.calls):
        item_id = f"fc_{call.ident}"
        emit("response.output_item.added", output_index=index, item=_call_item(plan, i, "in_progress", ""))
        for piece in split_json(call.arguments_json):
            emit("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece)
        emit(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=call.arguments_json,
        )
        emit(
            "response.output_item.done",
            output_index=index,
            item=_call_item(plan, i, "completed", call.arguments_json),
        )
        index += 1
    final = _responses_object(plan, view, final=True)
    emit("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)
    return [encode_event(e, e["type"]) for e in events]


# -- Chat Completions --------------------------------------------------------------------------

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "content_filter": "content_filter",
}


def _chat_usage(plan: Plan) -> dict[str, Any]:
    u = plan.usage
    prompt_details: dict[str, Any] = {"cached_tokens": u.cache_read_tokens, "audio_tokens": 0}
    if u.cache_write_tokens:
        prompt_details["cache_write_tokens"] = u.cache_write_tokens
    return {
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.total_tokens,
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {
            "reasoning_tokens": u.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_finish(plan: Plan) -> str:
    # A tool call always ends a Chat turn with "tool_calls", whatever the script's stop reason says.
    return (
        "tool_calls"
        if plan.calls and plan.stop_reason in ("tool_use", "end_turn")
        else _FINISH[plan.stop_reason]
    )


def chat_json(plan: Plan, view: RequestView) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": plan.text or None,
        "refusal": None,
        "annotations": [],
    }
    if plan.calls:
        message["tool_calls"] = [
            {
                "id": f"call_{c.ident}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c in plan.calls
        ]
    return {
        "id": f"chatcmpl-{plan.ident}",
        "object": "chat.completion",
        "created": EPOCH,
        "model": plan.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _chat_finish(plan)}],
        "usage": _chat_usage(plan),
        "service_tier": "default",
        "system_fingerprint": "fp_emulator",
    }


def chat_events(plan: Plan, view: RequestView) -> list[bytes]:
    """Chat chunks ending in ``data: [DONE]``; the usage chunk (empty ``choices``) only when the
    request set ``stream_options.include_usage`` (OpenAI "Streaming" guide)."""
    include_usage = bool(view.options.get("include_usage"))
    frames: list[bytes] = []

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        body: dict[str, Any] = {
            "id": f"chatcmpl-{plan.ident}",
            "object": "chat.completion.chunk",
            "created": EPOCH,
            "model": plan.model,
            "service_tier": "default",
            "system_fingerprint": "fp_emulator",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            body["usage"] = None
        frames.append(encode_event(body))

    chunk({"role": "assistant", "content": "", "refusal": None})
    if plan.text:
        for piece in split_text(plan.text):
            chunk({"content": piece})
    for i, call in enumerate(plan.calls):
        chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": f"call_{call.ident}",
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in split_json(call.arguments_json):
            chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    chunk({}, _chat_finish(plan))
    if include_usage:
        frames.append(
            encode_event(
                {
                    "id": f"chatcmpl-{plan.ident}",
                    "object": "chat.completion.chunk",
                    "created": EPOCH,
                    "model": plan.model,
                    "service_tier": "default",
                    "system_fingerprint": "fp_emulator",
                    "choices": [],
                    "usage": _chat_usage(plan),
                }
            )
        )
    frames.append(encode_event("[DONE]"))
    return frames
