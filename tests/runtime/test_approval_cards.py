"""Issue 22, items 3, 5 and 4 (``--out``): approval cards carry their evidence, edits are checked when
they are made, and a resumed run writes where the resuming request says.

The real SDKs run against portagent's emulator. A run asks to read a case, then to open a ticket (a
``reversible_write`` that needs approval, keyed by ``case_id`` in the effect ledger); the ``defer``
approver leaves the card pending. Then:

- ``approvals show`` prints the user input (a secret in it masked), the earlier tool result — the same
  JSON the SDK sent back to the model (the emulator's request log says so) —, the run's spend so far,
  and what runs on approval with its idempotency key;
- ``approvals edit`` refuses, with one message and exit 1 and the card left as it was, what the resumed
  run would refuse: the schema, the policy (including a rule that depends on the run's scopes, which
  the CLI only knows from the card) and a dropped idempotency key field; a good edit passes;
- resuming with ``--idempotency-key K --out DIR`` writes the whole run (both attempts) and ``run.json``
  into DIR, runs the edited call once, and a later request with the same key answers ``duplicate``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import portagent_home, run_cli

from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full
from portagent.wire import anthropic as wire_anthropic
from portagent.wire import gemini as wire_gemini
from portagent.wire import openai as wire_openai

SECRET = "sk-ant-api03-QmF6ZVRoaXNJc05vdEFSZWFsS2V5MTIzNDU2"
INPUT = f"Open a ticket for case C-7 (my token is {SECRET})."
DUMMY = {"openai": "sk-portagent-dummy", "claude": "sk-ant-portagent-dummy", "adk": "portagent-dummy-key"}
PROVIDERS = ["openai", "adk", pytest.param("claude", marks=pytest.mark.slow)]

HANDLERS = """
import json
from pathlib import Path

LOG = Path(__file__).with_name("tickets.log")


def read_case(case_id):
    return {"case_id": case_id, "status": "waiting", "missing": ["DNI"], "owner": "Ana"}


def create_ticket(**args):
    with LOG.open("a") as f:
        f.write(json.dumps(args, sort_keys=True) + "\\n")
    return {"ticket_id": "T-" + str(args.get("case_id")), "priority": args.get("priority", "normal")}
"""


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cards")
    (root / "card_tools.py").write_text(textwrap.dedent(HANDLERS))
    spec = {
        "kind": "agent",
        "schema_version": 1,
        "name": "cards",
        "version": "1.0.0",
        "instructions": "Read the case, then open a ticket.",
        "models": {"openai": "gpt-4.1-mini", "claude": "claude-sonnet-4-6", "adk": "gemini-2.5-flash"},
        "tools": [
            {
                "name": "read_case",
                "description": "Read one case.",
                "effect": "read",
                "input_schema": {
                    "type": "object",
                    "properties": {"case_id": {"type": "string"}},
                    "required": ["case_id"],
                    "additionalProperties": False,
                },
                "handler": "card_tools:read_case",
            },
            {
                "name": "create_ticket",
                "description": "Open a ticket for a case.",
                "effect": "reversible_write",
                "idempotency": {"required": True, "key_field": "case_id"},
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "case_id": {"type": "string"},
                        "summary": {"type": "string", "minLength": 3},
                        "priority": {"type": "string", "enum": ["normal", "high", "urgent"]},
                        "team": {"type": "string"},
                    },
                    "required": ["summary"],
                    "additionalProperties": False,
                },
                "handler": "card_tools:create_ticket",
            },
        ],
        "policy": {
            "kind": "policy",
            "name": "cards",
            "version": "7",
            "rules": [
                {
                    "id": "no-urgent",
                    "tool": "create_ticket",
                    "decision": "deny",
                    "reason": "urgent tickets go through the on-call desk",
                    "when": [{"arg": "priority", "equals": "urgent", "if_absent": "no_match"}],
                },
                {
                    "id": "finance-needs-scope",
                    "tool": "create_ticket",
                    "decision": "deny",
                    "reason": "finance tickets need the finance:write scope",
                    "when": [{"arg": "team", "equals": "finance", "if_absent": "no_match"}],
                    "scopes_missing": ["finance:write"],
                },
            ],
        },
    }
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "name": "cards",
        "conversations": [
            {
                "name": "ticket",
                "match": {"first_user": INPUT},
                "turns": [
                    {"tool_calls": [{"name": "read_case", "arguments": {"case_id": "C-7"}}]},
                    {
                        "tool_calls": [
                            {
                                "name": "create_ticket",
                                "arguments": {
                                    "case_id": "C-7",
                                    "summary": "Missing DNI",
                                    "priority": "normal",
                                },
                            }
                        ]
                    },
                    {
                        "text": "Ticket {{last_tool_result.ticket_id | last_tool_result.error}} "
                        '({{last_tool_result.priority | "-"}}) is open.'
                    },
                ],
            }
        ],
    }
    (root / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (root / "emulator.yaml").write_text(yaml.safe_dump(script, sort_keys=False))
    sys.path.insert(0, str(root))
    return root


def _sent_back(entry: dict[str, Any]) -> dict[str, Any]:
    """Tool name → the observation the SDK sent to the model, parsed from the request on the wire."""
    api, body = entry["api"], entry["body"]
    if api == "openai.responses":
        view = wire_openai.parse_responses_request(body)
    elif api == "openai.chat":
        view = wire_openai.parse_chat_request(body)
    elif api == "anthropic.messages":
        view = wire_anthropic.parse_messages_request(body)
    else:
        view = wire_gemini.parse_generate_content_request(body, stream=bool(entry.get("stream")))
    names = {i.call_id: i.name for i in view.items if i.kind == "tool_call"}
    out = {}
    for item in view.tool_results():
        name = (item.name or names.get(item.call_id) or "?").removeprefix("mcp__portagent__")
        raw = item.text if api == "anthropic.messages" else item.output
        if isinstance(raw, dict) and len(raw) == 1 and "result" in raw:
            raw = raw["result"]
        out[name] = json.loads(raw) if isinstance(raw, str) else raw
    return out


def _defer(agent: Path, provider: str, home: Path, out: Path) -> tuple[Any, list[dict[str, Any]]]:
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(home):
        config = RunConfig(
            endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY[provider]),
            approver="defer",
            out_dir=out,
        )
        request = RunRequest(
            input=INPUT, provider=provider, idempotency_key="k-cards", scopes=["tickets:write"]
        )
        output = asyncio.run(arun_full(load_agent(agent / "agent.yaml"), request, config))
        return output, emu.requests()


def _row(home: Path, approval_id: str) -> tuple[Any, ...]:
    db = sqlite3.connect(home / "approvals.db")
    try:
        return db.execute(
            "SELECT status, card, decided_at FROM approval_cards WHERE approval_id=?", (approval_id,)
        ).fetchone()
    finally:
        db.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_deferred_card_shows_its_evidence_spend_and_what_runs(
    agent: Path, tmp_path: Path, provider: str
) -> None:
    home = tmp_path / "home"
    output, requests = _defer(agent, provider, home, tmp_path / "out")
    assert output.result.status == "waiting_approval", output.result
    approval_id = output.result.pending_approvals[0]

    # what the model was sent as read_case's result, on the wire
    sent = [_sent_back(r) for r in requests if r.get("body")]
    read = next(s["read_case"] for s in sent if "read_case" in s)
    assert read["status"] == "waiting" and read["missing"] == ["DNI"]

    code, out, err = run_cli("approvals", "--home", str(home), "show", approval_id)
    assert code == 0, err
    assert "user     input: Open a ticket for case C-7 (my token is [REDACTED:" in out
    assert SECRET not in out and SECRET[:20] not in out
    result_line = next(
        line for line in out.splitlines() if line.startswith("  result   call_1 read_case (ok): ")
    )
    assert json.loads(result_line.split(": ", 1)[1]) == read  # the card shows what the model saw
    assert "spent      " in out and "· 1 tool call(s) · 2 turn(s)" in out
    assert (
        'on approve create_ticket@1.0.0 (reversible_write) with {"case_id": "C-7", "priority": "normal", '
        '"summary": "Missing DNI"}  idempotency key C-7' in out
    )

    code, out, _ = run_cli("approvals", "--home", str(home), "show", approval_id, "--json")
    card = json.loads(out)
    assert [i["id"] for i in card["inputs"]] == ["input"]
    assert [(r["id"], r["tool"], r["ok"]) for r in card["prior_results"]] == [("call_1", "read_case", True)]
    assert card["spend"]["tool_calls"] == 1 and card["spend"]["turns"] == 2 and card["spend"]["cost_usd"] > 0
    assert card["idempotency_key"] == "C-7"
    # the trace's approval.requested event carries the same card, and the secret reaches no file
    trace = (tmp_path / "out" / "trace.jsonl").read_text()
    asked = [json.loads(x) for x in trace.splitlines() if '"approval.requested"' in x]
    assert asked[0]["card"]["prior_results"] == card["prior_results"]
    files = [f for f in [*home.rglob("*"), *(tmp_path / "out").rglob("*")] if f.is_file()]
    assert any(f.name == "approvals.db" for f in files)
    for f in files:
        assert SECRET.encode() not in f.read_bytes(), f


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ({"case_id": "C-7", "summary": "x"}, "summary"),  # schema: too short
        ({"case_id": "C-7", "summary": "Missing DNI", "priority": "urgent"}, "on-call desk"),  # policy
        ({"case_id": "C-7", "summary": "Missing DNI", "team": "finance"}, "finance:write"),  # run's scopes
        ({"summary": "Missing DNI"}, "idempotency key field 'case_id'"),  # the ledger key
    ],
)
def test_an_edit_the_run_would_refuse_is_refused_when_made(
    agent: Path, tmp_path: Path, edit: dict[str, Any], reason: str
) -> None:
    home = tmp_path / "home"
    output, _ = _defer(agent, "openai", home, tmp_path / "out")
    approval_id = output.result.pending_approvals[0]
    before = _row(home, approval_id)
    code, out, err = run_cli(
        "approvals", "--home", str(home), "edit", approval_id, "--args", json.dumps(edit), "--reviewer", "ana"
    )
    assert code == 1, out + err
    assert reason in err and "refused" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and out == ""
    assert _row(home, approval_id) == before  # the card is exactly as it was: pending, undecided


def test_a_good_edit_runs_once_on_resume_and_out_gets_the_whole_run(agent: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = agent / "tickets.log"
    log.unlink(missing_ok=True)
    argv = [
        "run", str(agent / "agent.yaml"), "--provider", "openai", "--input", INPUT,
        "--emulator", str(agent / "emulator.yaml"), "--idempotency-key", "k-out", "--scope", "tickets:write",
    ]  # fmt: skip
    with portagent_home(home):
        code, out, err = run_cli(*argv, "--approver", "defer", "--out", str(tmp_path / "first"))
        assert code == 0 and "waiting_approval" in out, out + err
        approval_id = json.loads(run_cli("approvals", "list", "--json")[1])[0]["approval_id"]
        edited = {"case_id": "C-7", "summary": "Missing DNI", "priority": "high", "team": "support"}
        code, out, err = run_cli("approvals", "edit", approval_id, "--args", json.dumps(edited))
        assert code == 0 and "edited" in out, err
        code, out, _ = run_cli("approvals", "show", approval_id, "--json")
        assert json.loads(out)["idempotency_key"] == "C-7"

        code, out, err = run_cli(*argv, "--out", str(tmp_path / "second"))
        assert code == 0 and "completed" in out and str(tmp_path / "second") in out, out + err
        # the edited call ran once, with the edited arguments
        assert [json.loads(x) for x in log.read_text().splitlines()] == [edited]
        second = tmp_path / "second"
        events = [json.loads(x) for x in (second / "trace.jsonl").read_text().splitlines()]
        assert [e["attempt"] for e in events if e["type"] == "run.started"] == [1, 2]
        assert [e["seq"] for e in events] == list(range(len(events)))
        assert events[-1]["type"] == "run.completed" and "Ticket T-C-7 (high) is open." in json.dumps(
            events[-1]
        )
        record = json.loads((second / "run.json").read_text())
        assert record["result"]["status"] == "completed" and record["result"]["attempt"] == 2
        # the first folder keeps attempt 1 only
        first = (tmp_path / "first" / "trace.jsonl").read_text().splitlines()
        assert sum('"run.started"' in x for x in first) == 1
        # a third request with the key answers duplicate, and no second effect
        code, out, _ = run_cli(*argv)
        assert code == 0 and "duplicate" in out
        assert len(log.read_text().splitlines()) == 1


def test_out_that_cannot_be_written_on_resume_is_one_message_and_nothing_moves(
    agent: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    argv = [
        "run", str(agent / "agent.yaml"), "--provider", "openai", "--input", INPUT,
        "--emulator", str(agent / "emulator.yaml"), "--idempotency-key", "k-bad", "--scope", "tickets:write",
    ]  # fmt: skip
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with portagent_home(home):
        assert run_cli(*argv, "--approver", "defer", "--out", str(tmp_path / "first"))[0] == 0
        approval_id = json.loads(run_cli("approvals", "list", "--json")[1])[0]["approval_id"]
        assert run_cli("approvals", "approve", approval_id)[0] == 0
        code, out, err = run_cli(*argv, "--out", str(blocker / "sub"))
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, out + err
        assert not (blocker.parent / "sub").exists()
        # the run still waits where it was, and resumes there
        code, out, err = run_cli(*argv)
        assert code == 0 and "completed" in out and str(tmp_path / "first") in out, out + err
