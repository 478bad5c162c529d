"""A small MCP server for the tests (stdio, the mcp package's low-level server).

Behaviour is chosen with environment variables, so one script plays every server a test needs:

- ``MCP_TEST_NAME``: server name (default ``weather``); tool answers carry it, so two servers exposing
  the same tool name give different answers;
- ``MCP_TEST_TOOLS``: comma-separated tools to list (default: all);
- ``MCP_TEST_FORECAST``: what ``get_forecast`` answers (default ``sunny``) — a changed answer is drift;
- ``MCP_TEST_MODE``: ``hang`` (never answers initialize), ``exit`` (exits at once with a message on
  stderr), ``bad_schema`` (lists ``broken`` with an invalid inputSchema).

Tools: ``get_forecast`` (readOnlyHint), ``add_note`` (destructiveHint false), ``book_table`` (no
annotations), ``lookup`` (readOnlyHint; the name two servers share), ``crash`` (the process exits
mid-call), ``fail`` (an isError result). ``MCP_TEST_LOG`` names a file each call is appended to.
"""

from __future__ import annotations

import json
import os
import sys
import time

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

NAME = os.environ.get("MCP_TEST_NAME", "weather")
MODE = os.environ.get("MCP_TEST_MODE", "")
if MODE == "hang":
    time.sleep(600)
if MODE == "exit":
    sys.stderr.write("tools_server: cannot open the weather database\n")
    sys.exit(4)

OBJ = "object"
READ = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
TOOLS = [
    types.Tool(
        name="get_forecast",
        description="Forecast for a city.",
        annotations=READ,
        input_schema={
            "type": OBJ,
            "properties": {"city": {"type": "string", "minLength": 2}},
            "required": ["city"],
            "additionalProperties": False,
        },
    ),
    types.Tool(
        name="add_note",
        description="Add a note to the city's file.",
        annotations=types.ToolAnnotations(
            read_only_hint=False, destructive_hint=False, open_world_hint=False
        ),
        input_schema={
            "type": OBJ,
            "properties": {"city": {"type": "string"}, "text": {"type": "string"}},
            "required": ["city", "text"],
        },
    ),
    types.Tool(
        name="book_table",
        description="Book a table at a restaurant.",
        input_schema={
            "type": OBJ,
            "properties": {"restaurant": {"type": "string"}, "people": {"type": "integer", "minimum": 1}},
            "required": ["restaurant", "people"],
        },
    ),
    types.Tool(
        name="lookup",
        description=f"Look a word up in the {NAME} glossary.",
        annotations=READ,
        input_schema={"type": OBJ, "properties": {"word": {"type": "string"}}, "required": ["word"]},
    ),
    types.Tool(
        name="crash", description="Makes the server exit.", annotations=READ, input_schema={"type": OBJ}
    ),
    types.Tool(
        name="fail", description="Always reports an error.", annotations=READ, input_schema={"type": OBJ}
    ),
]
if MODE == "bad_schema":
    TOOLS.append(
        types.Tool(
            name="broken",
            description="Bad schema.",
            annotations=READ,
            input_schema={"type": OBJ, "properties": {"x": {"type": "no-such-type"}}},
        )
    )
wanted = [t for t in os.environ.get("MCP_TEST_TOOLS", "").split(",") if t]
if wanted:
    TOOLS = [t for t in TOOLS if t.name in wanted]


def _log(name: str, args: dict, traceparent: str | None = None) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"server": NAME, "tool": name, "args": args}) + "\n")
    trace_log = os.environ.get("MCP_TEST_TRACE_LOG")  # the ``_meta.traceparent`` each call carried
    if trace_log:
        with open(trace_log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"server": NAME, "tool": name, "traceparent": traceparent}) + "\n")


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    args = params.arguments or {}
    _log(params.name, args, (params.meta or {}).get("traceparent"))
    if params.name == "get_forecast":
        out = {"city": args["city"], "forecast": os.environ.get("MCP_TEST_FORECAST", "sunny"), "server": NAME}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(out))], structured_content=out
        )
    if params.name == "lookup":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{NAME}: {args['word']} means x")]
        )
    if params.name == "add_note":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"noted for {args['city']}")]
        )
    if params.name == "book_table":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="booked")],
            structured_content={"booking": "B-1", "people": args["people"]},
        )
    if params.name == "crash":
        sys.stderr.write("tools_server: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if params.name == "fail":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="the glossary is offline")], is_error=True
        )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"unknown tool {params.name}")], is_error=True
    )


server = Server(NAME, version="1.2.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
