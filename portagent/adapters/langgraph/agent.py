"""LangGraph adapter (langgraph 1.2, langchain-core 1.8): an explicit ``StateGraph`` over a LangChain chat model.

The graph (built once per run, shared by every agent of the spec):

    START → model ──(tool calls?)──► tools ──► model … ──(no tool calls)──► END

- state: ``messages`` (LangGraph's ``add_messages`` reducer) and ``agent``, the agent in charge;
- ``model`` node: ``session.before_model_call`` (portagent's ``max_turns``), then the agent's chat model
  (``vendor:model`` from ``models.langgraph``, see ``rules.py``) bound to its tools, invoked on its own
  instructions + the conversation; usage and finish are recorded from the ``AIMessage``;
- ``tools`` node: the reply's tool calls one at a time, in order, each through the gateway (nothing else
  executes a ToolSpec); an agent-as-tool call runs the same graph for the sub-agent on a thread of its
  own; a ``transfer_to_<agent>`` call is a handoff: ``agent`` changes and the specialist continues the
  conversation (any delegation graph, cycles too).

Why an explicit graph and not ``create_react_agent`` / ``create_agent``: the prebuilt ``ToolNode`` runs a
reply's calls concurrently and answers errors itself, where a portagent trace needs one order and every
answer from the gateway; handoffs need the active agent in the state; and the prebuilt agents moved to the
``langchain`` package (not part of this extra) in LangGraph 1.x. Two nodes say the loop plainly.

Approvals are LangGraph interrupts: when the approver defers, the gateway's ``ApprovalPause`` becomes
``interrupt({approval_id, call_id, tool})`` inside the ``tools`` node; the graph (checkpointed in memory)
stops there and returns it under ``__interrupt__``, and the run ends ``waiting_approval``. portagent resumes
by re-running with the same idempotency key (ADR 0007: the ledger keeps effects from repeating), not with
``Command(resume=…)``, which needs the same process and checkpointer.

Tracing: LangSmith tracing stays off unless its environment variables turn it on; portagent sets nothing
and sends nothing besides the model endpoint.
"""

from __future__ import annotations

import json
import logging
import re
from contextvars import ContextVar
from functools import lru_cache
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

from portagent.adapters._shared import (
    Stopwatch,
    http_error_hook,
    observation_json,
    tls_context,
)
from portagent.adapters.base import REGISTRY, AdapterOutcome, package_version
from portagent.adapters.context_manifest import delegation_input
from portagent.adapters.langgraph import rules
from portagent.adapters.port import ApprovalPause, RunSession, RunSignal
from portagent.contracts.capabilities import ANTHROPIC_DEFAULT_MAX_TOKENS, PROFILES
from portagent.contracts.errors import ProviderError, UsageError
from portagent.contracts.portability import Verdict


class _SchemaSubsetNotes(logging.Filter):
    """langchain-google-genai converts a tool's JSON Schema to Gemini's OpenAPI subset and logs a warning
    for every keyword it drops, on every request. The verdict says it once instead (``rules.notes``); the
    gateway still checks the full schema."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "is not supported in schema" not in record.getMessage()


logging.getLogger("langchain_google_genai._function_utils").addFilter(_SchemaSubsetNotes())

AGENT_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string"}},
    "required": ["input"],
    "additionalProperties": False,
}
"""What an agent-as-tool takes, on every provider: the task as text."""


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    agent: str


def transfer_name(agent: str) -> str:
    """The handoff tool's name, spelled as openai-agents spells it (lower case, non-alphanumerics → ``_``)."""
    return re.sub(r"[^a-z0-9_]", "_", f"transfer_to_{agent}".lower())


def _function(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A tool in OpenAI's function format, which every LangChain integration converts for its vendor."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


def _chat_anthropic(http: Any) -> Any:
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


def _output_kwargs(vendor: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The output schema in each vendor's own request field, bound to the chat model (structured output):
    OpenAI ``response_format`` json_schema (``text.format`` on the Responses API), Anthropic
    ``output_config.format``, Gemini ``response_json_schema`` with a JSON MIME type."""
    if vendor == "openai":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "final_output", "schema": schema, "strict": False},
            }
        }
    if vendor == "anthropic":
        return {"output_config": {"format": {"type": "json_schema", "schema": schema}}}
    return {"response_mime_type": "application/json", "response_json_schema": schema}


_CURRENT: ContextVar[_Graph] = ContextVar("portagent_langgraph_run")
"""The run a node works for: the graph is compiled once per process, each run's state lives here."""


async def _model_node(state: State) -> dict[str, Any]:
    return await _CURRENT.get().model_node(state)


async def _tools_node(state: State) -> dict[str, Any]:
    return await _CURRENT.get().tools_node(state)


def _route(state: State) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and (last.tool_calls or last.invalid_tool_calls) else END


@lru_cache(maxsize=1)
def _app() -> Any:
    """The graph, compiled once per process (compiling costs more than a short run's own work). Threads are
    ``<run id>/<attempt>/<thread>`` in one in-memory checkpointer and are deleted when their run ends."""
    graph = StateGraph(State)
    graph.add_node("model", _model_node)
    graph.add_node("tools", _tools_node)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", _route, {"tools": "tools", END: END})
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver())


class _Graph:
    """The run's chat models, tool declarations and threads of the compiled graph."""

    def __init__(self, session: RunSession) -> None:
        self.session = session
        self.bundle = session.bundle
        self.stopwatch = Stopwatch(session.clock)
        self.models: dict[str, Any] = {}
        self.choice: dict[str, tuple[str, str]] = {}
        self.closers: list[Any] = []
        self.transfers: dict[str, dict[str, str]] = {}
        for name, node in self.bundle.agents.items():
            found = rules.model_choice(node, self.bundle.node)
            if found is None:  # the verdict refuses this first; kept for direct use
                raise UsageError(f"agent {name!r} has no model id for provider 'langgraph'")
            self.choice[name] = found
            self.transfers[name] = {
                transfer_name(e.target): e.target for e in node.edges if e.kind == "handoff"
            }
        self.app = _app()
        self.threads: list[str] = []

    # --- chat models ------------------------------------------------------------------------------
    def chat_model(self, agent: str) -> Any:
        if agent in self.models:
            return self.models[agent]
        vendor, model_id = self.choice[agent]
        base = self._build(vendor, model_id)
        schema = self.bundle.agents[agent].spec.output_schema
        output = _output_kwargs(vendor, schema) if schema is not None else {}
        tools = self.declarations(agent)
        self.models[agent] = (base.bind_tools(tools) if tools else base).bind(**output)
        return self.models[agent]

    def _build(self, vendor: str, model_id: str) -> Any:
        session = self.session
        endpoint = session.endpoint
        key = endpoint.api_key or REGISTRY["langgraph"].dummy_key
        shared = self.bundle.spec.models
        temperature = shared.temperature if shared.force_shared_settings else None
        max_tokens = shared.max_tokens if shared.force_shared_settings else None
        streaming = session.options.streaming
        # the run journal's proxy when the run keeps one (resume replays it), else the endpoint itself
        url = endpoint.client_url.rstrip("/") if endpoint.client_url else None
        if vendor == "openai":
            import openai
            from langchain_openai import ChatOpenAI

            http = openai.DefaultAsyncHttpx2Client(
                event_hooks={"response": [http_error_hook(session, "the OpenAI client may retry")]},
                verify=tls_context(),
            )
            self.closers.append(http.aclose)
            return ChatOpenAI(
                model=model_id,
                api_key=key,
                base_url=url + "/v1" if url else None,
                http_async_client=http,
                use_responses_api=shared.openai_api == "responses",
                streaming=streaming,
                stream_usage=True,
                temperature=temperature,
                max_tokens=max_tokens,
            )
        if vendor == "anthropic":
            import anthropic

            http = anthropic.DefaultAsyncHttpxClient(
                event_hooks={"response": [http_error_hook(session, "the anthropic client may retry")]},
                verify=tls_context(),
            )
            self.closers.append(http.aclose)
            return _chat_anthropic(http)(
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
            )
            self.closers.append(gemini.aclose)  # its async transport must close on this loop
            return gemini
        raise UsageError(
            f"models.langgraph: unknown chat model vendor {vendor!r}"
        )  # the verdict says so first

    def declarations(self, agent: str) -> list[dict[str, Any]]:
        node = self.bundle.agents[agent]
        out = [_function(t.name, t.model_description(), t.input_schema) for t in node.tools.values()]
        for edge in node.edges:
            target = self.bundle.agents[edge.target].spec
            description = edge.description or target.description or edge.target
            if edge.kind == "agent_as_tool":
                out.append(_function(edge.target, description, AGENT_TOOL_SCHEMA))
            else:
                schema = {"type": "object", "properties": {}, "additionalProperties": False}
                out.append(_function(transfer_name(edge.target), description, schema))
        return out

    # --- nodes --------------------------------------------------------------------------------------
    async def model_node(self, state: State) -> dict[str, Any]:
        agent = state["agent"]
        session = self.session
        session.before_model_call(agent)
        spec = self.bundle.agents[agent].spec
        messages = [SystemMessage(spec.instructions), *state["messages"]]
        self.stopwatch.start(agent)
        reply: Any
        if session.options.streaming:
            reply = None
            async for chunk in self.chat_model(agent).astream(messages):
                reply = chunk if reply is None else reply + chunk
        else:
            reply = await self.chat_model(agent).ainvoke(messages)
        self._record(agent, reply, self.stopwatch.stop(agent))
        calls, invalid = _split_calls(reply)
        message = AIMessage(
            content=reply.content,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            id=reply.id,
            response_metadata=reply.response_metadata,
            usage_metadata=reply.usage_metadata,
            name=agent,
        )
        return {"messages": [message]}

    async def tools_node(self, state: State) -> dict[str, Any]:
        agent = state["agent"]
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        out: list[ToolMessage] = []
        active = agent
        try:
            # a call whose arguments are not a JSON object is an invalid call: the gateway answers it
            # (validation_error) like every other provider, and the model is told
            for call in [*last.tool_calls, *last.invalid_tool_calls]:
                name, args, call_id = call["name"] or "", call["args"], call.get("id")
                if call.get("type") == "invalid_tool_call":
                    obs = await self.session.gateway(agent).call(
                        name, args if args is not None else "", vendor_call_id=call_id, via="function"
                    )
                    out.append(
                        ToolMessage(observation_json(obs), tool_call_id=call_id, name=name, status="error")
                    )
                    continue
                target = self.transfers[agent].get(name)
                if target is not None:
                    self.session.record_handoff(agent, target, "handoff", details={"vendor_call_id": call_id})
                    active = target
                    out.append(
                        ToolMessage(json.dumps({"assistant": target}), tool_call_id=call_id, name=name)
                    )
                    continue
                if any(
                    e.kind == "agent_as_tool" and e.target == name for e in self.bundle.agents[agent].edges
                ):
                    text = await self.run_agent_tool(agent, name, args, call_id)
                    out.append(ToolMessage(text, tool_call_id=call_id, name=name))
                    continue
                obs = await self.session.gateway(agent).call(
                    name, args, vendor_call_id=call_id, via="function"
                )
                out.append(
                    ToolMessage(
                        observation_json(obs),
                        tool_call_id=call_id,
                        name=name,
                        status="success" if obs.ok else "error",
                    )
                )
        except ApprovalPause as pause:
            # LangGraph's own human-in-the-loop stop: the graph checkpoints and returns the interrupt
            interrupt({"approval_id": pause.approval_id, "call_id": pause.call_id, "agent": agent})
        return {"messages": out, "agent": active}

    async def run_agent_tool(self, parent: str, target: str, args: Any, call_id: str | None) -> str:
        task = args.get("input") if isinstance(args, dict) else None
        self.session.record_handoff(parent, target, "agent_as_tool", details={"vendor_call_id": call_id})
        given = delegation_input(self.session, parent, target, str(task or ""))  # context: handoff
        final = await self.run(target, [HumanMessage(given)], thread=f"{parent}/{call_id}")
        self.session.check_stopped()  # an approval deferred inside the sub-agent: stop here too
        return final if isinstance(final, str) else json.dumps(final, ensure_ascii=False, sort_keys=True)

    # --- running ------------------------------------------------------------------------------------
    async def run(self, agent: str, messages: list[Any], *, thread: str) -> Any:
        """Run the graph for ``agent`` on one thread until it ends; the final output."""
        limit = self.bundle.spec.budget.max_turns
        thread_id = f"{self.session.run_id}/{self.session.attempt}/{thread}"
        if thread_id not in self.threads:
            self.threads.append(thread_id)
        config: Any = {"configurable": {"thread_id": thread_id}, "recursion_limit": 2 * limit + 4}
        token = _CURRENT.set(self)
        try:
            result = await self.app.ainvoke({"messages": messages, "agent": agent}, config)
        finally:
            _CURRENT.reset(token)
        if result.get("__interrupt__"):
            self.session.check_stopped()  # the ApprovalPause kept by the session
        self.final_agent = result.get("agent", agent)
        return self._final(self.final_agent, result["messages"][-1])

    def _record(self, agent: str, reply: Any, latency: float | None) -> None:
        usage = reply.usage_metadata or {}
        cached = usage.get("input_token_details") or {}
        out_details = usage.get("output_token_details") or {}
        vendor, model_id = self.choice[agent]
        meta = reply.response_metadata or {}
        response_id = meta.get("id") or reply.id
        self.session.record_model_call(
            agent=agent,
            model=model_id,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_tokens=int(cached.get("cache_read") or 0),
            cache_write_tokens=int(cached.get("cache_creation") or 0),
            reasoning_tokens=int(out_details.get("reasoning") or 0),
            latency_ms=latency,
            finish_reason=_finish_reason(vendor, reply),
            response_id=response_id,
            details={"vendor": vendor, "response_id": response_id},
        )

    def _final(self, agent: str, message: Any) -> Any:
        text = message.text if isinstance(message, AIMessage) else None
        if text is None:
            return None
        if self.bundle.agents[agent].spec.output_schema is None:
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text  # output_valid: false is decided by the runner


class LangGraphAdapter:
    name = "langgraph"
    capabilities = PROFILES["langgraph"]

    def sdk_version(self) -> str:
        return package_version("langgraph")

    def cli_version(self) -> str | None:
        return None

    async def run(self, session: RunSession) -> AdapterOutcome:
        Verdict("langgraph", tuple(rules.lacks(session.bundle))).raise_if_unrunnable()
        graph = _Graph(session)
        graph.final_agent = session.bundle.root
        final: Any = None
        history: list[Any] = []
        try:
            for i, text in enumerate(session.request.messages):
                # one thread per run: each user message continues the checkpointed conversation
                history = [HumanMessage(text)]
                final = await graph.run(
                    graph.final_agent if i else session.bundle.root, history, thread="root"
                )
            session.check_stopped()
        except GraphRecursionError:
            session.check_stopped()
            return AdapterOutcome(vendor_stop="max_turns", final_agent=graph.final_agent)
        except Exception as e:
            _raise_mapped(e, session)
        finally:
            for close in graph.closers:
                await close()
            for thread_id in graph.threads:  # the checkpointer is the process's: keep nothing of this run
                await graph.app.checkpointer.adelete_thread(thread_id)
        vendors = sorted({v for v, _ in graph.choice.values()})
        return AdapterOutcome(
            final_output=final,
            final_agent=graph.final_agent,
            details={"graph": "StateGraph(model, tools)", "chat_model_vendors": vendors},
        )


def _raise_mapped(e: Exception, session: RunSession) -> None:
    """The one place SDK and vendor errors become portagent errors (each integration's client raises its
    own vendor's errors; they are read by their status code and class name, no vendor SDK imported here)."""
    session.reraise_signal(e)
    if isinstance(e, RunSignal):
        raise e
    cause: BaseException | None = e
    while cause is not None and getattr(cause, "status_code", None) is None and cause.__cause__ is not None:
        cause = cause.__cause__
    status = getattr(cause, "status_code", None) or getattr(cause, "code", None)
    if isinstance(status, int) and status >= 400:
        body = getattr(getattr(cause, "response", None), "text", None)
        raise ProviderError(
            f"chat model API error {status}: {cause}",
            status=status,
            body=body if isinstance(body, str) else None,
            retryable=REGISTRY["langgraph"].retryable(status),
        ) from e
    broken = next((c for c in _chain(e) if _connection_error(c)), None)
    if broken is not None:
        raise ProviderError(
            f"cannot reach the chat model endpoint {session.endpoint.base_url or '(vendor default)'}, or it "
            f"dropped the connection: {broken}",
            retryable=True,
        ) from e
    raise e


_CONNECTION_ERRORS = frozenset(
    {"APIConnectionError", "APITimeoutError", "TransportError", "TimeoutException", "ConnectionError"}
)
"""Class names (anywhere in an error's class hierarchy) of a connection that failed or broke: the vendor
clients' own (openai, anthropic), httpx's transport errors (a response cut mid-body), the builtin."""


def _connection_error(exc: BaseException) -> bool:
    return any(c.__name__ in _CONNECTION_ERRORS for c in type(exc).__mro__) or type(exc).__name__.endswith(
        "ConnectionError"
    )


def _chain(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and cur not in out:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


ADAPTER = LangGraphAdapter()


def _split_calls(reply: Any) -> tuple[list[Any], list[Any]]:
    """The reply's tool calls, and those LangChain could not read (cut or non-object arguments) as invalid
    tool calls holding the text the model sent: the message keeps both, so the vendor sees its own call
    answered."""
    from langchain_core.messages.tool import invalid_tool_call

    calls: list[Any] = []
    invalid: list[Any] = list(getattr(reply, "invalid_tool_calls", None) or [])
    for call in reply.tool_calls or []:
        args = call.get("args")
        if isinstance(args, dict):
            calls.append(call)
            continue
        text = args if isinstance(args, str) else json.dumps(args)
        invalid.append(
            invalid_tool_call(
                name=call.get("name"), args=text, id=call.get("id"), error="arguments are not a JSON object"
            )
        )
    return calls, invalid


def _finish_reason(vendor: str, reply: Any) -> str:
    """Why the model stopped, from what the chat model kept of the vendor's answer (its own stop value in
    ``response_metadata``), in the trace's vocabulary by the wire module's table for that vendor; a reply
    with tool calls stopped for them."""
    from portagent.wire.anthropic_response import STOP_REASONS
    from portagent.wire.gemini_response import FINISH_REASONS_GEMINI
    from portagent.wire.openai_response import CHAT_FINISH, INCOMPLETE

    meta = reply.response_metadata or {}
    if reply.tool_calls or getattr(reply, "invalid_tool_calls", None):
        return "tool_calls"
    mapped: str | None = None
    if vendor == "anthropic":
        mapped = STOP_REASONS.get(str(meta.get("stop_reason")))
    elif vendor == "google_genai":
        raw = meta.get("finish_reason")
        mapped = FINISH_REASONS_GEMINI.get(str(getattr(raw, "name", raw)))
    else:
        mapped = CHAT_FINISH.get(str(meta.get("finish_reason")))
        if mapped is None and meta.get("status") == "incomplete":  # the Responses API
            reason = (meta.get("incomplete_details") or {}).get("reason")
            mapped = INCOMPLETE.get(str(reason), "length")
    return mapped or "stop"
