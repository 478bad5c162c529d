"""MCP errors, as part of portagent's error tree (``contracts/errors.py``)::

UsageError (exit 2)
└── McpConfigError      command not found, allow-list names an unknown tool, invalid listed schema,
                        tool names that collide, recording without an MCP cassette
ProviderError (exit 3)
└── McpServerError      the server timed out on initialize, exited, or broke the protocol
"""

from __future__ import annotations

from portagent.contracts.errors import ProviderError, UsageError


class McpConfigError(UsageError):
    """An MCP tool source cannot be used as configured (exit 2)."""


class McpServerError(ProviderError):
    """An MCP server failed at run time: start-up timeout, crash, protocol error (exit 3)."""
