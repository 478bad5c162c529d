"""Approvers: interactive prompt, callbacks, scripted parsing, the factory."""

from __future__ import annotations

import io

import pytest
from gateway_testkit import run

from portagent.contracts.errors import ApprovalError, UsageError
from portagent.contracts.policy import ApprovalCard
from portagent.tools import (
    ApproverDecision,
    AutoApprove,
    AutoDeny,
    CallbackApprover,
    Defer,
    InteractiveApprover,
    ScriptedApprover,
    make_approver,
)

CARD = ApprovalCard(
    approval_id="apr_1",
    run_id="r",
    call_id="call_1",
    tool="send_email",
    tool_version="1.0.0",
    args={"to": "x@example.com"},
    args_hash="abc123abc123",
    reason="external effect",
    evidence=["ticket T-1042"],
    effect="external_effect",
    reversible=False,
    cost_usd=0.02,
    risk_score=0.4,
    created_at="2026-06-10T09:00:00.000Z",
    expires_at="2026-06-10T09:10:00.000Z",
)


def answers(*replies: str):
    it = iter(replies)

    def fn(prompt: str) -> str:
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return fn


@pytest.mark.parametrize(
    ("replies", "status", "args"),
    [
        (("a",), "approved", None),
        (("approve",), "approved", None),
        (("r", "not now"), "rejected", None),
        (("d",), "deferred", None),
        (("",), "deferred", None),
        ((), "deferred", None),  # end of input
        (("e", '{"to": "yo@example.com"}'), "edited", {"to": "yo@example.com"}),
        (("e", "{bad", "e", "[1]", "e", '{"to": "z"}'), "edited", {"to": "z"}),  # re-asks on bad JSON
        (("what", "huh", "no"), "deferred", None),  # three unknown answers
    ],
)
def test_interactive(replies, status, args):
    out = io.StringIO()
    d = run(InteractiveApprover(answers(*replies), out, reviewer="ana").decide(CARD))
    assert (d.status, d.args) == (status, args)
    shown = out.getvalue()
    assert "send_email@1.0.0" in shown and "IRREVERSIBLE" in shown and "ticket T-1042" in shown
    if replies[:1] == ("r",):
        assert d.note == "not now"


@pytest.mark.parametrize(
    ("value", "status"),
    [
        (True, "approved"),
        (False, "rejected"),
        (None, "deferred"),
        ("approve", "approved"),
        ("deny", "rejected"),
        ({"decision": "edit", "args": {"to": "y"}}, "edited"),
        ({"status": "rejected", "note": "n"}, "rejected"),
        (ApproverDecision("approved", "x"), "approved"),
    ],
)
def test_callback_return_values(value, status):
    assert run(CallbackApprover(lambda card: value).decide(CARD)).status == status

    async def async_fn(card):
        return value

    assert run(CallbackApprover(async_fn).decide(CARD)).status == status


@pytest.mark.parametrize("value", [42, {"nope": 1}, "maybe"])
def test_callback_nonsense_is_an_error(value):
    with pytest.raises(ApprovalError):
        run(CallbackApprover(lambda card: value).decide(CARD))


def test_edit_decision_needs_args():
    with pytest.raises(ApprovalError, match="edited arguments"):
        ApproverDecision("edited", "x")


def test_fixed_approvers():
    assert run(AutoApprove().decide(CARD)).status == "approved"
    assert run(AutoDeny().decide(CARD)).status == "rejected"
    assert run(Defer().decide(CARD)).status == "deferred"


def test_make_approver_from_names_dicts_and_callables():
    assert isinstance(make_approver("auto-approve"), AutoApprove)
    assert isinstance(make_approver("auto-deny"), AutoDeny)
    assert isinstance(make_approver("defer"), Defer)
    assert isinstance(make_approver(None), Defer)
    assert isinstance(make_approver("interactive"), InteractiveApprover)
    assert isinstance(make_approver({"type": "auto-deny"}), AutoDeny)
    scripted = make_approver({"type": "scripted", "decisions": [{"decision": "approve"}]})
    assert isinstance(scripted, ScriptedApprover) and scripted.unused == 1
    cb = make_approver({"type": "callback", "callback": "acceptance_tools:always_false"})
    assert isinstance(cb, CallbackApprover)
    assert isinstance(make_approver(lambda card: True), CallbackApprover)
    assert isinstance(make_approver("acceptance_tools:always_false"), CallbackApprover)
    existing = AutoApprove()
    assert make_approver(existing) is existing


@pytest.mark.parametrize(
    "spec",
    [
        "yes-please",
        {"type": "scripted"},
        {"type": "callback", "callback": 3},
        {"decisions": []},
        42,
        "no_such_module_xyz:fn",
    ],
)
def test_make_approver_errors_are_usage_errors(spec):
    with pytest.raises(UsageError):
        make_approver(spec)


@pytest.mark.parametrize(
    "entry",
    [
        {"tool": "x"},
        {"decision": "approve", "colour": "red"},
        {"decision": "edit"},
        "approve",
    ],
)
def test_scripted_entries_are_checked(entry):
    with pytest.raises(UsageError):
        ScriptedApprover([entry])


def test_scripted_prefers_keyed_then_tool_then_order():
    s = ScriptedApprover(
        [
            {"decision": "reject", "note": "any"},
            {"tool": "send_email", "decision": "defer"},
            {"tool": "send_email", "args_hash": "abc123abc123", "decision": "approve"},
        ]
    )
    assert run(s.decide(CARD)).status == "approved"
    assert run(s.decide(CARD)).status == "deferred"
    assert run(s.decide(CARD)).status == "rejected"
    with pytest.raises(ApprovalError, match="args_hash abc123abc123"):
        run(s.decide(CARD))
