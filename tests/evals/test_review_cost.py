"""Human-review cost in cost per accepted task (issue 15, item 7; design source ch. 10):
``Σ(model cost + approvals × minutes_per_approval / 60 × rate_per_hour) / accepted``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from portagent.contracts.suite import ReviewCost, Suite
from portagent.evals.aggregate import SuiteResult
from portagent.evals.scoring import Provenance, RunScore


def _run(case: str, repeat: int, *, passed: bool, cost: float, approvals: int) -> RunScore:
    return RunScore(
        provenance=Provenance(case_id=case, provider="openai", agent_version="1.0.0", repeat=repeat),
        passed=passed,
        checks={"final": passed},
        final=1.0 if passed else 0.0,
        trajectory=1.0,
        trajectory_f1=1.0,
        args=1.0,
        approval=1.0,
        trace=1.0,
        cost_usd=cost,
        approvals=approvals,
    )


RUNS = [
    _run("a", 0, passed=True, cost=0.01, approvals=1),
    _run("a", 1, passed=True, cost=0.01, approvals=1),
    _run("b", 0, passed=False, cost=0.02, approvals=2),  # a rejected run's reviews still cost
    _run("c", 0, passed=True, cost=0.00, approvals=0),
]


def test_the_suite_declares_the_review_cost():
    suite = Suite.model_validate(
        {
            "suite_id": "s",
            "dataset_version": "1",
            "owner": "me",
            "agent": "agent.yaml",
            "cases": [{"case_id": "a", "input": "hi", "why_it_exists": "x"}],
            "review": {"minutes_per_approval": 3, "rate_per_hour": 60},
        }
    )
    assert suite.review == ReviewCost(minutes_per_approval=3, rate_per_hour=60)
    assert suite.review.per_approval_usd() == 3.0
    with pytest.raises(ValidationError):
        ReviewCost(minutes_per_approval=-1, rate_per_hour=60)


def test_review_cost_joins_the_model_cost_per_accepted_task():
    review = ReviewCost(minutes_per_approval=3, rate_per_hour=60)  # $3 per approval
    with_review = SuiteResult.from_runs("s", "1", RUNS, review=review).overall()
    without = SuiteResult.from_runs("s", "1", RUNS).overall()
    # model 0.04 + 4 approvals × $3 = 12.04, over 3 accepted
    assert (with_review.approvals, with_review.review_cost_usd) == (4, 12.0)
    assert with_review.cost_per_accepted_task_usd == pytest.approx(12.04 / 3, abs=1e-6)
    assert without.cost_per_accepted_task_usd == pytest.approx(0.04 / 3, abs=1e-6)
    assert without.review_cost_usd == 0.0


def test_review_cost_survives_select_and_json():
    result = SuiteResult.from_runs(
        "s", "1", RUNS, review=ReviewCost(minutes_per_approval=1, rate_per_hour=30)
    )
    again = SuiteResult.model_validate_json(result.model_dump_json())
    assert again.review == result.review
    assert again.select(provider="openai").by_provider[0].review_cost_usd == 2.0  # 4 × $0.50


def test_reports_show_the_review_cost():
    from types import SimpleNamespace

    from portagent.evals.report_md import review_line

    result = SuiteResult.from_runs(
        "s", "1", RUNS, review=ReviewCost(minutes_per_approval=3, rate_per_hour=60)
    )
    line = review_line(SimpleNamespace(result=result))  # type: ignore[arg-type]
    assert "3 min per approval at $60/h" in line and "openai 1.0.0: 4 × $3.0000 = $12.0000" in line
    assert review_line(SimpleNamespace(result=SuiteResult.from_runs("s", "1", RUNS))) == ""  # type: ignore[arg-type]
