"""A neutral view of one model request, whatever vendor format it came in.

Every vendor parser (``wire.openai``, ``wire.anthropic``, ``wire.gemini``) turns a request body into
a :class:`RequestView`: the system text, the conversation as a flat, ordered tuple of :class:`Item` s
(each tagged with the index of the vendor message it came from), and the declared tools. The derived
facts below are defined once here so every consumer counts the same way:

- :meth:`RequestView.first_user_text` — the text of the first user message (vendor-injected blocks
  already removed by the parser);
- :meth:`RequestView.assistant_turns` — the number of *groups of consecutive assistant items*. A text
  message followed by two function calls in an OpenAI Responses ``input`` is one turn, exactly like
  one Anthropic assistant message holding text + two ``tool_use`` blocks. Tool results are not
  counted, so parallel calls do not skew the count;
- :meth:`RequestView.tool_results` — the tool results in request order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Api = Literal["openai.responses", "openai.chat", "anthropic.messages", "gemini.generate_content"]
Role = Literal["user", "assistant", "tool"]
Kind = Literal["text", "tool_call", "tool_result", "thinking", "other"]


class WireFormatError(ValueError):
    """A request body is not in the vendor's format (wrong types, missing required fields)."""


@dataclass(frozen=True)
class ToolDeclaration:
    """One tool the request offers the model."""

    name: str
    """The name as declared (e.g. ``mcp__billing__get_invoice``)."""
    description: str | None = None
    """The tool description, when given."""
    parameters: Mapping[str, Any] | None = None
    """The JSON schema of the arguments, when given (whatever key the vendor used)."""
    kind: str = "function"
    """``function`` for ordinary tools; the vendor's type for built-in/server tools."""


@dataclass(frozen=True)
class Item:
    """One element of the conversation: a text, a tool call, a tool result, a thinking block, …"""

    role: Role
    """Who produced it: ``user``, ``assistant`` (the model), or ``tool`` (a tool result)."""
    kind: Kind
    """What it is."""
    message_index: int
    """Index of the vendor message/content/item it came from (groups blocks of one message)."""
    text: str = ""
    """Text content (for tool results: the result flattened to text)."""
    name: str | None = None
    """Tool name, for tool calls and (when the vendor carries it) tool results."""
    call_id: str | None = None
    """The vendor's call id, when it has one (Gemini 2.x often has none)."""
    arguments: Any = None
    """Tool-call arguments parsed to an object; the raw string when it is not valid JSON."""
    output: Any = None
    """Tool result as the vendor carried it (string, list of blocks, or object)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Vendor-only facts (e.g. ``relayed_from`` for ADK's "For context:" turns, ``is_error``)."""


@dataclass(frozen=True)
class RequestView:
    """A vendor request body, parsed into one neutral shape."""

    api: Api
    """Which wire API the body was written for."""
    model: str | None
    """The model id the client asked for."""
    stream: bool
    """Whether the client asked for a streamed response."""
    system: str
    """System/developer instructions, joined with blank lines."""
    items: tuple[Item, ...]
    """The conversation, in request order."""
    tools: tuple[ToolDeclaration, ...] = ()
    """Tools declared in the request."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Vendor request options a responder needs (``include_usage``, ``thinking``, …)."""

    def first_user_text(self) -> str | None:
        """Text of the first user message that has text, blocks joined by a newline, stripped."""
        first: int | None = None
        parts: list[str] = []
        for item in self.items:
            if item.role != "user" or item.kind != "text":
                continue
            if first is None:
                first = item.message_index
            if item.message_index != first:
                break
            parts.append(item.text)
        if first is None:
            return None
        return "\n".join(p for p in parts if p).strip()

    def assistant_turns(self) -> int:
        """Number of groups of consecutive assistant items (see the module docstring)."""
        turns = 0
        in_turn = False
        for item in self.items:
            if item.role == "assistant":
                if not in_turn:
                    turns += 1
                in_turn = True
            else:
                in_turn = False
        return turns

    def tool_results(self) -> list[Item]:
        """The tool results, in request order."""
        return [i for i in self.items if i.kind == "tool_result"]

    def tool_names(self) -> list[str]:
        """Names of the declared tools, in declaration order."""
        return [t.name for t in self.tools]


def text_of(value: Any) -> str:
    """Flatten a vendor content value (string, list of blocks/parts, object) to plain text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(text_of(v) for v in value)
    if isinstance(value, Mapping):
        for key in ("text", "output_text", "input_text"):
            if isinstance(value.get(key), str):
                return str(value[key])
        if "content" in value:
            return text_of(value["content"])
        return ""
    return str(value)


def require_mapping(body: Any, what: str) -> Mapping[str, Any]:
    """Check the top level of a body is a JSON object."""
    if not isinstance(body, Mapping):
        raise WireFormatError(f"{what} body must be a JSON object, got {type(body).__name__}")
    return body


def require_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise WireFormatError(f"{what} must be a list, got {type(value).__name__}")
    return value
