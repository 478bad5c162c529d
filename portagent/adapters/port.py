"""RunSession: what an adapter is given for one run, and the only way it reports what happens.

The session owns the provider-independent bookkeeping: model-call events and the ``max_turns`` /
``max_cost_usd`` budgets (counted by portagent, not the SDK), handoff events, one tool gateway per
agent, and the two control-flow signals an adapter must let through:

- ``BudgetStop``: a budget was exceeded (raised before a model call or after one's cost is known);
- ``ApprovalPause``: a call needs approval and the approver deferred; the run ends ``waiting_approval``.

SDKs wrap exceptions raised in hooks; the session also remembers the first signal in ``stop``, so the
runner ends the run correctly even if an SDK swallowed it. Adapters use ``unwrap_signal`` on errors.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.contracts.bundle import AgentBundle
from portagent.contracts.errors import UsageError
from portagent.contracts.run import RunRequest
from portagent.core.clock import Clock, IdFactory
from portagent.core.pricing import model_cost
from portagent.tracing.recorder import TraceRecorder


class RunSignal(Exception):
    """Base of the control-flow signals raised from inside SDK hooks."""


class BudgetStop(RunSignal):
    def __init__(self, limit: str, limit_value: float, observed: float) -> None:
        super().__init__(f"budget {limit} exceeded: limit {limit_value}, observed {observed}")
        self.limit = limit
        self.limit_value = limit_value
        self.observed = observed


class ApprovalPause(RunSignal):
    def __init__(self, approval_id: str, call_id: str) -> None:
        super().__init__(f"waiting for approval {approval_id} (call {call_id})")
        self.approval_id = approval_id
        self.call_id = call_id


def unwrap_signal(exc: BaseException) -> RunSignal | None:
    """Find a RunSignal in an exception's cause/context chain (SDKs wrap hook exceptions)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, RunSignal):
            return cur
        seen.add(id(cur))
        if isinstance(cur, BaseExceptionGroup):
            for sub in cur.exceptions:
                found = unwrap_signal(sub)
                if found:
                    return found
        cur = cur.__cause__ or cur.__context__
    return None


@dataclass
class Endpoint:
    """Where the vendor runtime's model client points."""

    source: str = "emulator"
    """``live`` or ``emulator``."""
    mode: str = "direct"
    """``direct``, ``record`` or ``replay``."""
    base_url: str | None = None
    """Root URL of the server (the emulator's, a proxy's, or a custom live one); None = vendor default."""
    api_key: str | None = None
    """Key to send (a dummy one for the emulator and replays)."""
    script_hash: str | None = None
    """Emulator script hash, for the manifest."""
    cassette_dir: Path | None = None
    """Where the vendor cassette lives (record/replay)."""
    record_mode: str = "all"
    """vcrpy record mode when recording (``none`` is used for replay)."""
    match_body: bool = True
    """Replay matches normalized request bodies, so prompt/schema/tool-result changes are drift."""


@dataclass
class RunOptions:
    """Knobs that change how the vendor runtime is driven, not what the agent is."""

    streaming: bool = False
    """Use the SDK's streaming mode."""
    openai_api: str | None = None
    """Override ``models.openai_api`` (``responses`` / ``chat_completions``)."""
    workdir: Path | None = None
    """Scratch folder for the run (Claude's isolated HOME lives under it)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Adapter-specific options (documented by each adapter)."""


class RunSession:
    def __init__(
        self,
        *,
        bundle: AgentBundle,
        request: RunRequest,
        endpoint: Endpoint,
        recorder: TraceRecorder,
        budget: Any,
        gateway_factory: Any,
        clock: Clock,
        ids: IdFactory,
        run_id: str,
        attempt: int,
        scope: str,
        options: RunOptions,
    ) -> None:
        self.bundle = bundle
        self.request = request
        self.endpoint = endpoint
        self.recorder = recorder
        self.budget = budget
        self.clock = clock
        self.ids = ids
        self.run_id = run_id
        self.attempt = attempt
        self.scope = scope
        self.options = options
        self.provider = request.provider
        self._gateway_factory = gateway_factory
        self._gateways: dict[str, Any] = {}
        self.stop: RunSignal | None = None
        self.model_costs: list[float | None] = []
        self.current_agent = bundle.root
        self.tool_lock = asyncio.Lock()
        """Serializes the run's tool calls (deterministic order; see SessionGateway.call)."""

    # --- agents, models, tools -------------------------------------------------------------------
    def model_for(self, agent: str | None = None) -> str:
        node = self.bundle.agents[agent or self.bundle.root]
        model = node.spec.models.for_provider(self.provider) or self.bundle.spec.models.for_provider(
            self.provider
        )
        if not model:
            raise UsageError(
                f"agent {node.name!r} has no model id for provider {self.provider!r}: "
                f"set models.{self.provider} in {node.path}"
            )
        return model

    def gateway(self, agent: str | None = None) -> Any:
        """The tool gateway for one agent (its tools and policy; budget, ledger and trace shared)."""
        name = agent or self.bundle.root
        if name not in self._gateways:
            self._gateways[name] = self._gateway_factory(self, self.bundle.agents[name])
        return self._gateways[name]

    def all_gateways(self) -> list[Any]:
        return list(self._gateways.values())

    # --- signals ---------------------------------------------------------------------------------
    def signal(self, sig: RunSignal) -> RunSignal:
        """Remember the first stop signal and return it for raising."""
        if self.stop is None:
            self.stop = sig
        return self.stop

    def check_stopped(self) -> None:
        """Raise the pending stop signal, if any (adapters call this at their hook points)."""
        if self.stop is not None:
            raise self.stop

    def budget_stop(
        self, limit: str, limit_value: float, observed: float, agent: str | None = None
    ) -> BudgetStop:
        if isinstance(self.stop, BudgetStop):
            return self.stop
        self.recorder.emit(
            "budget.exceeded", agent=agent, limit=limit, limit_value=limit_value, observed=observed
        )
        return self.signal(BudgetStop(limit, limit_value, observed))  # type: ignore[return-value]

    # --- model calls -----------------------------------------------------------------------------
    @property
    def model_calls(self) -> int:
        return len(self.model_costs)

    def before_model_call(self, agent: str | None = None) -> None:
        """Call before each model request: refuses the call that would exceed ``max_turns``."""
        self.check_stopped()
        limit = self.bundle.spec.budget.max_turns
        if self.model_calls >= limit:
            raise self.budget_stop("max_turns", limit, self.model_calls + 1, agent)

    def record_model_call(
        self,
        *,
        agent: str | None = None,
        model: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        latency_ms: float | None = None,
        finish_reason: str | None = None,
        response_id: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Emit ``model.call`` (usage lives only here) and enforce ``max_cost_usd``."""
        self.recorder.emit(
            "model.call",
            agent=agent,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
            reasoning_tokens=reasoning_tokens,
            latency_ms=latency_ms,
            finish_reason=finish_reason,
            response_id=response_id,
            provider_details=details or {},
        )
        cost = model_cost(
            self.provider,
            model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
        )
        self.model_costs.append(cost)
        if cost:
            self.budget.add_model_cost(cost)
        limit = self.bundle.spec.budget.max_cost_usd
        if limit is not None and self.budget.cost_usd > limit + 1e-12:
            raise self.budget_stop("max_cost_usd", limit, round(self.budget.cost_usd, 6), agent)

    # --- delegation ------------------------------------------------------------------------------
    def record_handoff(
        self,
        from_agent: str,
        to_agent: str,
        kind: str,
        reason: str = "",
        details: dict[str, Any] | None = None,
    ) -> None:
        self.recorder.emit(
            "handoff",
            agent=from_agent,
            from_agent=from_agent,
            to_agent=to_agent,
            kind=kind,
            reason=reason,
            provider_details=details or {},
        )
        if kind == "handoff":
            self.current_agent = to_agent

    def record_error(
        self,
        error_type: str,
        message: str,
        *,
        retryable: bool = False,
        agent: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.recorder.emit(
            "error",
            agent=agent,
            error_type=error_type,
            message=message,
            retryable=retryable,
            provider_details=details or {},
        )
