"""The ADK adapter against real google-adk 2.13 and the emulator (never a mock of the SDK or the gateway).

Each scenario runs non-streaming and with ``StreamingMode.SSE``; assertions read both the normalized
trace and the emulator's request log (what ADK actually declared and sent back to the model).
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("google.adk", reason="google-adk is not installed (pip install 'portagent[adk]')")
from adk_testkit import (
    DATA,
    bundle,
    emulator_fixture,  # noqa: F401  (the "emu" fixture)
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    handlers,
    result_value,
    run,
    with_budget,
    with_spec,
)

from portagent.adapters.adk.agent import AGENT_TOOL_SCHEMA
from portagent.tools.approvals import ApprovalStore
from portagent.tracing.compare import equivalent, normalized_jsonl

STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["unary", "sse"])


def go(coro):
    return asyncio.run(coro)


def results_sent(r) -> list[tuple[str, object]]:
    """Tool results in the last request of the root conversation: what the model was finally shown."""
    last = r.views()[-1]
    return [(i.name, result_value(i)) for i in last.tool_results()]


# --- the happy path -----------------------------------------------------------------------------------


@STREAMING
def test_two_tools(emu, streaming):
    r = go(run(emu, "desk", "Where is order ORD-7 and how fast do you ship?", streaming=streaming))
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == "Order ORD-7 is delivered. Orders ship within 2 working days."
    calls = r.of("tool.call")
    assert [(c.call_id, c.tool, c.args) for c in calls] == [
        ("call_1", "get_order", {"order_id": "ORD-7", "include_items": True}),
        ("call_2", "search_faq", {"query": "shipping times"}),
    ]
    # vendor ids (ADK's invented adk-<uuid>) only in provider_details
    assert all(c.provider_details["vendor_call_id"].startswith("adk-") for c in calls)
    assert handlers.CALLS == {"get_order": 1, "search_faq": 1}
    model_calls = r.of("model.call")
    assert len(model_calls) == 3 and [m.finish_reason for m in model_calls] == [
        "tool_calls",
        "tool_calls",
        "stop",
    ]
    assert [m.agent for m in model_calls] == ["shop_desk"] * 3
    assert r.result.usage.model_calls == 3
    assert r.result.cost_source == "computed" and r.result.cost_usd > 0

    views = r.views()
    assert len(views) == 3 and all(v.api == "gemini.generate_content" for v in views)
    assert {e["stream"] for e in r.requests} == {streaming}
    spec_tools = bundle("desk").node.tools
    declared = {t.name: t for t in views[0].tools}
    for name, tool in spec_tools.items():  # the ToolSpec's JSON Schema, verbatim
        assert declared[name].parameters == tool.input_schema
        assert declared[name].description == tool.model_description()
    assert views[0].system.startswith(bundle("desk").spec.instructions.rstrip())
    # the gateway's structured observations are what the model got back
    assert results_sent(r) == [
        (
            "get_order",
            {
                "ok": True,
                "order_id": "ORD-7",
                "status": "delivered",
                "amount_eur": 30.0,
                "items": ["mug", "tea"],
            },
        ),
        ("search_faq", {"ok": True, "answer": "Orders ship within 2 working days."}),
    ]


def test_usage_is_mapped_to_otel_semantics(emu):
    """promptTokenCount (cache included) → input; cachedContentTokenCount → cache_read;
    candidatesTokenCount + thoughtsTokenCount → output; thoughts → reasoning."""
    r = go(run(emu, "desk", "Where is order ORD-7 and how fast do you ship?"))
    first = r.of("model.call")[0]
    assert (
        first.input_tokens,
        first.cache_read_tokens,
        first.output_tokens,
        first.reasoning_tokens,
        first.cache_write_tokens,
    ) == (500, 200, 40, 12, 0)
    assert first.response_id is None  # ADK's LlmResponse drops Gemini's responseId
    assert first.provider_details["finish_reason"] == "STOP"
    u = r.result.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens) == (1100, 100, 200, 12)


def test_streaming_and_unary_give_the_same_trace(emu):
    a = go(run(emu, "desk", "Where is order ORD-7 and how fast do you ship?", streaming=False))
    b = go(run(emu, "desk", "Where is order ORD-7 and how fast do you ship?", streaming=True))
    assert equivalent(a.events, b.events, across_providers=False), equivalent(a.events, b.events).report()
    assert normalized_jsonl(a.events) == normalized_jsonl(b.events)


def test_same_script_twice_is_byte_identical_once_normalized(emu):
    a = go(run(emu, "desk", "Compare orders ORD-7 and ORD-8."))
    b = go(run(emu, "desk", "Compare orders ORD-7 and ORD-8."))
    assert normalized_jsonl(a.events) == normalized_jsonl(b.events)
    assert a.events[0].run_id == b.events[0].run_id  # seeded ids


@STREAMING
def test_parallel_calls_are_serialized_in_order(emu, streaming):
    r = go(run(emu, "desk", "Compare orders ORD-7 and ORD-8.", streaming=streaming))
    assert r.result.final_output == "ORD-7 is delivered, ORD-8 is lost."
    assert [(c.call_id, c.args["order_id"]) for c in r.of("tool.call")] == [
        ("call_1", "ORD-7"),
        ("call_2", "ORD-8"),
    ]
    seq = [(e.type, getattr(e, "call_id", None)) for e in r.events if e.type.startswith("tool.")]
    assert seq == [
        ("tool.call", "call_1"),
        ("tool.result", "call_1"),
        ("tool.call", "call_2"),
        ("tool.result", "call_2"),
    ]


# --- policy, validation, approvals --------------------------------------------------------------------


@STREAMING
def test_denied_tool_is_never_executed(emu, streaming):
    r = go(run(emu, "desk", "Close my account C-100 now.", streaming=streaming))
    assert r.result.final_output == "I cannot do that: permission_denied."
    assert [d.decision for d in r.of("permission.decision")] == ["deny"]
    assert handlers.CALLS["close_account"] == 0
    ((name, value),) = results_sent(r)
    assert name == "close_account" and value["ok"] is False and value["error"] == "permission_denied"


@STREAMING
def test_schema_invalid_arguments_get_a_validation_error(emu, streaming):
    r = go(run(emu, "desk", "Look up order 7.", streaming=streaming))
    assert r.result.final_output == "Order ORD-7 is delivered."
    first, second = r.of("tool.result")
    assert (first.ok, first.error) == (False, "validation_error") and second.ok
    assert r.of("tool.call")[0].args == {"order_id": 7, "include_items": "yes"}  # Gemini sends objects
    assert handlers.CALLS["get_order"] == 1
    sent = results_sent(r)
    assert sent[0][1]["error"] == "validation_error"
    assert {p["path"] for p in sent[0][1]["details"]} >= {"order_id", "include_items"}


@pytest.mark.parametrize(
    "approver, amount, ok",
    [
        ("auto-approve", 30, True),
        ("auto-deny", None, False),
        (
            {
                "type": "scripted",
                "decisions": [
                    {
                        "tool": "issue_refund",
                        "decision": "edit",
                        "args": {"order_id": "ORD-7", "amount_eur": 20},
                    }
                ],
            },
            20,
            True,
        ),
    ],
    ids=["approve", "reject", "edit"],
)
@STREAMING
def test_approvals_are_decided_in_the_tool_hook(emu, approver, amount, ok, streaming):
    r = go(run(emu, "desk", "Refund 30 EUR for ORD-7.", approver=approver, streaming=streaming))
    assert r.result.status == "completed"
    assert [d.decision for d in r.of("permission.decision")] == ["approval_required"]
    (resolved,) = r.of("approval.resolved")
    (result,) = r.of("tool.result")
    assert result.ok is ok
    if ok:
        assert [{"order_id": "ORD-7", "amount_eur": amount}] == handlers.REFUNDS
        assert resolved.effective_args == {"order_id": "ORD-7", "amount_eur": amount}
    else:
        assert handlers.REFUNDS == [] and result.error == "approval_rejected"
    assert results_sent(r)[0][1]["ok"] is ok


def test_edited_arguments_are_revalidated(emu):
    bad_edit = {
        "type": "scripted",
        "decisions": [
            {"tool": "issue_refund", "decision": "edit", "args": {"order_id": "ORD-7", "amount_eur": 9999}}
        ],
    }
    r = go(run(emu, "desk", "Refund 30 EUR for ORD-7.", approver=bad_edit))
    (result,) = r.of("tool.result")
    assert result.ok is False and handlers.REFUNDS == []


def test_deferred_approval_waits_then_resumes_with_one_effect(emu):
    key = "refund-ord-7"
    first = go(
        run(emu, "desk", "Refund 30 EUR for ORD-7.", approver="defer", idempotency_key=key, seeded=False)
    )
    assert (first.result.status, first.result.stop_reason) == ("waiting_approval", "approval_pending")
    (approval_id,) = first.result.pending_approvals
    assert handlers.REFUNDS == []
    store = ApprovalStore()
    try:
        store.approve(approval_id, reviewer="tester")
    finally:
        store.close()
    second = go(
        run(emu, "desk", "Refund 30 EUR for ORD-7.", approver="defer", idempotency_key=key, seeded=False)
    )
    assert second.result.status == "completed", second.result.error
    assert second.result.run_id == first.result.run_id and second.result.attempt == 2
    assert handlers.REFUNDS == [{"order_id": "ORD-7", "amount_eur": 30}]
    third = go(
        run(emu, "desk", "Refund 30 EUR for ORD-7.", approver="defer", idempotency_key=key, seeded=False)
    )
    assert third.result.status == "duplicate" and handlers.REFUNDS == [
        {"order_id": "ORD-7", "amount_eur": 30}
    ]


# --- budgets ----------------------------------------------------------------------------------------


@STREAMING
def test_max_tool_calls(emu, streaming):
    r = go(run(emu, "desk", "Keep searching the FAQ.", streaming=streaming))
    assert (r.result.status, r.result.stop_reason) == ("budget_exhausted", "max_tool_calls")
    assert handlers.CALLS["search_faq"] == 4
    (exceeded,) = r.of("budget.exceeded")
    assert (exceeded.limit, exceeded.limit_value) == ("max_tool_calls", 4)


@STREAMING
def test_max_turns_stops_before_the_extra_model_call(emu, streaming):
    b = with_budget(bundle(), max_turns=3, max_tool_calls=20)
    r = go(run(emu, b, "Keep searching the FAQ.", streaming=streaming))
    assert (r.result.status, r.result.stop_reason) == ("budget_exhausted", "max_turns")
    assert len(r.requests) == 3 and r.result.usage.model_calls == 3


def test_max_cost_usd(emu):
    b = with_budget(bundle(), max_cost_usd=0.0001)
    r = go(run(emu, b, "Keep searching the FAQ."))
    assert (r.result.status, r.result.stop_reason) == ("budget_exhausted", "max_cost_usd")
    assert len(r.requests) == 1 and handlers.CALLS["search_faq"] == 0


def test_timeout_cancels_the_run(emu):
    """Emulator only: timing does not replay from a cassette."""
    r = go(run(emu, with_budget(bundle(), timeout_s=0.5), "Take your time.", seeded=False))
    assert (r.result.status, r.result.stop_reason) == ("budget_exhausted", "timeout_s")
    assert r.result.duration_ms < 2500


# --- delegation -------------------------------------------------------------------------------------


@STREAMING
def test_handoff_goes_through_sub_agents(emu, streaming):
    r = go(run(emu, "desk", "My parcel ORD-8 never arrived.", streaming=streaming))
    assert r.result.final_output == "Order ORD-8 is lost; I will look after your refund."
    (handoff,) = r.of("handoff")
    assert (handoff.from_agent, handoff.to_agent, handoff.kind) == (
        "shop_desk",
        "refunds_specialist",
        "handoff",
    )
    assert r.events[-1].agent == "refunds_specialist"  # the route
    assert [m.agent for m in r.of("model.call")] == ["shop_desk", "refunds_specialist", "refunds_specialist"]
    assert r.of("tool.call")[0].tool == "get_order" and r.of("tool.call")[0].agent == "refunds_specialist"
    root, specialist, _ = r.views()
    transfer = next(t for t in root.tools if t.name == "transfer_to_agent")
    assert transfer.parameters["properties"]["agent_name"]["enum"] == ["refunds_specialist"]
    # transfers follow the spec's edges only: no transfer back to the parent, no peers
    assert "transfer_to_agent" not in specialist.tool_names()
    assert sorted(specialist.tool_names()) == ["get_order", "issue_refund"]
    assert specialist.system.startswith(bundle().agents["refunds_specialist"].spec.instructions.rstrip())


@STREAMING
def test_agent_as_tool_keeps_control(emu, streaming):
    r = go(run(emu, "desk", "Can I get my money back quickly?", streaming=streaming))
    assert r.result.final_output == "The expert says: Refunds reach the card within 5 days."
    (handoff,) = r.of("handoff")
    assert (handoff.from_agent, handoff.to_agent, handoff.kind) == (
        "shop_desk",
        "faq_expert",
        "agent_as_tool",
    )
    assert [c.tool for c in r.of("tool.call")] == [
        "search_faq"
    ]  # the agent tool is a handoff, not a tool.call
    assert r.events[-1].agent == "shop_desk"
    assert [m.agent for m in r.of("model.call")] == ["shop_desk", "faq_expert", "faq_expert", "shop_desk"]
    views = r.views()
    declared = {t.name: t for t in views[0].tools}
    assert declared["faq_expert"].parameters == AGENT_TOOL_SCHEMA
    assert declared["faq_expert"].description == "Interprets the FAQ for tricky questions."
    assert views[1].first_user_text() == "How fast are refunds?"
    assert results_sent(r) == [("faq_expert", "Refunds reach the card within 5 days.")]


def test_handoff_cycle_is_refused_naming_the_cycle(emu):
    from portagent.contracts.errors import UnsupportedFeatureError

    with pytest.raises(UnsupportedFeatureError, match=r"ping_agent -> pong_agent -> ping_agent"):
        go(run(emu, "cycle_a", "hello"))
    assert emu.requests() == []


def test_handoff_target_shared_by_two_agents_is_refused(emu):
    """A DAG is no cycle, but ADK agents have one parent: shop_desk → faq_expert → refunds_specialist
    plus shop_desk → refunds_specialist cannot be one ADK tree."""
    from dataclasses import replace

    from portagent.contracts.bundle import AgentBundle, DelegationEdge
    from portagent.contracts.errors import UnsupportedFeatureError

    b = bundle()
    root, faq = b.agents["shop_desk"], b.agents["faq_expert"]
    dag = AgentBundle(
        b.root,
        {
            **b.agents,
            "shop_desk": replace(
                root,
                edges=[
                    DelegationEdge("handoff", "refunds_specialist"),
                    DelegationEdge("handoff", "faq_expert"),
                ],
            ),
            "faq_expert": replace(faq, edges=[DelegationEdge("handoff", "refunds_specialist")]),
        },
    )
    assert dag.delegation_cycle() is None
    with pytest.raises(
        UnsupportedFeatureError,
        match=r"'refunds_specialist' is a handoff target of both "
        r"'shop_desk' and 'faq_expert'",
    ):
        go(run(emu, dag, "Are you open?"))
    assert emu.requests() == []


def test_cycle_is_refused_by_validate_and_run_on_the_cli(emu):
    from adk_testkit import run_cli_in_process

    code, out, err = run_cli_in_process("validate", str(DATA / "cycle_a.yaml"), "--provider", "adk")
    assert code == 1 and "ping_agent -> pong_agent -> ping_agent" in out + err
    code, _, err = run_cli_in_process(
        "run",
        str(DATA / "cycle_a.yaml"),
        "--provider",
        "adk",
        "--emulator",
        str(DATA / "emulator.yaml"),
        "--input",
        "hello",
    )
    assert code == 1 and "handoff cycles" in err and "ping_agent -> pong_agent -> ping_agent" in err


# --- sessions, structured output --------------------------------------------------------------------


@STREAMING
def test_multi_turn_conversation_shares_one_session(emu, streaming):
    r = go(
        run(
            emu,
            "desk",
            ["Hi, I have a question about ORD-7.", "Has it arrived?"],
            session_id="chat-42",
            streaming=streaming,
        )
    )
    assert r.result.final_output == "It is delivered."
    assert r.of("run.completed")[0].provider_details["adk_session_id"] == "chat-42"
    last = r.views()[-1]
    texts = [(i.role, i.text) for i in last.items if i.kind == "text"]
    assert texts == [
        ("user", "Hi, I have a question about ORD-7."),
        ("assistant", "Sure, what would you like to know?"),
        ("user", "Has it arrived?"),
    ]


@STREAMING
def test_structured_output(emu, streaming):
    r = go(run(emu, "structured", "Summarise ORD-7 as JSON.", streaming=streaming))
    assert (
        r.result.final_output == {"order_id": "ORD-7", "status": "delivered"}
        and r.result.output_valid is True
    )
    # Gemini API + tools: ADK enforces output_schema with its own set_model_response tool and an
    # appended instruction (pinned; visible on the wire). ADK 2.13 would declare the tool's argument as
    # a free-form object; the adapter declares the spec's schema there.
    first = r.views()[0]
    declared = {t.name: t for t in first.tools}
    assert declared["set_model_response"].parameters == {
        "type": "object",
        "properties": {"response": bundle("structured").spec.output_schema},
        "required": ["response"],
    }
    assert "set_model_response" in first.system


@STREAMING
def test_structured_output_through_set_model_response(emu, streaming):
    """What a real Gemini model does when ADK tells it to: the final answer comes as a
    set_model_response call. ADK's control tool is not a portable tool call (no tool.call event)."""
    r = go(run(emu, "structured", "Summarise ORD-7 through set_model_response.", streaming=streaming))
    assert r.result.status == "completed", r.result.error
    assert (
        r.result.final_output == {"order_id": "ORD-7", "status": "delivered"}
        and r.result.output_valid is True
    )
    assert [c.tool for c in r.of("tool.call")] == ["get_order"]
    assert len(r.of("model.call")) == 2 and r.events[-1].agent == "order_summary"


def test_structured_output_invalid(emu):
    r = go(run(emu, "structured", "Summarise ORD-8 as JSON."))
    assert r.result.status == "completed" and r.result.output_valid is False
    assert r.result.final_output == {"order_id": 8}


def test_structured_output_without_tools_uses_response_schema(emu):
    b = with_spec(bundle("structured"), tools=[], tool_files=[])
    b.agents[b.root].tools.clear()
    r = go(run(emu, b, "Summarise ORD-8 as JSON."))
    config = r.requests[0]["body"]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["required"] == ["order_id", "status"]
    assert r.result.output_valid is False


# --- what Gemini cannot express ---------------------------------------------------------------------


def test_tool_schema_feature_gemini_cannot_express_is_refused(emu):
    from portagent.contracts.errors import UnsupportedFeatureError

    b = bundle()
    tool = b.node.tools["search_faq"]
    schema = json.loads(json.dumps(tool.input_schema))
    schema["properties"]["query"]["allOf"] = [{"minLength": 2}]
    b.node.tools["search_faq"] = tool.model_copy(update={"input_schema": schema})
    with pytest.raises(UnsupportedFeatureError) as err:
        go(run(emu, b, "Where is order ORD-7 and how fast do you ship?"))
    assert "input_schema.properties.query.allOf" in str(err.value) and "search_faq" in str(err.value)
    assert emu.requests() == []  # refused before anything is sent


def test_output_schema_feature_adk_cannot_express_is_refused(emu):
    from portagent.contracts.errors import UnsupportedFeatureError

    schema = {"type": "object", "properties": {"order_id": {"type": ["string", "null"]}}}
    with pytest.raises(UnsupportedFeatureError, match=r"output_schema\.properties\.order_id\.type"):
        go(run(emu, with_spec(bundle("structured"), output_schema=schema), "Summarise ORD-7 as JSON."))


# --- pinned SDK behaviours: malformed arguments, unknown tool ----------------------------------------


@STREAMING
def test_unknown_tool_is_answered_by_the_gateway(emu, streaming):
    """ADK hands before_tool_callback a placeholder tool for an undeclared name; the gateway answers
    ``unknown_tool`` (traced, counted), instead of ADK's free-text "no tool with that name"."""
    r = go(run(emu, "desk", "Do something odd.", streaming=streaming))
    assert r.result.status == "completed" and r.result.final_output == "After the odd call: unknown_tool"
    (call,) = r.of("tool.call")
    (result,) = r.of("tool.result")
    assert (call.tool, result.ok, result.error) == ("launch_rocket", False, "unknown_tool")
    assert r.of("permission.decision") == []
    ((name, value),) = results_sent(r)
    assert name == "launch_rocket" and value["error"] == "unknown_tool"
    assert sorted(value["details"]["available"]) == [
        "close_account",
        "get_order",
        "issue_refund",
        "search_faq",
    ]


@STREAMING
def test_malformed_arguments_fail_the_run(emu, streaming):
    """Gemini sends arguments as an object; the emulator puts cut JSON text where the object belongs.
    google-genai's response model refuses it (``functionCall.args`` must be a dict), so the run fails
    with a ProviderError before any tool call: pinned for google-adk 2.13 / google-genai 2.34."""
    r = go(run(emu, "desk", "Send broken arguments.", streaming=streaming))
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error")
    assert "functionCall.args" in r.result.error and "could not parse" in r.result.error
    assert r.of("tool.call") == [] and len(r.requests) == 1


# --- errors -----------------------------------------------------------------------------------------


def test_429_without_retry_fails_with_the_status(emu):
    """google-genai does not retry unless asked (HttpOptions.retry_options is None)."""
    r = go(run(emu, "desk", "Are you open?"))
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error")
    assert "429" in r.result.error and "RESOURCE_EXHAUSTED" in r.result.error
    errors = r.of("error")
    assert [(e.error_type, e.retryable) for e in errors] == [("http_429", True), ("ProviderError", True)]
    assert len(r.requests) == 1


def test_429_then_success_with_sdk_retry(emu):
    r = go(
        run(
            emu,
            "desk",
            "Are you open?",
            extra={"adk_retry": {"attempts": 3, "initial_delay": 0.01, "max_delay": 0.05}},
        )
    )
    assert r.result.status == "completed" and r.result.final_output == "Yes, we are open."
    assert len(r.requests) == 2  # the SDK retried
    (http,) = r.of("error")  # ... and the retry is visible in the trace
    assert (http.error_type, http.retryable) == ("http_429", True) and "retries it" in http.message
    assert len(r.of("model.call")) == 1


def test_server_error_maps_to_provider_error(emu):
    r = go(run(emu, "desk", "Break the server."))
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error")
    assert "Gemini API error 500" in r.result.error


def test_unreachable_endpoint(emu):
    r = go(run(emu, "desk", "Are you open?", base_url="http://127.0.0.1:9"))
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error")
    assert "cannot reach the Gemini endpoint http://127.0.0.1:9" in r.result.error
    assert r.events[-1].type == "run.completed" and r.of("error")


# --- bad input ---------------------------------------------------------------------------------------


def test_no_gemini_model_id(emu):
    from portagent.contracts.errors import UsageError

    b = with_spec(bundle(), models=bundle().spec.models.model_copy(update={"adk": None}))
    with pytest.raises(UsageError, match=r"no model id for provider 'adk'.*models\.adk"):
        go(run(emu, b, "Are you open?"))


def test_missing_extra(monkeypatch):
    import importlib.util

    from portagent.adapters.base import get_adapter
    from portagent.contracts.errors import MissingExtraError

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name.split(".")[0] == "google" else real(name, *a),
    )
    with pytest.raises(MissingExtraError, match=r"pip install 'portagent\[adk\]'"):
        get_adapter("adk")


def test_capabilities_match_the_profile():
    from portagent.adapters.base import get_adapter
    from portagent.contracts.capabilities import PROFILES

    adapter = get_adapter("adk")
    assert adapter.capabilities == PROFILES["adk"] and adapter.name == "adk"
    assert adapter.sdk_version() == "2.13.0" and adapter.cli_version() is None


def test_examples_run_on_adk():
    """The shipped example agent runs on ADK with its own script (agent-as-tool included)."""
    from portagent.emulator import load_script, serve

    with serve(load_script(DATA.parents[3] / "examples" / "support_desk" / "emulator.yaml")) as ex:
        r = go(
            run(
                ex,
                str(DATA.parents[3] / "examples" / "support_desk" / "agent.yaml"),
                "Case EXP-42: what is missing and what do the rules say about documents?",
            )
        )
    assert r.result.status == "completed" and "DNI" in r.result.final_output
