"""OpenAI replies the emulator's script cannot say, for the reply tests (tests/adapters/test_refusals.py,
tests/adapters/test_reply_endings.py, tests/migration/test_export_openai_adk_replies.py).

- ``refusing_openai()``: the emulator's OpenAI renderers (``render_openai``, looked up by the server per
  request) send the first reply of each ``refuse*`` conversation as a refusal — a Responses message whose
  content part is ``{"type": "refusal", "refusal": …}`` (``response.refusal.delta`` / ``.done`` streamed), a
  Chat Completions message with ``refusal`` set and ``content: null`` (``delta.refusal`` streamed) — ended
  normally (``completed``, ``stop``), as OpenAI ends one. In a ``refuse_silently*`` conversation the refusal
  says nothing (``"refusal": ""``), whatever the script's text.
- ``without_request_ids(monkeypatch)``: the emulator's answers carry no ``x-request-id`` header (a server
  that sends none), for the Chat Completions finish-key tests.
- ``incomplete_as_raw(monkeypatch)``: a plan whose stop reason is ``raw:<reason>`` is a Responses answer
  ``incomplete`` for that reason (one the API may add later), streamed ``response.incomplete``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from portagent.emulator import render_openai
from portagent.emulator import server as emulator_server
from portagent.emulator.plan import Plan
from portagent.wire.items import RequestView
from portagent.wire.sse import encode_event, parse_sse

REFUSAL = "I can't help with that."
"""The refusal text of data/refusals.yaml."""


def refuses(plan: Plan) -> bool:
    """The first reply of a ``refuse*`` conversation is a refusal."""
    return plan.conversation.startswith("refuse") and plan.cursor == 0 and bool(plan.text)


def silent(plan: Plan) -> bool:
    """A ``refuse_silently*`` conversation's refusal is empty: ``"refusal": ""``."""
    return plan.conversation.startswith("refuse_silently")


def refused_part(part: dict[str, Any], silently: bool = False) -> dict[str, Any]:
    if part.get("type") != "output_text":
        return part
    return {"type": "refusal", "refusal": "" if silently else part["text"]}


def refused_item(item: dict[str, Any], silently: bool = False) -> dict[str, Any]:
    if item.get("type") != "message":
        return item
    return {**item, "content": [refused_part(p, silently) for p in item["content"]]}


def refused_response(response: dict[str, Any], silently: bool = False) -> dict[str, Any]:
    return {**response, "output": [refused_item(i, silently) for i in response.get("output") or []]}


def responses_json(plan: Plan, view: RequestView) -> dict[str, Any]:
    body = ORIGINAL["responses_json"](plan, view)
    return refused_response(body, silent(plan)) if refuses(plan) else body


def responses_events(plan: Plan, view: RequestView) -> list[bytes]:
    """The Responses stream of a refusal (OpenAI "Streaming events": ``response.refusal.delta`` /
    ``.done``, the content part a ``refusal``)."""
    frames = ORIGINAL["responses_events"](plan, view)
    if not refuses(plan):
        return frames
    out: list[bytes] = []
    silently = silent(plan)
    for frame in frames:
        (sse,) = parse_sse(frame.decode())
        event = sse.json()
        kind = event["type"]
        if kind == "response.output_text.delta":
            if silently:  # an empty refusal has no delta
                continue
            event = {k: v for k, v in event.items() if k != "logprobs"}
            event["type"] = "response.refusal.delta"
        elif kind == "response.output_text.done":
            event = {k: v for k, v in event.items() if k not in ("logprobs", "text")}
            event.update(type="response.refusal.done", refusal="" if silently else plan.text)
        elif kind in ("response.content_part.added", "response.content_part.done"):
            event["part"] = refused_part(event["part"], silently)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            event["item"] = refused_item(event["item"], silently)
        elif kind in ("response.completed", "response.incomplete"):
            event["response"] = refused_response(event["response"], silently)
        out.append(encode_event(event, event["type"]))
    return out


def chat_json(plan: Plan, view: RequestView) -> dict[str, Any]:
    body = ORIGINAL["chat_json"](plan, view)
    if refuses(plan):
        message = body["choices"][0]["message"]
        message.update(content=None, refusal="" if silent(plan) else plan.text)
    return body


def chat_events(plan: Plan, view: RequestView) -> list[bytes]:
    frames = ORIGINAL["chat_events"](plan, view)
    if not refuses(plan):
        return frames
    out: list[bytes] = []
    for frame in frames:
        (sse,) = parse_sse(frame.decode())
        if sse.data != "[DONE]":
            chunk = sse.json()
            for choice in chunk["choices"]:
                delta = choice["delta"]
                if delta.get("content"):
                    choice["delta"] = {"refusal": "" if silent(plan) else delta["content"]}
            frame = encode_event(chunk)
        out.append(frame)
    return out


ORIGINAL = {
    "responses_json": render_openai.responses_json,
    "responses_events": render_openai.responses_events,
    "chat_json": render_openai.chat_json,
    "chat_events": render_openai.chat_events,
}


@contextmanager
def refusing_openai() -> Iterator[None]:
    """The emulator's OpenAI renderers send the first reply of a ``refuse*`` conversation as a refusal."""
    with pytest.MonkeyPatch.context() as patch:
        for name, renderer in [
            ("responses_json", responses_json),
            ("responses_events", responses_events),
            ("chat_json", chat_json),
            ("chat_events", chat_events),
        ]:
            patch.setattr(render_openai, name, renderer)
        yield


def _raw_reason(plan: Plan) -> str | None:
    reason = str(plan.stop_reason)
    return reason.removeprefix("raw:") if reason.startswith("raw:") else None


def incomplete_as_raw(monkeypatch: pytest.MonkeyPatch) -> None:
    """Responses renderers for which a ``raw:<reason>`` plan is an answer ``incomplete`` for that reason."""
    render_json, render_events = render_openai.responses_json, render_openai.responses_events

    def responses_json(plan: Plan, view: RequestView) -> dict[str, Any]:
        reason = _raw_reason(plan)
        body = render_json(plan if reason is None else replace(plan, stop_reason="max_tokens"), view)
        if reason is not None:
            body["incomplete_details"] = {"reason": reason}
        return body

    def responses_events(plan: Plan, view: RequestView) -> list[bytes]:
        reason = _raw_reason(plan)
        frames = render_events(plan if reason is None else replace(plan, stop_reason="max_tokens"), view)
        if reason is None:
            return frames
        (sse,) = parse_sse(frames[-1].decode())
        event = sse.json()
        event["response"]["incomplete_details"] = {"reason": reason}
        return [*frames[:-1], encode_event(event, event["type"])]

    monkeypatch.setattr(render_openai, "responses_json", responses_json)
    monkeypatch.setattr(render_openai, "responses_events", responses_events)


def without_request_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulator's response headers without ``x-request-id`` for the rest of the test."""
    headers = emulator_server._Handler._headers

    def without_request_id(self: Any, content_type: str) -> dict[str, str]:
        out = headers(self, content_type)
        out.pop("x-request-id", None)
        return out

    monkeypatch.setattr(emulator_server._Handler, "_headers", without_request_id)
