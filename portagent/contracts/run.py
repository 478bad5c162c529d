"""Run contracts: RunRequest, RunResult, the RunState machine and ``run.json`` (DESIGN §3)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from portagent.contracts._base import Contract, first_invalid_text
from portagent.contracts.policy import Environment
from portagent.contracts.providers import ProviderName
from portagent.contracts.status import RunStatus as RunStatus
from portagent.contracts.trace import CostSource, Mode, Source

RUN_RECORD_SCHEMA_VERSION = 1

TERMINAL: frozenset[str] = frozenset({"completed", "failed", "budget_exhausted", "cancelled", "duplicate"})

TRANSITIONS: dict[str, frozenset[str]] = {
    "created": frozenset({"running", "duplicate", "failed", "cancelled"}),
    "running": frozenset({"waiting_approval", "completed", "failed", "budget_exhausted", "cancelled"}),
    "waiting_approval": frozenset({"running", "cancelled", "failed"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "budget_exhausted": frozenset(),
    "cancelled": frozenset(),
    "duplicate": frozenset(),
}
"""Allowed transitions; anything else raises ``InvalidTransition``."""


class InvalidTransition(RuntimeError):
    """A RunState transition that the table does not allow (a bug, not a user mistake)."""


class RunState:
    """The run state machine. ``advance`` refuses transitions outside ``TRANSITIONS``."""

    def __init__(self, status: RunStatus = "created") -> None:
        self.status: RunStatus = status
        self.history: list[str] = [status]

    def advance(self, new: RunStatus) -> None:
        if new not in TRANSITIONS[self.status]:
            raise InvalidTransition(f"run cannot go from {self.status!r} to {new!r}")
        self.status = new
        self.history.append(new)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


class RunRequest(Contract):
    """What to run: input, provider, identity and context."""

    input: str | list[str]
    """User message, or several for a multi-turn conversation."""
    provider: ProviderName
    """Provider."""
    request_id: str | None = None
    """Caller's id for the request."""
    idempotency_key: str | None = None
    """A repeated key answers ``duplicate`` (or resumes a run waiting for approval)."""
    actor: str = "user"
    """Who asks."""
    scopes: list[str] = []
    """Actor scopes (policy rules and tool permissions read them)."""
    env: Environment = "dev"
    """Environment."""
    session_id: str | None = None
    """Conversation session to continue."""
    context: dict[str, Any] = {}
    """Run context read by preconditions and risk scoring (``confidence``, ``evidence`` …)."""
    case_id: str | None = None
    """Eval case id."""
    repeat: int = 0
    """Eval repeat index."""

    @model_validator(mode="after")
    def _text_is_unicode(self) -> RunRequest:
        fields = {
            "input": self.input,
            "request_id": self.request_id,
            "idempotency_key": self.idempotency_key,
            "actor": self.actor,
            "scopes": self.scopes,
            "session_id": self.session_id,
            "context": self.context,
            "case_id": self.case_id,
        }  # every text field, without a dump per request (this runs for every run)
        where = first_invalid_text(fields)
        if where is not None:
            raise ValueError(
                f"{where}: not valid Unicode text (a lone surrogate: bytes that were not UTF-8?)"
            )
        return self

    @property
    def messages(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else list(self.input)


class Usage(Contract):
    """Token totals (OTel semantics: input includes cache reads and writes)."""

    input_tokens: int = 0
    """Input tokens."""
    output_tokens: int = 0
    """Output tokens."""
    cache_read_tokens: int = 0
    """Cache reads."""
    cache_write_tokens: int = 0
    """Cache writes."""
    reasoning_tokens: int = 0
    """Reasoning tokens."""
    model_calls: int = 0
    """Model calls."""


class RunResult(Contract):
    """One shape for every outcome."""

    run_id: str
    """The run."""
    status: RunStatus
    """Final status."""
    stop_reason: str
    """Why it stopped (``final_output``, ``max_turns``, ``approval_pending``, ``provider_error`` …)."""
    final_output: Any = None
    """Final output."""
    output_valid: bool | None = None
    """Structured output validity (None without ``output_schema``)."""
    usage: Usage = Usage()
    """Token totals."""
    tool_calls: int = 0
    """Tool calls made."""
    cost_usd: float | None = None
    """Model + tool cost."""
    cost_source: CostSource = "unknown"
    """Provenance of the cost."""
    duration_ms: float | None = None
    """Wall time."""
    cold_start: bool = False
    """The first run of this provider in its process (for a replay: in the recording's process): its
    timings include the SDK's one-time start-up — lazy imports, first-use schema building, the first
    connection — 0.7–1.9 s measured here, which is not the agent's latency. Latency figures leave such
    runs out when warm ones exist, and a case's ``max_latency_ms`` allows one 3 s more."""
    trace_path: str | None = None
    """Where ``trace.jsonl`` was written."""
    pending_approvals: list[str] = []
    """Approval ids still pending."""
    attempt: int = 1
    """Attempt number."""
    error: str | None = None
    """Error message for failed runs."""


class RunManifest(Contract):
    """Provenance of a recorded run."""

    portagent_version: str
    """portagent version."""
    provider: str
    """Provider."""
    sdk: str
    """SDK package."""
    sdk_version: str
    """SDK version."""
    cli_version: str | None = None
    """Claude Code CLI version (claude only)."""
    model: str
    """Model id."""
    agent: str
    """Agent name."""
    agent_version: str
    """Agent version."""
    spec_hash: str
    """AgentSpec hash."""
    tool_hashes: dict[str, str] = {}
    """ToolSpec name → spec hash."""
    tool_versions: dict[str, str] = {}
    """ToolSpec name → version (empty in recordings made before it was recorded: their trace's
    ``tool.call`` events then say the version of each tool they called)."""
    policy_hash: str
    """Policy hash."""
    source: Source
    """live / endpoint / emulator / replay (``contracts.trace.Source``)."""
    recorded_source: Source | None = None
    """For a replay: the source of the recording it played; else None."""
    base_url: str | None = None
    """The model endpoint's base URL when it is not the vendor's default (``source: endpoint``, or a
    ``live`` run pointed at an official host explicitly); credentials and query removed."""
    mode: Mode
    """direct / record / replay."""
    recorded_at: str
    """ISO-8601 UTC."""
    emulator_script_hash: str | None = None
    """Hash of the emulator script, for emulator runs."""
    case_id: str | None = None
    """Eval case."""
    repeat: int = 0
    """Repeat index."""
    request: dict[str, Any] = {}
    """The RunRequest (input, actor, scopes, env, context …) so a replay asks the same thing."""
    approvals: list[dict[str, Any]] = []
    """Approval decisions taken during the run (tool, args_hash, decision, args), so a replay decides
    the same way whatever order parallel calls arrive in."""
    cassette: dict[str, Any] = {}
    """What the vendor cassette holds or played (interactions, unplayed, drift)."""


class AttemptRecord(Contract):
    """One attempt of a run in ``run.json``: how it ended and what its journal holds (ADR 0007)."""

    attempt: int = Field(ge=1)
    """1 for the first attempt; each resume adds one."""
    status: RunStatus
    """How the attempt ended."""
    stop_reason: str
    """Why it ended."""
    started_at: str
    """When it started (ISO 8601)."""
    resumed: str | None = None
    """Why it is a new attempt (a decided approval, an interrupted process), or None for the first."""
    journal: dict[str, Any] | None = None
    """Its journal (``recording/journal.py``): file, exchanges (replayed / live), bytes, sha256, and
    ``paused_after`` — the exchanges a resume replays. None when the run kept no journal (record,
    replay, or a run without a run folder)."""


class RunRecord(Contract):
    """``run.json``: the RunResult plus its manifest. Versioned; fixed before cassettes are committed."""

    kind: Literal["run"] = "run"
    """File kind marker."""
    schema_version: Annotated[int, Field(ge=1, le=RUN_RECORD_SCHEMA_VERSION)] = RUN_RECORD_SCHEMA_VERSION
    """Version of this file format."""
    result: RunResult
    """The result."""
    manifest: RunManifest
    """The manifest."""
    attempts: list[AttemptRecord] = Field(default_factory=list)
    """Every attempt of the run so far, in order (a resumed run has several), each with its journal."""
    invocation: dict[str, Any] | None = None
    """How the command line started the run (agent file, provider, endpoint, approver): what
    ``portagent resume RUN_ID`` starts again. Never holds a key."""
