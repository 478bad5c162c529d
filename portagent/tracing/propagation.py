"""W3C Trace Context across process boundaries: one trace from a caller through the agents it reaches.

- ``CURRENT``: the run being recorded in this context (set by ``TraceRecorder`` when it is created), so
  outgoing calls — an A2A message, an MCP ``tools/call`` — can carry ``traceparent``;
- ``INCOMING``: a parent to join, set by a server around the run it starts for a caller (``a2a serve``,
  ``mcp serve``); the recorder then uses the caller's trace id, and the run's root span names the
  caller's span as its parent, so ``trace show`` / OTel export link the hops.

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
