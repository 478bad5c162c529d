"""Map a script's tool and agent names onto the names the request actually declared.

- Tools: exact name first, then tolerant: Claude Code exposes SDK MCP tools as
  ``mcp__<server>__<tool>`` (SDK_NOTES §4.3), so ``get_weather`` matches
  ``mcp__weather__get_weather`` (and the other way round). Only that prefix is taken off — the
  server is the segment before the *first* ``__`` after ``mcp__`` (portagent's own server is
  ``portagent``) — so a tool whose own name holds ``__`` (``get__order``) keeps it whole.
- Handoffs, whatever the wire, by what the request declares:
  1. ``transfer_to_<agent>`` — openai-agents names a handoff tool
     ``transform_string_function_style("transfer_to_" + agent.name)`` (lower case, every
     non-alphanumeric character → ``_``; ``agents/handoffs``), arguments ``{}``;
  2. ``transfer_to_agent`` — google-adk's single transfer tool, arguments ``{"agent_name": …}``;
  3. ``Agent`` or ``Task`` — Claude Code's sub-agent tool (renamed from Task to Agent in newer CLIs),
     arguments ``{"description", "prompt", "subagent_type"}`` (+ ``run_in_background: false`` when
     the tool declares it).
  If none is declared the vendor's usual name is emitted anyway, with a note in the request log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from portagent.contracts.emulator_script import Handoff
from portagent.wire.items import RequestView


def _strip_mcp(name: str) -> str | None:
    """``<tool>`` of ``mcp__<server>__<tool>``, else None.

    Cut after the server segment, never at the last ``__``: the tool's own name may hold ``__``
    (``mcp__portagent__get__order`` is tool ``get__order``; the importer makes such names too)."""
    if not name.startswith("mcp__"):
        return None
    server, sep, tool = name[len("mcp__") :].partition("__")
    return tool if server and sep and tool else None


def _same_tool(script_name: str, declared: str) -> bool:
    """Whether two names differ only by Claude Code's ``mcp__<server>__`` prefix."""
    s, d = _strip_mcp(script_name), _strip_mcp(declared)
    return s == declared or d == script_name or (s is not None and s == d)


def function_style(name: str) -> str:
    """openai-agents' tool-name transform: lower case, non-alphanumerics → ``_``."""
    return re.sub(r"[^a-z0-9_]", "_", name.lower())


def resolve_tool_name(script_name: str, declared: list[str]) -> tuple[str, str | None]:
    """The declared name for a scripted tool, and a note when it is not declared."""
    if script_name in declared:
        return script_name, None
    matches = [d for d in declared if _same_tool(script_name, d)]
    if matches:
        note = None
        if len(matches) > 1:
            note = f"tool {script_name!r} matches several declared tools {matches}; used {matches[0]!r}"
        return matches[0], note
    return script_name, f"tool {script_name!r} is not declared in the request (declared: {declared})"


@dataclass(frozen=True)
class ResolvedHandoff:
    name: str
    """The tool name to call."""
    arguments: dict[str, Any]
    """The call's arguments."""
    note: str | None
    """Set when the request declared no matching transfer tool."""


def resolve_handoff(handoff: Handoff, view: RequestView) -> ResolvedHandoff:
    declared = view.tool_names()
    wanted = function_style(f"transfer_to_{handoff.agent}")
    for name in declared:
        if name.startswith("transfer_to_") and name != "transfer_to_agent" and function_style(name) == wanted:
            return ResolvedHandoff(name, dict(handoff.arguments), None)
    if "transfer_to_agent" in declared:
        return ResolvedHandoff("transfer_to_agent", {"agent_name": handoff.agent}, None)
    for decl in view.tools:
        if decl.name in ("Agent", "Task"):
            args = _claude_args(handoff, view)
            props = (decl.parameters or {}).get("properties") or {}
            if "run_in_background" in props:
                # Claude Code 2.1 runs sub-agents in the background by default and reports later in
                # an extra turn; a handoff waits for the specialist, so ask for the foreground.
                args["run_in_background"] = False
            return ResolvedHandoff(decl.name, args, None)
    note = f"handoff to {handoff.agent!r}: the request declares no transfer tool (declared: {declared})"
    if view.api.startswith("openai"):
        return ResolvedHandoff(wanted, dict(handoff.arguments), note)
    if view.api.startswith("gemini"):
        return ResolvedHandoff("transfer_to_agent", {"agent_name": handoff.agent}, note)
    return ResolvedHandoff("Agent", _claude_args(handoff, view), note)


def _claude_args(handoff: Handoff, view: RequestView) -> dict[str, Any]:
    return {
        "description": handoff.description or f"Hand off to {handoff.agent}",
        "prompt": handoff.input if handoff.input is not None else (view.first_user_text() or ""),
        "subagent_type": handoff.agent,
    }
