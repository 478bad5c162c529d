"""Building one run's gateways from a RunSession (the seam between the session and the gateway).

One ``ToolGateway`` per agent (its tools, its policy), all sharing the run's budget, trace recorder,
approver, approval store and ledger namespace (``RunSession.approvals``). The wrapper turns a deferred
approval into the session's ``ApprovalPause`` signal, and a run-level budget rejection into its
``BudgetStop``, so every adapter ends the run the same way. It also checks the arguments of a call to an
agent-as-tool (``delegation_task``), which no ToolSpec describes, the way the gateway checks a tool's.
"""

from __future__ import annotations

import weakref
from typing import Any

from portagent.adapters.port import ApprovalPause, BudgetStop, RunSession
from portagent.contracts._base import args_hash
from portagent.contracts.bundle import AgentNode
from portagent.contracts.tool import ToolSpec
from portagent.contracts.trace import ToolVia
from portagent.tools.context import GatewayContext
from portagent.tools.gateway import PreparedCall, ToolGateway, parse_args
from portagent.tools.mcp.bridge import is_mcp_tool
from portagent.tools.observations import Observation
from portagent.tools.validation import schema_errors, validator_for

AGENT_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string"}},
    "required": ["input"],
    "additionalProperties": False,
}
"""What an agent-as-tool takes, on every provider: the task as text."""


def delegation_check(target: str, raw_args: object) -> tuple[Any, Observation | None]:
    """The arguments of a call to the agent-as-tool ``target`` as parsed (the raw text when they are not
    JSON), and the ``validation_error`` refusing them when they do not match ``AGENT_TOOL_SCHEMA`` (None:
    ``args["input"]`` is the task). Adapters (``SessionGateway.delegation_task``) and exported programs
    (``migration.exported``) refuse alike."""
    args, parse_error = parse_args(raw_args)
    if parse_error is not None:
        return args, Observation.failure(
            "validation_error", parse_error, [{"path": "", "message": parse_error}]
        )
    problems = schema_errors(validator_for(AGENT_TOOL_SCHEMA, "adapters:agent-as-tool:in"), args)
    if problems:
        return args, Observation.failure(
            "validation_error", f"arguments do not match {target}'s input schema", problems
        )
    return args, None


def trace_refused_delegation(
    gateway: ToolGateway,
    call_id: str,
    target: str,
    args: Any,
    refusal: Observation,
    vendor_call_id: str | None,
) -> None:
    """A refused call to the agent-as-tool ``target`` in the trace, as a tool call refused for its arguments
    is: its ``tool.call`` (``via: agent``, the arguments as sent) and its ``tool.result``."""
    details = {"vendor_call_id": vendor_call_id} if vendor_call_id else {}
    gateway.emit(
        "tool.call", call_id=call_id, tool=target, args=args, args_hash=args_hash(args), via="agent",
        provider_details=details,
    )  # fmt: skip
    gateway.emit(
        "tool.result", call_id=call_id, tool=target, ok=False, error=refusal.error, output=refusal.to_model()
    )


RUN_LEVEL_LIMITS = ("max_tool_calls", "max_cost_usd")
"""Budgets of the whole run a tool call can exhaust (a tool's own limits only fail that call)."""


class SessionGateway:
    """A ToolGateway bound to a RunSession: same API, plus the approval-pause and budget-stop signals.

    The session keeps its gateways; a gateway keeps its session by a weak reference, so the two make no
    reference cycle and a finished run is freed at once (a run's objects left as cycles made the garbage
    collector run about twice as often, and its full collections longer)."""

    def __init__(self, session: RunSession, gateway: ToolGateway) -> None:
        self._session = weakref.ref(session)
        self.inner = gateway
        self._seen = 0

    @property
    def session(self) -> RunSession:
        """The run this gateway belongs to (alive for as long as the run is: the runner holds it)."""
        session = self._session()
        if session is None:
            raise RuntimeError("this tool gateway's run has ended")
        return session

    @property
    def tools(self) -> dict[str, ToolSpec]:
        return self.inner.tools

    @property
    def pending_approvals(self) -> list[str]:
        return self.inner.pending_approvals

    def prepared(self, call_id: str) -> PreparedCall | None:
        return self.inner.prepared(call_id)

    def register_governed(self, spec: ToolSpec, card_context: dict[str, Any] | None = None) -> None:
        """A tool the vendor runtime executes (Claude Code built-ins): decided here, never run here."""
        self.inner.register_governed(spec, card_context)

    def observe(
        self, prepared: PreparedCall, obs: Observation, latency_ms: float | None = None
    ) -> Observation:
        """Record the result of a governed call the vendor runtime executed."""
        return self.inner.observe(prepared, obs, latency_ms)

    def _pause_if_deferred(self, call_id: str) -> None:
        pending = self.inner.pending_approvals
        if len(pending) > self._seen:
            self._seen = len(pending)
            raise self.session.signal(ApprovalPause(pending[-1], call_id))

    async def prepare(
        self,
        tool_name: str,
        raw_args: object,
        *,
        vendor_call_id: str | None = None,
        via: ToolVia = "function",
    ) -> PreparedCall:
        self.session.check_stopped()
        if is_mcp_tool(self.inner.tools.get(tool_name)):
            via = "mcp"  # a tool sourced from an MCP server (docs/mcp.md), whichever SDK hook reached it
        p = await self.inner.prepare(tool_name, raw_args, vendor_call_id=vendor_call_id, via=via)
        if p.rejection is not None:
            self._stop_if_budget_exhausted(p.rejection)  # ends the run after the rejection is traced
        self._pause_if_deferred(p.call_id)
        return p

    async def execute(self, prepared: PreparedCall) -> Observation:
        self.session.check_stopped()
        obs = await self.inner.execute(prepared)
        self._stop_if_budget_exhausted(obs)
        from portagent.adapters.memory_trace import emit_memory_event

        emit_memory_event(self.session, prepared, obs)  # memory.read / memory.write for the memory tools
        self._stop_if_overspent()
        return obs

    async def call(
        self,
        tool_name: str,
        raw_args: object,
        *,
        vendor_call_id: str | None = None,
        via: ToolVia = "function",
    ) -> Observation:
        """Prepare and execute one call. Calls of one run are serialized in arrival order: SDKs run
        parallel tool calls concurrently, and a deterministic trace needs one order."""
        async with self.session.tool_lock:
            prepared = await self.prepare(tool_name, raw_args, vendor_call_id=vendor_call_id, via=via)
            return await self.execute(prepared)

    async def delegation_task(
        self, target: str, raw_args: object, *, vendor_call_id: str | None = None
    ) -> str | Observation:
        """The task of a call to the agent-as-tool ``target`` once its arguments match
        ``AGENT_TOOL_SCHEMA``; else the ``validation_error`` the model is answered with, the gateway's own
        (details, ``next_allowed``), so the sub-agent never runs on a missing or mistyped task.

        A refused call is traced as an ordinary tool's call refused for its arguments is: a ``tool.call``
        (``via: agent``, the arguments as sent: the raw text when they are not JSON) and its
        ``tool.result``, so trajectory and forbidden-tool checks see the attempt. An accepted call is
        traced by the adapter as the ``handoff`` event it has always been. Neither counts toward
        ``max_tool_calls``: delegations are bounded by ``max_turns``, as an accepted one always was."""
        args, refusal = delegation_check(target, raw_args)
        if refusal is None:
            task: str = args["input"]
            return task
        async with self.session.tool_lock:  # one order with the run's other calls
            self.session.check_stopped()
            trace_refused_delegation(
                self.inner, self.session.recorder.next_call_id(), target, args, refusal, vendor_call_id
            )
        return refusal

    def _stop_if_budget_exhausted(self, obs: Observation) -> None:
        """A run-level budget (tool calls, cost) rejected a call: the run ends ``budget_exhausted``
        after the rejection is traced (the gateway already emitted ``budget.exceeded``). The stop is
        built from the rejection itself, whose ``details`` are that event's fields."""
        stop = budget_stop_of(obs)
        if stop is not None:
            raise self.session.signal(stop)

    def _stop_if_overspent(self) -> None:
        """A call that ran and reported its cost (a remote A2A agent) took the run over ``max_cost_usd``:
        the run ends ``budget_exhausted`` after its result is traced, as after an over-budget model call."""
        limit = self.session.bundle.spec.budget.max_cost_usd
        if limit is None:  # no cost limit: the (exact, Decimal) sum is not needed after every call
            return
        spent = self.session.budget.cost_usd
        if spent > limit + 1e-12:
            raise self.session.budget_stop("max_cost_usd", limit, round(spent, 6), self.inner.context.agent)


def budget_stop_of(obs: Observation) -> BudgetStop | None:
    """The run's ``BudgetStop`` when ``obs`` is a run-level budget rejection (``details`` carry
    ``limit`` / ``limit_value`` / ``observed``: ``BudgetCheck.event_fields``), else None."""
    details = obs.details
    if obs.error != "budget_exhausted" or not isinstance(details, dict):
        return None
    limit = details.get("limit")
    if limit not in RUN_LEVEL_LIMITS:
        return None
    return BudgetStop(str(limit), float(details["limit_value"]), float(details["observed"]))


def build_gateway(session: RunSession, node: AgentNode) -> SessionGateway:
    request = session.request
    ctx = GatewayContext(
        run_id=session.run_id,
        scope=session.scope,
        provider=session.provider,
        agent=node.name,
        actor=request.actor,
        scopes=list(request.scopes),
        env=request.env,
        context=dict(request.context),
        budget=session.budget,
        recorder=session.recorder,
        clock=session.clock,
        ids=session.ids,
        earlier=session.earlier_results,
    )
    approvals = session.approvals
    gateway = ToolGateway(
        node.tools,
        ctx,
        policy=node.policy,
        approver=approvals.decider(),
        approvals=approvals.store,
        ledger=approvals.ledger,
    )
    return SessionGateway(session, gateway)
