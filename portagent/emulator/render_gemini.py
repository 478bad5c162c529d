"""Write a :class:`Plan` as a Gemini ``GenerateContentResponse`` (JSON, SSE, JSON-array stream).

Shapes follow Google's Gemini API reference ("GenerateContentResponse", "UsageMetadata") and the
two real recordings in ``shared/samples/vendor-recordings/google``:

- a stream is a sequence of complete ``GenerateContentResponse`` objects; only the last carries
  ``finishReason`` and the full ``usageMetadata`` (earlier chunks report the prompt count only);
- a function-call turn ends with ``finishReason: STOP`` and ``finishMessage: "Model generated
  function call(s)."`` (Gemini 2.5); Gemini 2.x sends no call ``id``, so none is sent here;
- usage: ``promptTokenCount`` is the total input (cache included, ``cachedContentTokenCount`` is the
  cached part); ``candidatesTokenCount`` *excludes* thoughts, which are in ``thoughtsTokenCount``;
  ``totalTokenCount`` is their sum; ``candidatesTokensDetails`` is not sent (Gemini 2.5 dropped it:
  the 2026 llm-gemini recording has none, the 2025 gemini-2.0 one has it);
- thought parts (``thought: true``) are sent only when the request sets
  ``thinkingConfig.includeThoughts``.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from portagent.emulator.plan import Plan, split_text
from portagent.wire.items import RequestView

_FINISH = {
    "end_turn": "STOP",
    "tool_use": "STOP",
    "stop_sequence": "STOP",
    "max_tokens": "MAX_TOKENS",
    "content_filter": "SAFETY",
}


def _usage(plan: Plan, *, final: bool) -> dict[str, Any]:
    u = plan.usage
    prompt = u.input_tokens
    if not final:
        return {
            "promptTokenCount": prompt,
            "totalTokenCount": prompt,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        }
    candidates = max(0, u.output_tokens - u.reasoning_tokens)
    out: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + u.output_tokens,
    }
    if u.cache_read_tokens:
        out["cachedContentTokenCount"] = u.cache_read_tokens
    out["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt}]
    if u.reasoning_tokens:
        out["thoughtsTokenCount"] = u.reasoning_tokens
    out["serviceTier"] = "standard"
    return out


def _call_parts(plan: Plan) -> list[dict[str, Any]]:
    # A malformed_arguments fault cannot cut an object; the cut JSON text is sent where ``args``
    # (an object) belongs.
    parts: list[dict[str, Any]] = [
        {"functionCall": {"name": c.name, "args": c.arguments_json if c.malformed else c.arguments}}
        for c in plan.calls
    ]
    if parts and plan.thinking:
        # Thinking models sign the first function call of a turn (opaque bytes, base64); clients
        # send it back untouched. Here it is a deterministic stand-in.
        digest = hashlib.sha256(f"{plan.ident}:{plan.thinking}".encode()).digest()
        parts[0]["thoughtSignature"] = base64.b64encode(b"portagent-emulator:" + digest).decode()
    return parts


def _response(plan: Plan, parts: list[dict[str, Any]], *, final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if final:
        candidate["finishReason"] = _FINISH[plan.stop_reason]
    candidate["index"] = 0
    if final and plan.calls:
        candidate["finishMessage"] = "Model generated function call(s)."
    return {
        "candidates": [candidate],
        "usageMetadata": _usage(plan, final=final),
        "modelVersion": plan.model,
        "responseId": plan.ident,
    }


def _thought(plan: Plan, view: RequestView) -> list[dict[str, Any]]:
    if plan.thinking and view.options.get("include_thoughts"):
        return [{"text": plan.thinking, "thought": True}]
    return []


def generate_json(plan: Plan, view: RequestView) -> dict[str, Any]:
    parts = _thought(plan, view)
    if plan.text:
        parts.append({"text": plan.text})
    parts.extend(_call_parts(plan))
    return _response(plan, parts, final=True)


def stream_elements(plan: Plan, view: RequestView) -> list[dict[str, Any]]:
    """The chunks of a streamed answer, as objects (framed as SSE or as a JSON array by the server)."""
    chunks: list[list[dict[str, Any]]] = []
    thought = _thought(plan, view)
    if thought:
        chunks.append(thought)
    if plan.text:
        chunks.extend([{"text": piece}] for piece in split_text(plan.text, size=48))
    if plan.calls:
        chunks.append(_call_parts(plan))
    if not chunks:
        chunks.append([{"text": ""}])
    last = len(chunks) - 1
    return [_response(plan, parts, final=i == last) for i, parts in enumerate(chunks)]
