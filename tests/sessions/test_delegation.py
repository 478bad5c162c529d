"""Delegation carries a handoff package (issue 16 part 4b): what a sub-agent gets is checked on the wire.

A coordinator reads a parcel case (its tool result is a long carrier log) and calls a specialist as a tool.
With ``context: handoff`` on the edge, the specialist's **first model request** (read from the emulator's
request log with ``portagent.wire``) starts with the package compacted from the run so far — its id, the
user's goal, the delegation decision, ``get_case ... -> ok`` — and ends with the coordinator's request; it
does not hold the coordinator's history (the carrier log the coordinator's own second request carries). The
same package is the ``handoff.package`` event of the trace, and it verifies against that trace. Without
``context: handoff`` the specialist gets the request alone (the vendor default), so the check is not
circular: the package is portagent's doing. Every provider: openai, adk, claude, anthropic, langgraph.
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
from portagent.contracts.errors import SpecError
from portagent.contracts.handoff import HandoffPackage
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.runtime.runner import RunConfig, arun_full
from portagent.tracing.handoff import validate, verify

DATA = Path(__file__).resolve().parent / "data" / "delegation"
PROVIDERS = ["openai", "adk", "claude", "anthropic", "langgraph"]
GOAL = "Parcel C-7 never arrived. What now?"
TASK = "Decide the next step for case C-7."


@pytest.fixture(scope="module")
def emu():
    from portagent.emulator import load_script, serve

    with serve(load_script(DATA / "script.yaml")) as running:
        yield running


class Request:
    """One logged request: its parsed view (system, first user text) and its raw body."""

    def __init__(self, entry: dict[str, Any]) -> None:
        parsed = parse_request(entry)
        body = entry["body"]
        self.system = parsed.system
        self.first_user_text = parsed.first_user_text
        self.raw = body


def view(entry: dict[str, Any]) -> Request:
    return Request(entry)


def run(emu: Any, tmp: Path, provider: str, agent: str) -> tuple[Any, list[Any]]:
    before = len(emu.requests())
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=REGISTRY[provider].dummy_key),
        clock=FixedClock(),
        ids=IdFactory(f"deleg-{provider}"),
        options=RunOptions(workdir=tmp / f"work-{provider}-{agent}"),
    )
    request = RunRequest(input=GOAL, provider=provider)
    out = asyncio.run(asyncio.wait_for(arun_full(DATA / agent, request, config), 120))
    return out, [view(e) for e in emu.requests()[before:]]


def specialist_first(requests: list[Any]) -> Any:
    """The specialist's first model request: the first one whose instructions are the specialist's."""
    return next(r for r in requests if "You are the parcel specialist" in r.system)


def coordinator_requests(requests: list[Any]) -> list[Any]:
    return [r for r in requests if "You run the parcel desk" in r.system]


@pytest.fixture(scope="module")
def runs(emu, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deleg")
    return {p: run(emu, tmp, p, "coordinator.yaml") for p in PROVIDERS}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_sub_agent_first_request_holds_the_package_not_the_history(runs, provider):
    out, requests = runs[provider]
    assert out.result.status == "completed", (provider, out.result)
    [given] = [e for e in out.events if e.type == "handoff.package"]
    text = specialist_first(requests).first_user_text() or ""
    # the package, as the trace recorded it, is what the specialist's model was sent first
    assert f'<handoff id="{given.handoff_id}" from="coordinator" to="specialist">' in text, text
    assert f"goal: {GOAL}" in text
    assert "decision: delegate from coordinator to specialist (agent_as_tool)" in text
    assert "done: get_case call_1 -> ok" in text
    assert text.rstrip().endswith(TASK) and given.task == TASK
    # and not the coordinator's history: its tool output (which the coordinator's own request carried)
    # and its instructions are absent
    second = coordinator_requests(requests)[1]
    assert "CARRIER-LOG-7" in json.dumps(second.raw)
    first = specialist_first(requests)
    assert "CARRIER-LOG" not in json.dumps(first.raw) and "You run the parcel desk" not in json.dumps(
        first.raw
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_recorded_package_verifies_against_the_trace(runs, provider):
    out, _ = runs[provider]
    [given] = [e for e in out.events if e.type == "handoff.package"]
    package = HandoffPackage.model_validate(given.package)
    assert package.handoff_id == given.handoff_id and package.owner == "coordinator"
    assert verify(package, out.events) == []
    # a delegation package carries no closing criteria (only a person states them): the only gaps
    assert set(validate(package)) <= {
        "missing limits",
        "missing evidence",
        "missing done_when (closing criteria)",
    }
    handoff = next(e for e in out.events if e.type == "handoff")
    assert given.seq == handoff.seq + 1  # right after the delegation it belongs to
    assert package.next_step is not None and package.next_step.evidence == [f"{handoff.run_id}#{handoff.seq}"]


def test_the_sub_agent_manifest_counts_the_package(emu, tmp_path):
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=REGISTRY["openai"].dummy_key),
        clock=FixedClock(),
        ids=IdFactory("deleg-manifest"),
        options=RunOptions(workdir=tmp_path / "w", extra={"context_manifest": True}),
    )
    out = asyncio.run(arun_full(DATA / "coordinator.yaml", RunRequest(input=GOAL, provider="openai"), config))
    [given] = [e for e in out.events if e.type == "handoff.package"]
    sub = next(e for e in out.events if e.type == "context.manifest" and e.agent == "specialist")
    part = next(p for p in sub.parts if p.type == "handoff")
    assert part.source == f"handoff:{given.handoff_id}" and part.tokens == given.tokens > 0


def test_without_context_handoff_the_sub_agent_gets_the_request_alone(emu, tmp_path):
    out, requests = run(emu, tmp_path, "openai", "coordinator_plain.yaml")
    assert out.result.status == "completed"
    assert not [e for e in out.events if e.type == "handoff.package"]
    assert specialist_first(requests).first_user_text() == TASK


def test_context_handoff_on_a_handoff_edge_is_one_clear_spec_error(tmp_path):
    from portagent.contracts.bundle import load_agent

    for name in ("specialist.yaml", "tools.yaml", "delegation_handlers.py"):
        (tmp_path / name).write_text((DATA / name).read_text())
    text = (DATA / "coordinator.yaml").read_text().replace("kind: agent_as_tool", "kind: handoff")
    (tmp_path / "coordinator.yaml").write_text(text)
    with pytest.raises(SpecError) as err:
        load_agent(tmp_path / "coordinator.yaml")
    assert "context: handoff is only for kind: agent_as_tool" in str(err.value)


def test_trace_show_and_otel_name_the_package(tmp_path):
    from _support import run_cli

    code, _, err = run_cli(
        "run",
        str(DATA / "coordinator.yaml"),
        "--provider",
        "openai",
        "--emulator",
        str(DATA / "script.yaml"),
        "--input",
        GOAL,
        "--out",
        str(tmp_path / "r"),
    )
    assert code == 0, err
    code, shown, _ = run_cli("trace", "show", str(tmp_path / "r" / "trace.jsonl"))
    assert code == 0 and "handoff pkg  ho_" in shown and "-> specialist" in shown, shown
    otel = tmp_path / "otel.json"
    code, _, err = run_cli("trace", "export", str(tmp_path / "r" / "trace.jsonl"), "--otel-json", str(otel))
    assert code == 0, err
    exported = otel.read_text()
    assert "portagent.handoff.package" in exported and "portagent.handoff.id" in exported


def test_a_recorded_delegation_replays_cleanly(tmp_path):
    """The package is deterministic (its id and evidence come from the run's recorded ids), so a cassette
    recorded with it replays without drift: ``record`` replays each folder it writes and says so."""
    from _support import run_cli

    code, out, err = run_cli(
        "record",
        str(DATA / "coordinator.yaml"),
        "--case",
        "deleg",
        "--input",
        GOAL,
        "--emulator",
        str(DATA / "script.yaml"),
        "--providers",
        "openai",
        "--out",
        str(tmp_path / "c"),
    )
    assert code == 0, out + err
    assert "deleg openai r0  completed, replays cleanly" in out, out
    [trace] = list((tmp_path / "c").rglob("trace.jsonl"))
    assert '"type":"handoff.package"' in trace.read_text(encoding="utf-8").replace(" ", "")
