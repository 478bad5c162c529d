"""A reused ``--idempotency-key`` resumes only the request that started its run.

QA found that ``portagent run … --idempotency-key K`` resumed the run paused under K whatever the new
request said: with another ``--input`` the old journal was replayed into the new request and the approved
refund ran; with another ``--provider`` the journal could not be replayed, the model was asked again and
the card approved for one provider's call was applied to the other's. Such a request is now refused before
anything runs. What proves it: the exit code and the message, the refund handler's own log (no effect),
the emulator's request log (no model call), and the run folder (no new attempt, no trace line, no journal),
the card still approved and unused; then the original request with the same key still resumes.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from _support import portagent_home, run_cli

from portagent.adapters.base import REGISTRY
from portagent.emulator import load_script, serve

INPUT = "Refund order ORD-7."

HANDLERS = """
import json
from pathlib import Path

LOG = Path(__file__).with_name("refunds.log")


def get_order(order_id):
    return {"order_id": order_id, "status": "shipped"}


def refund(order_id, amount):
    with LOG.open("a") as f:
        f.write(json.dumps({"order_id": order_id, "amount": amount}) + "\\n")
    return {"refunded": amount, "order_id": order_id}
"""

SPEC = {
    "kind": "agent",
    "schema_version": 1,
    "name": "shop",
    "version": "1.0.0",
    "instructions": "Read the order, then refund it.",
    "models": {"openai": "gpt-4.1-mini", "adk": "gemini-2.5-flash"},
    "tools": [
        {
            "name": "get_order",
            "description": "Read one order.",
            "effect": "read",
            "input_schema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
            "handler": "shop_tools:get_order",
        },
        {
            "name": "refund",
            "description": "Refund an order.",
            "effect": "external_effect",
            "idempotency": {"required": True, "key_field": "order_id"},
            "input_schema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["order_id", "amount"],
                "additionalProperties": False,
            },
            "handler": "shop_tools:refund",
        },
    ],
}

SCRIPT = {
    "kind": "emulator-script",
    "schema_version": 1,
    "name": "shop",
    "conversations": [
        {
            "name": "refund",
            "match": {"first_user": INPUT},
            "turns": [
                {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "ORD-7"}}]},
                {"tool_calls": [{"name": "refund", "arguments": {"order_id": "ORD-7", "amount": 20}}]},
                {"text": "Refunded: {{last_tool_result.refunded}}."},
            ],
        },
        {"name": "other", "match": {"first_user_regex": "(?s).*"}, "turns": [{"text": "Hi."}]},
    ],
}


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "shop_tools.py").write_text(textwrap.dedent(HANDLERS))
    (root / "agent.yaml").write_text(yaml.safe_dump(SPEC, sort_keys=False))
    (root / "emulator.yaml").write_text(yaml.safe_dump(SCRIPT, sort_keys=False))
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop("shop_tools", None)
    from portagent.tools import handlers

    for ref in [r for r in handlers._CACHE if r.startswith("shop_tools:")]:  # each test has its own folder
        handlers._CACHE.pop(ref)
    for provider in ("openai", "adk"):
        info = REGISTRY[provider]
        monkeypatch.setenv(info.key_env, info.dummy_key)
        monkeypatch.delenv(info.base_url_env, raising=False)
    return root


def _run(agent: Path, base_url: str, out: Path, provider: str, text: str, *extra: str) -> tuple[int, str]:
    code, stdout, stderr = run_cli(
        "run",
        str(agent / "agent.yaml"),
        "--provider",
        provider,
        "--live",
        "--base-url",
        base_url,
        "--input",
        text,
        "--idempotency-key",
        "K1",
        "--out",
        str(out),
        *extra,
    )
    return code, stdout + stderr


def _folder(out: Path) -> tuple[list[dict[str, object]], str, list[str]]:
    record = json.loads((out / "run.json").read_text())
    return (
        record["attempts"],
        (out / "trace.jsonl").read_text(),
        sorted(p.name for p in (out / "journal").iterdir()),
    )


@pytest.mark.parametrize(
    ("provider", "text", "differs"),
    [
        ("openai", "Write a note.", "a different input"),
        ("adk", INPUT, "a different provider (openai; this request: adk)"),
    ],
    ids=["input", "provider"],
)
def test_a_reused_key_for_another_request_is_refused_and_nothing_runs(
    agent: Path, tmp_path: Path, provider: str, text: str, differs: str
) -> None:
    out = tmp_path / "out"
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        code, shown = _run(agent, emu.base_url, out, "openai", INPUT, "--approver", "defer")
        assert code == 0 and "waiting_approval" in shown, shown
        run_id = shown.split(" run ", 1)[1].split()[0]
        approval_id = next(ln.split()[1] for ln in shown.splitlines() if ln.startswith("approval "))
        assert run_cli("approvals", "approve", approval_id)[0] == 0
        asked, before = len(emu.requests()), _folder(out)

        code, shown = _run(agent, emu.base_url, out, provider, text)

        assert code == 2, shown
        assert f"idempotency key 'K1' belongs to run {run_id}" in shown, shown
        assert differs in shown and f"portagent resume {run_id}" in shown, shown
        assert "Traceback" not in shown
        assert not (agent / "refunds.log").exists()  # the approved refund did not run
        assert len(emu.requests()) == asked  # no model call
        assert _folder(out) == before  # no attempt, no trace line, no journal
        from portagent.tools.approvals import ApprovalStore

        store = ApprovalStore()
        try:
            assert store.get(approval_id).status == "approved"
            assert store.consumed_by(approval_id) is None
        finally:
            store.close()

        # the request that started the run, with its key, still resumes it: the refund runs once
        code, shown = _run(agent, emu.base_url, out, "openai", INPUT)
        assert code == 0 and "completed" in shown and "attempt 2" in shown, shown
        assert len((agent / "refunds.log").read_text().splitlines()) == 1
        code, shown = _run(agent, emu.base_url, out, "openai", INPUT)
        assert code == 0 and "duplicate" in shown, shown
