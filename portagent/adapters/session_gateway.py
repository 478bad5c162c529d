"""Building one run's gateways from a RunSession (the seam between the runner and the gateway).

One ``ToolGateway`` per agent (its tools, its policy), all sharing the run's budget, trace recorder,
approver, approval store and ledger namespace. The wrapper turns a deferred approval into the
session's ``ApprovalPause`` signal, so every adapter ends the run the same way.
"""

from __future__ import annotations

from typing import Any

from portagent.tools.approvers import make_approver
from portagent.tools.context import GatewayContext
from portagent.tools.gateway import PreparedCall, ToolGateway
from portagent.tools.mcp.bridge import is_mcp_tool
from portagent.tools.observations import Observation


class SessionGateway:
    """A ToolGateway bound to a RunSession: same API, plus the approval-pause signal."""

    def __init__(self, session: Any, gateway: ToolGateway) -> None:
        self.session = session
        self.inner = gateway
        self._seen = 0

    @property
    def tools(self) -> dict[str, Any]:
        return self.inner.tools

    @property
    def pending_approvals(self) -> list[str]:
        return self.inner.pending_approvals

    def prepared(self, call_id: str) -> PreparedCall | None:
        return self.inner.prepared(call_id)

    def register_governed(self, spec: Any, card_context: dict[str, Any] | None = None) -> None:
        """A tool the vendor runtime executes (Claude Code built-ins): decided here, never run here."""
        self.inner.register_governed(spec, card_context)

    def observe(
        self, prepared: PreparedCall, obs: Observation, latency_ms: float | None = None
    ) -> Observation:
        """Record the result of a governed call the vendor runtime executed."""
        return self.inner.observe(prepared, obs, latency_ms)

    def _pause_if_deferred(self, call_id: str) -> None:
        from portagent.adapters.port import ApprovalPause

        pending = self.inner.pending_approvals
        if len(pending) > self._seen:
            self._seen = len(pending)
            raise self.session.signal(ApprovalPause(pending[-1], call_id))

    async def prepare(self, tool_name: str, raw_args: Any, **kw: Any) -> PreparedCall:
        self.session.check_stopped()
        if is_mcp_tool(self.inner.tools.get(tool_name)):
            kw["via"] = (
                "mcp"  # a tool sourced from an MCP server (docs/mcp.md), whichever SDK hook reached it
            )
        p = await self.inner.prepare(tool_name, raw_args, **kw)
        if p.rejection is not None:
            self._stop_if_budget_exhausted(p.rejection)  # ends the run after the rejection is traced
        self._pause_if_deferred(p.call_id)
        return p

    async def execute(self, prepared: PreparedCall) -> Observation:
        self.session.check_stopped()
        obs = await self.inner.execute(prepared)
        self._stop_if_budget_exhausted(obs)
        return obs

    async def call(self, tool_name: str, raw_args: Any, **kw: Any) -> Observation:
        """Prepare and execute one call. Calls of one run are serialized in arrival order: SDKs run
        parallel tool calls concurrently, and a deterministic trace needs one order."""
        async with self.session.tool_lock:
            prepared = await self.prepare(tool_name, raw_args, **kw)
            return await self.execute(prepared)

    def _stop_if_budget_exhausted(self, obs: Observation) -> None:
        """A run-level budget (tool calls, cost) rejected a call: the run ends ``budget_exhausted``
        after the rejection is traced (the gateway already emitted ``budget.exceeded``)."""
        from portagent.adapters.port import BudgetStop

        if obs.error != "budget_exhausted":
            return
        event = next((e for e in reversed(self.session.recorder.events) if e.type == "budget.exceeded"), None)
        if event is not None and event.limit in ("max_tool_calls", "max_cost_usd"):
            raise self.session.signal(BudgetStop(event.limit, event.limit_value, event.observed))


def build_gateway(session: Any, node: Any) -> SessionGateway:
    approver = getattr(session, "approver", None)
    if approver is None:
        approver = make_approver(getattr(session, "approver_spec", "auto-deny"))
        session.approver = approver
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
    )
    shared = getattr(session, "_stores", None)
    gateway = ToolGateway(
        node.tools,
        ctx,
        policy=node.policy,
        approver=approver,
        approvals=shared[0] if shared else None,
        ledger=shared[1] if shared else None,
    )
    return SessionGateway(session, gateway)
