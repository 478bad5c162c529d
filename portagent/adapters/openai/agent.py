"""OpenAI Agents SDK adapter (openai-agents 0.24).

Translation only:

- AgentSpec → ``Agent(name, instructions, model=OpenAIResponsesModel | OpenAIChatCompletionsModel)`` on an
  ``AsyncOpenAI`` client built per run (async clients are bound to their event loop, SDK_NOTES §8.5);
- ToolSpec → ``FunctionTool`` whose ``on_invoke_tool`` hands the raw JSON string to the gateway;
- delegation → ``handoffs=[handoff(agent)]`` / ``agent.as_tool()``;
- ``output_schema`` → an ``AgentOutputSchemaBase`` carrying the JSON Schema;
- events → ``RunHooks`` (model calls with usage, handoffs) feeding the session;
- a Responses answer cut by ``max_output_tokens`` (status ``incomplete``) is passed on as the answer it is,
  with ``finish_reason: length``, as every other provider does: openai-agents would raise
  ``ModelBehaviorError`` and lose the text and its usage (``_CutAnswers``). On Chat Completions the SDK
  keeps the text but not the vendor's finish reason: ``_CutAnswers`` notes it per request id. The
  function calls of a cut answer (the last one's arguments likely cut) are taken out of it before
  openai-agents sees them (``_ResponsesModel``, ``_ChatModel``): none runs, the run ends with the text so
  far, the model call names them (``calls_not_run``), and the history keeps no call left unanswered.

Tracing: openai-agents uploads traces to api.openai.com by default. On import this module replaces
the global processors with one that keeps nothing (``set_trace_processors``), so no trace is ever
uploaded — and vcrpy never sees the exporter's background HTTP.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from dataclasses import replace
from typing import Any

import openai
from agents import (
    Agent,
    AgentOutputSchemaBase,
    FunctionTool,
    Handoff,
    MaxTurnsExceeded,
    ModelBehaviorError,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
    RunErrorHandlers,
    RunHooks,
    Runner,
    TracingProcessor,
    handoff,
    set_trace_processors,
)
from agents.exceptions import AgentsException
from openai.types.responses import ResponseCompletedEvent

from portagent.adapters._shared import Stopwatch, http_hooks, observation_json, tls_context
from portagent.adapters.base import REGISTRY, AdapterOutcome, package_version
from portagent.adapters.context_manifest import delegation_input
from portagent.adapters.openai.schema import strict_compatible
from portagent.adapters.port import RunSession, endpoint_root
from portagent.contracts.capabilities import PROFILES
from portagent.contracts.errors import ProviderError, UsageError
from portagent.contracts.tool import ToolSpec


class _NoUpload(TracingProcessor):
    """Replaces openai-agents' BackendSpanExporter: spans are dropped, never sent anywhere."""

    def on_trace_start(self, trace: Any) -> None: ...
    def on_trace_end(self, trace: Any) -> None: ...
    def on_span_start(self, span: Any) -> None: ...
    def on_span_end(self, span: Any) -> None: ...
    def shutdown(self) -> None: ...
    def force_flush(self) -> None: ...


set_trace_processors([_NoUpload()])


class _SpecOutput(AgentOutputSchemaBase):
    """Structured final output from the AgentSpec's JSON Schema; portagent validates it afterwards."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self._strict = strict_compatible(schema)

    def is_plain_text(self) -> bool:
        return False

    def name(self) -> str:
        return "final_output"

    def json_schema(self) -> dict[str, Any]:
        return self._schema

    def is_strict_json_schema(self) -> bool:
        return self._strict

    def validate_json(self, json_str: str) -> Any:
        try:
            return json.loads(json_str)
        except json.JSONDecodeError:
            return json_str  # output_valid: false is decided by the runner, not a crash here


# --- answers cut short ------------------------------------------------------------------------------


STOPPED_EARLY = {"max_output_tokens": "length", "content_filter": "content_filter"}
"""Responses ``incomplete_details.reason`` → finish reason of an answer the API ended early; Chat Completions
uses the values themselves as its ``finish_reason``."""


class _CutAnswers:
    """Answers cut by the token limit: Responses the API ended early because they reached
    ``max_output_tokens``, completions whose ``finish_reason`` is ``length``. An answer the content filter
    ended (``content_filter``) is treated alike, traced ``finish_reason: content_filter``.

    openai-agents treats such a response as a failure; the Messages API, Gemini and Chat Completions return
    the text so far with a ``length`` reason, and so does portagent on every provider: the response goes
    on marked completed, its id remembered so the model call is traced with ``finish_reason: length``.
    Its function calls are not run (``without_calls``): the last one's arguments may be cut mid-JSON, as on
    the anthropic and langgraph providers."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        """Responses kept although incomplete: their finish reason (``length``, ``content_filter``) by id."""
        self.chat: dict[str | None, str] = {}
        """Chat Completions: the vendor's finish reason of each completion, by its ``x-request-id`` (the
        SDK's ``ModelResponse`` keeps that id, not the reason)."""
        self.not_run: dict[tuple[str | None, str | None], list[str]] = {}
        """The names of the calls taken out of a cut answer, by (response id, request id) as the SDK's
        ``ModelResponse`` carries them, until its model call is traced."""
        self.bare: set[tuple[str | None, str | None]] = set()
        """Cut answers left with no message once their calls were taken out, by the same key, until
        ``ended_bare`` ends one."""
        self.bare_structured: dict[str, tuple[str | None, str | None]] = {}
        """Such an answer of an agent with an output schema, by agent, until its next model call: an agent
        run as a tool has no ``ended_bare`` (``Agent.as_tool`` takes no error handlers), and the SDK asks
        its model again — ``_Hooks.on_llm_start`` ends that run instead (``_EndedBare``)."""

    def keep(self, response: Any) -> bool:
        """Pass an incomplete Responses answer on as completed when the token limit or the content filter
        ended it (the text so far is the answer, as on every other provider); any other reason stays a
        failure."""
        details = getattr(response, "incomplete_details", None)
        finish = STOPPED_EARLY.get(str(getattr(details, "reason", None)))
        if getattr(response, "status", None) != "incomplete" or finish is None:
            return False
        self.ids[response.id] = finish
        response.status = "completed"
        return True

    def wrap(self, client: openai.AsyncOpenAI) -> None:
        """The non-streaming path: the SDK checks the status right after ``responses.create``."""
        create = client.responses.create

        async def create_keeping_cut_answers(*args: Any, **kwargs: Any) -> Any:
            response = await create(*args, **kwargs)
            if not kwargs.get("stream"):
                self.keep(response)
            return response

        client.responses.create = create_keeping_cut_answers  # type: ignore[method-assign]
        chat_create = client.chat.completions.create

        async def create_noting_finish(*args: Any, **kwargs: Any) -> Any:
            response = await chat_create(*args, **kwargs)
            if kwargs.get("stream"):
                self._watch(response)
            else:
                choices = getattr(response, "choices", None) or []
                self._note(
                    getattr(response, "_request_id", None), choices[0].finish_reason if choices else None
                )
            return response

        client.chat.completions.create = create_noting_finish  # type: ignore[method-assign]

    def _note(self, request_id: str | None, reason: str | None) -> None:
        if reason:
            self.chat[request_id] = reason

    def _watch(self, stream: Any) -> None:
        """A streamed completion's finish reason arrives in its last chunks: noted as they pass."""
        chunks = getattr(stream, "_iterator", None)
        response = getattr(stream, "response", None)
        if chunks is None or response is None:  # another openai version's stream: the reason stays unknown
            return
        request_id = response.headers.get("x-request-id")

        async def noting() -> Any:
            async for chunk in chunks:
                for choice in getattr(chunk, "choices", None) or []:
                    self._note(request_id, choice.finish_reason)
                yield chunk

        stream._iterator = noting()

    def chat_finish(self, request_id: str | None) -> str | None:
        """The finish reason of the Chat Completions call with this request id (once), or None."""
        return self.chat.pop(request_id, None)

    def is_cut(self, response_id: str | None, request_id: str | None) -> bool:
        return response_id in self.ids or self.chat.get(request_id) in STOPPED_EARLY.values()

    def without_calls(self, output: list[Any], response_id: str | None, request_id: str | None) -> list[Any]:
        """``output`` (a response's items, as openai-agents reads them) without its function calls when the
        answer was cut, their names kept for the model call (``calls_not_run``); else ``output`` itself.
        Every tool portagent declares is a function (ToolSpecs, agents as tools, handoffs): no other item
        type is one the SDK would run here."""
        if not self.is_cut(response_id, request_id):
            return output
        calls = [item for item in output if getattr(item, "type", None) == "function_call"]
        if not calls:
            return output
        self.not_run[(response_id, request_id)] = [str(getattr(c, "name", "")) for c in calls]
        kept = [item for item in output if getattr(item, "type", None) != "function_call"]
        if not any(getattr(item, "type", None) == "message" for item in kept):
            self.bare.add((response_id, request_id))
        return kept

    def ended_bare(self, data: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult | None:
        """openai-agents' ``invalid_final_output`` handler. An agent with an output schema whose cut answer
        held nothing but calls has no final output once they are taken out, and the SDK would ask the model
        again (and again, up to the turn limit): that answer ends the run with its text so far, ``""``, as on
        every provider. Any other answer without a final output is left to the SDK (None)."""
        responses = data.run_data.raw_responses
        key = (responses[-1].response_id, responses[-1].request_id) if responses else None
        if key in self.bare:
            self.bare.discard(key)
            return RunErrorHandlerResult(final_output="", include_in_history=False)
        return None

    def calls_not_run(self, response_id: str | None, request_id: str | None) -> list[str]:
        """The calls taken out of this answer (once), or none."""
        return self.not_run.pop((response_id, request_id), [])

    def response_without_calls(self, response: Any) -> Any:
        """A ``ModelResponse`` (unstreamed) without the calls of a cut answer."""
        response.output = self.without_calls(response.output, response.response_id, response.request_id)
        return response

    async def stream_without_calls(self, events: Any) -> Any:
        """A model's stream events, the calls of a cut answer taken out of its ``response.completed``. Each
        call's ``response.output_item.done`` is held back until then (and dropped with it): openai-agents
        falls back to those items when the final response holds no output, which would bring them back."""
        held: list[Any] = []
        async with aclosing(events) as stream:
            async for event in stream:
                kind = getattr(event, "type", None)
                if (
                    kind == "response.output_item.done"
                    and getattr(event.item, "type", None) == "function_call"
                ):
                    held.append(event)
                    continue
                if isinstance(event, ResponseCompletedEvent):
                    response = event.response
                    kept = self.without_calls(
                        response.output, response.id, getattr(response, "_request_id", None)
                    )
                    if kept is not response.output:
                        response.output, held = kept, []
                if kind in _TERMINAL:  # the calls of an answer not cut go on, just before its end
                    for waiting in held:
                        yield waiting
                    held = []
                yield event
        for waiting in held:  # a stream without its terminal event: the SDK fails it, as before
            yield waiting


_TERMINAL = frozenset(
    {"response.completed", "response.failed", "response.incomplete", "error", "response.error"}
)


class _ResponsesModel(OpenAIResponsesModel):
    """A cut answer as a completed one without its calls: unstreamed, ``_CutAnswers.wrap`` marked it
    completed; streamed, its ``response.incomplete`` event becomes ``response.completed`` here."""

    def __init__(self, model: str, openai_client: openai.AsyncOpenAI, cut: _CutAnswers) -> None:
        super().__init__(model=model, openai_client=openai_client)
        self._cut = cut

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        return self._cut.response_without_calls(await super().get_response(*args, **kwargs))

    async def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        async with aclosing(self._cut.stream_without_calls(self._completing(*args, **kwargs))) as events:
            async for event in events:
                yield event

    async def _completing(self, *args: Any, **kwargs: Any) -> Any:
        stream: Any = super().stream_response(*args, **kwargs)  # an async generator (it has aclose)
        async with aclosing(stream) as events:
            async for event in events:
                response = getattr(event, "response", None)
                if getattr(event, "type", None) == "response.incomplete" and self._cut.keep(response):
                    yield ResponseCompletedEvent(
                        type="response.completed", response=response, sequence_number=event.sequence_number
                    )
                    return  # the terminal event: the SDK's stream would raise if asked for more
                yield event


class _ChatModel(OpenAIChatCompletionsModel):
    """Chat Completions: a completion cut by ``length`` keeps its text (the SDK's own behaviour) but not its
    tool calls."""

    def __init__(self, model: str, openai_client: openai.AsyncOpenAI, cut: _CutAnswers) -> None:
        super().__init__(model=model, openai_client=openai_client)
        self._cut = cut

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        return self._cut.response_without_calls(await super().get_response(*args, **kwargs))

    async def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        stream: Any = super().stream_response(*args, **kwargs)
        async with aclosing(self._cut.stream_without_calls(stream)) as events:
            async for event in events:
                yield event


# --- hooks -----------------------------------------------------------------------------------------

_FINISH = {"function_call": "tool_calls", "message": "stop"}


class _EndedBare(Exception):
    """An agent run as a tool, with an output schema, whose cut answer held nothing but calls: its run ends
    there with ``""`` (the answer so far), as on every provider, instead of asking its model again."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self.agent = agent


class _Hooks(RunHooks[Any]):
    """Model calls and handoffs → session events; budgets are checked before each model call."""

    def __init__(self, session: RunSession, cut: _CutAnswers) -> None:
        self.session = session
        self.latency = Stopwatch(session.clock)
        self.cut = cut

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        bare = self.cut.bare_structured.pop(agent.name, None)
        if bare is not None and bare in self.cut.bare:  # not ended by the root run's ``ended_bare``
            self.cut.bare.discard(bare)
            raise _EndedBare(agent.name)
        self.session.before_model_call(agent.name)
        self.latency.start(agent.name)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        latency = self.latency.stop(agent.name)
        usage = response.usage
        kinds = [getattr(item, "type", None) for item in response.output]
        finish = "tool_calls" if "function_call" in kinds else "stop"
        chat_finish = self.cut.chat_finish(getattr(response, "request_id", None))
        if response.response_id in self.cut.ids:
            finish = self.cut.ids[response.response_id]
        elif chat_finish is not None and chat_finish in STOPPED_EARLY.values():
            finish = chat_finish  # Chat Completions: the SDK's response has the text, not why it ended
        details: dict[str, Any] = {"response_id": response.response_id}
        key = (response.response_id, getattr(response, "request_id", None))
        if key in self.cut.bare and getattr(agent, "output_type", None) is not None:
            self.cut.bare_structured[agent.name] = key
        not_run = self.cut.calls_not_run(*key)
        if not_run:  # cut by the token limit: the calls the answer began, not run
            details["calls_not_run"] = not_run
        cached = getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", 0) or 0
        reasoning = getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", 0) or 0
        self.session.record_model_call(
            agent=agent.name,
            model=self.session.model_for(agent.name),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=cached,
            reasoning_tokens=reasoning,
            latency_ms=latency,
            finish_reason=finish,
            response_id=response.response_id,
            details=details,
        )

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        self.session.record_handoff(from_agent.name, to_agent.name, "handoff")


# --- building --------------------------------------------------------------------------------------


class _Builder:
    def __init__(self, session: RunSession) -> None:
        self.session = session
        self.agents: dict[str, Agent[Any]] = {}
        self.cut = _CutAnswers()
        self.hooks = _Hooks(session, self.cut)
        endpoint = session.endpoint
        # The endpoint is a server root (``…/v1`` given by the user is taken as its root); the OpenAI
        # client wants the ``/v1`` in its base URL (``AsyncOpenAI(base_url=…/v1)``).
        root = endpoint_root(endpoint.client_url)
        base_url = root + "/v1" if root else None
        # One client per run: async clients are bound to the loop that created them. The SDK's own
        # retries are kept (max_retries=2) so a 429 is retried natively and shows up as extra requests
        # (and, through the response hook, as ``error`` events rather than silence).
        from portagent.recording.player import transport_kwargs

        http = openai.DefaultAsyncHttpx2Client(
            event_hooks=http_hooks(session, "the OpenAI client may retry"),
            verify=tls_context(),
            **transport_kwargs("httpx2"),  # a replay: the cassette answers in process
        )
        self.client = openai.AsyncOpenAI(
            api_key=endpoint.api_key or REGISTRY["openai"].dummy_key, base_url=base_url, http_client=http
        )
        self.cut.wrap(self.client)
        api = session.options.openai_api or session.bundle.spec.models.openai_api
        self.api = api
        self.strict_fallbacks: list[str] = []

    def model(self, name: str) -> Any:
        model_id = self.session.model_for(name)
        if self.api == "chat_completions":
            return _ChatModel(model_id, self.client, self.cut)
        return _ResponsesModel(model_id, self.client, self.cut)

    def tool(self, agent_name: str, spec: ToolSpec) -> FunctionTool:
        session = self.session

        async def invoke(ctx: Any, raw_args: str) -> str:
            obs = await session.gateway(agent_name).call(
                spec.name, raw_args, vendor_call_id=getattr(ctx, "tool_call_id", None), via="function"
            )
            return observation_json(obs)

        strict = strict_compatible(spec.input_schema)
        if not strict and spec.name not in self.strict_fallbacks:
            self.strict_fallbacks.append(spec.name)
        return FunctionTool(
            name=spec.name,
            description=spec.model_description(),
            params_json_schema=spec.input_schema,
            on_invoke_tool=invoke,
            strict_json_schema=strict,
        )

    def agent(self, name: str) -> Agent[Any]:
        if name in self.agents:
            return self.agents[name]
        node = self.session.bundle.agents[name]
        spec = node.spec
        agent: Agent[Any] = Agent(
            name=spec.name,
            instructions=spec.instructions,
            model=self.model(name),
            tools=[self.tool(name, t) for t in node.tools.values()],
            output_type=_SpecOutput(spec.output_schema) if spec.output_schema else None,
            model_settings=self._settings(),
        )
        self.agents[name] = agent  # registered before edges, so handoff cycles resolve
        handoffs: list[Agent[Any] | Handoff[Any, Any]] = []
        for edge in node.edges:
            target = self.agent(edge.target)
            if edge.kind == "handoff":
                handoffs.append(handoff(target, tool_description_override=edge.description or None))
            else:
                agent.tools.append(self.agent_tool(name, target, edge.description))
        agent.handoffs = handoffs
        return agent

    def agent_tool(self, parent: str, target: Agent[Any], description: str) -> FunctionTool:
        node = self.session.bundle.agents[target.name]
        tool = target.as_tool(
            tool_name=target.name,
            tool_description=description or node.spec.description or target.name,
            hooks=self.hooks,
            run_config=RunConfig(tracing_disabled=True),
            # a backstop above the run's own limit (the root's budget, counted by portagent), as for the
            # root agent: a sub-agent's ``budget`` is not a second, tighter limit on any provider
            max_turns=self.session.bundle.spec.budget.max_turns + 1,
            failure_error_function=None,
        )
        session = self.session
        inner = tool.on_invoke_tool

        async def invoke(ctx: Any, raw_args: str) -> Any:
            session.record_handoff(
                parent,
                target.name,
                "agent_as_tool",
                details={"vendor_call_id": getattr(ctx, "tool_call_id", None)},
            )
            try:
                output = await inner(ctx, _with_context(session, parent, target.name, raw_args))
            except _EndedBare as ended:
                if ended.agent != target.name:
                    raise
                return ""
            # structured output goes back as JSON, as every other provider sends it (openai-agents would
            # send ``str(final_output)``: a Python repr); text and the SDK's own fallbacks pass unchanged
            if output is None or isinstance(output, str):
                return output
            return json.dumps(output, ensure_ascii=False, sort_keys=True, default=str)

        return replace(tool, on_invoke_tool=invoke)

    def _settings(self) -> Any:
        from agents import ModelSettings

        shared = self.session.bundle.spec.models
        if not shared.force_shared_settings:
            return ModelSettings(include_usage=True)
        return ModelSettings(temperature=shared.temperature, max_tokens=shared.max_tokens, include_usage=True)


def _with_context(session: RunSession, parent: str, target: str, raw_args: str) -> str:
    """The agent tool's ``{"input": …}`` with the handoff package first on a ``context: handoff`` edge
    (``adapters/context_manifest.delegation_input``); anything else is passed on unchanged."""
    try:
        args = json.loads(raw_args)
    except ValueError:
        return raw_args
    if not isinstance(args, dict) or not isinstance(args.get("input"), str):
        return raw_args
    given = delegation_input(session, parent, target, args["input"])
    return raw_args if given == args["input"] else json.dumps({**args, "input": given}, ensure_ascii=False)


# --- running ---------------------------------------------------------------------------------------


class OpenAIAgentsAdapter:
    name = "openai"
    capabilities = PROFILES["openai"]

    def sdk_version(self) -> str:
        return package_version("openai-agents")

    def cli_version(self) -> str | None:
        return None

    async def run(self, session: RunSession) -> AdapterOutcome:
        builder = _Builder(session)
        starting = builder.agent(session.bundle.root)
        backstop = (
            session.bundle.spec.budget.max_turns + 1
        )  # portagent counts turns; the SDK limit is a backstop
        config = RunConfig(tracing_disabled=False, workflow_name=f"portagent:{session.bundle.root}")
        handlers: RunErrorHandlers[Any] = {"invalid_final_output": builder.cut.ended_bare}
        history: list[Any] = []
        result: Any = None
        current = starting
        try:
            for message in session.request.messages:
                run_input: Any = [*history, {"role": "user", "content": message}] if history else message
                if session.options.streaming:
                    streamed = Runner.run_streamed(
                        current,
                        run_input,
                        max_turns=backstop,
                        hooks=builder.hooks,
                        run_config=config,
                        error_handlers=handlers,
                    )
                    async for _ in streamed.stream_events():
                        pass
                    result = streamed
                else:
                    result = await Runner.run(
                        current,
                        run_input,
                        max_turns=backstop,
                        hooks=builder.hooks,
                        run_config=config,
                        error_handlers=handlers,
                    )
                history = result.to_input_list()
                current = result.last_agent
            session.check_stopped()
        except MaxTurnsExceeded:
            session.check_stopped()
            return AdapterOutcome(
                vendor_stop="max_turns", final_agent=current.name, details=self._details(builder)
            )
        except Exception as e:
            _raise_mapped(e, session)
        await builder.client.close()
        final = result.final_output if result is not None else None
        return AdapterOutcome(
            final_output=final,
            final_agent=result.last_agent.name if result else None,
            details=self._details(builder),
        )

    @staticmethod
    def _details(builder: _Builder) -> dict[str, Any]:
        out: dict[str, Any] = {"openai_api": builder.api}
        if builder.strict_fallbacks:
            out["strict_json_schema_false"] = builder.strict_fallbacks
        return out


def _raise_mapped(e: Exception, session: RunSession) -> None:
    """The one place SDK and vendor errors become portagent errors."""
    session.reraise_signal(e)
    cause: BaseException | None = e
    while cause is not None and not isinstance(cause, openai.OpenAIError):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, openai.APIStatusError):
        body = cause.response.text
        raise ProviderError(
            f"OpenAI API error {cause.status_code}: {cause.message}",
            status=cause.status_code,
            body=body,
            retryable=REGISTRY["openai"].retryable(cause.status_code),
        ) from e
    if isinstance(cause, openai.APIConnectionError):
        raise ProviderError(
            f"cannot reach the OpenAI endpoint {session.endpoint.base_url or 'api.openai.com'}: "
            f"{cause.__cause__ or cause}",
            retryable=True,
        ) from e
    if isinstance(cause, openai.OpenAIError):
        raise UsageError(f"OpenAI client configuration error: {cause}") from e
    if isinstance(e, ModelBehaviorError):
        raise ProviderError(f"the model misbehaved (openai-agents ModelBehaviorError): {e}") from e
    if isinstance(e, AgentsException):
        raise ProviderError(f"openai-agents error: {type(e).__name__}: {e}") from e
    raise e


ADAPTER = OpenAIAgentsAdapter()
