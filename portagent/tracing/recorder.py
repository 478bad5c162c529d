"""The trace recorder: builds TraceEvents with ids, ``seq`` and timestamps, buffers them, writes JSONL.

Events are validated against the contracts as they are emitted (a wrong field is a bug caught at
once), kept in memory, handed to subscribers (the public API's async event stream), and written to
``trace.jsonl`` in one buffered write per flush.

Secrets never reach an event: every field an event carries is masked by the one secret scanner
(``core/secrets.py``) before it is validated, kept or handed on — so ``trace.jsonl``, the events a
caller receives, OTel exports and reports built from them all hold ``[REDACTED:<kind>]`` instead. The
fields' names are not masked (``mask_fields``): they are the emitting code's keyword arguments, and the
event's schema refuses any name it does not declare. The envelope (ids, ``seq``, time, provider) is the
recorder's own.

This runs for every event of every run (11 in the shortest two-tool run), so its fixed cost is kept
small: one walk of the fields, and timestamps of the system clock formatted without a ``datetime``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from portagent.contracts.trace import parse_event
from portagent.core.clock import Clock, IdFactory, SystemClock, iso
from portagent.core.secrets import mask_fields, mask_text
from portagent.tracing.propagation import CALL, CURRENT, INCOMING, TraceParent


class TraceRecorder:
    def __init__(
        self,
        *,
        run_id: str,
        provider: str,
        agent: str,
        clock: Clock | None = None,
        ids: IdFactory | None = None,
        trace_id: str | None = None,
        path: str | Path | None = None,
    ) -> None:
        self.run_id = run_id
        self.provider = provider
        self.agent = agent
        self.clock = clock or SystemClock()
        self.ids = ids or IdFactory()
        incoming = INCOMING.get() if trace_id is None else None
        self.trace_id = trace_id or (incoming.trace_id if incoming is not None else self.ids.trace_id())
        self.root_span_id = self.ids.span_id()
        self.remote_parent_span_id = incoming.span_id if incoming is not None else None
        """The caller's span when this run joined a trace over the network (``tracing/propagation.py``)."""
        CURRENT.set(TraceParent(self.trace_id, self.root_span_id))  # outgoing calls carry traceparent
        self.path = Path(path) if path is not None else None
        self.events: list[Any] = []
        self._seq = 0
        self._calls = 0
        self._written = 0
        """How many of ``events`` are in ``trace.jsonl`` already (events are serialized when flushed, and
        not at all when the run keeps no file)."""
        self._subscribers: list[Callable[[Any], None]] = []
        self.transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        """Applied to each event's fields before validation (replays restore recorded latencies)."""

    def next_call_id(self) -> str:
        """Deterministic ``call_<n>`` in call order (vendor ids go to ``provider_details``)."""
        self._calls += 1
        return f"call_{self._calls}"

    def subscribe(self, callback: Callable[[Any], None]) -> None:
        self._subscribers.append(callback)

    def emit(
        self,
        type: str,
        *,
        agent: str | None = None,
        root: bool = False,
        span_id: str | None = None,
        **fields: Any,
    ) -> Any:
        """Emit one event. ``root=True`` gives it the run's own span (run.started / run.completed)."""
        call = None if root else CALL.get()
        joined = call[1] if call is not None and call[0] == self.run_id else None  # a remote caller's call
        span = self.root_span_id if root else (span_id or self.ids.span_id())
        if joined is not None and type == "tool.call":  # what this call reaches joins under its span
            CURRENT.set(TraceParent(joined.trace_id, span))
        data = {
            "type": type,
            "run_id": self.run_id,
            "trace_id": joined.trace_id if joined is not None else self.trace_id,
            "span_id": span,
            "parent_span_id": joined.span_id
            if joined is not None
            else (self.remote_parent_span_id if root else self.root_span_id),
            "seq": self._seq,
            "ts": utc_stamp(time.time_ns()) if self.clock.__class__ is SystemClock else iso(self.clock.now()),
            "provider": self.provider,
            "agent": agent or self.agent,
            **mask_fields(fields),
        }
        if self.transform is not None:
            data = self.transform(data)
        event = parse_event(data)
        self._seq += 1
        self.events.append(event)
        for cb in self._subscribers:
            cb(event)
        return event

    def of_type(self, type: str) -> list[Any]:
        return [e for e in self.events if e.type == type]

    def flush(self) -> None:
        """Append buffered events to ``path`` (one write)."""
        pending = self.events[self._written :]
        self._written = len(self.events)
        if self.path is None or not pending:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = [e.model_dump_json(exclude_none=False) for e in pending]
        text = mask_text("\n".join(lines) + "\n")  # the env values of this moment, too
        with self.path.open("a", encoding="utf-8") as f:
            f.write(text)


_SECOND: tuple[int, str] = (-1, "")
"""The last second stamped and its text (events come many a second)."""


def utc_stamp(ns: int) -> str:
    """A ``time.time_ns()`` reading as ``iso`` writes ``SystemClock``'s (``2026-01-01T00:00:00.123Z``: UTC,
    milliseconds cut, not rounded, as ``datetime.isoformat`` does), without building a ``datetime``: the
    text of the second is kept, only the milliseconds are formatted."""
    global _SECOND
    second, rest = divmod(ns, 1_000_000_000)
    last = _SECOND
    if last[0] != second:
        last = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        _SECOND = last  # one tuple, swapped whole: a thread reading it sees an old or a new pair
    return f"{last[1]}.{rest // 1_000_000:03d}Z"


def read_trace(path: str | Path) -> list[Any]:
    """Load a ``trace.jsonl`` file into TraceEvents."""
    out = []
    # JSON Lines end at "\n" only: splitlines() also cuts at U+2028/U+0085, which a JSON string may hold raw
    for line in Path(path).read_text(encoding="utf-8").split("\n"):
        if line.strip():
            out.append(parse_event(json.loads(line)))
    return out
