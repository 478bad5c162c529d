"""``portagent schema [--out DIR] | --kind KIND | --example KIND``: JSON Schemas of the spec files for editors.

``--out DIR`` (default ``./schemas``) writes one schema per kind (``agent.schema.json`` …) and
``portagent.schema.json``, one combined schema that works out the kind from the file's ``kind:`` — the
one to name in a ``# yaml-language-server: $schema=…`` line, whatever the file's kind.
``--example KIND`` prints a small valid file of that kind, starting with that line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

COMBINED = "portagent.schema.json"
"""The combined schema's file name (written beside the per-kind ones; ``migration.writer`` names it too)."""
DEFAULT_REF = f"schemas/{COMBINED}"
"""Where ``portagent schema`` puts the combined schema by default (relative to where it ran)."""
MODELINE = "# yaml-language-server: $schema="


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "schema",
        help="write JSON Schemas of the spec file kinds (and one combined schema for editors)",
        description="Write one JSON Schema per spec kind (agent, tool, tools, policy, suite, "
        f"emulator-script, run) and {COMBINED}, which picks the kind from the file's `kind:`, so "
        f"editors can complete spec files: start a file with `{MODELINE}{DEFAULT_REF}`.",
    )
    p.add_argument("--out", default="schemas", help="output folder (default: ./schemas)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--kind", help="print one kind's schema to stdout instead")
    what.add_argument(
        "--example", metavar="KIND", help="print a small valid spec file of KIND (with the $schema line)"
    )
    p.add_argument(
        "--schema-ref",
        metavar="PATH|URL",
        help=f"--example: the $schema the file names (default: {DEFAULT_REF})",
    )


def schema_for(kind: str) -> dict[str, Any]:
    from portagent.contracts.loader import model_for_kind

    schema = model_for_kind(kind).model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://portagent.dev/schemas/{kind}.schema.json"
    return schema


def _def_name(kind: str) -> str:
    return "kind_" + kind.replace("-", "_")


def combined_schema(kinds: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """One schema for every spec file: ``kind:`` selects the kind's schema (if/then per kind). Each
    kind's own ``$defs`` are hoisted with a ``<kind>__`` prefix so the document is self-contained."""
    from portagent.contracts.loader import KINDS

    kinds = kinds or {k: schema_for(k) for k in KINDS}
    defs: dict[str, Any] = {}
    branches = []
    for kind, schema in kinds.items():
        prefix = f"{_def_name(kind)}__"

        def rewrite(node: Any, prefix: str = prefix) -> Any:
            if isinstance(node, dict):
                out = {k: rewrite(v) for k, v in node.items()}
                ref = out.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/$defs/"):
                    out["$ref"] = "#/$defs/" + prefix + ref[len("#/$defs/") :]
                return out
            if isinstance(node, list):
                return [rewrite(x) for x in node]
            return node

        body = {k: v for k, v in schema.items() if k not in ("$schema", "$id", "$defs")}
        for name, sub in (schema.get("$defs") or {}).items():
            defs[prefix + name] = rewrite(sub)
        defs[_def_name(kind)] = rewrite(body)
        branches.append(
            {
                "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
                "then": {"$ref": f"#/$defs/{_def_name(kind)}"},
            }
        )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://portagent.dev/schemas/{COMBINED}",
        "title": "portagent spec file",
        "description": "Any portagent spec file: `kind:` picks the schema (agent, tool, tools, policy, suite, "
        "emulator-script, run).",
        "type": "object",
        "required": ["kind"],
        "properties": {"kind": {"enum": list(kinds), "description": "What this file is."}},
        "allOf": branches,
        "$defs": defs,
    }


EXAMPLES: dict[str, str] = {
    "agent": """kind: agent
schema_version: 1
name: my_agent
version: 1.0.0
description: What this agent is for, in one line.
instructions: |
  You answer questions about orders. Say when you do not know.
models:
  openai: gpt-4.1-mini
  claude: claude-sonnet-4-6
  adk: gemini-2.5-flash
budget:
  max_turns: 8
  max_tool_calls: 6
  timeout_s: 60
""",
    "tool": """kind: tool
schema_version: 1
name: lookup_order
version: 1.0.0
description: Read one order by its id.
effect: read
input_schema:
  type: object
  properties:
    order_id: {type: string, pattern: "^ORD-[0-9]+$"}
  required: [order_id]
  additionalProperties: false
handler: my_handlers:lookup_order
""",
    "tools": """kind: tools
schema_version: 1
tools:
  - name: lookup_order
    version: 1.0.0
    description: Read one order by its id.
    effect: read
    input_schema:
      type: object
      properties:
        order_id: {type: string, pattern: "^ORD-[0-9]+$"}
      required: [order_id]
      additionalProperties: false
    handler: my_handlers:lookup_order
""",
    "policy": """kind: policy
schema_version: 1
name: my-policy
version: "1"
rules:
  - id: no-bulk-refunds
    decision: deny
    reason: refunds above 500 EUR go through finance
    tool: issue_refund
    when: [{arg: amount_eur, min: 500.01}]
""",
    "suite": """kind: suite
schema_version: 1
suite_id: my-suite
dataset_version: "1"
owner: my-team
agent: agent.yaml
providers: [openai]
cases:
  - case_id: greeting
    input: "Hello!"
    why_it_exists: the agent answers without calling tools
    expect: {forbidden_tools: [], final_must_contain: []}
""",
    "emulator-script": """kind: emulator-script
schema_version: 1
name: my-script
conversations:
  - name: greeting
    match: {first_user: "Hello!"}
    turns:
      - text: "Hello! How can I help?"
""",
    "router": """kind: router
schema_version: 1
name: my-router
version: 1.0.0
registry:
  - route_id: local.order_lookup
    kind: local_tool
    target: lookup_order
    tags: [orders]
    owner: my-team
    p95_latency_ms: 200
    cost_usd: 0.001
    quality: 0.8
    effect: read
""",
}
"""A small valid file of each authored kind (run records are written by portagent, not authored)."""


def example_text(kind: str, schema_ref: str = DEFAULT_REF) -> str:
    return f"{MODELINE}{schema_ref}\n{EXAMPLES[kind]}"


def run(args: argparse.Namespace) -> int:
    from portagent.contracts.errors import UsageError
    from portagent.contracts.loader import KINDS

    if args.schema_ref is not None and not args.example:
        raise UsageError("--schema-ref goes with --example")
    if args.example:
        if args.example not in EXAMPLES:
            raise UsageError(
                f"unknown kind {args.example!r} for --example; expected one of: {', '.join(EXAMPLES)}"
            )
        ref = args.schema_ref or DEFAULT_REF
        if not ref.strip() or any(c.isspace() for c in ref):
            raise UsageError("--schema-ref must be a path or URL without spaces")
        print(example_text(args.example, ref), end="")
        return 0
    if args.kind:
        if args.kind not in KINDS:
            raise UsageError(f"unknown kind {args.kind!r}; expected one of: {', '.join(KINDS)}")
        print(json.dumps(schema_for(args.kind), indent=2, ensure_ascii=False))
        return 0
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder")
    payloads: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        payloads[kind] = schema_for(kind)
    files = {f"{kind}.schema.json": schema for kind, schema in payloads.items()}
    files[COMBINED] = combined_schema(payloads)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{out}: cannot create the folder ({e.strerror or e})") from None
    written = []
    for name, schema in files.items():
        path = out / name
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            tmp.replace(path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise UsageError(f"{path}: cannot write the schema ({e.strerror or e})") from None
        written.append(path)
    for p in written:
        print(f"wrote {p}")
    print(
        f"editors: start a spec file with `{MODELINE}{(out / COMBINED).as_posix()}` (path relative to the file)"
    )
    return 0
