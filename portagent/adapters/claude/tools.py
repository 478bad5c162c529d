"""The Claude adapter's tool side: names, governed built-ins, and the SDK callbacks that route every
tool call through portagent's gateway (``can_use_tool`` decides, the SDK MCP tool body executes, the
``PreToolUse`` / ``PostToolUse`` hooks keep the stream in step and observe built-ins).

``_ToolHooks`` is mixed into the adapter's per-run object (``agent._Run``), which provides the
attributes the class declares (``session``, ``bundle``, ``builtins``, ``callers``, ``allowed``,
``started``, ``trace``, ``transport`` and ``root``).
"""

from __future__ import annotations

import json
from typing import Any, cast

from claude_agent_sdk import (
    HookContext,
    HookInput,
    HookJSONOutput,
    PermissionResultAllow,
    PermissionResultDeny,
    PostToolUseFailureHookInput,
    PostToolUseHookInput,
    PreToolUseHookInput,
    ToolPermissionContext,
)

from portagent.adapters._shared import elapsed_ms, observation_json
from portagent.adapters.claude.rules import DELEGATION_BUILTINS as DELEGATION_TOOLS
from portagent.adapters.claude.trace import ClaudeTrace
from portagent.adapters.claude.transport import PortagentTransport
from portagent.adapters.context_manifest import delegation_input
from portagent.adapters.port import ApprovalPause, RunSession, RunSignal
from portagent.adapters.session_gateway import SessionGateway
from portagent.contracts.bundle import AgentBundle
from portagent.contracts.tool import Effect, Idempotency, ToolSpec
from portagent.tools.approval_flow import recheck, revalidate
from portagent.tools.execution import success_observation
from portagent.tools.gateway import PreparedCall
from portagent.tools.observations import Observation

SERVER = "portagent"
"""Name of the in-process MCP server holding the ToolSpecs: the model sees ``mcp__portagent__<tool>``."""

TOOL_PREFIX = f"mcp__{SERVER}__"


BUILTIN_EFFECTS: dict[str, Effect] = {
    "Read": "read",
    "Glob": "read",
    "Grep": "read",
    "LS": "read",
    "NotebookRead": "read",
    "Write": "reversible_write",
    "Edit": "reversible_write",
    "MultiEdit": "reversible_write",
    "NotebookEdit": "reversible_write",
}
"""Effect class of each granted built-in; anything else (``Bash``, ``WebFetch`` …) is a
``privileged_operation``: denied unless a policy rule names it."""


def builtin_not_executed(args: dict[str, Any]) -> None:
    """Handler of the ToolSpecs synthesized for built-ins: the CLI runs them, never the gateway."""
    raise RuntimeError("Claude Code built-in tools are executed by the CLI, not by portagent's gateway")


def builtin_spec(name: str) -> ToolSpec:
    """A decision-only ToolSpec for a granted built-in: permissive schema, effect from the table."""
    effect: Effect = BUILTIN_EFFECTS.get(name, "privileged_operation")
    return ToolSpec(
        name=name,
        description=f"Claude Code built-in tool {name} (governed by portagent, run by the CLI)",
        effect=effect,
        input_schema={"type": "object", "properties": {}, "additionalProperties": True},
        # Write effects must declare idempotency; the key is never used: built-ins are not executed here.
        idempotency=Idempotency(required=effect in ("reversible_write", "external_effect")),
        handler="portagent.adapters.claude.tools:builtin_not_executed",
    )


class _ToolHooks:
    """SDK callbacks for tools (see the module docstring for the attributes they rely on)."""

    session: RunSession
    bundle: AgentBundle
    builtins: dict[str, list[str]]
    callers: dict[str, str | None]
    allowed: dict[str, tuple[str, PreparedCall]]
    started: dict[str, float]
    trace: ClaudeTrace
    transport: PortagentTransport | None
    root: str

    def caller(self, tool_use_id: str | None) -> str | None:
        if tool_use_id is not None and tool_use_id in self.callers:
            return self.callers[tool_use_id]
        return self.root

    async def pre_tool_use(
        self, data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        hook = cast(PreToolUseHookInput, data)  # registered for PreToolUse only
        agent_type = hook.get("agent_type")
        caller = self.root if not agent_type else (agent_type if agent_type in self.bundle.agents else None)
        if tool_use_id:
            self.callers[tool_use_id] = caller
        name: object = hook.get("tool_name")  # the CLI's JSON: checked, not trusted
        if name in DELEGATION_TOOLS:
            return await self.delegate(caller, tool_use_id, hook.get("tool_input") or {})
        if isinstance(name, str) and (
            name.startswith(TOOL_PREFIX) or any(name in b for b in self.builtins.values())
        ):
            # Claude Code approves what it deems read-only (Read, `echo`, …) without asking can_use_tool;
            # "ask" makes it ask for every call portagent governs.
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "ask",
                    "permissionDecisionReason": "portagent's policy decides this call",
                }
            }
        return {}

    async def delegate(
        self, caller: str | None, tool_use_id: str | None, tool_input: dict[str, Any]
    ) -> HookJSONOutput:
        target = tool_input.get("subagent_type")
        edges = (
            [e.target for e in self.bundle.agents[caller].edges if e.kind == "agent_as_tool"]
            if caller
            else []
        )
        if self.session.stop is not None or target not in edges:
            reason = (
                "the run is stopping"
                if self.session.stop is not None
                else (f"{caller or 'this agent'} may only delegate to: {', '.join(edges) or 'nobody'}")
            )
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            }
        await self.trace.wait_recorded(tool_use_id)
        assert caller is not None and isinstance(target, str)
        if tool_use_id:
            self.trace.threads[tool_use_id] = target
        self.session.record_handoff(
            caller,
            target,
            "agent_as_tool",
            reason=str(tool_input.get("description") or ""),
            details={"vendor_call_id": tool_use_id},
        )
        # context: handoff — the subagent's prompt starts with the handoff package (docs/handoff.md)
        prompt = tool_input.get("prompt")
        given = delegation_input(self.session, caller, target, prompt) if isinstance(prompt, str) else prompt
        if given != prompt:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "updatedInput": {**tool_input, "prompt": given},
                }
            }
        return {}

    async def can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        vendor_id = context.tool_use_id
        await self.trace.wait_recorded(vendor_id)
        agent = self.caller(vendor_id)
        if agent is None:  # a call from an agent portagent did not define: nobody may allow it
            return PermissionResultDeny(
                message=json.dumps(
                    {"ok": False, "error": "permission_denied", "message": "unknown calling agent"}
                )
            )
        gateway = self.session.gateway(agent)
        builtin = tool_name in self.builtins[agent]
        name = tool_name.removeprefix(TOOL_PREFIX)
        try:
            async with self.session.tool_lock:
                prepared = await gateway.prepare(
                    name, tool_input, vendor_call_id=vendor_id, via="builtin" if builtin else "function"
                )
        except RunSignal as sig:  # a deferred approval or a budget stop: end the run here
            done = gateway.prepared(vendor_id) if vendor_id else None
            message = (
                observation_json(done.result) if done is not None and done.result is not None else str(sig)
            )
            return PermissionResultDeny(message=message, interrupt=True)
        if prepared.rejection is not None:  # (a run-level budget rejection already raised BudgetStop above)
            return PermissionResultDeny(message=observation_json(prepared.rejection))
        tool = prepared.tool
        assert tool is not None  # an allowed call names a declared tool (unknown ones are rejected)
        args = prepared.effective_args
        if builtin and prepared.card is not None:
            checked = recheck(gateway.inner, prepared, tool)  # no later execute() for a built-in
            if isinstance(checked, Observation):
                self.observe(gateway, prepared, checked)
                return PermissionResultDeny(message=observation_json(checked))
            args = checked
        elif (
            prepared.card is not None
            and prepared.card.status == "edited"
            and revalidate(gateway.inner, tool, args)
        ):
            # The edit would be refused at execution: let the gateway refuse it now (its handler never
            # runs), since the SDK's own MCP validation would otherwise answer first, untraced.
            obs = await gateway.execute(prepared)
            return PermissionResultDeny(message=observation_json(obs))
        if vendor_id:
            self.allowed[vendor_id] = (agent, prepared)
            if builtin:
                self.started[vendor_id] = self.session.clock.monotonic()
        return PermissionResultAllow(updated_input=args if args != tool_input else None)

    async def execute(self, tool_name: str, args: dict[str, Any]) -> Observation:
        """The MCP tool body: run the call ``can_use_tool`` allowed (found by its ``tool_use`` id)."""
        vendor_id = self.transport.take_tool_use_id(SERVER, tool_name, args) if self.transport else None
        if vendor_id is None:  # no _meta id (another CLI version?): the allowed call with these arguments
            vendor_id = next(
                (
                    k
                    for k, (_, p) in self.allowed.items()
                    if p.tool_name == tool_name and p.via != "builtin" and p.effective_args == args
                ),
                None,
            )
        found = self.allowed.pop(vendor_id, None) if vendor_id else None
        try:
            async with self.session.tool_lock:
                if (
                    found is None
                ):  # never asked through can_use_tool: the gateway decides here (never a silent allow)
                    agent = self.caller(vendor_id) or self.root
                    prepared = await self.session.gateway(agent).prepare(
                        tool_name, args, vendor_call_id=vendor_id
                    )
                else:
                    agent, prepared = found
                obs: Observation = await self.session.gateway(agent).execute(prepared)
        except RunSignal as sig:  # the run is ending; the CLI is stopped before the model reads this
            code = "approval_required" if isinstance(sig, ApprovalPause) else "budget_exhausted"
            return Observation.failure(code, f"the run is stopping: {sig}")
        return obs

    async def post_tool_use(
        self, data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        hook = cast(PostToolUseHookInput, data)  # registered for PostToolUse only
        if hook.get("tool_name") in DELEGATION_TOOLS:
            response = hook.get("tool_response")
            self.trace.thread_done(tool_use_id, response.get("usage") if isinstance(response, dict) else None)
            return {}
        found = self._builtin_call(tool_use_id)
        if found is not None:
            agent, prepared = found
            assert prepared.tool is not None  # a built-in allowed in can_use_tool: registered, known
            self.observe(
                self.session.gateway(agent),
                prepared,
                success_observation(prepared.tool, hook.get("tool_response")),
                tool_use_id,
            )
        return {}

    async def post_tool_use_failure(
        self, data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        hook = cast(PostToolUseFailureHookInput, data)  # registered for PostToolUseFailure only
        found = self._builtin_call(tool_use_id)
        if found is not None:
            agent, prepared = found
            obs = Observation.failure(
                "handler_error",
                str(hook.get("error") or "the built-in tool failed"),
                {"builtin": prepared.tool_name},
            )
            self.observe(self.session.gateway(agent), prepared, obs, tool_use_id)
        return {}

    def _builtin_call(self, tool_use_id: str | None) -> tuple[str, PreparedCall] | None:
        if not tool_use_id:
            return None
        found = self.allowed.get(tool_use_id)
        if found is not None and found[1].via == "builtin":
            return self.allowed.pop(tool_use_id)
        return None

    def observe(
        self,
        gateway: SessionGateway,
        prepared: PreparedCall,
        obs: Observation,
        tool_use_id: str | None = None,
    ) -> None:
        """Record the result of a call the gateway decided but the CLI ran (a governed built-in)."""
        started = self.started.pop(tool_use_id, None) if tool_use_id else None
        latency = elapsed_ms(self.session.clock, started) if started is not None else None
        gateway.observe(prepared, obs, latency)

    # --- running ---------------------------------------------------------------------------------
