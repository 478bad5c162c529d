"""ACCEPTANCE chapter 11 at the gateway level: one effect per idempotency key, approval gating, and
resuming an approved waiting call with exactly one effect (the runner builds runs on top of this)."""

from __future__ import annotations

from gateway_testkit import CREATE_TICKET, ManualClock, ctx, run, types

from portagent.tools import ApprovalStore, EffectLedger, ToolGateway

KEY = "user-42:create-ticket:access-2026-06-10"
ARGS = {"request_key": KEY, "summary": "Crear ticket: no puedo entrar en mi cuenta."}
SCOPE = f"run:{KEY}"


def attempt(approver):
    c = ctx(scope=SCOPE, clock=ManualClock())
    return ToolGateway([CREATE_TICKET], c, approver=approver), c


def test_two_requests_with_one_key_make_one_effect(spy):
    gw1, _ = attempt("auto-approve")
    first = run(gw1.call("create_ticket", ARGS))
    gw2, _ = attempt("auto-approve")
    second = run(gw2.call("create_ticket", ARGS))
    assert first.ok and first.effect_id == "TCK-0001" and not first.duplicate
    assert second.ok and second.duplicate and second.effect_id == "TCK-0001"
    assert [(e.key, e.effect_id) for e in EffectLedger().entries(SCOPE)] == [(KEY, "TCK-0001")]
    assert len(spy.calls("create_ticket")) == 1


def test_a_write_without_approval_waits_with_no_effect(spy):
    gw, c = attempt("defer")
    obs = run(gw.call("create_ticket", ARGS))
    assert obs.error == "approval_required" and gw.pending_approvals == [obs.details["approval_id"]]
    assert spy.calls() == [] and EffectLedger().entries(SCOPE) == []
    assert types(c)[-2] == "approval.requested"  # the trace ends with the request (then its result)


def test_approving_later_resumes_with_exactly_one_effect(spy):
    gw, _ = attempt("defer")
    approval_id = run(gw.call("create_ticket", ARGS)).details["approval_id"]
    ApprovalStore(clock=ManualClock()).approve(approval_id, reviewer="supervisor")
    gw2, c2 = attempt("defer")
    resumed = run(gw2.call("create_ticket", ARGS))
    assert resumed.ok and not resumed.duplicate and resumed.effect_id == "TCK-0001"
    assert c2.recorder.of_type("approval.resolved")[0].reviewer == "supervisor"
    gw3, _ = attempt("defer")
    again = run(gw3.call("create_ticket", ARGS))
    assert again.duplicate and again.effect_id == "TCK-0001"
    assert len(spy.calls("create_ticket")) == 1
