"""Approvals inside the gateway: approvers, deferral and resume, expiry at execution, scripted replay."""

from __future__ import annotations

import asyncio
import json

import pytest
from gateway_testkit import ManualClock, ctx, run, tool, types

from portagent.contracts.policy import PermissionPolicy
from portagent.tools import ApprovalStore, ApproverDecision, ScriptedApprover, ToolGateway
from portagent.tools.approvers import Approver

SEND = tool(
    "send_email",
    effect="external_effect",
    idempotency={"required": True},
    properties={"to": {"type": "string"}, "subject": {"type": "string"}},
    required=["to", "subject"],
)
ARGS = {"to": "alumno@example.com", "subject": "Documentación pendiente"}


def gw_with(approver: Approver | str | dict, *, scope="s1", clock=None, **kw):
    c = ctx(scope=scope, clock=clock or ManualClock(), **kw)
    return ToolGateway([SEND], c, approver=approver), c


def test_auto_approve_runs_and_traces_request_and_resolution(spy):
    gw, c = gw_with("auto-approve")
    obs = run(gw.call("send_email", ARGS))
    assert obs.ok and obs.effect_id
    assert types(c) == [
        "tool.call",
        "permission.decision",
        "approval.requested",
        "approval.resolved",
        "tool.result",
    ]
    req, res = c.recorder.of_type("approval.requested")[0], c.recorder.of_type("approval.resolved")[0]
    assert req.card["tool"] == "send_email" and req.card["status"] == "pending"
    assert (res.status, res.reviewer, res.effective_args) == ("approved", "auto-approve", ARGS)
    card = gw.approvals.get(req.approval_id)
    assert card.status == "approved" and gw.approvals.consumed_by(card.approval_id) == "call_1"
    assert len(spy.calls("send_email")) == 1


def test_auto_deny_never_runs(spy):
    gw, c = gw_with("auto-deny")
    obs = run(gw.call("send_email", ARGS))
    assert obs.error == "approval_rejected" and spy.calls() == []
    assert c.recorder.of_type("approval.resolved")[0].status == "rejected"


def test_defer_leaves_the_card_pending_and_a_later_run_resumes_it(spy, tmp_path):
    gw, c = gw_with("defer")
    obs = run(gw.call("send_email", ARGS))
    assert obs.error == "approval_required"
    approval_id = obs.details["approval_id"]
    assert gw.pending_approvals == [approval_id] and obs.to_model()["approval_id"] == approval_id
    assert types(c)[-2:] == ["approval.requested", "tool.result"]
    assert spy.calls() == []

    # the reviewer decides later (the CLI does exactly this on the same store)
    ApprovalStore(clock=ManualClock()).approve(approval_id, reviewer="ana")

    gw2, c2 = gw_with("defer")  # a new attempt of the same run scope
    obs2 = run(gw2.call("send_email", ARGS))
    assert obs2.ok and len(spy.calls("send_email")) == 1
    assert types(c2) == ["tool.call", "permission.decision", "approval.resolved", "tool.result"]
    assert gw2.pending_approvals == []

    # the card is used up: a third identical call needs a new approval
    gw3, _ = gw_with("defer")
    obs3 = run(gw3.call("send_email", {**ARGS, "subject": "otra"}))
    assert obs3.error == "approval_required" and obs3.details["approval_id"] != approval_id


def test_a_card_rejected_while_waiting_rejects_the_resumed_call(spy):
    gw, _ = gw_with("defer")
    approval_id = run(gw.call("send_email", ARGS)).details["approval_id"]
    ApprovalStore(clock=ManualClock()).reject(approval_id, reviewer="ana", note="wrong recipient")
    gw2, _ = gw_with("auto-approve")
    obs = run(gw2.call("send_email", ARGS))
    assert obs.error == "approval_rejected" and "wrong recipient" in obs.message
    assert spy.calls() == []


def test_a_pending_card_asked_again_keeps_its_id(spy):
    gw, _ = gw_with("defer")
    first = run(gw.call("send_email", ARGS)).details["approval_id"]
    gw2, _ = gw_with("defer")
    again = run(gw2.call("send_email", ARGS)).details["approval_id"]
    assert again == first and len(ApprovalStore().list()) == 1


def test_an_expired_pending_card_is_replaced(spy):
    clock = ManualClock()
    gw, _ = gw_with("defer", clock=clock)
    first = run(gw.call("send_email", ARGS)).details["approval_id"]
    clock.advance(601)
    gw2, _ = gw_with("defer", clock=clock)
    second = run(gw2.call("send_email", ARGS)).details["approval_id"]
    assert second != first
    assert ApprovalStore().get(first).status == "expired"


def test_expiry_is_rechecked_at_execution(spy):
    clock = ManualClock()
    gw, c = gw_with("auto-approve", clock=clock)
    prepared = run(gw.prepare("send_email", ARGS))
    assert prepared.allowed
    clock.advance(601)
    obs = run(gw.execute(prepared))
    assert obs.error == "approval_rejected" and obs.details["expired"] is True
    assert spy.calls() == []
    assert gw.approvals.get(prepared.card.approval_id).status == "expired"
    assert len(c.recorder.of_type("tool.result")) == 1


def test_a_decided_card_that_expired_before_the_resume_does_not_run(spy):
    clock = ManualClock()
    gw, _ = gw_with("defer", clock=clock)
    approval_id = run(gw.call("send_email", ARGS)).details["approval_id"]
    ApprovalStore(clock=clock).approve(approval_id, reviewer="ana")
    clock.advance(601)
    gw2, _ = gw_with("defer", clock=clock)
    obs = run(gw2.call("send_email", ARGS))
    assert obs.error == "approval_rejected" and obs.details["expired"] is True
    assert spy.calls() == []


def test_an_edit_made_with_the_cli_is_revalidated_at_execution(spy):
    policy = PermissionPolicy(
        rules=[
            {
                "id": "no-lists",
                "tool": "send_email",
                "decision": "deny",
                "when": [{"arg": "to", "glob": "lista-*"}],
            }
        ]
    )
    c = ctx(scope="s1")
    # the card is made (and edited) under a policy without the rule: `approvals edit` checks the edit
    # against that policy; the resumed run has the stricter one and checks again before running it
    gw = ToolGateway([SEND], c, approver="defer", policy=PermissionPolicy())
    approval_id = run(gw.call("send_email", ARGS)).details["approval_id"]
    ApprovalStore(clock=ManualClock()).edit(
        approval_id, {"to": "lista-completa@example.com", "subject": "x"}, reviewer="ana"
    )
    gw2 = ToolGateway([SEND], ctx(scope="s1"), approver="defer", policy=policy)
    obs = run(gw2.call("send_email", ARGS))
    assert obs.error == "approval_rejected" and obs.details["edit_refused"]
    assert spy.calls() == []


def test_an_edited_card_runs_the_edited_arguments(spy):
    gw, _ = gw_with(
        {
            "type": "scripted",
            "decisions": [
                {"tool": "send_email", "decision": "edit", "args": {"to": "yo@example.com", "subject": "s"}}
            ],
        }
    )
    assert run(gw.call("send_email", ARGS)).ok
    assert spy.calls("send_email") == [{"to": "yo@example.com", "subject": "s", "body": ""}]


class Boom:
    name = "boom"

    async def decide(self, card):
        raise RuntimeError("reviewer service down")


def test_a_failing_approver_rejects_instead_of_running_or_crashing(spy):
    gw, _ = gw_with(Boom())
    obs = run(gw.call("send_email", ARGS))
    assert obs.error == "approval_rejected" and "reviewer service down" in obs.message
    assert spy.calls() == []


def test_scripted_decisions_are_keyed_by_args_hash_whatever_the_call_order(spy):
    a = {"to": "a@example.com", "subject": "A"}
    b = {"to": "b@example.com", "subject": "B"}
    script = [
        {"tool": "send_email", "call_args": b, "decision": "reject", "note": "not b"},
        {"tool": "send_email", "call_args": a, "decision": "approve"},
    ]
    for order in ([a, b], [b, a]):
        spy.reset()
        gw, _ = gw_with(ScriptedApprover(script), scope=f"order-{order[0]['to']}")

        async def both(gw=gw, order=order):
            return await asyncio.gather(*(gw.call("send_email", x) for x in order))

        outcomes = {o["to"]: r for o, r in zip(order, run(both()), strict=True)}
        assert outcomes["a@example.com"].ok
        assert outcomes["b@example.com"].error == "approval_rejected"
        assert [x["to"] for x in spy.calls("send_email")] == ["a@example.com"]


def test_scripted_falls_back_to_call_order_and_fails_loudly_when_exhausted(spy):
    gw, _ = gw_with(ScriptedApprover([{"decision": "approve"}]))
    assert run(gw.call("send_email", ARGS)).ok
    obs = run(gw.call("send_email", {**ARGS, "subject": "again"}))
    assert obs.error == "approval_rejected" and "no scripted approval decision" in obs.message


def test_callback_approver_sees_the_card(spy):
    seen = []

    async def reviewer(card):
        seen.append((card.tool, card.args_hash, card.reason))
        return ApproverDecision("approved", "bot")

    gw, c = gw_with(reviewer)
    assert run(gw.call("send_email", ARGS)).ok
    assert seen == [
        ("send_email", c.recorder.of_type("tool.call")[0].args_hash, "default for external_effect tools")
    ]


def test_a_duplicate_of_a_recorded_effect_needs_no_new_approval(spy):
    ticket = tool(
        "create_ticket",
        effect="reversible_write",
        idempotency={"required": True, "key_field": "request_key"},
        properties={"request_key": {"type": "string"}, "summary": {"type": "string"}},
    )
    c = ctx(scope="s1")
    gw = ToolGateway([ticket], c, approver="auto-approve")
    first = run(gw.call("create_ticket", {"request_key": "k1", "summary": "x"}))
    gw2 = ToolGateway([ticket], ctx(scope="s1"), approver="auto-deny")
    second = run(gw2.call("create_ticket", {"request_key": "k1", "summary": "x"}))
    assert second.ok and second.duplicate and second.effect_id == first.effect_id == "TCK-0001"
    assert len(spy.calls("create_ticket")) == 1


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_the_approver_is_asked_once_per_call_even_if_hooks_prepare_twice(spy, decision):
    asked = []

    def reviewer(card):
        asked.append(card.approval_id)
        return decision

    gw, c = gw_with(reviewer)
    p1 = run(gw.prepare("send_email", ARGS, vendor_call_id="toolu_1"))
    p2 = run(gw.prepare("send_email", ARGS, vendor_call_id="toolu_1"))
    assert p1 is p2 and len(asked) == 1
    run(gw.execute(p1))
    run(gw.execute(p2))
    assert len(c.recorder.of_type("tool.call")) == 1 and len(c.recorder.of_type("tool.result")) == 1
    assert len(spy.calls("send_email")) == (1 if decision == "approve" else 0)


def test_a_card_that_expires_while_the_reviewer_looks_is_not_run(spy):
    clock = ManualClock()

    def slow_reviewer(card):
        clock.advance(601)
        return "approve"

    c = ctx(scope="s1", clock=clock)
    gw = ToolGateway([SEND], c, approver=slow_reviewer, approvals=ApprovalStore(clock=clock))
    obs = run(gw.call("send_email", ARGS))
    assert obs.error == "approval_rejected" and "expired" in obs.message
    assert c.recorder.of_type("approval.resolved")[0].status == "expired"
    assert spy.calls() == []


# --- an edit is checked when it is made -------------------------------------------------------------


def _asked(*replies: str):
    """The terminal's answers, in order; end of input afterwards."""
    it = iter(replies)

    def fn(prompt: str) -> str:
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return fn


SUBJECT_MAX = tool(
    "send_email",
    effect="external_effect",
    idempotency={"required": True},
    properties={"to": {"type": "string"}, "subject": {"type": "string", "maxLength": 40}},
    required=["to", "subject"],
)
TOO_LONG = {"to": "alumno@example.com", "subject": "x" * 41}


def test_a_refused_edit_at_the_terminal_is_explained_and_asked_again(spy):
    """The reviewer edits the call into arguments the schema refuses: told why, asked again, and the second
    (valid) edit is what runs. Before, the bad edit was stored as the card's 'edited' decision, the
    reviewer was not asked again, and the call was refused only when it came to run."""
    import io

    from portagent.tools import InteractiveApprover

    out = io.StringIO()
    fixed = {"to": "alumno@example.com", "subject": "Short"}
    approver = InteractiveApprover(
        _asked("e", json.dumps(TOO_LONG), "e", json.dumps(fixed)), out, reviewer="ana"
    )
    c = ctx(scope="s1", clock=ManualClock())
    gw = ToolGateway([SUBJECT_MAX], c, approver=approver)
    obs = run(gw.call("send_email", ARGS))
    assert obs.ok, obs
    assert "the edit was refused: " in out.getvalue() and "subject" in out.getvalue()
    assert spy.calls("send_email") == [{**fixed, "body": ""}]  # the second edit ran, once (body: default)
    (resolved,) = c.recorder.of_type("approval.resolved")
    assert (resolved.status, resolved.effective_args) == ("edited", fixed)


def test_a_refused_edit_from_an_approver_that_cannot_be_asked_again_rejects_the_card(spy):
    """A callback (or a script) answering an edit the schema refuses would answer it again: the card is
    rejected with the problems — never stored as 'edited' with arguments that could not run — and the
    model reads the same refusal a refused CLI edit gives (approval_rejected, edit_refused)."""
    c = ctx(scope="s1", clock=ManualClock())
    gw = ToolGateway([SUBJECT_MAX], c, approver=lambda card: {"status": "edit", "args": TOO_LONG})
    obs = run(gw.call("send_email", ARGS))
    assert obs.error == "approval_rejected" and obs.details["edit_refused"] is True, obs
    assert "subject" in obs.message and obs.details["problems"]
    assert spy.calls() == []
    (resolved,) = c.recorder.of_type("approval.resolved")
    assert resolved.status == "rejected" and "the edited arguments were refused" in (resolved.note or "")
    card = gw.approvals.get(resolved.approval_id)
    assert card.status == "rejected" and card.effective_args != TOO_LONG
