"""The anthropic SDK export template (``portagent export AGENT --to anthropic``).

The generated module is the Messages API's documented tool-use loop written out with the ``anthropic``
SDK: ``client.messages.create`` with the ToolSpecs' JSON Schemas as ``tools``, each ``tool_use`` block
answered with a ``tool_result`` (``is_error`` when the gateway refused or the tool failed), until the
model stops asking for tools. It sends the same requests as ``portagent.adapters.anthropic`` (whose beta
tool runner runs this loop for it); the plain loop is used here because it reads top to bottom without
the runner's lazy tool execution. Agents as tools are nested loops; handoffs do not exist on this
runtime (the verdict refuses such a spec before anything is written).
"""

from __future__ import annotations

from typing import Any

from portagent.adapters.anthropic.rules import (
    DEFAULT_MAX_TOKENS,
    agent_max_tokens,
    agent_temperature,
    request_timeout_s,
)
from portagent.contracts.bundle import AgentBundle
from portagent.migration.export import creation_order, literal, main_block, models_for, string_literal

HEADER = '''"""{root} as a native program on the anthropic SDK (the Messages API tool-use loop).

Exported by `portagent export {spec} --to anthropic`. The loop below is written directly with the
`anthropic` SDK (`client.messages.create` → run the `tool_use` blocks → send `tool_result`s → again);
nothing in this file goes through portagent's adapters. Two things are kept from portagent on purpose
(portagent.migration.exported):

- every tool call goes to portagent's ToolGateway (`run.call_tool`): the ToolSpecs' schemas, the
  policy, approvals, budgets and idempotency still decide each call — delete that and the policy no
  longer applies;
- a TraceRecorder writes the same normalized trace a portagent run writes, so the two can be
  compared (portagent.tracing.compare.equivalent).

Run it:
    python {module} "your question" --base-url URL --trace trace.jsonl [--approver auto-approve]
(--base-url: a custom Anthropic endpoint such as portagent's emulator.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import anthropic

from portagent.migration.exported import ExportedRun, endpoint_root
from portagent.wire.finish import reply_finish

SPEC = {spec_expr}
"""The portable spec: the gateway loads its ToolSpecs and policy from here at run time."""

ROOT = {root!r}
MODELS = {models}
"""Model id of each agent (models.anthropic in the spec, else models.claude)."""
MAX_TOKENS = {max_tokens}
"""Each agent's max_tokens, which the Messages API requires (its spec's models.max_tokens, else the root's when it
does not force its own settings, else {default_max_tokens})."""
TIMEOUT_S = {timeout_s}
"""How long one request of each agent may take. Given explicitly: unstreamed, the SDK refuses a request it expects
to take over 10 minutes (an hour per 128k max_tokens) unless a timeout is given; this is that estimate, at least
10 min."""
TEMPERATURE = {temperature}
"""Each agent's own temperature forced onto its model (its spec's models.force_shared_settings); an agent not
listed sends none."""
AGENT_TOOL_SCHEMA = {{"type": "object", "properties": {{"input": {{"type": "string"}}}}, "required": ["input"],
                     "additionalProperties": False}}
"""What an agent-as-tool takes (the same on every provider): the task as text."""
'''

AGENTS_HEAD = """
AGENTS: dict[str, dict[str, Any]] = {"""

BODY = '''
"""Each agent: its instructions (the system prompt, verbatim), its agents-as-tools (name → description)
and its output schema (sent as output_config.format, validated again at the end)."""


def declarations(run: ExportedRun, agent: str) -> list[dict[str, Any]]:
    """The tools the model sees: each ToolSpec's JSON Schema verbatim, then the agents it may call."""
    tools = [{"name": spec.name, "description": spec.model_description(), "input_schema": spec.input_schema}
             for spec in run.bundle.agents[agent].tools.values()]
    for target, description in AGENTS[agent]["delegates"].items():
        tools.append({"name": target, "description": description, "input_schema": AGENT_TOOL_SCHEMA})
    return tools


def block_param(block: Any) -> dict[str, Any]:
    """A reply's content block as it is sent back in the next request."""
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    data: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    return data


def final_output(agent: str, message: Any) -> Any:
    text = "".join(b.text for b in message.content if b.type == "text") if message is not None else None
    if text is None or AGENTS[agent]["output_schema"] is None:
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # run.completed marks it output_valid: false


async def answer(run: ExportedRun, client: anthropic.AsyncAnthropic, agent: str, call: Any) -> dict[str, Any]:
    """One tool_use block → its tool_result."""
    if call.name in run.bundle.agents[agent].tools:
        # validate → preconditions → budget → policy → approval → idempotency → handler → output checks
        result = await run.call_tool(agent, call.name, call.input, vendor_call_id=call.id)
        text = json.dumps(result, ensure_ascii=False, sort_keys=True)
        return {"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": not result.get("ok")}
    if call.name in AGENTS[agent]["delegates"]:  # agent_as_tool: a nested loop; this agent keeps control
        # not {"input": string}: answered with validation_error (traced); the sub-agent is not run on no task
        task = await run.agent_task(agent, call.name, call.input, vendor_call_id=call.id)
        if isinstance(task, dict):
            text = json.dumps(task, ensure_ascii=False, sort_keys=True)
            return {"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": True}
        run.handoff(agent, call.name, "agent_as_tool")
        final, _ = await run_agent(run, client, call.name, [{"role": "user", "content": task}])
        text = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False, sort_keys=True)
        return {"type": "tool_result", "tool_use_id": call.id, "content": text}
    # a tool nobody declared: traced like any attempt (tool.call, unknown_tool), answered as the SDK's tool
    # runner answers it (the adapter's runs send the same text)
    await run.call_tool(agent, call.name, call.input, vendor_call_id=call.id)
    return {"type": "tool_result", "tool_use_id": call.id, "content": f"Error: Tool '{call.name}' not found",
            "is_error": True}


async def run_agent(run: ExportedRun, client: anthropic.AsyncAnthropic, agent: str,
                    messages: list[Any]) -> tuple[Any, list[Any]]:
    """One user turn of ``agent``: the tool-use loop until the model answers; (final output, conversation)."""
    tools = declarations(run, agent)
    params: dict[str, Any] = {"tools": tools} if tools else {}
    schema = AGENTS[agent]["output_schema"]
    if schema is not None:
        params["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    if agent in TEMPERATURE:
        params["extra_body"] = {"temperature": TEMPERATURE[agent]}
    history = list(messages)
    while True:
        run.before_model_call(agent)  # portagent's max_turns, counted before each request
        t0 = time.perf_counter()
        message = await client.messages.create(model=MODELS[agent], max_tokens=MAX_TOKENS[agent],
                                               timeout=anthropic.Timeout(TIMEOUT_S[agent], connect=5.0),
                                               system=AGENTS[agent]["instructions"], messages=history, **params)
        usage = message.usage
        read, write = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
        calls = [b for b in message.content if b.type == "tool_use"]
        # how the reply ended, as portagent's adapters read it: its calls run only on stop_reason tool_use
        finish = reply_finish("anthropic", message.stop_reason, has_calls=bool(calls))
        not_run = [c.name for c in calls] if calls and finish != "tool_calls" else []
        run.model_call(agent, MODELS[agent], input_tokens=usage.input_tokens + read + write,
                       output_tokens=usage.output_tokens, cache_read_tokens=read, cache_write_tokens=write,
                       latency_ms=round((time.perf_counter() - t0) * 1000, 3), finish_reason=finish,
                       response_id=message.id, details={"calls_not_run": not_run} if not_run else None)
        reply = {"role": "assistant", "content": [block_param(b) for b in message.content]}
        if message.stop_reason == "pause_turn":
            history.append(reply)
            continue  # a long server-side turn: send the conversation back as it is
        if finish != "tool_calls":
            # tools run only on stop_reason tool_use: a max_tokens reply may end inside a tool_use block, a
            # refusal's calls are not run. Those blocks stay out of the conversation (the API refuses a
            # tool_use no tool_result follows, were another user message to continue it).
            kept = [block_param(b) for b in message.content if b.type != "tool_use"]
            return final_output(agent, message), history + ([{"role": "assistant", "content": kept}] if kept else [])
        history.append(reply)
        # one at a time, in order (one trace order, like portagent's runs)
        history.append({"role": "user", "content": [await answer(run, client, agent, c) for c in calls]})


async def main(messages: list[str], *, base_url: str | None = None, api_key: str | None = None,
               approver: Any = "auto-deny", trace: str | Path | None = None, source: str = "live",
               clock: Any = None, ids: Any = None) -> dict[str, Any]:
    """Run the conversation (each user message continues it); returns run.completed's fields."""
    run = ExportedRun(SPEC, provider="anthropic", sdk="anthropic", sdk_version=anthropic.__version__,
                      model=MODELS[ROOT], messages=messages, approver=approver, trace_path=trace, source=source,
                      clock=clock, ids=ids)
    # open_telemetry=False: anthropic 2.14 would make OTel spans and send a traceparent header
    client = anthropic.AsyncAnthropic(api_key=api_key or os.environ.get("ANTHROPIC_API_KEY") or "sk-ant-dummy",
                                      base_url=endpoint_root(base_url), open_telemetry=False)
    history: list[Any] = []
    final: Any = None
    try:
        for text in messages:
            final, history = await run_agent(run, client, ROOT, [*history, {"role": "user", "content": text}])
        if run.stop is not None:
            raise run.stop
    except Exception as e:
        stop = run.stopped(e)
        if stop is None:  # a provider or SDK error: traced, and the run failed (exit 3), no traceback
            return run.failed(e, final_agent=ROOT)
        return run.completed(status="budget_exhausted", stop_reason=stop.limit, final_agent=ROOT)
    finally:
        await client.close()
    return run.completed(final, final_agent=ROOT)


'''

MAIN = main_block(api_key_help="default: $ANTHROPIC_API_KEY", base_url_env="ANTHROPIC_BASE_URL")


def agents_table(bundle: AgentBundle) -> list[str]:
    """``AGENTS = {...}`` entries: instructions verbatim, agents-as-tools, output schema (root last)."""
    lines: list[str] = []
    for name in creation_order(bundle):
        node = bundle.agents[name]
        delegates: dict[str, Any] = {}
        for e in node.edges:  # only agent_as_tool edges: the verdict refuses handoffs before export
            delegates[e.target] = e.description or bundle.agents[e.target].spec.description or e.target
        lines.append(f"    {name!r}: {{")
        lines.append(f'        "instructions": {string_literal(node.spec.instructions, 8)},')
        lines.append(f'        "delegates": {literal(delegates, 21)},')
        schema = node.spec.output_schema
        lines.append(f'        "output_schema": {literal(schema, 25) if schema is not None else "None"},')
        lines.append("    },")
    return lines


def render(bundle: AgentBundle, spec_expr: str, spec_label: str, module: str | None = None) -> str:
    max_tokens = {name: agent_max_tokens(bundle, name) for name in bundle.agents}
    temperatures = {name: agent_temperature(bundle, name) for name in bundle.agents}
    out = HEADER.format(
        root=bundle.root,
        spec=spec_label,
        module=module or f"{bundle.root}_anthropic.py",
        spec_expr=spec_expr,
        models=literal(models_for(bundle, "anthropic"), 9),
        max_tokens=literal(max_tokens, 13),
        timeout_s=literal({name: request_timeout_s(n) for name, n in max_tokens.items()}, 12),
        default_max_tokens=DEFAULT_MAX_TOKENS,
        temperature=literal({n: t for n, t in temperatures.items() if t is not None}, 14),
    )
    return out + AGENTS_HEAD + "\n" + "\n".join(agents_table(bundle)) + "\n}" + BODY + MAIN
