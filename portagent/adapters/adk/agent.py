"""Google ADK adapter (google-adk 2.13, google-genai 2.34).

Translation only:

- AgentSpec → ``LlmAgent(name, instruction, model=Gemini(model, client_kwargs=…))`` run by ``Runner`` on
  an ``InMemorySessionService`` session (``RunRequest.session_id``, else ``portagent-<run_id>``);
- ToolSpec → ``_GatewayTool`` (a ``BaseTool``) declaring ``parameters_json_schema`` = the ToolSpec's JSON
  Schema verbatim; ``run_async`` hands the arguments (Gemini sends objects) to the gateway;
- delegation ``handoff`` → ``sub_agents`` (ADK's ``transfer_to_agent``; transfers only go down the
  spec's edges: ``disallow_transfer_to_parent/peers``); ``agent_as_tool`` → ``_DelegateTool`` (an
  ``AgentTool`` declaring ``{"input": string}`` like the other providers);
- ``output_schema`` → ``LlmAgent.output_schema`` (the raw dict; see ``events.output_schema_problems``;
  with tools, ``events.declare_output_schema`` shows it to the model in ADK's ``set_model_response``);
- model calls → ``before_model_callback`` (``session.before_model_call``) and ``after_model_callback``
  (``record_model_call``, non-partial responses only): both fire once per model request, for
  sub-agents and agents run as tools too, *before* ADK's event queue, so the trace keeps call order
  (ADK's event stream lags behind the callbacks; it is used only for the final text);
- a response runs its function calls only when Gemini ended it ``STOP`` (ADK runs them whatever the finish
  reason; ``_shared.reply_finish``). Cut by the token limit (``MAX_TOKENS``, the last call's arguments likely
  cut), filtered, ``OTHER`` or any other reason: ``after_model_callback`` hands ADK the response without
  them, so the turn ends with its text so far, the model call (``length`` / ``content_filter`` / ``other``)
  names them in ``calls_not_run``, and the session keeps no call left unanswered. Gemini's own error about
  the reply (``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``: ``error``) runs
  none either and fails the run as a provider error;
- ``before_tool_callback`` only answers calls to names no tool declares (ADK hands it a placeholder
  tool): the gateway answers them with an ``unknown_tool`` observation (traced and counted) instead of
  ADK's free-text error;
- ``after_tool_callback`` records the ``handoff`` once ``transfer_to_agent`` has run.

Transport: google-genai switches its async transport to aiohttp whenever aiohttp is importable
(``BaseApiClient._use_aiohttp()``: aiohttp installed and no ``httpx_async_client`` / custom transport).
Each run builds its own ``httpx.AsyncClient`` (async clients are bound to their loop) and passes it as
``HttpOptions.httpx_async_client``, so installing aiohttp never changes what is sent or recorded.

Tracing: ADK creates OpenTelemetry spans through the global tracer provider. portagent never installs
one (its OTel export uses a private provider), so in a portagent process ADK's spans go nowhere, and
ADK's own exporters only start in its CLI/Agent Engine (``GOOGLE_CLOUD_AGENT_ENGINE_*``): no network
besides the model endpoint.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from typing import Any

import httpx
import pydantic
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig as AdkRunConfig
from google.adk.agents.run_config import (  # type: ignore[attr-defined]  # ADK's documented import path (an implicit re-export)
    StreamingMode,
)
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.genai import errors as genai_errors
from google.genai import types

from portagent.adapters._shared import (
    ENDED_EARLY,
    Stopwatch,
    http_hooks,
    observation_object,
    tls_context,
)
from portagent.adapters.adk import rules
from portagent.adapters.adk.events import (
    calls_not_run,
    declare_output_schema,
    final_text,
    finish_reason,
    usage_fields,
)
from portagent.adapters.base import REGISTRY, AdapterOutcome, package_version
from portagent.adapters.context_manifest import delegation_input
from portagent.adapters.port import RunSession, RunSignal, unwrap_signal
from portagent.adapters.session_gateway import (
    AGENT_TOOL_SCHEMA,  # ADK's own AgentTool would declare ``request``
)
from portagent.contracts.capabilities import PROFILES
from portagent.contracts.errors import ProviderError, UnsupportedFeatureError, UsageError
from portagent.contracts.portability import Verdict
from portagent.contracts.tool import ToolSpec
from portagent.tools.observations import Observation

APP_NAME = "portagent"
ADK_CONTROL_TOOLS = frozenset({"transfer_to_agent", "set_model_response"})
"""ADK's own tools: they steer ADK (transfer, structured output) and are not portable tool calls."""


class _QuietSignals(logging.Filter):
    """ADK logs every node failure with its traceback (``workflow/_node_runner.py``, ``runners.py``).
    A budget stop or an approval pause is portagent's own control flow, not a failure: drop those."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or (
            unwrap_signal(exc) is None and not isinstance(getattr(exc, "error", None), RunSignal)
        )


for _name in ("google_adk.google.adk.workflow._node_runner", "google_adk.google.adk.runners"):
    logging.getLogger(_name).addFilter(_QuietSignals())


# --- tools -----------------------------------------------------------------------------------------


class _GatewayTool(BaseTool):
    """A ToolSpec declared to Gemini from its JSON Schema; every call goes through the gateway."""

    def __init__(self, spec: ToolSpec, agent_name: str, session: RunSession) -> None:
        super().__init__(name=spec.name, description=spec.model_description())
        self._spec = spec
        self._agent = agent_name
        self._session = session

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters_json_schema=self._spec.input_schema
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
        obs = await self._session.gateway(self._agent).call(
            self._spec.name, args, vendor_call_id=tool_context.function_call_id, via="function"
        )
        return observation_object(obs)


class _DelegateTool(AgentTool):
    """``agent_as_tool``: ADK's AgentTool (nested Runner, same callbacks) with the portable input."""

    def __init__(self, agent: LlmAgent, parent: str, description: str, session: RunSession) -> None:
        super().__init__(agent)
        self._parent = parent
        self._tool_description = description
        self._session = session

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self._tool_description, parameters_json_schema=AGENT_TOOL_SCHEMA
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
        self._session.check_stopped()
        # arguments that do not match AGENT_TOOL_SCHEMA ({} or {"input": 42}): the gateway's validation_error,
        # traced, and the sub-agent never runs on a task the model did not give (as on anthropic, langgraph)
        task = await self._session.gateway(self._parent).delegation_task(
            self.agent.name, args, vendor_call_id=tool_context.function_call_id
        )
        if isinstance(task, Observation):
            return observation_object(task)
        self._session.record_handoff(
            self._parent,
            self.agent.name,
            "agent_as_tool",
            details={"vendor_call_id": tool_context.function_call_id},
        )
        request = delegation_input(self._session, self._parent, self.agent.name, task)  # context: handoff
        return await super().run_async(args={"request": request}, tool_context=tool_context)


# --- callbacks -------------------------------------------------------------------------------------


class _Callbacks:
    """ADK agent callbacks → session events. Exceptions raised here (BudgetStop) end the run."""

    def __init__(self, session: RunSession) -> None:
        self.session = session
        self.known: dict[str, set[str]] = {}
        self.output_schemas: dict[str, dict[str, Any]] = {}
        self.latency = Stopwatch(session.clock)
        self.broken: tuple[str, str] | None = None
        """Gemini's finish reason and message of a reply it said was broken (``error``: its calls malformed,
        not allowed, too many): the run fails with it as a provider error."""
        self.cut_bare: str | None = None
        """The agent whose last model response, not ended normally (cut by the token limit, filtered,
        ``OTHER``…), held nothing once its calls were taken out — or nothing at all: ADK then has no event to
        end the turn with, and the answer is its text so far, ``""``."""

    def before_model(self, callback_context: Any, llm_request: Any) -> None:
        name = callback_context.agent_name
        self.cut_bare = None
        self.session.before_model_call(name)
        schema = self.output_schemas.get(name)
        if schema is not None:
            declare_output_schema(llm_request, schema)
        self.latency.start(name)

    def after_model(self, callback_context: Any, llm_response: Any) -> Any:
        """Records the model call; returns the response without its function calls when the token limit
        cut it (ADK then runs the replacement), else None (ADK keeps its own)."""
        if llm_response.partial:
            return None  # SSE chunks: the aggregated, non-partial response carries the call's usage
        name = callback_context.agent_name
        latency = self.latency.stop(name)
        parts = llm_response.content.parts if llm_response.content and llm_response.content.parts else []
        vendor_finish = llm_response.finish_reason.name if llm_response.finish_reason else None
        details: dict[str, Any] = {
            "finish_reason": vendor_finish,
            "model_version": llm_response.model_version,
        }
        if llm_response.error_code:
            details["error_code"] = llm_response.error_code
            if vendor_finish is None:  # no candidate: Gemini refused the prompt (promptFeedback.blockReason)
                details["prompt_blocked"] = str(
                    getattr(llm_response.error_code, "name", llm_response.error_code)
                )
        finish = finish_reason(
            vendor_finish, has_calls=any(p.function_call for p in parts), error_code=llm_response.error_code
        )
        not_run = calls_not_run(finish, [p.function_call.name for p in parts if p.function_call])
        if not_run:  # not ended normally (STOP): the calls the answer began, not run
            details["calls_not_run"] = not_run
        self.session.record_model_call(
            agent=name,
            model=self.session.model_for(name),
            **usage_fields(llm_response.usage_metadata),
            latency_ms=latency,
            response_id=None,
            details=details,
            finish_reason=finish,
        )
        if finish == "error" and vendor_finish not in (None, "STOP"):
            # Gemini says the reply itself is broken (MALFORMED_FUNCTION_CALL…): the run fails once ADK ends
            # the turn, whatever text came with it (ADK failed only a reply without any)
            self.broken = self.broken or (vendor_finish, llm_response.error_message or "")
        # A response holding nothing (no text, no call) that Gemini ended for another reason than STOP (its
        # filter, the token limit, OTHER…): ADK makes it an error (``error_code``: the reason) and the run
        # failed "no answer"; it ends the turn with the text so far, "", as every reply that did not end
        # normally (the langgraph provider's Gemini chat model did already). A prompt Gemini blocked (no
        # candidate, only promptFeedback.blockReason: ADK's error code, no finish reason) is one: content_filter.
        bare = finish in ENDED_EARLY and not parts
        if not not_run and not bare:
            return None
        kept = _without_calls(llm_response)
        if kept.content is None:
            self.cut_bare = name
        return kept

    async def before_tool(self, tool: Any, args: dict[str, Any], tool_context: Any) -> Any:
        name = tool_context.agent_name
        if tool.name in self.known.get(name, set()) or tool.name in ADK_CONTROL_TOOLS:
            return None  # declared tools answer themselves (the gateway decides inside run_async)
        # ADK hands callbacks a placeholder BaseTool for a name no tool declares; without an answer
        # here it replies with its own free-text error. The gateway answers (unknown_tool) instead.
        obs = await self.session.gateway(name).call(
            tool.name, args, vendor_call_id=tool_context.function_call_id, via="function"
        )
        return observation_object(obs)

    def after_tool(self, tool: Any, args: dict[str, Any], tool_context: Any, tool_response: Any) -> None:
        target = tool_context.actions.transfer_to_agent
        if tool.name == "transfer_to_agent" and target:
            self.session.record_handoff(
                tool_context.agent_name,
                target,
                "handoff",
                details={"vendor_call_id": tool_context.function_call_id},
            )
        return None


def _without_calls(llm_response: Any) -> Any:
    """A response that did not end normally (cut by the token limit, filtered, ``OTHER``…) without its
    function calls: ADK runs every call of a response it is given, whatever its finish reason. Its text (and thoughts) stay: the turn ends with them, and the
    session's history holds no call without its response (Gemini refuses a function call that no function
    response follows). With nothing left there is no content, and no error either (streamed, ADK marks a
    cut answer ``error_code: MAX_TOKENS``): ADK then ends the turn without an event (``_Callbacks.cut_bare``)."""
    parts = [
        p for p in (llm_response.content.parts if llm_response.content else None) or [] if not p.function_call
    ]
    if parts:
        return llm_response.model_copy(
            update={"content": types.Content(role=llm_response.content.role, parts=parts)}
        )
    return llm_response.model_copy(update={"content": None, "error_code": None, "error_message": None})


# --- building --------------------------------------------------------------------------------------


class _Builder:
    def __init__(self, session: RunSession, http: httpx.AsyncClient) -> None:
        self.session = session
        self.http = http
        self.callbacks = _Callbacks(session)
        self._check(session)

    @staticmethod
    def _check(session: RunSession) -> None:
        """Refuse, before anything runs, what Gemini/ADK cannot express as the spec says (the runner asks
        the whole verdict first; asking here too keeps the adapter safe when driven directly)."""
        Verdict("adk", tuple(rules.lacks(session.bundle))).raise_if_unrunnable()

    def model(self, agent_name: str) -> Gemini:
        endpoint = self.session.endpoint
        # google-genai builds two TLS contexts per client (httpx and websockets): the process's one is
        # given for both.
        tls = tls_context()
        options = types.HttpOptions(
            base_url=endpoint.sdk_url or None,  # its query goes on each request (http_hooks)
            httpx_async_client=self.http,
            client_args={"verify": tls},
            async_client_args={"verify": tls, "ssl": tls},
            retry_options=self._retry(),
        )
        # api_key given explicitly (also keeps ADK from probing GCP metadata for a project);
        # vertexai=False: the Gemini Developer API whatever GOOGLE_GENAI_USE_VERTEXAI says.
        return Gemini(
            model=self.session.model_for(agent_name),
            client_kwargs={
                "api_key": endpoint.api_key or REGISTRY["adk"].dummy_key,
                "vertexai": False,
                "http_options": options,
            },
        )

    def _retry(self) -> types.HttpRetryOptions | None:
        """google-genai does not retry unless asked; ``options.extra["adk_retry"]`` (HttpRetryOptions
        fields) opts in. The retries show up as ``error`` events (see ``GoogleAdkAdapter.run``)."""
        spec = self.session.options.extra.get("adk_retry")
        return types.HttpRetryOptions(**spec) if spec else None

    def agent(self, name: str, *, description: str = "", tree: dict[str, str] | None = None) -> LlmAgent:
        """A fresh LlmAgent for ``name``. ``tree`` maps each agent of one ADK agent tree to its parent:
        an agent run as a tool is the root of a tree of its own (a nested Runner)."""
        tree = {} if tree is None else tree
        node = self.session.bundle.agents[name]
        spec = node.spec
        tools: list[Any] = [_GatewayTool(t, name, self.session) for t in node.tools.values()]
        subs: list[LlmAgent] = []
        for edge in node.edges:
            if edge.kind == "handoff":
                if edge.target in tree:
                    # ADK agents have one parent, and transfer_to_agent finds its target by name in the tree
                    raise UnsupportedFeatureError(
                        "adk",
                        "a handoff target shared by two agents",
                        f"ADK sub_agents form a tree, but {edge.target!r} is a handoff target of both "
                        f"{tree[edge.target]!r} and {name!r}",
                    )
                tree[edge.target] = name
                subs.append(self.agent(edge.target, description=edge.description, tree=tree))
            else:
                target = self.agent(edge.target)
                tools.append(
                    _DelegateTool(
                        target, name, edge.description or target.description or edge.target, self.session
                    )
                )
        self.callbacks.known[name] = {t.name for t in tools}
        if spec.output_schema is not None:
            self.callbacks.output_schemas[name] = spec.output_schema
        config = None
        shared = (
            spec.models
        )  # this agent's own settings (a sub-agent's generate_content_config), not the root's
        if shared.force_shared_settings:
            config = types.GenerateContentConfig(
                temperature=shared.temperature, max_output_tokens=shared.max_tokens
            )
        instructions = spec.instructions
        cb = self.callbacks
        return LlmAgent(
            name=spec.name,
            description=description or spec.description,
            model=self.model(name),
            # A callable instruction is sent as is: a string would go through ADK's {state} templating.
            instruction=lambda _ctx: instructions,
            tools=tools,
            sub_agents=subs,
            output_schema=spec.output_schema,
            generate_content_config=config,
            disallow_transfer_to_parent=True,
            disallow_transfer_to_peers=True,
            before_model_callback=cb.before_model,
            after_model_callback=cb.after_model,
            before_tool_callback=cb.before_tool,
            after_tool_callback=cb.after_tool,
        )


# --- running ---------------------------------------------------------------------------------------


class GoogleAdkAdapter:
    name = "adk"
    capabilities = PROFILES["adk"]

    def sdk_version(self) -> str:
        return _sdk_version()

    def cli_version(self) -> str | None:
        return None

    async def run(self, session: RunSession) -> AdapterOutcome:
        from portagent.recording.player import transport_kwargs

        http = httpx.AsyncClient(
            timeout=httpx.Timeout(600.0, connect=30.0),
            verify=tls_context(),
            **transport_kwargs("httpx"),  # a replay: the cassette answers in process
            # An HTTP error answer becomes an ``error`` event, so a retry by the SDK (``adk_retry``) is
            # visible in the trace, not only in the server's log.
            event_hooks=http_hooks(session, _retry_note(session)),
        )
        try:
            return await self._run(session, http)
        finally:
            await http.aclose()

    async def _run(self, session: RunSession, http: httpx.AsyncClient) -> AdapterOutcome:
        builder = _Builder(session, http)
        root = builder.agent(session.bundle.root)
        sessions = InMemorySessionService()
        runner = Runner(app_name=APP_NAME, agent=root, session_service=sessions)
        user_id = session.request.actor or "portagent"
        session_id = session.request.session_id or f"portagent-{session.run_id}"
        config = AdkRunConfig(
            streaming_mode=StreamingMode.SSE if session.options.streaming else StreamingMode.NONE,
            max_llm_calls=session.bundle.spec.budget.max_turns + 1,  # portagent counts turns; backstop only
        )
        final: Any = None
        final_agent: str | None = None
        error: tuple[str, str] | None = None
        try:
            await sessions.create_session(app_name=APP_NAME, user_id=user_id, session_id=session_id)
            for message in session.request.messages:
                final, error = None, None
                content = types.Content(role="user", parts=[types.Part(text=message)])
                async for event in runner.run_async(
                    user_id=user_id, session_id=session_id, new_message=content, run_config=config
                ):
                    if event.partial:
                        continue
                    if event.error_code:
                        error = (event.error_code, event.error_message or "")
                    if event.is_final_response() and event.content is not None:
                        text = final_text(event.content.parts)
                        if text is not None:
                            final, final_agent = text, event.author
                cut = builder.callbacks.cut_bare
                if final is None and error is None and cut is not None:
                    final, final_agent = "", cut  # cut before any text: the text so far, as on every provider
                if builder.callbacks.broken is not None:
                    break  # no next user message: the run fails (below)
            session.check_stopped()
        except Exception as e:
            _raise_mapped(e, session)
        finally:
            await runner.close()
        broken = builder.callbacks.broken
        if broken is not None:
            raise ProviderError(
                f"Gemini ended its reply with {broken[0]}, an error about the reply itself "
                f"(its function calls were not run){': ' + broken[1] if broken[1] else ''}"
            )
        if final is None and error is not None:
            raise ProviderError(f"Gemini returned no answer: {error[0]}: {error[1]}")
        return AdapterOutcome(
            final_output=final,
            final_agent=final_agent or session.current_agent,
            details={"adk_session_id": session_id, "streaming_mode": config.streaming_mode.value},
        )


@lru_cache(maxsize=1)
def _sdk_version() -> str:
    """Read once: ``importlib.metadata`` costs ~4 ms a call, and the runner asks twice per run."""
    return package_version("google-adk")


def _retry_note(session: RunSession) -> str:
    if session.options.extra.get("adk_retry"):
        return "google-genai retries it (adk_retry)"
    return "google-genai does not retry without adk_retry"


def _vendor_cause(e: BaseException) -> BaseException:
    """The innermost meaningful exception: ADK 2.x wraps node failures in ``DynamicNodeFailError``
    (``.error``), and SDKs chain with ``raise … from`` (``__cause__``). What was being handled when an error
    was raised (``__context__``) is not followed: that error is a new failure, not the vendor's
    (``_shared.exception_chain``)."""
    seen: set[int] = set()
    cur: BaseException = e
    while id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, genai_errors.APIError | httpx.TransportError | pydantic.ValidationError):
            return cur
        nxt = getattr(cur, "error", None)
        if not isinstance(nxt, BaseException):
            nxt = cur.__cause__
        if isinstance(cur, BaseExceptionGroup) and cur.exceptions:
            nxt = cur.exceptions[0]
        if nxt is None:
            return cur
        cur = nxt
    return cur


def _raise_mapped(e: Exception, session: RunSession) -> None:
    """The one place SDK and vendor errors become portagent errors."""
    session.reraise_signal(e, wrapped=getattr(e, "error", None))  # ADK's DynamicNodeFailError.error
    cause = _vendor_cause(e)
    where = session.endpoint.base_url or "generativelanguage.googleapis.com"
    if isinstance(cause, genai_errors.APIError):
        body = json.dumps(cause.details, ensure_ascii=False, default=str) if cause.details else None
        raise ProviderError(
            f"Gemini API error {cause.code} {cause.status or ''}: {cause.message}".replace("  ", " "),
            status=cause.code,
            body=body,
            retryable=REGISTRY["adk"].retryable(cause.code),
        ) from e
    if isinstance(cause, httpx.TransportError):
        raise ProviderError(
            f"cannot reach the Gemini endpoint {where}: {type(cause).__name__}: {cause}", retryable=True
        ) from e
    if isinstance(cause, pydantic.ValidationError) and "GenerateContentResponse" in str(cause):
        # e.g. functionCall.args that is not an object (the emulator's malformed_arguments fault)
        raise ProviderError(f"google-genai could not parse the Gemini response: {cause}") from e
    if isinstance(cause, ValueError) and "API key" in str(cause):
        raise UsageError(f"google-genai configuration error: {cause}") from e
    raise e


ADAPTER = GoogleAdkAdapter()
