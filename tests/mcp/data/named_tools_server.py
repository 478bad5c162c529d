"""A stdio MCP server listing the tools named in ``MCP_TEST_TOOL_NAMES`` (a JSON list), each with an
empty object schema: for names that collide once made portable (``dot.name`` / ``dot_name``) or that
are too long for a ToolSpec name."""

from __future__ import annotations

import json
import os

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

NAMES = json.loads(os.environ.get("MCP_TEST_TOOL_NAMES", "[]"))
TOOLS = [
    types.Tool(name=n, description=f"Tool {n}.", input_schema={"type": "object", "properties": {}})
    for n in NAMES
]


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])


async def main() -> None:
    server = Server("named-tools", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
