"""``portagent gate RESULTS [--baseline RESULTS] [--min-pass-rate X]``: pass or block, for CI.

Writes ``ci_gate.json`` into the results folder (or ``--out FILE``) and exits 0 (pass) or 1 (block),
printing every reason. Without ``--baseline``, a results folder holding a baseline and a candidate
(``eval.json`` roles) gates the candidate against the baseline; otherwise the result is judged on its
own. Writing into the folder's own ``ci_gate.json`` records the settings in its eval.json (baseline,
``--strict``, ``--min-pass-rate``), so ``portagent report`` re-renders that decision. Exit 2 on usage errors (unreadable results or results missing run files, different dataset
versions, a rate outside [0, 1]): nothing was judged, so it is neither a pass nor a block.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "gate",
        help="decide whether a result may advance (exit 0 pass, 1 block)",
        description="Gate an eval result: every case must pass (or --min-pass-rate of its runs), no "
        "permission violation, flake rate ≤ 0.03, and with a baseline no blocking delta "
        "and no regression. Writes ci_gate.json. Exit 0 pass, 1 block, 2 usage error.",
    )
    p.add_argument("results", metavar="RESULTS", help="results folder (or its report.json)")
    p.add_argument("--baseline", metavar="RESULTS", help="results the candidate must not be worse than")
    p.add_argument(
        "--min-pass-rate", type=float, metavar="X", help="share of runs each case must pass (default 1.0)"
    )
    p.add_argument(
        "--out", metavar="FILE", help="where to write the decision (default: RESULTS/ci_gate.json)"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="a tool changed without a version bump blocks (default: a warning)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from portagent.contracts.errors import UsageError
    from portagent.evals.report import decide, gate_settings, load_results, record_gate, write_json
    from portagent.evals.report_terminal import console

    if args.min_pass_rate is not None and not 0.0 <= args.min_pass_rate <= 1.0:
        raise UsageError(f"--min-pass-rate must be between 0 and 1, got {args.min_pass_rate:g}")
    results = load_results(args.results)
    baseline = load_results(args.baseline) if args.baseline else None
    decision, _ = decide(results, baseline, args.min_pass_rate, strict=args.strict)
    target = Path(args.out) if args.out else results.folder / "ci_gate.json"
    write_json(target, decision)
    if target.resolve() == (results.folder / "ci_gate.json").resolve():
        settings = gate_settings(results.folder, baseline, args.min_pass_rate, strict=args.strict)
        results = record_gate(results, settings)
    out = console()
    if decision.passed:
        out.print(
            "[bold green]gate: PASS[/bold green]" + (f" — {decision.verdict}" if decision.verdict else "")
        )
    else:
        out.print("[bold red]gate: BLOCK[/bold red]" + (f" — {decision.verdict}" if decision.verdict else ""))
        for reason in decision.reasons:
            out.print(f"  • {reason}", markup=False)
    for w in decision.warnings:
        out.print(f"  warning: {w}", markup=False)
    out.print(f"wrote {target}", markup=False)
    from portagent.evals.github import report_to_github

    report_to_github(decision, results)  # GITHUB_ACTIONS=true: annotations + job summary
    return decision.exit_code
