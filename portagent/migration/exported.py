"""The portagent pieces an exported module keeps (``portagent export``; docs/migration.md).

A module written by ``portagent export AGENT --to P`` builds the native agent directly with P's SDK.
What it deliberately keeps from portagent is small and explicit:

- the **tool gateway**: each tool body calls ``ExportedRun.call_tool``, i.e. ``ToolGateway.call`` for the
  calling agent (its ToolSpecs and policy, loaded from the spec files) — schema, preconditions, budget,
  policy, approvals, idempotency, handler, output checks — serialized in arrival order like portagent's
  runs, so the trace has one order;
- the **trace**: a ``TraceRecorder`` writing the same events portagent's runner writes (``run.started``,
  ``model.call``, the gateway's tool events, ``handoff``, ``budget.exceeded``, ``run.completed``), so the
  exported program's trace can be compared with ``portagent.tracing.compare.equivalent``;
- the **run budgets** portagent counts itself: ``max_turns`` before each model call (the SDK's own limit
  is set too, as a backstop) and the gateway's ``max_tool_calls`` / ``max_cost_usd``, which end the run.

Not kept: resuming a run that waits for approval (the ``defer`` approver is refused: use
``auto-approve``, ``auto-deny``, ``interactive``, a scripted list or a callback), the runs store and
``run.json``, cassettes. Everything else — the agents, their instructions, models, delegation, output
type and how the SDK is driven — is native code in the exported module.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from portagent.adapters.port import endpoint_root as endpoint_root  # what exported modules import
from portagent.contracts.bundle import AgentBundle, load_agent
from portagent.contracts.errors import PortagentError, UsageError
from portagent.contracts.policy import Environment
from portagent.contracts.tool import ToolSpec
from portagent.contracts.trace import ToolVia
from portagent.core.budgets import RunBudget
from portagent.core.clock import Clock, IdFactory, SystemClock
from portagent.core.pricing import model_cost
from portagent.tools.approvers import Defer, make_approver
from portagent.tools.context import GatewayContext
from portagent.tools.gateway import ToolGateway
from portagent.tools.handlers import bundle_scope, within
from portagent.tracing.recorder import TraceRecorder


class BudgetStopped(Exception):
    """A run budget was exhausted (``budget.exceeded`` is already in the trace): the run ends here."""

    def __init__(self, limit: str) -> None:
        super().__init__(f"budget {limit} exhausted")
        self.limit = limit


class ExportedRun:
    """One run of an exported module: its gateways (one per agent), its budget and its trace."""

    def __init__(
        self,
        spec: str | Path,
        *,
        provider: str,
        sdk: str,
        sdk_version: str,
        model: str,
        messages: list[str],
        approver: Any = "auto-deny",
        trace_path: str | Path | None = None,
        source: str = "live",
        scopes: list[str] | None = None,
        env: Environment = "dev",
        context: dict[str, Any] | None = None,
        clock: Clock | None = None,
        ids: IdFactory | None = None,
    ) -> None:
        self.bundle: AgentBundle = load_agent(spec)
        for node in self.bundle.agents.values():  # handlers resolve next to the spec files, as in portagent
            if node.path is not None and str(node.path.parent.resolve()) not in sys.path:
                sys.path.insert(0, str(node.path.parent.resolve()))
        # the gateway's handlers resolve as in a portagent run: in the folder of the file that declared
        # the tool first (a shared tools file's), then the spec folders (ADR 0004)
        self._scope = bundle_scope(self.bundle)
        self.provider = provider
        self.approver = make_approver(approver)
        if isinstance(self.approver, Defer):
            raise UsageError(
                "an exported module cannot wait for an approval and resume: use auto-approve, "
                "auto-deny, interactive, a scripted list or a callback approver"
            )
        self.clock = clock or SystemClock()
        self.ids = ids or IdFactory()
        self.run_id = self.ids.run_id()
        self.recorder = TraceRecorder(
            run_id=self.run_id,
            provider=provider,
            agent=self.bundle.root,
            clock=self.clock,
            ids=self.ids,
            path=trace_path,
        )
        self.budget = RunBudget(self.bundle.spec.budget)
        self.scopes, self.env, self.context = list(scopes or []), env, dict(context or {})
        self.current_agent = self.bundle.root
        self.stop: BudgetStopped | None = None
        """The first budget stop; SDKs may swallow an exception raised in a hook, so it is kept here too."""
        self.model_calls = 0
        self.model_costs: list[float | None] = []
        self._gateways: dict[str, ToolGateway] = {}
        self._governed: dict[str, tuple[ToolGateway, Any]] = {}
        self._lock: asyncio.Lock | None = None
        self._t0 = self.clock.monotonic()
        self.recorder.emit(
            "run.started",
            root=True,
            agent_version=self.bundle.spec.version,
            spec_hash=self.bundle.spec_hash,
            policy_hash=self.bundle.policy_hash,
            sdk=sdk,
            sdk_version=sdk_version,
            model=model,
            case_id=None,
            repeat=0,
            source=source,
            mode="direct",
            attempt=1,
            input=messages[0] if len(messages) == 1 else messages,
            shared_settings_forced=self.bundle.spec.models.force_shared_settings,
            provider_details={"exported": True},
        )

    # --- specs ------------------------------------------------------------------------------------

    def tool(self, agent: str, name: str) -> ToolSpec:
        """The ToolSpec ``name`` of ``agent``, as loaded from the spec files."""
        return self.bundle.agents[agent].tools[name]

    def instructions(self, agent: str) -> str:
        return self.bundle.agents[agent].spec.instructions

    def gateway(self, agent: str) -> ToolGateway:
        """portagent's gateway for one agent: its ToolSpecs and policy; budget and trace shared by the run."""
        if agent not in self._gateways:
            node = self.bundle.agents[agent]
            ctx = GatewayContext(
                run_id=self.run_id,
                scope=f"run:{self.run_id}",
                provider=self.provider,
                agent=agent,
                scopes=self.scopes,
                env=self.env,
                context=self.context,
                budget=self.budget,
                recorder=self.recorder,
                clock=self.clock,
                ids=self.ids,
            )
            self._gateways[agent] = ToolGateway(node.tools, ctx, policy=node.policy, approver=self.approver)
        return self._gateways[agent]

    # --- what the SDK hooks report ----------------------------------------------------------------

    async def call_tool(
        self,
        agent: str,
        name: str,
        raw_args: Any,
        *,
        vendor_call_id: str | None = None,
        via: ToolVia = "function",
    ) -> dict[str, Any]:
        """Run one tool call through the gateway; returns what the model is sent. Calls are serialized."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            with within(self._scope):
                observation = await self.gateway(agent).call(
                    name, raw_args, vendor_call_id=vendor_call_id, via=via
                )
        if observation.error == "budget_exhausted":
            event = next((e for e in reversed(self.recorder.events) if e.type == "budget.exceeded"), None)
            if event is not None and event.limit in ("max_tool_calls", "max_cost_usd"):
                raise self._stopped(event.limit)
        return observation.to_model()

    async def agent_task(
        self, agent: str, target: str, raw_args: Any, *, vendor_call_id: str | None = None
    ) -> str | dict[str, Any]:
        """The task of ``agent``'s call to its agent-as-tool ``target`` once the arguments are
        ``{"input": string}``; else what the model is answered with, the gateway's ``validation_error``, and
        the sub-agent is not run on no task. The refused call is traced as in a portagent run
        (``SessionGateway.delegation_task``): a ``tool.call`` via ``agent`` and its ``tool.result``."""
        from portagent.adapters.session_gateway import delegation_check, trace_refused_delegation

        args, refusal = delegation_check(target, raw_args)
        if refusal is None:
            task: str = args["input"]
            return task
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one order with the run's other calls
            trace_refused_delegation(
                self.gateway(agent), self.recorder.next_call_id(), target, args, refusal, vendor_call_id
            )
        return refusal.to_model()

    async def prepare_builtin(
        self, agent: str, name: str, args: dict[str, Any], *, vendor_call_id: str | None = None
    ) -> Any:
        """A Claude Code built-in call: decided by the gateway (schema, budget, policy, approval) but run
        by the CLI; ``observe_builtin`` records its result. Returns the gateway's ``PreparedCall``."""
        from portagent.adapters.claude.tools import builtin_spec

        gateway = self.gateway(agent)
        if name not in gateway.tools:
            gateway.register_governed(builtin_spec(name))
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            with within(self._scope):
                prepared = await gateway.prepare(name, args, vendor_call_id=vendor_call_id, via="builtin")
        if prepared.allowed and vendor_call_id:
            self._governed[vendor_call_id] = (gateway, prepared)
        return prepared

    def observe_builtin(self, vendor_call_id: str, *, output: Any = None, error: str | None = None) -> None:
        from portagent.tools.execution import success_observation
        from portagent.tools.observations import Observation

        found = self._governed.pop(vendor_call_id, None)
        if found is None:
            return
        gateway, prepared = found
        obs = (
            Observation.failure("handler_error", error, {"builtin": prepared.tool_name})
            if error is not None
            else success_observation(prepared.tool, output)
        )
        gateway.observe(prepared, obs)

    def _stopped(self, limit: str) -> BudgetStopped:
        if self.stop is None:
            self.stop = BudgetStopped(limit)
        return self.stop

    def stopped(self, exc: BaseException | None = None) -> BudgetStopped | None:
        """The budget stop that ended the run: remembered, or found in ``exc``'s cause chain."""
        seen: set[int] = set()
        while exc is not None and id(exc) not in seen:
            if isinstance(exc, BudgetStopped):
                return exc
            seen.add(id(exc))
            exc = exc.__cause__ or exc.__context__
        return self.stop

    def before_model_call(self, agent: str) -> None:
        """Refuses the model call that would exceed ``max_turns`` (counted here, not by the SDK)."""
        if self.stop is not None:
            raise self.stop
        limit = self.bundle.spec.budget.max_turns
        if self.model_calls >= limit:
            self.recorder.emit(
                "budget.exceeded",
                agent=agent,
                limit="max_turns",
                limit_value=limit,
                observed=self.model_calls + 1,
            )
            raise self._stopped("max_turns")

    def model_call(
        self,
        agent: str,
        model: str,
        *,
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
        """One model call in the trace; ``details`` (its ``provider_details``) names, for a reply cut by the
        token limit or stopped by the content filter, the calls not run (``calls_not_run``)."""
        self.model_calls += 1
        extra: dict[str, Any] = {"provider_details": details} if details else {}
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
            **extra,
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
            self.recorder.emit(
                "budget.exceeded",
                agent=agent,
                limit="max_cost_usd",
                limit_value=limit,
                observed=round(self.budget.cost_usd, 6),
            )
            raise self._stopped("max_cost_usd")

    def handoff(self, from_agent: str, to_agent: str, kind: str, reason: str = "") -> None:
        self.recorder.emit(
            "handoff", agent=from_agent, from_agent=from_agent, to_agent=to_agent, kind=kind, reason=reason
        )
        if kind == "handoff":
            self.current_agent = to_agent

    def failed(self, exc: BaseException, *, final_agent: str | None = None) -> dict[str, Any]:
        """The run ended by a provider or SDK error (a 400, a dropped connection, the SDK's own refusal to
        go on): traced as portagent traces it — an ``error`` event, then ``run.completed`` with status
        ``failed`` — and returned with its ``error`` text, so the program says one line and exits 3 instead
        of printing a traceback and leaving no trace."""
        if isinstance(exc, PortagentError):  # a usage mistake: the program's one message, exit 2
            raise exc
        error = f"{type(exc).__name__}: {exc}"
        out = self.completed(
            status="failed", stop_reason="provider_error", final_agent=final_agent, error=error
        )
        return {**out, "error": error}

    def completed(
        self,
        final_output: Any = None,
        *,
        final_agent: str | None = None,
        status: str = "completed",
        stop_reason: str = "final_output",
        vendor_cost_usd: float | None = None,
        error: str | None = None,
    ) -> dict[str, Any]:
        """Write ``run.completed`` (validating a structured output like portagent does) and flush the trace."""
        output_valid: bool | None = None
        if status == "completed" and self.bundle.spec.output_schema is not None:
            final_output, output_valid = _validated(self.bundle.spec.output_schema, final_output)
        if error is not None:
            self.recorder.emit(
                "error", agent=self.current_agent, error_type="ExportedRunError", message=error
            )
        calls = [e for e in self.recorder.events if e.type == "model.call"]
        tool_cost = self.budget.tool_cost_usd
        if vendor_cost_usd is not None:
            cost, source = round(vendor_cost_usd + tool_cost, 8), "vendor"
        elif all(c is not None for c in self.model_costs):
            cost, source = round(sum(c or 0.0 for c in self.model_costs) + tool_cost, 8), "computed"
        else:
            cost, source = None, "unknown"
        fields: dict[str, Any] = {
            "status": status,
            "stop_reason": stop_reason,
            "final_output": final_output,
            "output_valid": output_valid,
            "input_tokens": sum(e.input_tokens for e in calls),
            "output_tokens": sum(e.output_tokens for e in calls),
            "cache_read_tokens": sum(e.cache_read_tokens for e in calls),
            "cache_write_tokens": sum(e.cache_write_tokens for e in calls),
            "reasoning_tokens": sum(e.reasoning_tokens for e in calls),
            "model_calls": len(calls),
            "tool_calls": len(self.recorder.of_type("tool.call")),
            "cost_usd": cost,
            "cost_source": source,
            "duration_ms": round((self.clock.monotonic() - self._t0) * 1000, 3),
        }
        self.recorder.emit("run.completed", root=True, agent=final_agent or self.current_agent, **fields)
        self.recorder.flush()
        return fields


# --- exported langgraph programs on ChatOpenAI ------------------------------------------------------------


@contextmanager
def reading_replies(vendor: str) -> Iterator[None]:
    """Around an exported langgraph program's own model call (``vendor``: its chat model's). langchain-openai
    reads a Responses API reply with its private module function ``_construct_lc_result_from_responses_api``,
    which fails the run on a tool call whose arguments are JSON but not an object (``null``, ``["x"]``,
    ``"x"``): it hands that value to ``AIMessage`` as the call's ``args``, which pydantic refuses. On an
    OpenAI model this uses the langgraph adapter's wrapper of that function (installed once; it acts only
    inside this block, through a ContextVar, so other code using langchain-openai in the process sees no
    change): such a call is read with ``{}`` and kept as an invalid tool call holding the model's text, which
    the program's gateway answers with ``validation_error``, as in a portagent run. One wrapper for both, so
    the adapter and the exported program read a reply alike (tests/migration/test_export_malformed_arguments.py
    fails if the function moves)."""
    if vendor != "openai":  # the other integrations keep such a call themselves (read_calls answers it)
        yield
        return
    from portagent.adapters.langgraph import replies

    replies.read_responses_leniently()
    with replies.reading_replies():
        yield


def read_chat_reply(create: Callable[..., Any], response: Any, *args: Any) -> Any:
    """``create(response, *args)`` — a ChatOpenAI subclass's ``super()._create_chat_result``, which builds the
    ``AIMessage`` of a Chat Completions reply — with the calls whose arguments are JSON but not an object
    (``null``, ``["x"]``, ``"x"``) read with ``{}`` and then kept as invalid tool calls holding the model's
    text. Left to langchain-openai, ``null`` became ``{}`` (a valid call, traced as one) and the others failed
    the run (pydantic refuses ``args`` that are not a dict); the langgraph adapter reads them the same way."""
    from portagent.adapters.langgraph import replies

    return replies.read_chat_reply(create, response, *args)


def _validated(schema: dict[str, Any], final: Any) -> tuple[Any, bool]:
    from jsonschema import Draft202012Validator

    value = final
    if isinstance(final, str):
        try:
            value = json.loads(final)
        except json.JSONDecodeError:
            return final, False
    return value, Draft202012Validator(schema).is_valid(value)
