"""A run where nothing was measured (a drifted replay, a provider failure, a run never started or never
made) is never a pass, even when its case's expectations are met by an empty or failed run
(``status: null`` or ``failed``, ``forbidden_tools``, ``approval: false``). A budget stop is the agent's
outcome: a case that expects it still passes."""

from __future__ import annotations

from typing import Any

import pytest
from _evals_trace import Trace

from portagent.contracts.suite import Case, Thresholds
from portagent.contracts.trace import ErrorEvent, RunCompleted
from portagent.evals import SuiteResult, gate, score_run
from portagent.evals.report_junit import render_junit


def _case(**expect: Any) -> Case:
    return Case.model_validate({"case_id": "c1", "input": "x", "why_it_exists": "t", "expect": expect})


LENIENT = [
    {"status": None},
    {"status": "failed"},
    {"status": None, "forbidden_tools": ["get_order"], "approval": False},
]


def _ended(stop_reason: str, *, drift: bool = False) -> list[Any]:
    t = Trace().started()
    t.model()
    if drift:
        t._add(ErrorEvent, error_type="CassetteDrift", message="cassette drift: the SDK sent POST /v1/x")
    t._add(RunCompleted, status="failed", stop_reason=stop_reason, cost_usd=0.0, duration_ms=9.0)
    return t.events


@pytest.mark.parametrize("expect", LENIENT)
@pytest.mark.parametrize(
    ("events", "issue", "category"),
    [
        (_ended("cassette_drift", drift=True), "cassette_drift", "drift"),
        (_ended("provider_error"), "provider_error", "provider_error"),
    ],
)
def test_a_run_with_an_issue_never_passes_and_the_gate_blocks(
    expect: dict[str, Any], events: list[Any], issue: str, category: str, tmp_path: Any
) -> None:
    case = _case(**expect)
    s = score_run(events, case)
    assert all(s.checks.values())  # every factor the case judges holds …
    assert s.issue == issue and not s.passed  # … but nothing was measured
    assert any(n.startswith("nothing measured") for n in s.notes), s.notes
    result = SuiteResult.from_runs("s", "d", [s], [case])
    d = gate(result)
    assert not d.passed and d.blocked_by == [category], d.reasons
    assert "failed :" not in d.reasons[0]  # no empty factor list
    from portagent.evals.report import Results

    junit = render_junit(Results(tmp_path, result, None))
    assert 'failures="1"' in junit and f'type="{category}"' in junit


def test_an_empty_trace_never_passes_even_under_a_lenient_trace_threshold() -> None:
    """A run that could not be made has no events; a case lowering ``thresholds.trace`` must not pass it."""
    case = _case(status=None)
    s = score_run([], case, Thresholds(trace=0.0))
    assert all(s.checks.values()) and not s.passed
    assert "nothing measured: the trace holds no run" in s.notes


def test_a_budget_stop_the_case_expects_still_passes() -> None:
    t = Trace().started()
    t.model()
    t._add(
        RunCompleted, status="budget_exhausted", stop_reason="budget_exhausted", cost_usd=0.1, duration_ms=9.0
    )
    s = score_run(t.events, _case(status="budget_exhausted"))
    assert s.passed and s.issue is None and s.notes == []
