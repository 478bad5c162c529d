"""Stream framing for the three vendors, in both directions.

- Server-Sent Events (WHATWG HTML "Server-sent events"): OpenAI Responses and Anthropic send
  ``event: <type>\\ndata: <json>\\n\\n``; OpenAI Chat Completions sends ``data: <json>\\n\\n`` frames
  ending in ``data: [DONE]``; Gemini ``:streamGenerateContent?alt=sse`` sends ``data: <json>\\r\\n\\r\\n``
  (CRLF line ends, as in the pydantic-ai recording).
- Gemini's default ``:streamGenerateContent`` (no ``alt=sse``) is one JSON array delivered
  incrementally: ``[{…}\\n,\\r\\n{…}\\n]`` (llm-gemini recording). :func:`json_array_chunks` writes it
  element by element and :func:`parse_json_array_stream` reads it back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any


def dumps(obj: Any) -> str:
    """Compact JSON, as the vendors send it (non-ASCII kept as is)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def encode_event(data: Any, event: str | None = None, *, crlf: bool = False) -> bytes:
    """One SSE frame. ``data`` is JSON-encoded unless it is already a string (e.g. ``[DONE]``)."""
    nl = "\r\n" if crlf else "\n"
    payload = data if isinstance(data, str) else dumps(data)
    head = f"event: {event}{nl}" if event else ""
    # A data value with newlines must be split over several data: lines (WHATWG SSE §9.2.6).
    body = nl.join(f"data: {line}" for line in payload.split("\n"))
    return f"{head}{body}{nl}{nl}".encode()


@dataclass(frozen=True)
class SSEEvent:
    """One parsed SSE frame."""

    event: str | None
    """The ``event:`` field, when present."""
    data: str
    """The ``data:`` lines joined with ``\\n``."""

    def json(self) -> Any:
        return json.loads(self.data)


def parse_sse(text: str) -> list[SSEEvent]:
    """Parse an SSE body (LF or CRLF line ends) into frames; comments and ids are ignored."""
    events: list[SSEEvent] = []
    event: str | None = None
    data: list[str] = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if raw == "":
            if data or event:
                events.append(SSEEvent(event, "\n".join(data)))
            event, data = None, []
            continue
        if raw.startswith(":"):
            continue
        name, _, value = raw.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data or event:
        events.append(SSEEvent(event, "\n".join(data)))
    return events


def json_array_chunks(elements: Iterable[Any]) -> Iterator[bytes]:
    """Gemini's JSON-array stream, one chunk per element; the last chunk closes the array."""
    first = True
    for element in elements:
        yield (("[" if first else "\n,\r\n") + json.dumps(element, ensure_ascii=False, indent=2)).encode()
        first = False
    yield b"[]" if first else b"\n]"


def parse_json_array_stream(text: str) -> list[Any]:
    """Read a (complete) JSON-array stream back into its elements."""
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError("a Gemini JSON-array stream must be a JSON array")
    return value
