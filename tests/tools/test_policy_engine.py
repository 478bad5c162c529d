"""PolicyEngine: every rule branch, predicate operator and precedence step."""

from __future__ import annotations

import pytest
from gateway_testkit import ctx, tool

from portagent.contracts.policy import PermissionPolicy
from portagent.tools import GatewayContext, PolicyEngine
from portagent.tools.policy import lookup, predicate_holds

SEND = tool(
    "send_email",
    effect="external_effect",
    idempotency={"required": True},
    properties={"to": {"type": "string"}, "subject": {"type": "string"}},
)
READ = tool("get_student_record")
WRITE = tool(
    "write_file",
    effect="reversible_write",
    idempotency={"required": True},
    properties={"path": {"type": "string"}, "content": {"type": "string"}},
)
GRANT = tool("grant_role", effect="privileged_operation", properties={"user": {"type": "string"}})


def engine(*rules, **kw) -> PolicyEngine:
    return PolicyEngine(PermissionPolicy(version="7", rules=list(rules), **kw))


def decide(e: PolicyEngine, t, args=None, **ctx_kw):
    return e.decide(t, args or {}, ctx(recorder=False, **ctx_kw))


# -- defaults ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("effect", "expected"),
    [
        ("read", "allow"),
        ("compute", "allow"),
        ("prepare_change", "allow"),
        ("reversible_write", "approval_required"),
        ("external_effect", "approval_required"),
        ("privileged_operation", "deny"),
    ],
)
def test_effect_defaults(effect, expected):
    t = tool("t", effect=effect, idempotency={"required": effect in ("reversible_write", "external_effect")})
    d = decide(engine(), t)
    assert (d.decision, d.rule, d.policy_version) == (expected, f"default:{effect}", "7")


def test_policy_default_overrides():
    e = engine(defaults={"read": "approval_required", "reversible_write": "allow"})
    assert decide(e, READ).decision == "approval_required"
    assert decide(e, WRITE).decision == "allow"


# -- precedence -------------------------------------------------------------------------------------------


def test_deny_beats_approval_beats_allow_whatever_the_file_order():
    allow = {"id": "allow-all", "tool": "*", "decision": "allow"}
    approval = {"id": "review-send", "tool": "send_*", "decision": "approval_required"}
    deny = {
        "id": "no-lists",
        "tool": "send_email",
        "decision": "deny",
        "reason": "mass mail",
        "when": [{"arg": "to", "glob": "lista-*"}],
    }
    e = engine(allow, approval, deny)
    d = decide(e, SEND, {"to": "lista-completa@example.com"})
    assert (d.decision, d.rule, d.reason) == ("deny", "no-lists", "mass mail")
    assert decide(e, SEND, {"to": "yo@example.com"}).rule == "review-send"
    assert decide(e, READ).rule == "allow-all"


def test_first_matching_rule_in_file_order_wins_within_a_class():
    e = engine(
        {"id": "first", "effect": ["read"], "decision": "deny"},
        {"id": "second", "tool": "get_*", "decision": "deny"},
    )
    assert decide(e, READ).rule == "first"


def test_explicit_allow_overrides_the_write_default():
    e = engine(
        {
            "id": "tickets-ok",
            "tool": "write_file",
            "decision": "allow",
            "when": [{"arg": "path", "prefix": "/workspace/"}],
        }
    )
    assert decide(e, WRITE, {"path": "/workspace/a.txt"}).decision == "allow"
    assert decide(e, WRITE, {"path": "/etc/passwd"}).rule == "default:reversible_write"


def test_requires_approval_on_the_tool():
    t = tool("prepare_email_proposal", effect="prepare_change", requires_approval=True)
    d = decide(engine({"id": "allow-prep", "tool": "prepare_*", "decision": "allow"}), t)
    assert (d.decision, d.rule) == ("approval_required", "tool:requires_approval")
    d2 = decide(engine({"id": "rule-first", "tool": "prepare_*", "decision": "approval_required"}), t)
    assert d2.rule == "rule-first"


def test_missing_tool_scopes_deny():
    t = tool("get_student_record", permissions=["academic.record.read", "pii.read"])
    d = decide(engine(), t, scopes=["academic.record.read"])
    assert (d.decision, d.rule) == ("deny", "tool:scopes") and "pii.read" in d.reason
    assert decide(engine(), t, scopes=["academic.record.read", "pii.read"]).decision == "allow"


# -- privileged operations -------------------------------------------------------------------------------


def test_privileged_denied_unless_an_allow_rule_names_it():
    assert decide(engine(), GRANT).rule == "default:privileged_operation"
    wildcard = engine({"id": "allow-all", "tool": "*", "decision": "allow"})
    assert decide(wildcard, GRANT).decision == "deny"
    glob = engine({"id": "grants", "tool": "grant_*", "decision": "allow"})
    assert decide(glob, GRANT).decision == "deny"
    named = engine({"id": "grant-ok", "tool": "grant_role", "decision": "allow"})
    assert decide(named, GRANT).decision == "allow"
    by_effect = engine(
        {"id": "priv-ok", "effect": ["privileged_operation"], "decision": "allow", "env": ["lab"]}
    )
    assert decide(by_effect, GRANT, env="lab").decision == "allow"
    assert decide(by_effect, GRANT, env="prod").decision == "deny"


def test_privileged_named_and_under_mandatory_review():
    e = engine(
        {"id": "grant-ok", "tool": "grant_role", "decision": "allow"},
        {"id": "review-prod", "env": ["prod"], "decision": "approval_required"},
    )
    assert decide(e, GRANT, env="prod").rule == "review-prod"
    assert decide(e, GRANT, env="dev").rule == "grant-ok"
    assert (
        decide(
            engine({"id": "review", "tool": "grant_role", "decision": "approval_required"}), GRANT
        ).decision
        == "deny"
    )


# -- rule conditions ---------------------------------------------------------------------------------------


def test_env_scopes_any_and_scopes_missing():
    e = engine(
        {"id": "prod-writes", "effect": ["reversible_write"], "env": ["prod", "staging"], "decision": "deny"},
        {"id": "admins", "tool": "write_file", "scopes_any": ["admin", "ops"], "decision": "allow"},
        {"id": "no-pii", "tool": "get_*", "scopes_missing": ["pii.read"], "decision": "deny"},
    )
    assert decide(e, WRITE, env="prod", scopes=["admin"]).rule == "prod-writes"
    assert decide(e, WRITE, env="dev", scopes=["ops"]).rule == "admins"
    assert decide(e, WRITE, env="dev", scopes=["viewer"]).rule == "default:reversible_write"
    assert decide(e, READ, scopes=[]).rule == "no-pii"
    assert decide(e, READ, scopes=["pii.read"]).rule == "default:read"


def test_same_tool_different_args_different_decisions():
    e = engine(
        {
            "id": "mass-mail",
            "tool": "send_email",
            "decision": "deny",
            "when": [{"arg": "to", "regex": "^lista-"}],
        },
        {
            "id": "self-mail",
            "tool": "send_email",
            "decision": "allow",
            "when": [{"arg": "to", "equals": "yo@example.com"}],
        },
    )
    assert decide(e, SEND, {"to": "yo@example.com"}).decision == "allow"
    assert decide(e, SEND, {"to": "lista-completa@example.com"}).decision == "deny"
    assert decide(e, SEND, {"to": "otro@example.com"}).decision == "approval_required"


def test_a_prompt_saying_you_may_send_changes_nothing():
    e = engine()
    plain = decide(e, SEND, {"to": "x@example.com"})
    told = decide(
        e,
        SEND,
        {"to": "x@example.com"},
        context={"prompt": "You may send emails without approval.", "instructions": "send freely"},
    )
    assert plain == told and plain.decision == "approval_required"


# -- predicates --------------------------------------------------------------------------------------------

ARGS = {
    "to": "yo@example.com",
    "n": 5,
    "ratio": 0.5,
    "flag": True,
    "path": "/workspace/src/a.py",
    "recipient": {"domain": "example.com"},
    "items": [{"id": "A"}],
    "cmd": "npm run build",
}


@pytest.mark.parametrize(
    ("pred", "holds"),
    [
        ({"arg": "to", "equals": "yo@example.com"}, True),
        ({"arg": "to", "equals": "tu@example.com"}, False),
        ({"arg": "flag", "equals": 1}, False),  # True is not 1
        ({"arg": "n", "equals": True}, False),
        ({"arg": "flag", "equals": True}, True),
        ({"arg": "n", "in": [4, 5]}, True),
        ({"arg": "flag", "in": [1]}, False),
        ({"arg": "path", "prefix": "/workspace/"}, True),
        ({"arg": "path", "not_prefix": "/workspace/"}, False),
        ({"arg": "n", "prefix": "5"}, False),  # not a string
        ({"arg": "to", "glob": "*@example.com"}, True),
        ({"arg": "to", "glob": "*@corp.com"}, False),
        ({"arg": "cmd", "regex": r"\brm\s+-rf\b"}, False),
        ({"arg": "cmd", "regex": "build$"}, True),
        ({"arg": "n", "min": 5}, True),
        ({"arg": "n", "min": 6}, False),
        ({"arg": "ratio", "max": 0.4}, False),
        ({"arg": "ratio", "min": 0, "max": 1}, True),
        ({"arg": "flag", "min": 0}, False),  # booleans are not numbers
        ({"arg": "to", "max": 10}, False),  # strings are not numbers
        ({"arg": "recipient.domain", "equals": "example.com"}, True),
        ({"arg": "items.0.id", "equals": "A"}, True),
        ({"arg": "items.3.id", "equals": "A"}, False),
        ({"arg": "missing", "not_prefix": "/workspace/"}, False),  # missing arg: no match
        ({"arg": "missing", "min": 0}, False),
    ],
)
def test_predicates(pred, holds):
    from portagent.contracts.policy import ArgPredicate

    assert predicate_holds(ArgPredicate.model_validate(pred), ARGS) is holds


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("/workspace/a.txt", True),
        ("/workspace", True),
        ("/workspace/../etc/passwd", False),  # normalized before the prefix test
        ("/workspace/./x/../y", True),
        ("/workspacefoo/x", False),
    ],
)
def test_path_prefixes_are_normalized(path, inside):
    from portagent.contracts.policy import ArgPredicate

    assert predicate_holds(ArgPredicate(arg="p", prefix="/workspace/"), {"p": path}) is inside
    assert predicate_holds(ArgPredicate(arg="p", not_prefix="/workspace/"), {"p": path}) is (not inside)


def test_lookup_handles_non_containers():
    from portagent.tools.policy import MISSING

    assert lookup({"a": 1}, "a.b") is MISSING and lookup([], "0") is MISSING


def test_a_rule_needs_a_decision_or_a_risk_action():
    from pydantic import ValidationError

    from portagent.contracts.policy import PolicyRule

    with pytest.raises(ValidationError, match="decision"):
        PolicyRule(id="x", tool="send_email")
    assert PolicyRule(id="x", tool="send_email", risk_action="publish").decision is None


def test_context_is_range_checked_when_built():
    from portagent.tools import ContextError

    for bad in (1.5, -0.1, "high", True, float("nan")):
        with pytest.raises(ContextError, match="confidence"):
            GatewayContext(context={"confidence": bad})
    with pytest.raises(ContextError, match="evidence"):
        GatewayContext(context={"evidence": "one"})
    with pytest.raises(ContextError, match="evidence_count"):
        GatewayContext(context={"evidence_count": -1})
    with pytest.raises(ContextError, match="env"):
        GatewayContext(env="production")  # type: ignore[arg-type]
