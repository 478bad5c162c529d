"""ACCEPTANCE chapter 08: risk-scored permission decisions, approval cards, edited approvals."""

from __future__ import annotations

from datetime import datetime

import pytest
from gateway_testkit import ctx, run, tool, types

from portagent.contracts.policy import PermissionPolicy, RiskScoring
from portagent.tools import ContextError, PolicyEngine, PolicyInputError, ScriptedApprover, ToolGateway
from portagent.tools.policy import risk_score

BUSCAR_REFERENCIA = tool(
    "buscar_referencia",
    handler="acceptance_tools:buscar_fuente",
    effect="read",
    cost_usd=0.01,
    properties={"query": {"type": "string"}},
)
PUBLICAR_CAPITULO = tool(
    "publicar_capitulo",
    handler="acceptance_tools:publish_page",
    effect="external_effect",
    reversible=True,
    cost_usd=0.04,
    idempotency={"required": True},
    properties={"path": {"type": "string"}},
)
ENVIAR_EMAIL = tool(
    "enviar_email",
    handler="acceptance_tools:send_email",
    effect="external_effect",
    reversible=False,
    cost_usd=0.02,
    idempotency={"required": True},
    properties={"to": {"type": "string"}, "subject": {"type": "string"}},
)

RISK_POLICY = PermissionPolicy(
    version="c08",
    risk=RiskScoring(),
    rules=[{"id": "publishing", "tool": "publicar_*", "risk_action": "publish"}],
)


def decide(t, args=None, *, policy=RISK_POLICY, **kw):
    return PolicyEngine(policy).decide(t, args or {}, ctx(recorder=False, **kw))


def test_golden_allow_006():
    d = decide(
        BUSCAR_REFERENCIA, {"query": "APA"}, env="lab", context={"confidence": 0.90, "evidence": ["cita"]}
    )
    assert (d.decision, d.risk_score, d.rule, d.reason) == ("allow", 0.06, "risk:low", "low operational risk")


def test_golden_approval_0418_with_card():
    c = ctx(env="prod", context={"confidence": 0.82, "evidence": ["diff", "build", "review"]})
    gw = ToolGateway([PUBLICAR_CAPITULO], c, policy=RISK_POLICY)
    obs = run(gw.call("publicar_capitulo", {"path": "/fasciculo-05"}))
    assert obs.error == "approval_required"
    decision = c.recorder.of_type("permission.decision")[0]
    assert (decision.decision, decision.risk_score, decision.rule) == (
        "approval_required",
        0.418,
        "risk:prod_write",
    )
    card = gw.approvals.get(obs.details["approval_id"])
    assert card.choices == ["approve", "edit", "reject"]
    span = datetime.fromisoformat(card.expires_at) - datetime.fromisoformat(card.created_at)
    assert span.total_seconds() == 600
    assert (card.risk_score, card.effect, card.reversible, card.cost_usd) == (
        0.418,
        "external_effect",
        True,
        0.04,
    )
    assert card.evidence == ["diff", "build", "review"] and card.args == {"path": "/fasciculo-05"}
    assert types(c) == ["tool.call", "permission.decision", "approval.requested", "tool.result"]


def test_golden_deny_0539_missing_evidence():
    d = decide(
        ENVIAR_EMAIL, {"to": "alumno@example.com"}, env="prod", context={"confidence": 0.51, "evidence": []}
    )
    assert (d.decision, d.risk_score, d.rule) == ("deny", 0.539, "risk:missing_evidence")
    assert d.reason == "missing evidence before an external action"


@pytest.mark.parametrize(
    ("t", "env", "reversible", "expected_score", "expected"),
    [
        (BUSCAR_REFERENCIA, "prod", False, 0.27, "approval_required"),
        ("write", "lab", True, 0.21, "allow"),
        ("write", "lab", False, 0.29, "approval_required"),
        (ENVIAR_EMAIL, "lab", True, 0.255, "approval_required"),
    ],
)
def test_sample_grid(t, env, reversible, expected_score, expected):
    if t == "write":
        t = tool("crear_ticket", effect="reversible_write", idempotency={"required": True}, cost_usd=0.01)
    t = t.model_copy(update={"reversible": reversible, "cost_usd": 0.01})
    d = decide(t, env=env, context={"confidence": 0.9, "evidence": ["x"]})
    assert (d.risk_score, d.decision) == (expected_score, expected)
    if expected == "approval_required":
        assert d.rule == "risk:review"


def test_deny_by_score_is_reachable_with_configured_thresholds():
    strict = PermissionPolicy(risk=RiskScoring(allow_below=0.10, approval_below=0.20))
    d = decide(
        BUSCAR_REFERENCIA.model_copy(update={"reversible": False}),
        policy=strict,
        env="prod",
        context={"confidence": 0.9, "evidence": ["x"]},
    )
    assert (d.decision, d.rule, d.risk_score) == ("deny", "risk:too_high", 0.27)


def test_pre_scoring_rules_can_be_switched_off_and_weights_configured():
    lenient = PermissionPolicy(
        risk=RiskScoring(
            deny_external_without_evidence=False, approval_in_prod_for_writes=False, approval_below=0.9
        )
    )
    d = decide(ENVIAR_EMAIL, policy=lenient, env="prod", context={"confidence": 0.51, "evidence": []})
    assert (d.decision, d.rule, d.risk_score) == ("approval_required", "risk:review", 0.539)
    weights = RiskScoring(weights={"effect": 1.0}, allow_below=0.5)
    assert decide(BUSCAR_REFERENCIA, policy=PermissionPolicy(risk=weights)).risk_score == 0.05


def test_explicit_rules_still_win_over_scoring_and_report_the_score():
    policy = PermissionPolicy(
        risk=RiskScoring(), rules=[{"id": "no-mail", "tool": "enviar_email", "decision": "deny"}]
    )
    d = decide(ENVIAR_EMAIL, policy=policy, env="lab", context={"confidence": 1.0, "evidence": ["a", "b"]})
    assert d.rule == "no-mail" and d.risk_score is not None


def test_privileged_operations_are_denied_before_scoring():
    grant = tool("grant_role", effect="privileged_operation")
    d = decide(grant, env="lab", context={"confidence": 1.0, "evidence": ["a", "b"]})
    assert (d.decision, d.rule, d.risk_score) == ("deny", "default:privileged_operation", None)


def test_missing_confidence_counts_as_none():
    d = decide(BUSCAR_REFERENCIA, env="lab", context={"evidence": ["x"]})
    assert d.risk_score == round(0.015 + 0.01 + 0.01 + 0.15 + 0.01 + 0.00025, 3)


def test_confidence_outside_0_1_is_a_validation_error_not_a_clamp():
    with pytest.raises(ContextError, match=r"confidence must be a number between 0 and 1, got -5"):
        ctx(context={"confidence": -5})
    with pytest.raises(PolicyInputError, match="between 0 and 1"):
        risk_score(RiskScoring(), "send", "prod", False, -5.0, 0, 0.02)
    # a context mutated after construction is still caught, as a validation_error observation
    c = ctx(env="prod", context={"confidence": 0.5, "evidence": ["x"]})
    c.context["confidence"] = 7
    gw = ToolGateway([BUSCAR_REFERENCIA], c, policy=RISK_POLICY)
    obs = run(gw.call("buscar_referencia", {"query": "x"}))
    assert obs.error == "validation_error" and "confidence" in obs.message


# -- edited approvals are re-validated -------------------------------------------------------------

WORKSPACE_POLICY = PermissionPolicy(
    rules=[
        {
            "id": "outside-workspace",
            "tool": "write_file",
            "decision": "deny",
            "reason": "path outside the workspace",
            "when": [{"arg": "path", "not_prefix": "/workspace/"}],
        },
        {
            "id": "destructive-shell",
            "tool": "run_command",
            "decision": "deny",
            "reason": "destructive command",
            "when": [{"arg": "command", "regex": r"\brm\s+-[a-zA-Z]*[rf]"}],
        },
        {"id": "shell-review", "tool": "run_command", "decision": "approval_required"},
    ]
)
WRITE_FILE = tool(
    "write_file",
    effect="reversible_write",
    idempotency={"required": True},
    properties={"path": {"type": "string"}, "content": {"type": "string"}},
    required=["path", "content"],
)
RUN_COMMAND = tool(
    "run_command", effect="compute", properties={"command": {"type": "string"}}, required=["command"]
)


@pytest.mark.parametrize(
    ("tool_name", "args", "edited"),
    [
        (
            "write_file",
            {"path": "/workspace/notes.md", "content": "hola"},
            {"path": "/etc/passwd", "content": "hola"},
        ),
        (
            "write_file",
            {"path": "/workspace/notes.md", "content": "hola"},
            {"path": "/workspace/../etc/passwd", "content": "hola"},
        ),
        ("run_command", {"command": "npm run build"}, {"command": "rm -rf /"}),
    ],
)
def test_an_edit_that_widens_the_action_is_refused(spy, tool_name, args, edited):
    approver = ScriptedApprover(
        [{"tool": tool_name, "call_args": args, "decision": "edit", "args": edited, "reviewer": "ana"}]
    )
    c = ctx()
    gw = ToolGateway([WRITE_FILE, RUN_COMMAND], c, policy=WORKSPACE_POLICY, approver=approver)
    obs = run(gw.call(tool_name, args))
    assert obs.error == "approval_rejected" and obs.details["edit_refused"] is True
    assert "policy denies the edited arguments" in obs.message
    assert spy.calls() == []
    # refused when the reviewer made it: the card is rejected with why, never stored as that edit
    resolved = c.recorder.of_type("approval.resolved")[0]
    assert resolved.status == "rejected" and "policy denies the edited arguments" in (resolved.note or "")


def test_a_narrowing_edit_runs_with_the_edited_arguments(spy):
    approver = ScriptedApprover(
        [{"tool": "run_command", "decision": "edit", "args": {"command": "npm run build"}}]
    )
    gw = ToolGateway([RUN_COMMAND], ctx(), policy=WORKSPACE_POLICY, approver=approver)
    obs = run(gw.call("run_command", {"command": "pytest && npm run build"}))
    assert obs.ok and spy.calls("run_command") == [{"command": "npm run build", "cwd": "/workspace"}]


def test_an_edit_that_breaks_the_schema_is_refused(spy):
    approver = ScriptedApprover([{"decision": "edit", "args": {"command": 42}}])
    gw = ToolGateway([RUN_COMMAND], ctx(), policy=WORKSPACE_POLICY, approver=approver)
    obs = run(gw.call("run_command", {"command": "make"}))
    assert obs.error == "approval_rejected" and obs.details["problems"][0]["path"] == "command"
    assert spy.calls() == []


def test_an_edit_needing_scopes_the_actor_lacks_is_refused(spy):
    scoped = tool(
        "write_file",
        effect="reversible_write",
        idempotency={"required": True},
        properties={"path": {"type": "string"}, "content": {"type": "string"}},
    )
    policy = PermissionPolicy(
        rules=[
            {
                "id": "etc-needs-root",
                "tool": "write_file",
                "decision": "deny",
                "when": [{"arg": "path", "prefix": "/etc/"}],
                "scopes_missing": ["root"],
            }
        ]
    )
    approver = ScriptedApprover([{"decision": "edit", "args": {"path": "/etc/hosts", "content": ""}}])
    gw = ToolGateway([scoped], ctx(scopes=["user"]), policy=policy, approver=approver)
    obs = run(gw.call("write_file", {"path": "/tmp/x", "content": ""}))
    assert obs.error == "approval_rejected" and obs.details["problems"][0]["rule"] == "etc-needs-root"
    assert spy.calls() == []
