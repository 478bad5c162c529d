"""The terminal summary (rich): providers × agent versions, the gate verdict and its reasons."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from portagent.evals.aggregate import cold_start_line
from portagent.evals.findings import CATEGORY_LABELS
from portagent.evals.report_md import fmt_ms, fmt_pct, fmt_usd, review_line, role_of, sources_line
from portagent.evals.tool_versions import UNJUDGED_PREFIX, UNVERSIONED_PREFIX

if TYPE_CHECKING:
    from portagent.evals.compare import Comparison
    from portagent.evals.gate import GateDecision
    from portagent.evals.report import Results


def console(stderr: bool = False) -> Any:
    """A rich console; plain text (no colour codes, wide enough for the table) when not a terminal."""
    from rich.console import Console

    c = Console(stderr=stderr, highlight=False)
    if not c.is_terminal:
        c = Console(stderr=stderr, highlight=False, width=max(c.width, 140), no_color=True)
    return c


def summary_table(results: Results) -> Any:
    """Rows: providers; column groups: agent versions (pass rate, Wilson interval, cost, latency)."""
    from rich.table import Table

    r = results.result
    by = {(g.provider, g.agent_version): g for g in r.by_provider}
    table = Table(
        title=f"{r.suite_id} · dataset {r.dataset_version} · {sources_line(results)}",
        title_justify="left",
        show_lines=False,
    )
    table.add_column("provider", style="bold")
    for v in r.agent_versions:
        role = role_of(results, v)
        label = f"{v} ({role})" if role else v
        table.add_column(f"{label}\npassed", justify="right")
        table.add_column("Wilson 95 %", justify="right")
        table.add_column("cost/accepted", justify="right")
        table.add_column("latency p95", justify="right")
    for p in r.providers:
        row = [p]
        for v in r.agent_versions:
            g = by.get((p, v))
            if g is None:
                row += ["–", "", "", ""]
                continue
            colour = "green" if g.passed == g.runs else "red"
            row += [
                f"[{colour}]{g.passed}/{g.runs} {fmt_pct(g.pass_rate)}[/{colour}]",
                f"[{g.wilson_low:.2f}, {g.wilson_high:.2f}]",
                fmt_usd(g.cost_per_accepted_task_usd),
                fmt_ms(g.latency_p95_ms),
            ]
        table.add_row(*row)
    return table


def print_summary(
    results: Results,
    decision: GateDecision,
    comparison: Comparison | None,
    *,
    out: Any = None,
    max_reasons: int = 12,
) -> None:
    c = out or console()
    c.print(summary_table(results))
    if review := review_line(results):
        c.print(review, highlight=False, markup=False)
    if cold := cold_start_line(results.result.by_provider):
        c.print(cold, highlight=False, markup=False)
    if comparison is not None:
        c.print(f"comparison: {comparison.verdict}")
    if results.result.context:  # the suite's context_gate (issue 16)
        from portagent.evals.context_metrics import context_line

        for saving in results.result.context:
            c.print(f"context: {context_line(saving)}", markup=False, highlight=False)
    if decision.passed:
        c.print(
            "[bold green]gate: PASS[/bold green]" + (f" — {decision.verdict}" if decision.verdict else "")
        )
    else:
        c.print("[bold red]gate: BLOCK[/bold red]" + (f" — {decision.verdict}" if decision.verdict else ""))
        for reason in decision.reasons[:max_reasons]:
            c.print(f"  • {reason}", markup=False)
        if len(decision.reasons) > max_reasons:
            c.print(f"  … and {len(decision.reasons) - max_reasons} more (report.md, ci_gate.json)")
    if decision.blocked_by:
        labels = ", ".join(CATEGORY_LABELS[c] for c in decision.blocked_by)
        c.print(f"blocked by: {labels}", markup=False)
    for w in decision.warnings:  # a tool changed without a version bump (issue 15): always shown
        if w.startswith((UNVERSIONED_PREFIX, UNJUDGED_PREFIX)):
            c.print(f"warning: {w}", markup=False)
    for fix in decision.fixes:
        c.print(f"re-record the drifted runs (a stale recording, not the agent): {fix}", markup=False)
    if decision.regressions:
        keep = sorted({(g.case_id, g.permanent) for g in decision.regressions})
        c.print(
            "regressions to keep: "
            + ", ".join(f"{cid}{' (permanent)' if perm else ''}" for cid, perm in keep),
            markup=False,
        )
    meta = results.meta
    if meta and meta.errors:
        c.print(f"[yellow]{len(meta.errors)} run(s) could not be made or failed outright[/yellow], e.g.:")
        for err in meta.errors[:3]:
            # long enough for a run stopped at its time limit to say where it was stuck (eval_stuck)
            line = err.splitlines()[0]
            c.print(f"  • {line if len(line) <= 480 else line[:479] + '…'}", markup=False)
