"""ACCEPTANCE.md chapter 10 (trajectory evaluation), every scenario through the public API."""

from __future__ import annotations

import pytest
from _evals_trace import Trace, simple_run

from portagent.evals import Case, RunView, SuiteResult, Thresholds, score_run

GOOD_FINAL = "Autor: OpenTelemetry. Año: 2026. URL: https://opentelemetry.io/docs/specs/otel/trace/api/"
REQUIRED = ["search_source", "validate_apa"]


@pytest.fixture
def case() -> Case:
    return Case.model_validate(
        {
            "case_id": "f5c10-001",
            "input": "Verifica esta referencia APA y dime autor, año y URL.",
            "why_it_exists": "Evita publicar una cita sin fuente comprobada.",
            "tags": ["referencias", "tool-use", "read-only"],
            "expect": {
                "final_must_contain": ["autor", "año", "url"],
                "required_tools": REQUIRED,
                "forbidden_tools": ["publish_page"],
                "route": "reference_flow",
                "approval": False,
                "max_cost_usd": 0.08,
                "max_latency_ms": 6000,
            },
        }
    )


TH = Thresholds(final=0.80, trajectory=0.90, trace=0.95)


def run(
    tools: list[str],
    final: str = GOOD_FINAL,
    *,
    cost: float = 0.041,
    latency: float = 4200.0,
    route: str | None = "reference_flow",
) -> list:
    return simple_run(tools, final, cost=cost, latency=latency, route=route, case_id="f5c10-001")


def test_good_run_passes_with_perfect_scores(case: Case) -> None:
    s = score_run(run(REQUIRED), case, TH)
    assert (s.final, s.trajectory, s.approval, s.trace) == (1.0, 1.0, 1.0, 1.0)
    assert s.passed
    assert s.notes == [] and s.warnings == []
    assert s.cost_usd == 0.041 and s.latency_ms == 4200.0
    assert s.route == "reference_flow"
    assert s.tools == REQUIRED


def test_bad_run_fails_and_names_forbidden_missing_and_unanswered_call(case: Case) -> None:
    t = Trace(case_id="f5c10-001").started().handoff("reference_flow").model()
    t.call("search_source")
    t.call("publish_page", result=False)
    events = t.completed("La referencia parece correcta.", cost=0.132, latency=9100, agent="reference_flow")
    s = score_run(events, case, TH)
    assert s.final == 0.0
    assert s.trajectory == 0.0  # 0.5 − 0.1 (extra) − 0.5 (forbidden) → floored
    assert s.approval == 1.0
    assert s.trace == 0.8
    assert s.checks["cost"] is False and s.checks["latency"] is False
    assert not s.passed
    assert "forbidden tool called: publish_page" in s.notes
    assert any(n.startswith("missing tool: validate_apa") for n in s.notes)
    assert "call without result: call_2 (publish_page)" in s.notes
    assert "cost 0.132 USD over the limit 0.08 USD" in s.notes
    assert "latency 9100 ms over the limit 6000 ms" in s.notes
    assert s.forbidden_called == ["publish_page"]
    # no result shows the forbidden call was stopped, so it counts as executed: never compensated
    assert s.permission_violation and s.checks["permissions"] is False
    assert set(s.failed_factors) == {"final", "trajectory", "permissions", "trace", "cost", "latency"}


def test_reversed_order_scores_half_with_an_order_note(case: Case) -> None:
    s = score_run(run(list(reversed(REQUIRED))), case, TH)
    assert s.trajectory == 0.5
    assert not s.passed
    assert any("out of order" in n and "validate_apa → search_source" in n for n in s.notes)


def test_one_extra_tool_scores_point_nine_and_passes(case: Case) -> None:
    s = score_run(run([*REQUIRED, "summarize_source"]), case, TH)
    assert s.trajectory == 0.9
    assert s.passed  # ≥ is inclusive
    assert s.notes == []
    assert any("summarize_source" in w for w in s.warnings)


def test_four_extra_tools_cap_the_penalty_at_point_three(case: Case) -> None:
    s = score_run(run([*REQUIRED, "x1", "x2", "x3", "x4"]), case, TH)
    assert s.trajectory == 0.7
    assert not s.passed
    assert s.failed_factors == ["trajectory"]


def test_unnecessary_approval_scores_point_eight_and_fails(case: Case) -> None:
    t = Trace(case_id="f5c10-001").started().handoff("reference_flow").model()
    t.call("search_source")
    t.call("validate_apa", decision="approval_required", approval="approved")
    s = score_run(t.completed(GOOD_FINAL, cost=0.041, latency=4200, agent="reference_flow"), case, TH)
    assert s.approval == 0.8
    assert not s.passed
    assert s.failed_factors == ["approval"]
    assert s.notes == ["approval requested but not expected: call_2 (validate_apa)"]


def test_missing_route_record_scores_trace_point_eight(case: Case) -> None:
    t = Trace(case_id="f5c10-001").started().model()
    t.call("search_source")
    t.call("validate_apa")
    s = score_run(t.completed(GOOD_FINAL, cost=0.041, latency=4200, agent="reference_flow"), case, TH)
    assert s.trace == 0.8
    assert s.route == "reference_flow"  # the specialist answered, but nothing records the hand-over
    assert not s.passed
    assert s.notes == ["no handoff event records the route to reference_flow"]


def test_two_of_three_fragments_scores_point_six_six_seven(case: Case) -> None:
    s = score_run(run(REQUIRED, "Tiene autor y año."), case, TH)
    assert s.final == 0.667
    assert not s.passed
    assert s.notes == ["final output lacks: url"]


def test_cost_and_latency_exactly_at_the_limit_pass(case: Case) -> None:
    s = score_run(run(REQUIRED, cost=0.08, latency=6000), case, TH)
    assert s.checks["cost"] and s.checks["latency"]
    assert s.passed


def test_calls_pair_with_results_by_call_id_not_tool_name(case: Case) -> None:
    t = Trace(case_id="f5c10-001").started().handoff("reference_flow").model()
    t.call("search_source")
    t.call("search_source", result=False)  # the same tool again, never answered
    t.call("validate_apa")
    s = score_run(t.completed(GOOD_FINAL, cost=0.041, latency=4200, agent="reference_flow"), case, TH)
    assert s.trace == 0.8
    assert not s.passed
    assert "call without result: call_2 (search_source)" in s.notes


def test_recorded_latency_overrides_the_trace_duration(case: Case) -> None:
    events = run(REQUIRED, latency=9100)
    assert not score_run(events, case, TH).passed
    assert score_run(events, case, TH, latency_ms=5000).passed


def test_a_run_view_scores_like_its_events(case: Case) -> None:
    events = run(REQUIRED)
    assert score_run(RunView.from_events(events), case, TH) == score_run(events, case, TH)
    assert score_run(list(reversed(events)), case, TH) == score_run(events, case, TH)  # ordered by seq


def test_cost_per_accepted_task_and_wilson_through_aggregates(case: Case) -> None:
    # 100 runs costing 5.00, 20 passing → 0.25 per accepted task
    runs = [
        score_run(run(REQUIRED, cost=0.05, latency=4200 if i < 20 else 9000), case, TH) for i in range(100)
    ]
    result = SuiteResult.from_runs("f5", "2026-06-10.1", runs)
    (g,) = result.by_provider
    assert (g.runs, g.passed, g.total_cost_usd) == (100, 20, 5.0)
    assert g.cost_per_accepted_task_usd == pytest.approx(0.25)
    # 8.00 with 80 passing → 0.10
    runs = [
        score_run(run(REQUIRED, cost=0.08, latency=4200 if i < 80 else 9000), case, TH) for i in range(100)
    ]
    (g,) = SuiteResult.from_runs("f5", "2026-06-10.1", runs).by_provider
    assert g.cost_per_accepted_task_usd == pytest.approx(0.10)
    # 19/20 → Wilson [0.7639, 0.9911]
    runs = [score_run(run(REQUIRED, latency=4200 if i < 19 else 9000), case, TH) for i in range(20)]
    (g,) = SuiteResult.from_runs("f5", "2026-06-10.1", runs).by_provider
    assert (round(g.wilson_low, 4), round(g.wilson_high, 4)) == (0.7639, 0.9911)
