"""GatewayContext: everything about the run that a tool call's checks may read.

The permission decision depends only on the tool, the concrete arguments and this context — never
on what the model or the prompt says (DESIGN §3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, get_args

from portagent.contracts.errors import UsageError
from portagent.contracts.policy import Environment
from portagent.core.budgets import RunBudget
from portagent.core.clock import Clock, IdFactory, SystemClock
from portagent.tools.tool_context import SessionState, session_state
from portagent.tracing.recorder import TraceRecorder

ENVIRONMENTS: tuple[str, ...] = get_args(Environment)


class ContextError(UsageError):
    """The run context is malformed (e.g. ``confidence`` outside [0, 1]); exit 2."""


def check_run_context(context: dict[str, Any]) -> None:
    """Range-check the inputs risk scoring reads. Raises ContextError naming the field."""
    if "confidence" in context:
        c = context["confidence"]
        if isinstance(c, bool) or not isinstance(c, int | float) or math.isnan(c) or not 0 <= c <= 1:
            raise ContextError(f"context.confidence must be a number between 0 and 1, got {c!r}")
    if "evidence" in context:
        ev = context["evidence"]
        if not isinstance(ev, list):
            raise ContextError(f"context.evidence must be a list of evidence items, got {type(ev).__name__}")
    if "evidence_count" in context:
        n = context["evidence_count"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ContextError(f"context.evidence_count must be a non-negative integer, got {n!r}")


def evidence_of(context: dict[str, Any]) -> list[str]:
    return [str(e) for e in context.get("evidence", []) or []]


def evidence_count(context: dict[str, Any]) -> int:
    if "evidence_count" in context:
        return int(context["evidence_count"])
    return len(context.get("evidence", []) or [])


class EarlierResults:
    """What the attempt before a resume got back from the calls it ran, by tool and arguments, in order.

    A resumed attempt replays the model's turns (ADR 0007), so the model asks for those calls again;
    the gateway answers each from here instead of running the handler again — a tool's effect happens
    once, and the model sees the result the reviewer saw on the card. Only calls that ran and succeeded
    are kept: a call approved and run in an earlier attempt is not put to the reviewer again; the call
    that paused the run (it did not run) is decided by its card."""

    def __init__(self, attempt: int, results: list[tuple[str, str, Any]]) -> None:
        self.attempt = attempt
        self._left: dict[tuple[str, str], list[Any]] = {}
        for tool, args_hash, output in results:
            self._left.setdefault((tool, args_hash), []).append(output)

    def has(self, tool: str, args_hash: str) -> bool:
        return bool(self._left.get((tool, args_hash)))

    def take(self, tool: str, args_hash: str) -> Any | None:
        """The next earlier result of this call (the model-facing ``{"ok": true, …}``), or None."""
        left = self._left.get((tool, args_hash))
        return left.pop(0) if left else None

    @classmethod
    def from_events(cls, attempt: int, events: list[Any]) -> EarlierResults:
        calls = {e.call_id: e for e in events if e.type == "tool.call"}
        kept = [
            (calls[e.call_id].tool, calls[e.call_id].args_hash, e.output)
            for e in events
            if e.type == "tool.result" and e.ok and e.call_id in calls and isinstance(e.output, dict)
        ]
        return cls(attempt, kept)


@dataclass(frozen=True)
class GatewayContext:
    """One run's identity, actor, environment, budget, recorder, clock and ids."""

    run_id: str = "run_local"
    scope: str = ""
    """Namespace for the ledger and approval cards; defaults to ``run_id``."""
    provider: str = "local"
    agent: str = "agent"
    actor: str = "user"
    scopes: list[str] = field(default_factory=list)
    env: Environment = "dev"
    context: dict[str, Any] = field(default_factory=dict)
    """Run context (``confidence``, ``evidence``, ``workspace`` …) read by preconditions and risk."""
    budget: RunBudget = field(default_factory=RunBudget)
    recorder: TraceRecorder | None = None
    clock: Clock = field(default_factory=SystemClock)
    ids: IdFactory = field(default_factory=IdFactory)
    state: SessionState | None = field(default=None, compare=False, repr=False)
    earlier: EarlierResults | None = field(default=None, compare=False, repr=False)
    """A resumed attempt's results of the calls the attempt before already ran (ADR 0007)."""
    """Per-session tool state (``ToolContext.state``); unset → the mapping shared by every gateway of
    the session (the gateways that share this run's ``budget``; tools/tool_context.py)."""

    def __post_init__(self) -> None:
        if not self.scope:
            object.__setattr__(self, "scope", self.run_id)
        if self.state is None:
            object.__setattr__(self, "state", session_state(self.budget))
        if self.env not in ENVIRONMENTS:
            raise ContextError(f"env must be one of {', '.join(ENVIRONMENTS)}, got {self.env!r}")
        check_run_context(self.context)

    def handler_context(
        self, call_id: str | None = None, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """The dict handed to preconditions, handlers that declare ``context`` and reconcile functions."""
        return {
            **self.context,
            "run_id": self.run_id,
            "scope": self.scope,
            "provider": self.provider,
            "agent": self.agent,
            "actor": self.actor,
            "scopes": list(self.scopes),
            "env": self.env,
            "call_id": call_id,
            "idempotency_key": idempotency_key,
        }
