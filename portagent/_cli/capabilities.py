"""``portagent capabilities [--json]``: what each provider can do, with the SDK/CLI versions installed."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "capabilities",
        help="the capability matrix of the providers, with installed versions",
        description="Print each provider's capability flags (handoffs, cycles, structured output, "
        "sessions, streaming, MCP, vendor cost, built-in tools, approval resume …) in two columns — what "
        "the SDK offers, what portagent uses of it — and the installed SDK and CLI versions ('not "
        "installed' when missing). --json carries both (capabilities, portagent_uses). Exit 0.",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    import json

    from portagent.migration.capabilities import matrix, render_table

    data = matrix()
    print(json.dumps(data, indent=2, sort_keys=False) if args.json else render_table(data))
    return 0
