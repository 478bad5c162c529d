"""The trace importer reads how a recorded reply ended in the adapters' words (``wire.finish``, the table
``adapters._shared.reply_finish`` decides with): a reply that did not end normally is ``other``, never a
failure or a made-up word, and an OpenAI refusal is ``content_filter``.

The wire parsers had tables of their own that drifted from the adapters': Gemini ``OTHER`` was ``error`` (an
imported run ending on it *failed*, ``provider_error``, where a run ends ``completed`` with the text so far),
an unknown Gemini value its lowercase name, an undocumented Chat Completions ``finish_reason`` or Anthropic
``stop_reason`` itself, Anthropic ``pause_turn`` ``stop``, an Anthropic ``end_turn`` holding calls
``tool_calls`` (its calls are not run: ``other``), a Responses answer ``incomplete`` for an unknown reason
``length``, and a refusal ``stop``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from portagent.adapters._shared import reply_finish
from portagent.tracing.importer import import_cassette
from portagent.wire.anthropic_response import parse_messages_response
from portagent.wire.gemini_response import parse_generate_content_response
from portagent.wire.openai_response import parse_chat_response, parse_responses_response

CALL = {"name": "get_order", "args": {"order_id": "ORD-7"}}


def gemini(raw: str, calls: bool) -> Any:
    parts: list[dict[str, Any]] = [{"text": "x"}]
    if calls:
        parts.append({"functionCall": CALL})
    return parse_generate_content_response(
        {"candidates": [{"content": {"parts": parts}, "finishReason": raw}]}
    )


def chat(raw: str, calls: bool) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": "x"}
    if calls:
        message["tool_calls"] = [
            {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}
        ]
    return parse_chat_response(
        {"id": "c", "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": raw}]}
    )


def anthropic(raw: str, calls: bool) -> Any:
    content: list[dict[str, Any]] = [{"type": "text", "text": "x"}]
    if calls:
        content.append({"type": "tool_use", "id": "t1", "name": "get_order", "input": {}})
    return parse_messages_response(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "c",
            "content": content,
            "stop_reason": raw,
        }
    )


PARSERS = {"gemini": gemini, "chat": chat, "anthropic": anthropic}
RAW = {
    "gemini": ["STOP", "MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL", "OTHER", "FINISH_REASON_UNSPECIFIED",
               "A_REASON_NEWER_THAN_THE_SDK"],
    "chat": ["stop", "tool_calls", "length", "content_filter", "insufficient_system_resource", "error"],
    "anthropic": ["end_turn", "tool_use", "max_tokens", "refusal", "pause_turn", "a_reason_newer_than_the_sdk"],
}  # fmt: skip


@pytest.mark.parametrize("calls", [False, True], ids=["text", "calls"])
@pytest.mark.parametrize(
    "wire, raw", [pytest.param(w, r, id=f"{w}-{r}") for w, values in RAW.items() for r in values]
)
def test_each_wire_reads_a_finish_as_the_adapters_do(wire, raw, calls):
    view = PARSERS[wire](raw, calls)
    assert view.finish_reason == reply_finish(wire, raw, has_calls=calls)  # type: ignore[arg-type]
    assert view.raw_finish_reason == raw


@pytest.mark.parametrize(
    "reason, expected",
    [("max_output_tokens", "length"), ("content_filter", "content_filter"), ("a_newer_reason", "other")],
)
def test_a_responses_answer_incomplete_for_another_reason_is_other(reason, expected):
    body = {
        "id": "r",
        "model": "m",
        "status": "incomplete",
        "incomplete_details": {"reason": reason},
        "output": [],
    }
    assert parse_responses_response(body).finish_reason == expected


REFUSAL = "I can't help with that."


def test_an_openai_refusal_is_content_filter():
    """A Responses ``refusal`` part (status ``completed``), a Chat Completions ``message.refusal``
    (``finish_reason: stop``): the adapters trace ``content_filter`` (tests/adapters/test_refusals.py)."""
    message = {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": REFUSAL}]}
    responses = parse_responses_response(
        {"id": "r", "model": "m", "status": "completed", "output": [message]}
    )
    completion = parse_chat_response(
        {
            "id": "c",
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": None, "refusal": REFUSAL}, "finish_reason": "stop"}
            ],
        }
    )  # fmt: skip
    for view in (responses, completion):
        assert (view.finish_reason, view.details["refusal"]) == ("content_filter", REFUSAL)


def _cassette(tmp_path: Path, uri: str, request: Any, response: Any) -> Path:
    path = tmp_path / "c.yaml"
    inter = {
        "request": {"method": "POST", "uri": uri, "body": json.dumps(request), "headers": {}},
        "response": {"status": {"code": 200, "message": ""}, "headers": {}, "body": {"string": json.dumps(response)}},
    }  # fmt: skip
    path.write_text(yaml.safe_dump({"interactions": [inter], "version": 1}))
    return path


def test_an_imported_run_ending_on_gemini_other_completes_with_its_text(tmp_path):
    """Gemini ``OTHER``: the run ends ``completed`` with the text so far, as a run on adk or langgraph does
    (the importer read it as ``error`` and failed the run ``provider_error``)."""
    uri = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    request = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    response = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "So far"}]}, "finishReason": "OTHER"}]
    }
    events = import_cassette(_cassette(tmp_path, uri, request, response))
    (call,) = [e for e in events if e.type == "model.call"]
    assert call.finish_reason == "other"
    done = events[-1]
    assert (done.status, done.stop_reason, done.final_output) == ("completed", "final_output", "So far")


def test_an_imported_refusal_ends_with_the_refusal(tmp_path):
    """An OpenAI refusal ends the imported run ``content_filter`` with the refusal as its answer, as the
    adapters end it (the importer said ``stop`` and ``final_output: None``)."""
    uri = "https://api.openai.com/v1/chat/completions"
    request = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}
    response = {
        "id": "c",
        "model": "gpt-4.1-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": None, "refusal": REFUSAL}, "finish_reason": "stop"}
        ],
    }  # fmt: skip
    events = import_cassette(_cassette(tmp_path, uri, request, response))
    done = events[-1]
    assert (done.status, done.stop_reason, done.final_output) == ("completed", "content_filter", REFUSAL)
