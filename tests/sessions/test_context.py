"""Context manifests (issue 16 part 3): a ``context.manifest`` before every model call, under a budget.

Not circular: the emulator script sets no usage, so the ``input_tokens`` of each ``model.call`` is the
emulator's own count of what it received (characters / 4 of the system prompt and the messages). On
openai-agents, which adds nothing of its own, the manifest's parts add up to that count (per-part rounding
aside); on ADK and Claude Code the runtime adds text portagent never sees, so the manifest is below the
count and says so in ``not_counted``. A context budget leaves the oldest turns out of the request itself
(read from the request log), and the manifest lists them as excluded with the reason.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.runtime.runner import RunConfig
from portagent.runtime.sessions import arun_in_session

DATA = Path(__file__).resolve().parent / "data"
SCRIPT = DATA / "script.yaml"
DUMMY_KEYS = {
    "openai": "sk-portagent-dummy",
    "claude": "sk-ant-portagent-dummy",
    "adk": "portagent-dummy-key",
}


@pytest.fixture(scope="module")
def emu():
    from portagent.emulator import load_script, serve

    with serve(load_script(SCRIPT)) as running:
        yield running


def step(
    emu: Any, tmp: Path, provider: str, n: int, *, agent: str = "thread.yaml", manifest: bool = True
) -> tuple[Any, list[dict[str, Any]]]:
    before = len(emu.requests())
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[provider]),
        clock=FixedClock(),
        ids=IdFactory(f"context-{n}"),
        options=RunOptions(workdir=tmp / f"work-{n}", extra={"context_manifest": True} if manifest else {}),
    )
    request = RunRequest(input=f"Step {n} of the thread.", provider=provider, session_id="ctx")
    out = asyncio.run(asyncio.wait_for(arun_in_session(DATA / agent, request, config), 120))
    return out, emu.requests()[before:]


def manifests(out: Any) -> list[Any]:
    return [e for e in out.events if e.type == "context.manifest"]


@pytest.fixture(scope="module")
def thread(emu, tmp_path_factory):
    """Three steps (openai, adk, claude) with manifests, then a fourth on openai under a budget."""
    tmp = tmp_path_factory.mktemp("ctx")
    old = os.environ.get("PORTAGENT_HOME")
    os.environ["PORTAGENT_HOME"] = str(tmp / "home")
    try:
        steps = [step(emu, tmp, p, n) for n, p in enumerate(["openai", "adk", "claude"], start=1)]
        budget = step(emu, tmp, "openai", 4, agent="thread_budget.yaml", manifest=False)
        plain = step(emu, tmp, "openai", 5, manifest=False)
    finally:
        if old is None:
            os.environ.pop("PORTAGENT_HOME", None)
        else:
            os.environ["PORTAGENT_HOME"] = old
    return steps, budget, plain


def test_a_manifest_before_every_model_call(thread):
    steps, budget, plain = thread
    for out, _ in [*steps, budget]:
        types = [e.type for e in out.events]
        calls = [i for i, t in enumerate(types) if t == "model.call"]
        assert calls and all(types[i - 1] == "context.manifest" for i in calls), types
        assert [m.call_index for m in manifests(out)] == list(range(1, len(calls) + 1))
    assert manifests(plain[0]) == []  # off unless asked for or budgeted


def test_manifest_parts_name_their_sources(thread):
    steps, _, _ = thread
    first = manifests(steps[0][0])[0]
    assert [(p.type, p.source) for p in first.parts] == [
        ("instruction", "agent:thread.instructions"),
        ("input", "input.0"),
    ]
    third = manifests(steps[2][0])[0]
    assert [p.type for p in third.parts] == ["instruction", "history", "input"]
    assert third.parts[1].source == "session:ctx (4 turns)"
    assert third.token_count == "estimate" and third.total_tokens == sum(p.tokens for p in third.parts)


def test_manifest_tokens_add_up_to_what_the_emulator_received(thread):
    steps, _, _ = thread
    for (out, _), provider in zip(steps, ["openai", "adk", "claude"], strict=True):
        m = manifests(out)[0]
        received = next(e for e in out.events if e.type == "model.call").input_tokens
        if provider == "openai":
            # the emulator counts one text, the manifest each part: at most one token of rounding per part
            assert 0 <= m.total_tokens - received < len(m.parts), (m.total_tokens, received)
            assert m.not_counted == []
        else:
            assert m.total_tokens < received and m.not_counted, (provider, m.total_tokens, received)


def test_budget_leaves_the_oldest_turns_out_of_the_request(thread):
    _, (out, requests), _ = thread
    m = manifests(out)[0]
    assert m.max_context_tokens == 80 and not m.over_budget and m.total_tokens <= 80
    [excluded] = m.excluded
    assert excluded.type == "history" and excluded.source.startswith("session:ctx#1-")
    assert "max_context_tokens 80: the oldest turns left out" in excluded.reason and excluded.tokens > 0
    body = json.dumps(requests[0]["body"])
    dropped_to = int(excluded.source.rsplit("-", 1)[1])
    assert "Step 1 of the thread." not in body  # the oldest turn was not sent
    assert f'omitted=\\"{dropped_to}\\"' in body
    assert "Answer 3: noted." in body  # the newest turn was


def test_trace_show_prints_the_manifest(tmp_path):
    code, out, err = run_cli(
        "run",
        str(DATA / "thread.yaml"),
        "--provider",
        "openai",
        "--emulator",
        str(SCRIPT),
        "--session",
        "shown",
        "--context-manifest",
        "--input",
        "Step 1 of the thread.",
        "--out",
        str(tmp_path / "r"),
    )
    assert code == 0, err
    code, shown, _ = run_cli("trace", "show", str(tmp_path / "r" / "trace.jsonl"))
    assert code == 0 and "context      call 1:" in shown and "instruction agent:thread.instructions" in shown
    # and in the OTel export: an event on the run span with the parts' sources and counts (no content)
    otel = tmp_path / "otel.json"
    code, _, err = run_cli("trace", "export", str(tmp_path / "r" / "trace.jsonl"), "--otel-json", str(otel))
    assert code == 0, err
    exported = otel.read_text()
    assert "portagent.context.manifest" in exported and "agent:thread.instructions" in exported
    # and in the HTML report's run timeline
    from portagent.evals.report_html import _event_row
    from portagent.tracing.timeline import load_trace_file

    manifest = next(
        e for e in load_trace_file(tmp_path / "r" / "trace.jsonl") if e.type == "context.manifest"
    )
    row = _event_row(manifest, {}, 0.0)
    assert (
        '<span class="kind k-model">context</span>' in row and "instruction agent:thread.instructions" in row
    )


def test_budget_without_room_for_history_is_over_budget_not_overflowing(emu, tmp_path):
    """A budget smaller than instructions + input: every turn is left out, the call is flagged over budget."""
    spec = tmp_path / "tiny.yaml"
    spec.write_text((DATA / "thread.yaml").read_text() + "max_context_tokens: 10\n")
    step(emu, tmp_path, "openai", 1, manifest=False)
    out, requests = step(emu, tmp_path, "openai", 2, agent=str(spec), manifest=False)
    m = manifests(out)[0]
    assert m.over_budget and [p.type for p in m.parts] == ["instruction", "history", "input"]
    assert m.excluded[0].source == "session:ctx#1-2"
    assert "Answer 1: noted." not in json.dumps(requests[0]["body"])


def test_budget_compacts_old_turns_into_a_handoff_and_saves_tokens(emu, tmp_path):
    """A long earlier answer does not fit the budget: its run is compacted from its trace into a handoff that
    the request carries instead (shorter), the manifest names it, and the saving passes the ch. 04 gate."""
    from portagent.evals.context_metrics import token_saving, token_saving_gate

    def persisted(provider: str, text: str, agent: Path) -> tuple[Any, list[dict[str, Any]]]:
        before = len(emu.requests())
        config = RunConfig(
            endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[provider]),
            ids=IdFactory(f"compact-{text[:8]}"),
            options=RunOptions(workdir=tmp_path / "work"),
            persist=True,
        )
        request = RunRequest(input=text, provider=provider, session_id="long")
        out = asyncio.run(asyncio.wait_for(arun_in_session(agent, request, config), 120))
        return out, emu.requests()[before:]

    persisted("openai", "Tell me everything about the parcel.", DATA / "thread.yaml")
    persisted("adk", "Step 2 of the thread.", DATA / "thread.yaml")
    spec = tmp_path / "budget.yaml"
    spec.write_text((DATA / "thread.yaml").read_text() + "max_context_tokens: 160\n")
    out, requests = persisted("openai", "Step 3 of the thread.", spec)
    assert out.result.final_output == "Answer 3: noted."
    m = manifests(out)[0]
    assert [p.type for p in m.parts] == ["instruction", "handoff", "history", "input"]
    assert m.parts[1].source.startswith("handoff:ho_") and "(session:long#1-2)" in m.parts[1].source
    [excluded] = m.excluded
    assert excluded.source == "session:long#1-2" and "compacted into handoff:ho_" in excluded.reason
    body = requests[0]["body"]
    sent = json.dumps(body)
    assert "<compacted_turns" in sent and "request: Tell me everything about the parcel." in sent
    assert "Detail 20:" not in sent  # the long answer itself was not resent
    assert "Answer 2: noted." in sent  # the newest exchange was, as it is
    received = next(e for e in out.events if e.type == "model.call").input_tokens
    assert 0 <= m.total_tokens - received < len(m.parts)
    full = m.total_tokens - m.parts[1].tokens + excluded.tokens  # what resending every turn would have cost
    assert token_saving(full, m.total_tokens) >= 0.35
    assert token_saving_gate(full, m.total_tokens, 1.0, 1.0).passed
