"""The scripted model without HTTP: conversation choice, cursor, templates, names, faults, usage."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from _emulator_helpers import WEATHER, with_turns

from portagent.contracts.emulator_script import EmulatorScript
from portagent.emulator.engine import CONVERSATION_HEADER, Engine
from portagent.emulator.plan import ErrorReply, Plan
from portagent.emulator.render_anthropic import messages_json
from portagent.emulator.render_gemini import generate_json
from portagent.emulator.render_openai import chat_json, responses_events, responses_json
from portagent.wire.anthropic import parse_messages_request
from portagent.wire.gemini import parse_generate_content_request
from portagent.wire.openai import parse_chat_request, parse_responses_request


def engine(script: dict[str, Any] = WEATHER) -> Engine:
    return Engine(EmulatorScript.model_validate(script))


def chat(*messages: dict[str, Any], tools: list[str] = (), system: str | None = None) -> Any:
    msgs = ([{"role": "system", "content": system}] if system else []) + list(messages)
    return parse_chat_request(
        {
            "model": "gpt-4.1-mini",
            "messages": msgs,
            "tools": [
                {"type": "function", "function": {"name": t, "parameters": {"type": "object"}}} for t in tools
            ],
        }
    )


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def plan_of(result: Plan | ErrorReply) -> Plan:
    assert isinstance(result, Plan), result
    return result


def test_match_exact_regex_and_file_order() -> None:
    e = engine()
    assert plan_of(e.respond(chat(user("  What's the weather in Paris?  ")), {})).conversation == "weather"
    assert plan_of(e.respond(chat(user("hello you")), {})).text == "Hello there!"


def test_unknown_conversation_lists_the_keys() -> None:
    err = engine().respond(chat(user("Something else")), {})
    assert isinstance(err, ErrorReply) and err.kind == "bad_request"
    assert "'Something else'" in err.message
    assert 'weather (first_user="What\'s the weather in Paris?")' in err.message
    assert "hello (first_user_regex=" in err.message


def test_conversation_by_name_header_and_system_contains() -> None:
    script = copy.deepcopy(WEATHER)
    script["conversations"].insert(
        0,
        {
            "name": "billing-view",
            "match": {"first_user": "What's the weather in Paris?", "system_contains": "billing"},
            "turns": [{"text": "billing says hi"}],
        },
    )
    script["conversations"].append({"name": "named", "turns": [{"text": "by name"}]})
    e = engine(script)
    assert (
        plan_of(e.respond(chat(user("What's the weather in Paris?"), system="You do billing."), {})).text
        == "billing says hi"
    )
    assert (
        plan_of(e.respond(chat(user("What's the weather in Paris?"), system="other"), {})).conversation
        == "weather"
    )
    assert plan_of(e.respond(chat(user("anything")), {CONVERSATION_HEADER: "named"})).text == "by name"
    err = e.respond(chat(user("x")), {CONVERSATION_HEADER: "nope"})
    assert isinstance(err, ErrorReply) and "no conversation named 'nope'" in err.message


def test_cursor_counts_assistant_turns_and_exhaustion() -> None:
    e = engine()
    call = {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        ],
    }
    second = e.respond(
        chat(
            user("What's the weather in Paris?"),
            call,
            {"role": "tool", "tool_call_id": "c", "content": '{"forecast": "sunny"}'},
        ),
        {},
    )
    assert plan_of(second).cursor == 1 and plan_of(second).text == "FINAL: sunny"
    done = {"role": "assistant", "content": "FINAL: sunny"}
    err = e.respond(
        chat(
            user("What's the weather in Paris?"),
            call,
            {"role": "tool", "tool_call_id": "c", "content": "x"},
            done,
            user("more?"),
        ),
        {},
    )
    assert isinstance(err, ErrorReply) and "script exhausted for conversation 'weather'" in err.message
    assert "2 turn(s)" in err.message


@pytest.mark.parametrize(
    ("template", "result", "expected"),
    [
        ("{{last_tool_result}}", '{"a": {"b": [1, 2]}}', '{"a": {"b": [1, 2]}}'),
        ("v={{last_tool_result.a.b.1}}", '{"a": {"b": [1, 2]}}', "v=2"),
        ("v={{ last_tool_result.balance_due }}", "{'balance_due': 12.5}", "v=12.5"),  # str(dict) from an SDK
        ("v={{last_tool_result.missing | last_tool_result.a}}", '{"a": 1}', "v=1"),  # the first that resolves
        ('v={{last_tool_result.missing | "none"}}', '{"a": 1}', "v=none"),
        ("{{last_tool_result}}", "plain text", "plain text"),
        ("{{first_user}}!", "x", "q!"),
    ],
)
def test_templates(template: str, result: str, expected: str) -> None:
    script = with_turns("t", "q", [{"tool_calls": [{"name": "f"}]}, {"text": template}])
    view = chat(
        user("q"),
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": result},
    )
    p = plan_of(engine(script).respond(view, {}))
    assert (
        p.text == expected
    )  # an unresolvable one is an error reply: tests/emulator/test_templates_checked.py


def test_lone_placeholder_in_arguments_keeps_type_and_gemini_unwraps_result() -> None:
    script = with_turns(
        "t",
        "q",
        [
            {"tool_calls": [{"name": "f"}]},
            {
                "tool_calls": [
                    {"name": "g", "arguments": {"n": "{{last_tool_result}}", "s": "n={{last_tool_result}}"}}
                ]
            },
        ],
    )
    # ADK wraps a non-dict return value as {"result": value}
    view = parse_generate_content_request(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "q"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"name": "f", "response": {"result": 123124}}}],
                },
            ]
        }
    )
    p = plan_of(engine(script).respond(view, {}))
    assert p.calls[0].arguments == {"n": 123124, "s": "n=123124"}
    assert p.calls[0].arguments_json == '{"n":123124,"s":"n=123124"}'


def test_tool_names_match_mcp_prefix_and_emit_declared_name() -> None:
    script = with_turns(
        "t",
        "q",
        [{"tool_calls": [{"name": "get_weather"}, {"name": "mcp__x__lookup"}, {"name": "not_declared"}]}],
    )
    view = chat(user("q"), tools=["mcp__weather__get_weather", "lookup"])
    p = plan_of(engine(script).respond(view, {}))
    assert [c.name for c in p.calls] == ["mcp__weather__get_weather", "lookup", "not_declared"]
    assert any("'not_declared' is not declared" in n for n in p.notes)


def test_handoff_rendered_as_each_sdk_declares_it() -> None:
    script = with_turns("t", "q", [{"handoff": {"agent": "Billing Agent", "input": "Refund please"}}])
    e = engine(script)
    openai = plan_of(e.respond(chat(user("q"), tools=["get_weather", "transfer_to_billing_agent"]), {}))
    assert (openai.calls[0].name, openai.calls[0].arguments) == ("transfer_to_billing_agent", {})
    adk = plan_of(
        e.respond(
            parse_generate_content_request(
                {
                    "contents": [{"role": "user", "parts": [{"text": "q"}]}],
                    "tools": [{"functionDeclarations": [{"name": "transfer_to_agent"}]}],
                }
            ),
            {},
        )
    )
    assert (adk.calls[0].name, adk.calls[0].arguments) == (
        "transfer_to_agent",
        {"agent_name": "Billing Agent"},
    )
    claude = plan_of(
        e.respond(
            parse_messages_request(
                {
                    "messages": [user("q")],
                    "tools": [
                        {
                            "name": "Agent",
                            "input_schema": {"type": "object", "properties": {"run_in_background": {}}},
                        }
                    ],
                }
            ),
            {},
        )
    )
    assert claude.calls[0].name == "Agent"
    assert claude.calls[0].arguments == {
        "description": "Hand off to Billing Agent",
        "prompt": "Refund please",
        "subagent_type": "Billing Agent",
        "run_in_background": False,
    }
    undeclared = plan_of(
        e.respond(
            parse_messages_request(
                {"messages": [user("q")], "tools": [{"name": "Task", "input_schema": {"type": "object"}}]}
            ),
            {},
        )
    )
    assert undeclared.calls[0].name == "Task" and "run_in_background" not in undeclared.calls[0].arguments
    fallback = plan_of(e.respond(chat(user("q")), {}))
    assert fallback.calls[0].name == "transfer_to_billing_agent" and fallback.notes


def test_fault_times_count_per_provider_and_reset() -> None:
    script = with_turns("t", "q", [{"text": "ok", "fault": {"type": "http_429", "times": 2}}])
    e = engine(script)
    openai_view = chat(user("q"))
    claude_view = parse_messages_request({"messages": [user("q")]})
    kinds = [type(e.respond(openai_view, {})).__name__ for _ in range(3)]
    assert kinds == ["ErrorReply", "ErrorReply", "Plan"]
    assert isinstance(e.respond(claude_view, {}), ErrorReply)  # counted separately for claude
    e.reset()
    assert isinstance(e.respond(openai_view, {}), ErrorReply)
    err = engine(with_turns("t", "q", [{"fault": {"type": "http_429"}}])).respond(openai_view, {})
    assert isinstance(err, ErrorReply) and err.retry_after_s == 1.0 and err.kind == "rate_limit"


def test_provider_override() -> None:
    script = with_turns(
        "t", "q", [{"text": "generic"}], providers={"claude": {"turns": [{"text": "for claude"}]}}
    )
    e = engine(script)
    assert plan_of(e.respond(chat(user("q")), {})).text == "generic"
    assert plan_of(e.respond(parse_messages_request({"messages": [user("q")]}), {})).text == "for claude"


def test_previous_response_id_continues_the_conversation() -> None:
    e = engine()
    first = plan_of(e.respond(parse_responses_request({"input": "What's the weather in Paris?"}), {}))
    nxt = plan_of(
        e.respond(
            parse_responses_request(
                {
                    "previous_response_id": f"resp_{first.ident}",
                    "input": [
                        {"type": "function_call_output", "call_id": "c", "output": '{"forecast": "rain"}'}
                    ],
                }
            ),
            {},
        )
    )
    assert (nxt.cursor, nxt.text) == (1, "FINAL: rain")


def test_usage_convention_per_vendor() -> None:
    """Script usage is OTel-style (input includes cache); Anthropic's input_tokens excludes it."""
    script = with_turns(
        "t",
        "q",
        [
            {
                "text": "hi",
                "thinking": "hmm",
                "usage": {
                    "input_tokens": 1000,
                    "output_tokens": 50,
                    "cache_read_tokens": 600,
                    "cache_write_tokens": 100,
                    "reasoning_tokens": 20,
                },
            }
        ],
    )
    e = engine(script)
    view = chat(user("q"))
    p = plan_of(e.respond(view, {}))
    assert chat_json(p, view)["usage"]["prompt_tokens"] == 1000
    assert chat_json(p, view)["usage"]["prompt_tokens_details"]["cached_tokens"] == 600
    rview = parse_responses_request({"input": "q"})
    ru = responses_json(plan_of(e.respond(rview, {})), rview)["usage"]
    assert (
        ru["input_tokens"],
        ru["input_tokens_details"]["cached_tokens"],
        ru["output_tokens_details"]["reasoning_tokens"],
        ru["total_tokens"],
    ) == (1000, 600, 20, 1050)
    aview = parse_messages_request(
        {"messages": [user("q")], "thinking": {"type": "enabled", "budget_tokens": 9}}
    )
    au = messages_json(plan_of(e.respond(aview, {})), aview)["usage"]
    assert (
        au["input_tokens"],
        au["cache_read_input_tokens"],
        au["cache_creation_input_tokens"],
        au["output_tokens"],
    ) == (300, 600, 100, 50)
    gview = parse_generate_content_request({"contents": [{"role": "user", "parts": [{"text": "q"}]}]})
    gu = generate_json(plan_of(e.respond(gview, {})), gview)["usageMetadata"]
    assert (
        gu["promptTokenCount"],
        gu["cachedContentTokenCount"],
        gu["candidatesTokenCount"],
        gu["thoughtsTokenCount"],
        gu["totalTokenCount"],
    ) == (1000, 600, 30, 20, 1050)


def test_usage_defaults_and_estimates() -> None:
    script = with_turns("t", "q", [{"text": "x" * 40}, {"text": "y", "usage": {"output_tokens": 3}}])
    script["defaults"] = {"usage": {"input_tokens": 77}}
    e = engine(script)
    p = plan_of(e.respond(chat(user("q")), {}))
    assert (p.usage.input_tokens, p.usage.output_tokens) == (77, 10)  # default input, estimated output
    p2 = plan_of(e.respond(chat(user("q"), {"role": "assistant", "content": "x"}, user("again")), {}))
    assert (p2.usage.input_tokens, p2.usage.output_tokens) == (77, 3)


def test_thinking_only_when_the_request_enables_it() -> None:
    e = engine(with_turns("t", "q", [{"text": "hi", "thinking": "hmm"}]))
    off = parse_messages_request({"messages": [user("q")]})
    on = parse_messages_request(
        {"messages": [user("q")], "thinking": {"type": "enabled", "budget_tokens": 1024}}
    )
    assert [b["type"] for b in messages_json(plan_of(e.respond(off, {})), off)["content"]] == ["text"]
    assert [b["type"] for b in messages_json(plan_of(e.respond(on, {})), on)["content"]] == [
        "thinking",
        "text",
    ]


def test_responses_are_deterministic() -> None:
    """Same request → byte-identical response: ids derive from conversation + cursor, times are fixed."""
    view = parse_responses_request(
        {"model": "gpt-4.1-mini", "input": "What's the weather in Paris?", "stream": True}
    )
    a = b"".join(responses_events(plan_of(engine().respond(view, {})), view))
    b = b"".join(responses_events(plan_of(engine().respond(view, {})), view))
    assert a == b
    assert b'"id":"resp_emu_weather_0"' in a and b'"call_id":"call_emu_weather_0_0"' in a


def test_content_faults() -> None:
    e = engine(
        with_turns(
            "t",
            "q",
            [
                {
                    "text": "hi",
                    "tool_calls": [{"name": "f", "arguments": {"a": "bcdef"}}],
                    "fault": {"type": "malformed_arguments"},
                }
            ],
        )
    )
    p = plan_of(e.respond(chat(user("q")), {}))
    assert p.calls[0].malformed and p.calls[0].arguments_json == '{"a":"'
    e = engine(with_turns("t", "q", [{"text": "hi", "fault": {"type": "unknown_tool", "name": "rm_rf"}}]))
    assert [c.name for c in plan_of(e.respond(chat(user("q")), {})).calls] == ["rm_rf"]
    e = engine(with_turns("t", "q", [{"text": "hi", "fault": {"type": "huge_text", "size_bytes": 5000}}]))
    assert len(plan_of(e.respond(chat(user("q")), {})).text.encode()) == 5000
