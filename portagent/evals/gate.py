"""The CI gate: one result (optionally against a baseline) → pass or block, with every reason.

Without a baseline a result passes when:

- every case × provider × agent-version group passes at least ``min_pass_rate`` of its runs
  (default 1.0: every run passes its multiplicative per-run gate);
- no run has a permission violation (never tolerated, whatever ``min_pass_rate`` says);
- no provider × agent-version group has a flake rate above ``max_flake_rate``.

With a baseline, the result must also pass ``compare(baseline, result)``: no blocking delta and no
regression. A candidate must be good on its own *and* not worse than what it replaces.

``GateDecision`` is what ``portagent gate`` prints and writes as ``ci_gate.json``; ``exit_code`` is
0 (pass), 1 (block) or 3 (block on provider errors and runs that could not be made alone).

Every reason starts with its category (``regression``, ``recording drift``, ``provider error``,
``not run``, ``flaky``; see ``portagent.evals.compare``) and ``blocked_by`` lists the categories that block. A case
whose failing runs are all replays of a stale recording is a ``recording drift`` — it still blocks
(the result was not measured), with the exact ``portagent record … --drifted`` line in ``fixes`` —
never a regression.

A tool whose schema, description or settings changed while its version did not
(``tool_unversioned_change``, ``portagent.evals.tool_versions``) is a warning, and a blocking reason
with ``strict`` (``--strict``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final, Literal

from portagent.contracts._base import Contract
from portagent.evals.aggregate import SuiteResult
from portagent.evals.case_findings import Regression
from portagent.evals.compare import Tolerances, compare, verdict_sentence
from portagent.evals.findings import (
    CATEGORY_LABELS,
    Category,
    Finding,
    drift_fix,
    drift_text,
    judged,
    unjudged_category,
)
from portagent.evals.findings import block as block_with

GATE_SCHEMA_VERSION: Final = 2


class GateDecision(Contract):
    """Pass or block, with reasons (``ci_gate.json``)."""

    kind: Literal["gate-decision"] = "gate-decision"
    """File kind marker."""
    schema_version: Literal[2] = GATE_SCHEMA_VERSION
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
    """The verdict sentence (with a baseline); its count is every blocking finding of the gate."""
    findings: list[Finding] = []
    """Every finding with its category (regression, drift, provider_error, not_run, flaky, improvement,
    tool_unversioned_change)."""
    blocked_by: list[Category] = []
    """The categories of the blocking findings, in order of first appearance."""
    fixes: list[str] = []
    """Commands that fix what is not the agent's fault (the ``portagent record … --drifted`` line)."""

    @property
    def exit_code(self) -> int:
        """0 when the gate passes, 1 when it blocks, 3 when it blocks only on provider errors and runs that
        could not be made (DESIGN §3 exit codes: a provider or runtime error): nothing about the agent was
        measured, so a CI job can retry rather than alert on a regression. Any other blocking finding
        beside them (a regression, a drift) makes it 1."""
        if self.passed:
            return 0
        return 3 if self.blocked_by and set(self.blocked_by) <= {"provider_error", "run_error"} else 1


def gate(
    result: SuiteResult,
    baseline: SuiteResult | None = None,
    tolerances: Tolerances | None = None,
    *,
    suite_path: str | None = None,
    cassettes: str | None = None,
    tool_changes: Sequence[str] = (),
    strict: bool = False,
) -> GateDecision:
    """Decide whether ``result`` may advance (and, with ``baseline``, replace it).

    ``suite_path`` / ``cassettes``: the suite file and cassette root of a replayed result, so the
    re-record line of a drift can be run as printed. ``tool_changes``: messages of
    ``evals.tool_versions`` found outside the runs (baseline vs candidate manifests); with the ones
    the replayed runs carry, a tool changed without a version bump is a ``tool_unversioned_change``
    finding — a warning, or a blocking reason with ``strict``."""
    t = tolerances or Tolerances()
    reasons: list[str] = []
    warnings: list[str] = []
    findings: list[Finding] = []

    block = functools.partial(block_with, reasons, findings)

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
        failing_runs = [r for r in runs if not r.passed]
        judged_failing = [r for r in failing_runs if r.issue is None]
        failing = judged_failing[0] if judged_failing else (failing_runs[0] if failing_runs else None)
        if g.pass_rate < t.min_pass_rate and failing is not None:
            if not judged_failing and any(r.issue == "cassette_drift" for r in failing_runs):
                why, changed, fix = drift_text(failing_runs, suite_path, cassettes)
                block(
                    "drift",
                    f"recording drift: {where}: {g.passed}/{g.runs} runs passed; {why}",
                    case_id=g.case_id,
                    provider=g.provider,
                    agent_version=g.agent_version,
                    changed=changed,
                    fix=fix,
                )
                continue
            cat: Category = "regression" if judged_failing else unjudged_category(failing_runs)
            if cat == "regression" and any(r.passed for r in runs) and not g.permission_violations:
                cat = "flaky"
            # the factors of a run judged on its merits; an unmeasured run's list would only be noise
            factors = failing.failed_factors if failing.issue is None else []
            factors_text = f"failed {', '.join(factors)}: " if factors else ""
            block(
                cat,
                f"{CATEGORY_LABELS[cat]}: {where}: {g.passed}/{g.runs} runs passed; "
                f"{factors_text}{'; '.join(failing.notes)}",
                case_id=g.case_id,
                provider=g.provider,
                agent_version=g.agent_version,
            )
        elif g.permission_violations:
            bad = next(r for r in runs if r.permission_violation)
            block(
                "regression",
                f"regression: {where}: permission violation (never tolerated): "
                + "; ".join(n for n in bad.notes if n.startswith("permission violation")),
                case_id=g.case_id,
                provider=g.provider,
                agent_version=g.agent_version,
            )
    for g in judged(result).by_provider:
        where = f"{g.provider} (agent {g.agent_version or '?'})"
        if g.flake_rate is not None and g.flake_rate > t.max_flake_rate:
            block(
                "flaky",
                f"flaky: flake rate on {where}: {g.flake_rate:g} > {t.max_flake_rate:g}",
                provider=g.provider,
                agent_version=g.agent_version,
            )
    regressions: list[Regression] = []
    comparison = None
    if baseline is not None:
        comparison = compare(baseline, result, t, suite_path=suite_path, cassettes=cassettes)
        reasons += comparison.reasons
        warnings += comparison.warnings
        regressions = comparison.regressions
        findings += comparison.findings
    _tool_findings(result, baseline, tool_changes, strict, reasons, warnings, findings)
    verdict = None
    if comparison is not None:  # counts the gate's own reasons too, not only the comparison's
        verdict = verdict_sentence(comparison.candidate_label, comparison.baseline_label, len(reasons))
    drifted = [r for r in result.runs if r.issue == "cassette_drift"]
    fixes = [drift_fix(drifted, suite_path, cassettes)] if drifted else []
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
        findings=findings,
        blocked_by=list(dict.fromkeys(f.category for f in findings if f.blocking)),
        fixes=fixes,
    )


def _tool_findings(
    result: SuiteResult,
    baseline: SuiteResult | None,
    extra: Sequence[str],
    strict: bool,
    reasons: list[str],
    warnings: list[str],
    findings: list[Finding],
) -> None:
    """Tools changed without a version bump (``evals.tool_versions``): from the replayed runs of both
    sides and ``extra``; a finding each (blocking with ``strict``), plus the tools that could not be
    judged as warnings."""
    from portagent.evals.tool_versions import warnings_of

    runs = [*result.runs, *(baseline.runs if baseline is not None else [])]
    unversioned, unjudged = warnings_of([*(w for r in runs for w in r.warnings), *extra])
    for text in unversioned:
        if strict:
            reasons.append(text)
        else:
            warnings.append(text)
        findings.append(Finding(category="tool_unversioned_change", blocking=strict, message=text))
    warnings += unjudged
