"""OTel export of a normalized trace, following the GenAI semantic conventions.

    run        → span ``invoke_agent {agent}``   (gen_ai.operation.name = invoke_agent)
    model.call → span ``chat {model}``           (usage, response id, finish reason)
    tool.call  → span ``execute_tool {tool}``    (gen_ai.tool.call.id / arguments / result)
    permission.decision, approval.*, budget.exceeded, error, handoff → span events

Spans are built with the OpenTelemetry SDK (``portagent[otel]``) under the trace's own W3C trace id,
with the recorded timestamps, and handed to any ``SpanExporter``: the SDK's in-memory exporter in
tests, a JSON file (OTLP/JSON shape) or an OTLP/HTTP endpoint.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from portagent.contracts.errors import MissingExtraError, ProviderError

GEN_AI_PROVIDER = {"openai": "openai", "claude": "anthropic", "adk": "gcp.gemini"}


def _ns(ts: str) -> int:
    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1_000_000_000)


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _sdk() -> Any:
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError as e:
        raise MissingExtraError("otel", "opentelemetry-sdk", "otel") from e
    return sdk_trace


def export_spans(events: Sequence[Any], exporter: Any) -> int:
    """Build the spans of one trace and export them. Returns the number of spans."""
    sdk_trace = _sdk()
    from opentelemetry import trace as api
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    if not events:
        return 0
    start = next((e for e in events if e.type == "run.started"), events[0])
    end = next((e for e in reversed(events) if e.type == "run.completed"), events[-1])

    class _Ids(IdGenerator):
        def generate_trace_id(self) -> int:
            return int(start.trace_id, 16)

        def generate_span_id(self) -> int:
            return int.from_bytes(__import__("os").urandom(8), "big") or 1

    provider = sdk_trace.TracerProvider(
        resource=Resource.create({"service.name": "portagent"}), id_generator=_Ids()
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("portagent")
    prov = GEN_AI_PROVIDER.get(start.provider, start.provider)
    root_attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": prov,
        "gen_ai.agent.name": start.agent,
        "portagent.run_id": start.run_id,
    }
    if getattr(start, "model", None):
        root_attrs["gen_ai.request.model"] = start.model
    root = tracer.start_span(
        f"invoke_agent {start.agent}",
        start_time=_ns(start.ts),
        attributes=root_attrs,
        kind=api.SpanKind.INTERNAL,
    )
    ctx = api.set_span_in_context(root)
    tools: dict[str, Any] = {}
    count = 1
    for e in events:
        if e.type == "model.call":
            attrs = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": prov,
                "gen_ai.request.model": e.model,
                "gen_ai.usage.input_tokens": e.input_tokens,
                "gen_ai.usage.output_tokens": e.output_tokens,
                "gen_ai.agent.name": e.agent,
            }
            if e.response_id:
                attrs["gen_ai.response.id"] = e.response_id
            if e.finish_reason:
                attrs["gen_ai.response.finish_reasons"] = [e.finish_reason]
            t1 = _ns(e.ts)
            t0 = t1 - int((e.latency_ms or 0) * 1_000_000)
            span = tracer.start_span(
                f"chat {e.model}", context=ctx, start_time=t0, attributes=attrs, kind=api.SpanKind.CLIENT
            )
            span.end(end_time=t1)
            count += 1
        elif e.type == "tool.call":
            span = tracer.start_span(
                f"execute_tool {e.tool}",
                context=ctx,
                start_time=_ns(e.ts),
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": e.tool,
                    "gen_ai.tool.call.id": e.call_id,
                    "gen_ai.tool.call.arguments": _json(e.args),
                    "gen_ai.tool.type": "function",
                    "portagent.tool.version": e.tool_version,
                },
            )
            tools[e.call_id] = span
            count += 1
        elif (
            e.type in ("permission.decision", "approval.requested", "approval.resolved")
            and e.call_id in tools
        ):
            fields = {
                k: v
                for k, v in e.model_dump(mode="json").items()
                if k
                in (
                    "decision",
                    "reason",
                    "rule",
                    "policy_version",
                    "risk_score",
                    "approval_id",
                    "status",
                    "reviewer",
                )
                and v is not None
            }
            tools[e.call_id].add_event(
                f"portagent.{e.type}",
                attributes={k: _attr(v) for k, v in fields.items()},
                timestamp=_ns(e.ts),
            )
        elif e.type == "tool.result" and e.call_id in tools:
            span = tools.pop(e.call_id)
            span.set_attribute("gen_ai.tool.call.result", _json(e.output))
            if not e.ok:
                span.set_attribute("error.type", e.error or "error")
                span.set_status(api.Status(api.StatusCode.ERROR, e.error or ""))
            span.end(end_time=_ns(e.ts))
        elif e.type in ("handoff", "budget.exceeded", "error"):
            fields = {
                k: _attr(v)
                for k, v in e.model_dump(mode="json").items()
                if k
                in (
                    "from_agent",
                    "to_agent",
                    "kind",
                    "limit",
                    "limit_value",
                    "observed",
                    "error_type",
                    "message",
                )
                and v is not None
            }
            root.add_event(f"portagent.{e.type}", attributes=fields, timestamp=_ns(e.ts))
    for span in tools.values():  # a call without result still ends, marked as such
        span.set_attribute("error.type", "no_result")
        span.end(end_time=_ns(end.ts))
    if end.type == "run.completed":
        root.set_attribute("portagent.status", end.status)
        root.set_attribute("gen_ai.usage.input_tokens", end.input_tokens)
        root.set_attribute("gen_ai.usage.output_tokens", end.output_tokens)
        if end.status not in ("completed", "waiting_approval"):
            root.set_status(api.Status(api.StatusCode.ERROR, end.stop_reason))
    root.end(end_time=_ns(end.ts))
    provider.shutdown()
    return count


def _attr(v: Any) -> Any:
    return v if isinstance(v, str | int | float | bool) else _json(v)


class OtlpJsonExporter:
    """A SpanExporter writing OTLP/JSON (``resourceSpans``) to a file, or POSTing it to ``/v1/traces``."""

    def __init__(self, *, path: str | None = None, endpoint: str | None = None) -> None:
        self.path = path
        self.endpoint = endpoint
        self.spans: list[Any] = []

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        payload = json.dumps(otlp_json(self.spans), ensure_ascii=False, indent=2)
        if self.path:
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(payload + "\n")
        if self.endpoint:
            url = self.endpoint.rstrip("/")
            url = url if url.endswith("/v1/traces") else url + "/v1/traces"
            req = urllib.request.Request(
                url, data=payload.encode(), headers={"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    resp.read()
            except OSError as e:
                raise ProviderError(f"cannot export to OTLP endpoint {url}: {e}") from e

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list | tuple):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}


def otlp_json(spans: Sequence[Any]) -> dict[str, Any]:
    """OTLP/JSON encoding of SDK ReadableSpans (ids as hex, times as unix nanos)."""
    out = []
    for s in spans:
        out.append(
            {
                "traceId": f"{s.context.trace_id:032x}",
                "spanId": f"{s.context.span_id:016x}",
                **({"parentSpanId": f"{s.parent.span_id:016x}"} if s.parent else {}),
                "name": s.name,
                "kind": int(s.kind.value) + 1,
                "startTimeUnixNano": str(s.start_time),
                "endTimeUnixNano": str(s.end_time),
                "attributes": [{"key": k, "value": _value(v)} for k, v in (s.attributes or {}).items()],
                "events": [
                    {
                        "name": ev.name,
                        "timeUnixNano": str(ev.timestamp),
                        "attributes": [
                            {"key": k, "value": _value(v)} for k, v in (ev.attributes or {}).items()
                        ],
                    }
                    for ev in s.events
                ],
                "status": {"code": int(s.status.status_code.value)},
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "portagent"}}]},
                "scopeSpans": [{"scope": {"name": "portagent"}, "spans": out}],
            }
        ]
    }
