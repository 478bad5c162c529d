"""What the graders of an eval found, folded into its result: gating verdicts into each run's gate,
and the judging summary of ``report.json`` (``SuiteResult.judging``).

Judging is reported apart from the agent: its runs, tokens and cost never enter the agent's cost
figures (cost per accepted task, p95 cost). A grader's verdict joins a run's gate (factor ``judge``)
only when the grader gates *and* its calibration made it eligible (``evals.calibration``); otherwise
its label, score and explanation are reported beside the run.
"""

from __future__ import annotations

from collections.abc import Sequence

from portagent.contracts._base import Contract
from portagent.contracts.suite import GraderType
from portagent.evals.calibration import CalibrationResult
from portagent.evals.graders import GraderResult, PairwiseResult
from portagent.evals.scoring import RunScore


class GraderSummary(Contract):
    """One grader over every run it judged."""

    grader: str
    """The grader."""
    type: GraderType
    """judge / rubric / pairwise."""
    judge: str
    """Judge agent (``name@version``) and the provider it ran on."""
    gate: bool
    """Its verdicts joined the runs' gate."""
    judged: int
    """Runs (pairwise: judge runs) with a verdict."""
    passed: int = 0
    """Runs it passed (judge, rubric)."""
    errors: int = 0
    """Judge runs without a verdict."""
    mean_score: float | None = None
    """Mean of its scores."""
    cost_usd: float = 0.0
    """Cost of its judge runs."""


class Judging(Contract):
    """Everything the graders of an eval did (``report.json`` → ``judging``)."""

    runs: int = 0
    """Judge runs made (calibration included)."""
    cost_usd: float = 0.0
    """Their total cost — apart from the agent's cost."""
    cost_unknown: int = 0
    """Judge runs whose cost is unknown."""
    input_tokens: int = 0
    """Their input tokens."""
    output_tokens: int = 0
    """Their output tokens."""
    graders: list[GraderSummary] = []
    """Per grader."""
    pairwise: list[PairwiseResult] = []
    """Per pairwise grader and case."""
    calibration: list[CalibrationResult] = []
    """Per calibrated grader."""


def with_graders(score: RunScore, results: Sequence[GraderResult]) -> RunScore:
    """A run's score with its graders' verdicts; a gating verdict that fails (or is missing) fails the
    run's ``judge`` factor, with the judge's explanation in the notes."""
    if not results:
        return score
    gating = [g for g in results if g.gate]
    update: dict[str, object] = {"graders": [*score.graders, *results]}
    if gating:
        ok = all(g.passed for g in gating)
        checks = {**score.checks, "judge": ok}
        notes = list(score.notes)
        for g in gating:
            if g.error is not None:
                notes.append(f"judge {g.grader}: no verdict ({g.error})")
            elif not g.passed:
                notes.append(f"judge {g.grader}: {g.label} (score {g.score:g}): {g.explanation}")
        update |= {"checks": checks, "passed": score.passed and ok, "notes": notes}
    return score.model_copy(update=update)


def summarise(
    runs: Sequence[RunScore],
    pairwise: Sequence[PairwiseResult],
    calibration: Sequence[CalibrationResult],
    judges: dict[str, tuple[str, GraderType, bool]],
    pair_costs: dict[str, float],
    totals: tuple[int, float, int, int, int],
) -> Judging:
    """The judging summary. ``judges``: grader → (judge label, type, gates); ``pair_costs``: pairwise
    grader → cost; ``totals``: (judge runs, cost, runs of unknown cost, input tokens, output tokens)."""
    summaries = []
    for name, (judge, gtype, gate) in judges.items():
        if gtype == "pairwise":
            mine = [p for p in pairwise if p.grader == name]
            judgments = [j for p in mine for j in p.judgments]
            summaries.append(
                GraderSummary(
                    grader=name,
                    type=gtype,
                    judge=judge,
                    gate=False,
                    judged=sum((j.ab is not None) + (j.ba is not None) for j in judgments),
                    errors=sum((j.ab is None) + (j.ba is None) for j in judgments),
                    cost_usd=round(pair_costs.get(name, 0.0), 6),
                )
            )
            continue
        verdicts = [g for r in runs for g in r.graders if g.grader == name]
        scores = [g.score for g in verdicts if g.score is not None]
        summaries.append(
            GraderSummary(
                grader=name,
                type=gtype,
                judge=judge,
                gate=gate,
                judged=len(scores),
                passed=sum(g.passed for g in verdicts),
                errors=sum(g.error is not None for g in verdicts),
                mean_score=round(sum(scores) / len(scores), 4) if scores else None,
                cost_usd=round(sum(g.cost_usd or 0.0 for g in verdicts), 6),
            )
        )
    n, cost, unknown, tin, tout = totals
    return Judging(
        runs=n,
        cost_usd=round(cost, 6),
        cost_unknown=unknown,
        input_tokens=tin,
        output_tokens=tout,
        graders=summaries,
        pairwise=list(pairwise),
        calibration=list(calibration),
    )


def judging_markdown(judging: Judging | None, runs: Sequence[RunScore] = ()) -> list[str]:
    """The report's "Judges" section (Markdown lines; none without graders): per grader, calibration,
    pairwise counts, and every verdict with the judge's explanation."""
    if judging is None or not (judging.graders or judging.calibration):
        return []
    lines = [
        "## Judges",
        "",
        f"{judging.runs} judge run(s), cost ${judging.cost_usd:.4f}, tokens {judging.input_tokens} / "
        f"{judging.output_tokens} — apart from the agent's cost.",
        "",
        "| grader | type | judge | gates | judged | passed | mean score | errors | cost |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for g in judging.graders:
        lines.append(
            f"| {g.grader} | {g.type} | {g.judge} | {'yes' if g.gate else 'no'} | {g.judged} | "
            f"{g.passed if g.type != 'pairwise' else '–'} | "
            f"{'–' if g.mean_score is None else f'{g.mean_score:.2f}'} | {g.errors} | ${g.cost_usd:.4f} |"
        )
    lines.append("")
    for c in judging.calibration:
        kappa = "undefined" if c.kappa is None else f"{c.kappa:.3f}"
        lines += [
            f"**Calibration of {c.grader}** ({c.judge}): accuracy {c.accuracy:.3f}, Cohen's kappa {kappa} "
            f"on {c.examples} labelled answer(s) — {c.reason}",
            "",
        ]
    for p in judging.pairwise:
        bias = p.position_bias
        lines.append(
            f"- pairwise {p.grader} on {p.case_id}: A = {p.a}, B = {p.b}: A {p.wins_a}, B {p.wins_b}, "
            f"tie {p.ties}, order-dependent {p.inconsistent}; position bias "
            f"{'–' if bias is None else f'{bias:+.2f}'}"
        )
    if judging.pairwise:
        lines.append("")
    graded = [r for r in runs if r.graders]
    if graded:
        lines += [
            "| run | grader | label | score | gates | explanation |",
            "|---|---|---|---|---|---|",
        ]
        for r in graded:
            prov = r.provenance
            where = f"{prov.case_id} · {prov.provider} · {prov.agent_version} r{prov.repeat}"
            for v in r.graders:
                why = (v.explanation if v.error is None else f"no verdict: {v.error}").replace("|", "\\|")
                lines.append(
                    f"| {where} | {v.grader} | {v.label or '–'} | {'–' if v.score is None else f'{v.score:g}'} | "
                    f"{'yes' if v.gate else 'no'} | {why} |"
                )
        lines.append("")
    return lines


def verdict_lines(run: RunScore) -> list[str]:
    """One line per grader verdict on a run: label, score and the judge's explanation."""
    out = []
    for g in run.graders:
        if g.error is not None:
            out.append(f"{g.grader}: no verdict ({g.error})")
        else:
            out.append(
                f"{g.grader}: {g.label} (score {g.score:g}{', gates' if g.gate else ''}"
                f"{', passed' if g.passed else ', failed'}): {g.explanation}"
            )
    return out


def calibration_lines(results: Sequence[CalibrationResult]) -> list[str]:
    """``eval --calibrate``'s report: per grader, agreement and the confusion matrix."""
    out: list[str] = []
    for c in results:
        kappa = "undefined" if c.kappa is None else f"{c.kappa:.3f}"
        out.append(
            f"grader {c.grader} ({c.judge}): {c.examples} labelled answer(s), accuracy {c.accuracy:.3f}, "
            f"Cohen's kappa {kappa}" + (f" (min_kappa {c.min_kappa:g})" if c.min_kappa is not None else "")
        )
        cols = list(next(iter(c.confusion.values())).keys()) if c.confusion else []
        width = max([len("human \\ judge"), *(len(x) for x in c.labels)])
        out.append("  " + "human \\ judge".ljust(width) + "".join(f"{x:>8}" for x in cols))
        for human, row in c.confusion.items():
            out.append("  " + human.ljust(width) + "".join(f"{row[x]:>8}" for x in cols))
        verdict = "may gate" if c.eligible else ("may NOT gate" if c.gate else "reported only")
        out.append(f"  {verdict}: {c.reason}")
        for item in c.items:
            if item.judge != item.human:
                why = item.error or item.explanation
                out.append(
                    f"  disagrees on example {item.index}: human {item.human}, judge {item.judge}: {why}"
                )
    return out


def judging_lines(judging: Judging) -> list[str]:
    """The terminal summary of an eval's judging (cost apart from the agent's)."""
    out = [
        f"judging: {judging.runs} judge run(s), cost ${judging.cost_usd:.4f} (apart from the agent's), "
        f"tokens {judging.input_tokens} / {judging.output_tokens}"
    ]
    for g in judging.graders:
        if g.type == "pairwise":
            out.append(f"  {g.grader} (pairwise, {g.judge}): {g.judged} judgment(s), {g.errors} error(s)")
            continue
        mean = "–" if g.mean_score is None else f"{g.mean_score:.2f}"
        out.append(
            f"  {g.grader} ({g.type}, {g.judge}{', gates' if g.gate else ''}): {g.passed}/{g.judged} passed, "
            f"mean score {mean}, {g.errors} error(s)"
        )
    for p in judging.pairwise:
        bias = p.position_bias
        out.append(
            f"  {p.grader} on {p.case_id}: A={p.a} B={p.b}: A {p.wins_a}, B {p.wins_b}, tie {p.ties}, "
            f"order-dependent {p.inconsistent}, position bias {'–' if bias is None else f'{bias:+.2f}'}"
        )
    return out
