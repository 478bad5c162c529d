"""The handler of every MCP-sourced ToolSpec: a ``module:function`` string the gateway can resolve.

A ToolSpec's ``handler`` is a static string (it is hashed into the spec), while an MCP tool call needs
the run's live connection (or its recording). So each wrapped tool gets the handler
``portagent.tools.mcp.bridge:TOOLS.<ident>`` — ``ident`` is the ToolSpec name made an identifier — and the
callable it resolves to finds the run's ``RunSources`` at call time: from the context variable the
runner sets around the run (inherited by every task an SDK starts inside it), else by ``run_id``.

This module imports no MCP SDK: the tool gateway and the factory may import it cheaply.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Protocol

HANDLER_PREFIX = "portagent.tools.mcp.bridge:TOOLS."
"""Every MCP-sourced ToolSpec's handler starts with this."""


class ToolBackend(Protocol):
    """What answers the calls of one run (``sources.RunSources``)."""

    async def call(self, ident: str, args: dict[str, Any], context: dict[str, Any]) -> Any: ...


ACTIVE: ContextVar[ToolBackend | None] = ContextVar("portagent_mcp_sources", default=None)
_BY_RUN: dict[str, ToolBackend] = {}


def ident_for(tool_name: str) -> str:
    """An injective identifier for a ToolSpec name (``[A-Za-z][A-Za-z0-9_-]*``): ``_`` → ``__``,
    ``-`` → ``_d``."""
    return tool_name.replace("_", "__").replace("-", "_d")


def handler_for(tool_name: str) -> str:
    return HANDLER_PREFIX + ident_for(tool_name)


def is_mcp_tool(tool: Any) -> bool:
    """True for a ToolSpec wrapped from an MCP server."""
    return str(getattr(tool, "handler", "")).startswith(HANDLER_PREFIX)


def register_run(run_id: str, backend: ToolBackend) -> None:
    _BY_RUN[run_id] = backend


def unregister_run(run_id: str, backend: ToolBackend) -> None:
    if _BY_RUN.get(run_id) is backend:
        del _BY_RUN[run_id]


class _Handler:
    """One MCP-sourced tool's handler; declares ``context`` so the gateway passes the run context."""

    def __init__(self, ident: str) -> None:
        self.ident = ident

    async def __call__(self, args: dict[str, Any], context: dict[str, Any]) -> Any:
        from portagent.tools.observations import ToolFailure

        backend = ACTIVE.get() or _BY_RUN.get(str(context.get("run_id")))
        if backend is None:
            raise ToolFailure(
                "handler_error",
                "this tool comes from an MCP server and runs only inside a "
                "portagent run of the agent that names the server (no MCP connection here)",
            )
        return await backend.call(self.ident, args, context)


class _Tools:
    def __getattr__(self, ident: str) -> _Handler:
        if ident.startswith("__"):
            raise AttributeError(ident)
        return _Handler(ident)


TOOLS = _Tools()
