"""The LangChain chat model of each vendor a langgraph run can use, and reading what it answered.

- ``build_chat_model``: ``ChatOpenAI`` / ``ChatAnthropic`` / ``ChatGoogleGenerativeAI`` on the run's own
  HTTP client, pointed at ``Endpoint.client_url`` (the run journal's proxy when the run keeps one), with the
  shared settings the spec forces; ``output_kwargs``: the output schema in each vendor's request field;
- ``read_calls``: a reply's tool calls in the model's own order, those LangChain could not read kept as
  invalid tool calls (the gateway answers them), each with an id that is the same on every run;
- ``finish_reason`` / ``stream_finished``: why the model stopped, from the vendor's own stop value, and
  whether a streamed answer reached its vendor's terminal event.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from portagent.adapters._shared import http_hooks, reply_finish, tls_context
from portagent.adapters.base import REGISTRY
from portagent.adapters.port import RunSession
from portagent.contracts.capabilities import ANTHROPIC_DEFAULT_MAX_TOKENS
from portagent.contracts.errors import MissingExtraError, UsageError
from portagent.wire.finish import RESPONSES_INCOMPLETE

INTEGRATIONS: dict[str, tuple[str, str]] = {
    "openai": ("langchain_openai", "langchain-openai"),
    "anthropic": ("langchain_anthropic", "langchain-anthropic"),
    "google_genai": ("langchain_google_genai", "langchain-google-genai"),
}
"""Each chat-model vendor's LangChain integration: (module, package). The ``langgraph`` extra installs all
three; an environment holding ``langgraph`` alone passes ``get_adapter``'s check (it looks at ``langgraph``)."""


def require_integration(vendor: str) -> Any:
    """The LangChain integration module of ``vendor``, imported; missing (or failing to import, e.g. its
    vendor SDK is absent) it is the same usage error as any other missing extra, never a traceback."""
    module, package = INTEGRATIONS[vendor]
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError("langgraph", package, "langgraph") from e


def build_chat_model(session: RunSession, vendor: str, model_id: str, closers: list[Any]) -> Any:
    """The agent's LangChain chat model for ``vendor`` on the run's endpoint (its own HTTP client, closed by
    ``closers`` at the end of the run)."""
    from portagent.recording.player import transport_kwargs  # a replay: the cassette answers in process

    endpoint = session.endpoint
    if vendor not in INTEGRATIONS:
        raise UsageError(
            f"models.langgraph: unknown chat model vendor {vendor!r}"
        )  # the verdict says so first
    require_integration(vendor)
    key = api_key(session, vendor)
    shared = session.bundle.spec.models
    temperature = shared.temperature if shared.force_shared_settings else None
    max_tokens = shared.max_tokens if shared.force_shared_settings else None
    streaming = session.options.streaming
    # the run journal's proxy when the run keeps one (resume replays it), else the endpoint itself: a server
    # root (``Endpoint`` keeps a ``…/v1`` given by the user as its root); each client adds its API version
    # (ChatOpenAI's base URL takes it here), never ``/v1/v1/…``
    url = endpoint.client_url
    if vendor == "openai":
        import openai

        http = openai.DefaultAsyncHttpx2Client(
            event_hooks=http_hooks(session, "the OpenAI client may retry"),
            verify=tls_context(),
            **transport_kwargs("httpx2"),
        )
        closers.append(http.aclose)
        return _chat_openai()(
            model=model_id,
            api_key=key,
            base_url=url + "/v1" if url else None,
            http_async_client=http,
            # --openai-api (RunOptions) over the spec's models.openai_api, as on the openai provider
            use_responses_api=(session.options.openai_api or shared.openai_api) == "responses",
            streaming=streaming,
            stream_usage=True,
            temperature=temperature,
            max_tokens=max_tokens,
        )
    if vendor == "anthropic":
        import anthropic

        http = anthropic.DefaultAsyncHttpxClient(
            event_hooks=http_hooks(session, "the anthropic client may retry"),
            verify=tls_context(),
            **transport_kwargs("httpx2"),
        )
        closers.append(http.aclose)
        return chat_anthropic(http)(
            model=model_id,
            api_key=key,
            base_url=url or None,
            streaming=streaming,
            temperature=temperature,
            # the Messages API requires max_tokens: the spec's value when it has one, forced or not, as
            # the anthropic adapter sends it (same wire), else the same default
            max_tokens=max_tokens or shared.max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS,
        )
    if vendor == "google_genai":
        from langchain_google_genai import ChatGoogleGenerativeAI

        gemini = ChatGoogleGenerativeAI(
            model=model_id,
            google_api_key=key,
            base_url=url or None,
            streaming=streaming,
            temperature=temperature,
            max_output_tokens=max_tokens,
            # google-genai builds its async httpx client from these (langchain passes them to the sync
            # client too, which a run never uses): the same hooks and TLS context as the other vendors
            client_args={
                "event_hooks": http_hooks(session, "the google-genai client may retry"),
                "verify": tls_context(),
            },
        )
        closers.append(gemini.aclose)  # its async transport must close on this loop
        return gemini
    raise AssertionError(vendor)  # INTEGRATIONS holds every vendor this function builds


PLAYED_WIRES = frozenset({"openai", "claude"})
"""The wires whose chat models take the cassette player's transport in a replay (``_replay_transport``):
the OpenAI and Anthropic clients are built here on an HTTP client of portagent's. google-genai builds
its own from ``client_args``, which langchain-google-genai hands to its sync client too (an async transport
there would break it), so a bundle with a Gemini chat model replays under vcrpy (``LangGraphAdapter.replays_in_process``)."""


def api_key(session: RunSession, vendor: str) -> str:
    """The key ``vendor``'s client sends. A live run gives each vendor its own vendor's key variable
    (``runtime.keys.key_envs``) — never one vendor's key to another's host —; the endpoint's key is the
    root agent's vendor's (the CLI reads it from that variable; an API caller may set it). The emulator
    and replays take the endpoint's dummy key."""
    import os

    from portagent.adapters.langgraph.rules import VENDORS, wires

    endpoint = session.endpoint
    if endpoint.source not in ("live", "endpoint"):
        return endpoint.api_key or REGISTRY["langgraph"].dummy_key
    env = REGISTRY[VENDORS[vendor]].key_env
    root = wires(session.bundle)[:1]
    if endpoint.api_key and root and env == REGISTRY[root[0]].key_env:
        return endpoint.api_key
    key = os.environ.get(env)
    if not key:
        raise UsageError(f"--live on langgraph needs {env} in the environment for its {vendor} chat model")
    return key


CACHE_WRITE_KEYS = ("cache_creation", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")
"""Where LangChain's ``input_token_details`` puts prompt-cache writes. langchain-anthropic 1.7 moves them from
``cache_creation`` (then 0) to the per-TTL keys whenever the answer breaks them down, as the API does."""


def cache_writes(details: dict[str, Any]) -> int:
    """The prompt-cache write tokens of a reply's ``usage_metadata["input_token_details"]``."""
    return sum(int(details.get(k) or 0) for k in CACHE_WRITE_KEYS)


def chat_anthropic(http: Any) -> Any:
    """``ChatAnthropic`` on the run's own HTTP client. langchain-anthropic 1.7 takes no client parameter and
    shares one cached async HTTP client per base URL across the process; async clients are bound to the
    event loop that first used them (SDK_NOTES §8.5), so the next run's first request failed with "Event
    loop is closed" and was silently retried. The overrides of private names in this adapter are here
    (``_async_client``, a ``cached_property``; ``_format_output``, which builds the reply message);
    ``tests/adapters/langgraph`` fails if either stops working."""
    from functools import cached_property

    import anthropic
    from langchain_anthropic import ChatAnthropic
    from langchain_core.messages.tool import invalid_tool_call

    class _RunChatAnthropic(ChatAnthropic):
        @cached_property
        def _async_client(self) -> anthropic.AsyncClient:
            return anthropic.AsyncClient(**self._client_params, http_client=http, open_telemetry=False)

        def _format_output(self, data: Any, **kwargs: Any) -> Any:
            # A tool_use whose input is not an object (cut JSON text) cannot be an AIMessage tool call
            # (pydantic refuses it, failing the run): it becomes an invalid tool call holding that text,
            # which the gateway answers with validation_error, as on every other provider.
            bad = {
                b.id: (b.name, b.input)
                for b in getattr(data, "content", None) or []
                if getattr(b, "type", None) == "tool_use" and not isinstance(b.input, dict)
            }
            if not bad:
                return super()._format_output(data, **kwargs)
            blocks = [b.model_copy(update={"input": {}}) if b.id in bad else b for b in data.content]
            result = super()._format_output(data.model_copy(update={"content": blocks}), **kwargs)
            message: Any = result.generations[0].message  # an AIMessage (it has tool_use blocks)
            message.tool_calls = [c for c in message.tool_calls if c.get("id") not in bad]
            message.invalid_tool_calls = [
                *message.invalid_tool_calls,
                *(
                    invalid_tool_call(
                        name=name,
                        args=raw if isinstance(raw, str) else json.dumps(raw),
                        id=call_id,
                        error="arguments are not a JSON object",
                    )
                    for call_id, (name, raw) in bad.items()
                ),
            ]
            return result

    return _RunChatAnthropic


ORDER_KEY = "portagent_tool_call_ids"
"""``response_metadata`` key under which ``_chat_openai`` keeps a Chat Completions reply's tool call ids in
the model's order (``read_calls`` reads it; the graph's own message does not keep it)."""


@lru_cache(maxsize=1)
def _chat_openai() -> Any:
    """``ChatOpenAI``, noting the order of a Chat Completions reply's tool calls. langchain-openai 1.8 splits
    them into ``tool_calls`` and ``invalid_tool_calls`` (arguments that are not JSON) and keeps nothing of
    the order the model gave (a Responses reply and Anthropic's keep it in their content blocks; a streamed
    one in its chunks' indexes). ``_create_chat_result`` is private: the langgraph tests (the order of a
    broken call and a good one) fail if it stops being called."""
    from langchain_openai import ChatOpenAI

    class _RunChatOpenAI(ChatOpenAI):
        def _create_chat_result(self, response: Any, generation_info: Any = None) -> Any:
            raw = response if isinstance(response, dict) else response.model_dump(warnings=False)
            bad = {
                c.get("id"): c
                for choice in raw.get("choices") or []
                for c in (choice.get("message") or {}).get("tool_calls") or []
                if _not_an_object((c.get("function") or {}).get("arguments"))
            }
            result = super()._create_chat_result(_with_empty_arguments(response, bad), generation_info)
            if bad:
                _as_invalid_calls(
                    result.generations[0].message,
                    {i: (c["function"].get("name"), c["function"]["arguments"]) for i, c in bad.items()},
                )
            for choice, generation in zip(raw.get("choices") or [], result.generations, strict=False):
                calls = (choice.get("message") or {}).get("tool_calls") or []
                generation.message.response_metadata[ORDER_KEY] = [c.get("id") for c in calls]
                refusal = (choice.get("message") or {}).get("refusal")
                if isinstance(refusal, str):  # langchain-openai drops an empty one: a refusal all the same
                    generation.message.additional_kwargs["refusal"] = refusal
            return result

        def _convert_chunk_to_generation_chunk(
            self, chunk: Any, default_chunk_class: Any, base_generation_info: Any
        ) -> Any:
            # A streamed completion's refusal (``delta.refusal``) is dropped by langchain-openai 1.8, which
            # keeps that of a whole one (``additional_kwargs["refusal"]``): kept the same way here, the
            # chunks' pieces joined as LangChain adds chunks (``refusal_as_text`` reads it).
            generation = super()._convert_chunk_to_generation_chunk(
                chunk, default_chunk_class, base_generation_info
            )
            choices = chunk.get("choices") or chunk.get("chunk", {}).get("choices") or []
            piece = (choices[0].get("delta") or {}).get("refusal") if choices else None
            if generation is not None and isinstance(piece, str):  # "" too: a refusal that says nothing
                generation.message.additional_kwargs["refusal"] = piece
            return generation

    _read_responses_leniently()
    return _RunChatOpenAI


NOT_AN_OBJECT = "arguments are not a JSON object"
"""The error of a call whose arguments are JSON but not an object (``null``, ``["x"]``, ``"x"``)."""


def _not_an_object(text: Any) -> bool:
    """Whether a call's argument text is JSON — as langchain-openai reads it (``strict=False``) — that is not
    an object. langchain-openai hands such a value to ``AIMessage`` as the call's ``args``, which pydantic
    refuses, failing the run (unreadable text it keeps as an invalid tool call itself)."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        return not isinstance(json.loads(text, strict=False), dict)
    except ValueError:
        return False


def _with_empty_arguments(response: Any, bad: dict[Any, Any]) -> Any:
    """A Chat Completions reply with the ``bad`` calls' arguments made ``{}``, for langchain-openai to read
    (a copy; the reply itself as it is when there are none)."""
    if not bad:
        return response
    if isinstance(response, dict):
        copied: Any = json.loads(json.dumps(response))
        for choice in copied.get("choices") or []:
            for call in (choice.get("message") or {}).get("tool_calls") or []:
                if call.get("id") in bad:
                    call["function"]["arguments"] = "{}"
        return copied
    copied = response.model_copy(deep=True)
    for choice in copied.choices:
        for call in choice.message.tool_calls or []:
            if call.id in bad:
                call.function.arguments = "{}"
    return copied


def _as_invalid_calls(message: Any, bad: dict[Any, tuple[str | None, str]]) -> None:
    """Move the ``bad`` calls (id → name, argument text) of a reply read with ``{}`` for their arguments to
    its invalid tool calls, holding the text the model sent — which the gateway answers with
    ``validation_error`` and the next request sends back — and put that text back in the reply's content
    blocks (the Responses API's ``function_call`` blocks carry it to the next request)."""
    from langchain_core.messages.tool import invalid_tool_call

    message.tool_calls = [c for c in message.tool_calls if c.get("id") not in bad]
    message.invalid_tool_calls = [
        *message.invalid_tool_calls,
        *(
            invalid_tool_call(name=name, args=text, id=i, error=NOT_AN_OBJECT)
            for i, (name, text) in bad.items()
        ),
    ]
    if isinstance(message.content, list):
        for block in message.content:
            if (
                isinstance(block, dict)
                and block.get("type") == "function_call"
                and block.get("call_id") in bad
            ):
                block["arguments"] = bad[block["call_id"]][1]


_OWN_CALL: ContextVar[bool] = ContextVar("portagent_langgraph_model_call", default=False)
"""Set while the adapter's own model call runs (``reading_replies``)."""


@contextmanager
def reading_replies() -> Iterator[None]:
    """Around the adapter's own model call: langchain-openai's Responses reader (wrapped by
    ``_read_responses_leniently``) keeps a call whose arguments are not an object as an invalid tool call.
    Other code using langchain-openai in the process is left as it is."""
    token = _OWN_CALL.set(True)
    try:
        yield
    finally:
        _OWN_CALL.reset(token)


@lru_cache(maxsize=1)
def _read_responses_leniently() -> None:
    """langchain-openai reads a Responses API reply — unary, and a streamed one's last event — with the
    module function ``_construct_lc_result_from_responses_api``, which fails the run on a call whose
    arguments are JSON but not an object (see ``_not_an_object``). Wrapped once: during ``reading_replies``
    such calls are read with ``{}`` and then made invalid tool calls holding their text. A later
    langchain-openai without the function is left alone (``tests/adapters/test_malformed_arguments.py`` then
    fails)."""
    from langchain_openai.chat_models import base

    original = getattr(base, "_construct_lc_result_from_responses_api", None)
    if original is None:
        return

    def construct(response: Any, *args: Any, **kwargs: Any) -> Any:
        output = getattr(response, "output", None) or []
        bad = {
            o.call_id: (o.name, o.arguments)
            for o in output
            if getattr(o, "type", None) == "function_call" and _not_an_object(o.arguments)
        }
        if not bad or not _OWN_CALL.get():
            return original(response, *args, **kwargs)
        read = response.model_copy(
            update={
                "output": [
                    o.model_copy(update={"arguments": "{}"}) if getattr(o, "call_id", None) in bad else o
                    for o in output
                ]
            }
        )
        result = original(read, *args, **kwargs)
        _as_invalid_calls(result.generations[0].message, bad)
        return result

    base._construct_lc_result_from_responses_api = construct


def with_tools(model: Any, vendor: str, functions: list[dict[str, Any]]) -> Any:
    """``model`` with the agent's tools bound, declared verbatim on every vendor. OpenAI's function format
    suits ChatOpenAI and ChatAnthropic (both send the JSON Schema as written). For Gemini, langchain-google-
    genai's ``bind_tools`` converts it to Gemini's OpenAPI subset, which changes the contract the model sees
    (``type: [integer, "null"]`` became a string; every optional property of a nested object became
    required): Gemini gets one ``Tool`` of ``FunctionDeclaration``s with ``parameters_json_schema`` instead
    — the schema as written, as the adk provider declares it — bound as is (``bind_tools`` would turn it
    back into dicts; the request builder passes a ``Tool`` through untouched)."""
    if not functions:
        return model
    if vendor != "google_genai":
        return model.bind_tools(functions)
    from google.genai import types

    declarations = [
        types.FunctionDeclaration(
            name=f["function"]["name"],
            description=f["function"]["description"],
            parameters_json_schema=f["function"]["parameters"],
        )
        for f in functions
    ]
    return model.bind(tools=[types.Tool(function_declarations=declarations)])


def output_kwargs(vendor: str, schema: dict[str, Any], openai_api: str = "responses") -> dict[str, Any]:
    """The output schema in each vendor's own request field, bound to the chat model (structured output):
    OpenAI ``response_format`` json_schema (``text.format`` on the Responses API), Anthropic
    ``output_config.format``, Gemini ``response_json_schema`` with a JSON MIME type.

    On Chat Completions, a bound ``response_format`` makes ChatOpenAI call the openai client's ``parse``,
    which refuses any tool that is not ``strict`` ("Only strict function tools can be auto-parsed") before
    sending anything; the same field goes in the request body instead (``extra_body``), and the answer's
    JSON text is read here like every other vendor's."""
    if vendor == "openai":
        fmt = {
            "type": "json_schema",
            "json_schema": {"name": "final_output", "schema": schema, "strict": False},
        }
        return (
            {"extra_body": {"response_format": fmt}}
            if openai_api == "chat_completions"
            else {"response_format": fmt}
        )
    if vendor == "anthropic":
        return {"output_config": {"format": {"type": "json_schema", "schema": schema}}}
    return {"response_mime_type": "application/json", "response_json_schema": schema}


TOOL_BLOCKS = {"tool_use": "id", "function_call": "call_id", "tool_call": "id"}
"""Content blocks that are tool calls, and the key of their call id: Anthropic ``tool_use``, the Responses
API's ``function_call``, LangChain's standard ``tool_call``."""


def read_calls(reply: Any, vendor: str, id_stem: str) -> list[Any]:
    """The reply's tool calls in the order the model sent them, each a LangChain ``tool_call`` or, when its
    arguments are not a JSON object, an ``invalid_tool_call`` holding the text the model sent (the gateway
    answers it with validation_error, so the vendor sees its own call answered).

    A streamed reply is read from its chunks: LangChain parses a streamed call's text as *partial* JSON, so
    cut arguments (``{"order_id": "ORD-7", "amount_eur": 3``) would become a call with what was left;
    here they must be whole JSON, as for an answer in one piece.

    Ids: langchain-google-genai invents a random one for each Gemini call (Gemini sends none); that id
    reaches the request body of the next chat model after a handoff (OpenAI's, Anthropic's), which a
    cassette then never matches. A Gemini call, and any call without an id, gets ``<id_stem>_<index>``
    (``id_stem`` is the run's model-call count: the same on record and replay). Gemini's requests carry
    no call id, so nothing the vendor sees changes."""
    from langchain_core.messages.tool import invalid_tool_call, tool_call

    chunks = getattr(reply, "tool_call_chunks", None) or []
    out: list[Any] = []
    if chunks:
        for chunk in chunks:
            text: str = chunk.get("args") or ""
            args: Any = None
            error: str | None = None
            try:
                args = json.loads(text) if text.strip() else {}
            except ValueError as e:
                error = f"arguments are not valid JSON: {e}"
            if error is None and not isinstance(args, dict):
                error = "arguments are not a JSON object"
            name, call_id = chunk.get("name") or "", chunk.get("id")
            out.append(
                tool_call(name=name, args=args, id=call_id)
                if error is None
                else invalid_tool_call(name=name, args=text, id=call_id, error=error)
            )
    else:
        for call in reply.tool_calls or []:
            given = call.get("args")
            if isinstance(given, dict):
                out.append(dict(call))
                continue
            out.append(
                invalid_tool_call(
                    name=call.get("name"),
                    args=given if isinstance(given, str) else json.dumps(given),
                    id=call.get("id"),
                    error="arguments are not a JSON object",
                )
            )
        out += list(getattr(reply, "invalid_tool_calls", None) or [])
        order = _vendor_order(reply)
        out.sort(key=lambda c: order.get(c.get("id"), len(order)))  # stable: unknown ids keep their place
    for i, call in enumerate(out):
        if vendor == "google_genai" or not call.get("id"):
            call["id"] = f"{id_stem}_{i}"
    return out


def _vendor_order(reply: Any) -> dict[Any, int]:
    """Call id → position, from what the reply kept of the vendor's order: its content blocks (Anthropic,
    the Responses API), or ``ORDER_KEY`` (Chat Completions, ``_chat_openai``)."""
    ids: list[Any] = list((reply.response_metadata or {}).get(ORDER_KEY) or [])
    if not ids and isinstance(reply.content, list):
        for block in reply.content:
            key = TOOL_BLOCKS.get(str(block.get("type"))) if isinstance(block, dict) else None
            if key is not None:
                ids.append(block.get(key))
    return {call_id: i for i, call_id in enumerate(ids)}


def without_calls(content: Any) -> Any:
    """A reply's content without its tool-call blocks: the message kept when its calls are not run (an
    answer cut by the token limit), which must not show the vendor calls left unanswered."""
    if not isinstance(content, list):
        return content
    return [b for b in content if not (isinstance(b, dict) and b.get("type") in TOOL_BLOCKS)]


def refusal_as_text(reply: Any) -> Any | None:
    """The content of an OpenAI reply in which the model refused, its refusal as text — what the model said,
    the answer of the turn, as an Anthropic refusal's text is — or None when it did not refuse. OpenAI says a
    refusal in the content, not in a finish reason: a Responses ``refusal`` content block, Chat Completions'
    ``message.refusal`` (``additional_kwargs["refusal"]``; the content is then empty). LangChain hands such a
    reply on as an answer without text, and runs its calls."""
    refusal = (reply.additional_kwargs or {}).get("refusal")
    content = reply.content
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "refusal" for b in content):
        return [
            {"type": "text", "text": str(b.get("refusal") or "")}
            if isinstance(b, dict) and b.get("type") == "refusal"
            else b
            for b in content
        ]
    if not isinstance(refusal, str):  # an empty refusal ("") is one all the same
        return None
    if isinstance(content, list):
        return [*content, {"type": "text", "text": refusal}]
    return (content or "") + refusal


def finish_reason(vendor: str, reply: Any, calls: bool) -> str:
    """Why the model stopped, from what the chat model kept of the vendor's answer (its own stop value in
    ``response_metadata``), in the trace's vocabulary. ``tool_calls`` — the reply's calls run — only when the
    vendor says the reply ended normally with calls (Anthropic ``tool_use``, Gemini ``STOP``, Chat Completions
    ``tool_calls`` / ``stop``, the Responses API ``completed``; ``_shared.reply_finish``): a reply holding calls
    that the token limit cut (``length``), the content filter stopped (``content_filter``), that ended for
    any other reason (``other``, its text the turn's answer) or that Gemini says is broken (``error``, a
    provider error) runs none of them, as on every provider. LangChain runs the calls of any reply."""
    meta = reply.response_metadata or {}
    if vendor == "anthropic":
        raw = meta.get("stop_reason")
        return reply_finish("anthropic", str(raw) if raw else None, has_calls=calls)
    if vendor == "google_genai":
        raw = meta.get("finish_reason")
        raw = getattr(raw, "name", raw)  # a FinishReason, or its name
        if not raw and prompt_blocked(reply) is not None:  # a filtered reply holding nothing
            return "content_filter"
        return reply_finish("gemini", str(raw) if raw else None, has_calls=calls)
    if refusal_as_text(reply) is not None:  # the model refused: the content filter's stop, as Anthropic's
        return "content_filter"
    raw = meta.get("finish_reason")
    if raw:  # Chat Completions
        return reply_finish("chat", str(raw), has_calls=calls)
    status = meta.get("status")
    if status == "incomplete":  # the Responses API ended the answer early
        reason = (meta.get("incomplete_details") or {}).get("reason")
        return RESPONSES_INCOMPLETE.get(str(reason), "other")
    if status is not None and status != "completed":
        return "other"
    return "tool_calls" if calls else "stop"


def prompt_blocked(reply: Any) -> str | None:
    """The block reason of a Gemini answer without a candidate that refused the prompt itself (only
    ``promptFeedback.blockReason``; langchain-google-genai hands it on as an empty message with its
    ``prompt_feedback``), or None. Read as a filtered reply holding nothing (``content_filter``, the turn's
    answer ``""``), as the adk provider and the trace importer read it; an answer that has a finish reason is
    not one (its ``prompt_feedback`` says ``block_reason`` 0 / none)."""
    meta = reply.response_metadata or {}
    if meta.get("finish_reason"):
        return None
    feedback = meta.get("prompt_feedback")
    reason = feedback.get("block_reason") if isinstance(feedback, dict) else None
    if not reason:
        return None
    return str(getattr(reason, "name", reason))


def stream_finished(vendor: str, reply: Any) -> bool:
    """Whether a streamed answer reached its vendor's end: the stop value that only the last events carry
    (Anthropic ``message_delta.stop_reason``, just before ``message_stop``; OpenAI Chat Completions'
    ``finish_reason``, before ``[DONE]``; the Responses API's ``response.completed`` / ``.incomplete`` /
    ``.failed``; Gemini's ``finishReason`` on its last chunk). A body that ends cleanly without it was cut
    short: the vendor clients end such a stream quietly, and LangChain would hand on the text so far as if
    it were the answer."""
    if reply is None:
        return False
    meta = reply.response_metadata or {}
    if vendor == "anthropic":
        return bool(meta.get("stop_reason"))
    if vendor == "google_genai":  # a blocked prompt's one chunk carries no finishReason: it is whole
        return bool(meta.get("finish_reason")) or prompt_blocked(reply) is not None
    return bool(meta.get("finish_reason")) or meta.get("status") not in (None, "queued", "in_progress")
