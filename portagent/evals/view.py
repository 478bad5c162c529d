"""RunView: the facts an evaluation needs, read once from a normalized trace.

Everything here is derived from TraceEvents only (DESIGN §3), so a live run, an emulator run and a
cassette replay are judged by exactly the same rules. Calls pair with results **by call id**, never
by tool name (the design source's bug: two calls to one tool with one result looked complete).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from portagent.contracts.run import Usage
from portagent.contracts.trace import (
    ApprovalRequested,
    ApprovalResolved,
    ErrorEvent,
    Handoff,
    ModelCall,
    PermissionDecisionEvent,
    RouteDecisionEvent,
    RunCompleted,
    RunStarted,
    ToolCall,
    ToolResult,
)

BLOCKED_ERRORS: frozenset[str] = frozenset(
    {
        "unknown_tool",
        "validation_error",
        "precondition_failed",
        "permission_denied",
        "approval_required",
        "approval_rejected",
        "budget_exhausted",
    }
)
"""Result codes meaning the gateway stopped the call before its handler ran."""


@dataclass(frozen=True)
class RunView:
    """One run's trace, indexed for scoring. Build it with ``RunView.from_events``."""

    started: RunStarted | None
    """The ``run.started`` event (the first one), if any."""
    completed: RunCompleted | None
    """The ``run.completed`` event (the last one), if any."""
    calls: tuple[ToolCall, ...]
    """``tool.call`` events in trace order."""
    results: dict[str, ToolResult]
    """call_id → its first ``tool.result``."""
    orphan_results: tuple[ToolResult, ...]
    """Results whose call_id matches no call."""
    decisions: dict[str, PermissionDecisionEvent]
    """call_id → its permission decision."""
    approvals: tuple[ApprovalRequested, ...]
    """``approval.requested`` events in order."""
    resolutions: dict[str, ApprovalResolved]
    """approval_id → its (last) resolution."""
    handoffs: tuple[Handoff, ...]
    """``handoff`` events (both kinds) in order."""
    model_calls: tuple[ModelCall, ...]
    """``model.call`` events in order."""
    provider: str = ""
    """Provider named by the events."""
    errors: tuple[ErrorEvent, ...] = ()
    """``error`` events in order (a replay's cassette drift is one, ``error_type: CassetteDrift``)."""
    route_decisions: tuple[RouteDecisionEvent, ...] = ()
    """``route.decision`` events in order (an explicit router's receipts)."""
    cold_start: bool = False
    """``cold_start`` of the last ``run.started``: the attempt whose ``run.completed`` gives the duration."""

    @classmethod
    def from_events(cls, events: Iterable[Any]) -> RunView:
        """Index a run's events (TraceEvent objects), ordered by ``seq``."""
        ordered = sorted(events, key=lambda e: e.seq)
        started: RunStarted | None = None
        completed: RunCompleted | None = None
        calls: list[ToolCall] = []
        results: dict[str, ToolResult] = {}
        all_results: list[ToolResult] = []
        decisions: dict[str, PermissionDecisionEvent] = {}
        approvals: list[ApprovalRequested] = []
        resolutions: dict[str, ApprovalResolved] = {}
        handoffs: list[Handoff] = []
        model_calls: list[ModelCall] = []
        errors: list[ErrorEvent] = []
        routes: list[RouteDecisionEvent] = []
        cold = False
        for e in ordered:
            if isinstance(e, RunStarted):
                started = started or e
                cold = e.cold_start
            elif isinstance(e, RunCompleted):
                completed = e
            elif isinstance(e, ToolCall):
                calls.append(e)
            elif isinstance(e, ToolResult):
                all_results.append(e)
                results.setdefault(e.call_id, e)
            elif isinstance(e, PermissionDecisionEvent):
                decisions.setdefault(e.call_id, e)
            elif isinstance(e, ApprovalRequested):
                approvals.append(e)
            elif isinstance(e, ApprovalResolved):
                resolutions[e.approval_id] = e
            elif isinstance(e, Handoff):
                handoffs.append(e)
            elif isinstance(e, ModelCall):
                model_calls.append(e)
            elif isinstance(e, ErrorEvent):
                errors.append(e)
            elif isinstance(e, RouteDecisionEvent):
                routes.append(e)
        call_ids = {c.call_id for c in calls}
        orphans = tuple(r for r in all_results if r.call_id not in call_ids)
        provider = ordered[0].provider if ordered else ""
        return cls(
            started,
            completed,
            tuple(calls),
            results,
            orphans,
            decisions,
            tuple(approvals),
            resolutions,
            tuple(handoffs),
            tuple(model_calls),
            provider,
            tuple(errors),
            tuple(routes),
            cold,
        )

    @property
    def tools(self) -> list[str]:
        """Tool names in call order (every call, including ones the gateway rejected)."""
        return [c.tool for c in self.calls]

    @property
    def start_agent(self) -> str | None:
        return self.started.agent if self.started else None

    @property
    def route(self) -> str | None:
        """The agent that produced the final output: the ``to_agent`` of the last handoff of kind
        ``handoff`` (an ``agent_as_tool`` delegation leaves the coordinator in charge), else the route
        an explicit router selected last (``route.decision``; None when it stopped), else the agent of
        ``run.completed``, else the starting agent."""
        real = [h for h in self.handoffs if h.kind == "handoff"]
        if real:
            return real[-1].to_agent
        if self.route_decisions:
            return self.route_decisions[-1].selected_route
        if self.completed is not None:
            return self.completed.agent
        return self.start_agent

    @property
    def final_output(self) -> Any:
        return self.completed.final_output if self.completed else None

    @property
    def status(self) -> str | None:
        return self.completed.status if self.completed else None

    @property
    def cost_usd(self) -> float | None:
        return self.completed.cost_usd if self.completed else None

    @property
    def duration_ms(self) -> float | None:
        return self.completed.duration_ms if self.completed else None

    @property
    def usage(self) -> Usage:
        """Token totals: the sum over ``model.call`` events (where usage lives); ``run.completed``'s
        totals only when the trace has no model calls."""
        if self.model_calls:
            m = self.model_calls
            return Usage(
                input_tokens=sum(c.input_tokens for c in m),
                output_tokens=sum(c.output_tokens for c in m),
                cache_read_tokens=sum(c.cache_read_tokens for c in m),
                cache_write_tokens=sum(c.cache_write_tokens for c in m),
                reasoning_tokens=sum(c.reasoning_tokens for c in m),
                model_calls=len(m),
            )
        c = self.completed
        if c is None:
            return Usage()
        return Usage(
            input_tokens=c.input_tokens,
            output_tokens=c.output_tokens,
            cache_read_tokens=c.cache_read_tokens,
            cache_write_tokens=c.cache_write_tokens,
            reasoning_tokens=c.reasoning_tokens,
            model_calls=c.model_calls,
        )

    @property
    def turns(self) -> int:
        """Model calls (the design's ``max_turns`` counts these)."""
        return (
            len(self.model_calls)
            if self.model_calls
            else (self.completed.model_calls if self.completed else 0)
        )

    @property
    def pending_approvals(self) -> list[ApprovalRequested]:
        """Approval requests with no resolution, or still ``pending``."""
        return [
            a
            for a in self.approvals
            if a.approval_id not in self.resolutions or self.resolutions[a.approval_id].status == "pending"
        ]

    def executed(self, call: ToolCall) -> bool:
        """Whether the call's handler ran. A call without a result counts as executed: nothing in the
        trace shows it was stopped, so the evaluation assumes the worst. A ``duplicate`` result was
        answered from the effect ledger (the same idempotency key already ran): no new effect."""
        result = self.results.get(call.call_id)
        return result is None or (result.error not in BLOCKED_ERRORS and not result.duplicate)
