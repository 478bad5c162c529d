"""ToolSpec: a tool is a contract, not a function (DESIGN §3)."""

from __future__ import annotations

import json
import re
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from portagent.contracts._base import Contract, short_hash

Effect = Literal[
    "read", "compute", "prepare_change", "reversible_write", "external_effect", "privileged_operation"
]
"""Effect classes, from harmless to dangerous."""

EFFECTS: tuple[Effect, ...] = (
    "read",
    "compute",
    "prepare_change",
    "reversible_write",
    "external_effect",
    "privileged_operation",
)
WRITE_EFFECTS: frozenset[str] = frozenset({"reversible_write", "external_effect"})
"""Effects that change the world: idempotency is mandatory and approval cannot be opted out of."""

ErrorCode = Literal[
    "unknown_tool",
    "validation_error",
    "precondition_failed",
    "permission_denied",
    "approval_required",
    "approval_rejected",
    "budget_exhausted",
    "not_found",
    "rate_limited",
    "timeout",
    "partial_result",
    "conflict",
    "duplicate",
    "handler_error",
    "output_not_serializable",
]
"""The error catalogue shared by tool results and gateway rejections."""

HANDLER_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
SEMVER_RE = r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$"
TOOL_NAME_RE = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"

MAX_SCHEMA_NODES = 20_000
"""Most values (objects, arrays, scalars, counted as often as they are referenced) one input or output
schema may hold; checked when the spec is validated, before any schema is hashed or sent."""
MAX_SCHEMA_BYTES = 256 * 1024
"""Largest canonical JSON of one schema: every provider sends it with each model call."""


def check_schema_size(schema: Any, field: str) -> None:
    """Refuse an oversized schema without expanding it first (shared sub-objects count each time)."""
    seen = 0
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_SCHEMA_NODES:
            raise ValueError(f"{field} has more than {MAX_SCHEMA_NODES} values; a schema must stay small")
        if isinstance(node, dict):
            bad = [k for k in node if not isinstance(k, str)]
            if bad:  # YAML reads an unquoted 1, null, true or date key as one; JSON has none
                raise ValueError(f"{field} has a key {str(bad[0])!r} that is not a string (quote it in YAML)")
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    size = len(json.dumps(schema, separators=(",", ":"), default=str).encode("utf-8"))
    if size > MAX_SCHEMA_BYTES:
        raise ValueError(f"{field} is {size} bytes of JSON; at most {MAX_SCHEMA_BYTES} are allowed")


class ToolBudgets(Contract):
    """Per-call limits the gateway enforces."""

    timeout_ms: Annotated[int, Field(ge=1)] = 30_000
    """The handler is cancelled after this long and the call ends in ``timeout``."""
    max_retries: Annotated[int, Field(ge=0, le=10)] = 0
    """Retries after a ``timeout`` or ``rate_limited`` failure; honoured only for idempotent tools."""
    max_output_bytes: Annotated[int, Field(ge=1)] = 65_536
    """Outputs larger than this (canonical JSON, UTF-8) are cut and marked ``partial_result``."""
    max_rows: Annotated[int | None, Field(ge=1)] = None
    """When the output is a list (or has a top-level list field ``rows``/``items``), keep at most this many."""


class Idempotency(Contract):
    """How a call's idempotency key is derived; required for ``reversible_write``/``external_effect``."""

    required: bool = False
    """When true, the gateway records intent/outcome in the effect ledger and never repeats an effect."""
    key_field: str | None = None
    """An argument whose value is the key (e.g. ``request_id``)."""
    key_template: str | None = None
    """A template over arguments, e.g. ``"{case_id}:{template_id}"``; used when ``key_field`` is absent.
    With neither, the key is the tool name plus the arguments hash."""
    reconcile: str | None = None
    """``module:function(key, args, context)`` that looks up whether an effect whose outcome was never
    recorded (a crash between intent and outcome) really happened; returns its output or ``None``.
    Without it, such a pending entry answers ``conflict`` until resolved by hand."""


class Precondition(Contract):
    """A named predicate the gateway evaluates against the arguments and the run context."""

    name: str
    """Shown in the ``precondition_failed`` observation."""
    check: str
    """``module:function`` taking ``(args: dict, context: dict)`` and returning ``bool`` or an error string."""
    message: str = ""
    """Human explanation used when the check returns ``False``."""

    @field_validator("check")
    @classmethod
    def _handler_form(cls, v: str) -> str:
        if not HANDLER_RE.match(v):
            raise ValueError(f"expected 'module:function', got {v!r}")
        return v


class InvalidExample(Contract):
    """Arguments that must be rejected, and the error code they must get."""

    args: dict[str, Any]
    """The arguments."""
    error: ErrorCode = "validation_error"
    """The expected catalogue code."""


class ToolExamples(Contract):
    """Examples that ``portagent validate`` and the test-suite check automatically."""

    valid: list[dict[str, Any]] = []
    """Arguments that must pass ``input_schema``."""
    invalid: list[InvalidExample] = []
    """Arguments that must fail, with their error code."""


class ToolSpec(Contract):
    """A portable tool: its schema, effect, permissions, budgets and handler."""

    kind: Literal["tool"] = "tool"
    """File kind marker (omit for inline tools)."""
    schema_version: Literal[1] = 1
    """Version of this file format."""
    name: Annotated[str, Field(pattern=TOOL_NAME_RE)]
    """Unique tool name, verb_object style (``get_student_record``)."""
    version: Annotated[str, Field(pattern=SEMVER_RE)] = "1.0.0"
    """Semantic version; every trace event names ``tool@version``."""
    owner: str = ""
    """Team or person responsible."""
    description: Annotated[str, Field(min_length=1)]
    """What the tool does, as the model will read it."""
    when_to_use: list[str] = []
    """Situations where the tool is the right choice (appended to the description the model sees)."""
    when_not_to_use: list[str] = []
    """Situations where it is not."""
    effect: Effect
    """Effect class; drives policy defaults, idempotency and risk."""
    input_schema: dict[str, Any]
    """JSON Schema 2020-12 of the arguments (an object schema with ``properties``)."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema of a successful output; checked after execution."""
    preconditions: list[Precondition] = []
    """Named predicates checked before budget and permission."""
    permissions: list[str] = []
    """Actor scopes the call needs (``tickets:write``)."""
    requires_approval: bool | None = None
    """True forces approval; None leaves it to the policy. False is refused for write effects."""
    reversible: bool | None = None
    """Whether the effect can be undone; defaults to true for read/compute/prepare_change."""
    cost_usd: Annotated[float, Field(ge=0)] = 0.0
    """Per-call tool cost, counted against the run's ``max_cost_usd`` only when executed."""
    budgets: ToolBudgets = ToolBudgets()
    """Per-call limits."""
    idempotency: Idempotency = Idempotency()
    """Idempotency settings."""
    handler: str
    """``module:function`` (sync or async), resolved at run time, never at validation time."""
    examples: ToolExamples = ToolExamples()
    """Examples checked by ``portagent validate``."""

    @field_validator("handler")
    @classmethod
    def _handler_form(cls, v: str) -> str:
        if not HANDLER_RE.match(v):
            raise ValueError(f"handler must be 'module:function', got {v!r}")
        return v

    @model_validator(mode="after")
    def _invariants(self) -> ToolSpec:
        if self.effect in WRITE_EFFECTS and not self.idempotency.required:
            raise ValueError(
                f"effect {self.effect!r} requires idempotency: set idempotency.required: true "
                "(with key_field or key_template)"
            )
        if self.effect in WRITE_EFFECTS and self.requires_approval is False:
            raise ValueError(
                f"a {self.effect!r} tool cannot opt out of approval (requires_approval: false); "
                "leave it unset and let a policy rule allow it explicitly"
            )
        check_schema_size(self.input_schema, "input_schema")
        if self.output_schema is not None:
            check_schema_size(self.output_schema, "output_schema")
        schema = self.input_schema
        if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
            raise ValueError("input_schema must be an object schema with 'type: object' and 'properties'")
        return self

    @property
    def is_reversible(self) -> bool:
        if self.reversible is not None:
            return self.reversible
        return self.effect in ("read", "compute", "prepare_change")

    @property
    def ref(self) -> str:
        """``name@version``, as traces name tools."""
        return f"{self.name}@{self.version}"

    @cached_property
    def schema_hash(self) -> str:
        return short_hash({"input": self.input_schema, "output": self.output_schema})

    @cached_property
    def description_hash(self) -> str:
        return short_hash(
            {
                "description": self.description,
                "when_to_use": self.when_to_use,
                "when_not_to_use": self.when_not_to_use,
            }
        )

    @cached_property
    def spec_hash(self) -> str:
        return short_hash(self.hash_payload())

    def model_description(self) -> str:
        """The description the model sees: description plus when/when-not guidance."""
        parts = [self.description.strip()]
        if self.when_to_use:
            parts.append("Use when: " + "; ".join(self.when_to_use))
        if self.when_not_to_use:
            parts.append("Do not use when: " + "; ".join(self.when_not_to_use))
        return "\n".join(parts)


class ToolSet(Contract):
    """A file holding several tools (``kind: tools``)."""

    kind: Literal["tools"] = "tools"
    """File kind marker."""
    schema_version: Literal[1] = 1
    """Version of this file format."""
    tools: list[ToolSpec]
    """The tools."""
