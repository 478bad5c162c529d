"""Builders shared by the tool tests: ToolSpecs of the ACCEPTANCE scenarios, contexts, clocks."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from portagent.contracts.agent import Budget
from portagent.contracts.tool import ToolSpec
from portagent.core.budgets import RunBudget
from portagent.core.clock import IdFactory
from portagent.tools import GatewayContext
from portagent.tracing.recorder import TraceRecorder

run = asyncio.run


class ManualClock:
    """A clock the test moves by hand (expiry tests)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.t = start or datetime(2026, 6, 10, 9, 0, tzinfo=UTC)
        self._mono = 0.0

    def now(self) -> datetime:
        return self.t

    def monotonic(self) -> float:
        self._mono += 0.001
        return self._mono

    def advance(self, seconds: float) -> None:
        self.t += timedelta(seconds=seconds)


def tool(
    name: str,
    *,
    handler: str | None = None,
    properties: dict[str, Any] | None = None,
    required: list[str] | None = None,
    **kw: Any,
) -> ToolSpec:
    props = properties if properties is not None else {"case_id": {"type": "string"}}
    return ToolSpec(
        name=name,
        description=f"{name} (test tool)",
        effect=kw.pop("effect", "read"),
        input_schema={
            "type": "object",
            "properties": props,
            "required": required or [],
            "additionalProperties": False,
        },
        handler=handler or f"acceptance_tools:{name}",
        **kw,
    )


GET_STUDENT_RECORD = ToolSpec(
    name="get_student_record",
    version="1.2.0",
    description="Read one student case record.",
    effect="read",
    cost_usd=0.01,
    permissions=["academic.record.read"],
    input_schema={
        "type": "object",
        "properties": {
            "case_id": {"type": "string", "maxLength": 20, "pattern": "^EXP-[0-9]{2,8}$"},
            "include_payments": {"type": "boolean", "default": False},
        },
        "required": ["case_id"],
        "additionalProperties": False,
    },
    handler="acceptance_tools:get_student_record",
)

PREPARE_EMAIL_PROPOSAL = ToolSpec(
    name="prepare_email_proposal",
    description="Prepare (never send) an email proposal for review.",
    effect="prepare_change",
    cost_usd=0.03,
    requires_approval=True,
    input_schema={
        "type": "object",
        "properties": {
            "case_id": {"type": "string", "pattern": "^EXP-[0-9]{2,8}$"},
            "template_id": {"type": "string", "enum": ["missing_docs", "payment_due"]},
            "facts": {"type": "object"},
        },
        "required": ["case_id", "template_id", "facts"],
        "additionalProperties": False,
    },
    handler="acceptance_tools:prepare_email_proposal",
)

CREATE_TICKET = ToolSpec(
    name="create_ticket",
    description="Create a support ticket.",
    effect="reversible_write",
    idempotency={"required": True, "key_field": "request_key"},
    input_schema={
        "type": "object",
        "properties": {"request_key": {"type": "string"}, "summary": {"type": "string"}},
        "required": ["request_key", "summary"],
        "additionalProperties": False,
    },
    handler="acceptance_tools:create_ticket",
)


def ctx(
    *,
    budget: Budget | None = None,
    spent: float = 0.0,
    recorder: bool = True,
    seed: str = "t",
    clock: Any = None,
    **kw: Any,
) -> GatewayContext:
    clock = clock or ManualClock()
    ids = IdFactory(seed)
    run_id = kw.pop("run_id", "run_test")
    rec = (
        TraceRecorder(
            run_id=run_id,
            provider=kw.get("provider", "local"),
            agent=kw.get("agent", "agent"),
            clock=clock,
            ids=ids,
        )
        if recorder
        else None
    )
    return GatewayContext(
        run_id=run_id, budget=RunBudget(budget, spent_usd=spent), recorder=rec, clock=clock, ids=ids, **kw
    )


def types(c: GatewayContext) -> list[str]:
    assert c.recorder is not None
    return [e.type for e in c.recorder.events]


def results(c: GatewayContext) -> list[Any]:
    assert c.recorder is not None
    return c.recorder.of_type("tool.result")
