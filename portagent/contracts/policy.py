"""PermissionPolicy: the model may suggest, the policy decides (DESIGN §3)."""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

import re2
from pydantic import Field, field_validator, model_validator

from portagent.contracts._base import Contract, repeated, short_hash
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


REGEX_TIMEOUT_VAR = "PORTAGENT_POLICY_REGEX_TIMEOUT_S"
DEFAULT_REGEX_TIMEOUT_S = 0.1
"""Time limit of one match of a policy regex that RE2 cannot run (``$PORTAGENT_POLICY_REGEX_TIMEOUT_S``)."""


def regex_timeout_s() -> float:
    raw = os.environ.get(REGEX_TIMEOUT_VAR, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_REGEX_TIMEOUT_S
    except ValueError:
        value = DEFAULT_REGEX_TIMEOUT_S
    return value if 0 < value <= 60 else DEFAULT_REGEX_TIMEOUT_S


class PolicyRegex:
    """A compiled policy regex. RE2 (``google-re2``) when the pattern is RE2 syntax: matching is linear in
    the input, nothing can stall. A pattern RE2 cannot run (lookaround, backreferences) is compiled with
    the ``regex`` module and each match has a time limit; running out of time raises ``TimeoutError``."""

    def __init__(self, pattern: str, ignore_case: bool = False) -> None:
        self.pattern = pattern
        options = re2.Options()
        options.log_errors = False
        options.case_sensitive = not ignore_case
        try:
            self._re2: Any = re2.compile(pattern, options)
            self._slow: Any = None
            self.engine: Literal["re2", "regex"] = "re2"
            return
        except re2.error:
            pass
        import regex  # the fallback engine: imported only for a pattern RE2 cannot run

        try:
            self._slow = regex.compile(pattern, regex.V0 | (regex.IGNORECASE if ignore_case else 0))
        except (regex.error, ValueError, TypeError, OverflowError, RecursionError) as e:
            raise ValueError(f"regex {pattern!r} does not compile: {e}") from None
        self._re2 = None
        self.engine = "regex"

    def search(self, text: str, timeout_s: float | None = None) -> bool:
        if self._re2 is not None:
            return self._re2.search(text) is not None
        found = self._slow.search(text, timeout=timeout_s or regex_timeout_s(), concurrent=True)
        return found is not None


def compile_policy_regex(pattern: str, ignore_case: bool = False) -> PolicyRegex:
    """Compile a policy regex (raises ValueError with the reason when it does not compile)."""
    return PolicyRegex(pattern, ignore_case)


PATH_OPERATORS = ("within", "not_within")
OPERATORS = ("equals", "in_", "prefix", "not_prefix", "within", "not_within", "glob", "regex")


class ArgPredicate(Contract):
    """A test on one argument (dotted path). Exactly one operator must be set.

    Values are normalised before they are compared, the same way on every provider: strings to Unicode
    NFC (and case-folded with ``ignore_case``); a numeric string (``"1000"``) compared with a number, or
    tested by ``min``/``max``, is read as that number. Paths (``within``, and ``prefix``/``not_prefix``
    given an absolute or ``~/`` path) are resolved to real paths (``..`` and symlinks) first."""

    arg: Annotated[str, Field(min_length=1)]
    """Dotted path into the arguments (``recipient.domain``)."""
    equals: Any = None
    """Equal to this value."""
    in_: Annotated[list[Any] | None, Field(alias="in")] = None
    """One of these values."""
    prefix: str | None = None
    """A string starting with this. An absolute (or ``~/``) prefix is a folder: the value is resolved to
    its real path first (``..`` and symlinks), so a symlink cannot escape it; a relative value is resolved
    against ``root``, and without ``root`` it counts as outside the folder."""
    not_prefix: str | None = None
    """A string not starting with this (e.g. a path outside a workspace); paths as for ``prefix``."""
    within: str | None = None
    """A path inside this folder (or the folder itself), after resolving ``..`` and symlinks of both; a
    relative value is resolved against ``root`` (without it, it counts as outside). The folder must be
    absolute (or start with ``~/``)."""
    not_within: str | None = None
    """A path outside this folder, resolved as for ``within``."""
    glob: str | None = None
    """A string matching this shell glob."""
    regex: str | None = None
    """A string containing a match of this regular expression (Python syntax). Matched by RE2 in linear
    time when RE2 can run it; otherwise (lookaround, backreferences) with a time limit, and a match that
    runs out of time denies the call."""
    min: float | None = None
    """A number ≥ this."""
    max: float | None = None
    """A number ≤ this."""
    root: str | None = None
    """The folder the tool resolves relative paths against (its working folder), for path operators.
    Absolute (or ``~/``)."""
    ignore_case: bool = False
    """Compare strings case-insensitively (Unicode case folding) for equals, in, prefix, glob, regex."""
    if_absent: Literal["match", "no_match"] | None = None
    """What the predicate says when it cannot be evaluated: the argument is absent, its value is of a type
    the operator cannot test, or a path cannot be resolved. Default: ``match`` in ``deny`` and
    ``approval_required`` rules (fail closed), ``no_match`` in ``allow`` and scoring-only rules."""

    @field_validator("regex")
    @classmethod
    def _regex_compiles(cls, value: str | None) -> str | None:
        # Compiled when the spec loads, so ``validate`` refuses what would otherwise fail (or never match)
        # only when a call reaches the rule.
        if value is not None:
            compile_policy_regex(value)
        return value

    @field_validator("within", "not_within", "root")
    @classmethod
    def _absolute_folder(cls, value: str | None) -> str | None:
        if value is not None and not (value.startswith("/") or value == "~" or value.startswith("~/")):
            raise ValueError(f"a path folder must be absolute (or start with '~/'), got {value!r}")
        if value is not None and "\x00" in value:
            raise ValueError("a path folder may not contain NUL")
        return value

    @model_validator(mode="after")
    def _one_operator(self) -> ArgPredicate:
        ops = [k for k in OPERATORS if getattr(self, k) is not None]
        has_range = self.min is not None or self.max is not None
        if len(ops) + (1 if has_range else 0) != 1:
            raise ValueError(
                "set exactly one of equals, in, prefix, not_prefix, within, not_within, glob, regex, "
                "or a min/max range"
            )
        if self.regex is not None and self.ignore_case:
            compile_policy_regex(self.regex, ignore_case=True)
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
        for field, names in (
            ("effect_weights", ("read", "draft", "write", "send", "publish")),
            ("env_weights", ("lab", "dev", "staging", "prod")),
        ):
            missing = [n for n in names if n not in getattr(self, field)]
            if missing:
                raise ValueError(f"{field} needs a weight for every key; missing: {', '.join(missing)}")
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
        dupes = repeated(ids)
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


class CardEvidence(Contract):
    """One thing that led to the call, shown on its approval card: a user input or an earlier tool
    result of the run. Built from the run's own trace (never from model text), masked
    (``core/secrets.py``) and cut to a short excerpt."""

    kind: Literal["user_input", "tool_result"]
    """What it is."""
    id: str
    """``input`` (``input[<n>]`` for one message of several) or the tool call's ``call_<n>``."""
    tool: str | None = None
    """The tool that produced the result (tool results only)."""
    ok: bool | None = None
    """Whether that call succeeded (tool results only)."""
    excerpt: str
    """The start of the text or JSON, masked; ``…`` marks a cut."""


class CardSpend(Contract):
    """What the run had spent when the card was made (before the call it asks about)."""

    cost_usd: float = 0.0
    """Model and tool cost so far."""
    tool_calls: int = 0
    """Tool calls made before this one."""
    turns: int = 0
    """Model turns so far."""


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
    status_reason: str | None = None
    """Why the card reached its state when no reviewer decided it (``superseded``: the resumed run did
    not make this call again, or could not)."""
    scope: str = ""
    """The run scope (ledger namespace) the card belongs to."""
    context: dict[str, Any] = {}
    """Where the action would run, beside its arguments (e.g. ``cwd`` of a Claude Code built-in); shown to
    the reviewer, not part of ``args`` or ``args_hash``."""
    inputs: list[CardEvidence] = []
    """The user input(s) of the run that led to the call (ids and masked excerpts)."""
    prior_results: list[CardEvidence] = []
    """The tool results the run had produced before the call (the latest few; ids and masked excerpts)."""
    spend: CardSpend | None = None
    """The run's spend when the card was made."""
    idempotency_key: str | None = None
    """The key the effect ledger records the call under if it runs (tools with ``idempotency.required``);
    for an edited card, the key of the edited arguments."""
