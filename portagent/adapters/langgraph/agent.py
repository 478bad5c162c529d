"""LangGraph adapter (langgraph 1.2, langchain-core 1.8): an explicit ``StateGraph`` over a LangChain chat model.

The graph (built once per run, shared by every agent of the spec):

    START → model ──(tool calls?)──► tools ──► model … ──(no tool calls)──► END

- state: ``messages`` (LangGraph's ``add_messages`` reducer) and ``agent``, the agent in charge;
- ``model`` node: ``session.before_model_call`` (portagent's ``max_turns``), then the agent's chat model
  (``vendor:model`` from ``models.langgraph``, see ``rules.py``) bound to its tools, invoked on its own
  instructions + the conversation; usage and finish are recorded from the ``AIMessage``;
- ``tools`` node: the reply's tool calls one at a time, in the model's order (a call whose arguments are
  not JSON included), each through the gateway (nothing else executes a ToolSpec); an agent-as-tool call
  runs the same graph for the sub-agent on a thread of its own, once its arguments match
  ``AGENT_TOOL_SCHEMA``; a ``transfer_to_<agent>`` call is a handoff: ``agent`` changes and the specialist
  continues the conversation (any delegation graph, cycles too);
- a reply's tool calls run only when its vendor says it ended normally (finish ``tool_calls``:
  ``replies.finish_reason``). One cut by the token limit (``length``), filtered (``content_filter``) or
  ended for any other reason (``other``) ends the run with its text, as on the other providers; its tool
  calls, possibly cut too, are not run (``model.call`` names them). One Gemini says is broken
  (``MALFORMED_FUNCTION_CALL``…: ``error``) is a provider error. A streamed reply that never reached its
  vendor's last event is a retryable provider error, not an answer.

Why an explicit graph and not ``create_react_agent`` / ``create_agent``: the prebuilt ``ToolNode`` runs a
reply's calls concurrently and answers errors itself, where a portagent trace needs one order and every
answer from the gateway; handoffs need the active agent in the state; and the prebuilt agents moved to the
``langchain`` package (not part of this extra) in LangGraph 1.x. Two nodes say the loop plainly.

Approvals are LangGraph interrupts: when the approver defers, the gateway's ``ApprovalPause`` becomes
``interrupt({approval_id, call_id, tool})`` inside the ``tools`` node; the graph (checkpointed in memory)
stops there and returns it under ``__interrupt__``, and the run ends ``waiting_approval``. portagent resumes
by re-running with the same idempotency key (ADR 0007: the ledger keeps effects from repeating), not with
``Command(resume=…)``, which needs the same process and checkpointer.

Tracing: LangSmith tracing is off for portagent's runs, even when ``LANGSMITH_TRACING`` (or
``LANGCHAIN_TRACING_V2``) is set for other work in the environment — as openai-agents' exporter is replaced and
Claude Code runs without non-essential traffic: a run sends nothing besides the model endpoint (the upload
would carry prompts, tool arguments and results unmasked). The run's own trace exports to any OTLP backend
(``portagent trace export``).
"""

from __future__ import annotations

import json
import re
from contextvars import ContextVar
from functools import lru_cache
from typing import Annotated, Any, TypedDict

import pydantic
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

from portagent.adapters._shared import (
    Stopwatch,
    exception_chain,
    observation_json,
)
from portagent.adapters.base import REGISTRY, AdapterOutcome, package_version
from portagent.adapters.context_manifest import delegation_input
from portagent.adapters.langgraph import rules
from portagent.adapters.langgraph.chat_models import (
    PLAYED_WIRES,
    build_chat_model,
    cache_writes,
    output_kwargs,
    require_integration,
    with_tools,
)
from portagent.adapters.langgraph.replies import (
    ORDER_KEY,
    finish_reason,
    prompt_blocked,
    read_calls,
    reading_replies,
    refusal_as_text,
    stream_finished,
    without_calls,
)
from portagent.adapters.port import ApprovalPause, RunSession, RunSignal
from portagent.adapters.session_gateway import AGENT_TOOL_SCHEMA
from portagent.contracts.bundle import AgentBundle
from portagent.contracts.capabilities import PROFILES
from portagent.contracts.errors import ProviderError, UsageError
from portagent.contracts.portability import Verdict
from portagent.tools.observations import Observation


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    agent: str
    calls: list[str]
    """The last reply's tool call ids in the model's order: LangChain keeps the calls it could not read
    (``invalid_tool_calls``) apart from the others, and the ``tools`` node answers them all in this order."""


def transfer_name(agent: str) -> str:
    """The handoff tool's name, spelled as openai-agents spells it (lower case, non-alphanumerics → ``_``)."""
    return re.sub(r"[^a-z0-9_]", "_", f"transfer_to_{agent}".lower())


def _function(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A tool in OpenAI's function format, which every LangChain integration converts for its vendor."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


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
        self.model_calls = 0
        """Model calls so far in this run attempt: the stem of the ids given to calls without a stable
        one (``replies.read_calls``), the same on record and replay."""

    # --- chat models ------------------------------------------------------------------------------
    def chat_model(self, agent: str) -> Any:
        if agent in self.models:
            return self.models[agent]
        vendor, model_id = self.choice[agent]
        base = build_chat_model(self.session, agent, vendor, model_id, self.closers)
        schema = self.bundle.agents[agent].spec.output_schema
        api = self.session.options.openai_api or self.bundle.spec.models.openai_api
        output = output_kwargs(vendor, schema, api) if schema is not None else {}
        cache = self.session.options.extra.get("anthropic_cache_control")
        if cache and vendor == "anthropic":  # prompt caching, as the anthropic provider sends it
            output["cache_control"] = cache
        self.models[agent] = with_tools(base, vendor, self.declarations(agent)).bind(**output)
        return self.models[agent]

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
        vendor = self.choice[agent][0]
        messages = [SystemMessage(spec.instructions), *state["messages"]]
        model = self.chat_model(agent)  # built before the stopwatch: a model call's latency is the call's
        self.model_calls += 1
        self.stopwatch.start(agent)
        reply: Any
        if session.options.streaming:
            reply = None
            with reading_replies():
                async for chunk in model.astream(messages):
                    reply = chunk if reply is None else reply + chunk
            if not stream_finished(vendor, reply):
                self.stopwatch.stop(agent)
                # as a connection dropped mid-answer (and openai-agents' own check on the openai provider)
                raise ProviderError(
                    f"the {vendor} chat model's streamed answer ended before its last event (the stream was "
                    "cut short): what arrived is not a whole answer",
                    retryable=True,
                )
        else:
            with reading_replies():
                reply = await model.ainvoke(messages)
        latency = self.stopwatch.stop(agent)
        calls = read_calls(reply, vendor, f"call_{self.model_calls}")
        finish = finish_reason(vendor, reply, bool(calls))
        # Not ended normally (cut by the token limit, filtered, any other reason): the answer is its text, as
        # on the other providers, and its tool calls (the last of them possibly cut mid-arguments) are not
        # run; the message keeps none, so a next user message does not follow calls left unanswered.
        dropped = calls if finish != "tool_calls" else []
        if dropped:
            calls = []
        self._record(agent, reply, latency, finish, dropped)
        if finish == "error":  # the vendor says the reply itself is broken (Gemini MALFORMED_FUNCTION_CALL…)
            meta = reply.response_metadata or {}
            raw = meta.get("finish_reason")
            note = meta.get("finish_message")
            raise ProviderError(
                f"the {vendor} chat model ended its reply with {getattr(raw, 'name', raw)}, an error about the "
                f"reply itself (its tool calls were not run){': ' + str(note) if note else ''}"
            )
        content = reply.content
        if vendor == "openai":
            refused = refusal_as_text(reply)
            content = content if refused is None else refused
        message = AIMessage(
            content=without_calls(content) if dropped else content,
            tool_calls=[c for c in calls if c.get("type") != "invalid_tool_call"],
            invalid_tool_calls=[c for c in calls if c.get("type") == "invalid_tool_call"],
            id=reply.id,
            response_metadata={k: v for k, v in (reply.response_metadata or {}).items() if k != ORDER_KEY},
            usage_metadata=reply.usage_metadata,
            name=agent,
        )
        return {"messages": [message], "calls": [c["id"] for c in calls]}

    async def tools_node(self, state: State) -> dict[str, Any]:
        agent = state["agent"]
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        out: list[ToolMessage] = []
        active = agent
        order = {call_id: i for i, call_id in enumerate(state.get("calls") or [])}
        pending: list[Any] = sorted(
            [*last.tool_calls, *last.invalid_tool_calls],
            key=lambda c: order.get(c.get("id") or "", len(order)),
        )
        agent_tools = {e.target for e in self.bundle.agents[agent].edges if e.kind == "agent_as_tool"}
        try:
            for call in pending:
                name, args, call_id = call["name"] or "", call["args"], call.get("id")
                invalid = call.get("type") == "invalid_tool_call"
                target = self.transfers[agent].get(name)
                if target is not None:  # a transfer takes no arguments: unreadable ones change nothing
                    self.session.record_handoff(agent, target, "handoff", details={"vendor_call_id": call_id})
                    active = target
                    out.append(
                        ToolMessage(json.dumps({"assistant": target}), tool_call_id=call_id, name=name)
                    )
                    continue
                if name in agent_tools:
                    # arguments that do not match AGENT_TOOL_SCHEMA: the gateway's validation_error, traced
                    task = await self.session.gateway(agent).delegation_task(
                        name, (args if args is not None else "") if invalid else args, vendor_call_id=call_id
                    )
                    if isinstance(task, Observation):
                        out.append(
                            ToolMessage(
                                observation_json(task), tool_call_id=call_id, name=name, status="error"
                            )
                        )
                        continue
                    text = await self.run_agent_tool(agent, name, task, call_id)
                    out.append(ToolMessage(text, tool_call_id=call_id, name=name))
                    continue
                # a call whose arguments are not a JSON object is an invalid call: the gateway answers it
                # (validation_error) like every other provider, and the model is told
                obs = await self.session.gateway(agent).call(
                    name,
                    (args if args is not None else "") if invalid else args,
                    vendor_call_id=call_id,
                    via="function",
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

    async def run_agent_tool(self, parent: str, target: str, task: str, call_id: str | None) -> str:
        self.session.record_handoff(parent, target, "agent_as_tool", details={"vendor_call_id": call_id})
        given = delegation_input(self.session, parent, target, task)  # context: handoff
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

    def _record(self, agent: str, reply: Any, latency: float | None, finish: str, dropped: list[Any]) -> None:
        usage = reply.usage_metadata or {}
        cached = usage.get("input_token_details") or {}
        out_details = usage.get("output_token_details") or {}
        vendor, model_id = self.choice[agent]
        meta = reply.response_metadata or {}
        # the vendor's id; LangChain's own run id ("lc_run--…", all langchain-google-genai gives) is not one
        response_id = meta.get("id") or (
            reply.id if reply.id and not reply.id.startswith("lc_run-") else None
        )
        details: dict[str, Any] = {"vendor": vendor, "response_id": response_id}
        if dropped:  # cut by the token limit (or filtered): the calls the reply began, not run
            details["calls_not_run"] = [c.get("name") for c in dropped]
        blocked = prompt_blocked(reply) if vendor == "google_genai" else None
        if blocked is not None:  # Gemini refused the prompt itself: no candidate (content_filter)
            details["prompt_blocked"] = blocked
        self.session.record_model_call(
            agent=agent,
            model=model_id,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_tokens=int(cached.get("cache_read") or 0),
            cache_write_tokens=cache_writes(cached),
            reasoning_tokens=int(out_details.get("reasoning") or 0),
            latency_ms=latency,
            finish_reason=finish,
            response_id=response_id,
            details=details,
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

    def prepare(self, bundle: AgentBundle) -> None:
        """Import the LangChain integration of each vendor the bundle's chat models use (langchain-anthropic
        alone takes seconds the first time), before the run's clock starts: that time is neither a model
        call's latency nor spent from ``budget.timeout_s``. One that is not installed is the same usage error
        as a missing SDK (``get_adapter`` checks ``langgraph`` alone), naming the extra to install."""
        for vendor in rules.vendors(bundle):
            require_integration(vendor)  # missing: the extra's install line (exit 2), not a traceback

    def replays_in_process(self, bundle: AgentBundle) -> bool:
        """True when every chat model of the bundle takes the cassette player's transport (OpenAI and
        Anthropic ones do; ``chat_models.PLAYED_WIRES``): the runner then replays through the player,
        otherwise through vcrpy."""
        return set(rules.wires(bundle)) <= PLAYED_WIRES

    async def run(self, session: RunSession) -> AdapterOutcome:
        Verdict("langgraph", tuple(rules.lacks(session.bundle))).raise_if_unrunnable()
        graph = _Graph(session)
        graph.final_agent = session.bundle.root
        final: Any = None
        history: list[Any] = []
        from langsmith import tracing_context

        try:
            with tracing_context(enabled=False):  # no LangSmith upload, whatever the environment says
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
    unreadable = next((c for c in exception_chain(e) if isinstance(c, pydantic.ValidationError)), None)
    if unreadable is not None and unreadable.title in _GENAI_RESPONSES:
        # google-genai validates what Gemini sent (functionCall.args that is not an object, as the
        # emulator's malformed_arguments fault sends it): a provider error as on adk, said plainly
        first = unreadable.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ProviderError(
            f"the Gemini answer could not be read: {where}: {first['msg']} "
            f"(got {_short(first.get('input'))}); google-genai refused the response"
        ) from e
    broken = next((c for c in exception_chain(e) if _connection_error(c)), None)
    if broken is not None:
        raise ProviderError(
            f"cannot reach the chat model endpoint {session.endpoint.base_url or '(vendor default)'}, or it "
            f"dropped the connection: {broken}",
            retryable=True,
        ) from e
    raise e


_GENAI_RESPONSES = frozenset({"GenerateContentResponse"})
"""google-genai's response types: a pydantic error naming one is the vendor's answer that failed to parse."""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_CONNECTION_ERRORS = frozenset(
    {"APIConnectionError", "APITimeoutError", "TransportError", "TimeoutException", "ConnectionError"}
)
"""Class names (anywhere in an error's class hierarchy) of a connection that failed or broke: the vendor
clients' own (openai, anthropic), httpx's transport errors (a response cut mid-body), the builtin."""


def _connection_error(exc: BaseException) -> bool:
    return any(c.__name__ in _CONNECTION_ERRORS for c in type(exc).__mro__) or type(exc).__name__.endswith(
        "ConnectionError"
    )


ADAPTER = LangGraphAdapter()
