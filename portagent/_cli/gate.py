"""``portagent gate RESULTS [--baseline RESULTS | --no-baseline] [--min-pass-rate X] [--strict]``: pass or
block, for CI.

Writes ``ci_gate.json`` into the results folder (or ``--out FILE``) and exits 0 (pass), 1 (block) or 3
(block on provider and run errors alone), printing every reason. A setting not given on the command line
is the one the folder's decision was made with (eval.json ``gate``: ``eval --baseline``, ``--strict``,
``--min-pass-rate``, or the last ``gate`` into the folder), so ``eval --baseline B --out R`` followed by
``gate R`` decides as the eval did, never more leniently; ``--no-baseline`` judges the result alone. With
no baseline at all, a results folder holding a baseline and a candidate (``eval.json`` roles) gates the
candidate against the baseline; otherwise the result is judged on its own. Writing into the folder's own
``ci_gate.json`` records the settings in its eval.json, so ``portagent report`` re-renders that decision,
and renders again the reports the folder holds (report.md, junit.xml, report.html), so none of them says
something else than ci_gate.json.
Exit 2 on usage errors (unreadable results or results missing run files, a recorded baseline gone or
changed, different dataset versions, a rate outside [0, 1]): nothing was judged, so it is neither a pass
nor a block.
"""

from __future__ import annotations

import argparse
from typing import Any

_RENDERED = {"md": "report.md", "junit": "junit.xml", "html": "report.html"}
"""The reports a results folder may hold beside ci_gate.json, by ``write_reports`` format."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "gate",
        help="decide whether a result may advance (exit 0 pass, 1 block)",
        description="Gate an eval result: every case must pass (or --min-pass-rate of its runs), no "
        "permission violation, flake rate ≤ 0.03, and with a baseline no blocking delta "
        "and no regression. Settings not given are the ones the folder's decision was made with "
        "(eval.json). Writes ci_gate.json. Exit 0 pass, 1 block, 2 usage error, 3 blocked on provider "
        "or run errors alone.",
    )
    p.add_argument("results", metavar="RESULTS", help="results folder (or its report.json)")
    p.add_argument(
        "--baseline",
        metavar="RESULTS",
        help="results the candidate must not be worse than (default: the baseline eval recorded, if any)",
    )
    p.add_argument(
        "--no-baseline",
        action="store_true",
        help="judge RESULTS on its own, even when its eval recorded a baseline",
    )
    p.add_argument(
        "--min-pass-rate", type=float, metavar="X", help="share of runs each case must pass (default 1.0)"
    )
    p.add_argument(
        "--out", metavar="FILE", help="where to write the decision (default: RESULTS/ci_gate.json)"
    )
    p.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a tool changed without a version bump blocks (default: as recorded, else a warning)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from portagent.contracts.errors import UsageError
    from portagent.core.files import own_folder

    if args.min_pass_rate is not None and not 0.0 <= args.min_pass_rate <= 1.0:
        raise UsageError(f"--min-pass-rate must be between 0 and 1, got {args.min_pass_rate:g}")
    if args.baseline and args.no_baseline:
        raise UsageError("--baseline and --no-baseline contradict each other: give one")
    given = Path(args.results)
    folder = given.parent if given.is_file() else given
    if not folder.is_dir() or (args.out and Path(args.out).resolve().parent != folder.resolve()):
        return _gate(args)  # nothing written into RESULTS (or a refusal naming what is missing): no owner
    # written into RESULTS (its ci_gate.json, its reports rendered again): owned from the read to the last
    # write, as eval, record and report own theirs — a writer there now is refused (exit 2), not mixed with
    with own_folder(folder, "RESULTS"):
        return _gate(args)


def _gate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from portagent.evals.deciding import decide, gate_settings, record_gate, recorded_gate
    from portagent.evals.report import load_results, write_json, write_reports
    from portagent.evals.report_terminal import console

    results = load_results(args.results)
    out = console()
    recorded = results.meta.gate if results.meta is not None else None
    # what is not given is what the folder's decision was made with: a plain `gate R` after
    # `eval --baseline B --out R` must not judge R alone and turn the eval's BLOCK into a PASS
    baseline = None
    kept: list[str] = []
    if args.baseline:
        baseline = load_results(args.baseline)
    elif not args.no_baseline and recorded is not None and recorded.baseline is not None:
        baseline = recorded_gate(results)[0]
        kept.append(f"baseline {recorded.baseline}")
    min_pass_rate = args.min_pass_rate
    if min_pass_rate is None and recorded is not None and recorded.min_pass_rate is not None:
        min_pass_rate = recorded.min_pass_rate
        kept.append(f"--min-pass-rate {min_pass_rate:g}")
    strict = args.strict
    if strict is None:
        strict = recorded.strict if recorded is not None else False
        if strict:
            kept.append("--strict")
    if kept:
        out.print(
            f"gating with the settings recorded in {results.folder}/eval.json: {', '.join(kept)}",
            markup=False,
        )
    decision, comparison = decide(results, baseline, min_pass_rate, strict=strict)
    target = Path(args.out) if args.out else results.folder / "ci_gate.json"
    if target.resolve() == (results.folder / "ci_gate.json").resolve():
        settings = gate_settings(results.folder, baseline, min_pass_rate, strict=strict)
        results = record_gate(results, settings)
        # the folder's other reports say what its ci_gate.json says: the ones there are rendered again
        present = tuple(f for f, name in _RENDERED.items() if (results.folder / name).is_file())
        written = write_reports(results, decision, comparison, ("json", *present))
    else:
        written = [write_json(target, decision)]
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
    for path in written:
        out.print(f"wrote {path}", markup=False)
    from portagent.evals.github import report_to_github

    report_to_github(decision, results)  # GITHUB_ACTIONS=true: annotations + job summary
    return decision.exit_code
