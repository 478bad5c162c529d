"""The same policy decision on every provider, through the real SDKs against the emulator (issue 14).

The model sends ``amount: "1000"`` (a string) for a number field: before normalisation OpenAI and ADK
passed the string on (a schema error) while the Claude CLI turned it into 1000 (a deny). A regex RE2
cannot run, on a catastrophic input, must end in a ``deny`` (``policy:error``) within the time limit on
every provider, not in an exit 3, an exit 0 or a traceback. What the model saw is read from the
emulator's request log (the tool result sent back), not from portagent's own trace only.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
from _support import portagent_home

DATA = Path(__file__).resolve().parent / "data" / "policy_xprov"
sys.path.insert(0, str(DATA))

from portagent.adapters.port import Endpoint, RunOptions  # noqa: E402
from portagent.contracts.bundle import load_agent  # noqa: E402
from portagent.contracts.run import RunRequest  # noqa: E402
from portagent.core.clock import FixedClock, IdFactory  # noqa: E402
from portagent.runtime.runner import RunConfig, arun_full  # noqa: E402

DUMMY_KEYS = {
    "openai": "sk-portagent-dummy",
    "claude": "sk-ant-portagent-dummy",
    "adk": "portagent-dummy-key",
}
PROVIDERS = ["openai", "adk", "claude"]


@pytest.fixture(scope="module")
def emu():
    from portagent.emulator import load_script, serve

    with serve(load_script(DATA / "emulator.yaml")) as running:
        yield running


def _run(emu, tmp: Path, provider: str, text: str):
    emu.reset()
    before = len(emu.requests())
    config = RunConfig(
        endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[provider]),
        approver="auto-deny",
        clock=FixedClock(),
        ids=IdFactory("xprov"),
        options=RunOptions(workdir=tmp / f"work-{provider}"),
    )
    with portagent_home(tmp / f"home-{provider}"):
        out = asyncio.run(
            arun_full(load_agent(DATA / "agent.yaml"), RunRequest(input=text, provider=provider), config)
        )
    return out, emu.requests()[before:]


def _sent_back(requests) -> str:
    """Everything the SDKs sent to the model after the tool call (the tool result is in there)."""
    return json.dumps([r["body"] for r in requests[1:]])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_numeric_string_is_denied_by_the_same_rule_on_every_provider(emu, tmp_path, provider):
    out, requests = _run(emu, tmp_path, provider, "Pay 1000 EUR.")
    decisions = [e for e in out.events if e.type == "permission.decision"]
    assert [(d.decision, d.rule) for d in decisions] == [("deny", "big-payments")]
    call = next(e for e in out.events if e.type == "tool.call")
    assert call.args == {"amount": 1000}  # the trace shows the normalised value
    assert out.result.status == "completed"
    assert "payments of 500 EUR or more are not allowed" in _sent_back(requests)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_policy_that_cannot_decide_denies_on_every_provider(emu, tmp_path, provider, monkeypatch):
    monkeypatch.setenv("PORTAGENT_POLICY_REGEX_TIMEOUT_S", "0.05")
    started = time.monotonic()
    out, requests = _run(emu, tmp_path, provider, "Look up the long note.")
    decisions = [e for e in out.events if e.type == "permission.decision"]
    assert [(d.decision, d.rule) for d in decisions] == [("deny", "policy:error")]
    assert "ran out of time" in decisions[0].reason
    assert out.result.status == "completed"  # the run goes on: the model is told, nothing crashes
    assert "permission_denied" in _sent_back(requests)
    assert time.monotonic() - started < 60
