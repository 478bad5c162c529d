"""PolicyEngine: the model may suggest, the policy decides (DESIGN §3, ACCEPTANCE ch. 08).

``decide(tool, args, ctx)`` is pure: it reads the ToolSpec, the concrete arguments and the run
context, nothing else (a prompt that says "you may send" changes nothing). Precedence:

1. explicit ``deny`` rules (first match in file order), then the tool's required scopes the actor
   lacks (rule ``tool:scopes``);
2. ``privileged_operation`` tools are denied (rule ``default:privileged_operation``) unless a
   matching ``allow`` rule names them explicitly — by exact tool name or by listing the effect;
3. mandatory approval: ``approval_required`` rules, then ``requires_approval: true`` on the tool
   (rule ``tool:requires_approval``);
4. explicit ``allow`` rules;
5. risk scoring, when ``policy.risk`` is set (rules ``risk:<branch>``);
6. the effect-class default (rule ``default:<effect>``).

Rules without a ``decision`` only classify the call for scoring (``risk_action``).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from functools import lru_cache
from typing import Any

from portagent.contracts.errors import UsageError
from portagent.contracts.policy import (
    ArgPredicate,
    Decision,
    PermissionDecision,
    PermissionPolicy,
    PolicyRule,
    RiskAction,
    RiskScoring,
)
from portagent.contracts.tool import ToolSpec
from portagent.tools.context import GatewayContext, check_run_context, evidence_count

EFFECT_TO_ACTION: dict[str, RiskAction] = {
    "read": "read",
    "compute": "read",
    "prepare_change": "draft",
    "reversible_write": "write",
    "external_effect": "send",
}
"""Effect class → the design source's action vocabulary (privileged operations never get scored)."""

_WILDCARDS = re.compile(r"[*?\[]")
MISSING = object()
"""What ``lookup`` returns for a path that is not in the arguments."""


class PolicyInputError(UsageError):
    """An input the policy reads is out of range (exit 2)."""


# -- argument predicates ---------------------------------------------------------------------------


def lookup(args: Any, dotted: str) -> Any:
    """Value at a dotted path (``recipient.domain``, ``items.0.id``), or ``MISSING``."""
    cur = args
    for part in dotted.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return MISSING
    return cur


def _same(a: Any, b: Any) -> bool:
    """Equality that does not confuse ``True`` with ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return bool(a == b)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _path_like(prefix: str) -> bool:
    return prefix.startswith(("/", "./", "../", "~/"))


def _norm(value: str, prefix: str) -> str:
    """Paths are normalized before prefix tests, so ``/ws/../etc`` is not inside ``/ws/``."""
    if _path_like(prefix) and value.startswith(("/", ".", "~")):
        normalized = posixpath.normpath(value)
        return normalized + "/" if value.endswith("/") and normalized != "/" else normalized
    return value


def _has_prefix(value: str, prefix: str) -> bool:
    v = _norm(value, prefix)
    if _path_like(prefix) and v + "/" == prefix:  # "/ws" is inside "/ws/"
        return True
    return v.startswith(prefix)


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def predicate_holds(pred: ArgPredicate, args: Any) -> bool:
    """One predicate against the arguments. A predicate on a missing argument does not match."""
    value = lookup(args, pred.arg)
    if value is MISSING:
        return False
    if pred.equals is not None:
        return _same(value, pred.equals)
    if pred.in_ is not None:
        return any(_same(value, c) for c in pred.in_)
    if pred.prefix is not None:
        return isinstance(value, str) and _has_prefix(value, pred.prefix)
    if pred.not_prefix is not None:
        return isinstance(value, str) and not _has_prefix(value, pred.not_prefix)
    if pred.glob is not None:
        return isinstance(value, str) and fnmatch.fnmatchcase(value, pred.glob)
    if pred.regex is not None:
        return isinstance(value, str) and _regex(pred.regex).search(value) is not None
    if not _is_number(value):
        return False
    if pred.min is not None and value < pred.min:
        return False
    return not (pred.max is not None and value > pred.max)


def rule_matches(rule: PolicyRule, tool: ToolSpec, args: Any, ctx: GatewayContext) -> bool:
    """Every condition the rule sets must hold."""
    if rule.tool is not None and not fnmatch.fnmatchcase(tool.name, rule.tool):
        return False
    if rule.effect and tool.effect not in rule.effect:
        return False
    if rule.env and ctx.env not in rule.env:
        return False
    if rule.scopes_any and not any(s in ctx.scopes for s in rule.scopes_any):
        return False
    if rule.scopes_missing and all(s in ctx.scopes for s in rule.scopes_missing):
        return False
    return all(predicate_holds(p, args) for p in rule.when)


def names_tool_explicitly(rule: PolicyRule, tool: ToolSpec) -> bool:
    """An allow rule 'names' a privileged tool by its exact name or by listing the effect class."""
    if "privileged_operation" in rule.effect:
        return True
    return rule.tool is not None and not _WILDCARDS.search(rule.tool) and rule.tool == tool.name


# -- risk scoring ------------------------------------------------------------------------------------


def risk_score(
    risk: RiskScoring,
    action: RiskAction,
    env: str,
    reversible: bool,
    confidence: float,
    evidence: int,
    cost: float,
) -> float:
    """The design source's formula (ACCEPTANCE ch. 08), rounded to 3 places."""
    if isinstance(confidence, bool) or not 0 <= confidence <= 1:
        raise PolicyInputError(f"confidence must be between 0 and 1, got {confidence!r}")
    w = risk.weights
    score = (
        w.get("effect", 0.0) * risk.effect_weights[action]
        + w.get("env", 0.0) * risk.env_weights[env]  # type: ignore[index]
        + w.get("reversibility", 0.0) * (risk.reversible_weight if reversible else risk.irreversible_weight)
        + w.get("confidence", 0.0) * max(0.0, 1.0 - confidence)
        + w.get("evidence", 0.0) * risk.missing_evidence.get(str(evidence), 0.0)
        + w.get("cost", 0.0) * min(cost / 2.0, risk.cost_cap)
    )
    return round(score, 3)


class PolicyEngine:
    """Evaluates a PermissionPolicy per call, with its concrete arguments and the run context."""

    def __init__(self, policy: PermissionPolicy | None = None) -> None:
        self.policy = policy or PermissionPolicy()
        rules = self.policy.rules
        self._deny = [r for r in rules if r.decision == "deny"]
        self._approval = [r for r in rules if r.decision == "approval_required"]
        self._allow = [r for r in rules if r.decision == "allow"]
        self._classifiers = [r for r in rules if r.risk_action is not None]

    @property
    def version(self) -> str:
        return self.policy.version

    def _decision(
        self, decision: Decision, reason: str, rule: str, score: float | None = None
    ) -> PermissionDecision:
        return PermissionDecision(
            decision=decision, reason=reason, rule=rule, policy_version=self.policy.version, risk_score=score
        )

    def decide(self, tool: ToolSpec, args: Any, ctx: GatewayContext) -> PermissionDecision:
        """The decision for this tool with these arguments in this context."""
        check_run_context(ctx.context)
        score = self._score(tool, args, ctx) if self.policy.risk is not None else None

        for rule in self._deny:
            if rule_matches(rule, tool, args, ctx):
                return self._decision("deny", rule.reason or f"denied by rule {rule.id}", rule.id, score)
        missing = [s for s in tool.permissions if s not in ctx.scopes]
        if missing:
            return self._decision(
                "deny",
                f"actor {ctx.actor!r} lacks required scope(s): {', '.join(missing)}",
                "tool:scopes",
                score,
            )
        allows = [r for r in self._allow if rule_matches(r, tool, args, ctx)]
        allow = allows[0] if allows else None
        if tool.effect == "privileged_operation" and not any(names_tool_explicitly(r, tool) for r in allows):
            return self._decision(
                "deny",
                "privileged operations are denied unless an allow rule names the tool explicitly",
                "default:privileged_operation",
                score,
            )
        for rule in self._approval:
            if rule_matches(rule, tool, args, ctx):
                return self._decision(
                    "approval_required", rule.reason or f"approval required by rule {rule.id}", rule.id, score
                )
        if tool.requires_approval is True:
            return self._decision(
                "approval_required", f"{tool.name} always requires approval", "tool:requires_approval", score
            )
        if allow is not None:
            return self._decision("allow", allow.reason or f"allowed by rule {allow.id}", allow.id, score)
        if self.policy.risk is not None and score is not None:
            return self._by_risk(self.policy.risk, self._action(tool, args, ctx), ctx, score)
        default = self.policy.default_for(tool.effect)
        return self._decision(default, f"default for {tool.effect} tools", f"default:{tool.effect}", score)

    # -- risk ------------------------------------------------------------------------------------

    def _action(self, tool: ToolSpec, args: Any, ctx: GatewayContext) -> RiskAction:
        for rule in self._classifiers:
            if rule_matches(rule, tool, args, ctx):
                assert rule.risk_action is not None
                return rule.risk_action
        return EFFECT_TO_ACTION.get(tool.effect, "publish")

    def _score(self, tool: ToolSpec, args: Any, ctx: GatewayContext) -> float | None:
        if tool.effect == "privileged_operation":
            return None  # denied before scoring unless explicitly allowed
        assert self.policy.risk is not None
        confidence = ctx.context.get("confidence", 0.0)
        return risk_score(
            self.policy.risk,
            self._action(tool, args, ctx),
            ctx.env,
            tool.is_reversible,
            float(confidence),
            evidence_count(ctx.context),
            tool.cost_usd,
        )

    def _by_risk(
        self, risk: RiskScoring, action: RiskAction, ctx: GatewayContext, score: float
    ) -> PermissionDecision:
        external = action in ("send", "publish")
        if risk.deny_external_without_evidence and external and evidence_count(ctx.context) == 0:
            return self._decision(
                "deny", "missing evidence before an external action", "risk:missing_evidence", score
            )
        if risk.approval_in_prod_for_writes and ctx.env == "prod" and action in ("write", "send", "publish"):
            return self._decision(
                "approval_required", "persistent action in production", "risk:prod_write", score
            )
        if score < risk.allow_below:
            return self._decision("allow", "low operational risk", "risk:low", score)
        if score < risk.approval_below:
            return self._decision(
                "approval_required", "needs review for cost, uncertainty or scope", "risk:review", score
            )
        return self._decision("deny", "risk outside the permitted margin", "risk:too_high", score)
