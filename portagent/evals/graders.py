"""Graders for answers no rule can check (design source ch. 10, R10.14): the judge's prompt, the
reading of its verdict, and what a grader reports.

A grader (``contracts.suite.GraderSpec``) is judged by a *judge*: a portagent agent (any provider) whose
structured output is ``{label, score, explanation}``. The runtime (``runtime.judging``) makes the judge
runs like any other run — recorded, replayed offline from cassettes, costed —; this module holds the
pure parts:

- ``judge_prompt`` / ``pairwise_prompt``: the text the judge gets. It never names the provider or the
  agent version of an answer (the judge is blind to who wrote it); a pairwise prompt shows two answers
  as "Answer 1" and "Answer 2", and the runtime asks twice with the positions swapped.
- ``read_verdict``: the judge's output checked against the grader (a label it may give; a rubric score
  at an anchor) — anything else is a judge error, never a guess.
- ``GraderResult`` (one grader on one run) and ``PairwiseResult`` (one case's two answers, both orders).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, Literal

from portagent.contracts._base import Contract
from portagent.contracts.suite import RUBRIC_ANCHORS, GraderSpec, GraderType, anchor_label

VERDICT_FIELDS: Final = ("label", "score", "explanation")
"""What a judge's ``output_schema`` must ask for."""


class GraderResult(Contract):
    """One grader's verdict on one run's answer."""

    grader: str
    """The grader's name."""
    type: GraderType
    """judge / rubric."""
    label: str | None = None
    """The judge's label (a rubric's is its anchor: ``0``, ``0.5``, ``1``); None when it failed."""
    score: float | None = None
    """The judge's score in [0, 1] (a rubric's is its anchor)."""
    explanation: str = ""
    """Why, in the judge's words."""
    passed: bool = False
    """The label is a pass label (judge), or the score reaches the threshold (rubric)."""
    gate: bool = False
    """The verdict joined the run's gate (the grader gates and its calibration allowed it)."""
    error: str | None = None
    """Why there is no verdict (the judge run failed, or its output is not a verdict)."""
    cost_usd: float | None = None
    """What the judge run cost (reported apart from the agent's cost)."""
    judge_run_id: str = ""
    """The judge's run (its trace is under ``judges/`` in the results folder)."""


class PairJudgment(Contract):
    """One repeat of a pairwise comparison: the judge asked with A first, then with B first."""

    repeat: int
    """The repeat both answers come from."""
    ab: str | None
    """Label with A shown as answer 1 (``1``, ``2`` or ``tie``); None when that judge run failed."""
    ba: str | None
    """Label with B shown as answer 1."""
    winner: Literal["a", "b", "tie", "inconsistent", "error"]
    """Agreed winner; ``inconsistent`` when the verdict followed the position, not the answer."""
    explanations: list[str] = []
    """The judge's explanations (A first, then B first)."""


class PairwiseResult(Contract):
    """One case's answers of two subjects (agent versions or providers), compared blind."""

    grader: str
    """The pairwise grader."""
    case_id: str
    """The case."""
    a: str
    """Subject A (``version 1.0.0`` / ``provider openai``; the judge never sees it)."""
    b: str
    """Subject B."""
    judgments: list[PairJudgment]
    """One per repeat."""
    wins_a: int = 0
    """Repeats A won in both orders."""
    wins_b: int = 0
    """Repeats B won in both orders."""
    ties: int = 0
    """Repeats judged a tie (in both orders, or a tie in one and no winner in the other)."""
    inconsistent: int = 0
    """Repeats whose verdict changed with the order."""
    first_position_picks: int = 0
    """Judge runs that chose the answer shown first (position bias, with ``second_position_picks``)."""
    second_position_picks: int = 0
    """Judge runs that chose the answer shown second."""

    @property
    def position_bias(self) -> float | None:
        """(first − second position picks) / decisive picks, in [−1, 1]; 0 is no bias."""
        n = self.first_position_picks + self.second_position_picks
        return None if n == 0 else (self.first_position_picks - self.second_position_picks) / n


def check_judge_schema(schema: dict[str, Any] | None) -> str | None:
    """Why a judge agent's ``output_schema`` cannot carry a verdict (None: it can)."""
    if not schema:
        return "it has no output_schema (a judge returns structured output: label, score, explanation)"
    props = schema.get("properties") or {}
    missing = [f for f in VERDICT_FIELDS if f not in props]
    if missing:
        return f"its output_schema lacks {', '.join(missing)} (a judge returns label, score, explanation)"
    return None


def _labels_line(spec: GraderSpec) -> str:
    if spec.type == "rubric":
        return 'label: the anchor you chose, "0", "0.5" or "1"; score: the same number'
    if spec.type == "pairwise":
        return 'label: "1" if answer 1 is better, "2" if answer 2 is better, "tie" if neither; score: 0 to 1, how clear the difference is'
    return f"label: one of {', '.join(json.dumps(x) for x in spec.labels)}; score: 0 to 1, how well the answer does"


def _task_text(task: str | Sequence[str]) -> str:
    return task if isinstance(task, str) else "\n\n".join(task)


def answer_text(output: Any) -> str:
    """An answer as the judge reads it: text as is, structured output as canonical JSON."""
    if output is None:
        return "(no answer)"
    if isinstance(output, str):
        return output
    return json.dumps(output, sort_keys=True, ensure_ascii=False)


def judge_prompt(spec: GraderSpec, task: str | Sequence[str], answer: str) -> str:
    """The judge's input for one answer (``judge`` and ``rubric`` graders). Deterministic, so a replayed
    judge run sends what its recording holds."""
    parts = [f"Grader: {spec.name} ({spec.type})", "", "## Task given to the agent", _task_text(task), ""]
    parts += ["## Answer to grade", answer, ""]
    if spec.instructions.strip():
        parts += ["## What to judge", spec.instructions.strip(), ""]
    if spec.type == "rubric":
        parts += ["## Criteria", *[f"- {c}" for c in spec.criteria], ""]
        parts += ["## Anchors", *[f"- {anchor_label(a)}: {spec.anchors[a]}" for a in RUBRIC_ANCHORS], ""]
    parts += ["## Reply", f"Structured output with {_labels_line(spec)}; explanation: one or two sentences."]
    return "\n".join(parts)


def pairwise_prompt(spec: GraderSpec, task: str | Sequence[str], first: str, second: str) -> str:
    """The judge's input comparing two answers (blind: neither answer says who wrote it)."""
    parts = [f"Grader: {spec.name} (pairwise)", "", "## Task given to the agent", _task_text(task), ""]
    parts += ["## Answer 1", first, "", "## Answer 2", second, ""]
    parts += ["## What to judge", spec.instructions.strip(), ""]
    parts += ["## Reply", f"Structured output with {_labels_line(spec)}; explanation: one or two sentences."]
    return "\n".join(parts)


def read_verdict(
    spec: GraderSpec, output: Any, schema: dict[str, Any] | None = None
) -> tuple[str, float, str] | str:
    """(label, score, explanation) from a judge's final output, or why it is not a verdict.

    ``schema`` is the judge's ``output_schema``: an output that breaks it (a required ``explanation``
    missing, say — the judge run's ``output_valid`` is false) is no verdict, as a run whose output breaks
    its schema is no pass. A rubric judge is asked for the anchor as both label and score: the two
    disagreeing is a confused judge, not a verdict to pick one half of."""
    data = output
    if isinstance(output, str):
        try:
            data = json.loads(output)
        except ValueError:
            return f"the judge's output is not JSON: {output[:120]!r}"
    if schema is not None:
        problem = _schema_problem(data, schema)
        if problem:
            return problem
    if not isinstance(data, dict):
        return f"the judge's output is not an object: {str(data)[:120]!r}"
    label, score, explanation = (data.get(f) for f in VERDICT_FIELDS)
    if not isinstance(score, int | float) or isinstance(score, bool) or not 0 <= score <= 1:
        return f"the judge's score {score!r} is not a number in [0, 1]"
    if spec.type == "rubric":
        if float(score) not in RUBRIC_ANCHORS:
            return f"the judge's rubric score {score!r} is not an anchor (0, 0.5 or 1)"
        if not _same_anchor(label, float(score)):
            return (
                f"the judge's rubric label {label!r} and score {score!r} name different anchors "
                "(it was asked for the same number in both)"
            )
        label = anchor_label(float(score))
    elif not isinstance(label, str) or label not in spec.label_set:
        return f"the judge's label {label!r} is not one of {spec.label_set}"
    return label, float(score), explanation if isinstance(explanation, str) else ""


def _same_anchor(label: Any, score: float) -> bool:
    """Does a rubric label name the anchor ``score`` is (``"1"``, ``"1.0"``, ``1``)?"""
    if isinstance(label, bool) or not isinstance(label, str | int | float):
        return False
    try:
        return float(label) == score
    except ValueError:
        return False


def _schema_problem(output: Any, schema: dict[str, Any]) -> str | None:
    """Why ``output`` breaks the judge's ``output_schema`` (the first error, with where), or None."""
    from jsonschema import Draft202012Validator

    try:
        errors = sorted(
            Draft202012Validator(schema).iter_errors(output), key=lambda e: [str(p) for p in e.path]
        )
    except Exception as e:  # an unusable schema (unresolvable $ref …): no output can be checked against it
        return f"the judge's output_schema could not be applied: {type(e).__name__}: {e}"
    if not errors:
        return None
    where = "/".join(str(p) for p in errors[0].path) or "(root)"
    return f"the judge's output breaks its output_schema at {where}: {errors[0].message}"


def verdict_passes(spec: GraderSpec, label: str, score: float) -> bool:
    """Does a verdict pass the grader?"""
    if spec.type == "rubric":
        return score >= spec.threshold
    return label in spec.pass_labels


def pair_winner(ab: str | None, ba: str | None) -> Literal["a", "b", "tie", "inconsistent", "error"]:
    """The agreed winner of a pair judged in both orders (``ab``: A shown first)."""
    if ab is None or ba is None:
        return "error"
    pick_ab = "a" if ab == "1" else "b" if ab == "2" else "tie"
    pick_ba = "b" if ba == "1" else "a" if ba == "2" else "tie"
    if pick_ab == pick_ba == "a":
        return "a"
    if pick_ab == pick_ba == "b":
        return "b"
    if "tie" in (pick_ab, pick_ba):
        return "tie"
    return "inconsistent"


def pairwise_result(
    grader: str, case_id: str, a: str, b: str, judgments: Sequence[PairJudgment]
) -> PairwiseResult:
    """Count a case's pair judgments (wins, ties, order flips, position picks)."""
    first = sum((j.ab == "1") + (j.ba == "1") for j in judgments)
    second = sum((j.ab == "2") + (j.ba == "2") for j in judgments)
    return PairwiseResult(
        grader=grader,
        case_id=case_id,
        a=a,
        b=b,
        judgments=list(judgments),
        wins_a=sum(j.winner == "a" for j in judgments),
        wins_b=sum(j.winner == "b" for j in judgments),
        ties=sum(j.winner == "tie" for j in judgments),
        inconsistent=sum(j.winner == "inconsistent" for j in judgments),
        first_position_picks=first,
        second_position_picks=second,
    )
