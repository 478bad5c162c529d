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
import itertools
import json
import math
import os
import posixpath
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

from portagent.contracts.errors import UsageError
from portagent.contracts.policy import (
    ArgPredicate,
    Decision,
    PermissionDecision,
    PermissionPolicy,
    PolicyRegex,
    PolicyRule,
    RiskAction,
    RiskScoring,
    compile_policy_regex,
    regex_timeout_s,
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
UNKNOWN = None
"""What ``predicate_state`` returns when a predicate cannot be evaluated (absent argument, a value of a
type the operator cannot test, a path that does not resolve)."""


class PolicyInputError(UsageError):
    """An input the policy reads is out of range (exit 2)."""


class PolicyEvaluationError(Exception):
    """The policy could not decide a call (e.g. a path that does not resolve); the call is denied."""


# -- normalisation (the same on every provider) ------------------------------------------------------

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def numeric_value(v: Any) -> int | float | None:
    """A number, or a string holding a JSON number literal (surrounding whitespace allowed) read as one;
    ``None`` otherwise (also for non-finite values)."""
    if _is_number(v):
        return v if not (isinstance(v, float) and not math.isfinite(v)) else None
    if isinstance(v, str) and len(v) <= 400:
        text = v.strip()
        if _NUMBER.fullmatch(text):
            try:
                n = json.loads(text)
            except (ValueError, RecursionError):
                return None
            if isinstance(n, float) and not math.isfinite(n):
                return None
            return n if _is_number(n) else None
    return None


def normalize_text(value: str, ignore_case: bool = False) -> str:
    """Unicode NFC; when asked to ignore case, Unicode's compatibility caseless form instead (NFKC and
    case folding, as ``NFKC_Casefold``): fullwidth ``ｅvil@ｘ.com``, ligatures and other compatibility
    forms compare equal to the plain text they display as (and that IDNA, mail servers or a
    case-insensitive store map them to), so they cannot slip past an ``ignore_case`` rule."""
    if not ignore_case:
        return unicodedata.normalize("NFC", value)
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", value).casefold())


def _schema_types(schema: Any) -> set[str]:
    t = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    return set()


def normalize_args(schema: Any, value: Any, _depth: int = 0) -> Any:
    """Arguments as the policy and the handler see them, whichever provider sent them: every string in
    Unicode NFC (keys too), and where the tool's input schema wants only a number (or integer, or
    boolean) a string holding one becomes it (``"1000"`` → ``1000``: the Claude CLI does this before
    portagent sees the call, the OpenAI and ADK runtimes do not), and an integral float in a number field
    becomes an integer (``1000.0`` → ``1000``, as JavaScript sends it). Anything else is left as it is.

    Structural sharing: a value this changes nothing in comes back as the *same* object (a plain ``dict``
    or ``list`` included), so ``normalize_args(s, v) is v`` says "already normal" without comparing (the
    gateway skips hashing the arguments as sent a second time). Only the containers on the path to a
    change are new; a dict or list subclass always comes back as a new plain one."""
    if _depth > 200:
        return value
    if isinstance(value, str):
        text = _nfc(value)
        types = _schema_types(schema)
        if types and "string" not in types:
            if types & {"number", "integer"}:
                n = numeric_value(text)
                if n is not None and ("number" in types or float(n).is_integer()):
                    if isinstance(n, float) and n.is_integer() and abs(n) < 2**53:
                        n = int(n)  # "1e3" and "1000.0" are the 1000 a JSON number literal would give
                    return n
            if "boolean" in types and text.strip() in ("true", "false"):
                return text.strip() == "true"
        return text
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        if _schema_types(schema) & {"number", "integer"}:
            return int(value)  # 1000.0 is the 1000 the Claude CLI (JavaScript numbers) sends
        return value
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema, dict) else None
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties") if isinstance(schema, dict) else None
        out: dict[Any, Any] | None = None if type(value) is dict else {}
        for i, (k, v) in enumerate(value.items()):
            key = _nfc(k) if isinstance(k, str) else k
            sub = props.get(k, props.get(key, extra if isinstance(extra, dict) else None))
            new = normalize_args(sub, v, _depth + 1)
            if out is None:
                if key is k and new is v:
                    continue
                out = dict(itertools.islice(value.items(), i))  # the unchanged ones before the first change
            out[key] = new
        return value if out is None else out
    if isinstance(value, list):
        items = schema.get("items") if isinstance(schema, dict) else None
        items = items if isinstance(items, dict) else None
        changed: list[Any] | None = None if type(value) is list else []
        for i, v in enumerate(value):
            new = normalize_args(items, v, _depth + 1)
            if changed is None:
                if new is v:
                    continue
                changed = value[:i]
            changed.append(new)
        return value if changed is None else changed
    return value


def _nfc(text: str) -> str:
    """``text`` in Unicode NFC: the same object when it already is (nearly always)."""
    normal = unicodedata.normalize("NFC", text)
    return text if normal == text else normal


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
    """Equality that does not confuse ``True`` with ``1``; a numeric string equals the number it holds
    when compared with a number (``"1000"`` = ``1000``), and strings compare in NFC."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if _is_number(a) or _is_number(b):
        na, nb = numeric_value(a), numeric_value(b)
        if na is not None and nb is not None:
            return bool(na == nb)
    if isinstance(a, str) and isinstance(b, str):
        return normalize_text(a) == normalize_text(b)
    return bool(a == b)


def _same_text(a: Any, b: Any, ignore_case: bool) -> bool:
    if ignore_case and isinstance(a, str) and isinstance(b, str):
        return normalize_text(a, True) == normalize_text(b, True)
    return _same(a, b)


def _path_like(prefix: str) -> bool:
    return prefix.startswith(("/", "./", "../", "~/"))


def _resolvable_folder(prefix: str) -> bool:
    return prefix.startswith(("/", "~/")) or prefix == "~"


def _norm(value: str, prefix: str) -> str:
    """Relative prefixes: paths are normalized (lexically) before prefix tests."""
    if _path_like(prefix) and value.startswith(("/", ".", "~")):
        normalized = posixpath.normpath(value)
        return normalized + "/" if value.endswith("/") and normalized != "/" else normalized
    return value


def real_path(value: str, base: str) -> str:
    """``value`` as a real absolute path: ``~`` expanded, relative to ``base``, ``..`` and symlinks
    resolved (as far as the path exists). Raises PolicyEvaluationError when it cannot be resolved."""
    if not value or "\x00" in value:
        raise PolicyEvaluationError(f"path {value!r} cannot be resolved")
    try:
        expanded = os.path.expanduser(value)
        joined = expanded if os.path.isabs(expanded) else os.path.join(os.path.expanduser(base), expanded)
        return str(Path(joined).resolve(strict=False))
    except (OSError, RuntimeError, ValueError) as e:
        raise PolicyEvaluationError(f"path {value!r} cannot be resolved: {e}") from None


def path_within(value: str, folder: str, root: str | None = None) -> bool:
    """Whether ``value`` resolves inside ``folder`` (resolved too). A relative value is resolved against
    ``root`` (the folder the tool reads relative paths from); without one it counts as outside."""
    expanded = os.path.expanduser(value) if value.startswith("~") else value
    if not os.path.isabs(expanded) and root is None:
        return False
    base = real_path(folder, "/")
    target = real_path(value, real_path(root, "/") if root is not None else base)
    return target == base or target.startswith(base.rstrip("/") + "/")


def _has_prefix(value: str, prefix: str, ignore_case: bool = False, root: str | None = None) -> bool:
    if _resolvable_folder(prefix):
        return path_within(value, prefix, root)
    if ignore_case:
        value, prefix = normalize_text(value, True), normalize_text(prefix, True)
    else:
        value, prefix = normalize_text(value), normalize_text(prefix)
    v = _norm(value, prefix)
    if _path_like(prefix) and v + "/" == prefix:  # "./ws" is inside "./ws/"
        return True
    return v.startswith(prefix)


@lru_cache(maxsize=512)
def _regex(pattern: str, ignore_case: bool = False) -> PolicyRegex:
    return compile_policy_regex(pattern, ignore_case)


def predicate_state(pred: ArgPredicate, args: Any) -> bool | None:
    """One predicate against the arguments: ``True``/``False``, or ``None`` (``UNKNOWN``) when it cannot be
    evaluated (absent argument, a value of a type the operator cannot test). A path that does not
    resolve raises PolicyEvaluationError (the call is denied)."""
    return _value_state(pred, lookup(args, pred.arg))


_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff]")


def trimmed_text(value: str) -> str:
    """The text without surrounding whitespace or invisible characters (zero-width spaces, BOM): what an
    address or a path means to most systems downstream, so a rule cannot be slipped by padding it."""
    return _INVISIBLE.sub("", value).strip()


def _value_state(pred: ArgPredicate, value: Any) -> bool | None:
    if value is MISSING:
        return UNKNOWN
    ic = pred.ignore_case
    if pred.equals is not None:
        return _same_text(value, pred.equals, ic)
    if pred.in_ is not None:
        return any(_same_text(value, c, ic) for c in pred.in_)
    if pred.min is not None or pred.max is not None:
        n = numeric_value(value)
        if n is None:
            return UNKNOWN
        if pred.min is not None and n < pred.min:
            return False
        return not (pred.max is not None and n > pred.max)
    if not isinstance(value, str):
        return UNKNOWN
    if pred.prefix is not None:
        return _has_prefix(value, pred.prefix, ic, pred.root)
    if pred.not_prefix is not None:
        return not _has_prefix(value, pred.not_prefix, ic, pred.root)
    if pred.within is not None:
        return path_within(value, pred.within, pred.root)
    if pred.not_within is not None:
        return not path_within(value, pred.not_within, pred.root)
    if pred.glob is not None:
        return fnmatch.fnmatchcase(normalize_text(value, ic), normalize_text(pred.glob, ic))
    if pred.regex is not None:
        try:
            return _regex(pred.regex, ic).search(normalize_text(value, ic))
        except TimeoutError:
            raise PolicyEvaluationError(
                f"regex {pred.regex!r} ran out of time ({regex_timeout_s():g} s) on a value of "
                f"{len(value)} characters"
            ) from None
    return UNKNOWN


def predicate_holds(pred: ArgPredicate, args: Any) -> bool:
    """Whether the predicate definitely holds (an unevaluable predicate does not)."""
    return predicate_state(pred, args) is True


def fails_closed(rule: PolicyRule, pred: ArgPredicate) -> bool:
    """What an unevaluable predicate says in this rule: ``if_absent`` when set, else match in rules that
    deny or ask for approval, no match in the others."""
    if pred.if_absent is not None:
        return pred.if_absent == "match"
    return rule.decision in ("deny", "approval_required")


def applies_to(rule: PolicyRule, tool: ToolSpec) -> bool:
    """The rule's tool pattern and effect classes admit this tool (what a rule checks before anything else)."""
    if rule.tool is not None and not fnmatch.fnmatchcase(tool.name, rule.tool):
        return False
    return not rule.effect or tool.effect in rule.effect


def rule_matches(rule: PolicyRule, tool: ToolSpec, args: Any, ctx: GatewayContext) -> bool:
    """Every condition the rule sets must hold."""
    if not applies_to(rule, tool):
        return False
    if rule.env and ctx.env not in rule.env:
        return False
    if rule.scopes_any and not any(s in ctx.scopes for s in rule.scopes_any):
        return False
    if rule.scopes_missing and all(s in ctx.scopes for s in rule.scopes_missing):
        return False
    restrictive = rule.decision in ("deny", "approval_required")
    for p in rule.when:
        value = lookup(args, p.arg)
        # A padded text ("evil@x.com ", a zero-width space) is read both as sent and trimmed: a rule that
        # denies or asks for approval matches when either reading matches; any other rule only when both do.
        readings = [value]
        if isinstance(value, str) and trimmed_text(value) != value:
            readings.append(trimmed_text(value))
        states = []
        for reading in readings:
            try:
                state = _value_state(p, reading)
            except PolicyEvaluationError as e:
                raise PolicyEvaluationError(f"rule {rule.id}, argument {p.arg!r}: {e}") from None
            states.append(fails_closed(rule, p) if state is None else bool(state))
        if not (any(states) if restrictive else all(states)):
            return False
    return True


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
        self._slow_rules = [
            r
            for r in rules
            if any(p.regex is not None and _regex(p.regex, p.ignore_case).engine != "re2" for p in r.when)
        ]
        self.slow_matching = bool(self._slow_rules)
        """Whether some regex runs on the time-limited engine (see ``slow_for``)."""
        self._slow_by_tool: dict[tuple[str, str], bool] = {}

    def slow_for(self, tool: ToolSpec) -> bool:
        """Whether deciding a call of ``tool`` may run a regex on the time-limited engine: the gateway then
        decides off the event loop. Only rules that can apply to the tool count — a rule for another tool
        or effect class is left before its ``when`` is read (``rule_matches``)."""
        key = (tool.name, tool.effect)
        hit = self._slow_by_tool.get(key)
        if hit is None:
            hit = any(applies_to(r, tool) for r in self._slow_rules)
            self._slow_by_tool[key] = hit
        return hit

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
        """The decision for this tool with these arguments in this context. A malformed run context
        raises (ContextError, PolicyInputError); any other failure to evaluate the policy is a ``deny``
        (rule ``policy:error``) with the reason, never an exception into the vendor runtime."""
        check_run_context(ctx.context)
        try:
            return self._decide(tool, args, ctx)
        except UsageError:
            raise
        except PolicyEvaluationError as e:
            return self._decision("deny", f"the policy could not decide this call: {e}", "policy:error")
        except Exception as e:
            return self._decision(
                "deny",
                f"the policy could not decide this call: {type(e).__name__}: {e}",
                "policy:error",
            )

    def _decide(self, tool: ToolSpec, args: Any, ctx: GatewayContext) -> PermissionDecision:
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
