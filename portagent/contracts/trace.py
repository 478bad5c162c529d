"""TraceEvent: one vocabulary for every provider (DESIGN §3). JSONL, one event per line."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from portagent.contracts._base import Contract
from portagent.contracts.policy import ApprovalStatus, Decision
from portagent.contracts.router import GateOutcome, RouteAlternative, RouteKind
from portagent.contracts.tool import ErrorCode

TRACE_SCHEMA_VERSION = 1

Source = Literal["live", "endpoint", "emulator", "replay"]
"""Where a run's model answers came from: ``live`` (a vendor's official endpoint), ``endpoint`` (any
other base URL — a proxy, a gateway, a local stand-in; the URL is in the run's manifest), ``emulator``
(portagent's scripted server) or ``replay`` (a recording; its own source is ``recorded_source``).
Traces written before ``endpoint``/``replay`` existed say ``live``/``emulator`` and stay readable."""
Mode = Literal["direct", "record", "replay"]
"""How the run reached its model endpoint."""
CostSource = Literal["vendor", "computed", "unknown"]
"""Where ``cost_usd`` comes from."""


class _Event(Contract):
    schema_version: int = TRACE_SCHEMA_VERSION
    """Trace schema version."""
    run_id: str
    """The run."""
    trace_id: Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]
    """W3C trace id (32 hex)."""
    span_id: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
    """W3C span id (16 hex)."""
    parent_span_id: str | None = None
    """Parent span (the run's span for its children)."""
    seq: Annotated[int, Field(ge=0)]
    """Position in the trace, from 0."""
    ts: str
    """ISO-8601 UTC timestamp."""
    provider: str
    """openai / claude / adk."""
    agent: str
    """Agent that produced the event."""
    provider_details: dict[str, Any] = {}
    """Vendor-only data (vendor ids, raw finish reasons …); volatile for comparisons."""


class RunStarted(_Event):
    type: Literal["run.started"] = "run.started"
    """Event type."""
    agent_version: str
    """AgentSpec version."""
    spec_hash: str
    """AgentSpec hash."""
    policy_hash: str
    """Policy hash."""
    sdk: str
    """Vendor SDK package."""
    sdk_version: str
    """Its version."""
    model: str
    """Model id."""
    case_id: str | None = None
    """Eval case, when run by a suite."""
    repeat: int = 0
    """Repeat index."""
    source: Source
    """live / endpoint / emulator / replay (``Source``)."""
    recorded_source: Source | None = None
    """For a replay: the source of the recording it plays (live / endpoint / emulator); else None."""
    mode: Mode
    """direct / record / replay."""
    attempt: int = 1
    """Attempt number (a resumed run has attempt > 1)."""
    input: Any = None
    """The user input."""
    shared_settings_forced: bool = False
    """Whether shared model settings were forced onto the provider."""
    cold_start: bool = False
    """The first run of this provider in its process (for a replay: in the recording's process): its
    timings include the SDK's one-time start-up — lazy imports, first-use schema building, the first
    connection — 0.7–1.9 s measured here, which is not the agent's latency. Latency figures leave such
    runs out when warm ones exist, and a case's ``max_latency_ms`` allows one 3 s more."""


class AttemptStarted(_Event):
    """A resume boundary: the attempt that starts here continues the run (right after its ``run.started``)."""

    type: Literal["attempt.started"] = "attempt.started"
    """Event type."""
    attempt: int = Field(ge=2)
    """The attempt that starts (2 for the first resume)."""
    resumed: str
    """Why: a decided approval, or an earlier attempt whose process died."""
    previous_status: str
    """How the attempt before ended (``waiting_approval``, ``interrupted``)."""
    journal: str | None = None
    """The journal this attempt replays (relative to the run folder), or None when there is none."""
    replays: int = 0
    """Model exchanges served from that journal before the run continues against the endpoint."""
    decided: list[str] = []
    """Approval cards decided since the attempt before (ids)."""


ContextPartType = Literal["instruction", "tools", "history", "input", "tool_result", "memory", "handoff"]
"""What a part of a model call's context is (design source ch. 04: I, T, H, the goal, tool results, M)."""


class ContextPart(Contract):
    """One part of what a model call was given."""

    type: ContextPartType
    """What it is."""
    source: str
    """Where it comes from (``agent:desk.instructions``, ``session:T1#1-4``, ``tool:get_order@call_2``,
    ``memory:mem_…``, ``input.0``)."""
    tokens: int
    """Its token count (``ContextManifestEvent.token_count`` says how it was counted)."""


class ExcludedPart(Contract):
    """A part left out of a model call, and why."""

    type: ContextPartType
    """What it is."""
    source: str
    """Where it comes from."""
    tokens: int
    """What it would have cost."""
    reason: str
    """Why it was left out (``max_context_tokens 800: oldest turns left out, newest kept``)."""


class ContextManifestEvent(_Event):
    """The receipt of what the model saw: emitted before each model call (docs/context.md)."""

    type: Literal["context.manifest"] = "context.manifest"
    """Event type."""
    call_index: int = Field(ge=1)
    """Which model call of the run this manifest precedes (1 for the first)."""
    model: str
    """The model called."""
    parts: list[ContextPart]
    """Included parts, in the order they reach the model."""
    excluded: list[ExcludedPart] = []
    """Parts left out, with the reason."""
    total_tokens: int
    """Sum of the included parts' tokens."""
    max_context_tokens: int | None = None
    """The agent's context budget, when it has one."""
    over_budget: bool = False
    """True when the included parts alone exceed the budget (what cannot be left out: instructions, input)."""
    token_count: Literal["estimate", "tokenizer"] = "estimate"
    """``estimate``: characters / 4 (no tokenizer for the provider was available offline)."""
    not_counted: list[str] = []
    """What the vendor runtime adds that portagent does not see (its own system prompt, framing)."""


class MemoryReadEvent(_Event):
    """Memories a ``recall`` returned (after its ``tool.result``; docs/memory.md)."""

    type: Literal["memory.read"] = "memory.read"
    """Event type."""
    call_id: str
    """The recall call."""
    query: str
    """What was asked."""
    memory_ids: list[str]
    """Returned records, best first."""
    scores: list[float] = []
    """Their scores, in the same order."""


class MemoryWriteEvent(_Event):
    """A memory stored or retired by ``remember`` / ``forget`` (after its ``tool.result``; docs/memory.md)."""

    type: Literal["memory.write"] = "memory.write"
    """Event type."""
    call_id: str
    """The call."""
    operation: Literal["remember", "forget"]
    """What was done."""
    memory_id: str
    """The record."""
    scope: str | None = None
    """Its scope (remember)."""
    owner: str | None = None
    """Its owner (remember)."""


class ModelCall(_Event):
    type: Literal["model.call"] = "model.call"
    """Event type."""
    model: str
    """Model id."""
    input_tokens: int = 0
    """Input tokens, OTel semantics (cache reads and writes included)."""
    output_tokens: int = 0
    """Output tokens."""
    cache_read_tokens: int = 0
    """Input tokens read from cache."""
    cache_write_tokens: int = 0
    """Input tokens written to cache."""
    reasoning_tokens: int = 0
    """Reasoning tokens (part of output)."""
    latency_ms: float | None = None
    """Wall time of the call."""
    finish_reason: str | None = None
    """Normalized finish reason: stop / tool_calls / length / content_filter / error / other — the same
    words on every provider (``length``: the token limit; ``content_filter``: the vendor's filter or a
    refusal — Anthropic ``stop_reason: refusal``, an OpenAI reply whose content is a ``refusal``, the run's
    answer then being the refusal's text; ``error``: the vendor says the reply itself is broken, e.g. Gemini ``MALFORMED_FUNCTION_CALL``,
    and the run fails ``provider_error``; ``other``: any other reason than the normal one). A reply's tool
    calls run only when it is ``tool_calls`` (the vendor said the reply ended normally with calls); a reply
    holding calls that ended otherwise names them in ``provider_details.calls_not_run``."""
    response_id: str | None = None
    """Vendor response id."""


ToolVia = Literal["function", "mcp", "agent", "builtin"]


class ToolCall(_Event):
    type: Literal["tool.call"] = "tool.call"
    """Event type."""
    call_id: str
    """Deterministic ``call_<n>``; the vendor id is in ``provider_details``."""
    tool: str
    """ToolSpec name."""
    tool_version: str = ""
    """ToolSpec version."""
    schema_hash: str = ""
    """ToolSpec schema hash."""
    args: Any = None
    """Parsed arguments (or the raw string when unparseable)."""
    args_hash: str = ""
    """Hash of the parsed arguments."""
    via: ToolVia = "function"
    """How the vendor runtime reached the tool."""


class PermissionDecisionEvent(_Event):
    type: Literal["permission.decision"] = "permission.decision"
    """Event type."""
    call_id: str
    """The call decided."""
    decision: Decision
    """allow / approval_required / deny."""
    reason: str
    """Why."""
    rule: str
    """Deciding rule."""
    policy_version: str
    """Policy version."""
    risk_score: float | None = None
    """Risk score, when computed."""


class ApprovalRequested(_Event):
    type: Literal["approval.requested"] = "approval.requested"
    """Event type."""
    approval_id: str
    """Card id."""
    call_id: str
    """The call."""
    card: dict[str, Any]
    """The ApprovalCard as shown to the reviewer."""


class ApprovalResolved(_Event):
    type: Literal["approval.resolved"] = "approval.resolved"
    """Event type."""
    approval_id: str
    """Card id."""
    call_id: str
    """The call."""
    status: ApprovalStatus
    """Outcome."""
    reviewer: str | None = None
    """Who decided."""
    effective_args: dict[str, Any] | None = None
    """Arguments that run (edited ones included)."""
    note: str = ""
    """The reviewer's note (it reaches the model with a rejection, so replays must repeat it)."""


class ToolResult(_Event):
    type: Literal["tool.result"] = "tool.result"
    """Event type."""
    call_id: str
    """The call this answers."""
    tool: str = ""
    """ToolSpec name (repeated for readability)."""
    ok: bool
    """Whether the tool succeeded."""
    error: ErrorCode | None = None
    """Catalogue code when not ok."""
    output: Any = None
    """Output or structured observation (size-limited)."""
    latency_ms: float | None = None
    """Handler wall time."""
    effect_id: str | None = None
    """Ledger effect id for idempotent effects."""
    duplicate: bool = False
    """The ledger answered with an earlier outcome instead of executing."""


class Handoff(_Event):
    type: Literal["handoff"] = "handoff"
    """Event type."""
    from_agent: str
    """Delegating agent."""
    to_agent: str
    """Receiving agent."""
    kind: Literal["handoff", "agent_as_tool"]
    """Delegation kind."""
    reason: str = ""
    """Why (from the model, when given)."""


class HandoffPackageEvent(_Event):
    """What a sub-agent was given on a ``context: handoff`` delegation: the package compacted from the run so
    far (``tracing/handoff.py``), emitted right after its ``handoff`` event (docs/handoff.md)."""

    type: Literal["handoff.package"] = "handoff.package"
    """Event type."""
    from_agent: str
    """Delegating agent."""
    to_agent: str
    """Receiving agent."""
    handoff_id: str
    """The package's id (the sub-agent's input names it)."""
    task: str
    """The coordinator's request, sent after the package."""
    tokens: int
    """Estimated tokens of the package as sent (characters / 4)."""
    package: dict[str, Any]
    """The ``HandoffPackage`` (``contracts/handoff.py``)."""


class RouteDecisionEvent(_Event):
    type: Literal["route.decision"] = "route.decision"
    """Event type."""
    request_id: str
    """The request routed."""
    decision: GateOutcome
    """run / review / stop."""
    selected_route: str | None
    """The chosen route (None when ``stop``)."""
    selected_kind: RouteKind | None = None
    """Its kind (local_tool / mcp_tool / a2a_agent / human_review)."""
    score: float | None = None
    """Its score."""
    reason: str
    """Why this decision."""
    alternatives: list[RouteAlternative] = []
    """Every candidate with its score, gate and reasons, best first."""
    fallbacks: list[str] = []
    """Routes to try if the chosen one fails before a useful result (equal or lower effect only)."""
    router_version: str = ""
    """The router spec's version."""


class BudgetExceeded(_Event):
    type: Literal["budget.exceeded"] = "budget.exceeded"
    """Event type."""
    limit: Literal["max_turns", "max_tool_calls", "max_cost_usd", "timeout_s"]
    """Which limit."""
    limit_value: float
    """Its value."""
    observed: float
    """What was observed."""


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    """Event type."""
    error_type: str
    """Error class or vendor error type."""
    message: str
    """What happened."""
    retryable: bool = False
    """Whether a retry may succeed."""


class RunCompleted(_Event):
    type: Literal["run.completed"] = "run.completed"
    """Event type."""
    status: str
    """Final RunStatus."""
    stop_reason: str
    """Why the run stopped."""
    final_output: Any = None
    """Final output (text or structured)."""
    output_valid: bool | None = None
    """Whether the output matched ``output_schema`` (None when there is none)."""
    input_tokens: int = 0
    """Totals over ``model.call`` events."""
    output_tokens: int = 0
    """Totals."""
    cache_read_tokens: int = 0
    """Totals."""
    cache_write_tokens: int = 0
    """Totals."""
    reasoning_tokens: int = 0
    """Totals."""
    model_calls: int = 0
    """Number of model calls."""
    tool_calls: int = 0
    """Number of tool calls."""
    cost_usd: float | None = None
    """Model + tool cost."""
    cost_source: CostSource = "unknown"
    """Provenance of ``cost_usd``."""
    duration_ms: float | None = None
    """Wall time of the run."""


TraceEvent = Annotated[
    RunStarted
    | AttemptStarted
    | ContextManifestEvent
    | ModelCall
    | MemoryReadEvent
    | MemoryWriteEvent
    | ToolCall
    | PermissionDecisionEvent
    | ApprovalRequested
    | ApprovalResolved
    | ToolResult
    | Handoff
    | HandoffPackageEvent
    | RouteDecisionEvent
    | BudgetExceeded
    | ErrorEvent
    | RunCompleted,
    Field(discriminator="type"),
]
"""Any trace event."""

TRACE_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(TraceEvent)

EVENT_TYPES: tuple[str, ...] = (
    "run.started",
    "attempt.started",
    "context.manifest",
    "model.call",
    "memory.read",
    "memory.write",
    "tool.call",
    "permission.decision",
    "approval.requested",
    "approval.resolved",
    "tool.result",
    "handoff",
    "handoff.package",
    "route.decision",
    "budget.exceeded",
    "error",
    "run.completed",
)


def parse_event(data: dict[str, Any]) -> Any:
    """Validate one JSON object as a TraceEvent."""
    return TRACE_EVENT_ADAPTER.validate_python(data)
