"""A tool schema whose ``$ref`` points nowhere (a missing ``$defs`` entry, or a URL, which is never
fetched) is refused where schemas are checked, and a call to a tool that still has one answers
``validation_error`` instead of breaking: ``check_schema`` never resolves a reference, so such a schema
passed ``portagent validate`` and the MCP listing check, then a call failed a provider run, left a trace
with a tool.call and no tool.result, or gave an MCP client "Internal server error"."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import sys
import threading
from pathlib import Path

import pytest
import yaml
from _support import REPO, run_cli

from portagent.tracing.recorder import read_trace

MISSING = "#/$defs/Missing"

TOOLS = {
    "kind": "tools",
    "schema_version": 1,
    "tools": [
        {
            "name": "reffy",
            "version": "1.0.0",
            "owner": "qa",
            "description": "A tool whose schema refers to a definition it does not have.",
            "effect": "read",
            "input_schema": {"type": "object", "properties": {"a": {"$ref": MISSING}}},
            "handler": "ref_handlers:echo",
        }
    ],
}

SERVER = """
import sys
import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

URL = sys.argv[1]
TOOLS = [
    types.Tool(name="fine", input_schema={"type": "object", "properties": {"x": {"type": "string"}}}),
    types.Tool(name="remote", input_schema={"type": "object", "properties": {"x": {"$ref": URL}}}),
]

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text="{}")])

server = Server("refs", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)

async def main():
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())

anyio.run(main)
"""


def _tools_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ref_handlers.py").write_text("def echo(**kw):\n    return {'echo': kw}\n", encoding="utf-8")
    path = folder / "ref.yaml"
    path.write_text(yaml.safe_dump(TOOLS, sort_keys=False), encoding="utf-8")
    return path


def test_validate_refuses_a_reference_that_points_nowhere(tmp_path: Path) -> None:
    code, out, err = run_cli("validate", str(_tools_file(tmp_path)))
    assert code != 0
    text = out + err
    assert "input_schema.properties.a.$ref" in text
    assert f"$ref {MISSING!r} does not resolve within the schema" in text
    assert "Traceback" not in text


class _Hits(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:
        _Hits.seen.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_an_mcp_source_listing_a_url_reference_is_refused_and_nothing_is_fetched(tmp_path: Path) -> None:
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Hits)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/schema.json"
    _Hits.seen = []
    try:
        (tmp_path / "srv.py").write_text(SERVER, encoding="utf-8")
        agent = {
            "kind": "agent",
            "schema_version": 1,
            "name": "refs_agent",
            "version": "1.0.0",
            "instructions": "Use the tools.",
            "models": {"openai": "gpt-4.1-mini", "claude": "claude-sonnet-4-6"},
            "mcp_servers": [
                {"name": "refs", "command": [sys.executable, "srv.py", url], "effects": {"remote": "read"}}
            ],
        }
        path = tmp_path / "agent.yaml"
        path.write_text(yaml.safe_dump(agent, sort_keys=False), encoding="utf-8")
        code, out, err = run_cli("mcp", "tools", str(path))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert code == 2, (out, err)
    assert "MCP server 'refs' lists tool 'remote' with an invalid inputSchema" in err
    assert f"$ref {url!r} does not resolve within the schema" in err
    assert "(at properties/x/$ref)" in err and "Traceback" not in err
    assert _Hits.seen == []  # the reference was never fetched


def test_mcp_serve_answers_a_call_with_validation_error_and_the_trace_stays_whole(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    tools = _tools_file(tmp_path / "spec")
    trace = tmp_path / "serve.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "portagent", "mcp", "serve", str(tools), "--trace", str(trace)],
        env={**os.environ, "PORTAGENT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)},
        cwd=str(tmp_path / "spec"),
    )

    async def go():
        async with Client(params) as client:
            return await client.call_tool("reffy", {"a": 1})

    result = asyncio.run(asyncio.wait_for(go(), 60))
    assert result.is_error
    assert result.structured_content["error"] == "validation_error"
    assert MISSING in json.dumps(result.structured_content)  # the problem names the reference
    events = read_trace(trace)
    assert [e.type for e in events] == ["run.started", "tool.call", "tool.result", "run.completed"]
    assert events[2].error == "validation_error"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_run_refuses_the_tool_when_the_agent_loads(tmp_path: Path, provider: str) -> None:
    """Such a schema in a spec file is refused when the agent loads, as ``validate`` refuses it (one message
    naming the file and field, exit 1, nothing written); a run used to start and answer every call of the
    tool ``validation_error``. The gateway's own defence stays (the test above) for a tool that reaches it."""
    tools = _tools_file(tmp_path)
    agent = {
        "kind": "agent",
        "schema_version": 1,
        "name": "reffy_agent",
        "version": "1.0.0",
        "instructions": "Call reffy.",
        "models": {"openai": "gpt-4.1-mini", "claude": "claude-sonnet-4-6"},
        "tool_files": [tools.name],
        "tools": ["reffy"],
    }
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "name": "r",
        "conversations": [
            {
                "name": "c",
                "match": {"first_user": "go"},
                "turns": [{"tool_calls": [{"name": "reffy", "arguments": {"a": 1}}]}, {"text": "done"}],
            }
        ],
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(agent, sort_keys=False), encoding="utf-8")
    (tmp_path / "emu.yaml").write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        "run",
        str(tmp_path / "agent.yaml"),
        "--provider",
        provider,
        "--emulator",
        str(tmp_path / "emu.yaml"),
        "--input",
        "go",
        "--out",
        str(out),
    )
    assert code == 1 and stdout == "", err
    assert "ref.yaml [tools.0.input_schema.properties.a.$ref]: tool 'reffy': malformed JSON Schema" in err
    assert "does not resolve within the schema" in err and "Traceback" not in err
    assert not out.exists()
