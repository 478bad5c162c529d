"""``portagent port-check AGENT --to openai|adk|claude [--json]``: what the spec needs that the target lacks,
and the portability ratio with the list that makes it up. Exit 0 when portable, 1 when not (or the
spec is invalid), 2 on usage errors."""

from __future__ import annotations

import argparse
from typing import Any

from portagent.contracts.providers import PROVIDERS


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "port-check",
        help="what an agent spec needs that a provider lacks; its portability ratio",
        description="Check an agent spec against one provider before running it: capability flags, "
        "delegation kinds and cycles, built-in tools, output schema, Gemini schema limits, "
        "model ids; plus the portability ratio own contracts / (own contracts + "
        "provider-specific dependencies). Exit 0 when portable, 1 when not, 2 on usage "
        "errors.",
    )
    p.add_argument("agent", help="agent spec file")
    p.add_argument("--to", dest="target", required=True, choices=PROVIDERS, help="target provider")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from portagent.contracts.bundle import load_agent
    from portagent.contracts.errors import UsageError
    from portagent.migration.portcheck import port_check

    if not Path(args.agent).is_file():
        raise UsageError(f"{args.agent}: agent spec not found")
    result = port_check(load_agent(args.agent), args.target)
    print(json.dumps(result.to_json(), indent=2, ensure_ascii=False) if args.json else result.render())
    return 0 if result.portable else 1
