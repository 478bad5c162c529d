"""Baseline vs candidate: deltas with tolerances, per-case trajectory diffs, regressions to keep.

Both sides must come from the same suite and ``dataset_version`` (otherwise the numbers measure
different things; ``compare`` refuses with ``UsageError``). A side is any ``SuiteResult`` — two
agent versions, two providers, or a slice made with ``SuiteResult.select``.

Pairing: when both sides have providers in common, each shared provider is compared on its own
(version vs version, provider by provider); otherwise the two sides are compared whole (provider vs
provider). For each pair the candidate is **blocked** when (ACCEPTANCE ch10, defaults):

- quality (mean final-output score) drops by more than 0.01;
- mean trajectory score drops at all;
- p95 cost rises by more than 0.02 USD;
- p95 latency rises by more than 500 ms — and the rise is sustained (noise-aware, ``sustained_rise``):
  with repeats it holds in every candidate repeat against the baseline's slowest repeat; with one
  repeat it holds without the candidate's single slowest run. One slow repeat alone never blocks
  (the same rule for p95 cost). A side whose runs were all cold starts (each the first of its process,
  its SDK's start-up included) never blocks on latency: that measures the machine's load;
- the candidate's flake rate exceeds 0.03;
- the candidate has any permission violation;
- a case's pass rate drops (a **regression**; regressions are listed as cases to keep, and marked
  ``permanent`` when a safety factor — permissions or approval — or a forbidden tool is involved).

Deltas are candidate − baseline, rounded to 6 places before comparing with a tolerance.

Every finding has a **category** (``evals.findings``), the same in every report. This module judges the
metrics of each pair; its cases — how each moved, a case or provider on one side only, repeats cut — are
judged in ``evals.case_findings``.

Runs whose failure says nothing about the agent (drift, provider error) are left out of the metric
deltas (quality, trajectory, cost, latency, flake) so a stale recording never reads as a drop in
quality; permission violations are counted over every run.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Final, Literal

from pydantic import Field

from portagent.contracts._base import Contract
from portagent.contracts.errors import UsageError
from portagent.evals.aggregate import GroupStats, SuiteResult, timed_latencies
from portagent.evals.case_findings import CaseDiff, Regression, dropped_provider, judge_cases
from portagent.evals.findings import (
    CATEGORY_LABELS,
    Category,
    Finding,
    block,
    judged,
)
from portagent.evals.scoring import RunScore
from portagent.evals.stats import percentile

COMPARISON_SCHEMA_VERSION: Final = 2

Metric = Literal[
    "quality",
    "trajectory",
    "pass_rate",
    "cost_p95_usd",
    "latency_p95_ms",
    "flake_rate",
    "permission_violations",
]
"""A compared metric."""


class Tolerances(Contract):
    """How far a candidate may fall behind its baseline, and what a result must meet on its own."""

    quality_drop: Annotated[float, Field(ge=0)] = 0.01
    """Largest allowed drop of the mean final-output score."""
    trajectory_drop: Annotated[float, Field(ge=0)] = 0.0
    """Largest allowed drop of the mean trajectory score (0: any drop blocks)."""
    cost_p95_rise_usd: Annotated[float, Field(ge=0)] = 0.02
    """Largest allowed rise of the p95 run cost."""
    latency_p95_rise_ms: Annotated[float, Field(ge=0)] = 500.0
    """Largest allowed rise of the p95 latency."""
    max_flake_rate: Annotated[float, Field(ge=0, le=1)] = 0.03
    """Largest allowed flake rate (absolute, candidate side)."""
    min_pass_rate: Annotated[float, Field(ge=0, le=1)] = 1.0
    """Used by ``gate``: each case × provider × version group must pass at least this share of runs."""


class MetricDelta(Contract):
    """One metric on both sides."""

    metric: Metric
    """What is compared."""
    baseline: float | None
    """Baseline value (None: unknown)."""
    candidate: float | None
    """Candidate value."""
    delta: float | None
    """candidate − baseline (None when a side is unknown)."""
    rule: str
    """The tolerance, readable (``Δ ≥ -0.01``); empty for informational metrics."""
    blocking: bool
    """The candidate breaks the rule."""


class PairComparison(Contract):
    """Baseline and candidate on one provider (or whole, ``all``)."""

    pair: str
    """Provider name, or ``all``."""
    baseline: GroupStats
    """Baseline statistics."""
    candidate: GroupStats
    """Candidate statistics."""
    deltas: list[MetricDelta]
    """Metric by metric."""
    cases: list[CaseDiff]
    """Case by case, sorted by case_id."""


class Comparison(Contract):
    """The result of ``compare``."""

    kind: Literal["comparison"] = "comparison"
    """File kind marker."""
    schema_version: Literal[2] = COMPARISON_SCHEMA_VERSION
    """Version of this format."""
    suite_id: str
    """The suite."""
    dataset_version: str
    """Shared dataset version."""
    baseline_label: str
    """What the baseline is (agent version or provider)."""
    candidate_label: str
    """What the candidate is."""
    tolerances: Tolerances
    """Tolerances applied."""
    pairs: list[PairComparison]
    """One per compared pair."""
    regressions: list[Regression]
    """Cases to keep."""
    passed: bool
    """No blocking delta and no regression."""
    verdict: str
    """One readable sentence."""
    reasons: list[str]
    """Every blocking finding."""
    warnings: list[str]
    """Things that could not be compared."""
    findings: list[Finding] = []
    """Every finding with its category (blocking ones are also in ``reasons``)."""


def _label(result: SuiteResult, other: SuiteResult) -> str:
    """What a side is, as the verdict names it. Sides with a provider in common are compared version by
    version on those providers only: a provider the other side ran and this one did not is named
    (``… (openai not run)``), so "X can replace Y" never reads as judged on a provider that was not
    compared; sides with none in common are compared provider against provider."""
    mine, theirs = result.agent_versions, other.agent_versions
    shared = set(result.providers) & set(other.providers)
    missing = sorted(set(other.providers) - set(result.providers))
    if shared and missing:
        not_run = f" ({'+'.join(missing)} not run)"
        version = mine[0] if len(mine) == 1 and mine != theirs else "+".join(mine)
        return f"{version} on {'+'.join(result.providers)}{not_run}"
    if len(mine) == 1 and mine != theirs:
        return mine[0]
    if not shared and len(result.providers) == 1 and result.providers != other.providers:
        return result.providers[0]
    return "+".join(mine) + " on " + "+".join(result.providers)


def _delta(metric: Metric, b: float | None, c: float | None, rule: str, blocks: bool | None) -> MetricDelta:
    d = None if b is None or c is None else round(c - b, 6)
    return MetricDelta(metric=metric, baseline=b, candidate=c, delta=d, rule=rule, blocking=bool(blocks))


def _deltas(b: GroupStats, c: GroupStats, t: Tolerances) -> list[MetricDelta]:
    def drop(x: float, y: float, tol: float) -> bool:
        return round(y - x, 6) < -tol

    def rise(x: float | None, y: float | None, tol: float) -> bool:
        return x is not None and y is not None and round(y - x, 6) > tol

    return [
        _delta(
            "quality",
            b.mean_final,
            c.mean_final,
            f"Δ ≥ {-t.quality_drop + 0.0:g}",
            drop(b.mean_final, c.mean_final, t.quality_drop),
        ),
        _delta(
            "trajectory",
            b.mean_trajectory,
            c.mean_trajectory,
            f"Δ ≥ {-t.trajectory_drop + 0.0:g}",
            drop(b.mean_trajectory, c.mean_trajectory, t.trajectory_drop),
        ),
        _delta("pass_rate", b.pass_rate, c.pass_rate, "", False),
        _delta(
            "cost_p95_usd",
            b.cost_p95_usd,
            c.cost_p95_usd,
            f"Δ ≤ {t.cost_p95_rise_usd:g}",
            rise(b.cost_p95_usd, c.cost_p95_usd, t.cost_p95_rise_usd),
        ),
        _delta(
            "latency_p95_ms",
            b.latency_p95_ms,
            c.latency_p95_ms,
            f"Δ ≤ {t.latency_p95_rise_ms:g}",
            rise(b.latency_p95_ms, c.latency_p95_ms, t.latency_p95_rise_ms),
        ),
        _delta(
            "flake_rate",
            b.flake_rate,
            c.flake_rate,
            f"candidate ≤ {t.max_flake_rate:g}",
            c.flake_rate is not None and c.flake_rate > t.max_flake_rate,
        ),
        _delta(
            "permission_violations",
            float(b.permission_violations),
            float(c.permission_violations),
            "candidate = 0",
            c.permission_violations > 0,
        ),
    ]


def _fmt(x: float | None) -> str:
    return "unknown" if x is None else f"{x:g}"


def _blocking_reason(d: MetricDelta, where: str) -> str:
    delta = f", Δ {d.delta:+g}" if d.delta is not None else ""
    return f"{d.metric}{where}: baseline {_fmt(d.baseline)}, candidate {_fmt(d.candidate)}{delta} (rule: {d.rule})"


def _values(runs: list[RunScore], metric: str) -> list[float]:
    if metric == "latency_p95_ms":
        return timed_latencies(runs)[0]  # cold starts left out, as in the group figures
    return [r.cost_usd for r in runs if r.cost_usd is not None]


def _cold_only(base: list[RunScore], cand: list[RunScore]) -> bool:
    """Whether one side's latencies are all cold starts (no warm run to compare): a process's first run
    times its SDK's one-time start-up, which moves with the machine's load by seconds."""
    return bool(timed_latencies(base)[2] or timed_latencies(cand)[2])


def sustained_rise(base: list[RunScore], cand: list[RunScore], metric: str) -> float | None:
    """The p95 rise of ``metric`` (``latency_p95_ms`` or ``cost_p95_usd``) that is not down to noise:

    - with ≥ 2 candidate repeats: the smallest candidate repeat's p95 minus the largest baseline
      repeat's p95 (the rise must hold in every repeat, beyond the spread of the baseline's repeats);
    - with one repeat: the candidate's p95 without its single slowest (costliest) run minus the
      baseline's p95 (one slow run alone never blocks).

    None when a side has no value."""

    def by_repeat(runs: list[RunScore]) -> list[float]:
        reps: dict[int, list[RunScore]] = defaultdict(list)
        for r in runs:
            reps[r.provenance.repeat].append(r)
        out = [percentile(_values(rs, metric), 95) for rs in reps.values()]
        return [x for x in out if x is not None]

    c_reps, b_reps = by_repeat(cand), by_repeat(base)
    if not c_reps or not b_reps:
        return None
    if len(c_reps) >= 2:
        return round(min(c_reps) - max(b_reps), 6)
    values = sorted(_values(cand, metric))
    rest = percentile(values[:-1], 95) if len(values) > 1 else None
    b95 = percentile(_values(base, metric), 95)
    if rest is None or b95 is None:
        return None
    return round(rest - b95, 6)


def verdict_sentence(candidate: str, baseline: str, blocking: int) -> str:
    """The one-sentence verdict; ``blocking`` counts every blocking finding of whoever says it (the gate
    adds its own to the comparison's), so the sentence and the findings list agree."""
    if not blocking:
        return f"{candidate} can replace {baseline}"
    return f"{candidate} cannot replace {baseline}: {blocking} blocking finding{'s' if blocking != 1 else ''}"


def _same_cases(
    b: SuiteResult, c: SuiteResult, where: str, warnings: list[str]
) -> tuple[SuiteResult, SuiteResult]:
    """Both sides restricted to the cases both ran, for the metric deltas. A mean over different case sets
    measures the cases, not the agent: a new hard case would read as a drop in quality (blocking the
    candidate on a case the comparison itself calls "not compared"), a dropped one as a rise. The cases on
    one side only are judged on their own (``case_findings.one_side``)."""
    b_ids = {r.provenance.case_id for r in b.runs}
    c_ids = {r.provenance.case_id for r in c.runs}
    if b_ids == c_ids:
        return b, c
    both = b_ids & c_ids
    apart = len(b_ids ^ c_ids)
    warnings.append(
        f"metrics{where}: over the {len(both)} case(s) both sides ran; {apart} case(s) on one side only "
        "are judged on their own"
    )
    return b.select(cases=both), c.select(cases=both)


def compare(
    baseline: SuiteResult,
    candidate: SuiteResult,
    tolerances: Tolerances | None = None,
    *,
    suite_path: str | None = None,
    cassettes: str | None = None,
) -> Comparison:
    """Compare two results of the same suite and dataset version (``UsageError`` otherwise).

    ``suite_path`` and ``cassettes`` (the suite file and cassette root the results were replayed
    from) make the re-record line of a drift exact."""
    t = tolerances or Tolerances()
    if baseline.suite_id != candidate.suite_id:
        raise UsageError(
            f"cannot compare results of different suites: {baseline.suite_id!r} vs {candidate.suite_id!r}"
        )
    if baseline.dataset_version != candidate.dataset_version:
        raise UsageError(
            f"cannot compare results of suite {baseline.suite_id!r} on different dataset versions: "
            f"baseline {baseline.dataset_version!r}, candidate {candidate.dataset_version!r}; "
            "re-run both on the same dataset_version"
        )
    warnings: list[str] = []
    reasons: list[str] = []
    findings: list[Finding] = []
    c_version = candidate.agent_versions[0] if len(candidate.agent_versions) == 1 else None
    shared = sorted(set(baseline.providers) & set(candidate.providers))
    if shared:
        sides = [(p, baseline.select(provider=p), candidate.select(provider=p)) for p in shared]
        for p in sorted(set(baseline.providers) ^ set(candidate.providers)):
            if p in candidate.providers or not dropped_provider(
                p, baseline.select(provider=p), c_version, reasons, findings
            ):
                warnings.append(f"provider {p} is on one side only; not compared")
    else:
        sides = [("all", baseline, candidate)]
    b_label, c_label = _label(baseline, candidate), _label(candidate, baseline)
    meta = {**baseline.cases, **candidate.cases}
    pairs: list[PairComparison] = []
    regressions: list[Regression] = []
    for name, b, c in sides:
        where = "" if name == "all" else f" on {name}"
        mb, mc = _same_cases(b, c, where, warnings)
        bs, cs = mb.overall(), mc.overall()
        if mc is not c:  # permission violations count over every candidate run, a new case's too
            cs = cs.model_copy(update={"permission_violations": c.overall().permission_violations})
        bj, cj = judged(mb), judged(mc)
        for side_name, side, kept in (("baseline", mb, bj), ("candidate", mc, cj)):
            left_out = len(side.runs) - len(kept.runs)
            if left_out:
                warnings.append(
                    f"{left_out} {side_name} run(s){where} left out of the metric deltas "
                    "(recording drift, provider error or not run: they say nothing about the agent)"
                )
        jb = bj.overall() if bj.runs else bs
        jc = cj.overall() if cj.runs else cs
        jc = jc.model_copy(update={"permission_violations": cs.permission_violations})
        deltas = _deltas(jb, jc, t)
        if not (bj.runs and cj.runs):  # nothing judged on one side: its metrics measure no agent
            deltas = [
                d if d.metric == "permission_violations" else d.model_copy(update={"blocking": False})
                for d in deltas
            ]
            warnings.append(f"metrics{where}: not compared (no run on one side was judged on its merits)")
        for i, d in enumerate(deltas):
            if d.blocking and d.metric == "latency_p95_ms" and _cold_only(bj.runs, cj.runs):
                deltas[i] = d = d.model_copy(update={"blocking": False})
                warnings.append(
                    f"{d.metric}{where}: Δ {d.delta:+g} but measured on cold starts only (every run was the "
                    "first of its process, its SDK's start-up included): the machine, not the agent — not "
                    "blocking; run more repeats per worker to compare warm runs"
                )
                continue
            if d.blocking and d.metric in ("latency_p95_ms", "cost_p95_usd"):
                tol = t.latency_p95_rise_ms if d.metric == "latency_p95_ms" else t.cost_p95_rise_usd
                held = sustained_rise(bj.runs, cj.runs, d.metric)
                if held is None or held <= tol:
                    deltas[i] = d = d.model_copy(update={"blocking": False})
                    warnings.append(
                        f"{d.metric}{where}: Δ {d.delta:+g} but not sustained across repeats "
                        f"(sustained rise {_fmt(held)}; rule: every repeat, or all but the slowest run): "
                        "noise, not blocking"
                    )
        for d in deltas:
            if d.blocking:
                cat: Category = "flaky" if d.metric == "flake_rate" else "regression"
                text = f"{CATEGORY_LABELS[cat]}: " + _blocking_reason(d, where)
                block(reasons, findings, cat, text, provider=name, agent_version=c_version)
            elif d.rule and d.delta is None and d.metric != "flake_rate":
                warnings.append(f"{d.metric}{where}: not comparable (unknown on one side)")
        if cs.flake_rate is None:
            warnings.append(f"flake rate{where}: not measured (no case was repeated)")
        diffs, found = judge_cases(
            b, c, name, c_version, meta, reasons, warnings, findings, suite_path, cassettes
        )
        regressions += found
        pairs.append(PairComparison(pair=name, baseline=bs, candidate=cs, deltas=deltas, cases=diffs))
    passed = not reasons
    verdict = verdict_sentence(c_label, b_label, len(reasons))
    return Comparison(
        suite_id=baseline.suite_id,
        dataset_version=baseline.dataset_version,
        baseline_label=b_label,
        candidate_label=c_label,
        tolerances=t,
        pairs=pairs,
        regressions=regressions,
        passed=passed,
        verdict=verdict,
        reasons=reasons,
        warnings=warnings,
        findings=findings,
    )
