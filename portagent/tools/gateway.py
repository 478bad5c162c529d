"""ToolGateway: the only place a tool handler is ever called (DESIGN §1.3, ADR 0001).

Pipeline, in this order (the first failing step answers, later steps never run):

    lookup → parse → schema → preconditions → budget → permission → approval     (prepare)
    → approval re-check (expiry, edited args) → idempotency (ledger) → execute
    → output schema → size limits                                                 (execute)

``prepare`` runs everything up to the approval decision and caches the result by ``call_id`` (and by
the vendor's call id), so SDK hooks that fire twice for one call — Claude's ``can_use_tool`` then the
tool itself — reuse the first decision. ``execute`` runs an allowed call once; a rejected call
returns its observation. Every call ends with exactly one ``tool.result`` event: a rejection emits it
in ``prepare`` (the SDK may never call the tool), an execution in ``execute``.

Trace events, in order: ``tool.call`` → ``permission.decision`` → ``approval.requested`` /
``approval.resolved`` → ``budget.exceeded`` (when the budget rejects) → ``tool.result``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from portagent.contracts._base import args_hash as compute_args_hash
from portagent.contracts._base import first_invalid_text
from portagent.contracts.errors import PortagentError
from portagent.contracts.policy import ApprovalCard, PermissionDecision, PermissionPolicy
from portagent.contracts.tool import ToolSpec
from portagent.contracts.trace import ToolVia
from portagent.core.clock import iso
from portagent.tools import approval_flow
from portagent.tools.approvals import ApprovalStore
from portagent.tools.approvers import Approver, make_approver
from portagent.tools.context import GatewayContext, evidence_of
from portagent.tools.execution import KeyMissingError, idempotency_key, invoke, run_idempotent
from portagent.tools.handlers import HandlerImportError, call_function, resolve
from portagent.tools.ledger import EffectLedger
from portagent.tools.observations import Observation
from portagent.tools.policy import PolicyEngine, normalize_args
from portagent.tools.validation import BadSchemaError, schema_errors, validator_for


@dataclass
class PreparedCall:
    """One call after ``prepare``: its identity, parsed arguments, decision, card, and — when it must
    not run — the observation that answers it."""

    call_id: str
    tool_name: str
    tool: ToolSpec | None
    args: Any
    args_hash: str
    via: ToolVia = "function"
    vendor_call_id: str | None = None
    decision: PermissionDecision | None = None
    card: ApprovalCard | None = None
    rejection: Observation | None = None
    result: Observation | None = None
    key: str | None = None
    reused: int | None = None
    """The attempt whose result answered this call instead of running it again (a resume), if any."""

    @property
    def allowed(self) -> bool:
        return self.rejection is None

    @property
    def effective_args(self) -> Any:
        """The arguments that will run (a reviewer's edit replaces the model's)."""
        if self.card is not None and self.card.effective_args is not None:
            return self.card.effective_args
        return self.args


def parse_args(raw: Any) -> tuple[Any, str | None]:
    """OpenAI sends a JSON string, Anthropic an object: both become a dict before anything else. Text that
    is not valid Unicode (a lone surrogate: JSON allows ``"\\udcff"``) cannot be hashed, stored or traced: it
    is replaced by U+FFFD and the call is refused as a validation error naming where it was."""
    if raw is None:
        return {}, None
    if isinstance(raw, str | bytes):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            return {}, None
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            return _replaced(
                text
            ), f"arguments are not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
    where = first_invalid_text(raw)
    if where is not None:
        return _replaced(raw), f"arguments hold text that is not valid Unicode (a lone surrogate) at {where}"
    return raw, None


def _copy_json(value: Any) -> Any:
    """``value``'s dicts and lists copied all the way down (what ``normalize_args`` used to hand on)."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _replaced(value: Any) -> Any:
    """``value`` with every lone surrogate replaced by U+FFFD (keys too)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replaced(k): _replaced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v) for v in value]
    return value


class ToolGateway:
    """Validates, authorizes, executes and observes every portable tool call of one run."""

    def __init__(
        self,
        tools: Iterable[ToolSpec] | Mapping[str, ToolSpec],
        context: GatewayContext | None = None,
        *,
        policy: PermissionPolicy | PolicyEngine | None = None,
        approver: Approver | str | dict[str, Any] | Any = "defer",
        approvals: ApprovalStore | None = None,
        ledger: EffectLedger | None = None,
    ) -> None:
        specs = list(tools.values()) if isinstance(tools, Mapping) else list(tools)
        self.tools: dict[str, ToolSpec] = {t.name: t for t in specs}
        self.context = context or GatewayContext()
        self.policy = policy if isinstance(policy, PolicyEngine) else PolicyEngine(policy)
        self.approver = make_approver(approver)
        self._approvals = approvals
        self._ledger = ledger
        self._prepared: dict[str, PreparedCall] = {}
        self._by_vendor: dict[str, str] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._calls = 0
        self.pending_approvals: list[str] = []
        self._governed: set[str] = set()
        self._card_context: dict[str, dict[str, Any]] = {}
        """Approval ids left pending by a deferred decision: the run ends ``waiting_approval``."""

    # -- lazily opened state (only approval-needing / idempotent tools touch SQLite) ----------------

    @property
    def approvals(self) -> ApprovalStore:
        if self._approvals is None:
            self._approvals = ApprovalStore(clock=self.context.clock)
        return self._approvals

    @property
    def ledger(self) -> EffectLedger:
        if self._ledger is None:
            self._ledger = EffectLedger(clock=self.context.clock)
        return self._ledger

    def emit(self, type: str, **fields: Any) -> None:
        if self.context.recorder is not None:
            fields.setdefault("agent", self.context.agent)
            self.context.recorder.emit(type, **fields)

    def prepared(self, call_id: str) -> PreparedCall | None:
        """The prepared call with this portagent or vendor call id."""
        return self._prepared.get(call_id) or self._prepared.get(self._by_vendor.get(call_id, ""))

    def _next_call_id(self) -> str:
        if self.context.recorder is not None:
            return self.context.recorder.next_call_id()
        self._calls += 1
        return f"call_{self._calls}"

    # -- public API ------------------------------------------------------------------------------------

    async def call(
        self,
        tool_name: str,
        raw_args: Any,
        *,
        vendor_call_id: str | None = None,
        via: ToolVia = "function",
        call_id: str | None = None,
        provider_details: Mapping[str, Any] | None = None,
    ) -> Observation:
        prepared = await self.prepare(
            tool_name,
            raw_args,
            vendor_call_id=vendor_call_id,
            via=via,
            call_id=call_id,
            provider_details=provider_details,
        )
        return await self.execute(prepared)

    async def prepare(
        self,
        tool_name: str,
        raw_args: Any,
        *,
        vendor_call_id: str | None = None,
        via: ToolVia = "function",
        call_id: str | None = None,
        provider_details: Mapping[str, Any] | None = None,
    ) -> PreparedCall:
        """Everything up to and including the approval decision, once per call. ``provider_details``
        (what the transport carried, e.g. ``mcp serve``'s incoming ``traceparent``) go on ``tool.call``."""
        cached = (self._prepared.get(call_id) if call_id else None) or (
            self.prepared(vendor_call_id) if vendor_call_id else None
        )
        if cached is not None:
            return cached
        call_id = call_id or self._next_call_id()
        self.context.budget.count_tool_call()
        tool = self.tools.get(tool_name)
        args, parse_error = parse_args(raw_args)
        sent = args
        normal = True
        if tool is not None and parse_error is None:
            # One form whichever provider sent the call (NFC text, numeric strings where the schema
            # wants numbers): the policy, the schema check, the handler and the trace all see it.
            args = normalize_args(tool.input_schema, sent)
            normal = args is sent  # nothing changed (normalize_args shares what it leaves alone)
            if sent is raw_args:  # the SDK's own object (not parsed here): the handler gets its own copy
                args = _copy_json(args)
        p = PreparedCall(call_id, tool_name, tool, args, compute_args_hash(args), via, vendor_call_id)
        self._prepared[call_id] = p
        if vendor_call_id:
            self._by_vendor[vendor_call_id] = call_id
        details: dict[str, Any] = {"vendor_call_id": vendor_call_id} if vendor_call_id else {}
        details.update(provider_details or {})
        # Unchanged by normalize_args (the same object back): nothing to compare. Changed, the form sent
        # is kept when it differs in value or in its canonical JSON (1.0 and 1 are equal but hash apart).
        if not normal and (sent != args or compute_args_hash(sent) != p.args_hash):
            details["args_as_sent"] = sent
        self.emit(
            "tool.call",
            call_id=call_id,
            tool=tool_name,
            tool_version=tool.version if tool else "",
            schema_hash=tool.schema_hash if tool else "",
            args=args,
            args_hash=p.args_hash,
            via=via,
            provider_details=details,
        )
        rejection = await self._checks(p, parse_error)
        if rejection is not None:
            p.rejection = rejection
            self._finish(p, rejection, None)
        return p

    async def execute(self, prepared: PreparedCall) -> Observation:
        """Run an allowed call (once, however often this is called); a rejected call returns its
        observation without touching the handler."""
        if (done := prepared.result) is not None:
            return done
        lock = self._locks.setdefault(prepared.call_id, asyncio.Lock())
        async with lock:
            # Checked again: a concurrent caller may have run the call while this one waited.
            if prepared.result is not None:
                return prepared.result
            obs, latency = await self._run(prepared)
            self._finish(prepared, obs, latency)
            self._charge_reported(prepared, obs)
            return obs

    # -- governed tools (run by the vendor runtime, decided here) --------------------------------------

    def register_governed(self, spec: ToolSpec, card_context: dict[str, Any] | None = None) -> None:
        """Declare a tool the vendor runtime executes itself (Claude Code's built-ins): the gateway
        validates and decides its calls like any other, but never runs a handler for it.
        ``card_context`` is shown on its approval cards (e.g. the working directory it runs in)."""
        self.tools.setdefault(spec.name, spec)
        self._governed.add(spec.name)
        if card_context:
            self._card_context[spec.name] = dict(card_context)

    def observe(
        self, prepared: PreparedCall, obs: Observation, latency_ms: float | None = None
    ) -> Observation:
        """Record the result of a governed call that the vendor runtime executed (once per call)."""
        if prepared.result is not None:
            return prepared.result
        self._finish(prepared, obs, latency_ms)
        return obs

    # -- prepare ---------------------------------------------------------------------------------------

    async def _checks(self, p: PreparedCall, parse_error: str | None) -> Observation | None:
        tool = p.tool
        if tool is None:
            return Observation.failure(
                "unknown_tool", f"unknown tool {p.tool_name!r}", {"available": sorted(self.tools)}
            )
        if parse_error is not None:
            return Observation.failure(
                "validation_error", parse_error, [{"path": "", "message": parse_error}]
            )
        problems = self.schema_problems(tool, p.args)
        if problems:
            return Observation.failure(
                "validation_error", f"arguments do not match {tool.name}'s input schema", problems
            )
        if tool.idempotency.required:
            try:
                p.key = idempotency_key(tool, p.args, p.args_hash)
            except KeyMissingError as e:
                return Observation.failure(
                    "validation_error",
                    str(e),
                    [{"path": tool.idempotency.key_field or "", "message": str(e)}],
                )
        failed = await self._preconditions(tool, p)
        if failed is not None:
            return failed
        budget = self.context.budget.check_tool(tool.cost_usd)
        if not budget.ok:
            self.emit("budget.exceeded", **budget.event_fields())
            return Observation.failure("budget_exhausted", budget.message, budget.event_fields())
        try:
            if self.policy.slow_for(tool):  # a time-limited regex may run: not on the event loop
                decision = await asyncio.to_thread(self.policy.decide, tool, p.args, self.context)
            else:
                decision = self.policy.decide(tool, p.args, self.context)
        except PortagentError as e:
            return Observation.failure(
                "validation_error",
                f"the run context is invalid: {e}",
                [{"path": "context", "message": str(e)}],
            )
        except Exception as e:  # an engine that fails to decide denies, the same on every provider
            decision = PermissionDecision(
                decision="deny",
                reason=f"the policy could not decide this call: {type(e).__name__}: {e}",
                rule="policy:error",
                policy_version=self.policy.version,
            )
        p.decision = decision
        self.emit(
            "permission.decision",
            call_id=p.call_id,
            decision=decision.decision,
            reason=decision.reason,
            rule=decision.rule,
            policy_version=decision.policy_version,
            risk_score=decision.risk_score,
        )
        if decision.decision == "deny":
            return Observation.failure(
                "permission_denied",
                decision.reason,
                {"rule": decision.rule, "policy_version": decision.policy_version},
            )
        if decision.decision == "approval_required":
            return await approval_flow.request(self, p, tool, decision)
        return None

    def schema_problems(self, tool: ToolSpec, args: Any) -> list[dict[str, Any]]:
        try:
            validator = validator_for(tool.input_schema, f"{tool.ref}:in:{tool.schema_hash}")
        except BadSchemaError as e:
            return [{"path": "", "message": f"{tool.name}'s input_schema is invalid: {e}"}]
        return schema_errors(validator, args)

    async def _preconditions(self, tool: ToolSpec, p: PreparedCall) -> Observation | None:
        failures: list[dict[str, Any]] = []
        for pre in tool.preconditions:
            try:
                fn = resolve(pre.check)
                verdict = await call_function(
                    fn,
                    (p.args, self.context.handler_context(p.call_id, p.key)),
                    {},
                    tool.budgets.timeout_ms / 1000.0,
                )
            except HandlerImportError as e:
                return Observation.failure(
                    "handler_error",
                    f"precondition {pre.name!r}: {e}",
                    {"precondition": pre.name, "check": pre.check},
                )
            except Exception as e:
                return Observation.failure(
                    "handler_error",
                    f"precondition {pre.name!r} raised {type(e).__name__}: {e}",
                    {"precondition": pre.name},
                )
            if verdict is True or verdict is None:
                continue
            message = verdict if isinstance(verdict, str) else (pre.message or f"{pre.name} does not hold")
            failures.append({"name": pre.name, "message": message})
        if failures:
            return Observation.failure(
                "precondition_failed", "; ".join(f["message"] for f in failures), failures
            )
        return None

    def new_card(self, p: PreparedCall, tool: ToolSpec, decision: PermissionDecision) -> ApprovalCard:
        now = self.context.clock.now()
        expiry = self.policy.policy.approval_expiry_s
        return ApprovalCard(
            approval_id=self.context.ids.approval_id(),
            run_id=self.context.run_id,
            call_id=p.call_id,
            tool=tool.name,
            tool_version=tool.version,
            args=p.args,
            args_hash=p.args_hash,
            reason=decision.reason,
            evidence=evidence_of(self.context.context),
            effect=tool.effect,
            reversible=tool.is_reversible,
            cost_usd=tool.cost_usd,
            risk_score=decision.risk_score,
            created_at=iso(now),
            expires_at=iso(now + timedelta(seconds=expiry)),
            scope=self.context.scope,
            context=self._card_context.get(tool.name, {}),
            **approval_flow.card_evidence(self, p),
        )

    # -- execute ---------------------------------------------------------------------------------------

    async def _run(self, p: PreparedCall) -> tuple[Observation, float | None]:
        tool = p.tool
        assert tool is not None and p.rejection is None
        if tool.name in self._governed:
            return Observation.failure(
                "handler_error",
                f"{tool.name!r} is executed by the vendor runtime; record its result with observe()",
            ), None
        earlier = self.context.earlier.take(tool.name, p.args_hash) if self.context.earlier else None
        if earlier is not None and p.card is None:  # a resumed attempt: this call already ran (ADR 0007)
            p.reused = self.context.earlier.attempt if self.context.earlier else None
            rejection = self._charge(tool)
            if rejection is not None:
                return rejection, None
            return Observation.success({k: v for k, v in earlier.items() if k != "ok"}), 0.0
        args = p.args
        if p.card is not None:
            checked = approval_flow.recheck(self, p, tool)
            if isinstance(checked, Observation):
                return checked, None
            args = checked
        if tool.idempotency.required:
            ah = compute_args_hash(args)
            try:
                key = idempotency_key(tool, args, ah)
            except KeyMissingError as e:
                return Observation.failure("validation_error", str(e)), None
            att = await run_idempotent(
                tool,
                args,
                ah,
                key,
                self.context,
                self.ledger,
                p.call_id,
                lambda: self._charge(tool),
                approval=p.card,
            )
            return att.obs, att.latency_ms
        rejection = self._charge(tool)
        if rejection is not None:
            return rejection, None
        att = await invoke(tool, args, self.context, p.call_id, approval=p.card)
        return att.obs, att.latency_ms

    def _charge(self, tool: ToolSpec) -> Observation | None:
        charged = self.context.budget.charge_tool(tool.cost_usd)
        if charged.ok:
            return None
        self.emit("budget.exceeded", **charged.event_fields())
        return Observation.failure("budget_exhausted", charged.message, charged.event_fields())

    def _charge_reported(self, p: PreparedCall, obs: Observation) -> None:
        """Charge what a remote A2A agent reported the call cost (its answer's ``cost_usd``) to the run's
        budget, beyond the ToolSpec's static ``cost_usd`` already charged. A duplicate (the ledger's earlier
        outcome) did no new work and is not charged. Over ``max_cost_usd`` the run stops after this call
        (``adapters/session_gateway.py``), as after an over-budget model call."""
        out = obs.output
        if not (obs.ok and not obs.duplicate and isinstance(out, dict) and "cost_usd" in out):
            return  # the common case, decided without importing the A2A bridge
        from portagent.tools.a2a.bridge import is_a2a_tool

        if not is_a2a_tool(p.tool):
            return
        reported = out.get("cost_usd")
        if isinstance(reported, bool) or not isinstance(reported, int | float):
            return
        from decimal import Decimal

        extra = Decimal(repr(float(reported))) - Decimal(repr(float(p.tool.cost_usd if p.tool else 0.0)))
        if extra > 0:
            self.context.budget.add_tool_cost(extra)

    def _finish(self, p: PreparedCall, obs: Observation, latency_ms: float | None) -> None:
        p.result = obs
        self.emit(
            "tool.result",
            call_id=p.call_id,
            tool=p.tool_name,
            ok=obs.ok,
            error=obs.error,
            output=obs.to_model(),
            latency_ms=latency_ms,
            effect_id=obs.effect_id,
            duplicate=obs.duplicate,
            **({"provider_details": {"reused_from_attempt": p.reused}} if p.reused is not None else {}),
        )
