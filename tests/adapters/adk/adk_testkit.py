"""Helpers for the ADK adapter tests: run a spec on a provider against the emulator, read back what the
SDK sent (the emulator's request log, parsed with ``portagent.wire``), and build spec variants."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from _support import parse_request

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.bundle import AgentBundle, load_agent
from portagent.contracts.policy import PermissionPolicy
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.runtime.runner import RunConfig, RunOutput, arun_full
from portagent.wire.items import RequestView

DATA = Path(__file__).resolve().parent / "data"
if str(DATA) not in sys.path:
    sys.path.insert(0, str(DATA))

import shop_handlers as handlers  # noqa: E402  (the test tools' handlers: execution counters)


@pytest.fixture(name="emu")
def emulator_fixture() -> Any:
    """The emulator on a free loopback port, playing the adapter-test script."""
    from portagent.emulator import load_script, serve

    with serve(load_script(DATA / "emulator.yaml")) as running:
        yield running


@pytest.fixture(name="fresh_handlers", autouse=True)
def fresh_handlers_fixture() -> Any:
    """The shop handlers count executions; every test starts from zero."""
    handlers.CALLS.clear()
    handlers.REFUNDS.clear()
    yield


DUMMY_KEYS = {
    "openai": "sk-portagent-dummy",
    "claude": "sk-ant-portagent-dummy",
    "adk": "portagent-dummy-key",
}


def bundle(name: str = "desk") -> AgentBundle:
    """A test agent by name (``data/<name>.yaml``), or any spec by path."""
    return load_agent(name if name.endswith(".yaml") else DATA / f"{name}.yaml")


def with_budget(b: AgentBundle, **budget: Any) -> AgentBundle:
    """The same bundle with the root's budget changed."""
    node = b.agents[b.root]
    spec = node.spec.model_copy(update={"budget": node.spec.budget.model_copy(update=budget)})
    return AgentBundle(b.root, {**b.agents, b.root: replace(node, spec=spec)})


def with_policy(b: AgentBundle, policy: dict[str, Any], agent: str | None = None) -> AgentBundle:
    """The same bundle with one agent's policy replaced."""
    name = agent or b.root
    node = b.agents[name]
    return AgentBundle(
        b.root, {**b.agents, name: replace(node, policy=PermissionPolicy.model_validate(policy))}
    )


def with_spec(b: AgentBundle, agent: str | None = None, **changes: Any) -> AgentBundle:
    """The same bundle with fields of one agent's spec changed."""
    name = agent or b.root
    node = b.agents[name]
    return AgentBundle(b.root, {**b.agents, name: replace(node, spec=node.spec.model_copy(update=changes))})


@dataclass
class Run:
    out: RunOutput
    requests: list[dict[str, Any]]

    @property
    def result(self) -> Any:
        return self.out.result

    @property
    def events(self) -> list[Any]:
        return self.out.events

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.out.events if e.type == kind]

    def types(self) -> list[str]:
        return [e.type for e in self.out.events]

    def views(self) -> list[RequestView]:
        return [parse_request(r) for r in self.requests]


async def run(
    emu: Any,
    agent: AgentBundle | str,
    text: str | list[str],
    *,
    provider: str = "adk",
    approver: Any = "auto-deny",
    streaming: bool = False,
    seeded: bool = True,
    idempotency_key: str | None = None,
    session_id: str | None = None,
    extra: dict[str, Any] | None = None,
    base_url: str | None = None,
    out_dir: Path | None = None,
    scope: str | None = None,
) -> Run:
    """Run ``agent`` once; ``seeded`` injects a fixed clock and seeded ids (deterministic traces)."""
    target = bundle(agent) if isinstance(agent, str) else agent
    before = len(emu.requests())
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=base_url or emu.base_url, api_key=DUMMY_KEYS[provider]),
        approver=approver,
        out_dir=out_dir,
        scope=scope,
        options=RunOptions(streaming=streaming, extra=dict(extra or {})),
        clock=FixedClock() if seeded else None,
        ids=IdFactory("adk-tests") if seeded else None,
    )
    request = RunRequest(
        input=text,
        provider=provider,
        idempotency_key=idempotency_key,  # type: ignore[arg-type]
        session_id=session_id,
    )
    out = await arun_full(target, request, config)
    return Run(out, emu.requests()[before:])


def result_value(item: Any) -> Any:
    """A tool result as the model got it, parsed: JSON text → object; Gemini's ``{"result": x}``
    wrapper (ADK's for a non-dict return) → x."""
    raw = item.output
    if isinstance(raw, dict):
        if len(raw) == 1 and "result" in raw:
            raw = raw["result"]
        if not isinstance(raw, str):
            return raw
    text = raw if isinstance(raw, str) else item.text
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def run_cli_in_process(*argv: str) -> tuple[int, str, str]:
    """Run the portagent CLI in this process, capturing output (exit code, stdout, stderr)."""
    from _support import run_cli

    return run_cli(*argv)
