"""Tool names holding ``__`` on the Claude provider: the real claude-agent-sdk and its bundled Claude
Code CLI against portagent's emulator (every run starts the CLI, so this cannot be a replay test).

Claude Code shows the model ``mcp__portagent__<tool>``; the emulator must map a script's
``get__order`` onto ``mcp__portagent__get__order``. It used to cut the declared name at its last
``__`` (``order``), matched nothing, and called the undeclared ``get__order``, which the CLI answered
with "No such tool available".
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full

pytestmark = pytest.mark.slow  # starts the Claude Code CLI

QUESTION = "Where is my order ORD-7?"


def _project(root: Path) -> Path:
    (root / "agent.yaml").write_text(
        textwrap.dedent(
            """\
            kind: agent
            schema_version: 1
            name: dunder
            version: 1.0.0
            description: Answers questions about orders.
            instructions: Read the order with get__order, then answer in one sentence.
            models: {openai: gpt-4.1-mini, claude: claude-sonnet-4-6, adk: gemini-2.5-flash}
            tool_files: [tools.yaml]
            tools: [get__order]
            budget: {max_turns: 6, max_tool_calls: 4, timeout_s: 60}
            """
        )
    )
    (root / "tools.yaml").write_text(
        textwrap.dedent(
            """\
            kind: tools
            schema_version: 1
            tools:
              - name: get__order
                version: 1.0.0
                owner: dunder
                description: Read one order by its id.
                effect: read
                input_schema:
                  type: object
                  properties: {order_id: {type: string}}
                  required: [order_id]
                  additionalProperties: false
                handler: dunder_tool_names_handlers:get_order
            """
        )
    )
    (root / "dunder_tool_names_handlers.py").write_text(
        "def get_order(order_id):\n    return {'order_id': order_id, 'status': 'shipped'}\n"
    )
    (root / "emulator.yaml").write_text(
        textwrap.dedent(
            f"""\
            kind: emulator-script
            schema_version: 1
            name: dunder
            conversations:
              - name: order
                match: {{first_user: "{QUESTION}"}}
                turns:
                  - tool_calls: [{{name: get__order, arguments: {{order_id: ORD-7}}}}]
                  - text: "Order ORD-7 is {{{{last_tool_result.status}}}}."
            """
        )
    )
    return root


def test_a_tool_name_with_double_underscore_is_called_by_its_declared_name(tmp_path, monkeypatch):
    root = _project(tmp_path)
    monkeypatch.syspath_prepend(str(root))
    with serve(load_script(root / "emulator.yaml")) as emu:
        cfg = RunConfig(
            endpoint=Endpoint(base_url=emu.base_url, api_key="sk-ant-dummy"),
            approver="auto-deny",
            out_dir=tmp_path / "out",
            options=RunOptions(),
        )
        out = asyncio.run(arun_full(root / "agent.yaml", RunRequest(input=QUESTION, provider="claude"), cfg))
        log: list[dict[str, Any]] = emu.requests()

    assert out.result.status == "completed", out.result
    assert out.result.final_output == "Order ORD-7 is shipped."
    # What the CLI declared, and what the emulator answered with: the declared name, whole.
    declared = [t["name"] for t in log[0]["body"]["tools"] if t["name"].startswith("mcp__")]
    assert declared == ["mcp__portagent__get__order"]
    assert [c["name"] for c in log[0]["reply"]["tool_calls"]] == ["mcp__portagent__get__order"]
    assert log[0]["notes"] == []
    results = [
        c
        for c in log[1]["body"]["messages"][-1]["content"]
        if isinstance(c, dict) and c.get("type") == "tool_result"
    ]
    assert len(results) == 1 and not results[0].get("is_error"), results
    assert "shipped" in json.dumps(results[0])
