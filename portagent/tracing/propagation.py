"""W3C Trace Context across process boundaries: one trace from a caller through the agents it reaches.

- ``CURRENT``: the run being recorded in this context (set by ``TraceRecorder`` when it is created), so
  outgoing calls — an A2A message, an MCP ``tools/call`` — can carry ``traceparent``;
- ``INCOMING``: a parent to join, set by a server around the run it starts for a caller (``a2a serve``);
  the recorder then uses the caller's trace id, and the run's root span names the caller's span as its
  parent, so ``trace show`` / OTel export link the hops;
- ``CALL``: a parent for the events of one call inside a long-lived run, set by ``mcp serve`` around a
  ``tools/call`` that carried ``_meta.traceparent``: the session's trace stays its own, while that call's
  events (``tool.call`` … ``tool.result``) carry the caller's trace id and name the caller's span as their
  parent (the OTel export starts the ``execute_tool`` span under it).

Only the ``traceparent`` header form ``00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`` is read
(https://www.w3.org/TR/trace-context/); an all-zero id or any other version is ignored, never an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

HEADER = "traceparent"
_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


@dataclass(frozen=True)
class TraceParent:
    """A trace id and the span that is the parent of what comes next."""

    trace_id: str
    span_id: str

    def header(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-01"


CURRENT: ContextVar[TraceParent | None] = ContextVar("portagent_trace_current", default=None)
INCOMING: ContextVar[TraceParent | None] = ContextVar("portagent_trace_incoming", default=None)
CALL: ContextVar[tuple[str, TraceParent] | None] = ContextVar("portagent_trace_call", default=None)
"""(run id, caller's parent): only that run's recorder re-parents the events of the call."""


def parse(value: object) -> TraceParent | None:
    """A ``traceparent`` value, or None when absent or not version 00 of the W3C form."""
    if not isinstance(value, str):
        return None
    m = _RE.match(value.strip().lower())
    if m is None or set(m.group(1)) == {"0"} or set(m.group(2)) == {"0"}:
        return None
    return TraceParent(m.group(1), m.group(2))


def current_header() -> str | None:
    """``traceparent`` for an outgoing call of the run recorded in this context, if any."""
    parent = CURRENT.get()
    return parent.header() if parent is not None else None


@contextmanager
def joining(parent: TraceParent | None) -> Iterator[None]:
    """Runs started inside the block join ``parent``'s trace (nothing changes when it is None)."""
    token = INCOMING.set(parent)
    try:
        yield
    finally:
        INCOMING.reset(token)


@contextmanager
def joining_call(run_id: str, parent: TraceParent | None) -> Iterator[None]:
    """The events run ``run_id`` emits inside the block (not its root events) join ``parent``'s trace,
    and outgoing calls made inside it carry that trace id; nothing changes when ``parent`` is None."""
    if parent is None:
        yield
        return
    token = CALL.set((run_id, parent))
    outgoing = CURRENT.set(parent)
    try:
        yield
    finally:
        CURRENT.reset(outgoing)
        CALL.reset(token)


@contextmanager
def as_otel_parent(value: str | None) -> Iterator[None]:
    """Make ``value`` (a ``traceparent``) the current OpenTelemetry context inside the block. A library
    that propagates W3C context through OpenTelemetry itself — the mcp SDK injects ``_meta.traceparent``
    into every request it sends, overwriting the caller's value — then sends portagent's context and not
    an ambient one (inside ``mcp serve``, the SDK's server sets the incoming caller's context as ambient).
    Nothing changes without a valid value or without opentelemetry."""
    parent = parse(value)
    if parent is None:
        yield
        return
    try:
        from opentelemetry import context as otel_context
        from opentelemetry import trace
    except ImportError:  # pragma: no cover - opentelemetry-api comes with the mcp SDK
        yield
        return
    span = trace.NonRecordingSpan(
        trace.SpanContext(
            trace_id=int(parent.trace_id, 16),
            span_id=int(parent.span_id, 16),
            is_remote=True,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
        )
    )
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield
    finally:
        otel_context.detach(token)
