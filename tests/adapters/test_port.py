"""The session port and the repeats adapters share (``adapters/port.py``, ``adapters/_shared.py``,
the provider facts of ``adapters/base.REGISTRY``). Unit tests: these are the seams the adapter tests
drive end to end through the real SDKs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from portagent.adapters._shared import Stopwatch, observation_json, observation_object
from portagent.adapters.base import REGISTRY
from portagent.adapters.port import BudgetStop, Endpoint, RunOptions, RunSession
from portagent.adapters.session_gateway import budget_stop_of
from portagent.contracts.bundle import load_agent
from portagent.contracts.providers import PROVIDERS
from portagent.contracts.run import RunRequest
from portagent.core.budgets import BudgetCheck, RunBudget
from portagent.core.clock import FixedClock, IdFactory
from portagent.tools.observations import Observation
from portagent.tracing.recorder import TraceRecorder

AGENT = Path(__file__).resolve().parents[2] / "examples" / "support_desk" / "agent.yaml"


def test_registry_lists_the_contract_providers_in_order() -> None:
    assert tuple(REGISTRY) == PROVIDERS


def test_one_set_of_retryable_statuses() -> None:
    """408, 409, 429, the 5xx server errors and Anthropic's 529 overloaded, for every provider."""
    for info in REGISTRY.values():
        assert info.retryable_statuses == frozenset({408, 409, 429, 500, 502, 503, 504, 529})
        assert info.retryable(529) and info.retryable(409) and not info.retryable(400)
        assert not info.retryable(None)


def test_dummy_keys_are_the_recorded_ones() -> None:
    """Cassettes were recorded with these keys: they must never change."""
    assert {p: i.dummy_key for p, i in REGISTRY.items()} == {
        "openai": "sk-portagent-dummy",
        "claude": "sk-ant-portagent-dummy",
        "adk": "portagent-dummy-key",
        "anthropic": "sk-ant-portagent-dummy",
        "langgraph": "sk-portagent-dummy",
    }


def test_observation_bytes() -> None:
    obs = Observation.success({"zeta": 1, "alpha": "café"})
    text = observation_json(obs)
    assert text == '{"alpha": "café", "ok": true, "zeta": 1}'
    assert observation_object(obs) == json.loads(text)
    assert list(observation_object(obs)) == ["alpha", "ok", "zeta"]


def test_stopwatch_uses_the_run_clock() -> None:
    watch = Stopwatch(FixedClock(step_ms=5.0))
    assert watch.stop("agent") is None
    watch.start("agent")
    assert watch.stop("agent") == 5.0
    assert watch.stop("agent") is None


def test_budget_stop_is_built_from_the_rejection() -> None:
    check = BudgetCheck(False, "max_tool_calls", 3.0, 4.0)
    rejection = Observation.failure("budget_exhausted", check.message, check.event_fields())
    stop = budget_stop_of(rejection)
    assert isinstance(stop, BudgetStop)
    assert (stop.limit, stop.limit_value, stop.observed) == ("max_tool_calls", 3.0, 4.0)
    # a tool's own limit, or a handler's domain error, does not end the run
    assert budget_stop_of(Observation.failure("budget_exhausted", "tool budget", {"limit": "tool"})) is None
    assert budget_stop_of(Observation.failure("not_found", "no")) is None


def _session() -> RunSession:
    bundle = load_agent(AGENT)
    clock, ids = FixedClock(), IdFactory("port")
    return RunSession(
        bundle=bundle,
        request=RunRequest(input="hi", provider="openai"),
        endpoint=Endpoint(),
        recorder=TraceRecorder(run_id="run_port", provider="openai", agent=bundle.root, clock=clock, ids=ids),
        budget=RunBudget(bundle.spec.budget),
        clock=clock,
        ids=ids,
        run_id="run_port",
        attempt=1,
        scope="test:port",
        options=RunOptions(),
    )


def test_the_port_takes_no_undeclared_attribute() -> None:
    session = _session()
    with pytest.raises(AttributeError):
        session.approver_spec = "auto-approve"  # type: ignore[attr-defined]
    gateway = session.gateway()
    assert session.gateway(session.bundle.root) is gateway and session.all_gateways() == [gateway]


def test_reraise_signal_prefers_the_chain_then_the_remembered_stop() -> None:
    session = _session()
    session.reraise_signal(ValueError("vendor"))  # nothing to re-raise: returns
    sig = BudgetStop("max_turns", 1, 2)
    wrapper = RuntimeError("node failed")
    with pytest.raises(BudgetStop):
        session.reraise_signal(wrapper, wrapped=sig)  # ADK keeps it outside the chain
    session.signal(sig)
    with pytest.raises(BudgetStop) as info:
        session.reraise_signal(ValueError("swallowed by the SDK"))
    assert info.value is sig
