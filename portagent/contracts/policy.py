"""PermissionPolicy: the model may suggest, the policy decides (DESIGN §3)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from portagent.contracts._base import Contract, short_hash
from portagent.contracts.tool import EFFECTS, Effect

Decision = Literal["allow", "approval_required", "deny"]
"""What the policy says about one call."""

Environment = Literal["lab", "dev", "staging", "prod"]
"""Where a run happens; rules and risk scoring read it."""

RiskAction = Literal["read", "draft", "write", "send", "publish"]
"""The design source's ActionEnvelope vocabulary (mapped from effect classes)."""

DEFAULT_DECISIONS: dict[str, Decision] = {
    "read": "allow",
    "compute": "allow",
    "prepare_change": "allow",
    "reversible_write": "approval_required",
    "external_effect": "approval_required",
    "privileged_operation": "deny",
}


class ArgPredicate(Contract):
    """A test on one argument (dotted path). Exactly one operator must be set."""

    arg: Annotated[str, Field(min_length=1)]
    """Dotted path into the arguments (``recipient.domain``)."""
    equals: Any = None
    """Equal to this value."""
    in_: Annotated[list[Any] | None, Field(alias="in")] = None
    """One of these values."""
    prefix: str | None = None
    """A string starting with this."""
    not_prefix: str | None = None
    """A string not starting with this (e.g. a path outside a workspace)."""
    glob: str | None = None
    """A string matching this shell glob."""
    regex: str | None = None
    """A string containing a match of this regular expression."""
    min: float | None = None
    """A number ≥ this."""
    max: float | None = None
    """A number ≤ this."""

    @field_validator("regex")
    @classmethod
    def _regex_compiles(cls, value: str | None) -> str | None:
        # Compiled when the spec loads, so ``validate`` refuses what would otherwise fail (or never match)
        # only when a call reaches the rule.
        if value is not None:
            try:
                re.compile(value)
            except re.error as e:
                raise ValueError(f"regex {value!r} does not compile: {e}") from None
        return value

    @model_validator(mode="after")
    def _one_operator(self) -> ArgPredicate:
        ops = [
            k
            for k in ("equals", "in_", "prefix", "not_prefix", "glob", "regex")
            if getattr(self, k) is not None
        ]
        has_range = self.min is not None or self.max is not None
        if len(ops) + (1 if has_range else 0) != 1:
            raise ValueError(
                "set exactly one of equals, in, prefix, not_prefix, glob, regex, or a min/max range"
            )
        return self


class PolicyRule(Contract):
    """One rule: what it matches and what it decides. Matching needs every given condition."""

    id: Annotated[str, Field(min_length=1)]
    """Stable id, reported as ``rule`` on every decision it makes."""
    decision: Decision | None = None
    """What the rule decides when it matches. Leave it out for a rule that only classifies the call
    for risk scoring (``risk_action``) and lets the score decide."""
    reason: str = ""
    """Why; shown to the model and on approval cards."""
    tool: str | None = None
    """Tool-name glob (``send_*``)."""
    effect: list[Effect] = []
    """Effect classes matched (any of)."""
    when: list[ArgPredicate] = []
    """Argument predicates (all must hold)."""
    env: list[Environment] = []
    """Environments matched (any of)."""
    scopes_any: list[str] = []
    """Matches when the actor has at least one of these scopes."""
    scopes_missing: list[str] = []
    """Matches when the actor lacks at least one of these scopes."""
    risk_action: RiskAction | None = None
    """Overrides the effect's risk action (e.g. ``publish`` instead of ``send``)."""

    @model_validator(mode="after")
    def _matches_something(self) -> PolicyRule:
        if not (self.tool or self.effect or self.when or self.env or self.scopes_any or self.scopes_missing):
            raise ValueError("a rule must match on at least one of tool, effect, when, env, scopes")
        if self.decision is None and self.risk_action is None:
            raise ValueError("a rule needs a decision (allow, approval_required, deny) or a risk_action")
        return self


class RiskScoring(Contract):
    """The design source's risk score (ACCEPTANCE ch. 08), with configurable weights and thresholds."""

    weights: dict[str, float] = {
        "effect": 0.30,
        "env": 0.20,
        "reversibility": 0.20,
        "confidence": 0.15,
        "evidence": 0.10,
        "cost": 0.05,
    }
    """Weight of each factor."""
    effect_weights: dict[RiskAction, float] = {
        "read": 0.05,
        "draft": 0.15,
        "write": 0.55,
        "send": 0.70,
        "publish": 0.80,
    }
    """Risk of each action class."""
    env_weights: dict[Environment, float] = {"lab": 0.05, "dev": 0.15, "staging": 0.35, "prod": 0.70}
    """Risk of each environment."""
    reversible_weight: float = 0.05
    """Risk when the effect can be undone."""
    irreversible_weight: float = 0.45
    """Risk when it cannot."""
    missing_evidence: dict[str, float] = {"0": 0.25, "1": 0.10}
    """Risk by evidence count (keys are counts; larger counts score 0)."""
    cost_cap: float = 0.40
    """The cost factor is ``min(cost / 2, cost_cap)``."""
    allow_below: Annotated[float, Field(ge=0, le=1)] = 0.25
    """Risk strictly below this is allowed."""
    approval_below: Annotated[float, Field(ge=0, le=1)] = 0.62
    """Risk strictly below this (and not allowed) needs approval; otherwise deny."""
    deny_external_without_evidence: bool = True
    """send/publish with no evidence is denied before scoring."""
    approval_in_prod_for_writes: bool = True
    """write/send/publish in prod needs approval before scoring."""

    @model_validator(mode="after")
    def _ordered(self) -> RiskScoring:
        if self.allow_below > self.approval_below:
            raise ValueError("allow_below must not exceed approval_below")
        return self


class PermissionPolicy(Contract):
    """Rules + effect defaults + optional risk scoring. Precedence: explicit deny → mandatory approval
    → explicit allow → risk scoring (if configured) → effect-class default."""

    kind: Literal["policy"] = "policy"
    """File kind marker."""
    schema_version: Literal[1] = 1
    """Version of this file format."""
    name: str = "default"
    """Policy name."""
    version: str = "1"
    """Reported as ``policy_version`` on every decision."""
    defaults: dict[Effect, Decision] = {}
    """Overrides of the effect-class defaults (``privileged_operation`` cannot default to allow)."""
    rules: list[PolicyRule] = []
    """Rules, evaluated by precedence class then in order."""
    risk: RiskScoring | None = None
    """Risk scoring, used when no explicit rule decides."""
    approval_expiry_s: Annotated[int, Field(ge=1)] = 600
    """How long an approval card stays decidable."""

    @model_validator(mode="after")
    def _check(self) -> PermissionPolicy:
        if self.defaults.get("privileged_operation") == "allow":
            raise ValueError(
                "defaults may not allow privileged_operation; add an explicit rule for the tool instead"
            )
        ids = [r.id for r in self.rules]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate rule ids: {', '.join(dupes)}")
        return self

    def default_for(self, effect: Effect) -> Decision:
        return self.defaults.get(effect, DEFAULT_DECISIONS[effect])

    @property
    def policy_hash(self) -> str:
        return short_hash(self.hash_payload())


assert set(DEFAULT_DECISIONS) == set(EFFECTS)


class PermissionDecision(Contract):
    """The policy's answer for one call with its concrete arguments."""

    decision: Decision
    """allow / approval_required / deny."""
    reason: str
    """Why."""
    rule: str
    """Id of the deciding rule, or ``default:<effect>`` / ``risk`` / ``tool:requires_approval``."""
    policy_version: str
    """Version of the policy that decided."""
    risk_score: float | None = None
    """The risk score, when scoring ran."""


ApprovalStatus = Literal["pending", "approved", "edited", "rejected", "expired", "superseded"]
"""Lifecycle of an approval card; only approved/edited execute."""


class ApprovalCard(Contract):
    """What a reviewer sees and decides for one call that needs approval."""

    approval_id: str
    """Stable id (``apr_…``)."""
    run_id: str
    """The run that asked."""
    call_id: str
    """The call within the run."""
    tool: str
    """Tool name."""
    tool_version: str
    """Tool version."""
    args: dict[str, Any]
    """Arguments as the model proposed them."""
    args_hash: str
    """Hash of ``args``."""
    reason: str
    """Why approval is needed (the policy's reason)."""
    evidence: list[str] = []
    """Evidence items from the run context."""
    effect: Effect
    """The tool's effect class."""
    reversible: bool
    """Whether the effect can be undone."""
    cost_usd: float = 0.0
    """Per-call cost if executed."""
    risk_score: float | None = None
    """Risk score, when computed."""
    choices: list[Literal["approve", "edit", "reject"]] = ["approve", "edit", "reject"]
    """What the reviewer may do."""
    created_at: str
    """ISO-8601 UTC."""
    expires_at: str
    """ISO-8601 UTC; re-checked at execution."""
    status: ApprovalStatus = "pending"
    """Lifecycle state."""
    reviewer: str | None = None
    """Who decided."""
    effective_args: dict[str, Any] | None = None
    """Arguments that will run (the edited ones, after re-validation)."""
    decided_at: str | None = None
    """When decided."""
    note: str = ""
    """Reviewer's note."""
    scope: str = ""
    """The run scope (ledger namespace) the card belongs to."""
    context: dict[str, Any] = {}
    """Where the action would run, beside its arguments (e.g. ``cwd`` of a Claude Code built-in); shown to
    the reviewer, not part of ``args`` or ``args_hash``."""
