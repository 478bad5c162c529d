"""``portagent trace show|export|import``: read, export and import traces.

``trace import FILE [--out trace.jsonl] [--agent NAME]`` turns a foreign vcrpy cassette of OpenAI,
Anthropic or Gemini traffic into a normalized trace (docs/trace-import.md): JSONL on stdout, or
written to ``--out``. A file that is not a readable cassette of known vendor traffic exits 1
(RecordingError); a missing file exits 2.
"""

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
    imp = tsub.add_parser(
        "import", help="turn a foreign vcrpy cassette (OpenAI, Anthropic, Gemini) into a trace"
    )
    imp.add_argument("file", help="vcrpy cassette (.yaml or .json)")
    imp.add_argument("--out", metavar="FILE", help="write the trace here (default: JSONL on stdout)")
    imp.add_argument("--agent", metavar="NAME", help="agent name in the trace (default: the file's stem)")


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
    if args.trace_command == "import":
        return _import(args)
    return 2


def _import(args: argparse.Namespace) -> int:
    import os
    import sys
    from pathlib import Path

    from portagent.contracts.errors import UsageError
    from portagent.tracing.importer import import_cassette, trace_jsonl

    events = import_cassette(args.file, agent=args.agent)
    text = trace_jsonl(events)
    if not args.out:
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    tmp = out.with_name(out.name + ".tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"{args.out}: cannot write the trace ({e.strerror or e})") from None
    done = events[-1]
    unanswered = len(done.provider_details.get("calls_without_result", []))
    print(
        f"imported {args.file} -> {args.out}: {done.model_calls} model calls, {done.tool_calls} tool calls"
        f"{f' ({unanswered} without result)' if unanswered else ''}, status {done.status}"
    )
    return 0
