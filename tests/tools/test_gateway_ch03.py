"""ACCEPTANCE chapter 03: the tool gateway (schema, permission, execution, budget)."""

from __future__ import annotations

import json

import pytest
from gateway_testkit import GET_STUDENT_RECORD, PREPARE_EMAIL_PROPOSAL, ctx, results, run, types

from portagent.contracts.agent import Budget
from portagent.tools import ToolGateway

SCOPES = ["academic.record.read"]  # the tutor can read records; can_write: false → no write scopes


def gateway(**kw):
    c = ctx(budget=Budget(max_cost_usd=kw.pop("max_cost", 0.05)), spent=kw.pop("spent", 0.0), scopes=SCOPES)
    return ToolGateway([GET_STUDENT_RECORD, PREPARE_EMAIL_PROPOSAL], c, **kw), c


def test_the_three_book_calls_and_cost_left(spy):
    gw, c = gateway()
    ok = run(gw.call("get_student_record", {"case_id": "EXP-42", "include_payments": True}))
    bad = run(gw.call("get_student_record", {"case_id": 42, "include_payments": "yes"}))
    mail = run(
        gw.call(
            "prepare_email_proposal",
            {"case_id": "EXP-42", "template_id": "missing_docs", "facts": {"missing": ["DNI"]}},
        )
    )

    assert ok.ok is True
    assert ok.to_model()["record"] == {
        "status": "incompleto",
        "missing_documents": ["DNI"],
        "balance_due": 180,
    }

    assert bad.error == "validation_error"
    assert [d["path"] for d in bad.details] == ["case_id", "include_payments"]
    assert "string" in bad.details[0]["message"] and "boolean" in bad.details[1]["message"]

    assert mail.error == "approval_required"
    assert mail.next_allowed and mail.to_model()["next_allowed"] == mail.next_allowed
    assert mail.details["approval_id"] in gw.pending_approvals

    assert spy.calls("prepare_email_proposal") == []
    assert len(spy.calls("get_student_record")) == 1  # only the valid call reached the handler
    assert c.budget.cost_left == 0.04  # only executed calls are charged
    assert c.budget.tool_calls == 3


def test_pattern_fix_42_is_a_validation_error_not_an_execution(spy):
    gw, _ = gateway()
    obs = run(gw.call("get_student_record", {"case_id": "42"}))
    assert obs.error == "validation_error"
    assert obs.details[0]["path"] == "case_id" and obs.details[0]["rule"] == "pattern"
    assert spy.calls() == []


@pytest.mark.parametrize(
    ("args", "rule", "path"),
    [
        ({}, "required", "case_id"),
        ({"case_id": "EXP-42", "x": 1}, "additionalProperties", ""),
        ({"case_id": "EXP-" + "4" * 17}, "maxLength", "case_id"),
        ({"case_id": "EXP-42", "include_payments": 1}, "type", "include_payments"),
    ],
)
def test_schema_rejections(spy, args, rule, path):
    gw, c = gateway()
    obs = run(gw.call("get_student_record", args))
    assert obs.error == "validation_error"
    assert any(d["rule"] == rule and d["path"] == path for d in obs.details), obs.details
    assert spy.calls() == []
    assert types(c) == ["tool.call", "tool.result"]  # rejected calls are traced too


def test_enum_outside_catalogue(spy):
    gw, _ = gateway()
    obs = run(gw.call("prepare_email_proposal", {"case_id": "EXP-42", "template_id": "otro", "facts": {}}))
    assert obs.error == "validation_error" and obs.details[0]["path"] == "template_id"
    assert spy.calls() == []


def test_booleans_are_not_integers(spy):
    from gateway_testkit import tool

    t = tool(
        "count_things",
        handler="acceptance_tools:get_student_record",
        properties={"n": {"type": "integer"}, "x": {"type": "number"}},
    )
    gw = ToolGateway([t], ctx())
    obs = run(gw.call("count_things", {"n": True, "x": False}))
    assert obs.error == "validation_error" and len(obs.details) == 2
    assert spy.calls() == []


def test_no_cost_left_is_budget_exhausted(spy):
    gw, c = gateway(spent=0.05)  # cost_left == 0
    obs = run(gw.call("get_student_record", {"case_id": "EXP-42"}))
    assert obs.error == "budget_exhausted"
    assert spy.calls() == []
    assert types(c) == ["tool.call", "budget.exceeded", "tool.result"]
    exceeded = c.recorder.of_type("budget.exceeded")[0]
    assert (exceeded.limit, exceeded.limit_value, exceeded.observed) == ("max_cost_usd", 0.05, 0.06)


def test_unknown_tool(spy):
    gw, c = gateway()
    obs = run(gw.call("delete_everything", {}))
    assert obs.error == "unknown_tool"
    assert obs.details == {"available": ["get_student_record", "prepare_email_proposal"]}
    assert results(c)[0].error == "unknown_tool"


def test_not_found_is_executed_and_charged(spy):
    gw, c = gateway()
    obs = run(gw.call("get_student_record", {"case_id": "EXP-99"}))
    assert obs.ok is False and obs.error == "not_found"
    assert len(spy.calls("get_student_record")) == 1
    assert c.budget.cost_left == 0.04


def test_include_payments_omitted_gives_null_balance(spy):
    gw, _ = gateway()
    obs = run(gw.call("get_student_record", {"case_id": "EXP-42"}))
    assert obs.to_model()["record"]["balance_due"] is None


def test_json_string_arguments_are_parsed_and_malformed_json_rejected(spy):
    gw, c = gateway()
    obs = run(gw.call("get_student_record", '{"case_id": "EXP-42"}', vendor_call_id="call_exp_42"))
    assert obs.ok
    call = c.recorder.of_type("tool.call")[0]
    assert call.args == {"case_id": "EXP-42"} and call.provider_details == {"vendor_call_id": "call_exp_42"}
    bad = run(gw.call("get_student_record", '{"case_id": "EXP-42"'))
    assert bad.error == "validation_error" and "not valid JSON" in bad.message
    assert c.recorder.of_type("tool.call")[1].args == '{"case_id": "EXP-42"'


def test_user_without_scope_is_denied_even_if_the_model_insists(spy):
    c = ctx(scopes=[])
    gw = ToolGateway([GET_STUDENT_RECORD], c)
    for _ in range(3):
        obs = run(gw.call("get_student_record", {"case_id": "EXP-42"}))
        assert obs.error == "permission_denied" and obs.details["rule"] == "tool:scopes"
    assert spy.calls() == []


def test_trace_of_an_executed_call(spy):
    gw, c = gateway()
    run(gw.call("get_student_record", {"case_id": "EXP-42", "include_payments": True}))
    assert types(c) == ["tool.call", "permission.decision", "tool.result"]
    call, decision, result = c.recorder.events
    assert call.call_id == decision.call_id == result.call_id == "call_1"
    assert (call.tool, call.tool_version, call.schema_hash) == (
        "get_student_record",
        "1.2.0",
        GET_STUDENT_RECORD.schema_hash,
    )
    assert decision.decision == "allow" and decision.rule == "default:read"
    assert result.ok and result.output["record"]["status"] == "incompleto"
    assert result.latency_ms is not None
    json.dumps(result.output)  # the observation is JSON-able
