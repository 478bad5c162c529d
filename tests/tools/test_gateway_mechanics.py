"""Gateway mechanics: timeouts, retries, output checks, size limits, handler resolution, preconditions,
call caching, and the cost of the gateway itself."""

from __future__ import annotations

import json
import statistics
import time

import pytest
from gateway_testkit import ctx, results, run, tool

from portagent.contracts._base import canonical_json
from portagent.contracts.policy import PermissionPolicy
from portagent.tools import Observation, ToolFailure, ToolGateway

SLEEPY = tool("sleepy", properties={"seconds": {"type": "number"}}, budgets={"timeout_ms": 50})
ASYNC_SLEEPY = tool("async_sleepy", properties={"seconds": {"type": "number"}}, budgets={"timeout_ms": 50})


def call(t, args, **kw):
    c = ctx(**{k: v for k, v in kw.items() if k in ("scopes", "context", "env")})
    gw = ToolGateway([t], c, **{k: v for k, v in kw.items() if k in ("policy", "approver")})
    return run(gw.call(t.name, args)), c


@pytest.mark.parametrize("t", [SLEEPY, ASYNC_SLEEPY])
def test_a_handler_past_timeout_ms_answers_timeout(t):
    started = time.monotonic()
    obs, c = call(t, {"seconds": 2})
    assert time.monotonic() - started < 1.5
    assert obs.error == "timeout" and obs.details == {"timeout_ms": 50, "attempts": 1}
    assert results(c)[0].error == "timeout"


def test_timeouts_are_retried_for_idempotent_tools(spy):
    t = tool(
        "flaky_slow",
        properties={"name": {"type": "string"}, "slow_times": {"type": "integer"}},
        budgets={"timeout_ms": 100, "max_retries": 2},
    )
    obs, _ = call(t, {"name": "a", "slow_times": 2})
    assert obs.ok and obs.output["attempts"] == 3


def test_retries_stop_at_max_retries(spy):
    t = tool(
        "flaky",
        properties={
            "name": {"type": "string"},
            "fail_times": {"type": "integer"},
            "code": {"type": "string"},
        },
        budgets={"max_retries": 1},
    )
    obs, _ = call(t, {"name": "b", "fail_times": 5, "code": "rate_limited"})
    assert obs.error == "rate_limited" and len(spy.calls("flaky")) == 2
    spy.reset()
    ok, _ = call(t, {"name": "c", "fail_times": 1, "code": "rate_limited"})
    assert ok.ok and len(spy.calls("flaky")) == 2


def test_no_retry_for_a_tool_that_is_not_idempotent(spy):
    t = tool(
        "flaky",
        effect="privileged_operation",
        budgets={"max_retries": 3},
        properties={
            "name": {"type": "string"},
            "fail_times": {"type": "integer"},
            "code": {"type": "string"},
        },
    )
    policy = PermissionPolicy(rules=[{"id": "ok", "tool": "flaky", "decision": "allow"}])
    obs, _ = call(t, {"name": "d", "fail_times": 1, "code": "timeout"}, policy=policy)
    assert obs.error == "timeout" and len(spy.calls("flaky")) == 1


def test_domain_errors_are_not_retried(spy):
    t = tool(
        "flaky",
        properties={
            "name": {"type": "string"},
            "fail_times": {"type": "integer"},
            "code": {"type": "string"},
        },
        budgets={"max_retries": 3},
    )
    obs, _ = call(t, {"name": "e", "fail_times": 1, "code": "not_found"})
    assert obs.error == "not_found" and len(spy.calls("flaky")) == 1


def test_output_schema_violation_is_a_handler_error(spy):
    t = tool(
        "bad_output",
        output_schema={
            "type": "object",
            "required": ["status"],
            "properties": {"status": {"type": "string"}},
        },
    )
    obs, _ = call(t, {"case_id": "EXP-1"})
    assert obs.error == "handler_error" and obs.details[0]["path"] == "status"


def test_domain_errors_skip_the_output_schema(spy):
    t = tool("get_student_record", output_schema={"type": "object", "required": ["record"]})
    obs, _ = call(t, {"case_id": "EXP-99"})
    assert obs.error == "not_found" and obs.message == "expediente no encontrado"


def test_max_rows_cuts_and_flags_partial(spy):
    t = tool("many_rows", properties={"n": {"type": "integer"}}, budgets={"max_rows": 3})
    obs, c = call(t, {"n": 10})
    assert obs.ok and obs.partial and len(obs.output["rows"]) == 3
    model = obs.to_model()
    assert model["partial_result"] is True and model["truncated"] == {"rows_total": 10, "rows_returned": 3}
    assert results(c)[0].output["partial_result"] is True


def test_max_output_bytes_cuts_utf8_safely(spy):
    t = tool("big_text", properties={"n": {"type": "integer"}}, budgets={"max_output_bytes": 200})
    obs, _ = call(t, {"n": 1000})
    assert obs.partial and obs.output["source"] == "fixture"
    assert len(canonical_json(obs.output).encode("utf-8")) <= 200
    assert set(obs.output["text"]) == {"é"}
    assert obs.to_model()["truncated"]["output_bytes"] > 2000


def test_size_limit_on_lists_and_opaque_values():
    from portagent.contracts.tool import ToolBudgets
    from portagent.tools.validation import limit_output

    value, facts = limit_output(list(range(1000)), ToolBudgets(max_output_bytes=50))
    assert value == list(range(len(value))) and len(canonical_json(value)) <= 50 and facts
    nested, _ = limit_output({"a": {"b": ["x" * 50] * 50}}, ToolBudgets(max_output_bytes=120))
    assert len(canonical_json(nested).encode()) <= 120
    small, none = limit_output({"ok": True}, ToolBudgets())
    assert small == {"ok": True} and none is None


def test_a_handler_that_is_not_importable_names_the_module(spy):
    t = tool("ghost", handler="no_such_module_xyz.sub:handler")
    obs, c = call(t, {})
    assert obs.error == "handler_error" and "'no_such_module_xyz.sub'" in obs.message
    t2 = tool("ghost2", handler="acceptance_tools:no_such_function")
    obs2, _ = call(t2, {})
    assert obs2.error == "handler_error" and "no attribute 'no_such_function'" in obs2.message
    assert results(c)[0].error == "handler_error"


def test_a_handler_that_raises_is_a_handler_error(spy):
    obs, _ = call(tool("explodes"), {"case_id": "x"})
    assert obs.error == "handler_error" and "RuntimeError: backend exploded" in obs.message


def test_a_handler_declaring_context_gets_args_and_context(spy):
    t = tool("whoami", properties={"echo": {"type": "string"}})
    obs, _ = call(t, {"echo": "hi"}, env="staging")
    assert obs.output == {"actor": "user", "env": "staging", "echo": "hi"}


def test_unknown_error_codes_from_handlers_become_handler_errors():
    from portagent.tools.observations import from_handler_value

    assert from_handler_value({"ok": False, "error": "oops"}).error == "handler_error"
    assert ToolFailure("weird", "x").code == "handler_error"
    assert Observation.success([1, 2]).to_model() == {"ok": True, "output": [1, 2]}


@pytest.mark.parametrize(
    ("check", "error", "message"),
    [
        ("acceptance_tools:case_is_assigned", None, None),
        ("acceptance_tools:always_false", "precondition_failed", "the case must be open"),
        ("no_such_module_xyz:check", "handler_error", "no_such_module_xyz"),
    ],
)
def test_preconditions(spy, check, error, message):
    t = tool(
        "get_student_record",
        preconditions=[{"name": "case_open", "check": check, "message": "the case must be open"}],
    )
    obs, c = call(t, {"case_id": "EXP-42"}, context={"assigned_cases": ["EXP-42"]})
    assert obs.error == error
    if message:
        assert message in obs.message
        assert spy.calls() == [] and [e.type for e in c.recorder.events] == ["tool.call", "tool.result"]


def test_a_precondition_returning_a_string_explains_itself(spy):
    t = tool(
        "get_student_record",
        preconditions=[{"name": "assigned", "check": "acceptance_tools:case_is_assigned"}],
    )
    obs, _ = call(t, {"case_id": "EXP-42"}, context={"assigned_cases": []})
    assert obs.error == "precondition_failed"
    assert obs.details == [{"name": "assigned", "message": "case EXP-42 is not assigned to user"}]


def test_prepare_is_cached_by_call_id_and_execute_runs_once(spy):
    c = ctx()
    gw = ToolGateway([tool("get_student_record")], c)
    p = run(gw.prepare("get_student_record", {"case_id": "EXP-42"}, call_id="c-1"))
    assert run(gw.prepare("get_student_record", {"case_id": "EXP-42"}, call_id="c-1")) is p
    assert gw.prepared("c-1") is p
    first = run(gw.execute(p))
    assert run(gw.execute(p)) is first
    assert len(spy.calls()) == 1 and [e.type for e in c.recorder.events] == [
        "tool.call",
        "permission.decision",
        "tool.result",
    ]


def test_execute_of_a_rejected_call_never_calls_the_handler(spy):
    c = ctx()
    gw = ToolGateway(
        [tool("get_student_record")],
        c,
        policy=PermissionPolicy(rules=[{"id": "no", "tool": "*", "decision": "deny"}]),
    )
    p = run(gw.prepare("get_student_record", {"case_id": "EXP-42"}))
    assert not p.allowed and p.rejection.error == "permission_denied"
    assert run(gw.execute(p)) is p.rejection
    assert spy.calls() == [] and len(results(c)) == 1


def test_every_call_ends_with_exactly_one_tool_result(spy):
    c = ctx()
    gw = ToolGateway([tool("get_student_record"), SLEEPY, tool("explodes")], c)
    for name, args in [
        ("get_student_record", {"case_id": "EXP-42"}),
        ("nope", {}),
        ("get_student_record", "{"),
        ("sleepy", {"seconds": 1}),
        ("explodes", {"case_id": "x"}),
        ("get_student_record", {"x": 1}),
    ]:
        run(gw.call(name, args))
    calls = [e.call_id for e in c.recorder.of_type("tool.call")]
    assert calls == [e.call_id for e in results(c)] == [f"call_{i}" for i in range(1, 7)]


def test_the_gateway_adds_well_under_a_millisecond_to_a_read_tool(spy):
    """Not a timing gate (shared CI machines), a sanity bound: median overhead of the pipeline."""
    from portagent.tools.gateway import ToolGateway as GW

    t = tool("buscar_fuente", properties={"query": {"type": "string"}})
    gw = GW([t], ctx(recorder=False))

    async def many(n):
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            p = await gw.prepare("buscar_fuente", {"query": "NIST AI RMF"})
            out.append(time.perf_counter() - t0)
            await gw.execute(p)
        return out

    run(many(50))  # warm caches
    prepare_times = run(many(300))
    assert statistics.median(prepare_times) < 0.001, statistics.median(prepare_times)
    json.dumps(prepare_times[:1])
