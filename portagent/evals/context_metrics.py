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
history, with a continuation rate no lower than the baseline's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


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
