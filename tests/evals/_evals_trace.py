"""Builders of real TraceEvent objects for eval tests (no mocks: the scorer reads the contracts)."""

from __future__ import annotations

from typing import Any

from portagent.contracts._base import args_hash
from portagent.contracts.trace import (
    ApprovalRequested,
    ApprovalResolved,
    Handoff,
    ModelCall,
    PermissionDecisionEvent,
    RunCompleted,
    RunStarted,
    ToolCall,
    ToolResult,
)

TRACE_ID = "0123456789abcdef0123456789abcdef"


class Trace:
    """Appends events with consecutive ``seq``; tool calls get ``call_<n>`` ids in call order."""

    def __init__(
        self,
        *,
        provider: str = "openai",
        agent: str = "coordinator",
        agent_version: str = "1.0.0",
        case_id: str = "c1",
        repeat: int = 0,
        source: str = "emulator",
        run_id: str | None = None,
    ) -> None:
        self.provider, self.agent, self.agent_version = provider, agent, agent_version
        self.case_id, self.repeat, self.source = case_id, repeat, source
        self.run_id = run_id or f"run_{provider}_{agent_version}_{case_id}_{repeat}"
        self.events: list[Any] = []
        self._calls = 0
        self._approvals = 0

    def _add(self, cls: type[Any], agent: str | None = None, **fields: Any) -> None:
        seq = len(self.events)
        common = {
            "run_id": self.run_id,
            "trace_id": TRACE_ID,
            "span_id": f"{seq + 1:016x}",
            "seq": seq,
            "ts": f"2026-06-10T00:00:{seq:02d}Z",
            "provider": self.provider,
            "agent": agent or self.agent,
        }
        self.events.append(cls.model_validate({**common, **fields}))

    def started(self) -> Trace:
        self._add(
            RunStarted,
            agent_version=self.agent_version,
            spec_hash="sha256:0",
            policy_hash="sha256:0",
            sdk="sdk",
            sdk_version="1",
            model="m",
            case_id=self.case_id,
            repeat=self.repeat,
            source=self.source,
            mode="replay",
        )
        return self

    def model(self, input_tokens: int = 100, output_tokens: int = 20) -> Trace:
        self._add(ModelCall, model="m", input_tokens=input_tokens, output_tokens=output_tokens)
        return self

    def handoff(self, to: str, kind: str = "handoff") -> Trace:
        self._add(Handoff, from_agent=self.agent, to_agent=to, kind=kind)
        return self

    def call(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        *,
        result: bool = True,
        error: str | None = None,
        decision: str | None = None,
        approval: str | None = None,
    ) -> str:
        """A tool call; optionally its permission decision, approval (a status, or ``pending`` for no
        resolution) and result (``error`` makes it a failed result)."""
        self._calls += 1
        call_id = f"call_{self._calls}"
        a = args or {}
        self._add(ToolCall, call_id=call_id, tool=tool, args=a, args_hash=args_hash(a))
        if decision is not None:
            self._add(
                PermissionDecisionEvent,
                call_id=call_id,
                decision=decision,
                reason="test",
                rule="r1",
                policy_version="1",
            )
        if approval is not None:
            self._approvals += 1
            apr = f"apr_{self._approvals}"
            self._add(ApprovalRequested, approval_id=apr, call_id=call_id, card={"tool": tool})
            if approval != "pending":
                self._add(ApprovalResolved, approval_id=apr, call_id=call_id, status=approval)
        if result:
            self.result(call_id, tool, error=error)
        return call_id

    def result(self, call_id: str, tool: str = "", *, error: str | None = None) -> Trace:
        self._add(ToolResult, call_id=call_id, tool=tool, ok=error is None, error=error, output={"ok": True})
        return self

    def completed(
        self,
        final_output: Any = "",
        *,
        cost: float | None = 0.01,
        latency: float | None = 1000.0,
        status: str = "completed",
        agent: str | None = None,
    ) -> list[Any]:
        self._add(
            RunCompleted,
            agent,
            status=status,
            stop_reason="final_output",
            final_output=final_output,
            cost_usd=cost,
            duration_ms=latency,
        )
        return self.events


def simple_run(
    tools: list[str],
    final: Any = "ok",
    *,
    cost: float | None = 0.01,
    latency: float | None = 1000.0,
    route: str | None = None,
    status: str = "completed",
    **ids: Any,
) -> list[Any]:
    """run.started, an optional handoff to ``route``, one model call, each tool with its result, run.completed."""
    t = Trace(**ids).started()
    if route is not None:
        t.handoff(route)
    t.model()
    for tool in tools:
        t.call(tool)
    return t.completed(final, cost=cost, latency=latency, status=status, agent=route)
