"""Parse Gemini ``generateContent`` / ``streamGenerateContent`` response bodies.

Formats per Google's Gemini API reference ("GenerateContentResponse", "UsageMetadata") and the two
real recordings in ``shared/samples/vendor-recordings/google``. Three body forms:

- ``generateContent``: one ``GenerateContentResponse`` object;
- ``streamGenerateContent?alt=sse``: ``data: {…}`` frames (CRLF in the pydantic-ai recording), each
  a complete ``GenerateContentResponse`` holding the next piece;
- ``streamGenerateContent`` without ``alt=sse``: one JSON array of those objects, delivered
  incrementally (llm-gemini recording). A cut array is read up to its last complete element.

Each piece has ``candidates[0].content.parts`` (``text``, ``thought: true`` for thinking,
``functionCall {name, args, id?}`` — Gemini 2.x sends **no id**, pair by order and name —,
``executableCode`` / ``codeExecutionResult`` for the built-in code tool); the last piece carries
``finishReason`` (``STOP`` also for a function-call turn) and the final ``usageMetadata``. Usage is
taken from the last piece that has it (earlier pieces repeat the prompt count only).
``promptTokenCount`` includes ``cachedContentTokenCount``; ``candidatesTokenCount`` *excludes*
``thoughtsTokenCount``, so OTel output = candidates + thoughts. ``toolUsePromptTokenCount`` (prompt
tokens of built-in tool results) is kept in ``raw`` only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from portagent.wire.finish import reply_finish
from portagent.wire.items import Item, WireFormatError
from portagent.wire.response import (
    ResponseView,
    UsageView,
    as_int,
    body_form,
    finish,
    load_json,
    mapping_or_empty,
    merge_text,
)
from portagent.wire.sse import parse_sse

# Gemini's finishReason in the trace's words: ``wire.finish`` (the adapters' table: STOP, MAX_TOKENS →
# length, SAFETY … → content_filter, MALFORMED_FUNCTION_CALL … → error, OTHER and newer values → other).


_PIECE_KEYS = {"candidates", "usageMetadata", "usage_metadata", "promptFeedback", "prompt_feedback", "error"}


def gemini_usage(meta: Any) -> UsageView | None:
    if not isinstance(meta, Mapping):
        return None
    thoughts = as_int(meta.get("thoughtsTokenCount") or meta.get("thoughts_token_count"))
    candidates = as_int(meta.get("candidatesTokenCount") or meta.get("candidates_token_count"))
    return UsageView(
        input_tokens=as_int(meta.get("promptTokenCount") or meta.get("prompt_token_count")),
        output_tokens=candidates + thoughts,
        cache_read_tokens=as_int(
            meta.get("cachedContentTokenCount") or meta.get("cached_content_token_count")
        ),
        reasoning_tokens=thoughts,
        raw=dict(meta),
    )


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    return obj[camel] if camel in obj else obj.get(snake)


def _json_array_elements(text: str) -> tuple[list[Any], bool]:
    """Elements of a JSON-array stream and whether the array was closed; a cut array gives the
    elements that arrived whole."""
    try:
        value = json.loads(text)
    except ValueError:
        pass
    else:
        if not isinstance(value, list):
            raise WireFormatError("a Gemini JSON-array stream must be a JSON array")
        return value, True
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    out: list[Any] = []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return out, False
        try:
            element, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return out, False
        out.append(element)


def _chunks(body: Any) -> tuple[list[Any], bool, bool]:
    """(pieces, streamed, complete)."""
    form = body_form(body)
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    if form == "json":
        return [load_json(body, "generateContent body")], False, True
    if form == "json-array":
        if isinstance(body, list):
            return body, True, True
        elements, closed = _json_array_elements(body)
        return elements, True, closed
    pieces = []
    for frame in parse_sse(body):
        if not frame.data.strip():
            continue
        try:
            pieces.append(frame.json())
        except ValueError:
            return pieces, True, False  # a frame cut in the middle
    return pieces, True, True


def parse_generate_content_response(body: Any) -> ResponseView:
    """Parse a ``generateContent`` / ``streamGenerateContent`` body (JSON, SSE or JSON array)."""
    pieces, streamed, complete = _chunks(body)
    if not pieces and complete:
        raise WireFormatError("the Gemini response holds no GenerateContentResponse")
    if pieces and not any(isinstance(p, Mapping) and _PIECE_KEYS & set(p) for p in pieces):
        raise WireFormatError(
            "not a GenerateContentResponse (no candidates, usageMetadata or promptFeedback)"
        )
    items: list[Item] = []
    response_id: str | None = None
    model: str | None = None
    raw_finish: str | None = None
    usage_meta: Any = None
    error: Mapping[str, Any] | None = None
    details: dict[str, Any] = {}
    for piece in pieces:
        if not isinstance(piece, Mapping):
            raise WireFormatError(f"a Gemini response piece must be an object, got {type(piece).__name__}")
        if isinstance(piece.get("error"), Mapping):  # an error sent inside a 200 stream
            err = piece["error"]
            error = {"type": err.get("status") or err.get("code"), "message": err.get("message") or ""}
            continue
        response_id = _get(piece, "responseId", "response_id") or response_id
        model = _get(piece, "modelVersion", "model_version") or model
        meta = _get(piece, "usageMetadata", "usage_metadata")
        if meta:
            usage_meta = meta
        feedback = _get(piece, "promptFeedback", "prompt_feedback")
        if isinstance(feedback, Mapping) and _get(feedback, "blockReason", "block_reason"):
            raw_finish = str(_get(feedback, "blockReason", "block_reason"))
            details["prompt_blocked"] = raw_finish
        candidates = piece.get("candidates")
        if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], Mapping):
            continue
        cand = candidates[0]  # candidateCount > 1 asks for alternatives; an agent continues with the first
        reason = _get(cand, "finishReason", "finish_reason")
        if reason:
            raw_finish = str(reason)
        content = mapping_or_empty(cand.get("content"))
        for part in content.get("parts") or []:
            if not isinstance(part, Mapping):
                continue
            call = _get(part, "functionCall", "function_call")
            code = _get(part, "executableCode", "executable_code")
            if isinstance(call, Mapping):
                items.append(
                    Item(
                        "assistant",
                        "tool_call",
                        0,
                        name=call.get("name"),
                        call_id=call.get("id"),
                        arguments=call.get("args") if call.get("args") is not None else {},
                    )
                )
            elif isinstance(code, Mapping):
                items.append(
                    Item(
                        "assistant",
                        "tool_call",
                        0,
                        name="code_execution",
                        arguments=dict(code),
                        details={"builtin": True},
                    )
                )
            elif isinstance(part.get("text"), str):
                items.append(
                    Item("assistant", "thinking" if part.get("thought") else "text", 0, text=part["text"])
                )
    if raw_finish is None and error is None and streamed:
        complete = False  # a stream always ends with a finishReason
    has_calls = any(i.kind == "tool_call" and not i.details.get("builtin") for i in items)
    normalized = reply_finish("gemini", raw_finish, has_calls=has_calls) if raw_finish else None
    if details.get("prompt_blocked"):
        normalized = "content_filter"
    if not complete or error is not None:
        normalized = "error"
    return ResponseView(
        "gemini.generate_content",
        response_id,
        model,
        tuple(merge_text(items)),
        gemini_usage(usage_meta),
        finish(normalized, has_calls),
        raw_finish,
        streamed,
        complete,
        error,
        details,
    )
