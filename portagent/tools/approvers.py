"""Approvers: who decides an approval card inside the tool hook (DESIGN §3).

Every approver has ``async decide(card) -> ApproverDecision``. ``make_approver`` builds one from the
names used in configs and the CLI:

- ``"auto-approve"`` / ``"auto-deny"``;
- ``"defer"``: no decision now — the card stays pending, the run ends ``waiting_approval``;
- ``"interactive"``: a terminal prompt (``input_fn`` injectable for tests);
- ``{"type": "scripted", "decisions": [...]}``: decisions given in advance, each keyed by ``tool`` and
  ``args_hash`` (or ``call_args``, hashed for you); entries without a key are used in call order,
  only for cards no keyed entry matches — so parallel calls replay whatever order they arrive in;
- ``{"type": "callback", "callback": fn_or_"module:function"}`` or a bare callable: sync or async;
  it may return an ApproverDecision, a bool, None (defer), a status string or a dict.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TextIO

from portagent.contracts._base import args_hash as compute_args_hash
from portagent.contracts.errors import ApprovalError, UsageError
from portagent.contracts.policy import ApprovalCard
from portagent.core.terminal import printable

DecisionStatus = Literal["approved", "edited", "rejected", "deferred"]

_ALIASES: dict[str, DecisionStatus] = {
    "approve": "approved",
    "approved": "approved",
    "approve_once": "approved",
    "allow": "approved",
    "edit": "edited",
    "edited": "edited",
    "approve_with_changes": "edited",
    "reject": "rejected",
    "rejected": "rejected",
    "deny": "rejected",
    "defer": "deferred",
    "deferred": "deferred",
}


@dataclass(frozen=True)
class ApproverDecision:
    """A reviewer's answer to one card."""

    status: DecisionStatus
    reviewer: str
    args: dict[str, Any] | None = None
    """The edited arguments (``edited`` only)."""
    note: str = ""

    def __post_init__(self) -> None:
        if self.status == "edited" and not isinstance(self.args, dict):
            raise ApprovalError("an 'edit' decision needs the edited arguments as an object")


class Approver(Protocol):
    name: str

    async def decide(self, card: ApprovalCard) -> ApproverDecision: ...


def _status(value: str) -> DecisionStatus:
    try:
        return _ALIASES[value.strip().lower()]
    except KeyError:
        raise ApprovalError(
            f"unknown approval decision {value!r}; use approve, edit, reject or defer"
        ) from None


class AutoApprove:
    name = "auto-approve"

    async def decide(self, card: ApprovalCard) -> ApproverDecision:
        return ApproverDecision("approved", self.name)


class AutoDeny:
    name = "auto-deny"

    async def decide(self, card: ApprovalCard) -> ApproverDecision:
        return ApproverDecision("rejected", self.name, note="rejected automatically (auto-deny)")


class Defer:
    name = "defer"

    async def decide(self, card: ApprovalCard) -> ApproverDecision:
        return ApproverDecision("deferred", self.name)


@dataclass
class _Scripted:
    status: DecisionStatus
    tool: str | None
    args_hash: str | None
    args: dict[str, Any] | None
    reviewer: str
    note: str
    used: bool = False


class ScriptedApprover:
    """Decisions listed in advance (an eval case or cassette)."""

    name = "scripted"

    def __init__(self, decisions: list[dict[str, Any]]) -> None:
        self._entries = [self._parse(i, d) for i, d in enumerate(decisions)]
        self._lock = threading.Lock()

    @staticmethod
    def _parse(i: int, d: object) -> _Scripted:
        if not isinstance(d, dict) or "decision" not in d:
            raise UsageError(f"scripted approval #{i + 1}: expected an object with 'decision', got {d!r}")
        known = {"decision", "tool", "args_hash", "call_args", "args", "reviewer", "note"}
        extra = sorted(set(d) - known)
        if extra:
            raise UsageError(
                f"scripted approval #{i + 1}: unknown field(s) {extra}; allowed: {sorted(known)}"
            )
        status = _status(str(d["decision"]))
        ah = d.get("args_hash") or (compute_args_hash(d["call_args"]) if "call_args" in d else None)
        if status == "edited" and not isinstance(d.get("args"), dict):
            raise UsageError(f"scripted approval #{i + 1}: 'edit' needs 'args' (the edited arguments)")
        return _Scripted(
            status,
            d.get("tool"),
            ah,
            d.get("args"),
            str(d.get("reviewer", "scripted")),
            str(d.get("note", "")),
        )

    def _pick(self, card: ApprovalCard) -> _Scripted | None:
        def keyed(e: _Scripted) -> bool:
            return e.args_hash is not None and e.args_hash == card.args_hash and e.tool in (None, card.tool)

        def by_tool(e: _Scripted) -> bool:
            return e.args_hash is None and e.tool == card.tool

        def anything(e: _Scripted) -> bool:
            return e.args_hash is None and e.tool is None

        for test in (keyed, by_tool, anything):
            for e in self._entries:
                if not e.used and test(e):
                    e.used = True
                    return e
        return None

    async def decide(self, card: ApprovalCard) -> ApproverDecision:
        with self._lock:
            e = self._pick(card)
        if e is None:
            raise ApprovalError(
                f"no scripted approval decision for {card.tool} (args_hash {card.args_hash}); add one with "
                f"tool: {card.tool} and args_hash: {card.args_hash}"
            )
        return ApproverDecision(e.status, e.reviewer, e.args if e.status == "edited" else None, e.note)

    @property
    def unused(self) -> int:
        return sum(1 for e in self._entries if not e.used)


def render_card(card: ApprovalCard, consumed_by: str | None = None) -> str:
    """A card as a reviewer reads it (``approvals show``, the interactive approver): the action and
    why, the evidence that led to it (user input, earlier tool results, the run's context evidence),
    the run's spend so far, and exactly what runs on approval."""

    def js(v: object) -> str:
        return json.dumps(v, ensure_ascii=False, sort_keys=True)

    lines = [
        f"approval   {card.approval_id}  [{card.status}]",
        f"tool       {card.tool}@{card.tool_version}  ({card.effect}, "
        f"{'reversible' if card.reversible else 'IRREVERSIBLE'})",
        f"run        {card.run_id}  call {card.call_id}  scope {card.scope or '-'}",
        f"reason     {card.reason}",
        f"args       {js(card.args)}",
    ]
    if card.context:
        lines.append(f"context    {js(card.context)}")
    lines.append(
        f"cost       {card.cost_usd:g} USD"
        + (f"   risk {card.risk_score}" if card.risk_score is not None else "")
    )
    if card.spend is not None:
        s = card.spend
        lines.append(
            f"spent      {s.cost_usd:g} USD so far · {s.tool_calls} tool call(s) · {s.turns} turn(s)"
        )
    lines.append("evidence")
    shown = 0
    for item in card.inputs:
        lines.append(f"  user     {item.id}: {item.excerpt}")
        shown += 1
    for item in card.prior_results:
        state = "ok" if item.ok else "failed"
        lines.append(f"  result   {item.id} {item.tool or '?'} ({state}): {item.excerpt}")
        shown += 1
    for text in card.evidence:
        lines.append(f"  context  {text}")
        shown += 1
    if not shown:
        lines.append("  (none: no user input, earlier tool result or context evidence reached the call)")
    runs = card.effective_args if card.effective_args is not None else card.args
    lines.append(
        f"on approve {card.tool}@{card.tool_version} ({card.effect}) with {js(runs)}"
        + (f"  idempotency key {card.idempotency_key}" if card.idempotency_key else "")
    )
    lines += [
        f"created    {card.created_at}",
        f"expires    {card.expires_at}",
        f"choices    {', '.join(card.choices)}",
    ]
    if card.status != "pending":
        lines.append(
            f"decided    {card.decided_at or '-'} by {card.reviewer or '-'}"
            + (f": {card.note}" if card.note else "")
        )
    if card.status_reason:
        lines.append(f"why {card.status:<7}{card.status_reason}")
    if card.effective_args is not None and card.effective_args != card.args:
        lines.append(f"effective  {js(card.effective_args)}")
    if consumed_by:
        lines.append(f"used by    {consumed_by}")
    # excerpts, reasons and arguments come from the model, tools and users: one card line each, with
    # escape sequences shown, not obeyed (one could erase the IRREVERSIBLE line above it)
    return "\n".join(printable(line) for line in lines)


class InteractiveApprover:
    """Asks on the terminal: approve / edit / reject / defer."""

    name = "interactive"

    def __init__(
        self, input_fn: Callable[[str], str] = input, output: TextIO | None = None, reviewer: str = "terminal"
    ) -> None:
        self.input_fn = input_fn
        self.output = output
        self.reviewer = reviewer

    def _ask(self, card: ApprovalCard) -> ApproverDecision:
        out = self.output or sys.stderr
        out.write(render_card(card) + "\n")
        out.flush()
        for _ in range(3):
            try:
                answer = self.input_fn("[a]pprove, [e]dit, [r]eject, [d]efer? ").strip().lower()
            except EOFError:
                return ApproverDecision("deferred", self.reviewer, note="no answer (end of input)")
            if answer in ("a", "approve"):
                return ApproverDecision("approved", self.reviewer)
            if answer in ("r", "reject"):
                note = self._safe_input("reason (optional): ")
                return ApproverDecision("rejected", self.reviewer, note=note)
            if answer in ("d", "defer", ""):
                return ApproverDecision("deferred", self.reviewer)
            if answer in ("e", "edit"):
                raw = self._safe_input("edited arguments as JSON: ")
                try:
                    args = json.loads(raw)
                except json.JSONDecodeError as e:
                    out.write(f"not valid JSON ({e.msg}); try again\n")
                    continue
                if not isinstance(args, dict):
                    out.write("the arguments must be a JSON object; try again\n")
                    continue
                return ApproverDecision("edited", self.reviewer, args=args)
            out.write(f"unknown answer {answer!r}\n")
        return ApproverDecision("deferred", self.reviewer, note="no valid answer")

    def _safe_input(self, prompt: str) -> str:
        try:
            return self.input_fn(prompt).strip()
        except EOFError:
            return ""

    def edit_refused(self, problems: list[str]) -> None:
        """The gateway refused the edit just made (schema, policy): say why; the card is shown again."""
        out = self.output or sys.stderr
        out.write("the edit was refused: " + "; ".join(problems) + "; decide again\n")
        out.flush()

    async def decide(self, card: ApprovalCard) -> ApproverDecision:
        return await asyncio.to_thread(self._ask, card)


class CallbackApprover:
    """A Python callable (sync or async) decides."""

    name = "callback"

    def __init__(self, fn: Callable[[ApprovalCard], Any], reviewer: str = "callback") -> None:
        self.fn = fn
        self.reviewer = reviewer

    async def decide(self, card: ApprovalCard) -> ApproverDecision:
        value = self.fn(card)
        if inspect.isawaitable(value):
            value = await value
        return self._normalize(value)

    def _normalize(self, value: Any) -> ApproverDecision:
        if isinstance(value, ApproverDecision):
            return value
        if value is None:
            return ApproverDecision("deferred", self.reviewer)
        if isinstance(value, bool):
            return ApproverDecision("approved" if value else "rejected", self.reviewer)
        if isinstance(value, str):
            return ApproverDecision(_status(value), self.reviewer)
        if isinstance(value, dict):
            raw = value.get("status", value.get("decision"))
            if not isinstance(raw, str):
                raise ApprovalError(f"approval callback returned {value!r}: expected 'decision' or 'status'")
            return ApproverDecision(
                _status(raw),
                str(value.get("reviewer", self.reviewer)),
                value.get("args"),
                str(value.get("note", "")),
            )
        raise ApprovalError(
            f"approval callback returned {value!r}; expected a decision, bool, str, dict or None"
        )


NAMES = ("auto-approve", "auto-deny", "defer", "interactive", "scripted", "callback")


def make_approver(spec: str | dict[str, Any] | Approver | Callable[[ApprovalCard], Any] | None) -> Approver:
    """An approver from a config/CLI name, a dict, a callable, or an approver (returned as is)."""
    if spec is None:
        return Defer()
    if isinstance(spec, str):
        simple: dict[str, Callable[[], Approver]] = {
            "auto-approve": AutoApprove,
            "auto-deny": AutoDeny,
            "defer": Defer,
            "interactive": InteractiveApprover,
        }
        if spec in simple:
            return simple[spec]()
        if ":" in spec:
            return CallbackApprover(_import_callable(spec))
        raise UsageError(f"unknown approver {spec!r}; use one of {', '.join(NAMES)} or 'module:function'")
    if isinstance(spec, dict):
        kind = spec.get("type")
        if kind == "scripted":
            decisions = spec.get("decisions")
            if not isinstance(decisions, list):
                raise UsageError("a scripted approver needs 'decisions': a list")
            return ScriptedApprover(decisions)
        if kind == "callback":
            fn = spec.get("callback")
            fn = _import_callable(fn) if isinstance(fn, str) else fn
            if not callable(fn):
                raise UsageError("a callback approver needs 'callback': a callable or 'module:function'")
            return CallbackApprover(fn, str(spec.get("reviewer", "callback")))
        if isinstance(kind, str):
            return make_approver(kind)
        raise UsageError(f"approver spec needs 'type' (one of {', '.join(NAMES)}), got {spec!r}")
    if hasattr(spec, "decide"):
        return spec  # type: ignore[return-value]
    if callable(spec):
        return CallbackApprover(spec)
    raise UsageError(f"cannot make an approver from {spec!r}")


def _import_callable(ref: str) -> Callable[..., Any]:
    from portagent.tools.handlers import HandlerImportError, resolve

    try:
        return resolve(ref).fn
    except HandlerImportError as e:
        raise UsageError(f"approval callback: {e}") from e
