"""``portagent trace show FILE``: a readable timeline of a trace."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("trace", help="show, export or import traces")
    tsub = p.add_subparsers(dest="trace_command", metavar="ACTION", required=True)
    show = tsub.add_parser("show", help="print a readable timeline of a trace.jsonl")
    show.add_argument("file", help="trace.jsonl")


def run(args: argparse.Namespace) -> int:
    if args.trace_command == "show":
        from portagent.tracing.timeline import load_trace_file, render_timeline

        print(render_timeline(load_trace_file(args.file)))
        return 0
    return 2
