"""OTel export of a normalized trace, following the GenAI semantic conventions.

    run        → span ``invoke_agent {agent}``   (gen_ai.operation.name = invoke_agent, usage, cost)
    attempt    → span ``attempt {n}`` under it, only when the trace holds several attempts (a resumed run)
                 (the agent span's usage and cost are the last ``run.completed``'s: a resumed attempt's
                 totals already hold the exchanges it replayed, whose chat spans carry no usage or cost)
    model.call → span ``chat {model}``           (usage incl. cache/reasoning tokens, cost, response id)
    tool.call  → span ``execute_tool {tool}``    (gen_ai.tool.name / call.id / type)
    permission.decision, approval.*, budget.exceeded, error, handoff → span events

Content (``gen_ai.input.messages``/``gen_ai.output.messages`` on the agent span, ``gen_ai.tool.call.arguments``/
``.result`` on tool spans) is opt-in, as the conventions mark it, and masked by the one secret scanner
(``core/secrets.py``, the scanner behind ``recording/scrub.py``) and then the caller's ``redact``.
Cost has no GenAI attribute yet: it is ``portagent.cost_usd`` (with ``portagent.cost_source``). Usage and
cost that are unknown (an imported answer without usage) are left out, with ``portagent.tokens_unknown``,
never written as 0: on the chat span, and on the agent span, whose totals would be a partial sum.

Spans are built with the OpenTelemetry SDK (``portagent[otel]``) under the trace's own W3C trace id, with
the recorded timestamps and the recorded span ids (a re-export carries the same ids). They are encoded by
the official OTLP encoder: sent once with the official exporter (OTLP/HTTP protobuf, or gRPC), or written
as an OTLP/JSON file for offline use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from portagent.contracts.errors import UsageError
from portagent.core.pricing import model_cost

GEN_AI_PROVIDER = {
    "openai": "openai",
    "claude": "anthropic",
    "adk": "gcp.gemini",
    "anthropic": "anthropic",
    "langgraph": "langgraph",
}
PROTOCOLS = ("http/protobuf", "grpc")

Redact = Callable[[Any], Any]


def _ns(ts: str) -> int:
    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1_000_000_000)


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _attr(v: Any) -> Any:
    return v if isinstance(v, str | int | float | bool) else _json(v)


def missing_extra(package: str, extra: str, what: str = "OTLP export") -> UsageError:
    """One message for an absent optional package (exit 2), naming the extra that brings it."""
    return UsageError(f"{what} needs the {package!r} package: pip install 'portagent[{extra}]'")


def _sdk() -> Any:
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError as e:
        raise missing_extra("opentelemetry-sdk", "otel") from e
    return sdk_trace


def _attempts(events: Sequence[Any]) -> list[list[Any]]:
    """The events split at each ``run.started`` (one list per attempt; a resumed run has several)."""
    out: list[list[Any]] = []
    for e in events:
        if e.type == "run.started" or not out:
            out.append([])
        out[-1].append(e)
    return out


def _messages(role: str, value: Any, finish_reason: str | None = None) -> str:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON (text parts)."""
    texts = value if isinstance(value, list) and all(isinstance(x, str) for x in value) else [value]
    msgs: list[dict[str, Any]] = []
    for t in texts:
        msg: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": _json(t)}]}
        if finish_reason:
            msg["finish_reason"] = finish_reason
        msgs.append(msg)
    return json.dumps(msgs, ensure_ascii=False)


def build_spans(
    events: Sequence[Any], *, include_content: bool = False, redact: Redact | None = None
) -> list[Any]:
    """The finished SDK spans (``ReadableSpan``) of one trace, parents before children are not guaranteed."""
    _sdk()
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    export_spans(events, mem, include_content=include_content, redact=redact)
    return list(mem.get_finished_spans())


def export_spans(
    events: Sequence[Any],
    exporter: Any,
    *,
    include_content: bool = False,
    redact: Redact | None = None,
) -> int:
    """Build the spans of one trace and hand them to ``exporter``. Returns the number of spans."""
    sdk_trace = _sdk()
    from opentelemetry import trace as api
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    if not events:
        return 0
    from portagent.core.secrets import mask_data

    def clean(value: Any) -> Any:
        """Content is masked by the one secret scanner, then by the caller's ``redact`` (if any)."""
        masked = mask_data(value)
        return redact(masked) if redact else masked

    attempts = _attempts(events)
    first = attempts[0][0]
    last_end = next((e for e in reversed(events) if e.type == "run.completed"), events[-1])
    used: set[int] = set()

    class _Ids(IdGenerator):
        """The trace's own ids: the recorded span id when one is queued and unused, else a random one."""

        queued: str | None = None

        def generate_trace_id(self) -> int:
            return int(first.trace_id, 16)

        def generate_span_id(self) -> int:
            want, self.queued = self.queued, None
            if want:
                sid = int(want, 16)
                if sid and sid not in used:
                    used.add(sid)
                    return sid
            while True:
                sid = int.from_bytes(os.urandom(8), "big")
                if sid and sid not in used:
                    used.add(sid)
                    return sid

    ids = _Ids()
    provider = sdk_trace.TracerProvider(
        resource=Resource.create({"service.name": "portagent"}), id_generator=ids, shutdown_on_exit=False
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("portagent")
    prov = GEN_AI_PROVIDER.get(first.provider, first.provider)
    count = 0

    def start(name: str, parent: Any, ts: int, attrs: dict[str, Any], kind: Any, sid: str | None) -> Any:
        nonlocal count
        ids.queued = sid
        count += 1
        ctx = api.set_span_in_context(parent) if parent is not None else None
        return tracer.start_span(name, context=ctx, start_time=ts, attributes=attrs, kind=kind)

    agent_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": prov,
        "gen_ai.agent.name": first.agent,
        "gen_ai.conversation.id": first.run_id,
        "portagent.run_id": first.run_id,
    }
    if getattr(first, "model", None):
        agent_attrs["gen_ai.request.model"] = first.model
    if getattr(first, "agent_version", None):
        agent_attrs["gen_ai.agent.version"] = first.agent_version
    if getattr(first, "case_id", None):
        agent_attrs["portagent.case_id"] = first.case_id
    if include_content and first.type == "run.started" and first.input is not None:
        agent_attrs["gen_ai.input.messages"] = _messages("user", clean(first.input))
    several = len(attempts) > 1
    remote = None
    if first.parent_span_id:  # the run joined a caller's trace over A2A/MCP: its span is the parent
        remote = _remote(api, first.trace_id, first.parent_span_id)
    root = start(
        f"invoke_agent {first.agent}",
        remote,
        _ns(first.ts),
        agent_attrs,
        api.SpanKind.INTERNAL,
        None if several else first.span_id,
    )
    final: Any = None
    for n, group in enumerate(attempts, 1):
        head = group[0]
        end = next((e for e in reversed(group) if e.type == "run.completed"), None)
        if several:
            parent = start(
                f"attempt {getattr(head, 'attempt', n)}",
                root,
                _ns(head.ts),
                {"portagent.attempt": int(getattr(head, "attempt", n))},
                api.SpanKind.INTERNAL,
                head.span_id if head.type == "run.started" else None,
            )
        else:
            parent = root
        _attempt_children(
            group, parent, start, prov, api, include_content=include_content, clean=clean, end=end
        )
        if end is not None:
            final = end
        if several:
            _finish(parent, end, group[-1], api)
    # The run's totals are the last run.completed's, as run.json reports them: a resumed attempt's totals
    # already hold the exchanges it replayed from the journal, so adding up the attempts counted those twice.
    # When a model call's usage is unknown the run's token counts are a partial sum: the agent span then
    # carries none and says ``portagent.tokens_unknown`` (a backend would show the partial sum as the total).
    unknown = any(_tokens_unknown(e) for e in events if e.type in ("model.call", "run.completed"))
    if unknown:
        root.set_attribute("portagent.tokens_unknown", True)
    elif final is not None:
        root.set_attribute("gen_ai.usage.input_tokens", final.input_tokens)
        root.set_attribute("gen_ai.usage.output_tokens", final.output_tokens)
        if final.cache_read_tokens:
            root.set_attribute("gen_ai.usage.cache_read.input_tokens", final.cache_read_tokens)
        if final.cache_write_tokens:
            root.set_attribute("gen_ai.usage.cache_creation.input_tokens", final.cache_write_tokens)
        if final.reasoning_tokens:
            root.set_attribute("gen_ai.usage.reasoning.output_tokens", final.reasoning_tokens)
    if final is not None:
        if final.cost_usd is not None:
            root.set_attribute("portagent.cost_usd", round(final.cost_usd, 10))
        root.set_attribute("portagent.cost_source", final.cost_source)
        root.set_attribute("portagent.attempts", len(attempts))
        if include_content and final.final_output is not None:
            reason = "stop" if final.status == "completed" else final.stop_reason
            root.set_attribute(
                "gen_ai.output.messages", _messages("assistant", clean(final.final_output), reason)
            )
    _finish(root, final, last_end, api)
    provider.shutdown()
    return count


def _remote(api: Any, trace_id: str, span_id: str) -> Any:
    """A caller's span in another process (W3C trace context), as the parent of a span of ours."""
    return api.NonRecordingSpan(
        api.SpanContext(
            trace_id=int(trace_id, 16),
            span_id=int(span_id, 16),
            is_remote=True,
            trace_flags=api.TraceFlags(api.TraceFlags.SAMPLED),
        )
    )


def _finish(span: Any, end: Any, last: Any, api: Any) -> None:
    """End an agent or attempt span with the status its ``run.completed`` gives (or ``incomplete``)."""
    if end is None:
        span.set_attribute("portagent.status", "incomplete")
        span.set_status(api.Status(api.StatusCode.ERROR, "the trace ends without run.completed"))
    else:
        span.set_attribute("portagent.status", end.status)
        span.set_attribute("portagent.stop_reason", end.stop_reason)
        if end.status not in ("completed", "waiting_approval"):
            span.set_attribute("error.type", end.stop_reason or end.status)
            span.set_status(api.Status(api.StatusCode.ERROR, f"{end.status}: {end.stop_reason}"))
    span.end(end_time=_ns((end or last).ts))


_DECISION_FIELDS = (
    "decision",
    "reason",
    "rule",
    "policy_version",
    "risk_score",
    "approval_id",
    "status",
    "reviewer",
)
_RUN_EVENT_FIELDS = (
    "from_agent",
    "to_agent",
    "kind",
    "limit",
    "limit_value",
    "observed",
    "error_type",
    "message",
)
_ROUTE_FIELDS = (
    "request_id",
    "decision",
    "selected_route",
    "selected_kind",
    "score",
    "reason",
    "alternatives",
)
_ATTEMPT_FIELDS = ("attempt", "resumed", "previous_status", "journal", "replays", "decided")
"""What an ``attempt.started`` event (a resume boundary) carries onto its attempt span."""
"""What a ``route.decision`` event carries onto the run span (the router's receipt)."""


def _tokens_unknown(e: Any) -> bool:
    """The event's token counts are not the truth (an imported answer without usage): its 0s mean unknown."""
    return bool(e.provider_details.get("tokens_unknown"))


def _usage(e: Any) -> dict[str, Any]:
    """A model call's GenAI usage attributes and its ``portagent.cost_usd`` (when its model is priced)."""
    attrs: dict[str, Any] = {
        "gen_ai.usage.input_tokens": e.input_tokens,
        "gen_ai.usage.output_tokens": e.output_tokens,
    }
    if e.cache_read_tokens:
        attrs["gen_ai.usage.cache_read.input_tokens"] = e.cache_read_tokens
    if e.cache_write_tokens:
        attrs["gen_ai.usage.cache_creation.input_tokens"] = e.cache_write_tokens
    if e.reasoning_tokens:
        attrs["gen_ai.usage.reasoning.output_tokens"] = e.reasoning_tokens
    price = model_cost(
        e.provider,
        e.model,
        input_tokens=e.input_tokens,
        output_tokens=e.output_tokens,
        cache_read_tokens=e.cache_read_tokens,
        cache_write_tokens=e.cache_write_tokens,
    )
    if price is not None:
        attrs["portagent.cost_usd"] = round(price, 10)
    return attrs


def _attempt_children(
    group: Sequence[Any],
    parent: Any,
    start: Callable[..., Any],
    prov: str,
    api: Any,
    *,
    include_content: bool,
    clean: Redact,
    end: Any,
) -> None:
    tools: dict[str, Any] = {}
    # A resumed attempt's first ``replays`` model calls were served from the journal of the attempt before
    # (``attempt.started``; the journal replays its kept exchanges before the run goes on to the endpoint):
    # they were paid for, and are already on a chat span, in that attempt.
    replays = next((e.replays for e in group if e.type == "attempt.started"), 0)
    for e in group:
        if e.type == "model.call":
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": prov,
                "gen_ai.request.model": e.model,
                "gen_ai.agent.name": e.agent,
            }
            if replays > 0:  # no usage, no cost: a backend summing the spans counts the exchange once
                replays -= 1
                attrs["portagent.replayed"] = True
            elif _tokens_unknown(e):  # an answer without usage (``trace import``): not 0 tokens for $0
                attrs["portagent.tokens_unknown"] = True
            else:
                attrs.update(_usage(e))
            if e.response_id:
                attrs["gen_ai.response.id"] = e.response_id
            if e.finish_reason:
                attrs["gen_ai.response.finish_reasons"] = [e.finish_reason]
            t1 = _ns(e.ts)
            t0 = t1 - int((e.latency_ms or 0) * 1_000_000)
            span = start(f"chat {e.model}", parent, t0, attrs, api.SpanKind.CLIENT, e.span_id)
            span.end(end_time=t1)
        elif e.type == "tool.call":
            attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": e.tool,
                "gen_ai.tool.call.id": e.call_id,
                "gen_ai.tool.type": "function" if e.via == "function" else "extension",
                "portagent.tool.version": e.tool_version,
                "portagent.tool.via": e.via,
            }
            if include_content:
                attrs["gen_ai.tool.call.arguments"] = _json(clean(e.args))
            under = parent
            if e.trace_id != group[0].trace_id and e.parent_span_id:  # made for a remote caller (mcp serve)
                under = _remote(api, e.trace_id, e.parent_span_id)
            tools[e.call_id] = start(
                f"execute_tool {e.tool}", under, _ns(e.ts), attrs, api.SpanKind.INTERNAL, e.span_id
            )
        elif (
            e.type in ("permission.decision", "approval.requested", "approval.resolved")
            and e.call_id in tools
        ):
            fields = {
                k: v for k, v in e.model_dump(mode="json").items() if k in _DECISION_FIELDS and v is not None
            }
            tools[e.call_id].add_event(
                f"portagent.{e.type}",
                attributes={k: _attr(v) for k, v in fields.items()},
                timestamp=_ns(e.ts),
            )
        elif e.type == "tool.result" and e.call_id in tools:
            span = tools.pop(e.call_id)
            if include_content:
                span.set_attribute("gen_ai.tool.call.result", _json(clean(e.output)))
            if not e.ok:
                span.set_attribute("error.type", e.error or "error")
                span.set_status(api.Status(api.StatusCode.ERROR, e.error or "error"))
            span.end(end_time=_ns(e.ts))
        elif e.type == "context.manifest":  # what the next model call was given: sources and counts only
            manifest: dict[str, Any] = {
                "portagent.context.call_index": e.call_index,
                "portagent.context.total_tokens": e.total_tokens,
                "portagent.context.token_count": e.token_count,
                "portagent.context.parts": _json([x.model_dump(mode="json") for x in e.parts]),
                "portagent.context.excluded": _json([x.model_dump(mode="json") for x in e.excluded]),
            }
            if e.max_context_tokens is not None:
                manifest["portagent.context.max_tokens"] = e.max_context_tokens
            parent.add_event("portagent.context.manifest", attributes=manifest, timestamp=_ns(e.ts))
        elif e.type == "handoff.package":  # what a sub-agent was given: the package's id and size, no content
            package = {
                "portagent.handoff.id": e.handoff_id,
                "portagent.handoff.from_agent": e.from_agent,
                "portagent.handoff.to_agent": e.to_agent,
                "portagent.handoff.tokens": e.tokens,
            }
            parent.add_event("portagent.handoff.package", attributes=package, timestamp=_ns(e.ts))
        elif e.type in ("handoff", "route.decision", "attempt.started", "budget.exceeded", "error"):
            wanted = {"route.decision": _ROUTE_FIELDS, "attempt.started": _ATTEMPT_FIELDS}.get(
                e.type, _RUN_EVENT_FIELDS
            )
            fields = {
                k: _attr(v) for k, v in e.model_dump(mode="json").items() if k in wanted and v is not None
            }
            if e.type == "error" and "message" in fields:
                fields["message"] = _attr(clean(fields["message"]))
            parent.add_event(f"portagent.{e.type}", attributes=fields, timestamp=_ns(e.ts))
    for span in tools.values():  # a call without result still ends, marked as such
        span.set_attribute("error.type", "no_result")
        span.set_status(api.Status(api.StatusCode.ERROR, "no_result"))
        span.end(end_time=_ns((end or group[-1]).ts))
