"""``portagent.wire``: request parsing per vendor (cursor, first user text, tool results) and framing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _emulator_helpers import load_recording

from portagent.wire.anthropic import parse_messages_request, strip_system_reminders
from portagent.wire.gemini import parse_generate_content_request
from portagent.wire.items import WireFormatError
from portagent.wire.openai import parse_chat_request, parse_responses_request
from portagent.wire.sse import encode_event, json_array_chunks, parse_json_array_stream, parse_sse


def test_responses_groups_text_and_calls_into_one_turn() -> None:
    view = parse_responses_request(
        {
            "model": "m",
            "instructions": "sys",
            "input": [
                {"role": "user", "content": "q"},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Let me check."}],
                },
                {"type": "function_call", "call_id": "c1", "name": "a", "arguments": '{"x": 1}'},
                {"type": "function_call", "call_id": "c2", "name": "b", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "r1"},
                {"type": "function_call_output", "call_id": "c2", "output": "r2"},
            ],
        }
    )
    assert view.assistant_turns() == 1  # parallel calls + text = one turn, not two tool results
    assert view.first_user_text() == "q" and view.system == "sys"
    assert [r.text for r in view.tool_results()] == ["r1", "r2"]
    assert view.items[2].arguments == {"x": 1}


def test_responses_sequential_calls_are_separate_turns() -> None:
    view = parse_responses_request(
        {
            "input": [
                {"role": "user", "content": "q"},
                {"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "r1"},
                {"type": "function_call", "call_id": "c2", "name": "a", "arguments": "not json"},
                {"type": "function_call_output", "call_id": "c2", "output": "r2"},
            ]
        }
    )
    assert view.assistant_turns() == 2
    assert view.items[3].arguments == "not json"  # kept raw when it is not JSON


def test_chat_roles() -> None:
    view = parse_chat_request(
        {
            "model": "m",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "q"}]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c", "content": "42"},
            ],
        }
    )
    assert (view.system, view.first_user_text(), view.assistant_turns()) == ("sys", "q", 1)
    assert view.options["include_usage"] is True and view.stream
    assert view.tool_results()[0].text == "42"


def test_claude_code_system_reminders_are_removed() -> None:
    """Claude Code prepends reminders as separate blocks or inside the prompt (SDK_NOTES §4.5)."""
    view = parse_messages_request(
        {
            "model": "claude-sonnet-4-6",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "<system-reminder>\n# Environment\ncwd: /tmp\n</system-reminder>",
                        },
                        {
                            "type": "text",
                            "text": "<system-reminder>\nToday's date is 2026-11-29.\n</system-reminder>\n",
                        },
                        {
                            "type": "text",
                            "text": "<system-reminder>budget</system-reminder>\nWhat's the weather?",
                            "cache_control": {"type": "ephemeral"},
                        },
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "s"},
                        {"type": "text", "text": "Let me check."},
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "mcp__w__get_weather",
                            "input": {"city": "Paris"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": "sunny\n\n<system-reminder>\n<total_tokens>1 left</total_tokens>\n</system-reminder>",
                        }
                    ],
                },
            ],
            "thinking": {"type": "adaptive"},
        }
    )
    assert view.first_user_text() == "What's the weather?"
    assert view.assistant_turns() == 1
    assert view.tool_results()[0].text == "sunny"
    assert view.options["thinking"] is True
    assert strip_system_reminders("a <system-reminder>x</system-reminder>") == "a"


def test_a_system_message_among_the_turns_is_instructions() -> None:
    """Claude Code sends a ``system`` message after the user's for some models: read into the system text,
    not a turn (the turn count and the first user text are what scripts match on)."""
    view = parse_messages_request(
        {
            "model": "claude-opus-5-5",
            "system": [{"type": "text", "text": "You are a desk."}],
            "messages": [
                {"role": "user", "content": "Where is ORD-7?"},
                {"role": "system", "content": [{"type": "text", "text": "# Environment\ncwd: /tmp"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]},
                {"role": "system", "content": "Today is Friday."},
            ],
        }
    )
    assert view.first_user_text() == "Where is ORD-7?"
    assert view.assistant_turns() == 1
    assert view.system == "You are a desk.\n\n# Environment\ncwd: /tmp\n\nToday is Friday."
    assert [i.role for i in view.items] == ["user", "assistant"]


def test_gemini_snake_case_and_adk_relayed_turns() -> None:
    """ADK rewrites another agent's turns as user "For context:" contents (adk _fencing.py)."""
    begin, end = "<<<BEGIN_QUOTED_AGENT_CONTENT>>>", "<<<END_QUOTED_AGENT_CONTENT>>>"
    view = parse_generate_content_request(
        {
            "system_instruction": {"parts": [{"text": "You are billing."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "I want a refund"}]},
                {
                    "role": "user",
                    "parts": [
                        {"text": "For context: below is a transcript of what another agent did ..."},
                        {
                            "text": f"[triage] called tool `transfer_to_agent` with parameters:\n{begin}\n"
                            f"{{'agent_name': 'billing'}}\n{end}"
                        },
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {"text": "For context: below is a transcript of what another agent did ..."},
                        {
                            "text": f"[triage] `transfer_to_agent` tool returned result:\n{begin}\n{{'result': None}}\n{end}"
                        },
                    ],
                },
            ],
            "tools": [
                {"function_declarations": [{"name": "t", "parameters_json_schema": {"type": "object"}}]}
            ],
            "generation_config": {"thinking_config": {"include_thoughts": True}},
        },
        model="gemini-2.5-flash",
    )
    assert view.first_user_text() == "I want a refund"
    assert view.assistant_turns() == 1
    call = view.items[1]
    assert (call.kind, call.name, call.arguments) == (
        "tool_call",
        "transfer_to_agent",
        {"agent_name": "billing"},
    )
    assert call.details["relayed_from"] == "triage"
    assert view.tool_names() == ["t"] and view.tools[0].parameters == {"type": "object"}
    assert view.options["include_thoughts"] is True and view.system == "You are billing."


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"messages": "x"},
        {"messages": [{"role": "robot", "content": "x"}]},
        {"messages": [{"role": "user", "content": 5}]},
    ],
)
def test_malformed_bodies_raise_wire_format_error(body: object) -> None:
    with pytest.raises(WireFormatError):
        parse_messages_request(body)
    with pytest.raises(WireFormatError):
        parse_chat_request(body)


# -- the real recordings' requests -------------------------------------------------------------

RECORDED = [
    (
        "openai/pydantic-ai__test_openai_responses_stream.yaml",
        parse_responses_request,
        "What is the capital of France?",
        [0, 1],
    ),
    (
        "openai/llm__test_tool_use_chain_of_two_calls.yaml",
        parse_chat_request,
        "Can the country of Crumpet have dragons? Answer with only YES or NO",
        [0, 1, 2],
    ),
    (
        "anthropic/pydantic-ai__test_multiple_parallel_tool_calls.yaml",
        parse_messages_request,
        "Alice, Bob, Charlie and Daisy are a family. Who is the youngest?",
        [0, 1],
    ),
    (
        "anthropic/llm-anthropic__test_tools.yaml",
        parse_messages_request,
        "Two names for a pet pelican",
        [0, 1],
    ),
    (
        "google/pydantic-ai__test_google_model_iter_stream.yaml",
        parse_generate_content_request,
        "What is the temperature of the capital of France?",
        [0, 1, 2],
    ),
    (
        "google/llm-gemini__test_tools.yaml",
        parse_generate_content_request,
        "Two names for a pet pelican",
        [0, 1, 2],
    ),
]


@pytest.mark.parametrize(("path", "parse", "first_user", "cursors"), RECORDED, ids=[r[0] for r in RECORDED])
def test_recorded_requests_parse(path: str, parse: object, first_user: str, cursors: list[int]) -> None:
    interactions = load_recording(path)
    views = [parse(i["request"]) for i in interactions]  # type: ignore[operator]
    assert [v.first_user_text() for v in views] == [first_user] * len(views)
    assert [v.assistant_turns() for v in views] == cursors
    # every turn after the first carries the previous turn's tool results
    assert all(len(v.tool_results()) >= 1 for v in views[1:])
    assert views[0].tools


def test_recorded_parallel_results_and_values() -> None:
    views = [
        parse_messages_request(i["request"])
        for i in load_recording("anthropic/pydantic-ai__test_multiple_parallel_tool_calls.yaml")
    ]
    assert [r.text for r in views[1].tool_results()][
        -1
    ] == "daisy is bob's daughter and charlie's younger sister"
    views = [
        parse_generate_content_request(i["request"])
        for i in load_recording("google/llm-gemini__test_tools.yaml")
    ]
    assert views[2].tool_results()[-1].output == {"output": "Sammy"}


# -- framing -----------------------------------------------------------------------------------


def test_sse_round_trip_and_multiline_data() -> None:
    frames = encode_event({"a": 1}, "x") + encode_event("[DONE]") + encode_event("l1\nl2", crlf=True)
    events = parse_sse(frames.decode())
    assert [(e.event, e.data) for e in events] == [("x", '{"a":1}'), (None, "[DONE]"), (None, "l1\nl2")]


def test_json_array_stream_round_trip() -> None:
    elements = [{"a": 1}, {"b": [2]}]
    text = b"".join(json_array_chunks(elements)).decode()
    assert text.startswith("[{") and "\n,\r\n" in text and text.endswith("\n]")
    assert parse_json_array_stream(text) == elements
    assert parse_json_array_stream(b"".join(json_array_chunks([])).decode()) == []


def test_recorded_streams_parse() -> None:
    for path in (
        "openai/pydantic-ai__test_openai_responses_stream.yaml",
        "anthropic/llm-anthropic__test_tools.yaml",
        "google/pydantic-ai__test_google_model_iter_stream.yaml",
    ):
        for inter in load_recording(path):
            events = parse_sse(inter["response_text"])
            assert events and all(isinstance(e.json(), dict) for e in events)
    for inter in load_recording("google/llm-gemini__test_tools.yaml"):
        assert all("candidates" in e for e in parse_json_array_stream(inter["response_text"]))
    assert json.loads(encode_event({"é": 1}).decode().split("data: ", 1)[1]) == {"é": 1}


def test_missing_recordings_skip_locally_but_fail_under_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import _emulator_helpers

    monkeypatch.setattr(_emulator_helpers, "RECORDINGS", tmp_path / "absent")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        _emulator_helpers.require_recordings()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        _emulator_helpers.require_recordings()
