"""The Claude Agent SDK export template (``portagent export AGENT --to claude``).

The generated module builds ``ClaudeAgentOptions`` directly: ToolSpecs as in-process SDK MCP tools
(``tool()`` + ``create_sdk_mcp_server``) whose bodies call portagent's gateway, subagents as
``AgentDefinition``s run by the built-in Agent tool, granted built-ins decided by the policy in
``can_use_tool`` and observed in ``PostToolUse``, an isolated ``HOME`` for the CLI, and the message
stream read for model calls and the vendor's cost.

It is simpler than ``portagent.adapters.claude.agent`` where that costs nothing in the trace: an MCP
tool's call is decided *and* run inside its body (the adapter decides in ``can_use_tool`` and runs in
the body); the portable tools are therefore in ``allowed_tools`` and the CLI does not ask for them. No
transport cassette, no replay.
"""

from __future__ import annotations

from portagent.contracts.bundle import AgentBundle
from portagent.migration.export import literal, main_block, models_for, string_literal

HEADER = '''"""{root} as a native Claude Agent SDK program.

Exported by `portagent export {spec} --to claude`. ClaudeAgentOptions, SDK MCP tools and subagents
are built below with claude-agent-sdk; nothing goes through portagent's adapters. Two things are kept
from portagent on purpose (portagent.migration.exported):

- every MCP tool body calls portagent's ToolGateway (`run.call_tool`), and granted built-ins are
  decided by the same policy in can_use_tool: the ToolSpecs' schemas, the policy, approvals,
  budgets and idempotency still decide each call;
- a TraceRecorder writes the same normalized trace a portagent run writes, so the two can be
  compared (portagent.tracing.compare.equivalent).

Run it:
    python {module} "your question" --base-url URL --trace trace.jsonl [--approver auto-approve]
(--base-url: ANTHROPIC_BASE_URL for the CLI, e.g. portagent's emulator.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import warnings
from collections import defaultdict, deque
from importlib.metadata import version
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    create_sdk_mcp_server,
    tool,
)

from portagent.migration.exported import ExportedRun, endpoint_root

# The portable tools are in allowed_tools on purpose (the gateway decides inside their bodies), so the
# SDK's warning that can_use_tool will not see them is expected; can_use_tool decides built-ins only.
warnings.filterwarnings("ignore", message="can_use_tool will not be invoked")

SPEC = {spec_expr}
"""The portable spec: the gateway loads its ToolSpecs and policy from here at run time."""

ROOT = {root!r}
MODELS = {models}
"""Model id of each agent (models.claude in the spec)."""
MAX_TURNS = {max_turns}
"""portagent counts model calls itself (run.before_model_call); the CLI's max_turns is a backstop."""
MAX_OUTPUT_TOKENS = {max_output_tokens}
"""The root's forced output limit (models.max_tokens), or None: Claude Code takes one limit for the whole
process, from CLAUDE_CODE_MAX_OUTPUT_TOKENS, as portagent's claude adapter sets it."""
SERVER = "portagent"
PREFIX = f"mcp__{{SERVER}}__"
"""The model sees each ToolSpec as mcp__portagent__<name>."""
TOOLS = {tools}
"""Each agent's ToolSpecs (offered as SDK MCP tools)."""
BUILTINS = {builtins}
"""Claude Code built-ins each agent is granted (decided by the policy, run by the CLI)."""
DELEGATES = {delegates}
"""Subagents each agent may call through the Agent tool (delegation kind agent_as_tool)."""
INSTRUCTIONS = {{
{instructions}
}}
DESCRIPTIONS = {descriptions}
OUTPUT_SCHEMA = {output_schema}
"""The root's output_schema (Claude's structured output), or None."""
'''

BODY = '''

class Governance:
    """The CLI's callbacks: who calls what (PreToolUse), the policy for built-ins (can_use_tool and
    PostToolUse), the MCP tool bodies (the gateway), and model calls from the message stream."""

    def __init__(self, run: ExportedRun) -> None:
        self.run = run
        self.callers: dict[str, str] = {{}}
        """tool_use id → the agent that made the call."""
        self.pending: dict[str, deque[str]] = defaultdict(deque)
        """MCP tool name → callers in call order (an MCP body does not see its tool_use id)."""
        self.threads: dict[str, str] = {{}}
        """Agent-tool tool_use id → the subagent running in that thread."""
        self.seen: set[str] = set()

    def mcp_tool(self, name: str) -> Any:
        spec = self.run.tool(next(a for a, tools in TOOLS.items() if name in tools), name)

        async def body(args: dict[str, Any]) -> dict[str, Any]:
            queue = self.pending[name]
            agent = queue.popleft() if queue else ROOT
            # validate → preconditions → budget → policy → approval → idempotency → handler → output checks
            result = await self.run.call_tool(agent, name, args)
            text = json.dumps(result, ensure_ascii=False, sort_keys=True)
            return {{"content": [{{"type": "text", "text": text}}], "is_error": not result.get("ok")}}

        return tool(name, spec.model_description(), spec.input_schema)(body)

    async def pre_tool_use(self, data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        caller = data.get("agent_type") or ROOT
        name = str(data.get("tool_name") or "")
        if tool_use_id:
            self.callers[tool_use_id] = caller
        if name in ("Agent", "Task"):
            tool_input = data.get("tool_input") or {{}}
            target = tool_input.get("subagent_type")
            if target not in DELEGATES.get(caller, []):
                return deny(f"{{caller}} may only delegate to: {{', '.join(DELEGATES.get(caller, [])) or 'nobody'}}")
            if tool_use_id:
                self.threads[tool_use_id] = target
            self.run.handoff(caller, target, "agent_as_tool", reason=str(tool_input.get("description") or ""))
        elif name.startswith(PREFIX):
            self.pending[name.removeprefix(PREFIX)].append(caller)
        elif name in BUILTINS.get(caller, []):
            # Claude Code runs what it deems read-only without asking: "ask" sends every built-in call
            # to can_use_tool, where the policy decides.
            return {{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                           "permissionDecisionReason": "portagent's policy decides this call"}}}}
        return {{}}

    async def can_use_tool(self, name: str, tool_input: dict[str, Any], context: Any) -> Any:
        agent = self.callers.get(context.tool_use_id or "", ROOT)
        if name not in BUILTINS.get(agent, []):
            return PermissionResultDeny(message=f"{{name}} is not granted to {{agent}}")
        prepared = await self.run.prepare_builtin(agent, name, tool_input, vendor_call_id=context.tool_use_id)
        if not prepared.allowed:
            return PermissionResultDeny(message=json.dumps(prepared.rejection.to_model(), sort_keys=True))
        args = prepared.effective_args
        return PermissionResultAllow(updated_input=args if args != tool_input else None)

    async def post_tool_use(self, data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if tool_use_id and data.get("tool_name") in BUILTINS.get(self.callers.get(tool_use_id, ROOT), []):
            self.run.observe_builtin(tool_use_id, output=data.get("tool_response"))
        return {{}}

    async def post_tool_use_failure(self, data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if tool_use_id:
            self.run.observe_builtin(tool_use_id, error=str(data.get("error") or "the built-in tool failed"))
        return {{}}

    def on_message(self, message: Any) -> None:
        """Model calls: the main thread's stream events (exact usage at message_stop); a subagent's
        response once, at its first block (subagents get no stream events)."""
        if isinstance(message, StreamEvent) and message.parent_tool_use_id is None:
            event = message.event
            if event.get("type") == "message_start":
                self.run.before_model_call(ROOT)
                self.usage = dict((event.get("message") or {{}}).get("usage") or {{}})
                self.message_id = str((event.get("message") or {{}}).get("id") or "")
                self.seen.add(self.message_id)  # its blocks also arrive as AssistantMessages: count it once
            elif event.get("type") == "message_delta":
                self.usage.update({{k: v for k, v in (event.get("usage") or {{}}).items() if v is not None}})
                self.stop_reason = (event.get("delta") or {{}}).get("stop_reason")
            elif event.get("type") == "message_stop":
                self.record(ROOT, self.usage, self.stop_reason, self.message_id)
        elif isinstance(message, AssistantMessage) and message.model != "<synthetic>":
            mid = message.message_id or ""
            if mid and mid not in self.seen:
                self.seen.add(mid)
                agent = self.threads.get(message.parent_tool_use_id or "", ROOT)
                self.run.before_model_call(agent)
                has_tool = any(getattr(b, "name", None) for b in message.content)
                self.record(agent, dict(message.usage or {{}}), "tool_use" if has_tool else "end_turn", mid)

    def record(self, agent: str, usage: dict[str, Any], stop_reason: Any, message_id: str) -> None:
        def num(key: str) -> int:
            value = usage.get(key)
            return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0

        cache_read, cache_write = num("cache_read_input_tokens"), num("cache_creation_input_tokens")
        self.run.model_call(  # Anthropic's input_tokens excludes the cache buckets; the trace includes them
            agent, MODELS[agent], input_tokens=num("input_tokens") + cache_read + cache_write,
            output_tokens=num("output_tokens"), cache_read_tokens=cache_read, cache_write_tokens=cache_write,
            finish_reason={{"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}}.get(
                str(stop_reason), "other" if stop_reason else None), response_id=message_id)


def deny(reason: str) -> dict[str, Any]:
    return {{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}}}


def options(gov: Governance, home: Path, base_url: str | None, api_key: str,
            cwd: str | Path | None = None) -> ClaudeAgentOptions:
    """The ClaudeAgentOptions: every portable tool on one in-process MCP server, built-ins off unless
    granted, subagents as AgentDefinitions, and a throw-away HOME so no user configuration leaks in."""
    names = sorted({{t for tools in TOOLS.values() for t in tools}})
    server = create_sdk_mcp_server(SERVER, version="1.0.0", tools=[gov.mcp_tool(n) for n in names])
    delegating = any(DELEGATES.values())

    def agent_tools(agent: str) -> list[str]:
        return [PREFIX + t for t in TOOLS[agent]] + BUILTINS[agent] + (["Agent"] if DELEGATES[agent] else [])

    agents = {{a: AgentDefinition(description=DESCRIPTIONS[a], prompt=INSTRUCTIONS[a], tools=agent_tools(a) or None,
                                 model=MODELS[a]) for a in TOOLS}} if delegating else None
    builtins = sorted({{b for granted in BUILTINS.values() for b in granted}})
    observed = "|".join(builtins) or None
    hooks: dict[Any, list[HookMatcher]] = {{"PreToolUse": [HookMatcher(matcher=None, hooks=[gov.pre_tool_use])]}}
    if observed:
        hooks["PostToolUse"] = [HookMatcher(matcher=observed, hooks=[gov.post_tool_use])]
        hooks["PostToolUseFailure"] = [HookMatcher(matcher=observed, hooks=[gov.post_tool_use_failure])]
    for d in ("work", "tmp", ".claude"):
        (home / d).mkdir(parents=True, exist_ok=True)
    return ClaudeAgentOptions(
        system_prompt=INSTRUCTIONS[ROOT], model=MODELS[ROOT],
        tools=builtins + (["Agent"] if delegating else []),
        allowed_tools=[PREFIX + n for n in names],  # the gateway decides these inside the tool body
        mcp_servers={{SERVER: server}} if names else {{}}, strict_mcp_config=True,
        permission_mode="default", can_use_tool=gov.can_use_tool, hooks=hooks, agents=agents,
        max_turns=MAX_TURNS, setting_sources=[], cwd=str(cwd or home / "work"), include_partial_messages=True,
        forward_subagent_text=True,  # a subagent's text-only responses arrive too (model calls are counted)
        extra_args={{"no-session-persistence": None, **({{"agent": ROOT}} if delegating else {{}})}},
        output_format={{"type": "json_schema", "schema": OUTPUT_SCHEMA}} if OUTPUT_SCHEMA else None,
        env={{"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "TMPDIR": str(home / "tmp"),
             "CLAUDE_CODE_TMPDIR": str(home / "tmp"), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
             "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1", "CLAUDE_CODE_MAX_RETRIES": "2",
             **({{"CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(MAX_OUTPUT_TOKENS)}} if MAX_OUTPUT_TOKENS else {{}}),
             "ANTHROPIC_BASE_URL": endpoint_root(base_url) or "https://api.anthropic.com", "ANTHROPIC_API_KEY": api_key}},
    )


async def main(messages: list[str], *, base_url: str | None = None, api_key: str | None = None,
               approver: Any = "auto-deny", trace: str | Path | None = None, source: str = "live",
               cwd: str | Path | None = None, clock: Any = None, ids: Any = None) -> dict[str, Any]:
    """Run the conversation in one Claude Code session (the CLI works in ``cwd``, default a throw-away
    folder); returns run.completed's fields."""
    run = ExportedRun(SPEC, provider="claude", sdk="claude-agent-sdk", sdk_version=version("claude-agent-sdk"),
                      model=MODELS[ROOT],
                      messages=messages, approver=approver, trace_path=trace, source=source, clock=clock, ids=ids)
    gov = Governance(run)
    home = Path(tempfile.mkdtemp(prefix="exported-claude-"))
    key = api_key or os.environ.get("ANTHROPIC_API_KEY", "")
    client = ClaudeSDKClient(options=options(gov, home, base_url, key, cwd))
    result: ResultMessage | None = None
    try:
        await client.connect()
        for text in messages:
            await client.query(text)
            async for message in client.receive_response():
                gov.on_message(message)
                if isinstance(message, ResultMessage):
                    result = message
            if result is None or result.is_error:
                break
    except Exception as e:
        stop = run.stopped(e)
        if stop is None:  # a provider or SDK error: traced, and the run failed (exit 3), no traceback
            return run.failed(e)
        return run.completed(status="budget_exhausted", stop_reason=stop.limit)
    finally:
        await client.disconnect()
        shutil.rmtree(home, ignore_errors=True)
    if result is None or result.is_error:
        return run.completed(status="failed", stop_reason="provider_error",
                             error=f"Claude Code ended with {{result.subtype if result else 'no result'}}")
    final = result.structured_output if OUTPUT_SCHEMA and result.structured_output is not None else result.result
    return run.completed(final, final_agent=ROOT, vendor_cost_usd=result.total_cost_usd)


'''

MAIN = main_block(
    api_key_help="default: $ANTHROPIC_API_KEY",
    base_url_env="ANTHROPIC_BASE_URL",
    base_url_help="Anthropic endpoint",
    extra=(
        '"--cwd", help="the CLI\'s working folder (what Read and the other built-ins see)"',
        "cwd=args.cwd",
    ),
)


def render(bundle: AgentBundle, spec_expr: str, spec_label: str, module: str | None = None) -> str:
    tools = {n: list(node.tools) for n, node in bundle.agents.items()}
    builtins = {n: list(node.spec.builtin_tools) for n, node in bundle.agents.items()}
    delegates = {
        n: [e.target for e in node.edges if e.kind == "agent_as_tool"] for n, node in bundle.agents.items()
    }
    described = {e.target: e.description for e in bundle.node.edges}
    descriptions = {n: described.get(n) or node.spec.description or n for n, node in bundle.agents.items()}
    instructions = "\n".join(
        f"    {n!r}: {string_literal(node.spec.instructions, 4)}," for n, node in bundle.agents.items()
    )
    text = HEADER.format(
        root=bundle.root,
        spec=spec_label,
        module=module or f"{bundle.root}_claude.py",
        spec_expr=spec_expr,
        models=literal(models_for(bundle, "claude"), 9),
        max_turns=bundle.spec.budget.max_turns,
        max_output_tokens=(
            bundle.spec.models.max_tokens if bundle.spec.models.force_shared_settings else None
        ),
        tools=literal(tools, 8),
        builtins=literal(builtins, 11),
        delegates=literal(delegates, 12),
        instructions=instructions,
        descriptions=literal(descriptions, 15),
        output_schema=literal(bundle.spec.output_schema, 16),
    )
    return text + BODY.format() + MAIN
