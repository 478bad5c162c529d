"""ACCEPTANCE chapter 06: harness budgets and argument hashes."""

from __future__ import annotations

import pytest
from gateway_testkit import ctx, results, run, tool, types

from portagent.contracts.agent import Budget
from portagent.core.budgets import RunBudget
from portagent.tools import ToolGateway

BUSCAR = tool("buscar_fuente", properties={"query": {"type": "string"}}, required=["query"], cost_usd=0.05)
VALIDAR = tool(
    "validar_apa", properties={"reference": {"type": "string"}}, required=["reference"], cost_usd=0.03
)
DIFF = tool(
    "proponer_diff",
    effect="prepare_change",
    properties={"file": {"type": "string"}, "change": {"type": "string"}},
    required=["file", "change"],
    cost_usd=0.02,
)

QUERIES = ["OpenTelemetry tracing", "NIST AI RMF", "Agents SDK tracing"]
REFERENCES = [
    "OpenTelemetry. (2026). Tracing API.",
    "Tabassi, E. (2023). Artificial Intelligence Risk Management Framework.",
]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"query": "OpenTelemetry tracing"}, "1baf542e6927"),
        ({"query": "NIST AI RMF"}, "530fee55bac7"),
        ({"query": "Agents SDK tracing"}, "818d57b738f4"),
        ({"reference": "OpenTelemetry. (2026). Tracing API."}, "431f3eff6f07"),
    ],
)
def test_golden_args_hash_on_tool_call_events(args, expected):
    c = ctx()
    gw = ToolGateway([BUSCAR, VALIDAR], c)
    name = "buscar_fuente" if "query" in args else "validar_apa"
    run(gw.call(name, args))
    import json

    run(gw.call(name, json.dumps(args)))  # a JSON string (OpenAI) hashes like the object (Anthropic)
    assert [e.args_hash for e in c.recorder.of_type("tool.call")] == [expected, expected]


def _academic_review(gw: ToolGateway) -> list:
    out = [run(gw.call("buscar_fuente", {"query": q})) for q in QUERIES]
    out += [run(gw.call("validar_apa", {"reference": r})) for r in REFERENCES]
    out.append(run(gw.call("proponer_diff", {"file": "capitulo.md", "change": "- [1] OpenTelemetry (2026)"})))
    return out


def test_six_calls_fit_exactly_and_cost_023(spy):
    c = ctx(budget=Budget(max_turns=8, max_tool_calls=6, max_cost_usd=0.50))
    gw = ToolGateway([BUSCAR, VALIDAR, DIFF], c)
    for _ in range(6):  # the runner counts model turns; six steps fit max_turns 8
        assert c.budget.count_turn().ok
    observations = _academic_review(gw)
    assert all(o.ok for o in observations)
    assert (c.budget.turns, c.budget.tool_calls, round(c.budget.cost_usd, 10)) == (6, 6, 0.23)
    assert c.budget.cost_usd == 0.23  # exact, not 0.22999999999999998

    # max + 1 is rejected, traced, and not executed
    before = len(spy.calls())
    extra = run(gw.call("buscar_fuente", {"query": "NIST AI RMF"}))
    assert extra.error == "budget_exhausted" and extra.details["limit"] == "max_tool_calls"
    assert len(spy.calls()) == before
    assert types(c)[-3:] == ["tool.call", "budget.exceeded", "tool.result"]
    ev = c.recorder.of_type("budget.exceeded")[-1]
    assert (ev.limit, ev.limit_value, ev.observed) == ("max_tool_calls", 6.0, 7.0)


def test_max_cost_010_rejects_the_third_search_and_traces_it(spy):
    c = ctx(budget=Budget(max_cost_usd=0.10))
    gw = ToolGateway([BUSCAR], c)
    obs = [run(gw.call("buscar_fuente", {"query": q})) for q in QUERIES]
    assert [o.ok for o in obs] == [True, True, False]
    assert obs[2].error == "budget_exhausted"
    assert len(spy.calls("buscar_fuente")) == 2
    assert c.budget.tool_calls == 3 and c.budget.cost_usd == 0.10
    ev = c.recorder.of_type("budget.exceeded")
    assert len(ev) == 1 and (ev[0].limit, ev[0].limit_value, ev[0].observed) == ("max_cost_usd", 0.10, 0.15)
    assert results(c)[-1].error == "budget_exhausted"


def test_cost_exactly_at_the_maximum_is_allowed(spy):
    c = ctx(budget=Budget(max_cost_usd=0.15))
    gw = ToolGateway([BUSCAR], c)
    assert all(run(gw.call("buscar_fuente", {"query": q})).ok for q in QUERIES)
    assert c.budget.cost_left == 0.0


def test_rejected_calls_count_toward_max_tool_calls(spy):
    c = ctx(budget=Budget(max_tool_calls=2))
    gw = ToolGateway([BUSCAR], c)
    assert run(gw.call("buscar_fuente", {})).error == "validation_error"
    assert run(gw.call("buscar_fuente", {"query": "NIST AI RMF"})).ok
    assert run(gw.call("buscar_fuente", {"query": "NIST AI RMF"})).error == "budget_exhausted"


def test_run_budget_turns_and_model_cost():
    b = RunBudget(Budget(max_turns=1, max_cost_usd=0.10))
    assert b.count_turn().ok
    over = b.count_turn()
    assert (over.ok, over.limit, over.observed) == (False, "max_turns", 2.0)
    assert b.add_model_cost(0.07).ok
    assert b.check_tool(0.03).ok and not b.check_tool(0.04).ok
    assert not b.add_model_cost(0.05).ok
    assert "max_turns" in over.message and "max_cost_usd" in b.check_tool(0.0).message
    assert RunBudget().check_tool(1e9).ok  # no Budget: no limits
    assert b.snapshot()["turns"] == 2


def test_model_cost_shares_the_tool_budget(spy):
    c = ctx(budget=Budget(max_cost_usd=0.10))
    c.budget.add_model_cost(0.08)
    gw = ToolGateway([BUSCAR], c)
    assert run(gw.call("buscar_fuente", {"query": "NIST AI RMF"})).error == "budget_exhausted"
    assert spy.calls() == []


@pytest.mark.parametrize(
    "raw", [{"query": "NIST \udcff"}, '{"query": "NIST \\udcff"}'], ids=["object", "json"]
)
def test_text_that_is_not_unicode_is_a_validation_error_not_a_crash(spy, raw):
    """A lone surrogate (a JSON ``"\\udcff"`` escape, from a model or an MCP client) cannot be hashed or
    traced: the call is refused as ``validation_error`` naming where, and never reaches the handler."""
    c = ctx()
    gw = ToolGateway([BUSCAR], c)
    obs = run(gw.call("buscar_fuente", raw))
    assert (obs.ok, obs.error) == (False, "validation_error")
    assert "not valid Unicode (a lone surrogate) at query" in obs.message
    (call,) = c.recorder.of_type("tool.call")
    assert call.args == {"query": "NIST \ufffd"}  # what the trace can hold
    assert spy.calls() == []
