"""A handler that declares portagent's ``ToolContext`` (by annotation, any parameter name) receives one
on every provider: run id, agent, call id, provider, the per-session state, and the approval that
authorised the call. Checked on what the SDK really sent to the emulator (its request log)."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import portagent_home

from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full
from portagent.tools.handlers import resolve
from portagent.wire import anthropic as wire_anthropic
from portagent.wire import gemini as wire_gemini
from portagent.wire import openai as wire_openai

HANDLERS = """
from __future__ import annotations  # string annotations: resolved to the real class

from portagent.tools.tool_context import ToolContext


def note(text: str, ctx: ToolContext) -> dict:
    notes = ctx.state.setdefault("notes", [])
    notes.append(text)
    return {"notes": list(notes), "run_id": ctx.run_id, "agent": ctx.agent, "call_id": ctx.call_id,
            "provider": ctx.provider, "tool": ctx.tool, "arguments": ctx.arguments}


async def send(to: str, tc: ToolContext | None = None) -> dict:
    a = tc.approval
    return {"to": to, "approval": None if a is None else [a.approval_id[:4], a.status, a.call_id],
            "notes": len(tc.state.get("notes", []))}


def plain(x: str) -> dict:
    return {"x": x}


def legacy(args, context):
    return {"legacy_run_id": context["run_id"], "x": args["x"]}
"""

DUMMY = {"openai": "sk-portagent-dummy", "claude": "sk-ant-portagent-dummy", "adk": "portagent-dummy-key"}
STR = {"type": "string"}


def _tool(name: str, effect: str, props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool.",
        "effect": effect,
        "input_schema": {"type": "object", "properties": props, "required": list(props)},
        "handler": f"ctx_handlers:{name}",
        **extra,
    }


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("toolctx")
    (root / "ctx_handlers.py").write_text(textwrap.dedent(HANDLERS))
    spec = {
        "kind": "agent",
        "schema_version": 1,
        "name": "notes",
        "version": "1.0.0",
        "instructions": "Take notes, then send them.",
        "models": {"openai": "gpt-4.1-mini", "claude": "claude-sonnet-4-6", "adk": "gemini-2.5-flash"},
        "tools": [
            _tool("note", "compute", {"text": STR}),
            _tool("send", "external_effect", {"to": STR}, idempotency={"required": True}),
            _tool("plain", "read", {"x": STR}),
            _tool("legacy", "read", {"x": STR}),
        ],
    }
    calls = [
        {"name": "note", "arguments": {"text": "a"}},
        {"name": "note", "arguments": {"text": "b"}},
        {"name": "send", "arguments": {"to": "ops"}},
        {"name": "plain", "arguments": {"x": "1"}},
        {"name": "legacy", "arguments": {"x": "2"}},
    ]
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "name": "toolctx",
        "conversations": [
            {
                "name": "notes",
                "match": {"first_user": "Take notes."},
                "turns": [*({"tool_calls": [c]} for c in calls), {"text": "Done."}],
            }
        ],
    }
    (root / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (root / "emulator.yaml").write_text(yaml.safe_dump(script, sort_keys=False))
    sys.path.insert(0, str(root))
    return root


def _sent_back(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    api, body = entry["api"], entry["body"]
    if api == "openai.responses":
        view = wire_openai.parse_responses_request(body)
    elif api == "anthropic.messages":
        view = wire_anthropic.parse_messages_request(body)
    else:
        view = wire_gemini.parse_generate_content_request(body, stream=bool(entry.get("stream")))
    names = {i.call_id: i.name for i in view.items if i.kind == "tool_call"}
    out = []
    for item in view.tool_results():
        name = (item.name or names.get(item.call_id) or "?").removeprefix("mcp__portagent__")
        raw = item.text if api == "anthropic.messages" else item.output
        if isinstance(raw, dict) and len(raw) == 1 and "result" in raw:
            raw = raw["result"]
        value = json.loads(raw) if isinstance(raw, str) else raw
        value.pop("effect_id", None)
        out.append((name, value))
    return out


@pytest.mark.parametrize("provider", ["openai", "adk", pytest.param("claude", marks=pytest.mark.slow)])
def test_a_handler_declaring_tool_context_gets_one_on_every_provider(
    agent: Path, tmp_path: Path, provider: str
) -> None:
    with serve(load_script(agent / "emulator.yaml")) as emu:
        config = RunConfig(
            endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY[provider]),
            approver="auto-approve",
            clock=FixedClock(),
            ids=IdFactory("toolctx"),
        )
        with portagent_home(tmp_path / "home"):
            out = asyncio.run(
                arun_full(
                    load_agent(agent / "agent.yaml"),
                    RunRequest(input="Take notes.", provider=provider),
                    config,
                )
            )
        sent = _sent_back(emu.requests()[-1])
    assert out.result.status == "completed", out.result.error
    run_id = out.result.run_id
    trace_ids = [e.call_id for e in out.events if e.type == "tool.result"]
    assert [n for n, _ in sent] == ["note", "note", "send", "plain", "legacy"]
    first, second = sent[0][1], sent[1][1]
    assert first == {
        "ok": True,
        "notes": ["a"],
        "run_id": run_id,
        "agent": "notes",
        "call_id": trace_ids[0],
        "provider": provider,
        "tool": "note",
        "arguments": {"text": "a"},
    }
    assert second["notes"] == ["a", "b"] and second["call_id"] == trace_ids[1]  # one state per session
    # the approval that authorised the call (auto-approve decided its card)
    assert sent[2][1] == {"ok": True, "to": "ops", "approval": ["apr_", "approved", trace_ids[2]], "notes": 2}
    # the other conventions are unchanged
    assert sent[3][1] == {"ok": True, "x": "1"}
    assert sent[4][1] == {"ok": True, "legacy_run_id": run_id, "x": "2"}


def test_the_parameter_is_found_by_annotation_not_by_name(agent: Path) -> None:
    assert resolve("ctx_handlers:note").tool_context_param == "ctx"
    assert resolve("ctx_handlers:send").tool_context_param == "tc"  # `ToolContext | None`
    assert resolve("ctx_handlers:plain").tool_context_param is None
    legacy = resolve("ctx_handlers:legacy")
    assert legacy.tool_context_param is None and legacy.takes_context
