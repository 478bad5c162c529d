"""Evaluation core: suites, per-run scoring, aggregates, comparison and the CI gate (DESIGN §7).

Pure functions over normalized traces: nothing here imports a vendor SDK (only pydantic, jsonschema
and the standard library). The runner, reports and pytest plugin build on these names.

``gate`` and ``compare`` are both functions here and the names of their modules; the functions are
imported eagerly so the package attribute is always the function.
"""

from __future__ import annotations

from portagent.contracts.loaded_suite import LoadedSuite, load_suite
from portagent.contracts.suite import Case, Expectations, Suite, Thresholds
from portagent.evals.aggregate import GroupStats, SuiteResult
from portagent.evals.case_findings import Regression
from portagent.evals.compare import Comparison, Tolerances, compare
from portagent.evals.gate import GateDecision, gate
from portagent.evals.scoring import Provenance, RunScore, score_run
from portagent.evals.stats import (
    cost_per_accepted_task,
    flake_rate,
    pass_at_k,
    pass_hat_k,
    percentile,
    wilson_interval,
)
from portagent.evals.trajectory import TrajectoryResult, score_trajectory
from portagent.evals.view import RunView

__all__ = [
    "Case",
    "Comparison",
    "Expectations",
    "GateDecision",
    "GroupStats",
    "LoadedSuite",
    "Provenance",
    "Regression",
    "RunScore",
    "RunView",
    "Suite",
    "SuiteResult",
    "Thresholds",
    "Tolerances",
    "TrajectoryResult",
    "compare",
    "cost_per_accepted_task",
    "flake_rate",
    "gate",
    "load_suite",
    "pass_at_k",
    "pass_hat_k",
    "percentile",
    "score_run",
    "score_trajectory",
    "wilson_interval",
]
