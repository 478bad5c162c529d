"""The public surface of portagent.evals is small, pinned, and imports no vendor SDK."""

from __future__ import annotations

import subprocess
import sys

import portagent.evals as evals

EXPECTED = {
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
}


def test_all_is_pinned_and_resolvable() -> None:
    assert set(evals.__all__) == EXPECTED
    for name in evals.__all__:
        assert getattr(evals, name) is not None
    assert callable(evals.gate) and callable(evals.compare)  # not shadowed by their modules


def test_importing_evals_loads_no_vendor_sdk() -> None:
    code = (
        "import sys, portagent.evals\n"
        "bad = [m for m in ('agents', 'claude_agent_sdk', 'google.adk', 'openai', 'anthropic') if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_suite_kind_loads_through_the_contract_loader() -> None:
    from portagent.contracts.loader import model_for_kind

    assert model_for_kind("suite") is evals.Suite
