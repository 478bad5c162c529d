"""Contracts: hashes, immutability, the trace vocabulary, capability profiles (ACCEPTANCE ch06, ch07)."""

import pytest
from _support import EXAMPLES
from pydantic import ValidationError

from portagent.contracts._base import args_hash, canonical_json
from portagent.contracts.agent import AgentSpec, Budget
from portagent.contracts.bundle import load_agent
from portagent.contracts.capabilities import BARE_MESSAGES_API, PROFILES, missing_capabilities
from portagent.contracts.run import InvalidTransition, RunState
from portagent.contracts.tool import ToolSpec
from portagent.contracts.trace import EVENT_TYPES


@pytest.mark.parametrize(
    "args,expected",
    [
        ({"query": "OpenTelemetry tracing"}, "1baf542e6927"),
        ({"query": "NIST AI RMF"}, "530fee55bac7"),
        ({"query": "Agents SDK tracing"}, "818d57b738f4"),
        ({"reference": "OpenTelemetry. (2026). Tracing API."}, "431f3eff6f07"),
    ],
)
def test_args_hash_golden_values(args, expected):
    assert args_hash(args) == expected


def test_canonical_json_keeps_non_ascii_and_sorts():
    assert canonical_json({"b": "año", "a": 1}) == '{"a": 1, "b": "año"}'


def _tool(**kw):
    base = dict(
        name="get_thing",
        description="d",
        effect="read",
        input_schema={"type": "object", "properties": {}},
        handler="m:f",
    )
    base.update(kw)
    return ToolSpec(**base)


def test_adding_a_field_at_its_default_keeps_hashes():
    a = _tool()
    b = _tool(owner="", cost_usd=0.0)
    assert a.spec_hash == b.spec_hash and a.schema_hash == b.schema_hash
    assert _tool(owner="x").spec_hash != a.spec_hash
    assert _tool(description="other").description_hash != a.description_hash


def test_contracts_are_frozen():
    t = _tool()
    with pytest.raises(ValidationError):
        t.name = "x"  # type: ignore[misc]


def test_booleans_budget_and_unknown_fields_rejected():
    with pytest.raises(ValidationError):
        Budget(max_turns=0)
    with pytest.raises(ValidationError):
        AgentSpec(name="a", instructions="x", surprise=1)  # type: ignore[call-arg]


def test_input_schema_needs_type_and_properties():
    # ACCEPTANCE ch07: an input schema lacking type or properties makes the manifest invalid.
    with pytest.raises(ValidationError):
        _tool(input_schema={"properties": {}})
    with pytest.raises(ValidationError):
        _tool(input_schema={"type": "object"})


def test_write_tool_must_not_opt_out_of_approval():
    # ACCEPTANCE ch07: a write-class tool that does not require approval is invalid.
    with pytest.raises(ValidationError, match="cannot opt out of approval"):
        _tool(effect="reversible_write", requires_approval=False, idempotency={"required": True})


def test_trace_vocabulary_covers_the_manifest_minimum():
    # ACCEPTANCE ch07: run start, tool call, tool result and final output must be in the vocabulary.
    assert {"run.started", "tool.call", "tool.result", "run.completed"} <= set(EVENT_TYPES)
    from portagent.contracts.trace import RunCompleted

    assert "final_output" in RunCompleted.model_fields


def test_compatibility_from_capability_profiles():
    # ACCEPTANCE ch07: agents-as-tools + sessions is compatible with the three SDKs, not a bare messages API.
    need = ["agents_as_tools", "sessions"]
    for name in ("openai", "claude", "adk"):
        assert missing_capabilities(need, PROFILES[name]) == []
    assert missing_capabilities(need, BARE_MESSAGES_API) == ["agents_as_tools", "sessions"]


def test_run_state_machine():
    s = RunState()
    s.advance("running")
    s.advance("waiting_approval")
    s.advance("running")
    s.advance("completed")
    assert s.terminal and s.history == ["created", "running", "waiting_approval", "running", "completed"]
    with pytest.raises(InvalidTransition):
        s.advance("running")
    with pytest.raises(InvalidTransition):
        RunState().advance("completed")


def test_example_bundle_resolves():
    b = load_agent(EXAMPLES / "support_desk" / "agent.yaml")
    assert b.root == "support_desk"
    assert list(b.node.tools) == [
        "search_policy",
        "get_student_record",
        "prepare_reply_for_review",
        "create_ticket",
        "send_email",
    ]
    assert b.agents["billing_specialist"].policy is b.node.policy  # sub-agents inherit the policy
    assert b.delegation_cycle() is None
    assert b.spec_hash.startswith("sha256:")


def test_a_run_request_refuses_text_that_is_not_unicode():
    """A lone surrogate (bytes that were not UTF-8, a JSON "\\udcff") in any text field: no trace, hash or
    file could hold it, so the request is refused naming the field (the CLI and A2A refuse earlier)."""
    import re

    import pytest
    from pydantic import ValidationError

    from portagent.contracts.run import RunRequest

    for fields, where in (
        ({"input": "ok \udcff"}, "input"),
        ({"input": ["fine", "bad \udcff"]}, "input[1]"),
        ({"input": "ok", "scopes": ["a\udcff"]}, "scopes[0]"),
        ({"input": "ok", "context": {"evidence": ["x\udcff"]}}, "context.evidence[0]"),
    ):
        with pytest.raises(ValidationError, match=re.escape(where) + ": not valid Unicode"):
            RunRequest(provider="openai", **fields)
    assert RunRequest(provider="openai", input="héllo ✓").input == "héllo ✓"
