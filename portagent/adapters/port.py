"""The session port: the one typed way an adapter talks back to the run it was given.

An adapter enters through ``Adapter.run(session)`` (``adapters/base.py``) and reports through this
``RunSession`` only: model calls (``before_model_call`` / ``record_model_call``), handoffs, errors, and
tool calls through ``gateway(agent)`` (a ``SessionGateway``). Every field is declared here, typed; the
runner fills them in the constructor (the approval set-up is one small holder, ``RunApprovals``) and
sets nothing else afterwards except ``cassette_report`` (declared below).

The session owns the provider-independent bookkeeping: model-call events and the ``max_turns`` /
``max_cost_usd`` budgets (counted by portagent, not the SDK), handoff events, one tool gateway per
agent, and the two control-flow signals an adapter must let through:

- ``BudgetStop``: a budget was exceeded (raised before a model call or after one's cost is known);
- ``ApprovalPause``: a call needs approval and the approver deferred; the run ends ``waiting_approval``.

SDKs wrap exceptions raised in hooks; the session also remembers the first signal in ``stop``, so the
runner ends the run correctly even if an SDK swallowed it. Each adapter's error mapping starts with
``session.reraise_signal(e)``, which re-raises that signal before any vendor error is looked at.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from portagent.contracts.bundle import AgentBundle
from portagent.contracts.errors import UsageError
from portagent.contracts.run import RunRequest
from portagent.core.budgets import Limit, RunBudget
from portagent.core.clock import Clock, IdFactory
from portagent.core.pricing import model_cost
from portagent.tracing.recorder import TraceRecorder

if TYPE_CHECKING:
    from portagent.adapters.session_gateway import SessionGateway
    from portagent.contracts.policy import ApprovalCard
    from portagent.recording.vcr_cassette import CassetteReport
    from portagent.tools.approvals import ApprovalStore
    from portagent.tools.approvers import Approver
    from portagent.tools.ledger import EffectLedger


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


def endpoint_root(base_url: str | None) -> str | None:
    """A base URL as users give it, reduced to the server's root (what ``Endpoint.base_url`` holds): each
    vendor SDK adds its API version to every path itself (``/v1/responses``, ``/v1/messages``,
    ``/v1beta/models/…``), while ``portagent emulate`` and the vendors' docs print ``OPENAI_BASE_URL`` as
    ``…/v1``. A trailing ``/v1``, ``/v1beta`` or ``/v1alpha`` and trailing slashes are dropped, so both
    forms reach the same paths and ``…/v1`` never becomes ``…/v1/v1/responses``. None or blank: None."""
    if not base_url or not base_url.strip():
        return None
    url, mark, query = base_url.strip().partition("?")  # a query (a gateway's key, a tenant) stays as it is
    url = url.rstrip("/")
    for suffix in ("/v1beta", "/v1alpha", "/v1"):
        if url.endswith(suffix):
            url = url[: -len(suffix)].rstrip("/")
            break
    return url + mark + query


@dataclass
class Endpoint:
    """Where the vendor runtime's model client points."""

    source: str = "emulator"
    """``live`` or ``emulator``."""
    mode: str = "direct"
    """``direct``, ``record`` or ``replay``."""
    base_url: str | None = None
    """Root URL of the server (the emulator's, a proxy's, or a custom live one); None = vendor default.
    Given as ``…/v1`` (or ``/v1beta``, or with a trailing ``/``) it is kept as the root
    (``endpoint_root``): every adapter and the run journal add the API version themselves."""
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
    journal_url: str | None = None
    """The run journal's loopback proxy (``recording/journal.py``), set by the runner: the SDK sends its
    model calls there, and the proxy forwards them to ``base_url`` (or the vendor's default)."""

    def __post_init__(self) -> None:
        self.base_url = endpoint_root(self.base_url)

    @property
    def client_url(self) -> str | None:
        """Where the SDK's model client connects: the journal's proxy when there is one, else ``base_url``."""
        return self.journal_url or self.base_url

    @property
    def sdk_url(self) -> str | None:
        """``client_url`` without its query, for a vendor SDK's ``base_url``: the openai and anthropic
        clients join their own path after the whole base URL, so a ``?token=…`` in it sent
        ``…?token=…/v1/responses`` (404). The query goes on each request instead (``sdk_query``, added by
        ``adapters._shared.http_hooks``), as the journal's proxy adds it when the run keeps a journal."""
        url = self.client_url
        return url.partition("?")[0] if url else url

    @property
    def sdk_query(self) -> list[tuple[str, str]]:
        """The query of ``client_url`` (empty for the journal's proxy, which adds the endpoint's itself)."""
        from urllib.parse import parse_qsl

        url = self.client_url or ""
        return parse_qsl(url.partition("?")[2], keep_blank_values=True)


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


ApproverSpec: TypeAlias = "str | dict[str, Any] | Approver | Callable[[ApprovalCard], Any] | None"
"""What ``tools.approvers.make_approver`` accepts: a name, a scripted/callback dict, a callable, an object."""


@dataclass
class RunApprovals:
    """Who decides the run's approval cards, and where cards and effects are kept: one per run,
    shared by every agent's gateway (a scripted approver's decisions are used up across agents)."""

    approver: ApproverSpec = "auto-deny"
    """The approver as configured; made into an ``Approver`` on first use (``decider``)."""
    store: ApprovalStore | None = None
    """A shared approval store; None: each gateway opens the default one when it first needs it."""
    ledger: EffectLedger | None = None
    """A shared effect ledger; None: each gateway opens the default one when it first needs it."""
    _decider: Approver | None = field(default=None, init=False, repr=False)

    def decider(self) -> Approver:
        """The run's one approver, made when the first gateway is built (inside the run, so a bad
        approver spec fails the run like any other configuration error found there)."""
        if self._decider is None:
            from portagent.tools.approvers import make_approver

            self._decider = make_approver(self.approver)
        return self._decider


class RunSession:
    """One run as an adapter sees it (see the module docstring). Slotted: an attribute the port does
    not declare cannot be set on it from outside. Weakly referenceable: what the run's own parts keep of
    it (its gateways, the model client's response hook) is a weak reference, so a finished run is freed
    by reference counting, not left as cyclic garbage for the collector."""

    __slots__ = (
        "__weakref__",
        "_gateways",
        "_models",
        "approvals",
        "attempt",
        "budget",
        "bundle",
        "cassette_report",
        "clock",
        "current_agent",
        "earlier_results",
        "endpoint",
        "ids",
        "journal",
        "model_costs",
        "options",
        "provider",
        "recorder",
        "request",
        "request_gate",
        "run_id",
        "scope",
        "stop",
        "tool_lock",
    )

    def __init__(
        self,
        *,
        bundle: AgentBundle,
        request: RunRequest,
        endpoint: Endpoint,
        recorder: TraceRecorder,
        budget: RunBudget,
        clock: Clock,
        ids: IdFactory,
        run_id: str,
        attempt: int,
        scope: str,
        options: RunOptions,
        approvals: RunApprovals | None = None,
    ) -> None:
        self.bundle = bundle
        self.request = request
        self.endpoint = endpoint
        self.recorder = recorder
        self.budget = budget
        self.clock = clock
        """The run's clock: event times, and every latency (model calls and tools) is measured on it."""
        self.ids = ids
        self.run_id = run_id
        self.attempt = attempt
        self.scope = scope
        self.options = options
        self.approvals = approvals if approvals is not None else RunApprovals()
        self.provider: str = request.provider
        self.stop: RunSignal | None = None
        """The first stop signal raised in this run (kept even if an SDK swallowed the exception)."""
        self.model_costs: list[float | None] = []
        self.current_agent = bundle.root
        self.tool_lock = asyncio.Lock()
        """Serializes the run's tool calls (deterministic order; see SessionGateway.call)."""
        self.cassette_report: CassetteReport | None = None
        """Record/replay runs: what the cassette saw (played, unplayed, drift), for ``run.json``. Set by
        the runner around a Python SDK's vcrpy session, or by the Claude adapter for its transport."""
        self.earlier_results: Any = None
        """A resumed attempt's ``tools.context.EarlierResults`` (the calls the attempt before ran)."""
        self.journal: Any = None
        """The run journal (``recording.journal.RunJournal``) when the runner keeps one: a pause marks
        in it the exchange a resumed attempt replays up to."""
        self.request_gate: Any = None
        """A recording's per-request limits (``recording.http_proxy.ForwardGate``; set by the runner from
        ``runtime.request_limits`` under ``record --live --limit`` or a suite's ``limits:``): every model
        request waits on it (``adapters._shared.http_hooks``, the Claude recording proxy). A run with a
        journal leaves it None: the journal's proxy holds the requests."""
        self._gateways: dict[str, SessionGateway] = {}
        self._models: dict[str, str] = {}

    # --- agents, models, tools -------------------------------------------------------------------
    def model_for(self, agent: str | None = None) -> str:
        """The model id ``agent`` (default: the root) runs on for this run's provider. Asked at every model
        call (and by each adapter's records of it): kept per agent once found; the bundle does not change
        during a run."""
        name = agent or self.bundle.root
        model = self._models.get(name)
        if model is not None:
            return model
        node = self.bundle.agents[name]
        model = node.spec.models.for_provider(self.provider) or self.bundle.spec.models.for_provider(
            self.provider
        )
        if not model:
            raise UsageError(
                f"agent {node.name!r} has no model id for provider {self.provider!r}: "
                f"set models.{self.provider} in {node.path}"
            )
        self._models[name] = model
        return model

    def gateway(self, agent: str | None = None) -> SessionGateway:
        """The tool gateway for one agent (its tools and policy; budget, ledger and trace shared)."""
        name = agent or self.bundle.root
        if name not in self._gateways:
            # Imported here: session_gateway imports this module's signals, and the tools floor is only
            # loaded once a run asks for its first gateway.
            from portagent.adapters.session_gateway import build_gateway

            self._gateways[name] = build_gateway(self, self.bundle.agents[name])
        return self._gateways[name]

    def all_gateways(self) -> list[SessionGateway]:
        return list(self._gateways.values())

    # --- signals ---------------------------------------------------------------------------------
    def signal(self, sig: RunSignal) -> RunSignal:
        """Remember the first stop signal and return it for raising."""
        if self.stop is None:
            self.stop = sig
            if isinstance(sig, ApprovalPause) and self.journal is not None:
                self.journal.mark_pause()
        return self.stop

    def end(self) -> None:
        """The adapter is done with the run (the runner calls this once its outcome is known). The stop signal
        is kept, but not its traceback: the traceback's frames hold this session (a gateway's ``self``, an
        adapter's locals), a cycle that would leave the whole finished run to the garbage collector. The
        exceptions it was raised from or during lose theirs too, and a link of that chain back into it (an SDK's
        error whose cause is the signal, raised again from that error) is cut, for the same reason."""
        seen: list[BaseException] = []
        e: BaseException | None = self.stop
        while e is not None and not any(e is s for s in seen):
            seen.append(e)
            e.__traceback__ = None
            if any(e.__context__ is s for s in seen):
                e.__context__ = None
            if any(e.__cause__ is s for s in seen):
                e.__cause__ = None
            e = e.__cause__ or e.__context__

    def check_stopped(self) -> None:
        """Raise the pending stop signal, if any (adapters call this at their hook points)."""
        if self.stop is not None:
            raise self.stop

    def reraise_signal(self, error: BaseException, wrapped: object = None) -> None:
        """The first lines of every adapter's error mapping: a run signal raised in a hook (found in
        the error's chain, or in ``wrapped``, an error an SDK keeps outside the chain, like ADK's
        ``DynamicNodeFailError.error``) or remembered in ``stop`` ends the run, whatever the SDK made
        of it. Returns when there is none: the error is the vendor's to map."""
        sig = unwrap_signal(error)
        if sig is None and isinstance(wrapped, BaseException):
            sig = unwrap_signal(wrapped)
        if sig is error:  # the signal itself: raised again as it is (not "from" itself, a cycle)
            raise sig
        if sig is not None:
            raise sig from error
        if self.stop is not None:
            raise self.stop from error

    def budget_stop(
        self, limit: Limit, limit_value: float, observed: float, agent: str | None = None
    ) -> RunSignal:
        """Trace ``budget.exceeded`` and remember the stop; returns the run's stop signal for raising
        (the first one: an earlier budget stop or approval pause wins)."""
        if isinstance(self.stop, BudgetStop):
            return self.stop
        self.recorder.emit(
            "budget.exceeded", agent=agent, limit=limit, limit_value=limit_value, observed=observed
        )
        return self.signal(BudgetStop(limit, limit_value, observed))

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
        from portagent.adapters.context_manifest import emit_manifest

        emit_manifest(self, agent)  # ``context.manifest`` when the run keeps them (docs/context.md)

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
