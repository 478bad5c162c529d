"""equivalent(): every non-volatile field matters; exactly the documented volatile fields do not."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from portagent.contracts.trace import parse_event
from portagent.core.clock import FixedClock, IdFactory
from portagent.tracing.compare import VOLATILE_FIELDS, equivalent, normalize, normalized_jsonl
from portagent.tracing.recorder import TraceRecorder


def sample(seed: str = "a") -> list[Any]:
    r = TraceRecorder(
        run_id=f"run_{seed}", provider="openai", agent="desk", clock=FixedClock(), ids=IdFactory(seed)
    )
    r.emit(
        "run.started",
        root=True,
        agent_version="1.0.0",
        spec_hash="sha256:x",
        policy_hash="sha256:y",
        sdk="openai-agents",
        sdk_version="0.24.0",
        model="gpt-4.1-mini",
        source="emulator",
        mode="direct",
        input="hi",
    )
    r.emit(
        "model.call",
        model="gpt-4.1-mini",
        input_tokens=10,
        output_tokens=2,
        latency_ms=5.0,
        response_id=f"resp_{seed}",
        provider_details={"x": seed},
    )
    cid = r.next_call_id()
    r.emit(
        "tool.call",
        call_id=cid,
        tool="get_record",
        tool_version="1.0.0",
        schema_hash="sha256:s",
        args={"id": "EXP-42"},
        args_hash="abc",
        provider_details={"vendor_call_id": f"v_{seed}"},
    )
    r.emit(
        "permission.decision",
        call_id=cid,
        decision="allow",
        reason="default",
        rule="default:read",
        policy_version="1",
    )
    r.emit(
        "tool.result",
        call_id=cid,
        tool="get_record",
        ok=True,
        output={"ok": True, "balance": 180},
        latency_ms=1.5,
    )
    r.emit("handoff", from_agent="desk", to_agent="billing", kind="handoff")
    r.emit(
        "run.completed",
        root=True,
        status="completed",
        stop_reason="final_output",
        final_output="180 EUR",
        input_tokens=10,
        output_tokens=2,
        model_calls=1,
        tool_calls=1,
        cost_usd=0.01,
        cost_source="computed",
        duration_ms=12.0,
    )
    return r.events


def test_same_behaviour_different_ids_and_times_is_equivalent():
    a, b = sample("a"), sample("b")
    assert equivalent(a, b, across_providers=False), equivalent(a, b, across_providers=False).report()
    assert normalized_jsonl(a) == normalized_jsonl(b)


def _fields() -> list[tuple[int, str]]:
    out = []
    for i, e in enumerate(sample()):
        for k in e.model_dump():
            if k not in VOLATILE_FIELDS and k not in ("type", "schema_version"):
                out.append((i, k))
    return out


def _mutate(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, dict):
        return {**value, "mutated": 1}
    if value is None:
        return "set"
    return [value]


@pytest.mark.parametrize("index,field", _fields())
def test_any_non_volatile_field_change_is_detected(index, field):
    a = sample()
    data = [e.model_dump(mode="json") for e in a]
    changed = copy.deepcopy(data)
    changed[index][field] = _mutate(changed[index][field])
    try:
        b = [parse_event(d) for d in changed]
    except Exception:
        b = changed  # a mutation the contract rejects is still a difference for the dict comparison
    diff = equivalent(a, b, across_providers=False)
    assert not diff, f"changing {field} of event {index} went unnoticed"
    assert field in diff.report() or field == "seq"


@pytest.mark.parametrize("field", sorted(VOLATILE_FIELDS - {"approval_id"}))
def test_volatile_fields_are_ignored(field):
    a = sample()
    data = [e.model_dump(mode="json") for e in a]
    for d in data:
        if field in d:
            d[field] = _mutate(d[field]) if field != "provider_details" else {"anything": 1}
    assert normalize(a) == normalize(data)


def test_across_providers_ignores_vendor_mechanics_but_not_behaviour():
    a = sample()
    b = [e.model_dump(mode="json") for e in sample()]
    for d in b:
        d["provider"] = "adk"
        if d["type"] == "model.call":
            d["model"], d["input_tokens"] = "gemini-2.5-flash", 99
        if d["type"] == "run.started":
            d["sdk"], d["model"] = "google-adk", "gemini-2.5-flash"
    assert equivalent(a, b)
    b[4]["output"] = {"ok": True, "balance": 181}
    diff = equivalent(a, b)
    assert not diff and "output" in diff.report()
