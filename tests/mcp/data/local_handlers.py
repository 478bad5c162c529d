"""Handlers of the local tools in the MCP test agents; ``CALLS`` lets tests see what ran."""

from __future__ import annotations

from typing import Any

CALLS: list[dict[str, Any]] = []


def echo_text(text: str) -> dict[str, Any]:
    CALLS.append({"tool": "echo_text", "text": text})
    return {"echo": text}


def send_sms(to: str, text: str) -> dict[str, Any]:
    CALLS.append({"tool": "send_sms", "to": to, "text": text})
    return {"sent": True}
