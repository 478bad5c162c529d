"""``portagent trace show FILE``: a readable timeline of a trace."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("trace", help="show, export or import traces")
    tsub = p.add_subparsers(dest="trace_command", metavar="ACTION", required=True)
    show = tsub.add_parser("show", help="print a readable timeline of a trace.jsonl")
    show.add_argument("file", help="trace.jsonl")
    export = tsub.add_parser("export", help="export a trace as OpenTelemetry spans (GenAI conventions)")
    export.add_argument("file", help="trace.jsonl")
    dest = export.add_mutually_exclusive_group(required=True)
    dest.add_argument("--otel-json", metavar="FILE", help="write OTLP/JSON to FILE")
    dest.add_argument("--otlp-endpoint", metavar="URL", help="POST OTLP/JSON to URL (/v1/traces)")


def run(args: argparse.Namespace) -> int:
    if args.trace_command == "show":
        from portagent.tracing.timeline import load_trace_file, render_timeline

        print(render_timeline(load_trace_file(args.file)))
        return 0
    if args.trace_command == "export":
        from portagent.tracing.otel import OtlpJsonExporter, export_spans
        from portagent.tracing.timeline import load_trace_file

        events = load_trace_file(args.file)
        exporter = OtlpJsonExporter(path=args.otel_json, endpoint=args.otlp_endpoint)
        n = export_spans(events, exporter)
        print(f"exported {n} spans to {args.otel_json or args.otlp_endpoint}")
        return 0
    return 2
