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
  ``ModelBehaviorError`` and lose the text and its usage (``CutAnswers``). On Chat Completions the SDK
  keeps the text but not the vendor's finish reason: ``CutAnswers`` notes it per model call. The
  function calls of a cut answer (the last one's arguments likely cut) are taken out of it before
  openai-agents sees them (``cut_answers``): none runs, the run ends with the text so
  far, the model call names them (``calls_not_run``), and the history keeps no call left unanswered.

Tracing: openai-agents uploads traces to api.openai.com by default. On import this module replaces
the global processors with one that keeps nothing (``set_trace_processors``), so no trace is ever
uploaded — and vcrpy never sees the exporter's background HTTP.
"""

from __future__ import annotations

import json
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
    RunConfig,
    RunErrorHandlers,
    RunHooks,
    Runner,
    TracingProcessor,
    handoff,
    set_trace_processors,
)
from agents.exceptions import AgentsException

from portagent.adapters._shared import (
    Stopwatch,
    exception_chain,
    http_hooks,
    observation_json,
    tls_context,
    with_known_platform,
)
from portagent.adapters.base import REGISTRY, AdapterOutcome, package_version
from portagent.adapters.context_manifest import delegation_input
from portagent.adapters.openai.cut_answers import (
    ChatModel,
    CutAnswers,
    EndedBare,
    ResponsesModel,
)
from portagent.adapters.openai.schema import strict_compatible
from portagent.adapters.port import RunSession
from portagent.contracts.capabilities import PROFILES
from portagent.contracts.errors import ProviderError, UsageError
from portagent.contracts.tool import ToolSpec
from portagent.tools.observations import Observation


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


# --- hooks -----------------------------------------------------------------------------------------

_FINISH = {"function_call": "tool_calls", "message": "stop"}


class _Hooks(RunHooks[Any]):
    """Model calls and handoffs → session events; budgets are checked before each model call."""

    def __init__(self, session: RunSession, cut: CutAnswers) -> None:
        self.session = session
        self.latency = Stopwatch(session.clock)
        self.cut = cut

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        bare = self.cut.bare_structured.pop(agent.name, None)
        if bare is not None and bare in self.cut.bare:  # not ended by the root run's ``ended_bare``
            self.cut.bare.discard(bare)
            raise EndedBare(agent.name)
        self.session.before_model_call(agent.name)
        self.latency.start(agent.name)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        latency = self.latency.stop(agent.name)
        usage = response.usage
        kinds = [getattr(item, "type", None) for item in response.output]
        finish = "tool_calls" if "function_call" in kinds else "stop"
        # not ended normally (length, content_filter, other; a refusal): Chat Completions' ModelResponse has
        # the text, not why it ended; a refusal says it in its content, which the SDK sees as text now
        finish = self.cut.finish(response.response_id, getattr(response, "request_id", None)) or finish
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
        self.cut = CutAnswers()
        self.hooks = _Hooks(session, self.cut)
        endpoint = session.endpoint
        # The endpoint is a server root (``Endpoint`` keeps a ``…/v1`` given by the user as its root); the
        # OpenAI client wants the ``/v1`` in its base URL (``AsyncOpenAI(base_url=…/v1)``).
        root = endpoint.sdk_url  # its query goes on each request (http_hooks)
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
        self.client = with_known_platform(  # no thread hop per run for the SDK's platform probe
            openai.AsyncOpenAI(
                api_key=endpoint.api_key or REGISTRY["openai"].dummy_key, base_url=base_url, http_client=http
            )
        )
        self.cut.wrap(self.client)
        api = session.options.openai_api or session.bundle.spec.models.openai_api
        self.api = api
        self.strict_fallbacks: list[str] = []

    def model(self, name: str) -> Any:
        model_id = self.session.model_for(name)
        if self.api == "chat_completions":
            return ChatModel(model_id, self.client, self.cut)
        return ResponsesModel(model_id, self.client, self.cut)

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
            model_settings=self._settings(name),
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
            vendor_id = getattr(ctx, "tool_call_id", None)
            # arguments that are not {"input": string}: the gateway's validation_error, traced, and the
            # sub-agent is not run (before, the SDK's own parse failed the whole run with ModelBehaviorError)
            task = await session.gateway(parent).delegation_task(
                target.name, raw_args, vendor_call_id=vendor_id
            )
            if isinstance(task, Observation):
                return observation_json(task)
            session.record_handoff(
                parent, target.name, "agent_as_tool", details={"vendor_call_id": vendor_id}
            )
            try:
                output = await inner(ctx, _with_context(session, parent, target.name, raw_args))
            except EndedBare as ended:
                if ended.agent != target.name:
                    raise
                return ""
            # structured output goes back as JSON, as every other provider sends it (openai-agents would
            # send ``str(final_output)``: a Python repr); text and the SDK's own fallbacks pass unchanged
            if output is None or isinstance(output, str):
                return output
            return json.dumps(output, ensure_ascii=False, sort_keys=True, default=str)

        return replace(tool, on_invoke_tool=invoke)

    def _settings(self, name: str) -> Any:
        """``name``'s own shared settings: a handoff target or agent tool keeps its spec's temperature and
        max_tokens (as its native ``model_settings``), never the root's."""
        from agents import ModelSettings

        shared = self.session.bundle.agents[name].spec.models
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
    # the vendor error the SDK wrapped with ``raise … from``, never what was being handled when ``e`` was
    # raised (an error in a clean-up after a dropped connection is that error, not "cannot reach", retryable)
    cause = next((c for c in exception_chain(e) if isinstance(c, openai.OpenAIError)), None)
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
