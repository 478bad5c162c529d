"""What the emulator decided to answer, before it is written in a vendor's wire format.

The engine produces a :class:`Plan` (a model turn) or an :class:`ErrorReply` (an HTTP error);
the renderers (``render_openai``, ``render_anthropic``, ``render_gemini``) only translate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from portagent.contracts.emulator_script import StallFault, StopReason, TruncateFault

EPOCH = 1767225600
"""Fixed ``created`` timestamp (2026-01-01T00:00:00Z) so recorded responses are byte-stable."""

ErrorKind = Literal["bad_request", "not_found", "rate_limit", "server_error", "unavailable", "overloaded"]


@dataclass(frozen=True)
class PlannedCall:
    """One tool call to emit."""

    index: int
    """Position in the turn (0-based)."""
    ident: str
    """Deterministic id stem (``emu_<conversation>_<cursor>_<index>``); vendors add their prefix."""
    name: str
    """The tool name to emit (already resolved against the declared tools)."""
    arguments: Any
    """The arguments object (what a well-formed call carries)."""
    arguments_json: str
    """The exact argument text to send (cut JSON under a ``malformed_arguments`` fault)."""
    malformed: bool = False
    """True when ``arguments_json`` is deliberately not valid JSON."""


@dataclass(frozen=True)
class ResolvedUsage:
    """Token counts in OTel semantics (input includes cache; output includes reasoning)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Plan:
    """A model turn to render."""

    conversation: str
    cursor: int
    ident: str
    """Deterministic id stem for the turn: ``emu_<conversation>_<cursor>``."""
    model: str
    text: str | None
    thinking: str | None
    calls: tuple[PlannedCall, ...]
    usage: ResolvedUsage
    stop_reason: StopReason
    latency_ms: int
    slow_first_byte_ms: int = 0
    body_fault: StallFault | TruncateFault | None = None
    content_type: str | None = None
    """Overrides the response content-type (``wrong_content_type`` fault)."""
    notes: tuple[str, ...] = ()
    fault: str | None = None
    """Name of the fault applied, for the log."""


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error to send in the vendor's error shape."""

    kind: ErrorKind
    message: str
    retry_after_s: float | None = None
    conversation: str | None = None
    cursor: int | None = None
    fault: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def refusal(self) -> bool:
        """The emulator's own refusal (no conversation matches, a script out of turns, a request it cannot
        read, its own bug), not a fault the script asked for: what the recorder treats as a script's
        mistake. The request log carries it as ``refusal``."""
        return self.fault is None


def estimate_tokens(text: str) -> int:
    """Deterministic rough token count: one token per four characters, at least one."""
    return max(1, math.ceil(len(text) / 4))


def split_text(text: str, size: int = 24, max_parts: int = 64) -> list[str]:
    """Split text into stream deltas at word boundaries (about ``size`` characters each, at most
    about ``max_parts`` deltas, so a huge text is a few large deltas rather than thousands)."""
    if not text:
        return [""]
    size = max(size, math.ceil(len(text) / max_parts))
    out: list[str] = []
    cur = ""
    for word in _words(text):
        if cur and len(cur) + len(word) > size:
            out.append(cur)
            cur = ""
        cur += word
    if cur:
        out.append(cur)
    return out


def _words(text: str) -> list[str]:
    words: list[str] = []
    cur = ""
    for ch in text:
        if ch.isspace() and cur and not cur[-1].isspace():
            words.append(cur)
            cur = ""
        cur += ch
    if cur:
        words.append(cur)
    return words


def split_json(text: str, parts: int = 3) -> list[str]:
    """Split argument JSON into several deltas (vendors stream arguments in pieces)."""
    if len(text) <= 2:
        return [text]
    step = max(1, math.ceil(len(text) / parts))
    return [text[i : i + step] for i in range(0, len(text), step)]
