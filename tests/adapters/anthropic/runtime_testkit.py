"""Helpers shared by the anthropic and langgraph adapter tests: the shop agents and emulator script of the
adapter tests (``tests/adapters/adk/data``, the equivalence test's scenarios too), run on one provider,
with handoff edges removed for providers that delegate as agent-as-tool only."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ADK_TESTS = Path(__file__).resolve().parents[1] / "adk"
if str(ADK_TESTS) not in sys.path:
    sys.path.insert(0, str(ADK_TESTS))

import adk_testkit as kit  # noqa: E402

from portagent.contracts.bundle import AgentBundle  # noqa: E402

DATA = kit.DATA
handlers = kit.handlers
parse_request = kit.parse_request
result_value = kit.result_value
with_budget = kit.with_budget
with_policy = kit.with_policy
with_spec = kit.with_spec
emulator_fixture = kit.emulator_fixture
fresh_handlers_fixture = kit.fresh_handlers_fixture
Run = kit.Run

DUMMY_KEYS = {**kit.DUMMY_KEYS, "anthropic": "sk-ant-portagent-dummy", "langgraph": "sk-portagent-dummy"}
kit.DUMMY_KEYS.update(DUMMY_KEYS)  # kit.run reads its own table


def without_handoffs(b: AgentBundle) -> AgentBundle:
    """The bundle without handoff edges (and the agents only they reached)."""
    nodes = {
        n: replace(node, edges=[e for e in node.edges if e.kind != "handoff"]) for n, node in b.agents.items()
    }
    reachable, todo = set(), [b.root]
    while todo:
        name = todo.pop()
        if name not in reachable:
            reachable.add(name)
            todo.extend(e.target for e in nodes[name].edges)
    return AgentBundle(b.root, {n: node for n, node in nodes.items() if n in reachable})


def bundle(name: str = "desk", *, handoffs: bool = False) -> AgentBundle:
    b = kit.bundle(name)
    return b if handoffs else without_handoffs(b)


def go(emu: Any, agent: AgentBundle | str, text: str | list[str], provider: str, **kw: Any) -> Any:
    target = bundle(agent) if isinstance(agent, str) else agent
    return asyncio.run(kit.run(emu, target, text, provider=provider, **kw))


def results_sent(r: Any) -> list[tuple[str | None, Any]]:
    """Tool results in the last request: what the model was finally shown (name, parsed value)."""
    last = r.views()[-1]
    names = {i.call_id: i.name for i in last.items if i.kind == "tool_call"}
    return [(i.name or names.get(i.call_id), result_value(i)) for i in last.tool_results()]
