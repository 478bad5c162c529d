"""The LangGraph export template (``portagent export AGENT --to langgraph``).

The generated module is the graph ``portagent.adapters.langgraph`` runs, written out as plain code: a
``StateGraph`` with two nodes (``model``: the agent in charge's LangChain chat model bound to its tools;
``tools``: the reply's tool calls one at a time, in the model's order) and the state ``{messages, agent,
calls}``. Handoffs are ``transfer_to_<agent>`` tools that change ``agent``; an agent as a tool runs the
same graph for the sub-agent. A reply's calls run only when its vendor says it ended normally
(``portagent.wire.finish``, the adapters' rule): one cut by the token limit, filtered, refused or ended for
any other reason runs none of them and ends the turn with its text so far; a call whose arguments are not a
JSON object, or an agent tool's without a string ``input``, is answered ``validation_error`` (as the adapter
does: tests/migration/test_export_langgraph_replies.py, test_export_malformed_arguments.py). The chat
model of each agent is the spec's ``models.langgraph`` (``openai:…``, ``anthropic:…``, ``google_genai:…``;
unset: ``openai:`` + ``models.openai``), built with the maintained integration.
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

from portagent.migration.exported import ExportedRun, endpoint_root, read_chat_reply, reading_replies
from portagent.wire.finish import reply_finish, responses_finish

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
"""Each agent's own shared settings forced onto its model (its spec's models.force_shared_settings); an agent not
listed sends none."""
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
    calls: list[dict[str, Any]]
    """The last reply's tool calls in the model's order, those whose arguments are not JSON included."""


def transfer_name(agent: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", f"transfer_to_{agent}".lower())


def function(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A tool in OpenAI's function format, which every LangChain integration converts for its vendor."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


def output_kwargs(vendor: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The output schema in the vendor's own request field. On Chat Completions a bound response_format makes
    ChatOpenAI call the openai client's parse, which refuses any tool that is not strict ("Only strict
    function tools can be auto-parsed"): the field goes in the request body (extra_body) instead."""
    if vendor == "openai":
        fmt = {"type": "json_schema", "json_schema": {"name": "final_output", "schema": schema, "strict": False}}
        return {"extra_body": {"response_format": fmt}} if OPENAI_API == "chat_completions" else {"response_format": fmt}
    if vendor == "anthropic":
        return {"output_config": {"format": {"type": "json_schema", "schema": schema}}}
    return {"response_mime_type": "application/json", "response_json_schema": schema}


TOOL_BLOCKS = {"tool_use": "id", "function_call": "call_id", "tool_call": "id"}
"""Content blocks that are tool calls (Anthropic, the Responses API, LangChain's own) and their id key."""


def refusal_as_text(reply: AIMessage) -> Any:
    """The content of an OpenAI reply in which the model refused, its refusal as text (the turn's answer, as
    an Anthropic refusal's text is), or None when it did not refuse. OpenAI says a refusal in the content: a
    Responses ``refusal`` content block, Chat Completions' ``message.refusal`` (``additional_kwargs``)."""
    content = reply.content
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "refusal" for b in content):
        return [{"type": "text", "text": str(b.get("refusal") or "")}
                if isinstance(b, dict) and b.get("type") == "refusal" else b for b in content]
    refusal = (reply.additional_kwargs or {}).get("refusal")
    if not isinstance(refusal, str):  # an empty refusal ("") is one all the same
        return None
    return [*content, {"type": "text", "text": refusal}] if isinstance(content, list) else (content or "") + refusal


def prompt_blocked(reply: AIMessage) -> str | None:
    """The block reason of a Gemini answer without a candidate (only promptFeedback.blockReason), or None."""
    meta = reply.response_metadata or {}
    feedback = meta.get("prompt_feedback")
    reason = feedback.get("block_reason") if isinstance(feedback, dict) and not meta.get("finish_reason") else None
    return str(getattr(reason, "name", reason)) if reason else None


def finish_reason(vendor: str, reply: AIMessage, has_calls: bool) -> str:
    """How the reply ended, in the trace's words, by portagent's one rule (portagent.wire.finish): its tool
    calls run ("tool_calls") only when the vendor says it ended normally — Anthropic tool_use, Gemini STOP,
    Chat Completions tool_calls / stop, the Responses API completed. Any other end (the token limit "length",
    the content filter or an OpenAI refusal "content_filter", Gemini's "error" about its own reply, any other
    reason "other") runs none of them. LangChain runs the calls of any reply."""
    meta = reply.response_metadata or {}
    if vendor == "anthropic":
        raw = meta.get("stop_reason")
        return reply_finish("anthropic", str(raw) if raw else None, has_calls=has_calls)
    if vendor == "google_genai":
        raw = meta.get("finish_reason")
        raw = getattr(raw, "name", raw)  # Gemini's is an enum, or its name
        if not raw and prompt_blocked(reply) is not None:  # Gemini refused the prompt itself
            return "content_filter"
        return reply_finish("gemini", str(raw) if raw else None, has_calls=has_calls)
    if refusal_as_text(reply) is not None:  # the model refused: the content filter's stop, as Anthropic's
        return "content_filter"
    if meta.get("finish_reason"):  # Chat Completions
        return reply_finish("chat", str(meta["finish_reason"]), has_calls=has_calls)
    if meta.get("status") is None:  # the Responses API: an answer LangChain kept no status of ended normally
        return "tool_calls" if has_calls else "stop"
    reason = (meta.get("incomplete_details") or {}).get("reason")
    return responses_finish(meta["status"], reason, has_calls=has_calls)


def read_calls(reply: AIMessage) -> list[dict[str, Any]]:
    """The reply's tool calls in the order the model sent them. A call whose arguments are not a JSON object
    (LangChain keeps it apart, in invalid_tool_calls) is kept as an invalid call holding the text sent: the
    gateway answers it with validation_error, so the model sees each call of its reply answered."""
    calls = [dict(c) if isinstance(c["args"], dict) else
             {"type": "invalid_tool_call", "name": c["name"], "id": c.get("id"), "error": "not a JSON object",
              "args": c["args"] if isinstance(c["args"], str) else json.dumps(c["args"])}
             for c in reply.tool_calls]
    calls += [dict(c) for c in reply.invalid_tool_calls]
    # the model's order: the ids RunChatOpenAI noted (Chat Completions), else the content blocks
    blocks = reply.content if isinstance(reply.content, list) else []
    ids = (reply.response_metadata or {}).get("tool_call_ids") or [
        b.get(TOOL_BLOCKS[b["type"]]) for b in blocks if isinstance(b, dict) and b.get("type") in TOOL_BLOCKS]
    order = {call_id: i for i, call_id in enumerate(ids)}
    return sorted(calls, key=lambda c: order.get(c.get("id"), len(order)))


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
            base = self.build(agent, vendor, model_id)
            tools = [function(spec.name, spec.model_description(), spec.input_schema)
                     for spec in self.run.bundle.agents[agent].tools.values()]
            tools += [function(t, d, AGENT_TOOL_SCHEMA) for t, d in AGENTS[agent]["agent_tools"].items()]
            tools += [function(transfer_name(t), d, {"type": "object", "properties": {}, "additionalProperties": False})
                      for t, d in AGENTS[agent]["handoffs"].items()]
            schema = AGENTS[agent]["output_schema"]
            bound = base.bind_tools(tools) if tools else base
            self.models[agent] = bound.bind(**output_kwargs(vendor, schema)) if schema is not None else bound
        return self.models[agent]

    def build(self, agent: str, vendor: str, model_id: str) -> Any:
        key = self.api_key
        settings = SETTINGS.get(agent, {})  # this agent's own, never the root's
        if vendor == "openai":
            import openai
            from langchain_openai import ChatOpenAI

            http = openai.DefaultAsyncHttpx2Client()  # this run's own client (async clients are loop-bound)
            self.closers.append(http.aclose)

            class RunChatOpenAI(ChatOpenAI):
                """Notes the order of a Chat Completions reply's tool calls, which langchain-openai splits into
                tool_calls and invalid_tool_calls (arguments that are not a JSON object): read_calls answers
                them in the model's order. It keeps an empty message.refusal too ("", which langchain-openai
                drops): a refusal all the same. _create_chat_result is its (private) step from the vendor's
                reply; read_chat_reply keeps a call whose arguments are JSON but not an object (null, ["x"])
                as an invalid call, where langchain-openai would fail the run (or read null as {})."""

                def _create_chat_result(self, response: Any, generation_info: Any = None) -> Any:
                    result = read_chat_reply(super()._create_chat_result, response, generation_info)
                    raw = response if isinstance(response, dict) else response.model_dump(warnings=False)
                    for choice, generation in zip(raw.get("choices") or [], result.generations,
                                                  strict=False):
                        calls = (choice.get("message") or {}).get("tool_calls") or []
                        generation.message.response_metadata["tool_call_ids"] = [c.get("id") for c in calls]
                        refusal = (choice.get("message") or {}).get("refusal")
                        if isinstance(refusal, str):
                            generation.message.additional_kwargs["refusal"] = refusal
                    return result

            return RunChatOpenAI(model=model_id, api_key=key or os.environ.get("OPENAI_API_KEY") or "sk-dummy",
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

                def _format_output(self, data: Any, **kwargs: Any) -> Any:
                    # A tool_use whose input is not a JSON object (text cut mid-JSON) would fail the AIMessage
                    # built here: it is built with {}, then given the text back for read_calls to answer.
                    cut = {b.id: b.input for b in data.content
                           if b.type == "tool_use" and not isinstance(b.input, dict)}
                    if not cut:
                        return super()._format_output(data, **kwargs)
                    blocks = [b.model_copy(update={"input": {}}) if b.id in cut else b for b in data.content]
                    result = super()._format_output(data.model_copy(update={"content": blocks}), **kwargs)
                    calls = result.generations[0].message.tool_calls
                    result.generations[0].message.tool_calls = [{**c, "args": cut.get(c["id"], c["args"])}
                                                                for c in calls]
                    return result

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
        return "tools" if state["calls"] else END

    async def model_node(self, state: State) -> dict[str, Any]:
        agent = state["agent"]
        self.run.before_model_call(agent)  # portagent's max_turns, counted before each call
        messages = [SystemMessage(AGENTS[agent]["instructions"]), *state["messages"]]
        model = self.chat_model(agent)  # built (and its integration imported) before the clock starts
        vendor = CHAT_MODELS[agent][0]
        t0 = time.perf_counter()
        with reading_replies(vendor):  # a Responses call whose arguments are not an object: kept, answered
            reply = await model.ainvoke(messages)
        calls = read_calls(reply)
        finish = finish_reason(vendor, reply, bool(calls))
        # Not ended normally (cut by the token limit, filtered, refused, any other reason): the turn ends with
        # the text so far, as on every portagent provider. Its tool calls are not run (the last one's arguments
        # may be cut), and the message keeps none, so a next user message does not follow calls left unanswered.
        content = reply.content
        refused = refusal_as_text(reply) if vendor == "openai" else None
        if refused is not None:  # the refusal is the answer
            content = refused
        not_run = [c.get("name") for c in calls] if finish != "tool_calls" else []
        if not_run:
            calls = []
            if isinstance(content, list):
                content = [b for b in content if not (isinstance(b, dict) and b.get("type") in TOOL_BLOCKS)]
        details: dict[str, Any] = {"calls_not_run": not_run} if not_run else {}
        blocked = prompt_blocked(reply) if vendor == "google_genai" else None
        if blocked is not None:
            details["prompt_blocked"] = blocked
        usage = reply.usage_metadata or {}
        cached = usage.get("input_token_details") or {}
        meta = reply.response_metadata or {}
        self.run.model_call(agent, CHAT_MODELS[agent][1], input_tokens=int(usage.get("input_tokens") or 0),
                            output_tokens=int(usage.get("output_tokens") or 0),
                            cache_read_tokens=int(cached.get("cache_read") or 0),
                            cache_write_tokens=sum(int(cached.get(k) or 0) for k in CACHE_WRITES),
                            reasoning_tokens=int((usage.get("output_token_details") or {}).get("reasoning") or 0),
                            latency_ms=round((time.perf_counter() - t0) * 1000, 3),
                            finish_reason=finish, details=details or None,
                            response_id=meta.get("id") or (reply.id if not str(reply.id).startswith("lc_run-") else None))
        invalid = [c for c in calls if c.get("type") == "invalid_tool_call"]  # kept: the vendor sees each answered
        message = AIMessage(content=content, tool_calls=[c for c in calls if c not in invalid],
                            invalid_tool_calls=invalid, id=reply.id, response_metadata=reply.response_metadata,
                            usage_metadata=reply.usage_metadata, name=agent)
        return {"messages": [message], "calls": calls}

    async def tools_node(self, state: State) -> dict[str, Any]:
        """The reply's tool calls one at a time, in the model's order (one trace order, like portagent's runs).
        A call whose arguments are not JSON (an invalid call) is answered too, by the gateway or run.agent_task."""
        agent = state["agent"]
        transfers = {transfer_name(t): t for t in AGENTS[agent]["handoffs"]}
        out: list[ToolMessage] = []
        active = agent
        for call in state["calls"]:
            name, args, call_id = call["name"] or "", call["args"], call.get("id")
            if name in transfers:  # handoff: the specialist continues the conversation (it takes no arguments)
                self.run.handoff(agent, transfers[name], "handoff")
                active = transfers[name]
                out.append(ToolMessage(json.dumps({"assistant": active}), tool_call_id=call_id, name=name))
            elif name in AGENTS[agent]["agent_tools"]:  # agent_as_tool: this agent keeps control
                task = await self.run.agent_task(agent, name, args if args is not None else "",
                                                 vendor_call_id=call_id)
                if isinstance(task, dict):  # bad arguments: answered (traced), the sub-agent is not run on no task
                    out.append(ToolMessage(json.dumps(task, sort_keys=True), tool_call_id=call_id, name=name,
                                           status="error"))
                    continue
                self.run.handoff(agent, name, "agent_as_tool")
                final = await self.run_agent(name, [HumanMessage(task)])
                text = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False, sort_keys=True)
                out.append(ToolMessage(text, tool_call_id=call_id, name=name))
            else:
                # validate → preconditions → budget → policy → approval → idempotency → handler → output checks
                # an invalid call's arguments are the text sent: the gateway answers it with validation_error
                result = await self.run.call_tool(agent, name, args if args is not None else "",
                                                  vendor_call_id=call_id)
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
        if stop is None:  # a provider or SDK error: traced, and the run failed (exit 3), no traceback
            return run.failed(e, final_agent=graph.final_agent)
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
    settings = {
        name: {"temperature": node.spec.models.temperature, "max_tokens": node.spec.models.max_tokens}
        for name, node in bundle.agents.items()
        if node.spec.models.force_shared_settings
    }
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
