"""Judge calibration (design source ch. 10, "evaluator calibration"): how well a judge agrees with human
labels, and whether it may gate.

A grader may carry human-labelled answers (``GraderSpec.calibration``). The judge labels the same
answers (``eval --calibrate``; judge runs like any other, replayable); agreement is reported as
accuracy, Cohen's kappa and the confusion matrix. A grader with ``gate: true`` gates only when its kappa
reaches ``min_kappa`` (and its accuracy ``min_accuracy``, when declared): an evaluator is never treated
as absolute truth before its agreement is measured — below the bar the eval is refused.

Cohen's kappa = (p_o − p_e) / (1 − p_e): p_o the observed agreement, p_e the agreement two raters with
the same label frequencies would reach by chance. When p_e = 1 (both always give one same label) kappa
is undefined (None): such a set cannot show agreement, so it never makes a judge gate-eligible.
"""

from __future__ import annotations

from collections.abc import Sequence

from portagent.contracts._base import Contract
from portagent.contracts.suite import GraderSpec


class CalibrationItem(Contract):
    """One human-labelled answer and the judge's label on it."""

    index: int
    """Position in the grader's ``calibration`` list."""
    human: str
    """The human's label."""
    judge: str | None
    """The judge's label (None: the judge run failed, see ``error``)."""
    explanation: str = ""
    """The judge's explanation."""
    error: str | None = None
    """Why there is no judge label."""


class CalibrationResult(Contract):
    """Agreement of one grader's judge with its human labels."""

    grader: str
    """The grader."""
    judge: str
    """The judge agent (``name@version``) and provider."""
    labels: list[str]
    """The label set (rows and columns of ``confusion``)."""
    examples: int
    """Human-labelled answers."""
    judged: int
    """Answers the judge labelled (the others failed; they count as disagreements)."""
    accuracy: float
    """Share of examples where the judge's label equals the human's."""
    kappa: float | None
    """Cohen's kappa (None when undefined: a single label everywhere)."""
    confusion: dict[str, dict[str, int]]
    """human label → judge label → count (``error`` column: no judge label)."""
    gate: bool
    """The grader asks to gate."""
    min_kappa: float | None = None
    """Declared least kappa."""
    min_accuracy: float | None = None
    """Declared least accuracy."""
    eligible: bool
    """The grader may gate: it asks to, and meets every declared bar."""
    reason: str
    """Why it is (not) eligible, in one sentence."""
    items: list[CalibrationItem] = []
    """Every example with both labels."""
    cost_usd: float = 0.0
    """What the calibration's judge runs cost."""
    runs: int = 0
    """Judge runs made (an example whose run was never started is not one)."""
    cost_unknown: int = 0
    """Judge runs whose cost is unknown."""
    input_tokens: int = 0
    """The judge runs' input tokens."""
    output_tokens: int = 0
    """The judge runs' output tokens."""


def cohen_kappa(pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> float | None:
    """Cohen's kappa of (human, judge) label pairs; None when undefined (no pairs, or p_e = 1)."""
    n = len(pairs)
    if n == 0:
        return None
    p_o = sum(h == j for h, j in pairs) / n
    p_e = sum((sum(h == lab for h, _ in pairs) / n) * (sum(j == lab for _, j in pairs) / n) for lab in labels)
    if p_e >= 1.0:
        return None
    return round((p_o - p_e) / (1 - p_e), 4)


def confusion(items: Sequence[CalibrationItem], labels: Sequence[str]) -> dict[str, dict[str, int]]:
    """human → judge → count, every label present (and an ``error`` column when a judge run failed)."""
    cols = [*labels, "error"] if any(i.judge is None for i in items) else list(labels)
    out = {h: dict.fromkeys(cols, 0) for h in labels}
    for i in items:
        out[i.human][i.judge if i.judge is not None else "error"] += 1
    return out


def calibrate(
    spec: GraderSpec,
    judge: str,
    items: Sequence[CalibrationItem],
    cost_usd: float = 0.0,
    usage: tuple[int, int, int, int] = (0, 0, 0, 0),
) -> CalibrationResult:
    """Agreement of a grader's judge with its human labels, and whether it may gate. ``usage``: the judge
    runs made, those of unknown cost, their input and output tokens."""
    labels = spec.label_set
    n = len(items)
    judged = [i for i in items if i.judge is not None]
    accuracy = round(sum(i.judge == i.human for i in items) / n, 4) if n else 0.0
    # a failed judge run is a disagreement: it counts in accuracy and, as its own label, in kappa
    kappa = cohen_kappa([(i.human, i.judge or "error") for i in items], [*labels, "error"])
    eligible, reason = _eligibility(spec, n, accuracy, kappa)
    return CalibrationResult(
        grader=spec.name,
        judge=judge,
        labels=labels,
        examples=n,
        judged=len(judged),
        accuracy=accuracy,
        kappa=kappa,
        confusion=confusion(items, labels),
        gate=spec.gate,
        min_kappa=spec.min_kappa,
        min_accuracy=spec.min_accuracy,
        eligible=eligible,
        reason=reason,
        items=list(items),
        cost_usd=round(cost_usd, 6),
        runs=usage[0],
        cost_unknown=usage[1],
        input_tokens=usage[2],
        output_tokens=usage[3],
    )


def _eligibility(spec: GraderSpec, n: int, accuracy: float, kappa: float | None) -> tuple[bool, str]:
    shown = f"kappa {'undefined' if kappa is None else f'{kappa:.3f}'}, accuracy {accuracy:.3f} on {n} labelled answer(s)"
    if not spec.gate:
        return False, f"reported only (gate: false); {shown}"
    if n == 0 or spec.min_kappa is None:
        return False, "no calibration: a judge gates only after its agreement with human labels is measured"
    if kappa is None:
        return False, f"{shown}: kappa is undefined (every label the same); label answers of each kind"
    if kappa < spec.min_kappa:
        return False, f"{shown}: kappa below the declared min_kappa {spec.min_kappa:g}"
    if spec.min_accuracy is not None and accuracy < spec.min_accuracy:
        return False, f"{shown}: accuracy below the declared min_accuracy {spec.min_accuracy:g}"
    return True, f"may gate: {shown} (min_kappa {spec.min_kappa:g})"
