"""Remote A2A agents as governed tools (``a2a_agents:``), one trace across the hop, and replay offline.

A coordinator (run on each provider against the emulator) uses the support desk, served over A2A by
``portagent a2a serve`` machinery in this process (its own model also the emulator). What the desk
received is read from the server's own request log, never from the caller's side.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _a2a_helpers import TOKEN, start
from _support import run_cli

from portagent.adapters.base import REGISTRY
from portagent.adapters.port import Endpoint
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script
from portagent.emulator import serve as emulate
from portagent.runtime.runner import RunConfig, arun_full

DATA = Path(__file__).parent / "data"
ASK = "Ask the desk about the refund deadline."
PROVIDERS = ["openai", "adk", "anthropic", pytest.param("claude", marks=pytest.mark.slow)]


def caller(tmp: Path, policy: str, agent_ref: str, budget: str = "") -> Path:
    """The coordinator's spec (the desk's URL is only known once it serves)."""
    folder = tmp / f"caller-{policy}"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / f"{policy}.policy.yaml", folder / "policy.yaml")
    spec = folder / "agent.yaml"
    spec.write_text(
        "kind: agent\nschema_version: 1\nname: coordinator\n"
        "instructions: Delegate student questions to the desk.\n"
        "models: {openai: gpt-4.1-mini, claude: claude-sonnet-4-6, adk: gemini-2.5-flash, anthropic: claude-sonnet-4-6}\n"
        "policy: policy.yaml\n"
        f"{budget}"
        f"a2a_agents:\n  - name: desk\n{agent_ref}"
    )
    return spec


def run(spec: Path, provider: str, text: str, out: Path, **endpoint: Any) -> Any:
    with emulate(load_script(DATA / "caller_emulator.yaml")) as emu:
        ep = Endpoint(
            source="emulator", mode="direct", base_url=emu.base_url, api_key=REGISTRY[provider].dummy_key
        )
        request = RunRequest(input=text, provider=provider)  # type: ignore[arg-type]
        return asyncio.run(arun_full(str(spec), request, RunConfig(endpoint=ep, out_dir=out)))


def log_rows(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def desk_run_trace(runs: Path, task_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (runs / task_id / "trace.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_remote_skill_is_a_governed_tool_on_every_provider(
    served: tuple[str, Path], tmp_path: Path, provider: str
) -> None:
    url, log = served
    spec = caller(tmp_path, "allow_desk", f"    url: {url}\n")
    before = len(log_rows(log))
    out = run(spec, provider, ASK, tmp_path / "run")
    assert out.result.status == "completed", out.result.error
    assert "30 days of payment" in str(out.result.final_output)
    result = next(e for e in out.events if e.type == "tool.result")
    assert result.tool == "desk_support_desk" and result.ok
    assert result.output["state"] == "completed" and result.output["cost_usd"] > 0  # the remote's own cost
    (row,) = log_rows(log)[before:]
    assert row["method"] == "SendMessage" and row["text"] == "What is the refund deadline?"
    # one trace: the desk's run joined the caller's trace, its root span under the caller's run span
    started = out.events[0]
    assert row["traceparent"] == f"00-{started.trace_id}-{started.span_id}-01"
    runs = log.parent / "runs"
    desk = desk_run_trace(runs, result.output["task_id"])
    assert {e["trace_id"] for e in desk} == {started.trace_id}
    assert desk[0]["parent_span_id"] == started.span_id


@pytest.mark.parametrize("provider", ["openai", "adk"])
def test_a_denied_skill_is_never_called(served: tuple[str, Path], tmp_path: Path, provider: str) -> None:
    url, log = served
    spec = caller(tmp_path, "deny_desk", f"    url: {url}\n")
    before = len(log_rows(log))
    out = run(spec, provider, ASK, tmp_path / "run")
    decision = next(e for e in out.events if e.type == "permission.decision")
    assert decision.decision == "deny" and decision.rule == "no-remote-desk"
    assert len(log_rows(log)) == before  # the server's own log: nothing arrived


def test_remote_approval_is_input_required_not_final(served: tuple[str, Path], tmp_path: Path) -> None:
    url, log = served
    spec = caller(tmp_path, "allow_desk", f"    url: {url}\n")
    out = run(spec, "openai", "Have the desk email Ana.", tmp_path / "run")
    result = next(e for e in out.events if e.type == "tool.result")
    assert result.ok and result.output["state"] == "input-required"
    assert "waiting for approval" in result.output["message"] and "text" not in result.output
    assert out.result.final_output == f"Desk task {result.output['task_id']} is input-required."
    # the desk's reviewer decides its card; the next message on the task completes it
    runs = log.parent / "runs"
    desk = desk_run_trace(runs, result.output["task_id"])
    card = next(e for e in desk if e["type"] == "approval.requested")["approval_id"]
    assert run_cli("approvals", "approve", card, "--reviewer", "dean")[0] == 0
    from test_a2a_serve import send

    done = send(url, "approved", result.output["task_id"])["result"]
    assert done["status"]["state"] == "completed"


def test_record_then_replay_offline(tmp_path: Path) -> None:
    from portagent.runtime.record import record_run
    from portagent.runtime.replay import replay_folder, replay_ids

    folder = tmp_path / "cassette"
    with start(tmp_path / "desk") as (url, log):
        spec = caller(tmp_path, "allow_desk", f"    url: {url}\n")
        with emulate(load_script(DATA / "caller_emulator.yaml")) as emu:
            ep = Endpoint(
                source="emulator", mode="direct", base_url=emu.base_url, api_key=REGISTRY["adk"].dummy_key
            )
            ids = replay_ids("coordinator", "1.0.0", None, "adk", 0)  # ids that reach the model replay alike
            recorded = asyncio.run(
                record_run(str(spec), RunRequest(input=ASK, provider="adk"), folder, ep, ids=ids)
            )
        assert recorded.result.status == "completed"
        calls = len(log_rows(log))
    recording = json.loads((folder / "a2a.json").read_text())
    assert list(recording["cards"]) == ["desk"] and len(recording["calls"]) == 1
    assert TOKEN not in (folder / "a2a.json").read_text()
    # the desk is gone now: the replay reads the card and the answer from a2a.json
    replayed = asyncio.run(replay_folder(str(spec), folder))
    assert replayed.result.status == "completed", replayed.result.error
    assert replayed.result.final_output == recorded.result.final_output
    assert calls == 1


# --- the remote's reported cost is charged to the caller's budget -----------------------------------


@pytest.mark.parametrize("provider", ["openai", "adk"])
def test_the_remote_cost_is_charged_and_stops_an_over_budget_run(
    served: tuple[str, Path], tmp_path: Path, provider: str
) -> None:
    """``max_cost_usd`` fits the caller's own two model turns (so without the remote's cost the run would
    complete), but not its first turn plus what the desk reported: the run stops right after the remote
    call, ``budget_exhausted`` / ``max_cost_usd``, like a run whose own model cost passes the limit."""
    from portagent.core.pricing import model_cost

    url, log = served
    model = {"openai": "gpt-4.1-mini", "adk": "gemini-2.5-flash"}[provider]
    turn = model_cost(provider, model, input_tokens=200, output_tokens=20)  # caller_emulator.yaml's usage
    assert turn is not None
    limit = round(2 * turn + 0.00001, 6)
    spec = caller(tmp_path, "allow_desk", f"    url: {url}\n", f"budget: {{max_cost_usd: {limit}}}\n")
    out = run(spec, provider, ASK, tmp_path / "run")
    types = [e.type for e in out.events]
    result = next(e for e in out.events if e.type == "tool.result")
    remote = result.output["cost_usd"]  # what the desk's own run cost, as its task reported it
    assert result.ok and remote > limit - turn  # the premise: only the remote's cost passes the limit
    assert (out.result.status, out.events[-1].stop_reason) == ("budget_exhausted", "max_cost_usd")
    assert types.count("model.call") == 1  # stopped before the second turn
    assert types.index("budget.exceeded") == types.index("tool.result") + 1
    exceeded = next(e for e in out.events if e.type == "budget.exceeded")
    assert (exceeded.limit, exceeded.limit_value) == ("max_cost_usd", limit)
    assert exceeded.observed == pytest.approx(turn + remote, abs=1e-6)
    assert out.events[-1].cost_usd == pytest.approx(turn + remote, abs=1e-8)
    assert len(log_rows(log)) >= 1  # the desk did the work it charged for


def test_a_run_within_budget_counts_the_remote_cost(served: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = served
    spec = caller(tmp_path, "allow_desk", f"    url: {url}\n", "budget: {max_cost_usd: 0.05}\n")
    out = run(spec, "openai", ASK, tmp_path / "run")
    assert out.result.status == "completed", out.result.error
    models = [e for e in out.events if e.type == "model.call"]
    remote = next(e for e in out.events if e.type == "tool.result").output["cost_usd"]
    from portagent.core.pricing import model_cost

    own = sum(
        model_cost("openai", e.model, input_tokens=e.input_tokens, output_tokens=e.output_tokens) or 0
        for e in models
    )
    assert out.events[-1].cost_usd == pytest.approx(own + remote, abs=1e-8)


# --- bad input: one message, exit 2, nothing sent ----------------------------------------------------


def _run_cli_caller(spec: Path, tmp: Path) -> tuple[int, str]:
    code, _, err = run_cli(
        "run", str(spec), "--provider", "openai", "--input", ASK,
        "--emulator", str(DATA / "caller_emulator.yaml"), "--out", str(tmp / "out"),
    )  # fmt: skip
    return code, err


def test_unreachable_agent(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    spec = caller(tmp_path, "allow_desk", f"    url: http://127.0.0.1:{port}\n")
    code, err = _run_cli_caller(spec, tmp_path)
    assert code == 2 and "A2A agent 'desk' is unreachable" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "trace.jsonl").exists()


def test_malformed_card(tmp_path: Path) -> None:
    spec = caller(tmp_path, "allow_desk", "    card: card.json\n")
    (spec.parent / "card.json").write_text('{"name": "desk", "skills": "not a list"}')
    code, err = _run_cli_caller(spec, tmp_path)
    assert code == 2 and "malformed AgentCard" in err and "Traceback" not in err
    (spec.parent / "card.json").write_text("{not json")
    code, err = _run_cli_caller(spec, tmp_path)
    assert code == 2 and "is not JSON" in err


def test_card_without_the_skill(served: tuple[str, Path], tmp_path: Path) -> None:
    url, log = served
    before = len(log_rows(log))
    spec = caller(tmp_path, "allow_desk", f"    url: {url}\n    skills: [refunds]\n")
    code, err = _run_cli_caller(spec, tmp_path)
    assert code == 2 and "has no skill 'refunds'" in err and "support_desk" in err
    assert len(log_rows(log)) == before


def test_token_missing(
    served_with_token: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, log = served_with_token
    monkeypatch.delenv("DESK_TOKEN", raising=False)
    spec = caller(tmp_path, "allow_desk", f"    url: {url}\n    token_env: DESK_TOKEN\n")
    code, err = _run_cli_caller(spec, tmp_path)
    assert code == 2 and "needs a bearer token in $DESK_TOKEN" in err
    # a wrong token: the desk refuses the call, the model sees permission_denied, the run goes on
    monkeypatch.setenv("DESK_TOKEN", "wrong-token-wrong-token")
    out = run(spec, "openai", ASK, tmp_path / "wrong")
    result = next(e for e in out.events if e.type == "tool.result")
    assert not result.ok and result.error == "permission_denied"
    monkeypatch.setenv("DESK_TOKEN", TOKEN)
    out = run(spec, "openai", ASK, tmp_path / "right")
    assert "30 days" in str(out.result.final_output)


@pytest.mark.parametrize("served_on", ["adk", "anthropic", pytest.param("claude", marks=pytest.mark.slow)])
def test_the_served_side_runs_on_each_provider(tmp_path: Path, served_on: str) -> None:
    with start(tmp_path / "desk", served_on) as (url, log):
        spec = caller(tmp_path, "allow_desk", f"    url: {url}\n")
        out = run(spec, "openai", ASK, tmp_path / "run")
        assert "30 days of payment" in str(out.result.final_output), out.result.error
        result = next(e for e in out.events if e.type == "tool.result")
        desk = desk_run_trace(log.parent / "runs", result.output["task_id"])
        assert desk[0]["provider"] == served_on and desk[0]["trace_id"] == out.events[0].trace_id
