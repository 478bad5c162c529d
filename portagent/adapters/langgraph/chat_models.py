"""The LangChain chat model of each vendor a langgraph run can use (reading what it answered:
``replies.py``).

- ``build_chat_model``: ``ChatOpenAI`` / ``ChatAnthropic`` / ``ChatGoogleGenerativeAI`` on the run's own
  HTTP client, pointed at ``Endpoint.client_url`` (the run journal's proxy when the run keeps one), with the
  shared settings the spec forces; ``with_tools``: the tools bound as each vendor takes them;
  ``output_kwargs``: the output schema in each vendor's request field.
"""

from __future__ import annotations

import importlib
import json
from functools import lru_cache
from typing import Any

from portagent.adapters._shared import http_hooks, tls_context
from portagent.adapters.base import REGISTRY
from portagent.adapters.langgraph import replies
from portagent.adapters.port import RunSession
from portagent.contracts.capabilities import ANTHROPIC_DEFAULT_MAX_TOKENS
from portagent.contracts.errors import MissingExtraError, UsageError

INTEGRATIONS: dict[str, tuple[str, str]] = {
    "openai": ("langchain_openai", "langchain-openai"),
    "anthropic": ("langchain_anthropic", "langchain-anthropic"),
    "google_genai": ("langchain_google_genai", "langchain-google-genai"),
}
"""Each chat-model vendor's LangChain integration: (module, package). The ``langgraph`` extra installs all
three; an environment holding ``langgraph`` alone passes ``get_adapter``'s check (it looks at ``langgraph``)."""


def integration_modules(bundle: Any) -> tuple[str, ...]:
    """The LangChain integration modules the bundle's chat models need (``AdapterInfo.spec_modules``)."""
    from portagent.adapters.langgraph.rules import vendors

    return tuple(INTEGRATIONS[v][0] for v in vendors(bundle) if v in INTEGRATIONS)


def require_integration(vendor: str) -> Any:
    """The LangChain integration module of ``vendor``, imported; missing (or failing to import, e.g. its
    vendor SDK is absent) it is the same usage error as any other missing extra, never a traceback."""
    module, package = INTEGRATIONS[vendor]
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError("langgraph", package, "langgraph") from e


def build_chat_model(session: RunSession, agent: str, vendor: str, model_id: str, closers: list[Any]) -> Any:
    """``agent``'s LangChain chat model for ``vendor`` on the run's endpoint (its own HTTP client, closed by
    ``closers`` at the end of the run), with that agent's own forced settings: a sub-agent never runs at the
    root's temperature or output limit."""
    from portagent.recording.player import transport_kwargs  # a replay: the cassette answers in process

    endpoint = session.endpoint
    if vendor not in INTEGRATIONS:
        raise UsageError(
            f"models.langgraph: unknown chat model vendor {vendor!r}"
        )  # the verdict says so first
    require_integration(vendor)
    key = api_key(session, vendor)
    shared = session.bundle.agents[agent].spec.models
    temperature = shared.temperature if shared.force_shared_settings else None
    max_tokens = shared.max_tokens if shared.force_shared_settings else None
    # unforced, a limit the Messages API requires falls back to the root's as before (a sub-agent without one)
    unforced_limit = None if shared.force_shared_settings else session.bundle.spec.models.max_tokens
    streaming = session.options.streaming
    # the run journal's proxy when the run keeps one (resume replays it), else the endpoint itself: a server
    # root (``Endpoint`` keeps a ``…/v1`` given by the user as its root); each client adds its API version
    # (ChatOpenAI's base URL takes it here), never ``/v1/v1/…``
    url = endpoint.sdk_url  # its query goes on each request (http_hooks)
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
            use_responses_api=(session.options.openai_api or session.bundle.spec.models.openai_api)
            == "responses",
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
            max_tokens=max_tokens or shared.max_tokens or unforced_limit or ANTHROPIC_DEFAULT_MAX_TOKENS,
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
            result = replies.read_chat_reply(super()._create_chat_result, response, generation_info)
            for choice, generation in zip(raw.get("choices") or [], result.generations, strict=False):
                calls = (choice.get("message") or {}).get("tool_calls") or []
                generation.message.response_metadata[replies.ORDER_KEY] = [c.get("id") for c in calls]
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

    replies.read_responses_leniently()
    return _RunChatOpenAI


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
