"""``portagent report RESULTS [--html] [--md] [--junit] [--json]``: re-render a results folder's reports.

With no format flag every report is written (report.html, report.md, junit.xml, ci_gate.json);
the summary table is printed. The decision is made again with the settings eval.json recorded (the
baseline of ``eval --baseline`` or of the last ``gate`` into the folder, ``--strict``,
``--min-pass-rate``), so a re-render never changes it. Exit 0, or 2 when the folder is not a readable
results folder (or its runs' files are missing: the reports would show runs without their traces), or
when its recorded baseline is gone, unreadable or changed (nothing is written).
"""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="(re-)render the reports of a results folder",
        description="Render report.html (self-contained), report.md, junit.xml and ci_gate.json from "
        "a results folder written by 'portagent eval'.",
    )
    p.add_argument("results", metavar="RESULTS", help="results folder")
    p.add_argument("--html", action="store_true", help="report.html")
    p.add_argument("--md", action="store_true", help="report.md")
    p.add_argument("--junit", action="store_true", help="junit.xml")
    p.add_argument("--json", action="store_true", help="ci_gate.json and comparison.json")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from portagent.core.files import own_folder
    from portagent.evals.deciding import decide, recorded_gate
    from portagent.evals.report import load_results, write_reports
    from portagent.evals.report_terminal import console, print_summary

    formats = tuple(f for f in ("json", "md", "junit", "html") if getattr(args, f)) or (
        "json",
        "md",
        "junit",
        "html",
    )
    given = Path(args.results)
    folder = given.parent if given.is_file() else given
    if not folder.is_dir():
        load_results(given)  # the refusal that names what is missing (exit 2); nothing to own
    # this process owns the folder from the read to the last report written: an eval, record or report
    # writing it now is not mixed with (exit 2), and none starts in it before this one is done
    with own_folder(folder, "RESULTS"):
        results = load_results(given)
        baseline, min_pass_rate, strict = recorded_gate(results)
        decision, comparison = decide(results, baseline, min_pass_rate, strict=strict)
        written = write_reports(results, decision, comparison, formats)
    out = console()
    print_summary(results, decision, comparison, out=out)
    for path in written:
        out.print(f"wrote {path}", markup=False)
    return 0
