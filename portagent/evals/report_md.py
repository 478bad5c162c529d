"""Markdown summary of a results folder (for PR comments): verdict, per-provider table, comparison,
regressions to keep, and every failing case with its notes."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from portagent.evals.aggregate import cold_start_line
from portagent.evals.findings import CATEGORY_LABELS

if TYPE_CHECKING:
    from portagent.evals.compare import Comparison
    from portagent.evals.gate import GateDecision
    from portagent.evals.report import Results


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def fmt_num(x: float | None, spec: str = ".3g", unknown: str = "–") -> str:
    return unknown if x is None else format(x, spec)


def fmt_usd(x: float | None) -> str:
    return "–" if x is None else f"${x:.4f}"


def fmt_ms(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f} ms"


def fmt_pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def sources_line(results: Results) -> str:
    counts = Counter(r.provenance.label() for r in results.result.runs)
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def review_line(results: Results) -> str:
    """The human-review cost included in cost / accepted (empty when the suite gives no ``review``)."""
    r = results.result
    if r.review is None:
        return ""
    parts = [
        f"{g.provider} {g.agent_version}: {g.approvals} × {fmt_usd(r.review.per_approval_usd())} = "
        f"{fmt_usd(g.review_cost_usd)}"
        for g in sorted(r.by_provider, key=lambda g: (g.provider, g.agent_version))
    ]
    return (
        f"Human review in cost / accepted: {r.review.minutes_per_approval:g} min per approval at "
        f"${r.review.rate_per_hour:g}/h — " + "; ".join(parts)
    )


def role_of(results: Results, version: str) -> str:
    for a in results.agents:
        if a.version == version:
            return a.role
    return ""


def render_markdown(results: Results, decision: GateDecision, comparison: Comparison | None) -> str:
    from portagent.evals.report import finding_diffs

    r = results.result
    meta = results.meta
    lines = [f"# Eval `{r.suite_id}` (dataset {r.dataset_version})", ""]
    verdict = "PASS ✅" if decision.passed else "BLOCK ❌"
    lines.append(f"**Gate: {verdict}**" + (f" — {decision.verdict}" if decision.verdict else ""))
    lines.append("")
    facts = [f"{len(r.runs)} runs", f"provenance: {sources_line(results)}"]
    if meta:
        facts = [
            f"mode `{meta.mode}`",
            f"providers {', '.join(meta.providers)}",
            f"repeats {meta.repeats}",
            *facts,
        ]
    lines += [" · ".join(facts), ""]

    lines += [
        "## Pass rate by provider",
        "",
        "| provider | agent | passed | pass rate | Wilson 95 % | pass^k | flake | cost / accepted | "
        "latency p50 / p95 | tokens in / out |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in sorted(r.by_provider, key=lambda g: (g.provider, g.agent_version)):
        k = max(g.pass_hat_k) if g.pass_hat_k else None
        role = role_of(results, g.agent_version)
        lines.append(
            f"| {g.provider} | {g.agent_version}{f' ({role})' if role else ''} | {g.passed}/{g.runs} | "
            f"{fmt_pct(g.pass_rate)} | [{g.wilson_low:.3f}, {g.wilson_high:.3f}] | "
            f"{'–' if k is None else f'{g.pass_hat_k[k]:.2f} (k={k})'} | {fmt_pct(g.flake_rate)} | "
            f"{fmt_usd(g.cost_per_accepted_task_usd)} | {fmt_ms(g.latency_p50_ms)} / {fmt_ms(g.latency_p95_ms)} | "
            f"{g.usage.input_tokens} / {g.usage.output_tokens} |"
        )
    lines.append("")
    cold = cold_start_line(r.by_provider)
    if cold:
        lines += [cold, ""]
    review = review_line(results)
    if review:
        lines += [review, ""]
    from portagent.evals.judging import judging_markdown  # graders' verdicts, apart from the agent's cost

    lines += judging_markdown(r.judging, r.runs)
    if r.context:  # the suite's context_gate (issue 16, docs/context.md)
        from portagent.evals.context_metrics import context_line

        lines += ["## Context tokens (baseline → candidate)", ""]
        lines += [f"- {context_line(c)}" for c in r.context] + [""]

    if decision.reasons:
        lines += ["## Why the gate blocks", ""]
        if decision.blocked_by:
            lines += ["Blocked by: " + ", ".join(CATEGORY_LABELS[c] for c in decision.blocked_by), ""]
        lines += [f"- {_cell(x)}" for x in decision.reasons]
        lines.append("")
    if decision.fixes:
        lines += ["Re-record the drifted runs (a stale recording, not the agent):", "", "```bash"]
        lines += list(decision.fixes)
        lines += ["```", ""]
    if decision.warnings:
        lines += ["<details><summary>Warnings</summary>", ""]
        lines += [f"- {_cell(x)}" for x in decision.warnings]
        lines += ["", "</details>", ""]

    if comparison is not None:
        lines += [
            f"## Comparison: {comparison.baseline_label} → {comparison.candidate_label}",
            "",
            "| pair | metric | baseline | candidate | Δ | rule | blocks |",
            "|---|---|---|---|---|---|---|",
        ]
        for pair in comparison.pairs:
            for d in pair.deltas:
                lines.append(
                    f"| {pair.pair} | {d.metric} | {fmt_num(d.baseline)} | {fmt_num(d.candidate)} | "
                    f"{'–' if d.delta is None else f'{d.delta:+g}'} | {_cell(d.rule) or '–'} | "
                    f"{'**yes**' if d.blocking else ''} |"
                )
        lines.append("")
        diverged = [(p.pair, c) for p in comparison.pairs for c in p.cases if c.divergence]
        if diverged:
            lines += [
                "### Trajectory differences",
                "",
                "| pair | case | status | category | first divergence |",
                "|---|---|---|---|---|",
            ]
            lines += [
                f"| {pair} | {c.case_id} | {c.status} | "
                f"{CATEGORY_LABELS[c.category] if c.category else ''} | {_cell(c.divergence)} |"
                for pair, c in diverged
            ]
            lines.append("")
    if decision.regressions:
        lines += [
            "## Regressions to keep in the dataset",
            "",
            "| case | pair | factors | permanent | why it exists |",
            "|---|---|---|---|---|",
        ]
        for reg in decision.regressions:
            lines.append(
                f"| {reg.case_id} | {reg.pair} | {', '.join(reg.factors)} | {'yes' if reg.permanent else 'no'} | "
                f"{_cell(reg.why_it_exists)} |"
            )
        lines.append("")

    diffs = finding_diffs(results, decision)
    if diffs:
        lines += ["## Trace diffs (baseline → candidate, every regression and drift)", ""]
        for heading, d in diffs:
            lines += [
                f"<details><summary>{_cell(heading)}</summary>",
                "",
                "```text",
                d.render("baseline", "candidate"),
                "```",
                "",
                "</details>",
                "",
            ]

    failing = [g for g in r.by_case if g.passed < g.runs]
    lines += ["## Failing cases", ""]
    if not failing:
        lines += ["None: every run passed.", ""]
    else:
        lines += [
            "| agent | case | provider | passed | failed factors | notes |",
            "|---|---|---|---|---|---|",
        ]
        for g in sorted(failing, key=lambda g: (g.agent_version, g.case_id or "", g.provider)):
            runs = [
                x
                for x in r.runs
                if (x.provenance.case_id, x.provenance.provider, x.provenance.agent_version)
                == (g.case_id, g.provider, g.agent_version)
            ]
            bad = next(x for x in runs if not x.passed)
            lines.append(
                f"| {g.agent_version} | {g.case_id} | {g.provider} | {g.passed}/{g.runs} | "
                f"{', '.join(bad.failed_factors)} | {_cell('; '.join(bad.notes))} |"
            )
        lines.append("")
    if meta and meta.errors:
        lines += ["## Runs that could not be made", ""]
        lines += [f"- {_cell(e)}" for e in meta.errors[:50]]
        lines.append("")
    return "\n".join(lines)
