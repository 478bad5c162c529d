"""The openai-agents export template (``portagent export AGENT --to openai``).

The generated module mirrors what ``portagent.adapters.openai.agent`` builds — ``Agent`` objects with
``OpenAIResponsesModel`` (or ``OpenAIChatCompletionsModel``) on an ``AsyncOpenAI`` client, ``FunctionTool``
per ToolSpec, ``handoff()`` / ``as_tool()`` for delegation, an ``AgentOutputSchemaBase`` for the output
schema, ``RunHooks`` for model calls and handoffs — written out as plain code. A reply the API stopped
before its end (cut by the token limit, stopped by the content filter, a refusal) runs none of its calls, as
in the openai adapter (``StoppedReplies``: tests/migration/test_export_openai_adk_replies.py).
"""

from __future__ import annotations

from portagent.adapters.openai.schema import strict_compatible
from portagent.contracts.agent import ModelSettings
from portagent.contracts.bundle import AgentBundle
from portagent.migration.export import creation_order, literal, main_block, models_for, string_literal

HEADER = '''"""{root} as a native openai-agents program.

Exported by `portagent export {spec} --to openai`. The agents below are built directly with
openai-agents; nothing in this file goes through portagent's adapters. Two things are kept from
portagent on purpose (portagent.migration.exported):

- every tool body calls portagent's ToolGateway (`run.call_tool`): the ToolSpecs' schemas, the
  policy, approvals, budgets and idempotency still decide each call — delete that and the policy no
  longer applies;
- a TraceRecorder writes the same normalized trace a portagent run writes, so the two can be
  compared (portagent.tracing.compare.equivalent).

Run it:
    python {module} "your question" --base-url URL --trace trace.jsonl [--approver auto-approve]
(--base-url: a custom OpenAI endpoint such as portagent's emulator; the client adds /v1.)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import time
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any

import openai
from agents import (
    Agent,
    AgentOutputSchemaBase,
    FunctionTool,
    ItemHelpers,
    MaxTurnsExceeded,
    ModelSettings,
    {model_class},
    RunConfig,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
    RunHooks,
    Runner,
    TracingProcessor,
    handoff,
    set_trace_processors,
)
from agents import __version__ as AGENTS_VERSION
from openai.types.responses import ResponseOutputText

from portagent.migration.exported import ExportedRun, endpoint_root

SPEC = {spec_expr}
"""The portable spec: the gateway loads its ToolSpecs and policy from here at run time."""

ROOT = {root!r}
MODELS = {models}
"""Model id of each agent (models.openai in the spec)."""
MAX_TURNS = {max_turns}
"""portagent counts model calls itself (run.before_model_call); the SDK's max_turns is a backstop."""


class NoUpload(TracingProcessor):
    """openai-agents uploads its traces to api.openai.com by default; this drops them instead."""

    def on_trace_start(self, trace: Any) -> None: ...
    def on_trace_end(self, trace: Any) -> None: ...
    def on_span_start(self, span: Any) -> None: ...
    def on_span_end(self, span: Any) -> None: ...
    def shutdown(self) -> None: ...
    def force_flush(self) -> None: ...


set_trace_processors([NoUpload()])


class SpecOutput(AgentOutputSchemaBase):
    """The spec's output_schema as the agent's structured output (validated again at the end)."""

    def __init__(self, schema: dict[str, Any], strict: bool) -> None:
        self._schema, self._strict = schema, strict

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
            return json_str


INCOMPLETE = {{"max_output_tokens": "length", "content_filter": "content_filter"}}
"""Why the Responses API left an answer incomplete → the trace's finish reason: the token limit, the content
filter; a reason the API added later is "other" (the answer so far is kept all the same)."""
CHAT_ENDS = {{"stop": None, "tool_calls": None, "function_call": None, "length": "length",
             "content_filter": "content_filter"}}
"""A Chat Completions finish_reason → the trace's finish reason of a reply stopped before its end (None: it
ended normally, its calls run — some servers say stop with calls); a value the API does not document
(DeepSeek's insufficient_system_resource, a gateway's error) is "other"."""


class StoppedReplies:
    """Replies the API stopped before their end — cut by the token limit, stopped by the content filter, or for
    another reason than the normal one — kept
    as the answers they are, as portagent's runs keep them on every provider: the turn ends with the text so
    far and NONE of the reply's calls runs (tools, handoffs, agents as tools: the last call's arguments may be
    cut mid-JSON), and the history keeps no call left unanswered. openai-agents would fail an ``incomplete``
    Responses answer and run the calls of a Chat Completions ``length`` one.

    Replies are known by their Responses id, or for Chat Completions by a key of the model call's own that
    RunModel gives the SDK's ModelResponse as its request_id (``chat_key``). Not the x-request-id header the
    SDK puts there: a server that sends none (or always the same) made every completion share one key, and
    what one said was read as another's."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self.finish: dict[str | None, str] = {{}}
        """The finish reason (length, content_filter) of each reply the API stopped early, by its key."""
        self.not_run: dict[str | None, list[str]] = {{}}
        """The names of the calls taken out of such a reply, until its model call is traced."""
        self.bare: set[str | None] = set()
        """Such replies left without a message once their calls were taken out: an agent with an output schema
        has no final output then, and the SDK would ask its model again up to the turn limit."""
        self.ending: dict[str, str | None] = {{}}
        """An agent whose bare reply no error handler ended (an agent run as a tool: as_tool takes none), until
        its next model call, which ends its run instead (``EndedBare``)."""
        self.calls = itertools.count(1)
        responses_create, chat_create = client.responses.create, client.chat.completions.create

        async def create_response(*args: Any, **kwargs: Any) -> Any:
            response = await responses_create(*args, **kwargs)
            reason = getattr(getattr(response, "incomplete_details", None), "reason", None)
            if response.status == "incomplete":
                self.finish[response.id] = INCOMPLETE.get(str(reason), "other")
                response.status = "completed"  # the SDK raises on incomplete: the text so far is the answer
            return response

        async def create_completion(*args: Any, **kwargs: Any) -> Any:
            completion = await chat_create(*args, **kwargs)
            call = CHAT_CALL.get()  # the model call this completion answers (RunModel)
            if call is not None:
                reason = completion.choices[0].finish_reason if completion.choices else None
                call["finish"] = CHAT_ENDS.get(str(reason), "other") if reason is not None else None
                if completion.choices and completion.choices[0].message.refusal is not None:
                    call["finish"] = "content_filter"  # a refusal, "" too (the SDK's converter drops that one)
            return completion

        client.responses.create = create_response  # type: ignore[method-assign]
        client.chat.completions.create = create_completion  # type: ignore[method-assign]

    def chat_key(self, call: dict[str, Any], request_id: str | None) -> str:
        """A key of this program's own for one Chat Completions model call, under which its finish reason (and
        its calls not run, its being cut bare) is noted; the x-request-id, if any, is kept in front of it."""
        key = f"{{request_id or 'no-request-id'}}#{{next(self.calls)}}"
        if call.get("finish") is not None:
            self.finish[key] = call["finish"]
        return key

    def without_calls(self, response: Any) -> Any:
        """The SDK's ModelResponse, without its function calls when the API stopped the reply early (every
        tool of this program is a function: ToolSpecs, handoffs, agents as tools).

        A refusal is such a reply: OpenAI says it in the content (a Responses ``refusal`` part; the SDK turns a
        Chat Completions ``message.refusal`` into one), and openai-agents would raise ModelRefusalError (and run
        its calls, if it held any). It is traced content_filter, as an Anthropic refusal, and its refusal
        becomes the reply's text: what the model said is the answer of the turn. An empty refusal ("") is one
        too. A stopped reply that says nothing (no text left in its last message) is bare: ``ended_bare``."""
        key = response.response_id or response.request_id
        if any(refusals(item) for item in response.output):
            self.finish[key] = "content_filter"
            response.output = [
                item.model_copy(update={{"content": [as_text(part) for part in item.content]}})
                if refusals(item) else item
                for item in response.output
            ]
        if key not in self.finish:
            return response
        calls = [item for item in response.output if getattr(item, "type", None) == "function_call"]
        if calls:
            self.not_run[key] = [str(call.name) for call in calls]
            response.output = [item for item in response.output if item not in calls]
        messages = [item for item in response.output if getattr(item, "type", None) == "message"]
        if not messages or not ItemHelpers.extract_text(messages[-1]):  # no final output: asked again
            self.bare.add(key)
        return response

    def ended_bare(self, data: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult | None:
        """The run's ``invalid_final_output`` handler: an agent with an output schema whose stopped reply says
        nothing (only calls; an empty refusal) ends the run with its text so far, "" (any other missing output:
        the SDK's way)."""
        responses = data.run_data.raw_responses
        key = (responses[-1].response_id or responses[-1].request_id) if responses else None
        if responses and key in self.bare:
            self.bare.discard(key)
            return RunErrorHandlerResult(final_output="", include_in_history=False)
        return None


def refusals(item: Any) -> bool:
    """Whether an output item is a message in which the model refused."""
    if getattr(item, "type", None) != "message":
        return False
    return any(getattr(part, "type", None) == "refusal" for part in item.content or [])


def as_text(part: Any) -> Any:
    """A refusal content part as the text it says; any other part as it is."""
    if getattr(part, "type", None) != "refusal":
        return part
    return ResponseOutputText(type="output_text", text=part.refusal or "", annotations=[], logprobs=[])


class EndedBare(Exception):
    """An agent run as a tool ends here with "" (its stopped reply said nothing; see StoppedReplies)."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self.agent = agent


CHAT_CALL: ContextVar[dict[str, Any] | None] = ContextVar("chat_call", default=None)
"""What the Chat Completions answer of this task's model call said (RunModel sets it, StoppedReplies' client
notes into it); agents run as tools at once are other tasks, each with its own."""


class RunModel({model_class}):
    """The SDK's model; a reply the API stopped early reaches the SDK without its calls (StoppedReplies)."""

    def __init__(self, model: str, openai_client: openai.AsyncOpenAI, stopped: StoppedReplies) -> None:
        super().__init__(model=model, openai_client=openai_client)
        self.stopped = stopped

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        call: dict[str, Any] = {{}}
        token = CHAT_CALL.set(call)
        try:
            response = await super().get_response(*args, **kwargs)
        finally:
            CHAT_CALL.reset(token)
        if response.response_id is None:  # Chat Completions: keyed by this call, not its x-request-id
            response.request_id = self.stopped.chat_key(call, response.request_id)
        return self.stopped.without_calls(response)


class Hooks(RunHooks[Any]):
    """Model calls and handoffs go to the trace; portagent's max_turns is checked before each call."""

    def __init__(self, run: ExportedRun, stopped: StoppedReplies) -> None:
        self.run, self.stopped = run, stopped
        self.started: dict[str, float] = {{}}

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        if agent.name in self.stopped.ending:  # its last reply was bare: ended, unless the run's handler did
            key = self.stopped.ending.pop(agent.name)
            if key in self.stopped.bare:
                self.stopped.bare.discard(key)
                raise EndedBare(agent.name)
        self.run.before_model_call(agent.name)
        self.started[agent.name] = time.perf_counter()

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        t0 = self.started.pop(agent.name, None)
        usage = response.usage
        kinds = [getattr(item, "type", None) for item in response.output]
        key = response.response_id or response.request_id
        not_run = self.stopped.not_run.pop(key, [])
        if key in self.stopped.bare and agent.output_type is not None:
            self.stopped.ending[agent.name] = key
        self.run.model_call(
            agent.name, MODELS[agent.name], input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cache_read_tokens=getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", 0) or 0,
            reasoning_tokens=getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", 0) or 0,
            latency_ms=round((time.perf_counter() - t0) * 1000, 3) if t0 else None,
            finish_reason=self.stopped.finish.pop(key, None) or ("tool_calls" if "function_call" in kinds else "stop"),
            response_id=response.response_id, details={{"calls_not_run": not_run}} if not_run else None)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        self.run.handoff(from_agent.name, to_agent.name, "handoff")


def gateway_tool(run: ExportedRun, agent: str, name: str, *, strict: bool) -> FunctionTool:
    """A FunctionTool declaring the ToolSpec; its body is portagent's gateway, never the handler itself."""
    spec = run.tool(agent, name)

    async def invoke(ctx: Any, raw_args: str) -> str:
        # validate → preconditions → budget → policy → approval → idempotency → handler → output checks
        result = await run.call_tool(agent, name, raw_args, vendor_call_id=getattr(ctx, "tool_call_id", None))
        return json.dumps(result, ensure_ascii=False, sort_keys=True)

    return FunctionTool(name=name, description=spec.model_description(), params_json_schema=spec.input_schema,
                        on_invoke_tool=invoke, strict_json_schema=strict)


def agent_tool(run: ExportedRun, hooks: Hooks, parent: Agent[Any], target: Agent[Any], description: str) -> FunctionTool:
    """Delegation kind agent_as_tool: the coordinator calls the specialist and keeps control."""
    tool = target.as_tool(tool_name=target.name, tool_description=description, hooks=hooks,
                          run_config=RunConfig(tracing_disabled=True), max_turns=MAX_TURNS + 1,
                          failure_error_function=None)
    inner = tool.on_invoke_tool

    async def invoke(ctx: Any, raw_args: str) -> Any:
        # not {{"input": string}}: answered with validation_error (traced); the sub-agent is not run on no task
        task = await run.agent_task(parent.name, target.name, raw_args,
                                    vendor_call_id=getattr(ctx, "tool_call_id", None))
        if isinstance(task, dict):
            return json.dumps(task, ensure_ascii=False, sort_keys=True)
        run.handoff(parent.name, target.name, "agent_as_tool")
        try:
            return await inner(ctx, raw_args)
        except EndedBare as ended:  # its stopped reply held only calls: its answer so far
            if ended.agent != target.name:
                raise
            return ""

    return replace(tool, on_invoke_tool=invoke)
'''

BUILD_HEAD = '''

def build(run: ExportedRun, client: openai.AsyncOpenAI, hooks: Hooks) -> Agent[Any]:
    """The native agents, from the spec's agents; instructions verbatim."""
'''

FOOTER = '''

async def main(messages: list[str], *, base_url: str | None = None, api_key: str | None = None,
               approver: Any = "auto-deny", trace: str | Path | None = None, source: str = "live",
               clock: Any = None, ids: Any = None) -> dict[str, Any]:
    """Run the conversation (one Runner.run per user message); returns run.completed's fields."""
    run = ExportedRun(SPEC, provider="openai", sdk="openai-agents", sdk_version=AGENTS_VERSION, model=MODELS[ROOT],
                      messages=messages, approver=approver, trace_path=trace, source=source, clock=clock, ids=ids)
    client = openai.AsyncOpenAI(api_key=api_key or os.environ.get("OPENAI_API_KEY") or "sk-dummy",
                                base_url=endpoint_root(base_url) + "/v1" if base_url else None)
    hooks = Hooks(run, StoppedReplies(client))
    current = build(run, client, hooks)
    history: list[Any] = []
    result: Any = None
    try:
        for message in messages:
            run_input: Any = [*history, {"role": "user", "content": message}] if history else message
            result = await Runner.run(current, run_input, max_turns=MAX_TURNS + 1, hooks=hooks,
                                      run_config=RunConfig(workflow_name=f"exported:{ROOT}"),
                                      error_handlers={"invalid_final_output": hooks.stopped.ended_bare})
            history, current = result.to_input_list(), result.last_agent
        if run.stop is not None:
            raise run.stop
    except MaxTurnsExceeded:
        return run.completed(status="budget_exhausted", stop_reason="max_turns", final_agent=current.name)
    except Exception as e:
        stop = run.stopped(e)
        if stop is None:  # a provider or SDK error: traced, and the run failed (exit 3), no traceback
            return run.failed(e)
        return run.completed(status="budget_exhausted", stop_reason=stop.limit)
    finally:
        await client.close()
    return run.completed(result.final_output, final_agent=result.last_agent.name)


'''

MAIN = main_block(api_key_help="default: $OPENAI_API_KEY", base_url_env="OPENAI_BASE_URL_ROOT")


def var(agent: str) -> str:
    """The local variable holding an agent in ``build()`` (prefixed: an agent may be named ``run``)."""
    return f"agent_{agent}"


def render(bundle: AgentBundle, spec_expr: str, spec_label: str, module: str | None = None) -> str:
    api = bundle.spec.models.openai_api
    model_class = "OpenAIChatCompletionsModel" if api == "chat_completions" else "OpenAIResponsesModel"
    models = models_for(bundle, "openai")
    out = HEADER.format(
        root=bundle.root,
        spec=spec_label,
        module=module or f"{bundle.root}_openai.py",
        model_class=model_class,
        spec_expr=spec_expr,
        models=literal(models, 9),
        max_turns=bundle.spec.budget.max_turns,
    )
    lines = [BUILD_HEAD.rstrip("\n")]
    order = creation_order(bundle)
    for name in order:
        node = bundle.agents[name]
        tools = [
            f"gateway_tool(run, {name!r}, {t!r}, strict={strict_compatible(spec.input_schema)})"
            for t, spec in node.tools.items()
        ]
        lines.append(f"    {var(name)} = Agent(")
        lines.append(f"        name={name!r},")
        lines.append(f"        instructions={string_literal(node.spec.instructions, 8)},")
        lines.append(f"        model=RunModel(MODELS[{name!r}], client, hooks.stopped),")
        if tools:
            lines.append("        tools=[")
            lines += [f"            {t}," for t in tools]
            lines.append("        ],")
        if node.spec.output_schema is not None:
            schema = node.spec.output_schema
            lines.append(f"        output_type=SpecOutput({literal(schema, 31)},")
            lines.append(f"                               strict={strict_compatible(schema)}),")
        lines.append(f"        model_settings={_settings(node.spec.models)},")
        lines.append("    )")
    wiring = []
    for name in order:
        node = bundle.agents[name]
        handoffs = [
            f"handoff({var(e.target)}"
            + (f", tool_description_override={e.description!r})" if e.description else ")")
            for e in node.edges
            if e.kind == "handoff"
        ]
        if handoffs:
            wiring.append(f"    {var(name)}.handoffs = [{', '.join(handoffs)}]")
        for e in node.edges:
            if e.kind == "agent_as_tool":
                desc = e.description or bundle.agents[e.target].spec.description or e.target
                wiring.append(
                    f"    {var(name)}.tools.append(agent_tool(run, hooks, {var(name)}, {var(e.target)}, {desc!r}))"
                )
    if wiring:
        lines.append("    # delegation, wired once every agent exists (handoff cycles resolve)")
        lines += wiring
    lines.append(f"    return {var(bundle.root)}")
    return out + "\n".join(lines) + "\n" + FOOTER + MAIN


def _settings(shared: ModelSettings) -> str:
    """One agent's own ``model_settings``: a handoff target or agent tool keeps its spec's temperature and
    max_tokens, as the openai adapter runs it."""
    if not shared.force_shared_settings:
        return "ModelSettings(include_usage=True)"
    return f"ModelSettings(temperature={shared.temperature!r}, max_tokens={shared.max_tokens!r}, include_usage=True)"
