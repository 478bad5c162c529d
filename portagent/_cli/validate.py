"""``portagent validate PATH…``: check spec files and folders; list every problem."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from portagent.contracts.providers import PROVIDERS


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "validate",
        help="check spec files (agents, tools, policies, suites, scripts)",
        description="Check spec files and folders. Exit 0 when all are valid, 1 when any "
        "is invalid (every problem is listed), 2 on usage errors.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="spec files or folders")
    p.add_argument(
        "--provider",
        choices=PROVIDERS,
        help="also fail when the agent needs something this provider cannot do",
    )
    p.add_argument(
        "--list-mcp",
        action="store_true",
        help="start the agents' MCP servers and list their tools, so policy rules naming them are checked "
        "exactly (default: the listing of the last run, if any)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="print problems only")


def run(args: argparse.Namespace) -> int:
    from portagent.runtime.validate import check_paths

    results = check_paths(args.paths, args.provider, list_mcp=args.list_mcp)
    bad = skipped = 0
    for r in results:
        if r.skipped:
            skipped += 1
            if not args.quiet:
                print(f"skipped  {r.path}: {r.skipped}")
        elif r.ok:
            if not args.quiet:
                print(f"ok       {r.path} ({r.kind})")
                for n in r.notes:
                    print(f"         note: {n}")
        else:
            bad += 1
            print(f"invalid  {r.path}", file=sys.stderr)
            for p in r.problems:
                print(f"  - {p.render()}", file=sys.stderr)
    total = len(results) - skipped
    summary = f"{total - bad} of {total} spec file{'s' if total != 1 else ''} valid"
    if skipped:
        summary += f" ({skipped} other file{'s' if skipped != 1 else ''} skipped: not specs)"
    if bad or not args.quiet:  # --quiet: problems only (a clean run prints nothing)
        print(summary, file=sys.stderr if bad else sys.stdout)
    return 1 if bad else 0
