"""``portagent trace import``: a foreign vcrpy cassette of vendor traffic → a normalized trace.

Input: a cassette (``importer_cassette`` reads every body form) holding OpenAI Responses / Chat
Completions, Anthropic Messages or Gemini ``generateContent`` traffic. Each interaction's vendor is
recognised from its URI (or, behind an unknown path, from a request *and* response that both parse
as one vendor's wire format); requests are parsed by the shared ``portagent.wire`` request parsers,
responses by ``portagent.wire.*_response``. Output (docs/trace-import.md):

- ``run.started`` — provider ``openai`` / ``claude`` (Anthropic) / ``adk`` (Gemini); sdk
  ``foreign-cassette``; mode ``replay`` (the answers come from a recording); source ``emulator`` when
  the responses carry portagent's emulator ``Server`` header, else ``live``; model and input from
  the first request.
- one ``model.call`` per answered model interaction (OTel token semantics, normalized finish
  reason, vendor response id); an HTTP error answer is an ``error`` event instead (as in a live run).
- ``tool.call`` per tool call in a response: ``call_<n>`` in call order, vendor id in
  ``provider_details.vendor_call_id``, arguments parsed and hashed.
- ``tool.result`` when a later request carries the result, paired by the vendor's call id; a call
  the vendor gave no id (Gemini 2.x) is paired by order and name. A result is emitted once, before
  the ``model.call`` of the request that carried it. Calls never answered keep no result.
- ``run.completed`` — final text of the last answer, usage totals, status (see :func:`_outcome`).

Timestamps come from an injected clock (default: a fixed clock, 1 ms per event) and ids from an
injected factory seeded by the cassette's content, so importing the same file twice gives the
same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from portagent.contracts._base import args_hash
from portagent.contracts.errors import RecordingError
from portagent.core.clock import Clock, FixedClock, IdFactory
from portagent.core.pricing import model_cost
from portagent.tracing.importer_cassette import Interaction, read_cassette
from portagent.tracing.importer_vendors import (
    PROVIDER,
    Endpoint,
    endpoint_by_path,
    endpoints_by_body,
    json_body,
    parse_request,
    parse_response,
    result_output,
    tool_name,
)
from portagent.tracing.recorder import TraceRecorder
from portagent.wire.items import Item, RequestView, WireFormatError
from portagent.wire.response import RETRYABLE_STATUS, ResponseView, parse_error_body

SDK = "foreign-cassette"
"""``run.started.sdk`` of an imported trace."""
MAX_OUTPUT_CHARS = 65_536
"""Text tool outputs longer than this are cut (the full length is kept in provider_details)."""
EMULATOR_SERVER = "portagent-emulator"
"""The ``Server`` header portagent's emulator answers with (→ ``source: emulator``)."""


class _UsageFields(TypedDict, total=False):
    """The token fields of a ``model.call`` event; none when the response carried no usage."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int


@dataclass
class _Pending:
    call_id: str
    tool: str
    name: str | None
    vendor_ids: frozenset[str]


@dataclass
class _Pairing:
    """Tool calls waiting for their result, and the results already seen in earlier requests."""

    pending: list[_Pending] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)
    """How many results of each key earlier requests carried."""

    @staticmethod
    def key(item: Item, position: int) -> str:
        return f"id:{item.call_id}" if item.call_id else f"pos:{position}:{item.name}"

    def new_results(self, view: RequestView) -> list[Item]:
        """Tool results this request carries that no earlier request did (history is resent). Counted per
        key, in order: a vendor may give a later turn's call an id an earlier one had (``call_0`` again),
        and the second result under that id is new, not the first one resent."""
        out = []
        here: dict[str, int] = {}
        for position, item in enumerate(view.tool_results()):
            key = self.key(item, position)
            here[key] = here.get(key, 0) + 1
            if here[key] > self.seen.get(key, 0):
                self.seen[key] = here[key]
                out.append(item)
        return out

    def match(self, result: Item) -> tuple[_Pending, str] | None:
        if result.call_id:
            for p in self.pending:
                if result.call_id in p.vendor_ids:
                    self.pending.remove(p)
                    return p, "id"
        # Only a call the vendor gave no id can be paired by order (and by name when the result has one).
        for p in self.pending:
            if not p.vendor_ids and (result.name is None or result.name == p.name):
                self.pending.remove(p)
                return p, "order"
        return None


def _raw_args(item: Item) -> bool:
    """OpenAI arguments that were not valid JSON stay the raw string (the model's malformed call)."""
    return isinstance(item.arguments, str)


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None and v != [] and v != {}}


class _Importer:
    def __init__(
        self,
        path: Path,
        interactions: list[Interaction],
        digest: str,
        *,
        agent: str,
        clock: Clock,
        ids: IdFactory,
    ) -> None:
        self.path = path
        self.interactions = interactions
        self.digest = digest
        self.agent = agent
        self.clock = clock
        self.ids = ids
        self.pairing = _Pairing()
        self.recorder: TraceRecorder | None = None
        self.vendor: str | None = None
        self.costs: list[float | None] = []
        self.without_usage: list[int] = []
        """Interactions whose answer carried no usage: their tokens (and so the run's) are unknown."""

    def where(self, inter: Interaction) -> str:
        return f"{self.path}: interaction {inter.index} ({inter.method} {inter.uri})"

    # -- recognising model traffic ------------------------------------------------------------------

    def classify(self) -> tuple[list[tuple[Interaction, Endpoint, RequestView]], list[dict[str, Any]]]:
        model: list[tuple[Interaction, Endpoint, RequestView]] = []
        skipped: list[dict[str, Any]] = []
        for inter in self.interactions:
            endpoint = endpoint_by_path(inter.method, inter.uri)
            try:
                body = json_body(inter.request_body)
            except ValueError:
                if endpoint is not None:
                    raise RecordingError(f"{self.where(inter)}: request body is not JSON") from None
                body = None
            if endpoint is not None:
                try:
                    view = parse_request(endpoint, body)
                except (WireFormatError, ValueError, TypeError) as e:
                    raise RecordingError(
                        f"{self.where(inter)}: not a valid {endpoint.api} request: {e}"
                    ) from None
            elif inter.method == "POST" and (guess := self.guess(inter, body)) is not None:
                endpoint, view = guess
            else:
                skipped.append({"index": inter.index, "method": inter.method, "uri": inter.uri})
                continue
            if self.vendor is None:
                self.vendor = endpoint.vendor
            elif endpoint.vendor != self.vendor:
                raise RecordingError(
                    f"{self.where(inter)}: {endpoint.vendor} traffic in a cassette of "
                    f"{self.vendor} traffic; one trace holds one provider's run"
                )
            model.append((inter, endpoint, view))
        if not model:
            if not self.interactions:
                raise RecordingError(f"{self.path}: the cassette has no interactions")
            first = self.interactions[0]
            raise RecordingError(
                f"{self.path}: no OpenAI (Responses, Chat Completions), Anthropic Messages or Gemini "
                f"generateContent traffic among its {len(self.interactions)} interaction(s) "
                f"(the first is {first.method} {first.uri})"
            )
        return model, skipped

    @staticmethod
    def guess(inter: Interaction, body: Any) -> tuple[Endpoint, RequestView] | None:
        """Model traffic behind an unknown path: the first vendor whose parsers read both bodies."""
        for endpoint in endpoints_by_body(body, inter.request_headers):
            try:
                view = parse_request(endpoint, body)
                if inter.status < 400:
                    parse_response(endpoint, inter.response_body)
            except (WireFormatError, ValueError, TypeError):
                continue
            return endpoint, view
        return None

    # -- emitting -----------------------------------------------------------------------------------

    def run(self) -> list[Any]:
        model, skipped = self.classify()
        assert self.vendor is not None
        provider = PROVIDER[self.vendor]
        first_inter, first_endpoint, first_view = model[0]
        run_model = first_view.model or first_endpoint.url_model or "unknown"
        rec = self.recorder = TraceRecorder(
            run_id=self.ids.run_id(), provider=provider, agent=self.agent, clock=self.clock, ids=self.ids
        )
        emulated = any(i.response_headers.get("server", "").startswith(EMULATOR_SERVER) for i, _, _ in model)
        prior = len(self.pairing.new_results(first_view))  # results of calls made before the recording
        rec.emit(
            "run.started",
            root=True,
            agent_version="",
            spec_hash="",
            policy_hash="",
            sdk=SDK,
            sdk_version="",
            model=run_model,
            source="emulator" if emulated else "live",
            mode="replay",
            input=first_view.first_user_text(),
            provider_details=_drop_none(
                {
                    "importer": "portagent trace import",
                    "cassette": self.path.name,
                    "cassette_sha256": self.digest,
                    "apis": sorted({e.api for _, e, _ in model}),
                    "client": first_inter.request_headers.get("user-agent"),
                    "skipped_interactions": skipped,
                    "prior_tool_results": prior or None,
                }
            ),
        )
        last: ResponseView | None = None
        last_failed = False
        for n, (inter, endpoint, view) in enumerate(model):
            unmatched = self.emit_results(inter, view, endpoint) if n else []
            req_model = view.model or endpoint.url_model or run_model
            if inter.status >= 400:
                kind, message = parse_error_body(inter.response_body)
                rec.emit(
                    "error",
                    error_type=kind or f"http_{inter.status}",
                    message=message or f"HTTP {inter.status}",
                    retryable=inter.status in RETRYABLE_STATUS,
                    provider_details=_drop_none(
                        {
                            "interaction": inter.index,
                            "api": endpoint.api,
                            "http_status": inter.status,
                            "unmatched_tool_results": unmatched,
                        }
                    ),
                )
                last_failed = True
                continue
            try:
                resp = parse_response(endpoint, inter.response_body)
            except (WireFormatError, ValueError) as e:
                raise RecordingError(
                    f"{self.where(inter)}: response is not a valid {endpoint.api} response: {e}"
                ) from None
            self.emit_model_call(inter, endpoint, view, resp, req_model, unmatched)
            self.emit_calls(inter, resp)
            if resp.error is not None:
                rec.emit(
                    "error",
                    error_type=str(resp.error.get("type") or "stream_error"),
                    message=str(resp.error.get("message") or ""),
                    retryable=False,
                    provider_details={"interaction": inter.index, "api": endpoint.api, "in_body": True},
                )
            last, last_failed = resp, resp.finish_reason == "error"
        self.emit_completed(last, last_failed)
        return rec.events

    def emit_results(self, inter: Interaction, view: RequestView, endpoint: Endpoint) -> list[dict[str, Any]]:
        assert self.recorder is not None
        unmatched: list[dict[str, Any]] = []
        for result in self.pairing.new_results(view):
            found = self.pairing.match(result)
            if found is None:
                unmatched.append(_drop_none({"vendor_call_id": result.call_id, "name": result.name}))
                continue
            pending, paired_by = found
            output, ok = result_output(result, endpoint.api)
            details = _drop_none(
                {"vendor_call_id": result.call_id, "interaction": inter.index, "paired_by": paired_by}
            )
            if isinstance(output, str) and len(output) > MAX_OUTPUT_CHARS:
                details["output_chars"] = len(output)
                output = output[:MAX_OUTPUT_CHARS]
            self.recorder.emit(
                "tool.result",
                call_id=pending.call_id,
                tool=pending.tool,
                ok=ok,
                error=None if ok else "handler_error",
                output=output,
                provider_details=details,
            )
        return unmatched

    def emit_model_call(
        self,
        inter: Interaction,
        endpoint: Endpoint,
        view: RequestView,
        resp: ResponseView,
        req_model: str,
        unmatched: list[dict[str, Any]],
    ) -> None:
        assert self.recorder is not None and self.vendor is not None
        u = resp.usage
        if u is not None and not u.raw:
            u = None  # ``"usage": {}`` says no more than a missing usage
        if u is None:
            self.without_usage.append(inter.index)
        tokens: _UsageFields = (
            {
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "cache_read_tokens": u.cache_read_tokens,
                "cache_write_tokens": u.cache_write_tokens,
                "reasoning_tokens": u.reasoning_tokens,
            }
            if u
            else {}
        )
        # No usage, no cost: pricing zero tokens would claim a computed cost of $0.
        self.costs.append(
            model_cost(
                PROVIDER[self.vendor],
                resp.model or req_model,
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                cache_read_tokens=u.cache_read_tokens,
                cache_write_tokens=u.cache_write_tokens,
            )
            if u
            else None
        )
        details = _drop_none(
            {
                "interaction": inter.index,
                "api": endpoint.api,
                "response_model": resp.model,
                "finish_reason": resp.raw_finish_reason,
                "usage": dict(u.raw) if u else None,
                "tokens_unknown": None if u else True,
                "stream": resp.stream or None,
                "stream_incomplete": (not resp.complete) or None,
                "recorded_at": inter.response_headers.get("date"),
                "processing_ms": inter.response_headers.get("openai-processing-ms"),
                "unmatched_tool_results": unmatched,
                **resp.details,
            }
        )
        self.recorder.emit(
            "model.call",
            model=req_model,
            finish_reason=resp.finish_reason,
            response_id=resp.response_id,
            provider_details=details,
            **tokens,
        )

    def emit_calls(self, inter: Interaction, resp: ResponseView) -> None:
        assert self.recorder is not None and self.vendor is not None
        for item in resp.items:
            if item.kind == "tool_result":  # a server tool's result inside the same response
                pending = next((p for p in self.pairing.pending if item.call_id in p.vendor_ids), None)
                if pending is not None:
                    self.pairing.pending.remove(pending)
                    output, ok = result_output(item, resp.api)
                    self.recorder.emit(
                        "tool.result",
                        call_id=pending.call_id,
                        tool=pending.tool,
                        ok=ok,
                        error=None if ok else "handler_error",
                        output=output,
                        provider_details={
                            "vendor_call_id": item.call_id,
                            "interaction": inter.index,
                            "paired_by": "id",
                        },
                    )
                continue
            if item.kind != "tool_call":
                continue
            call_id = self.recorder.next_call_id()
            tool, via, extra = tool_name(item.name, self.vendor)
            if item.details.get("builtin"):
                via = str(item.details.get("via", "builtin"))
            vendor_ids = frozenset(x for x in (item.call_id, item.details.get("item_id")) if x)
            self.recorder.emit(
                "tool.call",
                call_id=call_id,
                tool=tool,
                args=item.arguments,
                args_hash=args_hash(item.arguments),
                via=via,
                provider_details=_drop_none(
                    {
                        "vendor_call_id": item.call_id,
                        "item_id": item.details.get("item_id"),
                        "interaction": inter.index,
                        "args_not_json": _raw_args(item) or None,
                        **extra,
                    }
                ),
            )
            # Vendor-run tools answer inside a response (kept pending for that) or never through a
            # request: they are not paired by order with a later function result.
            if not item.details.get("builtin") or vendor_ids:
                self.pairing.pending.append(_Pending(call_id, tool, item.name, vendor_ids))

    def emit_completed(self, last: ResponseView | None, last_failed: bool) -> None:
        assert self.recorder is not None
        rec = self.recorder
        status, stop_reason, final = _outcome(last, last_failed)
        calls = rec.of_type("model.call")
        totals = {
            k: sum(getattr(e, k) for e in calls)
            for k in (
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
                "reasoning_tokens",
            )
        }
        priced = bool(self.costs) and all(c is not None for c in self.costs)
        cost = round(sum(c for c in self.costs if c is not None), 8) if priced else None
        unanswered = [p.call_id for p in self.pairing.pending]
        rec.emit(
            "run.completed",
            root=True,
            status=status,
            stop_reason=stop_reason,
            final_output=final,
            model_calls=len(calls),
            tool_calls=len(rec.of_type("tool.call")),
            cost_usd=cost,
            cost_source="computed" if priced else "unknown",
            provider_details=_drop_none(
                {
                    "calls_without_result": unanswered,
                    # The token fields are plain counts (0 by default): say when they are not the truth.
                    "tokens_unknown": True if self.without_usage else None,
                    "interactions_without_usage": self.without_usage or None,
                }
            ),
            **totals,
        )


def _outcome(last: ResponseView | None, last_failed: bool) -> tuple[str, str, Any]:
    """(status, stop_reason, final_output) from the last answer.

    ``stop`` → completed/final_output; ``length`` → completed/max_tokens; ``content_filter`` →
    completed/content_filter; ``tool_calls`` → cancelled/recording_ended (the cassette stops before
    the tools' results went back); an HTTP error, a failed or cut-off last answer → failed/provider_error.
    """
    if last is None or last_failed:
        return "failed", "provider_error", (last.text() or None) if last else None
    text = last.text() or None
    match last.finish_reason:
        case "tool_calls":
            return "cancelled", "recording_ended", text
        case "length":
            return "completed", "max_tokens", text
        case "content_filter":
            return "completed", "content_filter", text or last.details.get("refusal")
        case _:
            return "completed", "final_output", text


def import_cassette(
    path: str | Path, *, agent: str | None = None, clock: Clock | None = None, ids: IdFactory | None = None
) -> list[Any]:
    """Read a foreign vcrpy cassette and return its normalized TraceEvents.

    ``agent`` defaults to the file's stem. ``clock`` and ``ids`` default to a fixed clock and an id
    factory seeded by the cassette's content (same file → same trace, byte for byte).
    Raises :class:`RecordingError` (exit 1) for a file that is not a readable cassette of known
    vendor traffic, :class:`UsageError` (exit 2) for a missing file.
    """
    p = Path(path)
    interactions, raw = read_cassette(p)
    digest = hashlib.sha256(raw).hexdigest()
    importer = _Importer(
        p,
        interactions,
        digest,
        agent=agent or p.stem,
        clock=clock or FixedClock(),
        ids=ids or IdFactory(seed=f"trace-import:{digest}"),
    )
    return importer.run()


def trace_jsonl(events: list[Any]) -> str:
    """The JSONL text of a trace, one event per line (the form ``TraceRecorder`` writes)."""
    return "".join(e.model_dump_json(exclude_none=False) + "\n" for e in events)
