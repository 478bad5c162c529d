"""The LangGraph export template (``portagent export AGENT --to langgraph``).

The generated module is the graph ``portagent.adapters.langgraph`` runs, written out as plain code: a
``StateGraph`` with two nodes (``model``: the agent in charge's LangChain chat model bound to its tools;
``tools``: the reply's tool calls one at a time, in order) and the state ``{messages, agent}``. Handoffs
are ``transfer_to_<agent>`` tools that change ``agent``; an agent as a tool runs the same graph for the
sub-agent. The chat model of each agent is the spec's ``models.langgraph`` (``openai:…``, ``anthropic:…``,
``google_genai:…``; unset: ``openai:`` + ``models.openai``), built with the maintained integration.
Interrupts are not used: an exported module cannot wait for an approval (``ExportedRun`` refuses ``defer``).
"""

from __future__ import annotations

from typing import Any

from portagent.adapters.langgraph.rules import model_choice
from portagent.contracts.bundle import AgentBundle
from portagent.migration.export import creation_order, literal, main_block, string_literal

HEADER = '''"""{root} as a native LangGraph program (a StateGraph over LangChain chat models).

Exported by `portagent export {spec} --to langgraph`. The graph below is built directly with
langgraph and langchain; nothing in this file goes through portagent's adapters. Two things are kept
from portagent on purpose (portagent.migration.exported):

- every tool call goes to portagent's ToolGateway (`run.call_tool`): the ToolSpecs' schemas, the
  policy, approvals, budgets and idempotency still decide each call — delete that and the policy no
  longer applies;
- a TraceRecorder writes the same normalized trace a portagent run writes, so the two can be
  compared (portagent.tracing.compare.equivalent).

Run it:
    python {module} "your question" --base-url URL --trace trace.jsonl [--approver auto-approve]
(--base-url: the chat model vendor's endpoint root, e.g. portagent's emulator.)
"""

# No `from __future__ import annotations` here: LangGraph reads State's annotations at run time.
import argparse
import asyncio
import json
import os
import re
import time
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.version import __version__ as LANGGRAPH_VERSION

from portagent.migration.exported import ExportedRun, endpoint_root

SPEC = {spec_expr}
"""The portable spec: the gateway loads its ToolSpecs and policy from here at run time."""

ROOT = {root!r}
CHAT_MODELS = {chat_models}
"""Each agent's chat model: (vendor, model id) from models.langgraph (unset: openai + models.openai)."""
CACHE_WRITES = ("cache_creation", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")
"""Where LangChain's usage details put prompt-cache writes (langchain-anthropic moves them to the per-TTL keys)."""
OPENAI_API = {openai_api!r}
"""models.openai_api: ChatOpenAI on the Responses API or Chat Completions."""
MAX_TURNS = {max_turns}
"""portagent counts model calls itself (run.before_model_call); the recursion limit is a backstop."""
SETTINGS = {settings}
"""Shared settings forced onto the model (models.force_shared_settings), or None."""
AGENT_TOOL_SCHEMA = {{"type": "object", "properties": {{"input": {{"type": "string"}}}}, "required": ["input"],
                     "additionalProperties": False}}
"""What an agent-as-tool takes (the same on every provider): the task as text."""
'''

AGENTS_HEAD = """
AGENTS: dict[str, dict[str, Any]] = {"""

BODY = '''
"""Each agent: instructions (the system message, verbatim), handoff targets and agents-as-tools
(name → description), output schema (sent in the vendor's own structured-output field)."""


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    agent: str
    """The agent in charge (a handoff changes it)."""


def transfer_name(agent: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", f"transfer_to_{agent}".lower())


def function(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A tool in OpenAI's function format, which every LangChain integration converts for its vendor."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


def output_kwargs(vendor: str, schema: dict[str, Any]) -> dict[str, Any]:
    if vendor == "openai":
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "final_output", "schema": schema, "strict": False}}}
    if vendor == "anthropic":
        return {"output_config": {"format": {"type": "json_schema", "schema": schema}}}
    return {"response_mime_type": "application/json", "response_json_schema": schema}


class Graph:
    """The run's chat models and the compiled two-node graph."""

    def __init__(self, run: ExportedRun, base_url: str | None, api_key: str | None) -> None:
        self.run, self.root_url, self.api_key = run, endpoint_root(base_url), api_key
        self.models: dict[str, Any] = {}
        self.closers: list[Any] = []
        self.final_agent = ROOT
        graph = StateGraph(State)
        graph.add_node("model", self.model_node)
        graph.add_node("tools", self.tools_node)
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", self.route, {"tools": "tools", END: END})
        graph.add_edge("tools", "model")
        self.app = graph.compile()

    def chat_model(self, agent: str) -> Any:
        if agent not in self.models:
            vendor, model_id = CHAT_MODELS[agent]
            base = self.build(vendor, model_id)
            tools = [function(spec.name, spec.model_description(), spec.input_schema)
                     for spec in self.run.bundle.agents[agent].tools.values()]
            tools += [function(t, d, AGENT_TOOL_SCHEMA) for t, d in AGENTS[agent]["agent_tools"].items()]
            tools += [function(transfer_name(t), d, {"type": "object", "properties": {}, "additionalProperties": False})
                      for t, d in AGENTS[agent]["handoffs"].items()]
            schema = AGENTS[agent]["output_schema"]
            bound = base.bind_tools(tools) if tools else base
            self.models[agent] = bound.bind(**output_kwargs(vendor, schema)) if schema is not None else bound
        return self.models[agent]

    def build(self, vendor: str, model_id: str) -> Any:
        key = self.api_key
        settings = SETTINGS or {}
        if vendor == "openai":
            import openai
            from langchain_openai import ChatOpenAI

            http = openai.DefaultAsyncHttpx2Client()  # this run's own client (async clients are loop-bound)
            self.closers.append(http.aclose)
            return ChatOpenAI(model=model_id, api_key=key or os.environ.get("OPENAI_API_KEY") or "sk-dummy",
                              base_url=self.root_url + "/v1" if self.root_url else None, http_async_client=http,
                              use_responses_api=OPENAI_API == "responses", stream_usage=True,
                              temperature=settings.get("temperature"), max_tokens=settings.get("max_tokens"))
        if vendor == "anthropic":
            import anthropic
            from langchain_anthropic import ChatAnthropic

            http = anthropic.DefaultAsyncHttpxClient()
            self.closers.append(http.aclose)

            class RunChatAnthropic(ChatAnthropic):
                """langchain-anthropic shares one async HTTP client per base URL across the process, and an
                async client is bound to the event loop that first used it: this run gets its own."""

                @cached_property
                def _async_client(self) -> anthropic.AsyncClient:
                    return anthropic.AsyncClient(**self._client_params, http_client=http, open_telemetry=False)

            return RunChatAnthropic(model=model_id, api_key=key or os.environ.get("ANTHROPIC_API_KEY") or "sk-ant-dummy",
                                 base_url=self.root_url, temperature=settings.get("temperature"),
                                 max_tokens=settings.get("max_tokens") or 4096)
        from langchain_google_genai import ChatGoogleGenerativeAI

        gemini = ChatGoogleGenerativeAI(model=model_id, google_api_key=key or os.environ.get("GOOGLE_API_KEY") or "dummy",
                                        base_url=self.root_url, temperature=settings.get("temperature"),
                                        max_output_tokens=settings.get("max_tokens"))
        self.closers.append(gemini.aclose)
        return gemini

    @staticmethod
    def route(state: State) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    async def model_node(self, state: State) -> dict[str, Any]:
        agent = state["agent"]
        self.run.before_model_call(agent)  # portagent's max_turns, counted before each call
        messages = [SystemMessage(AGENTS[agent]["instructions"]), *state["messages"]]
        model = self.chat_model(agent)  # built (and its integration imported) before the clock starts
        t0 = time.perf_counter()
        reply = await model.ainvoke(messages)
        usage = reply.usage_metadata or {}
        cached = usage.get("input_token_details") or {}
        meta = reply.response_metadata or {}
        self.run.model_call(agent, CHAT_MODELS[agent][1], input_tokens=int(usage.get("input_tokens") or 0),
                            output_tokens=int(usage.get("output_tokens") or 0),
                            cache_read_tokens=int(cached.get("cache_read") or 0),
                            cache_write_tokens=sum(int(cached.get(k) or 0) for k in CACHE_WRITES),
                            reasoning_tokens=int((usage.get("output_token_details") or {}).get("reasoning") or 0),
                            latency_ms=round((time.perf_counter() - t0) * 1000, 3),
                            finish_reason="tool_calls" if reply.tool_calls else "stop",
                            response_id=meta.get("id") or (reply.id if not str(reply.id).startswith("lc_run-") else None))
        message = AIMessage(content=reply.content, tool_calls=reply.tool_calls, id=reply.id,
                            response_metadata=reply.response_metadata, usage_metadata=reply.usage_metadata, name=agent)
        return {"messages": [message]}

    async def tools_node(self, state: State) -> dict[str, Any]:
        """The reply's tool calls one at a time, in order (one trace order, like portagent's runs)."""
        agent = state["agent"]
        last = state["messages"][-1]
        transfers = {transfer_name(t): t for t in AGENTS[agent]["handoffs"]}
        out: list[ToolMessage] = []
        active = agent
        for call in last.tool_calls:
            name, args, call_id = call["name"], call["args"], call.get("id")
            if name in transfers:  # handoff: the specialist continues the conversation
                self.run.handoff(agent, transfers[name], "handoff")
                active = transfers[name]
                out.append(ToolMessage(json.dumps({"assistant": active}), tool_call_id=call_id, name=name))
            elif name in AGENTS[agent]["agent_tools"]:  # agent_as_tool: this agent keeps control
                self.run.handoff(agent, name, "agent_as_tool")
                task = args.get("input") if isinstance(args, dict) else None
                final = await self.run_agent(name, [HumanMessage(str(task or ""))])
                text = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False, sort_keys=True)
                out.append(ToolMessage(text, tool_call_id=call_id, name=name))
            else:
                # validate → preconditions → budget → policy → approval → idempotency → handler → output checks
                result = await self.run.call_tool(agent, name, args, vendor_call_id=call_id)
                out.append(ToolMessage(json.dumps(result, ensure_ascii=False, sort_keys=True), tool_call_id=call_id,
                                       name=name, status="success" if result.get("ok") else "error"))
        return {"messages": out, "agent": active}

    async def run_agent(self, agent: str, messages: list[Any]) -> Any:
        """Run the graph for ``agent`` until it answers; its final output (``self.history`` keeps the rest)."""
        result = await self.app.ainvoke({"messages": messages, "agent": agent},
                                        {"recursion_limit": 2 * MAX_TURNS + 4})
        self.history, self.final_agent = result["messages"], result.get("agent", agent)
        last = result["messages"][-1]
        text = last.text if isinstance(last, AIMessage) else None
        if text is None or AGENTS[self.final_agent]["output_schema"] is None:
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text  # run.completed marks it output_valid: false


async def main(messages: list[str], *, base_url: str | None = None, api_key: str | None = None,
               approver: Any = "auto-deny", trace: str | Path | None = None, source: str = "live",
               clock: Any = None, ids: Any = None) -> dict[str, Any]:
    """Run the conversation (each user message continues it); returns run.completed's fields."""
    run = ExportedRun(SPEC, provider="langgraph", sdk="langgraph", sdk_version=LANGGRAPH_VERSION,
                      model=":".join(CHAT_MODELS[ROOT]), messages=messages, approver=approver, trace_path=trace,
                      source=source, clock=clock, ids=ids)
    graph = Graph(run, base_url, api_key)
    history: list[Any] = []
    final: Any = None
    try:
        for i, text in enumerate(messages):
            final = await graph.run_agent(graph.final_agent if i else ROOT, [*history, HumanMessage(text)])
            history = graph.history
        if run.stop is not None:
            raise run.stop
    except GraphRecursionError:
        return run.completed(status="budget_exhausted", stop_reason="max_turns", final_agent=graph.final_agent)
    except Exception as e:
        stop = run.stopped(e)
        if stop is None:
            raise
        return run.completed(status="budget_exhausted", stop_reason=stop.limit, final_agent=graph.final_agent)
    finally:
        for close in graph.closers:
            await close()
    return run.completed(final, final_agent=graph.final_agent)


'''

MAIN = main_block(api_key_help="default: the vendor's usual environment variable")


def agents_table(bundle: AgentBundle) -> list[str]:
    lines: list[str] = []
    for name in creation_order(bundle):
        node = bundle.agents[name]
        kinds: dict[str, dict[str, Any]] = {"handoff": {}, "agent_as_tool": {}}
        for e in node.edges:
            kinds[e.kind][e.target] = e.description or bundle.agents[e.target].spec.description or e.target
        lines.append(f"    {name!r}: {{")
        lines.append(f'        "instructions": {string_literal(node.spec.instructions, 8)},')
        lines.append(f'        "handoffs": {literal(kinds["handoff"], 20)},')
        lines.append(f'        "agent_tools": {literal(kinds["agent_as_tool"], 23)},')
        schema = node.spec.output_schema
        lines.append(f'        "output_schema": {literal(schema, 25) if schema is not None else "None"},')
        lines.append("    },")
    return lines


def render(bundle: AgentBundle, spec_expr: str, spec_label: str, module: str | None = None) -> str:
    shared = bundle.spec.models
    root = bundle.agents[bundle.root]
    chat_models: dict[str, Any] = {}
    for name, node in bundle.agents.items():
        found = model_choice(node, root)
        assert found is not None, "port-check refuses a spec without a model for the target"
        chat_models[name] = found
    settings = (
        {"temperature": shared.temperature, "max_tokens": shared.max_tokens}
        if shared.force_shared_settings
        else None
    )
    out = HEADER.format(
        root=bundle.root,
        spec=spec_label,
        module=module or f"{bundle.root}_langgraph.py",
        spec_expr=spec_expr,
        chat_models=literal(chat_models, 14),
        openai_api=shared.openai_api,
        max_turns=bundle.spec.budget.max_turns,
        settings=literal(settings, 11),
    )
    return out + AGENTS_HEAD + "\n" + "\n".join(agents_table(bundle)) + "\n}" + BODY + MAIN
