"""``portagent mcp serve``: governed ToolSpecs offered to any MCP client (docs/mcp.md).

Every call goes through a ``ToolGateway`` (schema, policy, approvals, budget, idempotency, trace with
``via: mcp``). The other side — MCP servers as tool sources of an agent — lives in ``tools/mcp``.
Importing this package imports no MCP SDK; ``server`` does.
"""
