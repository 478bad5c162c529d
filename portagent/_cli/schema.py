"""``portagent schema [--out DIR]``: write the JSON Schemas of the spec files for editors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "schema",
        help="write JSON Schemas of the spec file kinds",
        description="Write one JSON Schema per spec kind (agent, tool, tools, policy, suite, "
        "emulator-script, run) so editors can complete spec files.",
    )
    p.add_argument("--out", default="schemas", help="output folder (default: ./schemas)")
    p.add_argument("--kind", help="print one kind's schema to stdout instead")


def schema_for(kind: str) -> dict[str, Any]:
    from portagent.contracts.loader import model_for_kind

    schema = model_for_kind(kind).model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://portagent.dev/schemas/{kind}.schema.json"
    return schema


def run(args: argparse.Namespace) -> int:
    from portagent.contracts.errors import UsageError
    from portagent.contracts.loader import KINDS

    if args.kind:
        if args.kind not in KINDS:
            raise UsageError(f"unknown kind {args.kind!r}; expected one of: {', '.join(KINDS)}")
        print(json.dumps(schema_for(args.kind), indent=2, ensure_ascii=False))
        return 0
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder")
    written = []
    payloads = {}
    for kind in KINDS:
        payloads[kind] = schema_for(kind)
    out.mkdir(parents=True, exist_ok=True)
    for kind, schema in payloads.items():
        path = out / f"{kind}.schema.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    for p in written:
        print(f"wrote {p}")
    return 0
