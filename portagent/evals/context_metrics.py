"""Context metrics of the design source ch. 04: pure functions over retrievals, handoffs and token counts.

| metric | formula | alarm (ch. 04) |
|---|---|---|
| ``memory_precision_at_k`` | relevant in the top k / k | top-k full of vaguely similar memories |
| ``memory_recall_at_k`` | relevant in the top k / all relevant | critical rules missing |
| ``stale_memory_rate`` | stale memories used / memories used | old decisions beat new rules |
| ``handoff_completeness`` | parts of O, D, P, E, N present / 5 | goal, limits or next step missing |
| ``resume_success_rate`` | resumed correctly / interrupted | the agent asks "what do we do?" again |
| ``ratio_compaction`` | tokens(handoff) / tokens(full history) | low and the goal lost = failure |
| ``token_saving`` | 1 − tokens(variant) / tokens(baseline) | small saving, or quality lost |

``token_saving_gate`` is the chapter's falsifiable threshold: at least 35 % fewer tokens than resending the full
history, with a continuation rate no lower than the baseline's. ``context_savings`` applies it to an eval
(the suite's ``context_gate``: baseline vs candidate, per provider, measured input tokens and pass rates); its
verdicts are in ``report.json`` (``context``), ``report.md`` and the gate (``apply_context_gate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from portagent.contracts._base import Contract

if TYPE_CHECKING:
    from portagent.contracts.suite import ContextGate
    from portagent.evals.aggregate import SuiteResult
    from portagent.evals.gate import GateDecision


def _rate(num: float, den: float) -> float:
    return round(num / den, 6) if den else 0.0


def memory_precision_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Share of the top ``k`` retrieved ids that are relevant (divided by ``k``, as the chapter does)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    wanted = set(relevant)
    return _rate(sum(1 for m in retrieved[:k] if m in wanted), k)


def memory_recall_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Share of the relevant ids found in the top ``k`` (1.0 when nothing was relevant)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    wanted = set(relevant)
    if not wanted:
        return 1.0
    return _rate(len(wanted & set(retrieved[:k])), len(wanted))


def stale_memory_rate(used: Sequence[Any], now: Any) -> float:
    """Share of used memory records that were expired, superseded or retired at ``now``."""
    stale = sum(1 for r in used if r.status != "active" or r.expired(now))
    return _rate(stale, len(used))


def handoff_completeness(package: Any) -> float:
    """Share of O, D, P, E, N present in a ``HandoffPackage`` (1.0 for a valid one)."""
    from portagent.tracing.handoff import completeness

    parts = completeness(package)
    return _rate(sum(parts.values()), len(parts))


def resume_success_rate(resumed_ok: Sequence[bool]) -> float:
    """Share of interrupted tasks that continued correctly (31 of 40 → 0.775)."""
    return _rate(sum(1 for ok in resumed_ok if ok), len(resumed_ok))


def ratio_compaction(handoff_tokens: int, history_tokens: int) -> float:
    """tokens(handoff) / tokens(full history) (1800 / 28000 ≈ 0.064)."""
    return _rate(handoff_tokens, history_tokens)


def token_saving(baseline_tokens: int, variant_tokens: int) -> float:
    """1 − variant / baseline: the share of tokens the variant saves."""
    return round(1 - variant_tokens / baseline_tokens, 6) if baseline_tokens else 0.0


@dataclass(frozen=True)
class GateResult:
    """The ch. 04 gate's verdict and why."""

    passed: bool
    saving: float
    reasons: list[str]


def token_saving_gate(
    baseline_tokens: int,
    variant_tokens: int,
    baseline_continuation: float,
    variant_continuation: float,
    *,
    min_saving: float = 0.35,
) -> GateResult:
    """Pass when the variant saves at least ``min_saving`` of the tokens **and** continues at least as
    well as the baseline (full history)."""
    saving = token_saving(baseline_tokens, variant_tokens)
    reasons = []
    if saving < min_saving:
        reasons.append(f"token saving {saving:.1%} is below {min_saving:.0%}")
    if variant_continuation < baseline_continuation:
        reasons.append(f"continuation dropped from {baseline_continuation:.3f} to {variant_continuation:.3f}")
    return GateResult(passed=not reasons, saving=saving, reasons=reasons)


# --- in an eval -------------------------------------------------------------------------------------------


class ContextSaving(Contract):
    """The ch. 04 gate on one provider of an eval (``report.json`` → ``context``)."""

    provider: str
    """The provider."""
    baseline_version: str
    """The baseline agent's version."""
    candidate_version: str
    """The candidate agent's version."""
    cases: int
    """Cases both sides ran (only those are compared)."""
    baseline_input_tokens: int
    """Input tokens the provider reported for the baseline's runs (``model.call`` usage, summed)."""
    candidate_input_tokens: int
    """The same for the candidate."""
    token_saving: float
    """1 − candidate / baseline."""
    min_token_saving: float
    """The suite's ``context_gate.min_token_saving``."""
    baseline_continuation: float
    """The baseline's pass rate on those cases."""
    candidate_continuation: float
    """The candidate's."""
    passed: bool
    """Saving reached and continuation not lower."""
    reasons: list[str] = []
    """Why it did not pass."""


def context_savings(
    result: SuiteResult, baseline_version: str, candidate_version: str, gate: ContextGate
) -> list[ContextSaving]:
    """``token_saving_gate`` per provider over the cases both versions ran: measured input tokens (what each
    provider reported receiving, not portagent's estimate) and pass rates as the continuation."""
    out: list[ContextSaving] = []
    for provider in result.providers:
        runs = [r for r in result.runs if r.provenance.provider == provider and r.issue != "not_run"]
        base = [r for r in runs if r.provenance.agent_version == baseline_version]
        cand = [r for r in runs if r.provenance.agent_version == candidate_version]
        shared = {r.provenance.case_id for r in base} & {r.provenance.case_id for r in cand}
        base = [r for r in base if r.provenance.case_id in shared]
        cand = [r for r in cand if r.provenance.case_id in shared]
        b_tokens = sum(r.usage.input_tokens for r in base)
        c_tokens = sum(r.usage.input_tokens for r in cand)
        b_cont = _rate(sum(r.passed for r in base), len(base))
        c_cont = _rate(sum(r.passed for r in cand), len(cand))
        verdict = token_saving_gate(b_tokens, c_tokens, b_cont, c_cont, min_saving=gate.min_token_saving)
        reasons = list(verdict.reasons)
        if not shared:
            reasons = ["no case ran on both the baseline and the candidate"]
        elif not b_tokens:
            reasons = ["the baseline's runs reported no input tokens: nothing to compare"]
        out.append(
            ContextSaving(
                provider=provider,
                baseline_version=baseline_version,
                candidate_version=candidate_version,
                cases=len(shared),
                baseline_input_tokens=b_tokens,
                candidate_input_tokens=c_tokens,
                token_saving=verdict.saving,
                min_token_saving=gate.min_token_saving,
                baseline_continuation=b_cont,
                candidate_continuation=c_cont,
                passed=not reasons,
                reasons=reasons,
            )
        )
    return out


def context_line(c: ContextSaving) -> str:
    """One line of a report: ``openai: 41.2 % fewer input tokens (1830 → 1076, ≥ 35 %), pass rate 1.00 → 1.00``."""
    return (
        f"{c.provider}: {c.token_saving:.1%} fewer input tokens ({c.baseline_input_tokens} → "
        f"{c.candidate_input_tokens}, needs ≥ {c.min_token_saving:.0%}), pass rate "
        f"{c.baseline_continuation:.2f} → {c.candidate_continuation:.2f}: {'pass' if c.passed else 'block'}"
    )


def apply_context_gate(decision: GateDecision, savings: Sequence[ContextSaving]) -> GateDecision:
    """``decision`` with every failed context gate as a blocking reason (a ``regression`` finding: the
    candidate does not save what it was built to save, or continues worse)."""
    from portagent.evals.findings import block

    failed = [c for c in savings if not c.passed]
    if not failed:
        return decision
    reasons = list(decision.reasons)
    findings = list(decision.findings)
    for c in failed:
        text = f"regression: context gate on {c.provider} (agent {c.candidate_version}): " + "; ".join(
            c.reasons
        )
        block(reasons, findings, "regression", text, provider=c.provider, agent_version=c.candidate_version)
    blocked = list(dict.fromkeys([*decision.blocked_by, "regression"]))
    return decision.model_copy(
        update={
            "passed": False,
            "decision": "block",
            "reasons": reasons,
            "findings": findings,
            "blocked_by": blocked,
            "verdict": f"{decision.verdict}, but the context gate blocks it" if decision.verdict else None,
        }
    )
