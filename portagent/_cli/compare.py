"""``portagent compare RESULTS_A RESULTS_B``: baseline (A) vs candidate (B) on the same dataset version.

Prints the deltas with their tolerances, per-case trajectory divergences and the regressions to
keep; ``--out FILE`` writes the comparison JSON. Exit 0 when B can replace A, 1 when it cannot, 2 on
usage errors (different suites or dataset versions, unreadable results).
"""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two eval results (baseline vs candidate)",
        description="Compare two results folders of the same suite and dataset_version: two agent "
        "versions or two providers. Exit 0 when the candidate (B) can replace the "
        "baseline (A), 1 when it cannot, 2 on usage errors.",
    )
    p.add_argument("baseline", metavar="RESULTS_A", help="baseline results folder (or its report.json)")
    p.add_argument("candidate", metavar="RESULTS_B", help="candidate results folder (or its report.json)")
    p.add_argument("--provider", help="compare only this provider on both sides")
    p.add_argument(
        "--baseline-version",
        metavar="V",
        help="the agent version of RESULTS_A to compare (needed when it holds several, as an eval of "
        "two versions does)",
    )
    p.add_argument("--candidate-version", metavar="V", help="the agent version of RESULTS_B to compare")
    p.add_argument("--out", metavar="FILE", help="write the comparison JSON here")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from portagent.evals.compare import compare
    from portagent.evals.report import load_results, write_json
    from portagent.evals.report_terminal import console

    # The summaries alone: unlike gate, compare reads no run's files.
    a, b = load_results(args.baseline, need_runs=False), load_results(args.candidate, need_runs=False)
    base, cand = a.result, b.result
    if args.provider:
        for label, side in ((args.baseline, base), (args.candidate, cand)):
            _has(label, side.providers, "--provider", args.provider, "providers")
        base, cand = base.select(provider=args.provider), cand.select(provider=args.provider)
    base = _one_version(args.baseline, base, "--baseline-version", args.baseline_version)
    cand = _one_version(args.candidate, cand, "--candidate-version", args.candidate_version)
    comparison = compare(base, cand)
    out = console()
    _print(out, comparison)
    if args.out:
        write_json(Path(args.out), comparison)
        out.print(f"wrote {args.out}", markup=False)
    return 0 if comparison.passed else 1


def _has(label: str, present: list[str], option: str, value: str, what: str) -> None:
    from portagent.contracts.errors import UsageError

    if value not in present:  # a typo would compare nothing, and "pass"
        raise UsageError(
            f"{option} {value}: {label} has no runs of it (its {what}: {', '.join(present) or 'none'})"
        )


def _one_version(label: str, side: Any, option: str, version: str | None) -> Any:
    """The side narrowed to one agent version. A side holding several (an eval of two versions) would
    pool them into one mean — ``compare R R`` of such a folder compared the pool with itself and said
    "can replace" — so it needs ``option``."""
    from portagent.contracts.errors import UsageError

    if version is not None:
        _has(label, side.agent_versions, option, version, "agent versions")
        return side.select(agent_version=version)
    if len(side.agent_versions) > 1:
        raise UsageError(
            f"{label} holds agent versions {', '.join(side.agent_versions)}: pick the one to compare with "
            f"{option} V (a mean over several versions measures none of them)"
        )
    return side


def _print(out: Any, c: Any) -> None:
    from rich.table import Table

    out.print(
        f"{c.suite_id} · dataset {c.dataset_version}: baseline {c.baseline_label} → candidate "
        f"{c.candidate_label}",
        markup=False,
    )
    table = Table(show_lines=False)
    for col in ("pair", "metric", "baseline", "candidate", "Δ", "rule", ""):
        table.add_column(col)
    for pair in c.pairs:
        for d in pair.deltas:
            table.add_row(
                pair.pair,
                d.metric,
                "–" if d.baseline is None else f"{d.baseline:g}",
                "–" if d.candidate is None else f"{d.candidate:g}",
                "–" if d.delta is None else f"{d.delta:+g}",
                d.rule or "–",
                "[red]blocks[/red]" if d.blocking else "",
            )
    out.print(table)
    for pair in c.pairs:
        for case in pair.cases:
            if case.divergence and case.status != "unchanged":
                out.print(f"  {pair.pair} {case.case_id} ({case.status}): {case.divergence}", markup=False)
    for g in c.regressions:
        out.print(
            f"  regression to keep: {g.case_id} on {g.pair} ({', '.join(g.factors)})"
            + (" — permanent" if g.permanent else ""),
            markup=False,
        )
    colour = "green" if c.passed else "red"
    out.print(f"[bold {colour}]{c.verdict}[/bold {colour}]")
    for r in c.reasons:
        out.print(f"  • {r}", markup=False)
