"""The google-adk export template (``portagent export AGENT --to adk``).

The generated module mirrors what ``portagent.adapters.adk.agent`` builds — one ``make_<agent>()``
function per agent returning a fresh ``LlmAgent`` (ADK agents have one parent, so an agent used as a
tool is built again as the root of its own tree), a ``BaseTool`` per ToolSpec declaring its JSON Schema,
``sub_agents`` for handoffs, an ``AgentTool`` for agents as tools, callbacks for model calls and
transfers, ``Runner`` + ``InMemorySessionService`` — written out as plain code. A response the API stopped
before its end (cut by the token limit, stopped by the content filter) runs none of its calls, as in the adk
adapter (``Callbacks.after_model``: tests/migration/test_export_openai_adk_replies.py).
"""

from __future__ import annotations

from portagent.contracts.bundle import AgentBundle
from portagent.migration.export import literal, main_block, models_for, string_literal

HEADER = '''"""{root} as a native google-adk program.

Exported by `portagent export {spec} --to adk`. The agents below are built directly with google-adk;
nothing in this file goes through portagent's adapters. Two things are kept from portagent on
purpose (portagent.migration.exported):

- every tool's run_async calls portagent's ToolGateway (`run.call_tool`): the ToolSpecs' schemas,
  the policy, approvals, budgets and idempotency still decide each call;
- a TraceRecorder writes the same normalized trace a portagent run writes, so the two can be
  compared (portagent.tracing.compare.equivalent).

Run it:
    python {module} "your question" --base-url URL --trace trace.jsonl [--approver auto-approve]
(--base-url: a custom Gemini endpoint such as portagent's emulator.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.version import __version__ as ADK_VERSION
from google.genai import types

# Pure helpers (no SDK inside): Gemini usage in OTel semantics, finish reasons, the final text, and
# showing the output schema to the model in ADK's set_model_response tool (see their docstrings).
from portagent.adapters.adk.events import declare_output_schema, final_text, finish_reason, usage_fields
from portagent.migration.exported import ExportedRun, endpoint_root

SPEC = {spec_expr}
"""The portable spec: the gateway loads its ToolSpecs and policy from here at run time."""

ROOT = {root!r}
MODELS = {models}
"""Model id of each agent (models.adk in the spec)."""
MAX_TURNS = {max_turns}
"""portagent counts model calls itself (run.before_model_call); ADK's max_llm_calls is a backstop."""
CONFIG = {config}
"""Each agent's own shared settings forced onto its model (its spec's models.force_shared_settings); an agent not
listed sends none."""
AGENT_TOOL_SCHEMA = {{"type": "object", "properties": {{"input": {{"type": "string"}}}}, "required": ["input"],
                     "additionalProperties": False}}
"""What an agent-as-tool takes (the same on every provider; ADK's own AgentTool declares "request")."""


def sorted_json(value: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(value, ensure_ascii=False, sort_keys=True))
    return result


class GatewayTool(BaseTool):
    """A ToolSpec declared to Gemini from its JSON Schema; its body is portagent's gateway."""

    def __init__(self, run: ExportedRun, agent: str, name: str) -> None:
        self.spec = run.tool(agent, name)
        super().__init__(name=name, description=self.spec.model_description())
        self.run, self.agent = run, agent

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=self.spec.input_schema)

    async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
        # validate → preconditions → budget → policy → approval → idempotency → handler → output checks
        result = await self.run.call_tool(self.agent, self.name, args, vendor_call_id=tool_context.function_call_id)
        return sorted_json(result)


class DelegateTool(AgentTool):
    """Delegation kind agent_as_tool: ADK's AgentTool (a nested Runner) taking the portable input."""

    def __init__(self, run: ExportedRun, agent: LlmAgent, parent: str, description: str) -> None:
        super().__init__(agent)
        self.run, self.parent, self.tool_description = run, parent, description

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.tool_description,
                                         parameters_json_schema=AGENT_TOOL_SCHEMA)

    async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
        # not {{"input": string}}: answered with validation_error (traced); the sub-agent is not run on no task
        task = await self.run.agent_task(self.parent, self.agent.name, args,
                                         vendor_call_id=tool_context.function_call_id)
        if isinstance(task, dict):
            return task
        self.run.handoff(self.parent, self.agent.name, "agent_as_tool")
        return await super().run_async(args={{"request": task}}, tool_context=tool_context)


class Callbacks:
    """Model calls and transfers go to the trace; portagent's max_turns is checked before each call."""

    def __init__(self, run: ExportedRun) -> None:
        self.run = run
        self.started: dict[str, float] = {{}}
        self.declared: dict[str, set[str]] = {{}}
        self.output_schemas: dict[str, dict[str, Any]] = {{}}
        self.ended_bare: str | None = None
        """The agent whose last response, stopped early, held nothing but the calls taken out of it: ADK then
        ends the turn without an event, and the answer is its text so far, ""."""

    def before_model(self, callback_context: Any, llm_request: Any) -> None:
        name = callback_context.agent_name
        self.ended_bare = None
        self.run.before_model_call(name)
        if name in self.output_schemas:
            declare_output_schema(llm_request, self.output_schemas[name])
        self.started[name] = time.perf_counter()

    def after_model(self, callback_context: Any, llm_response: Any) -> Any:
        """Traces the model call. A response cut by the token limit (MAX_TOKENS) or stopped by the content
        filter (SAFETY, RECITATION, …) is handed back without its function calls — ADK runs every call of a
        response, whatever its finish reason, and the last one's arguments may be cut — so the turn ends with
        its text so far and the session keeps no call left unanswered. Else None: ADK keeps its own."""
        if llm_response.partial:
            return None  # streamed chunks: the aggregated response carries the call's usage
        name = callback_context.agent_name
        t0 = self.started.pop(name, None)
        parts = llm_response.content.parts if llm_response.content and llm_response.content.parts else []
        vendor = llm_response.finish_reason.name if llm_response.finish_reason else None
        calls = [str(p.function_call.name or "") for p in parts if p.function_call]
        finish = finish_reason(vendor, has_calls=bool(calls), error_code=llm_response.error_code)
        not_run = calls if finish != "tool_calls" else []  # stopped early (length, content_filter…): none runs
        self.run.model_call(name, MODELS[name], **usage_fields(llm_response.usage_metadata),
                            latency_ms=round((time.perf_counter() - t0) * 1000, 3) if t0 else None,
                            finish_reason=finish, details={{"calls_not_run": not_run}} if not_run else None)
        # nothing at all in a reply Gemini ended otherwise than STOP (its filter, the token limit, OTHER…): ADK
        # makes it an error event, without an answer; it ends the turn with its text so far, "", as well
        if not not_run and not (finish in ("length", "content_filter", "other") and not parts):
            return None
        kept = [p for p in parts if not p.function_call]
        if kept:
            content = types.Content(role=llm_response.content.role, parts=kept)
            return llm_response.model_copy(update={{"content": content}})
        # nothing left: no content, and no error either (streamed, ADK marks a cut response MAX_TOKENS)
        self.ended_bare = name
        return llm_response.model_copy(update={{"content": None, "error_code": None, "error_message": None}})

    async def before_tool(self, tool: Any, args: dict[str, Any], tool_context: Any) -> Any:
        name = tool_context.agent_name
        if tool.name in self.declared.get(name, set()) or tool.name in ("transfer_to_agent", "set_model_response"):
            return None
        # a name no tool declares: the gateway answers (unknown_tool) instead of ADK's free-text error
        return sorted_json(await self.run.call_tool(name, tool.name, args,
                                                    vendor_call_id=tool_context.function_call_id))

    def after_tool(self, tool: Any, args: dict[str, Any], tool_context: Any, tool_response: Any) -> None:
        target = tool_context.actions.transfer_to_agent
        if tool.name == "transfer_to_agent" and target:
            self.run.handoff(tool_context.agent_name, target, "handoff")
        return None


def model(name: str, base_url: str | None, api_key: str) -> Gemini:
    options = types.HttpOptions(base_url=endpoint_root(base_url) or None)
    return Gemini(model=MODELS[name], client_kwargs={{"api_key": api_key, "vertexai": False, "http_options": options}})


def llm_agent(cb: Callbacks, name: str, description: str, instruction: str, tools: list[Any],
              sub_agents: list[LlmAgent], output_schema: dict[str, Any] | None, llm: Gemini) -> LlmAgent:
    cb.declared[name] = {{t.name for t in tools}}
    if output_schema is not None:
        cb.output_schemas[name] = output_schema
    config = types.GenerateContentConfig(**CONFIG[name]) if name in CONFIG else None
    return LlmAgent(
        name=name, description=description, model=llm,
        instruction=lambda _ctx: instruction,  # a callable: a string would go through ADK's {{state}} templating
        tools=tools, sub_agents=sub_agents, output_schema=output_schema, generate_content_config=config,
        disallow_transfer_to_parent=True, disallow_transfer_to_peers=True,
        before_model_callback=cb.before_model, after_model_callback=cb.after_model,
        before_tool_callback=cb.before_tool, after_tool_callback=cb.after_tool,
    )
'''

FOOTER = '''

async def main(messages: list[str], *, base_url: str | None = None, api_key: str | None = None,
               approver: Any = "auto-deny", trace: str | Path | None = None, source: str = "live",
               streaming: bool = False, clock: Any = None, ids: Any = None) -> dict[str, Any]:
    """Run the conversation in one ADK session; returns run.completed's fields."""
    run = ExportedRun(SPEC, provider="adk", sdk="google-adk", sdk_version=ADK_VERSION, model=MODELS[ROOT],
                      messages=messages, approver=approver, trace_path=trace, source=source, clock=clock, ids=ids)
    key = api_key or os.environ.get("GOOGLE_API_KEY") or "dummy-key"
    cb = Callbacks(run)
    sessions = InMemorySessionService()
    runner = Runner(app_name="exported", agent=make_{root}(run, cb, base_url, key), session_service=sessions)
    config = RunConfig(streaming_mode=StreamingMode.SSE if streaming else StreamingMode.NONE,
                       max_llm_calls=MAX_TURNS + 1)
    final: Any = None
    final_agent: str | None = None
    try:
        await sessions.create_session(app_name="exported", user_id="user", session_id=f"exported-{run.run_id}")
        for message in messages:
            final = None
            content = types.Content(role="user", parts=[types.Part(text=message)])
            async for event in runner.run_async(user_id="user", session_id=f"exported-{run.run_id}",
                                                new_message=content, run_config=config):
                if not event.partial and event.is_final_response() and event.content is not None:
                    text = final_text(event.content.parts)
                    if text is not None:
                        final, final_agent = text, event.author
            if final is None and cb.ended_bare is not None:  # stopped before any text: the text so far
                final, final_agent = "", cb.ended_bare
        if run.stop is not None:
            raise run.stop
    except Exception as e:
        stop = run.stopped(e)
        if stop is None:  # a provider or SDK error: traced, and the run failed (exit 3), no traceback
            return run.failed(e)
        return run.completed(status="budget_exhausted", stop_reason=stop.limit)
    finally:
        await runner.close()
    return run.completed(final, final_agent=final_agent)


'''

MAIN = main_block(
    api_key_help="default: $GOOGLE_API_KEY",
    base_url_env="GOOGLE_GEMINI_BASE_URL",
    base_url_help="Gemini endpoint",
    extra=('"--stream", action="store_true", help="SSE streaming"', "streaming=args.stream"),
)


def render(bundle: AgentBundle, spec_expr: str, spec_label: str, module: str | None = None) -> str:
    config = {
        name: {"temperature": node.spec.models.temperature, "max_output_tokens": node.spec.models.max_tokens}
        for name, node in bundle.agents.items()
        if node.spec.models.force_shared_settings
    }
    out = HEADER.format(
        root=bundle.root,
        spec=spec_label,
        module=module or f"{bundle.root}_adk.py",
        spec_expr=spec_expr,
        models=literal(models_for(bundle, "adk"), 9),
        max_turns=bundle.spec.budget.max_turns,
        config=literal(config, 9),
    )
    funcs: list[str] = []
    for name, node in bundle.agents.items():
        spec = node.spec
        lines = [
            "",
            "",
            f"def make_{name}(run: ExportedRun, cb: Callbacks, base_url: str | None, key: str,",
            "        description: str | None = None) -> LlmAgent:",
            f'    """A fresh {name} LlmAgent (and, below it, its own handoff targets)."""',
        ]
        tools = [f"GatewayTool(run, {name!r}, {t!r})" for t in node.tools]
        for e in node.edges:
            if e.kind == "agent_as_tool":
                desc = e.description or bundle.agents[e.target].spec.description or e.target
                tools.append(
                    f"DelegateTool(run, make_{e.target}(run, cb, base_url, key), {name!r}, {desc!r})"
                )
        subs = [
            f"make_{e.target}(run, cb, base_url, key, {e.description!r})"
            if e.description
            else f"make_{e.target}(run, cb, base_url, key)"
            for e in node.edges
            if e.kind == "handoff"
        ]
        lines.append("    tools: list[Any] = [")
        lines += [f"        {t}," for t in tools]
        lines.append("    ]")
        lines.append(f"    sub_agents = [{', '.join(subs)}]  # handoffs: ADK's transfer_to_agent")
        schema = literal(spec.output_schema, 20) if spec.output_schema is not None else "None"
        lines.append(f"    output_schema = {schema}")
        lines.append(f"    instruction = {string_literal(spec.instructions, 4)}")
        lines.append(
            f"    return llm_agent(cb, {name!r}, description or {spec.description!r}, instruction, tools,"
        )
        lines.append(f"                     sub_agents, output_schema, model({name!r}, base_url, key))")
        funcs.append("\n".join(lines))
    return out + "\n".join(funcs) + "\n" + FOOTER.replace("make_{root}", f"make_{bundle.root}") + MAIN
