"""Helpers of the migration tests: importing native agents through the CLI, running specs and exported
modules against the emulator with a fixed clock and seeded ids, and small spec builders."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from _support import REPO, portagent_home, run_cli

DATA = Path(__file__).resolve().parent / "data"
SCRIPT = DATA / "emulator.yaml"
MCP_SERVER = REPO / "tests" / "mcp" / "data" / "tools_server.py"
DUMMY_KEYS = {
    "openai": "sk-portagent-dummy",
    "claude": "sk-ant-portagent-dummy",
    "adk": "portagent-dummy-key",
    "anthropic": "sk-ant-portagent-dummy",
    "langgraph": "sk-portagent-dummy",
}
MODELS = {"openai": "gpt-4.1-mini", "claude": "claude-sonnet-4-6", "adk": "gemini-2.5-flash"}

if str(DATA) not in sys.path:
    sys.path.insert(0, str(DATA))  # the native agents and their handlers import from here


def import_cli(target: str, sdk: str, out: Path, *extra: str) -> tuple[int, str, str]:
    """``portagent import`` with model ids for every provider (the native definition has one)."""
    models = [a for p, m in MODELS.items() for a in ("--model", f"{p}={m}")]
    return run_cli("import", target, "--from", sdk, "--out", str(out), *models, *extra)


home = portagent_home  # shared helper (tests/_support.py)


def workdir(tmp: Path) -> Path:
    """The folder Claude Code works in (what Read sees), with a notes file."""
    cwd = tmp / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    (cwd / "notes.txt").write_text("ORD-7 was a gift.\n", encoding="utf-8")
    return cwd


def run_spec(
    agent: Any,
    provider: str,
    text: str | list[str],
    emu: Any,
    tmp: Path,
    *,
    approver: Any = "auto-approve",
    streaming: bool = False,
    tag: str = "",
) -> Any:
    """portagent's own run of a spec (path or bundle) against the emulator."""
    from portagent.adapters.port import Endpoint, RunOptions
    from portagent.contracts.run import RunRequest
    from portagent.core.clock import FixedClock, IdFactory
    from portagent.runtime.runner import RunConfig, arun_full

    extra = {"cwd": str(workdir(tmp))} if provider == "claude" else {}
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[provider]),
        approver=approver,
        clock=FixedClock(),
        ids=IdFactory("migration"),
        options=RunOptions(streaming=streaming, workdir=tmp / f"work-{provider}", extra=extra),
    )
    with home(tmp / f"home-{provider}{tag}"):
        return asyncio.run(
            asyncio.wait_for(arun_full(agent, RunRequest(input=text, provider=provider), config), 120)
        )


def load_module(path: Path) -> Any:
    name = f"exported_{path.stem}_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_exported(
    path: Path,
    provider: str,
    text: str,
    emu: Any,
    tmp: Path,
    *,
    approver: Any = "auto-approve",
    base_url: str | None = None,
) -> list[Any]:
    """An exported module's main() against the emulator (same clock and id seed as ``run_spec``); its
    trace. ``base_url``: as the user would pass it (default: the emulator's root)."""
    from portagent.core.clock import FixedClock, IdFactory
    from portagent.tracing.recorder import read_trace

    module = load_module(path)
    trace = tmp / f"exported-{provider}.jsonl"
    extra = {"cwd": workdir(tmp)} if provider == "claude" else {}
    with home(tmp / f"home-exported-{provider}"):
        asyncio.run(
            asyncio.wait_for(
                module.main(
                    [text],
                    base_url=base_url or emu.base_url,
                    api_key=DUMMY_KEYS[provider],
                    approver=approver,
                    trace=trace,
                    source="emulator",
                    clock=FixedClock(),
                    ids=IdFactory("migration"),
                    **extra,
                ),
                120,
            )
        )
    return read_trace(trace)


def of(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def edit_yaml(path: Path, **changes: Any) -> Path:
    """Change top-level fields of a spec file (``None`` removes a field)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def agent_as_tool_only(bundle: Any) -> Any:
    """The bundle with its handoff edges removed (and what only they reached): what Claude can run."""
    from portagent.contracts.bundle import AgentBundle

    nodes = {
        n: replace(node, edges=[e for e in node.edges if e.kind != "handoff"])
        for n, node in bundle.agents.items()
    }
    reachable, todo = set(), [bundle.root]
    while todo:
        name = todo.pop()
        if name not in reachable:
            reachable.add(name)
            todo.extend(e.target for e in nodes[name].edges)
    return AgentBundle(bundle.root, {n: node for n, node in nodes.items() if n in reachable})


def without_agent_reasons(events: list[Any]) -> list[Any]:
    """Claude's adapter records the Agent tool's ``description`` (the model's words) as an agent-as-tool
    handoff's ``reason``; openai-agents and ADK have none. Everything else must match."""
    return [
        e.model_copy(update={"reason": ""}) if e.type == "handoff" and e.kind == "agent_as_tool" else e
        for e in events
    ]


def write_spec(
    folder: Path,
    name: str = "shop_desk",
    *,
    instructions: str = "You are the shop's front desk.",
    tools: tuple[str, ...] = ("get_order", "search_faq"),
    delegation: list[dict[str, Any]] | None = None,
    models: dict[str, str] | None = None,
    **fields: Any,
) -> Path:
    """An agent spec over caps_tools.yaml (read-only shop tools) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    spec: dict[str, Any] = {
        "kind": "agent",
        "schema_version": 1,
        "name": name,
        "version": "1.0.0",
        "instructions": instructions,
        "models": models or dict(MODELS),
    }
    if tools:
        spec["tool_files"] = [str(DATA / "caps_tools.yaml")]
        spec["tools"] = list(tools)
    if delegation:
        spec["delegation"] = delegation
    spec.update(fields)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def mcp_server(name: str = "weather") -> dict[str, Any]:
    """An ``mcp_servers`` entry running the MCP tests' stdio server, offering only get_forecast."""
    return {
        "name": name,
        "command": [sys.executable, str(MCP_SERVER)],
        "env": {"MCP_TEST_NAME": name, "MCP_TEST_TOOLS": "get_forecast"},
    }


@dataclass
class Ran:
    """An exported program's run: what ``main`` returned, its trace events, the requests it sent."""

    done: dict[str, Any]
    events: list[Any]
    requests: list[dict[str, Any]]

    def of(self, kind: str) -> list[Any]:
        return of(self.events, kind)
