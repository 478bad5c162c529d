"""MCP on both sides of the gateway (docs/mcp.md).

- ``server``: ``portagent mcp serve`` — governed ToolSpecs offered to any MCP client; every call goes
  through a ``ToolGateway`` (schema, policy, approvals, budget, idempotency, trace with ``via: mcp``).
- ``sources``: MCP servers named in an AgentSpec's ``mcp_servers`` become ToolSpecs for one run
  (listed once, wrapped, executed through the gateway on every provider), recorded and replayed.
- ``annotations``: the one mapping between effect classes and MCP tool annotations, both ways.

Importing this package imports no MCP SDK; ``server``, ``client`` and ``sources`` do.
"""

from __future__ import annotations
