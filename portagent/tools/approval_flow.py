"""The approval step of the gateway: create or reuse a card, ask the approver, and — right before a
call runs — re-check the card (expiry, edited arguments).

A resumed run (same scope, same tool and arguments) finds the card the previous attempt left: a
decided card applies without asking again; a pending one is put to the approver again; an expired
pending one is marked expired and replaced by a new card.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from portagent.contracts.errors import ApprovalError
from portagent.contracts.policy import ApprovalCard, PermissionDecision
from portagent.contracts.tool import ToolSpec
from portagent.tools.approvals import ApprovalIdTaken, parse_ts
from portagent.tools.observations import Observation

if TYPE_CHECKING:
    from portagent.tools.gateway import PreparedCall, ToolGateway


def _resolved(gw: ToolGateway, p: PreparedCall, card: ApprovalCard) -> None:
    gw.emit(
        "approval.resolved",
        approval_id=card.approval_id,
        call_id=p.call_id,
        status=card.status,
        reviewer=card.reviewer,
        effective_args=card.effective_args,
        note=card.note,
    )


def _rejected(card: ApprovalCard, tool: str) -> Observation:
    who = card.reviewer or "the reviewer"
    note = f": {card.note}" if card.note else ""
    return Observation.failure(
        "approval_rejected",
        f"{who} rejected {tool}{note}",
        {"approval_id": card.approval_id, "reviewer": card.reviewer, "note": card.note},
    )


def _ledger_already_done(gw: ToolGateway, p: PreparedCall, tool: ToolSpec) -> bool:
    """An effect already recorded for this key needs no new approval: execution answers duplicate."""
    if not tool.idempotency.required or p.key is None:
        return False
    entry = gw.ledger.get(gw.context.scope, tool.name, p.key)
    return entry is not None and entry.state == "done" and entry.args_hash == p.args_hash


async def request(
    gw: ToolGateway, p: PreparedCall, tool: ToolSpec, decision: PermissionDecision
) -> Observation | None:
    """Returns the rejection (deferred, rejected, approver failure) or None when the call may run."""
    if _ledger_already_done(gw, p, tool):
        return None
    store = gw.approvals
    existing = store.find(gw.context.scope, tool.name, p.args_hash)
    if existing is not None and existing.status == "pending" and _expired(gw, existing):
        store.expire(existing.approval_id)
        existing = None
    if existing is not None and existing.status != "pending":
        p.card = existing
        _resolved(gw, p, existing)
        if existing.status == "rejected":
            store.mark_consumed(existing.approval_id, p.call_id)
            return _rejected(existing, tool.name)
        return None  # approved / edited: execute() re-checks expiry and the edited arguments
    card = existing or _create(gw, p, tool, decision)
    p.card = card
    gw.emit(
        "approval.requested",
        approval_id=card.approval_id,
        call_id=p.call_id,
        card=card.model_dump(mode="json"),
    )
    try:
        answer = await gw.approver.decide(card)
    except Exception as e:  # a broken approver must not let the call through, nor crash the run
        message = f"approver {getattr(gw.approver, 'name', '?')!r} failed: {e}"
        try:
            card = store.reject(card.approval_id, reviewer="portagent", note=message)
        except ApprovalError:
            card = store.get(card.approval_id)
        p.card = card
        _resolved(gw, p, card)
        store.mark_consumed(card.approval_id, p.call_id)
        return Observation.failure("approval_rejected", message, {"approval_id": card.approval_id})
    if answer.status == "deferred":
        gw.pending_approvals.append(card.approval_id)
        return Observation.failure(
            "approval_required",
            decision.reason,
            {
                "approval_id": card.approval_id,
                "expires_at": card.expires_at,
                "rule": decision.rule,
                "risk_score": decision.risk_score,
            },
            extra={"approval_id": card.approval_id},
        )
    try:
        if answer.status == "approved":
            card = store.approve(card.approval_id, answer.reviewer, answer.note)
        elif answer.status == "edited":
            assert answer.args is not None
            card = store.edit(card.approval_id, answer.args, answer.reviewer, answer.note, validate=False)
        else:
            card = store.reject(card.approval_id, answer.reviewer, answer.note)
    except ApprovalError as e:  # e.g. the card expired while the reviewer was looking at it
        card = store.get(card.approval_id)
        p.card = card
        _resolved(gw, p, card)
        store.mark_consumed(card.approval_id, p.call_id)
        return Observation.failure(
            "approval_rejected", str(e), {"approval_id": card.approval_id, "status": card.status}
        )
    p.card = card
    _resolved(gw, p, card)
    if card.status == "rejected":
        store.mark_consumed(card.approval_id, p.call_id)
        return _rejected(card, tool.name)
    return None


def _create(gw: ToolGateway, p: PreparedCall, tool: ToolSpec, decision: PermissionDecision) -> ApprovalCard:
    """A new pending card. A seeded id factory restarted for a new attempt of the same run replays the
    ids of the earlier attempt, so a taken id is skipped (deterministically: the factory's next id)."""
    for _ in range(16):
        try:
            return gw.approvals.create(gw.new_card(p, tool, decision), input_schema=tool.input_schema)
        except ApprovalIdTaken:
            continue
    raise ApprovalError("could not allocate a fresh approval id after 16 attempts")


def _expired(gw: ToolGateway, card: ApprovalCard) -> bool:
    return gw.context.clock.now() > parse_ts(card.expires_at)


def revalidate(gw: ToolGateway, tool: ToolSpec, args: Any) -> list[dict[str, Any]]:
    """Edited arguments must pass the schema, and the policy (scopes included) must not deny them."""
    problems = gw.schema_problems(tool, args)
    if problems:
        return problems
    decision = gw.policy.decide(tool, args, gw.context)
    if decision.decision == "deny":
        return [
            {
                "path": "",
                "message": f"the policy denies the edited arguments: {decision.reason}",
                "rule": decision.rule,
            }
        ]
    return []


def recheck(gw: ToolGateway, p: PreparedCall, tool: ToolSpec) -> dict[str, Any] | Observation:
    """Right before execution: the card must still be approved/edited and unexpired; edited arguments
    are re-validated. Returns the arguments to run, or the rejection."""
    store = gw.approvals
    assert p.card is not None
    card = store.get(p.card.approval_id)
    p.card = card
    store.mark_consumed(card.approval_id, p.call_id)
    if card.status not in ("approved", "edited"):
        return Observation.failure(
            "approval_rejected",
            f"approval {card.approval_id} is {card.status}",
            {"approval_id": card.approval_id, "status": card.status},
        )
    if _expired(gw, card):
        with contextlib.suppress(ApprovalError):  # already expired by someone else
            store.expire(card.approval_id)
        return Observation.failure(
            "approval_rejected",
            f"approval {card.approval_id} expired at {card.expires_at} before the call ran",
            {"approval_id": card.approval_id, "expired": True, "expires_at": card.expires_at},
        )
    if card.status == "approved":
        return dict(p.args)
    args = dict(card.effective_args or {})
    problems = revalidate(gw, tool, args)
    if problems:
        return Observation.failure(
            "approval_rejected",
            "the edited arguments were refused: " + "; ".join(x["message"] for x in problems),
            {"approval_id": card.approval_id, "edit_refused": True, "problems": problems},
        )
    return args
