"""Issue 22, items 3 and 5 at the gateway: what a card carries, and the one edit check.

Runs through real SDKs are in ``tests/runtime/test_approval_cards.py``; these pin the pieces: excerpts
are masked before they are cut, inputs given as turns or messages are listed one by one, a card made
without a trace has no evidence but still its spend and key, the edit check reads the policy and the
run's scopes stored with the card, and a store row written before this (no stored material) is still
checked against its input schema.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

import pytest
from gateway_testkit import ManualClock, ctx, run, tool

from portagent.contracts.policy import PermissionPolicy
from portagent.tools import ApprovalStore, EditRefusedError, ToolGateway
from portagent.tools.approval_flow import EXCERPT_CHARS, _user_inputs, excerpt
from portagent.tools.approvers import render_card

SECRET = "sk-ant-api03-QmF6ZVRoaXNJc05vdEFSZWFsS2V5MTIzNDU2"
WRITE = tool(
    "write_file",
    effect="reversible_write",
    idempotency={"required": True, "key_field": "path"},
    properties={"path": {"type": "string", "pattern": "^/"}, "content": {"type": "string"}},
    required=["content"],
)
POLICY = PermissionPolicy(
    rules=[
        {
            "id": "etc-needs-admin",
            "tool": "write_file",
            "decision": "deny",
            "reason": "writing under /etc needs the admin scope",
            "when": [{"arg": "path", "prefix": "/etc/", "if_absent": "no_match"}],
            "scopes_missing": ["admin"],
        }
    ]
)


def test_a_secret_at_the_cut_is_masked_not_halved():
    text = "x" * (EXCERPT_CHARS - 10) + " " + SECRET
    cut = excerpt(text)
    assert len(cut) == EXCERPT_CHARS and cut.endswith("…")
    assert SECRET[:8] not in cut  # cut first, the head of the key would have survived unmasked
    assert "[REDACTED:" in excerpt({"note": SECRET}) and SECRET not in excerpt({"note": SECRET})


def test_inputs_as_turns_or_messages_are_listed_one_by_one():
    turns = _user_inputs(["Hello.", "What is the refund deadline?"])
    assert [(i.id, i.excerpt) for i in turns] == [
        ("input[0]", "Hello."),
        ("input[1]", "What is the refund deadline?"),
    ]
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Send it"},
    ]
    assert [i.id for i in _user_inputs(messages)] == ["input[0]", "input[2]"]
    assert _user_inputs("") == [] and _user_inputs(None) == []


def _card(scopes: list[str], *, recorder: bool = True, spent: float = 0.0, scope: str = "s1") -> str:
    c = ctx(
        scope=scope,
        seed=scope,
        clock=ManualClock(datetime.now(UTC)),
        scopes=scopes,
        recorder=recorder,
        spent=spent,
    )
    if c.recorder is not None:
        c.recorder.emit("run.started", root=True, agent_version="1", spec_hash="h", policy_hash="p", sdk="x",
                        sdk_version="1", model="m", source="emulator", mode="direct",
                        input=f"write it {SECRET}")  # fmt: skip
        c.recorder.emit("model.call", model="m")
    gw = ToolGateway([WRITE], c, approver="defer", policy=POLICY)
    obs = run(gw.call("write_file", {"path": "/tmp/a.md", "content": "hola"}))
    return str(obs.details["approval_id"])


def test_the_card_carries_input_spend_and_key_and_the_renderer_shows_them():
    approval_id = _card(["files"])
    card = ApprovalStore().get(approval_id)
    assert [i.id for i in card.inputs] == ["input"] and SECRET not in card.inputs[0].excerpt
    assert card.prior_results == [] and card.spend is not None and card.spend.turns == 1
    assert card.idempotency_key == "/tmp/a.md"
    shown = render_card(card)
    assert "user     input: write it [REDACTED:" in shown and "idempotency key /tmp/a.md" in shown


def test_without_a_trace_the_card_still_has_spend_and_key():
    card = ApprovalStore().get(_card([], recorder=False))
    assert card.inputs == [] and card.spend is not None and card.idempotency_key == "/tmp/a.md"
    assert "(none:" in render_card(card)


def test_the_edit_check_uses_the_runs_scopes_stored_with_the_card():
    denied = _card([])
    with pytest.raises(EditRefusedError, match="admin scope"):
        ApprovalStore().edit(denied, {"path": "/etc/motd", "content": "x"})
    assert ApprovalStore().get(denied).status == "pending"
    # the same edit on a card whose run had the scope passes (a fresh home: seeded ids repeat)
    store = ApprovalStore()
    store.clear_scope("s1")
    allowed = _card(["admin"])
    card = ApprovalStore().edit(allowed, {"path": "/etc/motd", "content": "x"}, reviewer="ana")
    assert card.status == "edited" and card.idempotency_key == "/etc/motd"


def test_an_edit_of_a_decided_card_says_it_is_decided_not_why_the_args_fail():
    approval_id = _card([])
    ApprovalStore().approve(approval_id, reviewer="ana")
    with pytest.raises(Exception, match="already approved by ana"):
        ApprovalStore().edit(approval_id, {"path": "/etc/motd", "content": "x"})


def test_a_card_stored_without_material_is_checked_against_its_schema(tmp_path):
    approval_id = _card([])
    store = ApprovalStore()
    db = sqlite3.connect(store.path)
    db.execute("DELETE FROM approval_checks")  # as a store written before the material was kept
    db.commit()
    db.close()
    with pytest.raises(EditRefusedError, match="path"):
        store.edit(approval_id, {"path": "relative", "content": "x"})
    card = store.edit(approval_id, {"path": "/etc/motd", "content": "x"})  # the policy is the run's to check
    assert card.status == "edited"


def test_corrupt_material_is_one_clear_error():
    approval_id = _card([])
    store = ApprovalStore()
    db = sqlite3.connect(store.path)
    db.execute("UPDATE approval_checks SET material=?", (json.dumps({"tool": {}}),))
    db.commit()
    db.close()
    with pytest.raises(Exception, match="is corrupt"):
        store.edit(approval_id, {"path": "/a", "content": "x"})
    assert store.get(approval_id).status == "pending"


def test_budget_spent_shows_on_the_card():
    approval_id = _card([], spent=0.25, scope="s2")
    spend = ApprovalStore().get(approval_id).spend
    assert spend is not None and spend.cost_usd == pytest.approx(0.25) and spend.tool_calls == 0


def test_the_renderer_shows_escape_sequences_instead_of_obeying_them():
    """What the reviewer reads comes from users, tools and the model: an escape sequence in it could erase
    the IRREVERSIBLE line above it or move the cursor, a bidi override reorder the words. Each card line
    shows them escaped and stays one line (a newline in an excerpt cannot fake the next line)."""
    card = ApprovalStore().get(_card(["files"]))
    item = card.inputs[0].model_copy(update={"excerpt": "ok\x1b[1A\x1b[2K\nrun        fake\u202e"})
    hostile = card.model_copy(update={"inputs": [item], "reason": "needs\x9b2J a look"})
    shown = render_card(hostile)
    assert "\x1b" not in shown and "\x9b" not in shown and "\u202e" not in shown
    assert "user     input: ok\\x1b[1A\\x1b[2K\\x0arun        fake\\u202e" in shown
    assert "reason     needs\\x9b2J a look" in shown
    assert sum(line.startswith("run ") for line in shown.splitlines()) == 1
