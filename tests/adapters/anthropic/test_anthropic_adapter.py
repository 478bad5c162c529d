"""The anthropic adapter (the anthropic SDK's tool runner) against the emulator's Anthropic Messages protocol.

Real SDK, real gateway, no mocks. Assertions read the normalized trace and the emulator's request log
(what the tool runner actually declared and sent back to the model). The cross-provider equivalence lives in
``tests/adapters/test_equivalence.py`` (``anthropic`` is one of its providers); these tests pin what only
this adapter does: where the runner is driven step by step, the SDK's own answers, the CLI paths.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("anthropic", reason="anthropic is not installed (pip install 'portagent[anthropic]')")
from _support import EXAMPLES, REPO, run_cli
from runtime_testkit import (
    DATA,
    bundle,
    emulator_fixture,  # noqa: F401  (the "emu" fixture)
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    results_sent,
    with_budget,
    with_spec,
)

from portagent.contracts.errors import UnsupportedFeatureError
from portagent.emulator import load_script, serve
from portagent.tools.approvals import ApprovalStore

pytest_plugins = ["pytester"]  # the plugin test below; the folder must pass when run alone
HERE = Path(__file__).resolve().parent
SUITE = HERE / "data" / "suite.yaml"
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["unary", "sse"])
P = "anthropic"


@pytest.fixture(scope="module")
def own_emu():
    with serve(load_script(HERE / "data" / "script.yaml")) as running:
        yield running


# --- tools through the gateway, usage, the wire -----------------------------------------------------


@STREAMING
def test_two_tools_through_the_gateway(emu, streaming):
    r = go(emu, "desk", "Where is order ORD-7 and how fast do you ship?", P, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == "Order ORD-7 is delivered. Orders ship within 2 working days."
    calls = r.of("tool.call")
    assert [(c.tool, c.args) for c in calls] == [
        ("get_order", {"order_id": "ORD-7", "include_items": True}),
        ("search_faq", {"query": "shipping times"}),
    ]
    # the vendor's tool_use ids, handed to the gateway in the runner's order, kept in provider_details
    assert [c.provider_details["vendor_call_id"] for c in calls] == [
        "toolu_emu_two_tools_0_0",
        "toolu_emu_two_tools_1_0",
    ]
    assert handlers.CALLS == {"get_order": 1, "search_faq": 1}
    # what the runner declared: the ToolSpec schemas verbatim, the instructions as the system prompt,
    # the whole conversation in every request (thread=False), stream only when asked
    b = bundle("desk")
    first = r.requests[0]["body"]
    assert {t["name"]: t["input_schema"] for t in first["tools"]} == {
        **{n: t.input_schema for n, t in b.node.tools.items()},
        "faq_expert": {
            "type": "object",
            "properties": {"input": {"type": "string"}},
            "required": ["input"],
            "additionalProperties": False,
        },
    }
    assert first["system"] == b.node.spec.instructions and first["max_tokens"] == 4096
    assert bool(first.get("stream")) is streaming and "thread" not in first
    assert [len(q["body"]["messages"]) for q in r.requests] == [1, 3, 5]
    assert r.requests[0]["headers"].get("x-app") is None  # not Claude Code: the emulator plays default turns
    assert (
        "traceparent" not in r.requests[0]["headers"]
    )  # the SDK's OpenTelemetry is off (open_telemetry=False)
    sent = results_sent(r)
    assert [name for name, _ in sent] == ["get_order", "search_faq"]
    assert sent[0][1]["status"] == "delivered"


def test_usage_cost_and_finish_reasons(own_emu):
    r = go(own_emu, "desk", "Read ORD-7 from the cache.", P)
    first, second = r.of("model.call")
    # Anthropic's input_tokens excludes the cache buckets; the trace keeps OTel semantics (all input)
    assert (first.input_tokens, first.cache_read_tokens, first.cache_write_tokens) == (1000, 600, 100)
    assert (first.finish_reason, second.finish_reason) == ("tool_calls", "stop")
    assert first.response_id == first.provider_details["message_id"]
    assert first.model == "claude-sonnet-4-6"  # models.anthropic falls back to models.claude
    assert r.result.cost_usd and r.result.cost_usd > 0
    assert r.result.usage.model_calls == 2 and r.result.usage.input_tokens == 1300


@STREAMING
def test_rejected_calls_reach_the_model_as_errors(emu, streaming):
    r = go(emu, "desk", "Close my account C-100 now.", P, streaming=streaming)
    assert r.result.status == "completed" and handlers.CALLS.get("close_account", 0) == 0
    (decision,) = r.of("permission.decision")
    assert decision.decision == "deny"
    last = r.requests[-1]["body"]["messages"][-1]["content"][0]
    assert last["type"] == "tool_result" and last["is_error"] is True  # a ToolError, as Claude Code sends
    assert json.loads(last["content"])["error"] == "permission_denied"


# --- approvals, defer, resume ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("approver", "refunded"), [("auto-approve", True), ("auto-deny", False)], ids=["approve", "reject"]
)
def test_approvals_are_decided_in_the_tool(emu, approver, refunded):
    r = go(emu, "desk", "Refund 30 EUR for ORD-7.", P, approver=approver)
    assert r.result.status == "completed"
    assert (handlers.REFUNDS == [{"order_id": "ORD-7", "amount_eur": 30}]) is refunded


def test_deferred_approval_stops_before_the_next_request_then_resumes_once(emu):
    key = "anthropic-refund-ord-7"
    first = go(
        emu, "desk", "Refund 30 EUR for ORD-7.", P, approver="defer", idempotency_key=key, seeded=False
    )
    assert (first.result.status, first.result.stop_reason) == ("waiting_approval", "approval_pending")
    assert len(first.requests) == 1 and handlers.REFUNDS == []  # the runner never sent the tool result
    (approval_id,) = first.result.pending_approvals
    store = ApprovalStore()
    try:
        store.approve(approval_id, reviewer="tester")
    finally:
        store.close()
    second = go(
        emu, "desk", "Refund 30 EUR for ORD-7.", P, approver="defer", idempotency_key=key, seeded=False
    )
    assert second.result.status == "completed", second.result.error
    assert (second.result.run_id, second.result.attempt) == (first.result.run_id, 2)
    assert handlers.REFUNDS == [{"order_id": "ORD-7", "amount_eur": 30}]


# --- budgets ----------------------------------------------------------------------------------------


@STREAMING
def test_max_tool_calls(emu, streaming):
    r = go(emu, "desk", "Keep searching the FAQ.", P, streaming=streaming)
    assert (r.result.status, r.result.stop_reason) == ("budget_exhausted", "max_tool_calls")
    assert handlers.CALLS["search_faq"] == 4 and len(r.requests) == 5  # no request after the stop


def test_max_turns_stops_before_the_extra_request(emu):
    r = go(emu, with_budget(bundle(), max_turns=3, max_tool_calls=20), "Keep searching the FAQ.", P)
    assert (r.result.status, r.result.stop_reason) == ("budget_exhausted", "max_turns")
    assert len(r.requests) == 3 and r.result.usage.model_calls == 3


def test_max_cost_usd(emu):
    r = go(emu, with_budget(bundle(), max_cost_usd=0.0001), "Keep searching the FAQ.", P)
    assert (r.result.status, r.result.stop_reason) == ("budget_exhausted", "max_cost_usd")
    assert len(r.requests) == 1 and handlers.CALLS.get("search_faq", 0) == 0


# --- structured output, delegation, conversation ---------------------------------------------------


@STREAMING
def test_structured_output(emu, streaming):
    r = go(emu, "structured", "Summarise ORD-7 as JSON.", P, streaming=streaming)
    assert r.result.final_output == {"order_id": "ORD-7", "status": "delivered"}
    assert r.result.output_valid is True
    schema = bundle("structured").node.spec.output_schema
    assert r.requests[0]["body"]["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    bad = go(emu, "structured", "Summarise ORD-8 as JSON.", P)
    assert bad.result.status == "completed" and bad.result.output_valid is False


@STREAMING
def test_agent_as_tool_runs_its_own_tool_runner(emu, streaming):
    r = go(emu, "desk", "Can I get my money back quickly?", P, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == "The expert says: Refunds reach the card within 5 days."
    (handoff,) = r.of("handoff")
    assert (handoff.from_agent, handoff.to_agent, handoff.kind) == (
        "shop_desk",
        "faq_expert",
        "agent_as_tool",
    )
    assert handoff.provider_details["vendor_call_id"] == "toolu_emu_ask_expert_0_0"
    systems = [q["body"]["system"] for q in r.requests]
    expert = bundle("faq_expert").node.spec.instructions
    assert systems.count(expert) == 2  # the sub-agent's two model calls, with its own instructions
    assert [c.agent for c in r.of("tool.call")] == ["faq_expert"]


def test_handoff_is_refused_before_anything_is_sent(emu):
    before = len(emu.requests())
    with pytest.raises(UnsupportedFeatureError, match="handoffs.*agent-as-tool only"):
        go(emu, bundle("desk", handoffs=True), "My parcel ORD-8 never arrived.", P)
    assert len(emu.requests()) == before


def test_multi_turn_carries_the_conversation(emu):
    r = go(emu, "desk", ["Hi, I have a question about ORD-7.", "Has it arrived?"], P)
    assert r.result.final_output == "It is delivered."
    last = r.requests[-1]["body"]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]


def test_shared_settings_and_cache_control_are_passed_through(emu):
    b = bundle()
    models = b.spec.models.model_copy(
        update={
            "temperature": 0.2,
            "max_tokens": 300,
            "force_shared_settings": True,
            "anthropic": "claude-x-1",
        }
    )
    cache = {"type": "ephemeral"}
    r = go(emu, with_spec(b, models=models), "Are you open?", P, extra={"anthropic_cache_control": cache})
    body = r.requests[-1]["body"]
    assert (body["temperature"], body["max_tokens"], body["model"]) == (0.2, 300, "claude-x-1")
    assert body["cache_control"] == cache


# --- pinned SDK behaviour, errors ------------------------------------------------------------------


def test_unknown_tool_is_answered_by_the_runner_itself(own_emu):
    """Pinned (anthropic 2.14): the runner answers a tool name it was not given ("Error: Tool … not
    found", is_error) itself, before any tool of ours runs. The attempt is traced all the same: a
    tool.call and its unknown_tool result, as on the other providers (no handler runs)."""
    r = go(own_emu, "desk", "Call a tool nobody declared.", P)
    assert r.result.status == "completed"
    (call,) = r.of("tool.call")
    (res,) = r.of("tool.result")
    assert call.tool == "launch_rocket" and call.provider_details.get("vendor_call_id")
    assert (res.ok, res.error) == (False, "unknown_tool")
    result = r.requests[-1]["body"]["messages"][-1]["content"][0]
    assert result["is_error"] is True and "launch_rocket" in result["content"]


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_malformed_arguments_get_a_validation_error(emu):
    """The emulator puts cut JSON text where the tool input object belongs; the runner hands it to the
    tool as is and the gateway rejects it. (The SDK warns while it copies that reply into the history.)"""
    r = go(emu, "desk", "Send broken arguments.", P)
    assert r.result.final_output == "After the broken call: validation_error"
    (res,) = r.of("tool.result")
    assert (res.ok, res.error) == (False, "validation_error")


def test_429_is_retried_by_the_sdk_and_traced(emu):
    emu.reset()
    r = go(emu, "desk", "Are you open?", P)
    assert r.result.final_output == "Yes, we are open." and len(r.requests) == 2
    (http,) = r.of("error")
    assert (http.error_type, http.retryable) == ("http_429", True)


def test_server_error_and_unreachable_endpoint(emu):
    r = go(emu, "desk", "Break the server.", P, extra={"anthropic_max_retries": 0})
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error")
    assert "Anthropic API error 500" in r.result.error
    r = go(emu, "desk", "Are you open?", P, base_url="http://127.0.0.1:9", extra={"anthropic_max_retries": 0})
    assert "cannot reach the Anthropic endpoint http://127.0.0.1:9" in r.result.error


# --- the CLI: run, validate, port-check, capabilities, record → replay, the pytest plugin -----------


def test_cli_run_validate_port_check_and_capabilities(tmp_path):
    agent = EXAMPLES / "support_desk" / "agent.yaml"
    script = EXAMPLES / "support_desk" / "emulator.yaml"
    code, out, err = run_cli(
        "run", str(agent), "--provider", P, "--emulator", str(script), "--input", "What is the refund deadline?",
        "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert code == 0, err
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (record["manifest"]["provider"], record["manifest"]["sdk"]) == (P, "anthropic")
    assert record["result"]["status"] == "completed"
    code, out, _ = run_cli("validate", "--provider", P, str(agent))
    assert code == 0
    desk = DATA / "desk.yaml"  # it hands off to refunds_specialist
    code, _, err = run_cli("validate", "--provider", P, str(desk))
    assert code == 1 and "provider 'anthropic' cannot run this agent: lacks handoffs" in err
    code, out, _ = run_cli("port-check", str(desk), "--to", P, "--json")
    assert code == 1
    assert [lack["feature"] for lack in json.loads(out)["lacks"]] == ["handoffs"]
    code, out, _ = run_cli("capabilities", "--json")
    entry = json.loads(out)["providers"][P]
    assert (
        entry["sdk"] == "anthropic"
        and entry["installed"] is True
        and entry["capabilities"]["handoffs"] is False
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = tmp_path_factory.mktemp("anthropic-cassettes")
    home = tmp_path_factory.mktemp("home")
    old = os.environ.get("PORTAGENT_HOME")
    os.environ["PORTAGENT_HOME"] = str(home)
    try:
        code, stdout, err = run_cli(
            "record", str(SUITE), "--emulator", "--out", str(out), "--case", "ticket-approved",
            "--case", "billing-delegation", "--no-verify",
        )  # fmt: skip
    finally:
        if old is not None:
            os.environ["PORTAGENT_HOME"] = old
    assert code == 0, err
    assert "2 recorded, 0 skipped, 0 failed" in stdout
    return out


def test_record_then_replay_offline(recorded, tmp_path):
    folder = recorded / "support-desk-anthropic" / "support_desk@1.0.0" / "ticket-approved" / P / "r0"
    cassette = (folder / "cassette.yaml").read_text()
    assert "/v1/messages" in cassette and "sk-ant-portagent-dummy" not in cassette  # x-api-key scrubbed
    code, out, err = run_cli(
        "eval", str(SUITE), "--replay", "--cassettes", str(recorded), "--out", str(tmp_path / "results"),
        "--no-progress", "--case", "ticket-approved", "--case", "billing-delegation", "--workers", "1",
    )  # fmt: skip
    assert code == 0, err + out
    report = json.loads((tmp_path / "results" / "report.json").read_text())
    assert {r["provenance"]["provider"] for r in report["runs"]} == {P}
    assert {r["provenance"]["source"] for r in report["runs"]} == {"replay"}
    assert "anthropic" in (tmp_path / "results" / "report.md").read_text()


def test_pytest_plugin_replays_the_cassettes(recorded, pytester):
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    result = pytester.runpytest_subprocess(
        "--portagent-suite", str(SUITE), "--portagent-cassettes", str(recorded), "--portagent-providers", P,
        "-k", "ticket-approved or billing-delegation",
    )  # fmt: skip
    result.assert_outcomes(passed=2, deselected=2)


def test_registry_and_profile():
    from portagent.adapters.base import REGISTRY, get_adapter
    from portagent.contracts.capabilities import PROFILES

    adapter = get_adapter(P)
    assert adapter.capabilities == PROFILES[P] and adapter.name == P and adapter.cli_version() is None
    assert REGISTRY[P].extra == "anthropic" and "anthropic" in (REPO / "pyproject.toml").read_text()
