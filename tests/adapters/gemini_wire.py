"""Gemini replies the emulator's renderers cannot shape, for the reply-ending tests
(tests/adapters/test_reply_endings.py, tests/migration/test_export_openai_adk_replies.py)."""

from __future__ import annotations

from typing import Any

from portagent.emulator.plan import Plan


def without_content(render: Any) -> Any:
    """A Gemini renderer whose reply holding nothing has no ``content`` at all, as Gemini sends a candidate
    it stopped before any part (the emulator's renderers send empty parts, or an empty text part streamed)."""

    def rendered(plan: Plan, view: Any) -> Any:
        out = render(plan, view)
        if plan.text or plan.calls:
            return out
        pieces = out if isinstance(out, list) else [out]
        for piece in pieces:
            for candidate in piece.get("candidates") or []:
                candidate.pop("content", None)
        return out

    return rendered


def prompt_blocked(render: Any) -> Any:
    """A Gemini renderer whose reply holding nothing is a blocked prompt: no candidate at all, only
    ``promptFeedback.blockReason`` — the plan's raw finish (``raw:<value>``, its value) — and the usage, as
    Gemini answers a prompt it refuses to look at (streamed: one such chunk)."""

    def rendered(plan: Plan, view: Any) -> Any:
        out = render(plan, view)
        if plan.text or plan.calls:
            return out
        reason = str(plan.stop_reason).removeprefix("raw:")
        pieces = out if isinstance(out, list) else [out]
        blocked = {
            "promptFeedback": {
                "blockReason": reason,
                "blockReasonMessage": f"The prompt was blocked: {reason}.",
            },
            "usageMetadata": pieces[-1].get("usageMetadata") or {},
            "modelVersion": pieces[-1].get("modelVersion"),
        }
        return [blocked] if isinstance(out, list) else blocked

    return rendered
