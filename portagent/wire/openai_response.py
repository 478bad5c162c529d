"""Parse OpenAI response bodies: Responses (``/v1/responses``) and Chat Completions, JSON and SSE.

Formats per OpenAI's API reference ("The response object", "Streaming events"; "The chat
completion object", "The chat completion chunk object") and the two real recordings in
``shared/samples/vendor-recordings/openai``:

- Responses: ``output[]`` holds ``message`` items (``output_text`` / ``refusal`` parts),
  ``function_call`` items (JSON-string ``arguments``, the pairing id ``call_id`` *and* an item ``id``
  ``fc_…`` — pydantic-ai once sent the item id back as ``call_id``, so both are kept), ``reasoning``
  items and built-in ``*_call`` items. A stream ends with ``response.completed`` /
  ``response.incomplete`` / ``response.failed`` carrying the whole response; a stream cut before it
  is rebuilt from ``response.output_item.done`` and the deltas.
- Usage is already OTel-shaped: ``input_tokens`` includes ``input_tokens_details.cached_tokens``,
  ``output_tokens`` includes ``output_tokens_details.reasoning_tokens`` (Chat: ``prompt_tokens`` /
  ``completion_tokens`` and their ``*_details``).
- Chat streams send ``choices[].delta`` pieces; tool calls arrive by ``index`` with the ``id`` and
  name in the first piece and ``arguments`` split over the following ones; usage comes in a last
  chunk with empty ``choices`` only when the request set ``stream_options.include_usage``; the
  stream ends with ``data: [DONE]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from portagent.wire.finish import reply_finish, responses_finish
from portagent.wire.items import Item, WireFormatError, require_mapping, text_of
from portagent.wire.openai import parse_arguments
from portagent.wire.response import (
    ResponseView,
    UsageView,
    as_int,
    body_form,
    finish,
    load_json,
    mapping_or_empty,
    merge_text,
    sub,
)
from portagent.wire.sse import parse_sse

# A reply's end in the trace's words: ``wire.finish`` (the adapters' tables: a Responses status, a Chat
# Completions finish_reason; an undocumented value is ``other``). A refusal — a Responses ``refusal`` content
# part, Chat Completions' ``message.refusal`` — is ``content_filter``, as the adapters trace it.
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def _responses_usage(usage: Any) -> UsageView | None:
    if not isinstance(usage, Mapping):
        return None
    return UsageView(
        input_tokens=as_int(usage.get("input_tokens")),
        output_tokens=as_int(usage.get("output_tokens")),
        cache_read_tokens=as_int(sub(usage, "input_tokens_details", "cached_tokens")),
        cache_write_tokens=as_int(sub(usage, "input_tokens_details", "cache_write_tokens")),
        reasoning_tokens=as_int(sub(usage, "output_tokens_details", "reasoning_tokens")),
        raw=dict(usage),
    )


def _output_items(output: Any) -> tuple[list[Item], dict[str, Any]]:
    items: list[Item] = []
    details: dict[str, Any] = {}
    for idx, entry in enumerate(output if isinstance(output, list) else []):
        if not isinstance(entry, Mapping):
            continue
        kind = entry.get("type")
        if kind == "message":
            for part in entry.get("content") or []:
                if not isinstance(part, Mapping):
                    continue
                if part.get("type") == "refusal":
                    details["refusal"] = str(part.get("refusal") or "")
                elif isinstance(part.get("text"), str):
                    items.append(Item("assistant", "text", idx, text=str(part["text"])))
        elif kind == "function_call":
            items.append(
                Item(
                    "assistant",
                    "tool_call",
                    idx,
                    name=entry.get("name"),
                    call_id=entry.get("call_id") or entry.get("id"),
                    arguments=parse_arguments(entry.get("arguments")),
                    details={"item_id": entry["id"]} if entry.get("id") else {},
                )
            )
        elif kind == "reasoning":
            items.append(Item("assistant", "thinking", idx, text=text_of(entry.get("summary") or [])))
        elif isinstance(kind, str) and kind.endswith("_call"):
            # Built-in tools (web_search_call, file_search_call, code_interpreter_call …) run at
            # OpenAI; they have no function arguments, only an ``action`` or ``queries`` for some.
            args = entry.get("action") or entry.get("queries") or entry.get("arguments") or {}
            items.append(
                Item(
                    "assistant",
                    "tool_call",
                    idx,
                    name=kind,
                    call_id=entry.get("id"),
                    arguments=parse_arguments(args),
                    details={"builtin": True},
                )
            )
    return merge_text(items), details


def responses_from_object(
    body: Mapping[str, Any], *, stream: bool = False, complete: bool = True
) -> ResponseView:
    """A complete Responses ``response`` object (a JSON body or a stream's terminal event)."""
    items, details = _output_items(body.get("output"))
    status = body.get("status")
    error = body.get("error") if isinstance(body.get("error"), Mapping) else None
    has_calls = any(i.kind == "tool_call" and not i.details.get("builtin") for i in items)
    if status == "incomplete":
        reason = sub(body, "incomplete_details", "reason")
        normalized: str | None = responses_finish("incomplete", str(reason), has_calls=has_calls)
        raw: str | None = f"incomplete:{reason}"
    elif status == "failed" or error is not None:
        normalized, raw = "error", str(status)
    elif not complete:
        normalized, raw = "error", str(status) if status else None
    else:
        normalized, raw = "stop", str(status) if status else None
    if "refusal" in details and normalized == "stop":  # the model refused: its calls, if any, are not run
        normalized = "content_filter"
    return ResponseView(
        "openai.responses",
        body.get("id"),
        body.get("model"),
        tuple(items),
        _responses_usage(body.get("usage")),
        finish(normalized, has_calls),
        raw,
        stream,
        complete,
        error,
        details,
    )


def _responses_stream(text: str) -> ResponseView:
    base: dict[str, Any] = {}
    done: dict[int, Any] = {}
    added: dict[int, dict[str, Any]] = {}
    error: Mapping[str, Any] | None = None
    recognised = False
    for frame in parse_sse(text):
        if not frame.data or frame.data == "[DONE]":
            continue
        try:
            event = frame.json()
        except ValueError:
            continue  # a frame cut in the middle: the rest of the stream tells what arrived
        kind = event.get("type") if isinstance(event, Mapping) else None
        recognised = recognised or (
            isinstance(kind, str) and (kind.startswith("response.") or kind == "error")
        )
        if kind in _TERMINAL and isinstance(event.get("response"), Mapping):
            return responses_from_object(event["response"], stream=True)
        if kind in ("response.created", "response.in_progress") and isinstance(
            event.get("response"), Mapping
        ):
            base = dict(event["response"])
        elif kind == "response.output_item.added" and isinstance(event.get("item"), Mapping):
            added[as_int(event.get("output_index"))] = {**event["item"], "_text": "", "_args": ""}
        elif kind == "response.output_item.done" and isinstance(event.get("item"), Mapping):
            done[as_int(event.get("output_index"))] = event["item"]
        elif kind == "response.output_text.delta":
            item = added.setdefault(
                as_int(event.get("output_index")), {"type": "message", "_text": "", "_args": ""}
            )
            item["_text"] += str(event.get("delta") or "")
        elif kind == "response.function_call_arguments.delta":
            item = added.setdefault(
                as_int(event.get("output_index")), {"type": "function_call", "_text": "", "_args": ""}
            )
            item["_args"] += str(event.get("delta") or "")
        elif kind == "error":
            error = {"type": event.get("code") or "error", "message": event.get("message") or ""}
    if not recognised:
        raise WireFormatError("no Responses stream event (response.*) in the body")
    # No terminal event: rebuild what arrived (finished items, then the partial ones).
    output: list[Any] = []
    for index in sorted(set(done) | set(added)):
        if index in done:
            output.append(done[index])
            continue
        partial = added[index]
        if partial.get("type") == "message":
            output.append({"type": "message", "content": [{"type": "output_text", "text": partial["_text"]}]})
        elif partial.get("type") == "function_call":
            output.append(
                {**{k: v for k, v in partial.items() if not k.startswith("_")}, "arguments": partial["_args"]}
            )
    view = responses_from_object({**base, "output": output}, stream=True, complete=False)
    return _with_error(view, error)


def _with_error(view: ResponseView, error: Mapping[str, Any] | None) -> ResponseView:
    if error is None:
        return view
    return ResponseView(
        view.api,
        view.response_id,
        view.model,
        view.items,
        view.usage,
        "error",
        view.raw_finish_reason,
        view.stream,
        view.complete,
        error,
        view.details,
    )


def parse_responses_response(body: Any) -> ResponseView:
    """Parse a ``/v1/responses`` response body: JSON (text or parsed) or an SSE stream."""
    if body_form(body) == "sse":
        return _responses_stream(body.decode("utf-8") if isinstance(body, bytes) else body)
    value = require_mapping(load_json(body, "Responses body"), "Responses response")
    if value.get("object") not in (None, "response"):
        raise WireFormatError(f"not a Responses object (object={value.get('object')!r})")
    return responses_from_object(value)


# -- Chat Completions ------------------------------------------------------------------------------


def _chat_usage(usage: Any) -> UsageView | None:
    if not isinstance(usage, Mapping):
        return None
    return UsageView(
        input_tokens=as_int(usage.get("prompt_tokens")),
        output_tokens=as_int(usage.get("completion_tokens")),
        cache_read_tokens=as_int(sub(usage, "prompt_tokens_details", "cached_tokens")),
        cache_write_tokens=as_int(sub(usage, "prompt_tokens_details", "cache_write_tokens")),
        reasoning_tokens=as_int(sub(usage, "completion_tokens_details", "reasoning_tokens")),
        raw=dict(usage),
    )


def _chat_view(
    body: Mapping[str, Any],
    message: Mapping[str, Any],
    raw_finish: Any,
    usage: Any,
    *,
    stream: bool,
    complete: bool,
) -> ResponseView:
    items: list[Item] = []
    details: dict[str, Any] = {}
    content = message.get("content")
    text = content if isinstance(content, str) else text_of(content) if content else ""
    if text:
        items.append(Item("assistant", "text", 0, text=text))
    if message.get("refusal"):
        details["refusal"] = str(message["refusal"])
    for call in message.get("tool_calls") or []:
        if not isinstance(call, Mapping):
            continue
        fn = mapping_or_empty(call.get("function"))
        items.append(
            Item(
                "assistant",
                "tool_call",
                0,
                name=fn.get("name"),
                call_id=call.get("id"),
                arguments=parse_arguments(fn.get("arguments")),
            )
        )
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping):  # the pre-tools "functions" API: one call, no id
        items.append(
            Item(
                "assistant",
                "tool_call",
                0,
                name=legacy.get("name"),
                arguments=parse_arguments(legacy.get("arguments")),
            )
        )
    raw = str(raw_finish) if raw_finish is not None else None
    has_calls = any(i.kind == "tool_call" for i in items)
    normalized = reply_finish("chat", raw, has_calls=has_calls) if raw is not None else None
    if "refusal" in details and normalized in (None, "stop", "tool_calls"):  # the model refused
        normalized = "content_filter"
    if not complete:
        normalized = "error"
    return ResponseView(
        "openai.chat",
        body.get("id"),
        body.get("model"),
        tuple(items),
        _chat_usage(usage),
        finish(normalized, has_calls),
        raw,
        stream,
        complete,
        None,
        details,
    )


def _first_choice(body: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        return {}
    # ``n > 1`` asks for several alternatives; an agent continues with the first one.
    first = min(
        (c for c in choices if isinstance(c, Mapping)), key=lambda c: as_int(c.get("index")), default={}
    )
    return first


def _chat_stream(text: str) -> ResponseView:
    head: dict[str, Any] = {}
    content: list[str] = []
    refusal: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    raw_finish: Any = None
    usage: Any = None
    done = recognised = False
    for frame in parse_sse(text):
        if frame.data.strip() == "[DONE]":
            done = True
            continue
        try:
            chunk = frame.json()
        except ValueError:
            continue
        if not isinstance(chunk, Mapping) or not ("choices" in chunk or "error" in chunk):
            continue
        recognised = True
        if isinstance(chunk.get("error"), Mapping):
            err = chunk["error"]
            return ResponseView(
                "openai.chat",
                head.get("id"),
                head.get("model"),
                (),
                None,
                "error",
                None,
                True,
                False,
                {"type": err.get("type") or err.get("code"), "message": err.get("message") or ""},
            )
        head.setdefault("id", chunk.get("id"))
        head.setdefault("model", chunk.get("model"))
        if chunk.get("usage"):
            usage = chunk["usage"]
        choice = _first_choice(chunk)
        if as_int(choice.get("index")) != 0:
            continue
        delta = mapping_or_empty(choice.get("delta"))
        if isinstance(delta.get("content"), str):
            content.append(delta["content"])
        if isinstance(delta.get("refusal"), str):
            refusal.append(delta["refusal"])
        for piece in delta.get("tool_calls") or []:
            if not isinstance(piece, Mapping):
                continue
            call = calls.setdefault(as_int(piece.get("index")), {"id": None, "name": "", "arguments": ""})
            call["id"] = call["id"] or piece.get("id")
            fn = mapping_or_empty(piece.get("function"))
            # The name arrives whole in the first piece; some compatible servers repeat it later.
            if fn.get("name") and not call["name"]:
                call["name"] = fn["name"]
            call["arguments"] += str(fn.get("arguments") or "")
        if choice.get("finish_reason") is not None:
            raw_finish = choice["finish_reason"]
    if not recognised:
        raise WireFormatError("no chat.completion.chunk in the body")
    message = {
        "content": "".join(content),
        "refusal": "".join(refusal) or None,
        "tool_calls": [
            {"id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(calls.items())
        ],
    }
    return _chat_view(head, message, raw_finish, usage, stream=True, complete=done or raw_finish is not None)


def parse_chat_response(body: Any) -> ResponseView:
    """Parse a ``/v1/chat/completions`` response body: JSON (text or parsed) or an SSE stream."""
    if body_form(body) == "sse":
        return _chat_stream(body.decode("utf-8") if isinstance(body, bytes) else body)
    value = require_mapping(load_json(body, "Chat Completions body"), "Chat Completions response")
    if "choices" not in value:
        raise WireFormatError("a chat completion needs 'choices'")
    choice = _first_choice(value)
    message = mapping_or_empty(choice.get("message"))
    return _chat_view(
        value, message, choice.get("finish_reason"), value.get("usage"), stream=False, complete=True
    )
