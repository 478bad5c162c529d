"""The handler of every A2A-sourced ToolSpec: ``portagent.tools.a2a.bridge:TOOLS.<ident>``.

A ToolSpec's handler is a static string, while a call to a remote agent needs the run's resolved cards
and clients (or its recording). The callable the string resolves to finds the run's ``RunAgents`` at
call time through the context variable the runner sets around the run, else by ``run_id``. This module
imports no A2A SDK.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Protocol

from portagent.tools.tool_context import ToolContext

HANDLER_PREFIX = "portagent.tools.a2a.bridge:TOOLS."


class AgentBackend(Protocol):
    """What answers one run's calls to remote agents (``sources.RunAgents``)."""

    async def call(self, ident: str, args: dict[str, Any], context: ToolContext) -> Any: ...


ACTIVE: ContextVar[AgentBackend | None] = ContextVar("portagent_a2a_agents", default=None)


def ident_for(tool_name: str) -> str:
    """An injective identifier for a ToolSpec name: ``_`` → ``__``, ``-`` → ``_d``."""
    return tool_name.replace("_", "__").replace("-", "_d")


def handler_for(tool_name: str) -> str:
    return HANDLER_PREFIX + ident_for(tool_name)


def is_a2a_tool(tool: Any) -> bool:
    return str(getattr(tool, "handler", "")).startswith(HANDLER_PREFIX)


class _Handler:
    def __init__(self, ident: str) -> None:
        self.ident = ident

    async def __call__(self, tool_context: ToolContext, **args: Any) -> Any:
        from portagent.tools.observations import ToolFailure

        backend = ACTIVE.get()
        if backend is None:
            raise ToolFailure(
                "handler_error",
                "this tool is a skill of a remote A2A agent and runs only inside a portagent run of the "
                "agent that names it",
            )
        return await backend.call(self.ident, args, tool_context)


class _Tools:
    def __getattr__(self, ident: str) -> _Handler:
        if ident.startswith("__"):
            raise AttributeError(ident)
        return _Handler(ident)


TOOLS = _Tools()
