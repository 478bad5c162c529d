"""The emulator script: what the scripted "model" answers, turn by turn (docs/emulator.md).

A script is a spec file (``kind: emulator-script``, ``schema_version: 1``) holding conversations.
A conversation is picked by the first user text of a request (exact or regex, optionally narrowed by
the system prompt) or by name (header ``x-portagent-conversation``); its ``turns`` are played in
order, the cursor being the number of assistant turns already in the request.
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from portagent.contracts._base import Contract
from portagent.contracts.providers import ProviderName


class _Model(Contract):
    """Frozen, closed, documented (``portagent.contracts._base.Contract``)."""


# -- templates ---------------------------------------------------------------------------------
# The grammar lives here so a script is checked when it is loaded (``portagent validate``, the
# emulator's start) and the emulator renders exactly what was checked (``emulator/templating.py``).

TEMPLATE_VARIABLES: dict[str, str] = {
    "last_tool_result": "the most recent tool result (JSON walked with .key / .N)",
    "tool_results": "every tool result, in request order (tool_results.N)",
    "first_user": "the first user text",
    "occurrence": "how many times this emulator has answered this turn, 1 the first time (a model that "
    "words a call differently when asked again)",
}
"""The variables a ``{{…}}`` template may name."""

_OPEN, _CLOSE = "{{", "}}"
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_ONE_BRACE = re.compile(r"(?<!\{)\{\s*[A-Za-z_][A-Za-z0-9_.-]*\s*\}\}")


def parse_placeholder(body: str) -> list[tuple[str, Any]]:
    """The alternatives of one placeholder body (what is between ``{{`` and ``}}``), in order:
    ``("path", ["last_tool_result", "a", "0"])`` or ``("text", "literal")``. The first that resolves
    is used: ``{{last_tool_result.error | last_tool_result.status | "no result"}}``. Raises
    ValueError naming what is wrong."""
    import json

    alts: list[tuple[str, Any]] = []
    for raw in _split_alternatives(body):
        alt = raw.strip()
        if not alt:
            raise ValueError(f"{{{{{body}}}}}: empty alternative (write {{{{a | b}}}})")
        if alts and alts[-1][0] == "text":
            raise ValueError(
                f"{{{{{body}}}}}: a quoted text always resolves; it must be the last alternative"
            )
        if _QUOTED.fullmatch(alt):
            alts.append(("text", json.loads(alt)))
            continue
        if not _PATH.fullmatch(alt):
            raise ValueError(
                f"{{{{{body}}}}}: {alt!r} is neither a variable path (last_tool_result.a.0) nor a quoted text"
            )
        head, *path = alt.split(".")
        if head not in TEMPLATE_VARIABLES:
            raise ValueError(
                f"{{{{{body}}}}}: unknown variable {head!r}; known: {', '.join(TEMPLATE_VARIABLES)}"
            )
        if head in ("first_user", "occurrence") and path:
            kind = "text" if head == "first_user" else "a number"
            raise ValueError(f"{{{{{body}}}}}: {head} is {kind}; it has no fields")
        if head == "tool_results" and path and not path[0].lstrip("-").isdigit():
            raise ValueError(f"{{{{{body}}}}}: tool_results takes an index (tool_results.0), not {path[0]!r}")
        alts.append(("path", [head, *path]))
    return alts


def _split_alternatives(body: str) -> list[str]:
    out, cur, quoted, escaped = [], "", False, False
    for ch in body:
        if quoted:
            cur += ch
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted, cur = True, cur + ch
        elif ch == "|":
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if quoted:
        raise ValueError(f"{{{{{body}}}}}: unterminated quoted text")
    out.append(cur)
    return out


def template_spans(text: str) -> list[tuple[int, int, list[tuple[str, Any]]]]:
    """Every placeholder in ``text`` as (start, end, alternatives); raises ValueError on malformed
    braces (an ``{{`` never closed, a ``{name}}`` with one opening brace) or a bad placeholder."""
    spans: list[tuple[int, int, list[tuple[str, Any]]]] = []
    i = 0
    while (start := text.find(_OPEN, i)) != -1:
        end = _closing(text, start + 2)
        if end == -1:
            raise ValueError(f"unclosed {_OPEN!r} at character {start}: {text[start : start + 40]!r}")
        spans.append((start, end + 2, parse_placeholder(text[start + 2 : end])))
        i = end + 2
    bad = _ONE_BRACE.search(text)
    if bad is not None and not any(s <= bad.start() < e for s, e, _ in spans):
        raise ValueError(
            f"malformed template {bad.group(0)!r}: a template opens with two braces, {{{{name}}}}"
        )
    return spans


def _closing(text: str, i: int) -> int:
    """Index of the ``}}`` closing a placeholder whose body starts at ``i`` (quotes respected), or -1."""
    quoted = escaped = False
    while i < len(text):
        ch = text[i]
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif text.startswith(_CLOSE, i):
            return i
        elif text.startswith(_OPEN, i):
            return -1  # a second {{ before the first closes
        i += 1
    return -1


def _check_templates(value: Any, where: str = "") -> None:
    """Raise ValueError naming the (sub)field of ``value`` whose template cannot resolve."""
    if isinstance(value, str):
        try:
            template_spans(value)
        except ValueError as e:
            raise ValueError(f"{where + ': ' if where else ''}{e}") from None
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_templates(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for n, v in enumerate(value):
            _check_templates(v, f"{where}.{n}" if where else str(n))


class Usage(_Model):
    """Token counts reported for a turn, in OTel semantics (each vendor renderer converts)."""

    input_tokens: int | None = Field(default=None, ge=0)
    """Total input tokens *including* cache reads and writes (Anthropic's renderer subtracts the
    cache buckets, since Anthropic's ``input_tokens`` excludes them). Unset: estimated (chars / 4)."""
    output_tokens: int | None = Field(default=None, ge=0)
    """Total output tokens *including* reasoning tokens. Unset: estimated (chars / 4)."""
    cache_read_tokens: int = Field(default=0, ge=0)
    """Input tokens read from the prompt cache."""
    cache_write_tokens: int = Field(default=0, ge=0)
    """Input tokens written to the prompt cache."""
    reasoning_tokens: int = Field(default=0, ge=0)
    """Output tokens spent on reasoning/thinking (part of ``output_tokens``)."""

    @model_validator(mode="after")
    def _buckets_fit(self) -> Usage:
        if (
            self.input_tokens is not None
            and self.cache_read_tokens + self.cache_write_tokens > self.input_tokens
        ):
            raise ValueError(
                "cache_read_tokens + cache_write_tokens cannot exceed input_tokens "
                "(input_tokens is the total input, cache included)"
            )
        if self.output_tokens is not None and self.reasoning_tokens > self.output_tokens:
            raise ValueError("reasoning_tokens cannot exceed output_tokens (output includes reasoning)")
        return self


class ToolCall(_Model):
    """One tool call the model makes."""

    name: str = Field(min_length=1)
    """Tool name as the agent defines it; ``get_weather`` also matches a declared
    ``mcp__<server>__get_weather``. The emitted name is always the one the request declared."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments object. String values may use templates; a value that is exactly one template
    (``"{{last_tool_result.id}}"``) is replaced by the raw value, keeping its JSON type."""

    @field_validator("arguments")
    @classmethod
    def _templates(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_templates(value)
        return value


class Handoff(_Model):
    """A transfer to another agent, rendered the way each SDK names it."""

    agent: str = Field(min_length=1)
    """Target agent name."""
    input: str | None = None
    """Claude Task/Agent ``prompt`` (the sub-agent's first user text). Default: the first user text."""
    description: str | None = None
    """Claude Task/Agent ``description``. Default: ``"Hand off to <agent>"``."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Extra arguments for OpenAI ``transfer_to_<agent>`` (only when the handoff declares an input type)."""

    @field_validator("input", "arguments")
    @classmethod
    def _templates(cls, value: Any) -> Any:
        _check_templates(value)
        return value


class HttpFault(_Model):
    """Answer with an HTTP error in the vendor's error shape instead of the turn."""

    type: Literal["http_429", "http_500", "http_503", "overloaded"]
    """``http_429`` rate limit (Gemini: ``RESOURCE_EXHAUSTED``); ``http_500``; ``http_503``;
    ``overloaded``: Anthropic 529 ``overloaded_error``, OpenAI 503, Gemini 503 ``UNAVAILABLE``."""
    retry_after_s: float | None = Field(default=None, ge=0)
    """``retry-after`` header in seconds (default 1 for ``http_429``, none otherwise)."""
    message: str | None = None
    """Error message; default: the vendor's usual wording."""
    times: int | None = Field(default=None, ge=1)
    """Fire only the first N times this turn is requested (per provider); unset: every time."""


class SlowFirstByteFault(_Model):
    """Wait before sending anything (status line included)."""

    type: Literal["slow_first_byte"]
    """Fault type."""
    delay_ms: int = Field(ge=0)
    """How long to wait."""
    times: int | None = Field(default=None, ge=1)
    """Fire only the first N times (per provider); unset: every time."""


class StallFault(_Model):
    """Pause in the middle of the response body."""

    type: Literal["stall"]
    """Fault type."""
    after_events: int = Field(default=1, ge=0)
    """Stream events (or, for JSON, half the body) sent before the pause."""
    stall_ms: int = Field(ge=0)
    """Length of the pause."""
    then: Literal["continue", "close"] = "continue"
    """After the pause: send the rest, or drop the connection."""
    times: int | None = Field(default=None, ge=1)
    """Fire only the first N times (per provider); unset: every time."""


class TruncateFault(_Model):
    """End the response early."""

    type: Literal["truncate"]
    """Fault type."""
    after_events: int = Field(default=1, ge=0)
    """Stream events sent before the end (JSON bodies: cut in half)."""
    clean_end: bool = False
    """False: drop the connection mid-body; True: end the HTTP body properly, events missing."""
    times: int | None = Field(default=None, ge=1)
    """Fire only the first N times (per provider); unset: every time."""


class ContentFault(_Model):
    """Damage the turn's content."""

    type: Literal["malformed_arguments", "unknown_tool", "huge_text", "wrong_content_type"]
    """``malformed_arguments``: tool-call arguments are cut JSON; ``unknown_tool``: the call names a
    tool the agent does not have; ``huge_text``: the text is padded to ``size_bytes``;
    ``wrong_content_type``: the body is sent with ``content_type``."""
    name: str = "nonexistent_tool"
    """``unknown_tool``: the undeclared tool name to call."""
    arguments_text: str | None = None
    """``malformed_arguments``: the exact text every call of the turn carries as its arguments — JSON
    broken another way than cut (``{"q": "x"}}``, ``{'q': 'x'}``, a trailing comma), or JSON that is not an
    object (``["x"]``). Unset: the call's JSON cut in half."""
    size_bytes: int = Field(default=1_000_000, ge=1)
    """``huge_text``: size of the text in bytes."""
    content_type: str = "text/html; charset=utf-8"
    """``wrong_content_type``: the header value to send."""
    times: int | None = Field(default=None, ge=1)
    """Fire only the first N times (per provider); unset: every time."""


Fault = Annotated[
    HttpFault | SlowFirstByteFault | StallFault | TruncateFault | ContentFault, Field(discriminator="type")
]

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "content_filter"]


class Turn(_Model):
    """One model response."""

    text: str | None = None
    """Assistant text. Templates: ``{{last_tool_result}}``, ``{{last_tool_result.a.0.b}}``,
    ``{{tool_results.N}}``, ``{{first_user}}``; alternatives ``{{a.error | a.status | "text"}}`` (the
    first that resolves). Checked when the script loads; one that resolves to nothing at run time makes
    the emulator answer an error instead of the literal text."""
    thinking: str | None = None
    """Thinking text (Anthropic ``thinking`` block, Gemini thought part) when the request enables it."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls, emitted together (parallel calls) after the text."""
    handoff: Handoff | None = None
    """Transfer to another agent (exclusive with ``tool_calls``). A string is the agent name."""
    usage: Usage | None = None
    """Token counts; unset fields fall back to ``defaults.usage``, then to estimates."""
    stop_reason: StopReason | None = None
    """Why the turn ended; default ``tool_use`` when it calls tools, else ``end_turn``."""
    latency_ms: int | None = Field(default=None, ge=0)
    """Model latency: wait before answering (default ``defaults.latency_ms``)."""
    fault: Fault | None = None
    """A fault injected into this turn."""

    @field_validator("text", "thinking")
    @classmethod
    def _templates(cls, value: str | None) -> str | None:
        if value is not None:
            _check_templates(value)
        return value

    @field_validator("handoff", mode="before", json_schema_input_type=Handoff | str | None)
    @classmethod
    def _handoff_shorthand(cls, value: Any) -> Any:
        # The published JSON Schema accepts the shorthand too (editors must not flag what validate accepts).
        return {"agent": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _has_content(self) -> Turn:
        has_content = bool(self.text or self.tool_calls or self.handoff)
        pure_error = isinstance(self.fault, HttpFault) and self.fault.times is None
        if not has_content and not pure_error:
            raise ValueError(
                "a turn needs 'text', 'tool_calls' or 'handoff' (only a turn whose "
                "fault is an HTTP error firing every time may have none)"
            )
        if self.handoff and self.tool_calls:
            raise ValueError("a turn cannot have both 'handoff' and 'tool_calls'")
        if (
            isinstance(self.fault, ContentFault)
            and self.fault.type == "malformed_arguments"
            and not (self.tool_calls or self.handoff)
        ):
            raise ValueError("fault 'malformed_arguments' needs a turn with tool_calls")
        return self


class Match(_Model):
    """How a request is recognised as this conversation (all given criteria must hold)."""

    first_user: str | None = None
    """Exact first user text (surrounding whitespace ignored; Claude's system reminders removed)."""
    first_user_regex: str | None = None
    """Python regex searched in the first user text (``re.search``; anchor with ``^…$``)."""
    system_contains: str | None = None
    """Substring the system prompt must contain (tells apart agents that get the same user text)."""

    @field_validator("first_user_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as e:
                raise ValueError(f"invalid regular expression: {e}") from None
        return value

    @model_validator(mode="after")
    def _one_text_rule(self) -> Match:
        if self.first_user is not None and self.first_user_regex is not None:
            raise ValueError("give 'first_user' or 'first_user_regex', not both")
        if self.first_user is None and self.first_user_regex is None and self.system_contains is None:
            raise ValueError("'match' needs first_user, first_user_regex or system_contains")
        return self

    def describe(self) -> str:
        parts = []
        if self.first_user is not None:
            parts.append(f"first_user={self.first_user!r}")
        if self.first_user_regex is not None:
            parts.append(f"first_user_regex={self.first_user_regex!r}")
        if self.system_contains is not None:
            parts.append(f"system_contains={self.system_contains!r}")
        return ", ".join(parts)


class ProviderTurns(_Model):
    """Turns used instead of the conversation's own for one provider."""

    turns: list[Turn] = Field(min_length=1)
    """The replacement turns."""


class Conversation(_Model):
    """One scripted conversation."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Unique name: used in response ids, logs, errors and the ``x-portagent-conversation`` header."""
    match: Match | None = None
    """How requests are recognised; unset: only by name (header ``x-portagent-conversation``)."""
    turns: list[Turn] = Field(min_length=1)
    """The turns, in order."""
    providers: dict[ProviderName, ProviderTurns] = Field(default_factory=dict)
    """Per-provider replacement turns (openai: Responses + Chat; claude: Claude Code's Messages requests;
    anthropic: any other Messages client; adk: Gemini). A provider without its own turns gets ``turns``."""

    @field_validator("providers")
    @classmethod
    def _wire_providers(cls, v: dict[str, ProviderTurns]) -> dict[str, ProviderTurns]:
        if "langgraph" in v:
            raise ValueError(
                "providers.langgraph: the emulator sees a LangGraph agent as the wire its chat model speaks; "
                "give its turns under openai, anthropic or adk"
            )
        return v

    def turns_for(self, provider: str) -> list[Turn]:
        override = self.providers.get(provider)  # type: ignore[call-overload]
        return list(override.turns) if override else list(self.turns)


class Defaults(_Model):
    """Script-wide defaults."""

    usage: Usage | None = None
    """Usage for turns that give none (field by field)."""
    latency_ms: int = Field(default=0, ge=0)
    """Latency for turns that give none."""


class EmulatorScript(_Model):
    """An emulator script file."""

    kind: Literal["emulator-script"] = "emulator-script"
    """Spec kind; always ``emulator-script``."""
    schema_version: Literal[1] = 1
    """Format version."""
    name: str | None = None
    """Script name, for humans and logs."""
    description: str | None = None
    """What the script is for."""
    defaults: Defaults = Field(default_factory=Defaults)
    """Script-wide defaults."""
    conversations: list[Conversation] = Field(min_length=1)
    """The conversations; the first whose ``match`` holds wins (file order)."""

    @model_validator(mode="after")
    def _unique(self) -> EmulatorScript:
        seen: dict[str, int] = {}
        keys: dict[tuple[Any, ...], str] = {}
        for i, conv in enumerate(self.conversations):
            if conv.name in seen:
                raise ValueError(
                    f"conversations.{i}.name: duplicate name {conv.name!r} "
                    f"(also conversations.{seen[conv.name]})"
                )
            seen[conv.name] = i
            if conv.match is not None:
                key = (conv.match.first_user, conv.match.first_user_regex, conv.match.system_contains)
                if key in keys:
                    raise ValueError(
                        f"conversations.{i}: same match as conversation {keys[key]!r}; "
                        "the second could never be reached"
                    )
                keys[key] = conv.name
        return self

    def conversation(self, name: str) -> Conversation | None:
        return next((c for c in self.conversations if c.name == name), None)


def load_script(path: str | os.PathLike[str]) -> EmulatorScript:
    """Load and validate a script file (YAML or JSON); problems raise ``SpecError`` naming file,
    field path and line (``portagent.contracts.loader``). No file there is the user's mistake in naming
    it (``UsageError``, exit 2), whichever command was given it — not a script with problems (exit 1)."""
    from portagent.contracts.errors import UsageError
    from portagent.contracts.loader import load_spec_file

    if not os.path.isfile(path):
        folder = " (it is a folder)" if os.path.isdir(path) else ""
        raise UsageError(f"{os.fspath(path)}: emulator script not found{folder}")
    return load_spec_file(os.fspath(path), EmulatorScript)
