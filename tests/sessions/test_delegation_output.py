"""A sub-agent with structured output, called as a tool, hands its caller JSON (not a Python repr).

The specialist answers with an object (``output_schema``); the coordinator's next model request carries that
answer as the tool result. Read from the emulator's request log, the result must parse as JSON and equal the
object the specialist produced, on every provider whose wire carries the tool result (the Claude CLI's Task
tool is a handoff of its own and is covered in tests/sessions/test_delegation.py). openai-agents' default
for ``Agent.as_tool`` is ``str(final_output)`` — ``{'next_step': …, 'refund': False, 'notes': None}`` — which
no model parses as JSON; that is what this guards.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from _support import parse_request

from portagent.adapters.base import REGISTRY
from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.runtime.runner import RunConfig, arun_full

DATA = Path(__file__).resolve().parent / "data" / "delegation_output"
ANSWER = {"next_step": "reship the parcel", "refund": False, "notes": None}


@pytest.fixture(scope="module")
def emu():
    from portagent.emulator import load_script, serve

    with serve(load_script(DATA / "script.yaml")) as running:
        yield running


def _as_json(output: Any) -> Any:
    """A tool result as the caller's model sees it: a JSON text, a list of text blocks, or (Gemini) an
    object that is the function response itself."""
    if isinstance(output, list):
        output = "".join(b.get("text", "") for b in output if isinstance(b, dict))
    if isinstance(output, str):
        return json.loads(output)  # a Python repr fails here
    if isinstance(output, dict) and set(output) == {"result"}:
        return _as_json(output["result"])
    return output


@pytest.mark.parametrize("provider", ["openai", "adk", "anthropic", "langgraph"])
def test_structured_sub_agent_output_reaches_the_caller_as_json(emu, tmp_path, provider):
    before = len(emu.requests())
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=REGISTRY[provider].dummy_key),
        clock=FixedClock(),
        ids=IdFactory(f"deleg-out-{provider}"),
        options=RunOptions(workdir=tmp_path / "w"),
    )
    request = RunRequest(input="Parcel C-7 never arrived. What now?", provider=provider)
    out = asyncio.run(asyncio.wait_for(arun_full(DATA / "coordinator.yaml", request, config), 120))
    assert out.result.status == "completed", out.result
    views = [parse_request(e) for e in emu.requests()[before:]]
    coordinator = [v for v in views if "You run the parcel desk" in v.system]
    assert len(coordinator) == 2, [v.system for v in views]
    [result] = [i for i in coordinator[1].items if i.kind == "tool_result"]
    assert _as_json(result.output) == ANSWER, result.output


@pytest.mark.parametrize("provider", ["openai", "adk", "anthropic", "langgraph"])
def test_a_sub_agents_own_budget_is_not_a_second_tighter_limit(emu, tmp_path, provider):
    """A run's limits are the root's; the SDKs' limits are a backstop above them. openai-agents' backstop
    for an agent tool was the sub-agent's own ``max_turns + 1``: the specialist's third model call ended
    the whole run ``budget_exhausted`` with no ``budget.exceeded`` event, where every other provider went
    on."""
    before = len(emu.requests())
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=REGISTRY[provider].dummy_key),
        clock=FixedClock(),
        ids=IdFactory(f"deleg-busy-{provider}"),
        options=RunOptions(workdir=tmp_path / "w"),
    )
    request = RunRequest(input="Parcel C-8 never arrived. What now?", provider=provider)
    out = asyncio.run(asyncio.wait_for(arun_full(DATA / "coordinator_busy.yaml", request, config), 120))
    assert out.result.status == "completed", out.result
    assert not [e for e in out.events if e.type == "budget.exceeded"]
    specialist = [v for v in map(parse_request, emu.requests()[before:]) if "parcel specialist" in v.system]
    assert len(specialist) == 3
