"""Helpers of the MCP tests: agent specs naming the test server, and runs against the emulator."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from _support import portagent_home

DATA = Path(__file__).resolve().parent / "data"
SERVER = DATA / "tools_server.py"
DUMMY_KEYS = {
    "openai": "sk-portagent-dummy",
    "claude": "sk-ant-portagent-dummy",
    "adk": "portagent-dummy-key",
}

if str(DATA) not in sys.path:
    sys.path.insert(0, str(DATA))


def server(name: str, **extra: Any) -> dict[str, Any]:
    """An ``mcp_servers`` entry running tools_server.py as server ``name`` (logging calls to
    ``$MCP_TEST_LOG``; ``MCP_TEST_*`` in ``env`` configure it)."""
    env = {"MCP_TEST_NAME": name, "MCP_TEST_LOG": "${MCP_TEST_LOG}", **extra.pop("env", {})}
    return {"name": name, "command": ["python", str(SERVER)], "env": env, **extra}


def write_agent(
    folder: Path,
    servers: list[dict[str, Any]],
    *,
    name: str = "weather_desk",
    policy: str | None = "policy.yaml",
    budget: dict[str, Any] | None = None,
) -> Path:
    """An agent spec in ``folder`` (beside copies of the local tools and policy) using ``servers``."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in ("local_tools.yaml", "policy.yaml"):
        (folder / f).write_text((DATA / f).read_text(encoding="utf-8"), encoding="utf-8")
    spec: dict[str, Any] = {
        "kind": "agent",
        "schema_version": 1,
        "name": name,
        "version": "1.0.0",
        "instructions": "You answer questions about the weather with the tools of the weather MCP server.",
        "models": {"openai": "gpt-4.1-mini", "claude": "claude-sonnet-4-6", "adk": "gemini-2.5-flash"},
        "tool_files": ["local_tools.yaml"],
        "tools": ["echo_text"],
        "mcp_servers": servers,
        "budget": budget or {"max_turns": 8, "max_tool_calls": 10, "timeout_s": 60},
    }
    if policy:
        spec["policy"] = policy
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


home = portagent_home  # shared helper (tests/_support.py)


def run_agent(
    agent: Any,
    provider: str,
    text: str,
    emu: Any,
    tmp: Path,
    *,
    approver: Any = "auto-deny",
    seed: str = "mcp-tests",
) -> Any:
    """One run against the emulator with a fixed clock and seeded ids, in a state folder of its own."""
    from portagent.adapters.port import Endpoint, RunOptions
    from portagent.contracts.run import RunRequest
    from portagent.core.clock import FixedClock, IdFactory
    from portagent.runtime.runner import RunConfig, arun_full

    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[provider]),
        approver=approver,
        clock=FixedClock(),
        ids=IdFactory(seed),
        options=RunOptions(workdir=tmp / f"work-{provider}"),
    )
    with home(tmp / f"home-{provider}"):
        return asyncio.run(
            asyncio.wait_for(arun_full(agent, RunRequest(input=text, provider=provider), config), 120)
        )


def server_log(path: Path) -> list[dict[str, Any]]:
    """What the test servers were asked (``MCP_TEST_LOG``)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def of_type(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def outputs(events: list[Any]) -> dict[str, Any]:
    """Tool name → output of its last result."""
    names = {e.call_id: e.tool for e in of_type(events, "tool.call")}
    return {names[e.call_id]: e.output for e in of_type(events, "tool.result")}
