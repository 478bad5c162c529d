"""The CI gate: one result (optionally against a baseline) → pass or block, with every reason.

Without a baseline a result passes when:

- every case × provider × agent-version group passes at least ``min_pass_rate`` of its runs
  (default 1.0: every run passes its multiplicative per-run gate);
- no run has a permission violation (never tolerated, whatever ``min_pass_rate`` says);
- no provider × agent-version group has a flake rate above ``max_flake_rate``.

With a baseline, the result must also pass ``compare(baseline, result)``: no blocking delta and no
regression. A candidate must be good on its own *and* not worse than what it replaces.

``GateDecision`` is what ``portagent gate`` prints and writes as ``ci_gate.json``; ``exit_code`` is
0 (pass) or 1 (block).
"""

from __future__ import annotations

from typing import Final, Literal

from portagent.contracts._base import Contract
from portagent.evals.aggregate import SuiteResult
from portagent.evals.compare import Regression, Tolerances, compare

GATE_SCHEMA_VERSION: Final = 1


class GateDecision(Contract):
    """Pass or block, with reasons (``ci_gate.json``)."""

    kind: Literal["gate-decision"] = "gate-decision"
    """File kind marker."""
    schema_version: Literal[1] = GATE_SCHEMA_VERSION
    """Version of this format."""
    suite_id: str
    """The suite."""
    dataset_version: str
    """Its dataset version."""
    passed: bool
    """The result may advance."""
    decision: Literal["pass", "block"]
    """``pass`` or ``block`` (same as ``passed``, for readers of the JSON)."""
    reasons: list[str]
    """Every blocking finding, in a stable order."""
    warnings: list[str] = []
    """What could not be judged (e.g. flakiness without repeats)."""
    regressions: list[Regression] = []
    """Cases the candidate made worse (with a baseline): keep them in the dataset."""
    verdict: str | None = None
    """The comparison's sentence (with a baseline)."""

    @property
    def exit_code(self) -> int:
        """0 when the gate passes, 1 when it blocks (DESIGN §3 exit codes)."""
        return 0 if self.passed else 1


def gate(
    result: SuiteResult, baseline: SuiteResult | None = None, tolerances: Tolerances | None = None
) -> GateDecision:
    """Decide whether ``result`` may advance (and, with ``baseline``, replace it)."""
    t = tolerances or Tolerances()
    reasons: list[str] = []
    warnings: list[str] = []
    if not result.runs:
        reasons.append("no runs to judge")
    for g in result.by_case:
        runs = [
            r
            for r in result.runs
            if (r.provenance.case_id, r.provenance.provider, r.provenance.agent_version)
            == (g.case_id, g.provider, g.agent_version)
        ]
        where = f"case {g.case_id} on {g.provider} (agent {g.agent_version or '?'})"
        failing = next((r for r in runs if not r.passed), None)
        if g.pass_rate < t.min_pass_rate and failing is not None:
            reasons.append(
                f"{where}: {g.passed}/{g.runs} runs passed; failed "
                f"{', '.join(failing.failed_factors)}: {'; '.join(failing.notes)}"
            )
        elif g.permission_violations:
            bad = next(r for r in runs if r.permission_violation)
            reasons.append(
                f"{where}: permission violation (never tolerated): "
                + "; ".join(n for n in bad.notes if n.startswith("permission violation"))
            )
    for g in result.by_provider:
        where = f"{g.provider} (agent {g.agent_version or '?'})"
        if g.flake_rate is not None and g.flake_rate > t.max_flake_rate:
            reasons.append(f"flake rate on {where}: {g.flake_rate:g} > {t.max_flake_rate:g}")
    regressions: list[Regression] = []
    verdict = None
    if baseline is not None:
        comparison = compare(baseline, result, t)
        reasons += comparison.reasons
        warnings += comparison.warnings
        regressions = comparison.regressions
        verdict = comparison.verdict
    passed = not reasons
    return GateDecision(
        suite_id=result.suite_id,
        dataset_version=result.dataset_version,
        passed=passed,
        decision="pass" if passed else "block",
        reasons=reasons,
        warnings=warnings,
        regressions=regressions,
        verdict=verdict,
    )
