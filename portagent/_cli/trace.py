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
    dest.add_argument("--otel-json", metavar="FILE", help="write OTLP/JSON to FILE (offline)")
    dest.add_argument(
        "--otlp-endpoint", metavar="URL", help="send with the OTLP exporter to URL (OTLP/HTTP: …/v1/traces)"
    )
    export.add_argument(
        "--otlp-protocol",
        choices=["http/protobuf", "grpc"],
        default="http/protobuf",
        help="OTLP transport (default http/protobuf; grpc needs portagent[otel-grpc])",
    )
    export.add_argument(
        "--otlp-header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="header sent with the export, e.g. an API key (repeatable)",
    )
    export.add_argument(
        "--otlp-timeout", type=float, default=10.0, metavar="SECONDS", help="give up after this long (10)"
    )
    export.add_argument(
        "--include-content",
        action="store_true",
        help="also export inputs, outputs, tool arguments and results (secrets masked)",
    )
    diff = tsub.add_parser(
        "diff",
        help="diff two traces: aligned trajectories and final output (exit 0 equivalent, 1 different)",
    )
    diff.add_argument("a", metavar="A", help="trace.jsonl, or a run folder holding one")
    diff.add_argument("b", metavar="B", help="trace.jsonl, or a run folder holding one")
    diff.add_argument("--json", action="store_true", help="print the diff as JSON")
    imp = tsub.add_parser(
        "import", help="turn a foreign vcrpy cassette (OpenAI, Anthropic, Gemini) into a trace"
    )
    imp.add_argument("file", help="vcrpy cassette (.yaml or .json)")
    imp.add_argument("--out", metavar="FILE", help="write the trace here (default: JSONL on stdout)")
    imp.add_argument("--agent", metavar="NAME", help="agent name in the trace (default: the file's stem)")


def run(args: argparse.Namespace) -> int:
    if args.trace_command == "show":
        from portagent.tracing.timeline import load_trace_file, render_timeline

        print(render_timeline(load_trace_file(args.file, allow_empty=False)))
        return 0
    if args.trace_command == "export":
        return _export(args)
    if args.trace_command == "import":
        return _import(args)
    if args.trace_command == "diff":
        return _diff(args)
    return 2


def _diff(args: argparse.Namespace) -> int:
    import json

    from portagent.tracing.diff import diff_traces, load_trace_or_run

    a, b = load_trace_or_run(args.a), load_trace_or_run(args.b)
    result = diff_traces(a, b)
    if args.json:
        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        print(result.render(args.a, args.b))
    return result.exit_code


def _headers(pairs: list[str]) -> dict[str, str]:
    from portagent.contracts.errors import UsageError

    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or any(c in name for c in " :\r\n") or any(c in value for c in "\r\n"):
            raise UsageError(f"--otlp-header {name.strip() or pair[:20]!r}…: expected NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def _export(args: argparse.Namespace) -> int:
    from portagent.contracts.errors import UsageError
    from portagent.tracing.otel import build_spans
    from portagent.tracing.otlp import send_otlp, write_otlp_json
    from portagent.tracing.timeline import load_trace_file

    headers = _headers(args.otlp_header)
    if headers and not args.otlp_endpoint:
        raise UsageError("--otlp-header goes with --otlp-endpoint")
    if not args.otlp_timeout > 0:
        raise UsageError("--otlp-timeout must be a positive number of seconds")
    events = load_trace_file(args.file, allow_empty=False)
    spans = build_spans(events, include_content=args.include_content)
    if args.otel_json:
        write_otlp_json(spans, args.otel_json)
        print(f"exported {len(spans)} spans to {args.otel_json}")
        return 0
    send_otlp(
        spans, args.otlp_endpoint, protocol=args.otlp_protocol, headers=headers, timeout=args.otlp_timeout
    )
    print(f"exported {len(spans)} spans to {args.otlp_endpoint} ({args.otlp_protocol})")
    return 0


def _import(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from portagent.tracing.importer import import_cassette, trace_jsonl

    events = import_cassette(args.file, agent=args.agent)
    text = trace_jsonl(events)
    if not args.out:
        sys.stdout.write(text)
        return 0
    from portagent.core.files import write_text_atomic

    write_text_atomic(Path(args.out), text)
    done = events[-1]
    unanswered = len(done.provider_details.get("calls_without_result", []))
    print(
        f"imported {args.file} -> {args.out}: {done.model_calls} model calls, {done.tool_calls} tool calls"
        f"{f' ({unanswered} without result)' if unanswered else ''}, status {done.status}"
    )
    return 0
