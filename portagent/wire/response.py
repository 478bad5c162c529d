"""A neutral view of one model *response*, whatever vendor format and body form it came in.

The request side lives in ``items`` (:class:`~portagent.wire.items.RequestView`); this is its mirror
for what the model answered. Per-vendor parsers (``openai_response``, ``anthropic_response``,
``gemini_response``) read a complete JSON body, an SSE stream or Gemini's JSON-array stream and all
return a :class:`ResponseView`:

- ``items`` — the assistant output in order, as :class:`~portagent.wire.items.Item` s (``text``,
  ``tool_call`` with parsed ``arguments`` and the vendor ``call_id``, ``thinking``); adjacent text
  pieces of a stream are already joined;
- ``usage`` — :class:`UsageView` in **OTel GenAI semantics**: ``input_tokens`` *includes* cache reads
  and writes (Anthropic's ``input_tokens`` does not: its parser adds the buckets back), and
  ``output_tokens`` *includes* reasoning (Gemini's ``candidatesTokenCount`` does not: its parser adds
  ``thoughtsTokenCount``). The vendor's own usage object is kept in ``raw``;
- ``finish_reason`` — one of :data:`FINISH_REASONS`; the vendor's value is kept in ``raw_finish_reason``;
- ``complete`` — False when a stream ended before its terminal event (a truncated recording or a
  dropped connection): what arrived is still returned.

Nothing here imports a vendor SDK.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from portagent.wire.items import Api, Item, WireFormatError

FINISH_REASONS: tuple[str, ...] = ("stop", "tool_calls", "length", "content_filter", "error", "other")
"""Normalized finish reasons, the adapters' words (``wire.finish``). ``tool_calls`` when the answer asks for
tools and ended normally (some vendors say "stop" then); ``error`` for a failed or cut-off response, or one
the vendor says is broken; ``other`` for any other end than the normal one (Gemini ``OTHER``, a value the
API does not document)."""


@dataclass(frozen=True)
class UsageView:
    """Token counts of one response, OTel semantics (see the module docstring)."""

    input_tokens: int = 0
    """Total input, cache reads and writes included."""
    output_tokens: int = 0
    """Total output, reasoning included."""
    cache_read_tokens: int = 0
    """Input tokens read from the prompt cache."""
    cache_write_tokens: int = 0
    """Input tokens written to the prompt cache."""
    reasoning_tokens: int = 0
    """Output tokens spent on reasoning/thinking (part of ``output_tokens``)."""
    raw: Mapping[str, Any] = field(default_factory=dict)
    """The vendor's usage object as sent."""


@dataclass(frozen=True)
class ResponseView:
    """A vendor response body, parsed into one neutral shape."""

    api: Api
    """Which wire API the body was written for."""
    response_id: str | None
    """The vendor's response id (``resp_…``, ``chatcmpl-…``, ``msg_…``, Gemini ``responseId``)."""
    model: str | None
    """The model the vendor says answered (often more specific than the requested one)."""
    items: tuple[Item, ...]
    """Assistant output in order: text, tool calls, thinking, other."""
    usage: UsageView | None
    """Token counts, or None when the body carried none."""
    finish_reason: str | None
    """Normalized finish reason (:data:`FINISH_REASONS`)."""
    raw_finish_reason: str | None = None
    """The vendor's own finish/stop reason or status."""
    stream: bool = False
    """Whether the body was a stream (SSE or JSON array)."""
    complete: bool = True
    """False when a stream ended before its terminal event."""
    error: Mapping[str, Any] | None = None
    """An error reported *inside* a 200 body (stream ``error`` event, ``response.failed``)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Vendor-only facts worth keeping (refusal text, service tier …)."""

    def text(self) -> str:
        """The answer's text (thinking excluded)."""
        return "".join(i.text for i in self.items if i.kind == "text")

    def tool_calls(self) -> list[Item]:
        """The tool calls, in output order."""
        return [i for i in self.items if i.kind == "tool_call"]


def as_int(value: Any) -> int:
    """A token count from a vendor field that may be missing, null or a float."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return 0


def mapping_or_empty(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a missing or malformed sub-object)."""
    return value if isinstance(value, Mapping) else {}


def sub(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]…`` or None when any level is missing or not an object."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def finish(normalized: str | None, has_tool_calls: bool) -> str | None:
    """``tool_calls`` wins over ``stop`` when the answer carries tool calls (OpenAI Chat says
    ``stop`` for a forced ``tool_choice``; Gemini always says ``STOP``)."""
    if has_tool_calls and normalized in (None, "stop"):
        return "tool_calls"
    return normalized


def merge_text(items: list[Item]) -> list[Item]:
    """Join adjacent text (or thinking) items of one message, as stream deltas arrive in pieces."""
    out: list[Item] = []
    for item in items:
        prev = out[-1] if out else None
        if (
            prev is not None
            and item.kind in ("text", "thinking")
            and prev.kind == item.kind
            and prev.message_index == item.message_index
            and not item.details
            and not prev.details
        ):
            out[-1] = Item(prev.role, prev.kind, prev.message_index, text=prev.text + item.text)
        else:
            out.append(item)
    return out


def load_json(body: Any, what: str) -> Any:
    """A body that is text is parsed as JSON; an already-parsed body is returned as is."""
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    if not isinstance(body, str):
        return body
    try:
        return json.loads(body)
    except ValueError as e:
        raise WireFormatError(f"{what} is not valid JSON: {e}") from None


def body_form(body: Any) -> str:
    """``json`` (an object, parsed or not), ``json-array`` (Gemini's stream) or ``sse``."""
    if isinstance(body, Mapping):
        return "json"
    if isinstance(body, list):
        return "json-array"
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str):
        raise WireFormatError(f"a response body must be text or JSON, got {type(body).__name__}")
    head = body.lstrip()[:1]
    if head == "{":
        return "json"
    if head == "[":
        return "json-array"
    if head == "":
        raise WireFormatError("the response body is empty")
    return "sse"


RETRYABLE_STATUS: frozenset[int] = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""HTTP statuses a client may retry (429 rate limit, 5xx, Anthropic's 529 overloaded)."""


def parse_error_body(body: Any) -> tuple[str | None, str]:
    """``(error_type, message)`` from a vendor error body, whatever its shape.

    OpenAI: ``{"error": {"type", "code", "message"}}``; Anthropic: ``{"type": "error", "error":
    {"type", "message"}}``; Gemini: ``{"error": {"code", "status", "message"}}``, sometimes wrapped
    in a one-element array. A non-JSON body is returned as the message.
    """
    try:
        value = load_json(body, "error body")
    except (WireFormatError, UnicodeDecodeError):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        return None, text.strip()[:500]
    if isinstance(value, list) and value:
        value = value[0]
    err = sub(value, "error")
    if isinstance(err, Mapping):
        # OpenAI's ``code`` (rate_limit_exceeded) says more than its ``type`` (requests); Gemini's
        # ``code`` is the HTTP status number and its ``status`` the name (RESOURCE_EXHAUSTED).
        code = err.get("code") if isinstance(err.get("code"), str) and err.get("code") else None
        kind = code or err.get("type") or err.get("status") or err.get("code")
        return (str(kind) if kind is not None else None), str(err.get("message") or "")
    if isinstance(err, str):
        return None, err
    return None, json.dumps(value, ensure_ascii=False)[:500]
