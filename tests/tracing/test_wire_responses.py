"""The response parsers in ``portagent.wire.*_response`` on edge cases the cassettes do not hold.

(They belong to ``portagent/wire``; the tests live here beside their only consumer, trace import,
because ``tests/emulator/test_wire.py`` is being edited by the emulator work.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from portagent.tracing.importer import import_cassette
from portagent.wire.anthropic_response import parse_messages_response
from portagent.wire.gemini_response import parse_generate_content_response
from portagent.wire.items import WireFormatError
from portagent.wire.openai_response import parse_chat_response, parse_responses_response
from portagent.wire.response import body_form, parse_error_body
from portagent.wire.sse import encode_event


def _sse(events: list[dict[str, Any]], named: bool = True) -> str:
    return b"".join(encode_event(e, e["type"] if named else None) for e in events).decode()


def test_responses_stream_cut_before_completed_is_rebuilt_from_items_and_deltas() -> None:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get", "arguments": ""}
    text = (
        _sse(
            [
                {
                    "type": "response.created",
                    "response": {"id": "resp_1", "model": "gpt-4.1", "status": "in_progress"},
                },
                {"type": "response.output_item.added", "output_index": 0, "item": call},
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": {**call, "arguments": '{"k": 1}'},
                },
                {
                    "type": "response.output_item.added",
                    "output_index": 1,
                    "item": {"type": "message", "content": []},
                },
                {"type": "response.output_text.delta", "output_index": 1, "delta": "Partial"},
            ]
        )
        + 'event: response.output_text.delta\ndata: {"type":"response.out'
    )
    view = parse_responses_response(text)
    assert (view.response_id, view.complete, view.finish_reason, view.usage) == (
        "resp_1",
        False,
        "error",
        None,
    )
    assert [(i.kind, i.name, i.call_id, i.arguments) for i in view.tool_calls()] == [
        ("tool_call", "get", "call_a", {"k": 1})
    ]
    assert view.text() == "Partial"


def test_responses_incomplete_and_failed() -> None:
    incomplete = {
        "id": "r",
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "Lon"}]}],
    }
    view = parse_responses_response(json.dumps(incomplete))
    assert (view.finish_reason, view.raw_finish_reason, view.text()) == (
        "length",
        "incomplete:max_output_tokens",
        "Lon",
    )
    failed = _sse(
        [
            {
                "type": "response.failed",
                "response": {
                    "id": "r",
                    "status": "failed",
                    "output": [],
                    "error": {"code": "server_error", "message": "boom"},
                },
            }
        ]
    )
    view = parse_responses_response(failed)
    assert (view.finish_reason, dict(view.error or {})) == (
        "error",
        {"code": "server_error", "message": "boom"},
    )


def test_responses_builtin_tool_items_do_not_turn_a_final_answer_into_tool_calls() -> None:
    body = {
        "id": "r",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "x"},
            },
            {"type": "message", "content": [{"type": "output_text", "text": "Found it."}]},
        ],
    }
    view = parse_responses_response(body)
    assert view.finish_reason == "stop"
    (call,) = view.tool_calls()
    assert (call.name, call.arguments, call.details["builtin"]) == (
        "web_search_call",
        {"type": "search", "query": "x"},
        True,
    )


def test_chat_forced_tool_choice_says_stop_but_is_tool_calls_and_legacy_function_call() -> None:
    body = {
        "id": "c",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_1", "function": {"name": "f", "arguments": ""}}],
                },
            }
        ],
    }
    view = parse_chat_response(body)
    assert (view.finish_reason, view.raw_finish_reason, view.tool_calls()[0].arguments) == (
        "tool_calls",
        "stop",
        {},
    )
    legacy = {
        "id": "c",
        "choices": [
            {
                "index": 0,
                "finish_reason": "function_call",
                "message": {"role": "assistant", "function_call": {"name": "g", "arguments": '{"a": 1}'}},
            }
        ],
    }
    (call,) = parse_chat_response(legacy).tool_calls()
    assert (call.name, call.call_id, call.arguments) == ("g", None, {"a": 1})


def test_chat_stream_without_usage_chunk_and_refusal() -> None:
    chunks = [
        {
            "id": "c",
            "model": "m",
            "choices": [{"index": 0, "delta": {"refusal": "I can't"}, "finish_reason": None}],
        },
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]},
    ]
    text = _sse(chunks, named=False) + "data: [DONE]\n\n"
    view = parse_chat_response(text)
    assert (view.finish_reason, view.usage, view.details["refusal"], view.complete) == (
        "content_filter",
        None,
        "I can't",
        True,
    )


def test_anthropic_stream_usage_of_message_delta_replaces_message_start() -> None:
    text = _sse(
        [
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "model": "claude",
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 90,
                        "cache_creation_input_tokens": 0,
                        "output_tokens": 1,
                    },
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hmm"},
            },
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"a": '},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": "[1, 2]}"},
            },
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 33}},
            {"type": "message_stop"},
        ]
    )
    view = parse_messages_response(text)
    assert view.usage is not None
    assert (view.usage.input_tokens, view.usage.cache_read_tokens, view.usage.output_tokens) == (100, 90, 33)
    assert [(i.kind, i.text, i.arguments) for i in view.items] == [
        ("thinking", "hmm", None),
        ("tool_call", "", {"a": [1, 2]}),
    ]
    assert (view.finish_reason, view.complete) == ("tool_calls", True)


def test_anthropic_server_tool_use_and_its_result_in_the_same_response(tmp_path: Path) -> None:
    resp = {
        "id": "msg_1",
        "type": "message",
        "model": "claude",
        "stop_reason": "end_turn",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "paris"},
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [{"type": "web_search_result"}],
            },
            {"type": "text", "text": "Paris is in France."},
        ],
        "usage": {"input_tokens": 5, "output_tokens": 5},
    }
    req = {"model": "claude", "max_tokens": 9, "messages": [{"role": "user", "content": "where is paris"}]}
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "interactions": [
                    {
                        "request": {
                            "method": "POST",
                            "uri": "https://api.anthropic.com/v1/messages",
                            "body": json.dumps(req),
                        },
                        "response": {
                            "status": {"code": 200},
                            "headers": {},
                            "body": {"string": json.dumps(resp)},
                        },
                    }
                ],
            }
        )
    )
    events = import_cassette(path)
    assert [e.type for e in events] == [
        "run.started",
        "model.call",
        "tool.call",
        "tool.result",
        "run.completed",
    ]
    assert (events[1].finish_reason, events[2].tool, events[2].via) == ("stop", "web_search", "builtin")
    assert (events[3].call_id, events[3].ok) == ("call_1", True)
    assert (events[-1].status, events[-1].final_output) == ("completed", "Paris is in France.")


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("SAFETY", "content_filter"),
        ("MAX_TOKENS", "length"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("OTHER", "other"),
        ("NEW_REASON", "other"),  # the adapters' word for a reason newer than their table (wire.finish)
    ],
)
def test_gemini_finish_reasons(reason: str, expected: str) -> None:
    body = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]}
    assert parse_generate_content_response(body).finish_reason == expected


def test_gemini_blocked_prompt_and_sse_without_finish_is_incomplete() -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}}
    view = parse_generate_content_response(blocked)
    assert (view.finish_reason, view.items, view.usage and view.usage.input_tokens) == (
        "content_filter",
        (),
        7,
    )
    cut = 'data: {"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}\r\n\r\n'
    view = parse_generate_content_response(cut)
    assert (view.complete, view.finish_reason, view.text()) == (False, "error", "Hi")


def test_body_forms_and_errors() -> None:
    assert [body_form(b) for b in ('  {"a": 1}', "[{}]", "data: x", {"a": 1}, [1])] == [
        "json",
        "json-array",
        "sse",
        "json",
        "json-array",
    ]
    with pytest.raises(WireFormatError, match="empty"):
        body_form("  ")
    assert parse_error_body(
        '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    ) == ("overloaded_error", "Overloaded")
    assert parse_error_body('[{"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}]') == (
        "UNAVAILABLE",
        "busy",
    )
    assert parse_error_body("<html>Bad gateway</html>") == (None, "<html>Bad gateway</html>")


@pytest.mark.parametrize(
    "parse",
    [parse_responses_response, parse_chat_response, parse_messages_response, parse_generate_content_response],
)
def test_a_stream_of_another_format_is_refused(parse: Any) -> None:
    with pytest.raises(WireFormatError):
        parse('data: {"unrelated": true}\n\n')
