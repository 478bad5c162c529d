"""The approval step of the gateway: create or reuse a card, ask the approver, and — right before a
call runs — re-check the card (expiry, edited arguments).

A resumed run (same scope, same tool and arguments) finds the card the previous attempt left: a
decided card applies without asking again; a pending one is put to the approver again; an expired
pending one is marked expired and replaced by a new card.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from portagent.contracts.errors import ApprovalError
from portagent.contracts.policy import ApprovalCard, CardEvidence, CardSpend, PermissionDecision
from portagent.contracts.tool import ToolSpec
from portagent.core.secrets import mask_text
from portagent.tools.approvals import ApprovalIdTaken, edit_problems, parse_ts, recheck_material
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


def _approved_effect_unsettled(gw: ToolGateway, p: PreparedCall, tool: ToolSpec) -> ApprovalCard | None:
    """The card that approved this exact call when the ledger holds its effect's intent without an outcome
    (the attempt that ran it died mid-effect). Asking a person again would be asking them to approve what
    may already have happened: the card that approved it is used again, and execution settles the
    effect — the tool's ``reconcile`` finds out whether it happened, else a ``conflict`` says it is
    unknown — exactly as for a call that needed no approval."""
    if not tool.idempotency.required or p.key is None:
        return None
    entry = gw.ledger.get(gw.context.scope, tool.name, p.key)
    if entry is None or entry.state != "pending" or entry.args_hash != p.args_hash:
        return None
    return gw.approvals.last_approved(gw.context.scope, tool.name, p.args_hash)


async def request(
    gw: ToolGateway, p: PreparedCall, tool: ToolSpec, decision: PermissionDecision
) -> Observation | None:
    """Returns the rejection (deferred, rejected, approver failure) or None when the call may run."""
    if _ledger_already_done(gw, p, tool):
        return None
    unsettled = _approved_effect_unsettled(gw, p, tool)
    if unsettled is not None:
        p.card = unsettled
        _resolved(gw, p, unsettled)
        return None  # execute(): recheck (expiry), then the ledger's pending intent → reconcile or conflict
    if gw.context.earlier is not None and gw.context.earlier.has(tool.name, p.args_hash):
        return None  # it ran, approved, in the attempt before this resume: its result answers it (ADR 0007)
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
        answer, refused = await _decision(gw, card, tool)
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
        if refused:  # an edit the schema or the policy refuses is never stored as the decision
            note = "the edited arguments were refused: " + "; ".join(problem_lines(refused))
            card = store.reject(card.approval_id, answer.reviewer, note)
        elif answer.status == "approved":
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
        if refused:  # as a refused edit made with the CLI is answered at execution (``recheck``)
            return Observation.failure(
                "approval_rejected",
                card.note or "",
                {
                    "approval_id": card.approval_id,
                    "reviewer": card.reviewer,
                    "edit_refused": True,
                    "problems": refused,
                },
            )
        return _rejected(card, tool.name)
    return None


EDIT_ROUNDS = 3
"""How many times an approver that can hear why (``edit_refused``) is asked again after a refused edit."""


async def _decision(gw: ToolGateway, card: ApprovalCard, tool: ToolSpec) -> tuple[Any, list[dict[str, Any]]]:
    """The approver's answer, and the problems of the edit it made when the edit is refused (``[]``
    otherwise). An edit is checked when it is made, as ``approvals edit`` checks one (``revalidate``):
    the schema, and the policy with its scopes. An approver with ``edit_refused(problems)`` (the terminal's)
    is told why and asked again; any other (a callback, a script) would answer the same, so its refused
    edit comes back with its problems and the card is rejected with them — never stored as ``edited``
    with arguments that could not run."""
    problems: list[dict[str, Any]] = []
    for _ in range(EDIT_ROUNDS):
        answer = await gw.approver.decide(card)
        if answer.status != "edited":
            return answer, []
        problems = revalidate(gw, tool, answer.args)
        told = getattr(gw.approver, "edit_refused", None)
        if not problems or told is None:
            return answer, problems
        told(problem_lines(problems))
    return answer, problems


def problem_lines(problems: list[dict[str, Any]]) -> list[str]:
    """Each problem of a refused edit as ``approvals edit`` words it: ``path: message``."""
    return [f"{x.get('path') or '(arguments)'}: {x['message']}" for x in problems]


def _create(gw: ToolGateway, p: PreparedCall, tool: ToolSpec, decision: PermissionDecision) -> ApprovalCard:
    """A new pending card. A seeded id factory restarted for a new attempt of the same run replays the
    ids of the earlier attempt, so a taken id is skipped (deterministically: the factory's next id).
    The store also keeps what ``approvals edit`` needs to check an edit the way the run will: the tool
    spec, the policy and the run context the call was decided with (``recheck_material``)."""
    material = recheck_material(tool, gw.policy.policy, gw.context)
    for _ in range(16):
        try:
            return gw.approvals.create(
                gw.new_card(p, tool, decision), input_schema=tool.input_schema, recheck=material
            )
        except ApprovalIdTaken:
            continue
    raise ApprovalError("could not allocate a fresh approval id after 16 attempts")


EXCERPT_CHARS = 200
"""Length of one evidence excerpt on a card."""
MAX_INPUTS = 3
"""User inputs shown on a card (the latest)."""
MAX_RESULTS = 5
"""Earlier tool results shown on a card (the latest)."""


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """Masked, then cut (cutting first could leave half a secret that no longer looks like one)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = " ".join(mask_text(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _user_inputs(value: Any) -> list[CardEvidence]:
    """The user's part of a run input: the text; or, for a list (turns or messages), each string and
    each ``role: user`` message (the latest few), named ``input[<n>]`` by its place in the list."""
    if value is None or value == "":
        return []
    if not isinstance(value, list):
        return [CardEvidence(kind="user_input", id="input", excerpt=excerpt(value))]
    users: list[tuple[int, Any]] = []
    for i, m in enumerate(value):
        if isinstance(m, dict):
            if m.get("role", "user") == "user":
                users.append((i, m.get("content", m)))
        else:
            users.append((i, m))
    return [
        CardEvidence(kind="user_input", id=f"input[{i}]", excerpt=excerpt(v)) for i, v in users[-MAX_INPUTS:]
    ]


def card_evidence(gw: ToolGateway, p: PreparedCall) -> dict[str, Any]:
    """The card fields that show why the call is being made and what the run has spent: the run's
    user input(s), the tool results before this call (both from the run's own trace, masked and
    excerpted), the spend so far, and the idempotency key the call would run under."""
    inputs: list[CardEvidence] = []
    results: list[CardEvidence] = []
    budget = gw.context.budget
    calls, turns = max(budget.tool_calls - 1, 0), budget.turns
    recorder = gw.context.recorder
    if recorder is not None:  # the run's trace: what the runner itself counts turns and calls from
        turns = len(recorder.of_type("model.call"))
        calls = sum(1 for e in recorder.of_type("tool.call") if e.call_id != p.call_id)
        started = recorder.of_type("run.started")
        if started:
            inputs = _user_inputs(started[-1].input)
        done = [e for e in recorder.of_type("tool.result") if e.call_id != p.call_id]
        results = [
            CardEvidence(
                kind="tool_result", id=e.call_id, tool=e.tool or None, ok=e.ok, excerpt=excerpt(e.output)
            )
            for e in done[-MAX_RESULTS:]
        ]
    spend = CardSpend(cost_usd=budget.cost_usd, tool_calls=calls, turns=turns)
    return {"inputs": inputs, "prior_results": results, "spend": spend, "idempotency_key": p.key}


def _expired(gw: ToolGateway, card: ApprovalCard) -> bool:
    return gw.context.clock.now() > parse_ts(card.expires_at)


def revalidate(gw: ToolGateway, tool: ToolSpec, args: Any) -> list[dict[str, Any]]:
    """Edited arguments must pass the schema, and the policy (scopes included) must not deny them —
    the same check ``approvals edit`` makes when the edit is given (``approvals.edit_problems``)."""
    problems, _ = edit_problems(tool, gw.policy, gw.context, args, key=False)
    return problems


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
