"""Reading a Claude Agent SDK ``ClaudeAgentOptions`` or ``AgentDefinition`` (0.2.189) into an ``ImportDraft``.

| claude-agent-sdk | portagent |
|---|---|
| ``system_prompt`` (a string) / ``AgentDefinition.prompt`` | ``instructions`` |
| ``model`` | ``models.claude`` |
| SDK MCP tools (``tool()`` + ``create_sdk_mcp_server``) | ToolSpecs: the input schema the server lists (what Claude sees), handler a shim calling ``SdkMcpTool.handler`` |
| stdio / HTTP MCP servers | ``mcp_servers`` (governed by the gateway, annotations not trusted) |
| built-ins granted (``tools=[…]``, or named in ``allowed_tools``) | ``builtin_tools`` (governed by the policy, run by the CLI) |
| ``allowed_tools`` | ``allow`` policy rules (Claude ran them without asking); ``Bash(prefix:*)`` → a ``when`` prefix |
| ``disallowed_tools`` | not offered (left out of the agent) |
| ``agents={name: AgentDefinition}`` | delegation ``agent_as_tool`` (Claude subagents: the parent keeps control) |
| ``max_turns``, ``max_budget_usd`` | ``budget.max_turns``, ``budget.max_cost_usd`` |
| ``output_format={"type": "json_schema", …}`` | ``output_schema`` |

Anything else set away from its default (permission modes, ``can_use_tool``, hooks, settings sources,
sandbox, thinking …) is listed in the report. The SDK MCP server's tool list is read through the MCP
protocol (``mcp.Client`` on the server instance); the ``SdkMcpTool`` objects whose handlers the shims
call are found as module-level attributes of the importing module (or of modules it imports).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import sys
import threading
from types import ModuleType
from typing import Any

from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions, SdkMcpTool

from portagent.adapters.base import package_version
from portagent.adapters.claude.rules import DELEGATION_BUILTINS as DELEGATION_TOOLS
from portagent.migration.draft import DraftAgent, DraftEdge, DraftTool, ImportDraft, PolicyRuleDraft
from portagent.migration.importing import (
    ReaderState,
    placeholder_instructions,
    py_identifier,
    schema_gap,
    shim_function,
    source_alias,
    source_module,
    where,
    wrong_type,
)
from portagent.migration.report import ImportReport

_HANDLED = {
    "tools",
    "allowed_tools",
    "system_prompt",
    "mcp_servers",
    "permission_mode",
    "max_turns",
    "max_budget_usd",
    "disallowed_tools",
    "model",
    "agents",
    "output_format",
    "can_use_tool",
    "hooks",
    "debug_stderr",
}
_RUNTIME = {
    "cwd",
    "cli_path",
    "env",
    "stderr",
    "max_buffer_size",
    "extra_args",
    "include_partial_messages",
    "forward_subagent_text",
    "include_hook_events",
    "strict_mcp_config",
    "load_timeout_ms",
    "permission_prompt_tool_name",
    "client_app",
    "user",
}
"""How one process runs the CLI, not what the agent is: noted, not imported (portagent's adapter sets them)."""
_SCOPED = re.compile(r"^(?P<tool>[A-Za-z]+)\((?P<pattern>.*)\)$")


def read_claude(ref: str, obj: Any) -> ImportDraft:
    if not isinstance(obj, ClaudeAgentOptions | AgentDefinition):
        raise wrong_type(ref, obj, "a Claude ClaudeAgentOptions or AgentDefinition", "claude")
    report = ImportReport(sdk=f"claude-agent-sdk {package_version('claude-agent-sdk')}", source=ref)
    reader = _Reader(ref, report)
    name = ref.rpartition(":")[2].split(".")[-1]
    if isinstance(obj, AgentDefinition):
        root = reader.definition(name, obj, parent=None)
    else:
        root = reader.options(name, obj)
    return reader.draft("claude", root)


class _Reader(ReaderState):
    def __init__(self, ref: str, report: ImportReport) -> None:
        super().__init__(report)
        self.ref = ref
        self.mcp_tools: dict[str, DraftTool] = {}
        """``mcp__<server>__<tool>`` → the imported ToolSpec draft."""
        self.servers: dict[str, list[str]] = {}
        """SDK server name → its ``mcp__…`` tool names."""

    # --- ClaudeAgentOptions ----------------------------------------------------------------------

    def options(self, raw_name: str, o: ClaudeAgentOptions) -> DraftAgent:
        name = self.agent_names.take(raw_name)
        root = DraftAgent(name=name, instructions=self.system_prompt(o.system_prompt, name))
        if o.model:
            root.models["claude"] = o.model
        for server_name, config in (o.mcp_servers or {}).items() if isinstance(o.mcp_servers, dict) else ():
            self.server(server_name, config, root)
        if not isinstance(o.mcp_servers, dict):
            self.report.add(
                "not_portable",
                f"mcp_servers={o.mcp_servers!r}",
                "not imported: a config file path; declare the servers under mcp_servers",
            )
        disallowed = set(o.disallowed_tools or [])
        root.tools = [t for full, t in self.mcp_tools.items() if full not in disallowed]
        for full in sorted(disallowed & set(self.mcp_tools)):
            self.report.add(
                "changed", f"{full} in disallowed_tools", "not offered to the agent (left out of its tools)"
            )
        self.builtins(o, root, disallowed)
        self.allowed(o.allowed_tools or [], root)
        if o.max_turns:
            root.budget["max_turns"] = o.max_turns
        if o.max_budget_usd:
            root.budget["max_cost_usd"] = o.max_budget_usd
        if isinstance(o.output_format, dict) and o.output_format.get("type") == "json_schema":
            root.output_schema = dict(o.output_format.get("schema") or {})
        elif o.output_format:
            self.report.add("not_portable", f"output_format {o.output_format!r}", "not imported")
        for sub_name, definition in (o.agents or {}).items():
            sub = self.definition(sub_name, definition, parent=root)
            root.edges.append(DraftEdge("agent_as_tool", sub, definition.description or ""))
        self.permissions(o)
        self.rest(o)
        return root

    def system_prompt(self, prompt: Any, name: str) -> str:
        if isinstance(prompt, str) and prompt.strip():
            return prompt
        if isinstance(prompt, dict):
            append = prompt.get("append")
            self.report.add(
                "not_portable",
                f"system_prompt preset {prompt.get('preset')!r}",
                "not imported: Claude Code's own system prompt exists on Claude only; "
                + (
                    "its 'append' text became the instructions"
                    if append
                    else "a placeholder marked [instructions to write] was written"
                ),
            )
            if isinstance(append, str) and append.strip():
                return append
            return placeholder_instructions(name, "the Claude agent used Claude Code's preset system prompt")
        self.report.add(
            "changed",
            f"{name} has no system prompt",
            "a placeholder marked [instructions to write] was written",
        )
        return placeholder_instructions(name, "the Claude agent had no system prompt")

    def server(self, server_name: str, config: Any, root: DraftAgent) -> None:
        kind = config.get("type", "stdio") if isinstance(config, dict) else None
        if kind == "sdk":
            self.sdk_server(server_name, config)
            return
        ref: dict[str, Any] = {"name": py_identifier(server_name)[:32], "trust_annotations": False}
        if kind == "stdio" and config.get("command"):
            ref["command"] = [config["command"], *list(config.get("args") or [])]
            if config.get("env"):
                ref["env"] = dict(config["env"])
        elif kind == "http" and config.get("url"):
            ref["url"] = config["url"]
            if config.get("headers"):
                self.report.add(
                    "not_portable",
                    f"headers of MCP server {server_name!r}",
                    "not imported: pass credentials through the server's environment instead",
                )
        else:
            self.report.add(
                "not_portable",
                f"MCP server {server_name!r} ({kind})",
                "not imported: portagent attaches stdio and streamable-HTTP servers only",
            )
            return
        root.mcp_servers.append(ref)
        self.report.add(
            "review",
            f"MCP server {server_name!r}",
            "imported into mcp_servers with trust_annotations: "
            "false (every tool external_effect); its tools are executed by portagent's gateway, named "
            f"{ref['name']}_<tool> instead of mcp__{server_name}__<tool>",
        )

    def sdk_server(self, server_name: str, config: dict[str, Any]) -> None:
        listed = _list_tools(config.get("instance"))
        if listed is None:
            self.report.add(
                "not_portable", f"SDK MCP server {server_name!r}", "not imported: its tools cannot be listed"
            )
            return
        holders = self.sdk_tool_objects()
        for t in listed:
            full = f"mcp__{server_name}__{t.name}"
            subject = f"SDK MCP tool {t.name!r} (server {server_name!r})"
            schema = dict(t.input_schema or {})
            gap = schema_gap(schema)
            if gap:
                self.report.add("not_portable", subject, f"not imported: {gap}")
                continue
            holder = holders.get(t.name)
            if holder is None:
                self.report.add(
                    "not_portable",
                    subject,
                    "not imported: no SdkMcpTool named like it is a module-level "
                    f"attribute of {source_module(self.ref)!r} (or of a module it imports), so there is no "
                    "handler to point at",
                )
                continue
            mod, attr = holder
            name = self.tool_names.take(t.name)
            alias = source_alias(mod)
            self.shim_imports[mod] = f"import {mod} as {alias}"
            shim = (
                f"async def {shim_function(name)}(**args):\n"
                f'    """{mod}.{attr}: a Claude SDK MCP tool; its handler takes one args dict and returns '
                'MCP content."""\n'
                f"    return await call_mcp_handler({alias}.{attr}.handler, args)\n"
            )
            tool = DraftTool(
                name=name,
                description=t.description or "",
                input_schema=schema,
                handler="",
                origin=f"Claude SDK MCP tool {t.name} ({mod}.{attr}.handler)",
                shim=shim,
            )
            self.mcp_tools[full] = tool
            self.servers.setdefault(server_name, []).append(full)
            self.report.add(
                "note",
                subject,
                f"handler is a shim ({shim_function(name)}) calling {mod}.{attr}.handler "
                "and converting its MCP content to a value; the model now sees it as "
                f"mcp__portagent__{name} on Claude",
            )
            hints = t.annotations
            if hints is not None and getattr(hints, "read_only_hint", None):
                self.report.add(
                    "review", subject, "its annotations say readOnlyHint: effect read is likely right"
                )

    def sdk_tool_objects(self) -> dict[str, tuple[str, str]]:
        """Tool name → (module, attribute) of each ``SdkMcpTool`` in the importing module or modules it imports."""
        found: dict[str, tuple[str, str]] = {}
        start = sys.modules.get(source_module(self.ref))
        modules: list[ModuleType] = [start] if start is not None else []
        modules += [v for v in vars(start).values() if isinstance(v, ModuleType)] if start is not None else []
        for module in modules:
            for attr, value in vars(module).items():
                if isinstance(value, SdkMcpTool) and value.name not in found:
                    found[value.name] = (module.__name__, attr)
        return found

    def builtins(self, o: ClaudeAgentOptions, root: DraftAgent, disallowed: set[str]) -> None:
        named = [_bare(t) for t in o.allowed_tools or [] if not t.startswith("mcp__")]
        if isinstance(o.tools, list):
            granted = list(o.tools)
        else:
            granted = named
            what = "the claude_code preset" if isinstance(o.tools, dict) else "Claude Code's default tool set"
            self.report.add(
                "changed",
                f"built-in tools ({what})",
                "not every built-in is granted: only those named in allowed_tools ("
                + (", ".join(dict.fromkeys(named)) or "none")
                + "); grant more under builtin_tools",
            )
        for b in dict.fromkeys(granted):
            if b in DELEGATION_TOOLS:
                continue
            if b in disallowed:
                self.report.add("changed", f"built-in {b}", "in disallowed_tools: not granted")
                continue
            root.builtin_tools.append(b)
        if root.builtin_tools:
            self.report.add(
                "review",
                "built-in tools " + ", ".join(root.builtin_tools),
                "granted in builtin_tools: Claude only; the policy decides each call (Read/Glob/Grep are "
                "read, Write/Edit reversible_write, anything else privileged_operation: denied unless a "
                "rule names it)",
            )

    def allowed(self, names: list[str], root: DraftAgent) -> None:
        for entry in names:
            targets: list[str] = []
            scoped = _SCOPED.match(entry)
            if entry.startswith("mcp__"):
                server = entry.split("__")[1] if entry.count("__") >= 1 else ""
                if entry in self.mcp_tools:
                    targets = [self.mcp_tools[entry].name]
                elif entry.rstrip("*").rstrip("_") == f"mcp__{server}" and server in self.servers:
                    targets = [self.mcp_tools[f].name for f in self.servers[server]]
                else:
                    continue  # an external server's tool: its ToolSpec name is only known at run time
                targets = [t for t in targets if any(t == x.name for x in root.tools)]
            elif scoped:
                tool, pattern = scoped.group("tool"), scoped.group("pattern")
                if tool == "Bash" and pattern.endswith(":*") and tool in root.builtin_tools:
                    self.builtin_rule(entry, {"arg": "command", "prefix": pattern[:-2]})
                    continue
                else:
                    self.report.add(
                        "not_portable",
                        f"allowed_tools entry {entry!r}",
                        "not translated into a rule: write a policy rule with 'when' predicates",
                    )
                    continue
            elif entry in root.builtin_tools:
                self.builtin_rule(entry)
                continue
            for target in targets:
                rule = PolicyRuleDraft(
                    f"imported-allowed-{py_identifier(target)}",
                    "allow",
                    f"in allowed_tools of the Claude definition ({entry}): Claude ran it without asking",
                    target,
                )
                self.rules.append(rule)
                self.report.add(
                    "review", f"allowed_tools entry {entry!r}", f"policy rule {rule.id}: allow {target}"
                )

    def builtin_rule(self, entry: str, when: dict[str, Any] | None = None) -> None:
        """``allowed_tools`` naming a built-in. A read built-in is allowed by the effect default anyway. For
        the others the allow rule is written into the report, not the policy: ``portagent validate``
        checks rules against ToolSpecs only and would call a rule naming a built-in one that matches nothing."""
        from portagent.adapters.claude.tools import BUILTIN_EFFECTS

        tool = _bare(entry)
        if BUILTIN_EFFECTS.get(tool) == "read" and when is None:
            self.report.add(
                "note",
                f"allowed_tools entry {entry!r}",
                f"no rule needed: {tool} is a read built-in, allowed by the effect default",
            )
            return
        slug = (
            py_identifier(f"{tool}_{when['prefix']}" if when else tool).strip("_").lower().replace("_", "-")
        )
        rule = {
            "id": f"allow-{slug}",
            "decision": "allow",
            "tool": tool,
            "reason": f"in allowed_tools of the Claude definition ({entry})",
            **({"when": [when]} if when else {}),
        }
        self.report.add(
            "review",
            f"allowed_tools entry {entry!r}",
            f"Claude ran it without asking; portagent's default for {tool} is "
            f"{BUILTIN_EFFECTS.get(tool, 'privileged_operation')} — to keep that, add this rule to policy.yaml: "
            f"{json.dumps(rule)} (not written: validate cannot match rules to built-ins yet)",
        )

    def permissions(self, o: ClaudeAgentOptions) -> None:
        mode = o.permission_mode
        if mode not in (None, "default"):
            extra = {
                "acceptEdits": " (file edits were auto-approved: add allow rules for Write/Edit if you want that)",
                "bypassPermissions": " (portagent never bypasses its policy)",
            }.get(str(mode), "")
            self.report.add(
                "not_portable",
                f"permission_mode {mode!r}",
                "not imported: portagent's policy decides every call on every provider" + extra,
            )
        if o.can_use_tool is not None:
            self.report.add(
                "not_portable",
                f"can_use_tool {getattr(o.can_use_tool, '__qualname__', '?')} ({where(o.can_use_tool)})",
                "not imported: the gateway's policy and approvers decide; port its logic into policy rules",
            )
        for event, matchers in (o.hooks or {}).items():
            self.report.add(
                "not_portable",
                f"hooks {event} ({len(matchers)} matcher(s): {_hook_places(matchers)})",
                "not imported: portagent's trace and gateway replace tool hooks; port other logic into "
                "tool handlers or preconditions",
            )

    def rest(self, o: ClaudeAgentOptions) -> None:
        default = ClaudeAgentOptions()
        for f in dataclasses.fields(ClaudeAgentOptions):
            if f.name in _HANDLED:
                continue
            value = getattr(o, f.name)
            if value == getattr(default, f.name):
                continue
            if f.name in _RUNTIME:
                self.report.add(
                    "note",
                    f"{f.name} = {_short(value)}",
                    "not imported: how one process runs the CLI; portagent's adapter sets its own",
                )
            else:
                self.report.add(
                    "not_portable", f"{f.name} = {_short(value)}", "not imported: a Claude-only option"
                )

    # --- AgentDefinition -------------------------------------------------------------------------

    def definition(self, raw_name: str, d: AgentDefinition, parent: DraftAgent | None) -> DraftAgent:
        name = self.agent_names.take(raw_name)
        if name != raw_name and parent is not None:
            self.report.add(
                "changed", f"subagent {raw_name!r}", f"renamed {name!r} (agent names are identifiers)"
            )
        agent = DraftAgent(
            name=name,
            instructions=d.prompt
            if d.prompt and d.prompt.strip()
            else placeholder_instructions(name, "the subagent had no prompt"),
            description=d.description or "",
        )
        if d.model and d.model != "inherit":
            agent.models["claude"] = d.model
            if d.model in ("sonnet", "opus", "haiku"):
                self.report.add(
                    "note",
                    f"model {d.model!r} of {name}",
                    "a Claude Code alias, kept as models.claude; the Messages API knows no such model: set "
                    "models.anthropic to run it on provider anthropic (validate --provider anthropic says so)",
                )
        disallowed = set(d.disallowedTools or [])
        if d.tools is None:
            if parent is not None:
                agent.tools = [t for t in parent.tools if t.name not in disallowed]
                agent.builtin_tools = [b for b in parent.builtin_tools if b not in disallowed]
                self.report.add(
                    "changed",
                    f"subagent {name} tools",
                    "it inherited every tool of its parent in Claude; "
                    "the list is now explicit: "
                    + ", ".join([t.name for t in agent.tools] + agent.builtin_tools),
                )
        else:
            for t in d.tools:
                if t in disallowed or t in DELEGATION_TOOLS:
                    continue
                if t in self.mcp_tools:
                    agent.tools.append(self.mcp_tools[t])
                elif t.startswith("mcp__"):
                    self.report.add(
                        "not_portable",
                        f"tool {t} of {name}",
                        "not imported: its MCP server is not part of "
                        "this definition (import the ClaudeAgentOptions that declares it)",
                    )
                else:
                    agent.builtin_tools.append(t)
        for field in (
            "skills",
            "memory",
            "mcpServers",
            "initialPrompt",
            "maxTurns",
            "background",
            "effort",
            "permissionMode",
        ):
            value = getattr(d, field, None)
            if value is not None:
                self.report.add(
                    "not_portable",
                    f"{field} of {name}",
                    f"not imported: a Claude-only subagent option ({_short(value)})",
                )
        return agent


def _bare(tool: str) -> str:
    m = _SCOPED.match(tool)
    return m.group("tool") if m else tool


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _list_tools(instance: Any) -> list[Any] | None:
    """The tools an in-process MCP server lists, read through the MCP protocol (``mcp.Client``).

    Run on a thread of its own so it works whether or not the caller is inside an event loop."""
    if instance is None:
        return None
    import mcp

    out: dict[str, Any] = {}

    async def go() -> None:
        async with mcp.Client(instance) as client:
            out["tools"] = (await client.list_tools()).tools

    def target() -> None:
        try:
            asyncio.run(go())
        except Exception as e:  # reported as "cannot be listed"
            out["error"] = e

    thread = threading.Thread(target=target, name="portagent-import-mcp", daemon=True)
    thread.start()
    thread.join(30)
    tools = out.get("tools")
    return list(tools) if tools is not None else None


def _hook_places(matchers: Any) -> str:
    """``file:line`` of every hook callback of an event's matchers."""
    places = [
        where(hook) for m in matchers or [] for hook in (getattr(m, "hooks", None) or []) if callable(hook)
    ]
    return ", ".join(dict.fromkeys(places)) or "no callbacks"
