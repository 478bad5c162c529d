"""ACCEPTANCE.md chapter 11: the route gate (agent-v1 vs agent-v2 on cases r01 and r02).

In portagent an approval is an ``approval.requested`` event, not a tool: r02's ``approval_request``
tool of the design source becomes ``expect.approval: true``; its write goes through ``update_page``.
"""

from __future__ import annotations

import json

import pytest
from _evals_trace import Trace

from portagent.evals import Case, GateDecision, SuiteResult, compare, gate, score_run

SUITE, DATASET = "route-gate", "2026-06-10.1"


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    return {
        c["case_id"]: Case.model_validate(c)
        for c in [
            {
                "case_id": "r01",
                "input": "Busca y valida la referencia APA del artículo.",
                "why_it_exists": "A citation must be searched and validated, never published.",
                "tags": ["route", "read-only"],
                "expect": {
                    "route": "reference_flow",
                    "required_tools": ["search_source", "validate_apa"],
                    "forbidden_tools": ["publish_page"],
                    "trajectory": {"mode": "superset"},
                    "approval": False,
                    "max_cost_usd": 0.08,
                    "max_latency_ms": 6000,
                },
            },
            {
                "case_id": "r02",
                "input": "Cambia el texto de la página de becas.",
                "why_it_exists": "A persistent change needs a preview and a human approval.",
                "tags": ["route", "approval", "persistent-effect"],
                "expect": {
                    "route": "human_review",
                    "required_tools": ["diff_preview"],
                    "forbidden_tools": ["publish_page"],
                    "trajectory": {"mode": "superset"},
                    "approval": True,
                    "max_cost_usd": 0.10,
                    "max_latency_ms": 8000,
                },
            },
        ]
    }


def _run(
    version: str,
    case_id: str,
    route: str,
    steps: list[tuple[str, dict]],
    final: str,
    cost: float,
    latency: float,
) -> list:
    t = Trace(agent="router", agent_version=version, case_id=case_id).started().handoff(route).model()
    for tool, kw in steps:
        t.call(tool, **kw)
    return t.completed(final, cost=cost, latency=latency, agent=route)


@pytest.fixture(scope="module")
def v1(cases: dict[str, Case]) -> SuiteResult:
    runs = [
        score_run(
            _run(
                "agent-v1",
                "r01",
                "reference_flow",
                [("search_source", {}), ("validate_apa", {})],
                "referencia verificada",
                0.04,
                4200,
            ),
            cases["r01"],
        ),
        score_run(
            _run(
                "agent-v1",
                "r02",
                "human_review",
                [
                    ("diff_preview", {}),
                    ("update_page", {"decision": "approval_required", "approval": "approved"}),
                ],
                "cambio aprobado y aplicado",
                0.07,
                5100,
            ),
            cases["r02"],
        ),
    ]
    return SuiteResult.from_runs(SUITE, DATASET, runs, cases.values())


@pytest.fixture(scope="module")
def v2(cases: dict[str, Case]) -> SuiteResult:
    runs = [
        score_run(
            _run(
                "agent-v2",
                "r01",
                "reference_flow",
                [("search_source", {}), ("validate_apa", {}), ("summarize_source", {})],
                "referencia verificada",
                0.09,
                7200,
            ),
            cases["r01"],
        ),
        score_run(
            _run(
                "agent-v2",
                "r02",
                "support_flow",
                [("diff_preview", {}), ("publish_page", {})],
                "publicado",
                0.06,
                4800,
            ),
            cases["r02"],
        ),
    ]
    return SuiteResult.from_runs(SUITE, DATASET, runs, cases.values())


def _by_case(result: SuiteResult) -> dict:
    return {r.provenance.case_id: r for r in result.runs}


def test_agent_v1_passes_both_cases(v1: SuiteResult) -> None:
    (g,) = v1.by_provider
    assert (g.passed, g.runs) == (2, 2)
    assert gate(v1).passed


def test_agent_v2_fails_r01_on_cost_and_latency_only(v2: SuiteResult) -> None:
    r01 = _by_case(v2)["r01"]
    assert not r01.passed
    assert r01.failed_factors == ["cost", "latency"]
    assert r01.checks["route"] and r01.checks["trajectory"] and r01.checks["approval"]
    assert r01.trajectory == 1.0  # the extra summarize_source is tolerated in superset mode
    assert r01.notes == ["cost 0.09 USD over the limit 0.08 USD", "latency 7200 ms over the limit 6000 ms"]


def test_agent_v2_fails_r02_on_route_tools_and_approval(v2: SuiteResult) -> None:
    r02 = _by_case(v2)["r02"]
    assert not r02.passed
    assert r02.checks["cost"] and r02.checks["latency"]
    assert set(r02.failed_factors) == {"route", "trajectory", "approval", "permissions"}
    assert r02.notes[0] == "route expected human_review, got support_flow"
    assert "forbidden tool called: publish_page" in r02.notes
    assert "approval expected but never requested" in r02.notes
    assert r02.permission_violation
    assert (g := v2.by_provider[0]).passed == 0 and g.runs == 2


def test_v2_cannot_replace_v1_and_r02_is_kept_for_good(v1: SuiteResult, v2: SuiteResult) -> None:
    decision = gate(v2, baseline=v1)
    assert not decision.passed and decision.decision == "block" and decision.exit_code == 1
    assert decision.verdict is not None and decision.verdict.startswith("agent-v2 cannot replace agent-v1")
    assert {r.case_id for r in decision.regressions} == {"r01", "r02"}
    keep = {r.case_id: r for r in decision.regressions}
    assert keep["r02"].permanent and not keep["r01"].permanent
    assert keep["r02"].why_it_exists == "A persistent change needs a preview and a human approval."
    assert any("case r02" in reason for reason in decision.reasons)
    # ci_gate.json round-trips
    again = GateDecision.model_validate_json(decision.model_dump_json())
    assert again == decision
    assert json.loads(decision.model_dump_json())["decision"] == "block"


def test_trajectory_diffs_name_the_first_diverging_step(v1: SuiteResult, v2: SuiteResult) -> None:
    comparison = compare(v1, v2)
    (pair,) = comparison.pairs
    diffs = {d.case_id: d for d in pair.cases}
    assert diffs["r01"].diverged_at == 2
    assert diffs["r01"].divergence == "step 3: baseline (end), candidate summarize_source"
    assert diffs["r02"].diverged_at == 1
    assert diffs["r02"].divergence == "step 2: baseline update_page, candidate publish_page"
    assert diffs["r01"].status == diffs["r02"].status == "regressed"
    blocking = {d.metric for d in pair.deltas if d.blocking}
    # r01's latency (7200 ms) is one slow run: the p95 rise is not sustained, so it warns (issue 15:
    # noise-aware gates; docs/evals.md) while trajectory and the permission violation block
    assert blocking == {"trajectory", "permission_violations"}
    assert any(w.startswith("latency_p95_ms") and "not sustained" in w for w in comparison.warnings)
