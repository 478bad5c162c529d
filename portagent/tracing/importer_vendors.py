"""What is vendor-specific in ``trace import``: recognising an interaction's wire API, parsing its
bodies with the shared ``portagent.wire`` parsers, and the few per-vendor mapping rules.

- **Recognition.** By URI first: Gemini ``…/models/{model}:generateContent`` /
  ``:streamGenerateContent`` (model and streaming read from the URL; also Vertex AI paths),
  ``POST …/chat/completions``, ``POST …/responses``, ``POST …/messages`` (Anthropic, also
  ``?beta=true``). Behind an unknown path (a proxy, a gateway) the request body decides
  (:func:`endpoints_by_body`), and the importer only keeps a guess when both bodies parse.
- **Provider.** OpenAI → ``openai``, Anthropic → ``claude``, Gemini → ``adk`` (portagent's names of the
  agent SDKs that speak each wire API).
- **Tool names.** Claude Code names MCP tools ``mcp__<server>__<tool>``: mapped back to ``<tool>``
  with ``via: mcp`` (DESIGN §3).
- **Tool results.** Gemini's ``functionResponse.response`` must be an object; the documented
  convention is ``{"output": …}`` or ``{"error": …}`` and SDKs wrap a non-object result in one key
  (google-genai/llm ``output``, ADK ``result``, pydantic-ai ``return_value``): the wrapper is removed
  and ``{"error": …}`` is a failed result. Anthropic ``is_error`` is a failed result. Text results
  (strings, or lists of only text blocks) are reported as text, Claude Code's ``<system-reminder>``
  removed by the request parser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from portagent.wire.anthropic import parse_messages_request
from portagent.wire.anthropic_response import parse_messages_response
from portagent.wire.gemini import parse_generate_content_request
from portagent.wire.gemini_response import parse_generate_content_response
from portagent.wire.items import Item, RequestView
from portagent.wire.openai import parse_chat_request, parse_responses_request
from portagent.wire.openai_response import parse_chat_response, parse_responses_response
from portagent.wire.response import ResponseView

PROVIDER = {"openai": "openai", "anthropic": "claude", "gemini": "adk"}
"""Vendor of the traffic → portagent provider name."""

_GEMINI_PATH = re.compile(
    r"/(?:models|tunedModels)/(?P<model>[^/:]+):(?P<op>streamGenerateContent|generateContent)$"
)
_RESULT_WRAPPERS = ("output", "result", "return_value")
_TEXT_BLOCKS = ("text", "input_text", "output_text")


@dataclass(frozen=True)
class Endpoint:
    """The wire API of one interaction."""

    api: str
    """``openai.responses`` / ``openai.chat`` / ``anthropic.messages`` / ``gemini.generate_content``."""
    vendor: str
    """``openai`` / ``anthropic`` / ``gemini``."""
    url_model: str | None = None
    """The model named in the URL (Gemini)."""
    url_stream: bool = False
    """Whether the URL asks for a stream (Gemini ``streamGenerateContent``)."""


_REQUEST_PARSERS: dict[str, Callable[[Any], RequestView]] = {
    "openai.responses": parse_responses_request,
    "openai.chat": parse_chat_request,
    "anthropic.messages": parse_messages_request,
}
_RESPONSE_PARSERS: dict[str, Callable[[Any], ResponseView]] = {
    "openai.responses": parse_responses_response,
    "openai.chat": parse_chat_response,
    "anthropic.messages": parse_messages_response,
    "gemini.generate_content": parse_generate_content_response,
}


def endpoint_by_path(method: str, uri: str) -> Endpoint | None:
    path = urlsplit(uri).path.rstrip("/")
    if m := _GEMINI_PATH.search(path):
        return Endpoint("gemini.generate_content", "gemini", m["model"], m["op"] == "streamGenerateContent")
    if method != "POST":
        return None
    if path.endswith("/chat/completions"):
        return Endpoint("openai.chat", "openai")
    if path.endswith("/responses"):
        return Endpoint("openai.responses", "openai")
    if path.endswith("/messages"):
        return Endpoint("anthropic.messages", "anthropic")
    return None


def endpoints_by_body(body: Any, headers: Mapping[str, str]) -> list[Endpoint]:
    """Guesses from the request body alone, likeliest first; the caller keeps the first one whose
    request *and* response both parse (Anthropic and Chat bodies both have ``messages``)."""
    if not isinstance(body, Mapping):
        return []
    anthropic = Endpoint("anthropic.messages", "anthropic")
    chat = Endpoint("openai.chat", "openai")
    if "contents" in body:
        return [Endpoint("gemini.generate_content", "gemini")]
    if "messages" in body:
        return (
            [anthropic, chat] if "anthropic-version" in headers or "max_tokens" in body else [chat, anthropic]
        )
    if "input" in body and "model" in body:
        return [Endpoint("openai.responses", "openai")]
    return []


def json_body(body: Any) -> Any:
    """A request body as JSON data (pydantic-ai's ``parsed_body`` already is); raises ValueError."""
    if isinstance(body, str):
        return json.loads(body) if body.strip() else None
    return body


def parse_request(endpoint: Endpoint, body: Any) -> RequestView:
    if endpoint.api == "gemini.generate_content":
        return parse_generate_content_request(body, model=endpoint.url_model, stream=endpoint.url_stream)
    return _REQUEST_PARSERS[endpoint.api](body)


def parse_response(endpoint: Endpoint, body: Any) -> ResponseView:
    return _RESPONSE_PARSERS[endpoint.api](body)


def result_output(item: Item, api: str) -> tuple[Any, bool]:
    """(output, ok) of a tool result as portagent reports it (see the module docstring)."""
    value = item.output
    if api == "gemini.generate_content":
        if isinstance(value, Mapping) and "error" in value and not any(k in value for k in _RESULT_WRAPPERS):
            return value["error"], False
        if isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in _RESULT_WRAPPERS:
            return next(iter(value.values())), True
        return value, True
    ok = not item.details.get("is_error", False)
    if isinstance(value, str):
        return item.text, ok
    if isinstance(value, list) and all(
        isinstance(v, str) or (isinstance(v, Mapping) and v.get("type", "text") in _TEXT_BLOCKS)
        for v in value
    ):
        return item.text, ok
    return value, ok


def tool_name(name: str | None, vendor: str) -> tuple[str, str, dict[str, Any]]:
    """(ToolSpec name, via, provider_details) of a called tool."""
    tool = name or "?"
    if vendor == "anthropic" and tool.startswith("mcp__") and tool.count("__") >= 2:
        _, server, short = tool.split("__", 2)
        return short, "mcp", {"vendor_tool_name": tool, "mcp_server": server}
    return tool, "function", {}
