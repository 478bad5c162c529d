"""MCP servers as gateway-governed tool sources (docs/mcp.md).

- ``sources``: MCP servers named in an AgentSpec's ``mcp_servers`` become ToolSpecs for one run
  (listed once, wrapped, executed through the gateway on every provider), recorded and replayed.
- ``bridge``: the wrapped ToolSpec's handler, calling the server's tool.
- ``annotations``: the one mapping between effect classes and MCP tool annotations, both ways.
- ``cassette``: recorded listings and answers, so replays need no server.

Importing this package imports no MCP SDK; ``client`` and ``sources`` do.
"""
