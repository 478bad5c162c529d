"""What a finding of the gate or a comparison is, and which category a failure has.

Every finding has a **category** (issue 15), the same in every report:

- ``regression``: the agent behaves worse (a must-not-execute tool ran, a required tool is missing, a
  score dropped beyond tolerance) — the only category listed under "Regressions to keep";
- ``drift``: the candidate's failing runs are replays whose request no longer matches the cassette
  (the recording is stale, not the agent): the finding names what changed and the exact
  ``portagent record … --drifted`` line that fixes it;
- ``provider_error``: the failing runs failed at the provider;
- ``not_run``: the failing runs were never started (the eval stopped scheduling, e.g. ``--max-spend-usd``);
- ``run_error``: the failing runs could not be made (a worker died, the harness failed before the agent
  ran): nothing about the agent was measured;
- ``flaky``: the candidate's runs of the case disagree across repeats (no permission violation);
- ``improvement``: the case passes more often than on the baseline (never blocks);
- ``tool_unversioned_change``: a tool's schema, description or settings changed while its version did
  not (``evals.tool_versions``; added by the gate) — a warning, blocking only with ``--strict``.
"""

from __future__ import annotations

from typing import Final, Literal

from portagent.contracts._base import Contract
from portagent.evals.aggregate import SuiteResult
from portagent.evals.scoring import RunScore

Category = Literal[
    "regression",
    "drift",
    "provider_error",
    "not_run",
    "run_error",
    "flaky",
    "improvement",
    "tool_unversioned_change",
]
"""What kind of finding: the agent got worse, a stale recording, a provider failure, runs never started,
runs that could not be made, a flaky case, an improvement, or a tool changed without a version bump
(``evals.tool_versions``)."""

CATEGORY_LABELS: Final[dict[str, str]] = {
    "regression": "regression",
    "drift": "recording drift",
    "provider_error": "provider error",
    "not_run": "not run",
    "run_error": "run error",
    "flaky": "flaky",
    "improvement": "improvement",
    "tool_unversioned_change": "tool changed without a version bump",
}
"""How each category reads in reports and reasons."""


class Finding(Contract):
    """One categorized finding of a gate or comparison."""

    category: Category
    """regression, drift, provider_error, not_run, run_error, flaky, improvement or
    tool_unversioned_change."""
    blocking: bool
    """It blocks the candidate."""
    message: str
    """Readable, starting with the category (the same text as in ``reasons`` when it blocks)."""
    case_id: str | None = None
    """The case (None for a metric over a whole pair)."""
    provider: str | None = None
    """The provider (or pair) it was found on."""
    agent_version: str | None = None
    """The agent version judged."""
    changed: list[str] = []
    """For a drift: what changed since the recording (agent spec, the policy, a tool, the request)."""
    fix: str | None = None
    """For a drift: the exact ``portagent record … --drifted`` line that re-records it."""


def block(
    reasons: list[str],
    findings: list[Finding],
    category: Category,
    text: str,
    *,
    case_id: str | None = None,
    provider: str | None = None,
    agent_version: str | None = None,
    changed: list[str] | None = None,
    fix: str | None = None,
) -> None:
    """A blocking reason: its sentence among the decision's reasons, and the finding that says the same."""
    reasons.append(text)
    findings.append(
        Finding(
            category=category,
            blocking=True,
            message=text,
            case_id=case_id,
            provider=provider,
            agent_version=agent_version,
            changed=changed or [],
            fix=fix,
        )
    )


def categorize(status: str, base: list[RunScore], cand: list[RunScore]) -> Category | None:
    """The category of a case whose pass rate moved (None when it did not, or when only the
    baseline's unjudged runs — drift, provider errors — made it look better)."""
    if status == "regressed":
        failing = [r for r in cand if not r.passed]
        judged_failing = [r for r in failing if r.issue is None]
        if not judged_failing:
            return unjudged_category(failing)
        judged = [r for r in cand if r.issue is None]
        if any(r.passed for r in judged) and not any(r.permission_violation for r in judged_failing):
            return "flaky"
        return "regression"
    if status == "improved":
        base_failing = [r for r in base if not r.passed]
        if base_failing and all(r.issue is not None for r in base_failing):
            return None
        return "improvement"
    return None


def failing_category(runs: list[RunScore]) -> Category:
    """The category of a group of runs (one case, provider, version) judged on its own, when some
    failed: drift or provider error when no failing run was judged on its merits, flaky when the
    runs disagree without a permission violation, else regression."""
    failing = [r for r in runs if not r.passed]
    judged_failing = [r for r in failing if r.issue is None]
    if not judged_failing:
        return unjudged_category(failing)
    if any(r.passed for r in runs) and not any(r.permission_violation for r in runs):
        return "flaky"
    return "regression"


def unjudged_category(failing: list[RunScore]) -> Category:
    """The category of failing runs none of which was judged on its merits: drift when a replay drifted,
    else provider error when the provider failed one, else run error when one could not be made, else not
    run (the eval never started them)."""
    issues = {r.issue for r in failing}
    for issue, category in (("cassette_drift", "drift"), ("provider_error", "provider_error")):
        if issue in issues:
            return category  # type: ignore[return-value]
    return "run_error" if "run_error" in issues else "not_run"


def judged(side: SuiteResult) -> SuiteResult:
    """The runs judged on the agent's merits (without drift and provider errors)."""
    keep = [r for r in side.runs if r.issue is None]
    if len(keep) == len(side.runs):
        return side
    out = SuiteResult.from_runs(side.suite_id, side.dataset_version, keep, review=side.review)
    return out.model_copy(update={"cases": dict(side.cases)})


def drift_details(runs: list[RunScore]) -> tuple[list[str], str]:
    """What changed since the recording of drifted ``runs`` (union, in order), and the drift itself
    (the first drift message's first line)."""
    changed = list(dict.fromkeys(c for r in runs for c in r.recording_changes))
    first = next((r.drift for r in runs if r.drift), None) or ""
    return changed, first.splitlines()[0] if first else ""


def drift_fix(runs: list[RunScore], suite_path: str | None, cassettes: str | None) -> str:
    """The ``portagent record … --drifted`` line for the drifted ``runs``."""
    from portagent.evals.drift import rerecord_command

    drifted = [r for r in runs if r.issue == "cassette_drift"]
    sources = {r.provenance.recorded_source or r.provenance.source for r in drifted}
    return rerecord_command(
        suite_path,
        [r.provenance.provider for r in drifted],
        [r.provenance.case_id for r in drifted],
        source="live" if sources & {"live", "endpoint"} else "emulator",
        cassettes=cassettes,
    )


def drift_text(
    runs: list[RunScore], suite_path: str | None, cassettes: str | None
) -> tuple[str, list[str], str]:
    """(readable explanation, changed parts, fix line) of drifted runs."""
    changed, first = drift_details(runs)
    fix = drift_fix(runs, suite_path, cassettes)
    what = f"changed since the recording: {', '.join(changed)}" if changed else first or "request differs"
    return f"the request no longer matches the cassette ({what})", changed, fix
