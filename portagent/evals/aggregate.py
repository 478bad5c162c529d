"""Aggregates over many RunScores, and ``SuiteResult`` — the versioned, JSON-serialisable result of
one eval (it becomes ``report.json``).

Groups: per case × provider × agent version (``by_case``), and per provider × agent version
(``by_provider``). Each group carries the pass rate with its Wilson 95 % interval, pass@k and pass^k
for k = 1 … K, the flake rate, mean factor scores, cost (total, p50/p95, per accepted task), latency
p50/p95 and token totals. See ``portagent.evals.stats`` for every formula.

pass@k / pass^k of a provider group are the means over its cases of the per-case estimators (how
τ-bench reports pass^k), with K the smallest number of runs any of its cases has.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import Final, Literal

from portagent.contracts._base import Contract
from portagent.contracts.run import Usage
from portagent.contracts.suite import Case, ReviewCost
from portagent.evals.context_metrics import ContextSaving
from portagent.evals.judging import Judging
from portagent.evals.scoring import RunScore
from portagent.evals.stats import (
    cost_per_accepted_task,
    flake_rate,
    pass_at_k,
    pass_hat_k,
    percentile,
    wilson_interval,
)

SUITE_RESULT_SCHEMA_VERSION: Final = 2


class CaseMeta(Contract):
    """What a report needs to know about a case besides its runs."""

    tags: list[str] = []
    """The case's tags."""
    why_it_exists: str = ""
    """Why the case exists."""


class GroupStats(Contract):
    """Statistics of one group of runs."""

    provider: str
    """Provider."""
    agent_version: str
    """Agent version."""
    case_id: str | None = None
    """The case, or None for a provider × version group."""
    runs: int
    """Runs in the group."""
    passed: int
    """Runs that passed their gate."""
    cases: int
    """Distinct cases (case × provider × version when the group mixes them)."""
    pass_rate: float
    """passed / runs."""
    wilson_low: float
    """Wilson 95 % lower bound of the pass rate."""
    wilson_high: float
    """Wilson 95 % upper bound."""
    pass_at_k: dict[int, float]
    """k → pass@k (mean over cases), k = 1 … K."""
    pass_hat_k: dict[int, float]
    """k → pass^k (mean over cases), k = 1 … K."""
    flake_rate: float | None
    """Share of repeated cases with mixed outcomes (None: nothing repeated)."""
    mean_final: float
    """Mean final-output score (the comparison's "quality")."""
    mean_trajectory: float
    """Mean trajectory score."""
    mean_args: float
    """Mean argument score."""
    mean_approval: float
    """Mean approval score."""
    mean_trace: float
    """Mean trace completeness."""
    permission_violations: int
    """Runs with a permission violation."""
    total_cost_usd: float
    """Sum of known run costs."""
    cost_unknown: int
    """Runs whose cost is unknown (excluded from cost figures)."""
    cost_p50_usd: float | None
    """Median run cost (nearest rank)."""
    cost_p95_usd: float | None
    """p95 run cost (nearest rank)."""
    cost_per_accepted_task_usd: float | None
    """(Total cost + human-review cost) / passed runs (None when none passed)."""
    approvals: int = 0
    """Approval cards asked of a reviewer, over all runs."""
    review_cost_usd: float = 0.0
    """Human-review cost: approvals × the suite's ``review`` (0 when the suite gives none)."""
    latency_p50_ms: float | None
    """Median latency (nearest rank)."""
    latency_p95_ms: float | None
    """p95 latency (nearest rank)."""
    latency_cold_starts_left_out: int = 0
    """Cold-start runs (``RunScore.cold_start``: the SDK's one-time start-up in their timing) left out of
    the latency figures (there were warm runs to measure by)."""
    latency_cold_starts_included: int = 0
    """Cold-start runs the latency figures include: every timed run of the group was one."""
    usage: Usage
    """Token totals."""


def _r(x: float | None, places: int = 6) -> float | None:
    return None if x is None else round(x, places)


def _mean(xs: Sequence[float]) -> float:
    return round(sum(xs) / len(xs), 6) if xs else 0.0


def timed_latencies(runs: Sequence[RunScore]) -> tuple[list[float], int, int]:
    """The latencies latency figures use, how many cold starts they leave out and how many they include:
    the warm runs' when there are any (a cold start times the SDK's one-time start-up too), else every
    timed run's (then all of them are cold)."""
    timed = [r for r in runs if r.latency_ms is not None]
    warm = [r for r in timed if not r.cold_start]
    use = warm or timed
    values = [r.latency_ms for r in use if r.latency_ms is not None]
    return values, len(timed) - len(use), 0 if warm else len(timed)


def group_stats(
    runs: Sequence[RunScore],
    *,
    provider: str,
    agent_version: str,
    case_id: str | None = None,
    review: ReviewCost | None = None,
) -> GroupStats:
    """Statistics of ``runs`` (all of one provider and agent version; of one case when ``case_id``)."""
    by_case: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for r in runs:
        p = r.provenance
        by_case[(p.provider, p.agent_version, p.case_id)].append(r.passed)
    n, passed = len(runs), sum(r.passed for r in runs)
    low, high = wilson_interval(passed, n)
    k_max = min((len(v) for v in by_case.values()), default=0)
    at_k = {k: _mean([pass_at_k(len(v), sum(v), k) for v in by_case.values()]) for k in range(1, k_max + 1)}
    hat_k = {k: _mean([pass_hat_k(len(v), sum(v), k) for v in by_case.values()]) for k in range(1, k_max + 1)}
    costs = [r.cost_usd for r in runs if r.cost_usd is not None]
    latencies, cold_left_out, cold_included = timed_latencies(runs)
    total = sum(costs)
    approvals = sum(r.approvals for r in runs)
    human = approvals * review.per_approval_usd() if review is not None else 0.0
    usage = Usage(**{f: sum(getattr(r.usage, f) for r in runs) for f in Usage.model_fields})
    return GroupStats(
        provider=provider,
        agent_version=agent_version,
        case_id=case_id,
        runs=n,
        passed=passed,
        cases=len(by_case),
        pass_rate=_r(passed / n) if n else 0.0,
        wilson_low=round(low, 6),
        wilson_high=round(high, 6),
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        flake_rate=_r(flake_rate(by_case.values())),
        mean_final=_mean([r.final for r in runs]),
        mean_trajectory=_mean([r.trajectory for r in runs]),
        mean_args=_mean([r.args for r in runs]),
        mean_approval=_mean([r.approval for r in runs]),
        mean_trace=_mean([r.trace for r in runs]),
        permission_violations=sum(r.permission_violation for r in runs),
        total_cost_usd=round(total, 6),
        cost_unknown=n - len(costs),
        cost_p50_usd=_r(percentile(costs, 50)),
        cost_p95_usd=_r(percentile(costs, 95)),
        cost_per_accepted_task_usd=_r(cost_per_accepted_task(total, passed, human)),
        approvals=approvals,
        review_cost_usd=round(human, 6),
        latency_p50_ms=_r(percentile(latencies, 50), 3),
        latency_p95_ms=_r(percentile(latencies, 95), 3),
        latency_cold_starts_left_out=cold_left_out,
        latency_cold_starts_included=cold_included,
        usage=usage,
    )


def _run_key(r: RunScore) -> tuple[str, str, str, int, str]:
    p = r.provenance
    return (p.agent_version, p.provider, p.case_id, p.repeat, p.run_id)


class SuiteResult(Contract):
    """Everything one eval produced: every run's score with provenance, and the aggregates."""

    kind: Literal["suite-result"] = "suite-result"
    """File kind marker."""
    schema_version: Literal[2] = SUITE_RESULT_SCHEMA_VERSION
    """Version of this format (``report.json``)."""
    suite_id: str
    """The suite."""
    dataset_version: str
    """The suite's dataset version; comparisons require equal versions."""
    runs: list[RunScore]
    """Per-run scores, sorted by agent version, provider, case, repeat."""
    by_case: list[GroupStats]
    """Per case × provider × agent version."""
    by_provider: list[GroupStats]
    """Per provider × agent version."""
    cases: dict[str, CaseMeta] = {}
    """case_id → tags and why it exists."""
    review: ReviewCost | None = None
    """The suite's human-review cost per approval (in cost per accepted task), when it gives one."""
    judging: Judging | None = None
    """What the suite's graders did (verdict summaries, pairwise, calibration) and what judging cost,
    apart from the agent's cost; None when the suite has no graders."""
    context: list[ContextSaving] = []
    """The suite's ``context_gate`` per provider (issue 16, ``evals/context_metrics.py``); empty without one."""

    @classmethod
    def from_runs(
        cls,
        suite_id: str,
        dataset_version: str,
        runs: Iterable[RunScore],
        cases: Iterable[Case] = (),
        review: ReviewCost | None = None,
    ) -> SuiteResult:
        """Aggregate ``runs`` (any order) into a result."""
        ordered = sorted(runs, key=_run_key)
        per_case: dict[tuple[str, str, str], list[RunScore]] = defaultdict(list)
        per_provider: dict[tuple[str, str], list[RunScore]] = defaultdict(list)
        for r in ordered:
            p = r.provenance
            per_case[(p.agent_version, p.provider, p.case_id)].append(r)
            per_provider[(p.agent_version, p.provider)].append(r)
        return cls(
            suite_id=suite_id,
            dataset_version=dataset_version,
            runs=ordered,
            by_case=[
                group_stats(rs, provider=pv, agent_version=v, case_id=c, review=review)
                for (v, pv, c), rs in per_case.items()
            ],
            by_provider=[
                group_stats(rs, provider=pv, agent_version=v, review=review)
                for (v, pv), rs in per_provider.items()
            ],
            cases={c.case_id: CaseMeta(tags=list(c.tags), why_it_exists=c.why_it_exists) for c in cases},
            review=review,
        )

    def select(
        self,
        *,
        provider: str | None = None,
        agent_version: str | None = None,
        cases: Collection[str] | None = None,
    ) -> SuiteResult:
        """The same result restricted to one provider, agent version and/or set of case ids (aggregates
        recomputed)."""
        keep = [
            r
            for r in self.runs
            if (provider is None or r.provenance.provider == provider)
            and (agent_version is None or r.provenance.agent_version == agent_version)
            and (cases is None or r.provenance.case_id in cases)
        ]
        out = SuiteResult.from_runs(self.suite_id, self.dataset_version, keep, review=self.review)
        return out.model_copy(update={"cases": dict(self.cases)})

    @property
    def providers(self) -> list[str]:
        return sorted({r.provenance.provider for r in self.runs})

    @property
    def agent_versions(self) -> list[str]:
        return sorted({r.provenance.agent_version for r in self.runs})

    def overall(self) -> GroupStats:
        """Statistics over every run (provider/agent_version ``*`` when mixed)."""
        prov = self.providers
        vers = self.agent_versions
        return group_stats(
            self.runs,
            provider=prov[0] if len(prov) == 1 else "*",
            agent_version=vers[0] if len(vers) == 1 else "*",
            review=self.review,
        )


def cold_start_line(groups: Sequence[GroupStats]) -> str:
    """One sentence for reports when latency figures leave cold starts out or, lacking warm runs, include
    them ("" when neither)."""
    left = sum(g.latency_cold_starts_left_out for g in groups)
    kept = [g for g in groups if g.latency_cold_starts_included]
    parts = []
    if left:
        parts.append(f"leave out {left} cold-start run{'s' if left != 1 else ''}")
    if kept:
        names = ", ".join(f"{g.provider} {g.agent_version}" for g in kept)
        parts.append(f"include the cold starts of {names} (no warm run to measure by)")
    if not parts:
        return ""
    return (
        f"Latency p50/p95 {' and '.join(parts)}: a provider's first run in its process also times the SDK's "
        "one-time start-up (imports, first-use set-up)."
    )
