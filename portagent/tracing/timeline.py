"""A readable, plain-text timeline of a trace (``portagent trace show``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from portagent.contracts.errors import SpecError, SpecProblem, UsageError
from portagent.contracts.trace import TRACE_SCHEMA_VERSION, parse_event

MAX_PROBLEMS_SHOWN = 20
"""A damaged trace names at most this many bad lines (and how many more there are)."""


def load_trace_file(path: str | Path, *, allow_empty: bool = True) -> list[Any]:
    """The events of a trace file. A line that is not JSON, not a trace event or of another format
    version is a ``SpecError`` naming every such line (up to ``MAX_PROBLEMS_SHOWN``), not only the first:
    one look tells a damaged line from a damaged file. ``allow_empty=False`` (show, diff, export): a file
    with no event is a usage error, since every run's trace starts with ``run.started``."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{path}: a folder, not a trace file (a run's trace is its trace.jsonl)")
    if not p.is_file():
        raise UsageError(f"{path}: no such trace file")
    events = []
    try:
        lines = p.read_text(encoding="utf-8").split("\n")  # not splitlines(): a string may hold U+2028 raw
    except UnicodeDecodeError:
        raise SpecError([SpecProblem(str(path), "", "not UTF-8 text")]) from None
    problems: list[SpecProblem] = []
    bad = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        problem = None
        try:
            raw = json.loads(line)
            version = raw.get("schema_version", TRACE_SCHEMA_VERSION) if isinstance(raw, dict) else None
            if version != TRACE_SCHEMA_VERSION and isinstance(raw, dict):
                # read as this version, it would show, diff and export what another format means otherwise
                said = (
                    f"trace format version {version!r} (this portagent reads version {TRACE_SCHEMA_VERSION})"
                )
                problem = SpecProblem(str(path), "schema_version", said, n)
            else:
                events.append(parse_event(raw))
        except json.JSONDecodeError as e:
            problem = SpecProblem(str(path), "", f"line is not JSON: {e.msg}", n, e.colno)
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            loc = ".".join(str(x) for x in first["loc"])
            problem = SpecProblem(str(path), loc, f"not a trace event: {first['msg']}", n)
        if problem is not None:
            bad += 1
            if len(problems) < MAX_PROBLEMS_SHOWN:
                problems.append(problem)
    if problems:
        raise SpecError(problems, not_shown=bad - len(problems))
    if not events and not allow_empty:
        raise UsageError(f"{path}: no trace events (empty file)")
    return events


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(e: Any) -> str:
    kind: str = e.type
    match kind:
        case "run.started":
            return f"run started  {e.agent}@{e.agent_version} on {e.provider} ({e.sdk} {e.sdk_version}, {e.model}) source={e.source} mode={e.mode} attempt={e.attempt}"
        case "context.manifest":
            budget = f"/{e.max_context_tokens}" if e.max_context_tokens is not None else ""
            shown = " · ".join(f"{p.type} {p.source} {p.tokens}" for p in e.parts)
            text = (
                f"context      call {e.call_index}: {e.total_tokens}{budget} tokens ({e.token_count}) {shown}"
            )
            if e.over_budget:
                text += " [over budget]"
            for x in e.excluded:
                text += f"; excluded {x.type} {x.source} {x.tokens} ({x.reason})"
            return text
        case "memory.read":
            return f"memory read  {e.call_id} {e.query!r} -> {', '.join(e.memory_ids) or 'nothing'}"
        case "memory.write":
            return f"memory write {e.call_id} {e.operation} {e.memory_id}" + (
                f" ({e.scope}:{e.owner})" if e.scope else ""
            )
        case "model.call":
            return (
                f"model call   {e.model} in={e.input_tokens} out={e.output_tokens} finish={e.finish_reason}"
            )
        case "tool.call":
            return f"tool call    {e.call_id} {e.tool}@{e.tool_version} {_short(e.args)}"
        case "permission.decision":
            risk = f" risk={e.risk_score}" if e.risk_score is not None else ""
            return f"decision     {e.call_id} {e.decision} ({e.rule}: {e.reason}){risk}"
        case "approval.requested":
            return f"approval ?   {e.call_id} {e.approval_id}"
        case "approval.resolved":
            return f"approval =   {e.call_id} {e.approval_id} {e.status} by {e.reviewer or '-'}"
        case "tool.result":
            state = "ok" if e.ok else f"error {e.error}"
            dup = " (duplicate)" if e.duplicate else ""
            return f"tool result  {e.call_id} {state}{dup} {_short(e.output)}"
        case "handoff":
            return f"handoff      {e.from_agent} -> {e.to_agent} ({e.kind})"
        case "handoff.package":
            return f"handoff pkg  {e.handoff_id} -> {e.to_agent} ({e.tokens} tokens, estimate)"
        case "route.decision":
            chosen = f"{e.selected_route} ({e.selected_kind}) score={e.score}" if e.selected_route else "-"
            return f"route        {e.request_id} {e.decision} -> {chosen}: {e.reason}"
        case "budget.exceeded":
            return f"budget       {e.limit} limit={e.limit_value} observed={e.observed}"
        case "error":
            return f"error        {e.error_type}: {e.message}"
        case "run.completed":
            cost = "unknown" if e.cost_usd is None else f"${e.cost_usd:.6f} ({e.cost_source})"
            return (
                f"run done     {e.status} ({e.stop_reason}) tokens in={e.input_tokens} out={e.output_tokens} "
                f"cost={cost} final={_short(e.final_output, 60)}"
            )
    return kind


def render_timeline(events: list[Any]) -> str:
    lines = []
    for e in events:
        lines.append(f"{e.seq:>4}  {e.ts}  [{e.agent}]  {describe(e)}")
    return "\n".join(lines) if lines else "(empty trace)"
