"""Policy semantics (issue 14, findings 3 and 6): rules cannot be slipped.

Paths are compared as real paths (symlinks, ``..``); a predicate that cannot be evaluated fails closed in
deny/approval rules; values are normalised (NFC, case folding on request, numeric strings by the tool's
schema) before the policy sees them, whichever provider sent them, and the trace shows the normalised
value; regexes cannot stall a run; a policy that cannot decide denies.
"""

from __future__ import annotations

import json
import os
import time
import unicodedata
from typing import Any

from gateway_testkit import ctx, run, tool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portagent.contracts.policy import PermissionPolicy
from portagent.contracts.tool import ToolSpec
from portagent.tools import ToolGateway
from portagent.tools.policy import PolicyEngine, normalize_args

READ_FILE = tool(
    "read_file",
    properties={"path": {"type": "string"}},
    handler="acceptance_tools:get_student_record",
)
BUILTIN_READ = ToolSpec(  # as a governed Claude Code built-in is declared: a permissive schema
    name="Read",
    description="built-in",
    effect="read",
    input_schema={"type": "object", "properties": {}, "additionalProperties": True},
    handler="portagent.adapters.claude.tools:builtin_not_executed",
)


def policy(*rules: dict[str, Any]) -> PermissionPolicy:
    return PermissionPolicy.model_validate({"rules": list(rules)})


def decide(spec: ToolSpec, pol: PermissionPolicy, raw: Any, *, governed: bool = False) -> Any:
    c = ctx()
    gw = ToolGateway([] if governed else [spec], c, policy=pol)
    if governed:
        gw.register_governed(spec)
    p = run(gw.prepare(spec.name, raw, via="builtin" if governed else "function"))
    assert p.decision is not None, p.rejection
    return p, c


# -- paths ---------------------------------------------------------------------------------------------


def _workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("s3cret")
    (ws / "link").symlink_to(tmp_path)  # a symlink inside the workspace pointing out of it
    (ws / "ok.txt").write_text("fine")
    return ws, outside


def test_symlink_escape_of_a_governed_builtin_is_denied(tmp_path):
    ws, _ = _workspace(tmp_path)
    pol = policy(
        {
            "id": "stay-in-ws",
            "decision": "deny",
            "tool": "Read",
            "when": [{"arg": "file_path", "not_prefix": f"{ws}/"}],
        }
    )
    escaped = str(ws / "link" / "secret.txt")  # textually inside ws, really outside
    p, _ = decide(BUILTIN_READ, pol, {"file_path": escaped}, governed=True)
    assert (p.decision.decision, p.decision.rule) == ("deny", "stay-in-ws")
    p, _ = decide(BUILTIN_READ, pol, {"file_path": str(ws / "ok.txt")}, governed=True)
    assert p.decision.decision == "allow"


def test_within_and_dotdot_and_relative_paths(tmp_path):
    ws, _ = _workspace(tmp_path)
    deny_out = {
        "id": "out",
        "decision": "deny",
        "tool": "read_file",
        "when": [{"arg": "path", "not_within": str(ws)}],
    }
    cases = {
        str(ws / "ok.txt"): "allow",
        str(ws): "allow",
        str(ws / "link" / "secret.txt"): "deny",  # symlink
        f"{ws}/../secret.txt": "deny",  # ..
        f"{ws}x/a": "deny",  # a sibling folder sharing the prefix
        "ok.txt": "deny",  # relative, no root declared: counts as outside
    }
    for value, expected in cases.items():
        p, _ = decide(READ_FILE, policy(deny_out), {"path": value})
        assert p.decision.decision == expected, value
    rooted = {**deny_out, "when": [{"arg": "path", "not_within": str(ws), "root": str(ws)}]}
    assert decide(READ_FILE, policy(rooted), {"path": "ok.txt"})[0].decision.decision == "allow"
    assert decide(READ_FILE, policy(rooted), {"path": "link/secret.txt"})[0].decision.decision == "deny"


def test_a_path_that_cannot_be_resolved_is_denied_even_by_an_allow_rule(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    allow_in = {
        "id": "in",
        "decision": "allow",
        "tool": "read_file",
        "when": [{"arg": "path", "within": str(tmp_path)}],
    }
    p, c = decide(READ_FILE, policy(allow_in), {"path": str(loop / "x")})
    assert (p.decision.decision, p.decision.rule) == ("deny", "policy:error")
    assert "cannot be resolved" in p.decision.reason and "rule in" in p.decision.reason
    assert p.rejection is not None and p.rejection.error == "permission_denied"


# -- absent or untestable arguments ------------------------------------------------------------------


def test_absent_argument_in_a_deny_rule_fails_closed_unless_the_rule_says_otherwise():
    spec = tool("send", properties={"to": {"type": "string"}, "path": {"type": "string"}})
    deny = {"id": "d", "decision": "deny", "tool": "send", "when": [{"arg": "path", "not_prefix": "/ws/"}]}
    assert decide(spec, policy(deny), {"to": "x"})[0].decision.decision == "deny"
    lenient = {**deny, "when": [{"arg": "path", "not_prefix": "/ws/", "if_absent": "no_match"}]}
    assert decide(spec, policy(lenient), {"to": "x"})[0].decision.decision == "allow"
    # in an allow rule an absent argument does not match (also fail closed)
    allow = {"id": "a", "decision": "allow", "tool": "send", "when": [{"arg": "path", "prefix": "/ws/"}]}
    assert decide(spec, policy(allow), {"to": "x"})[0].decision.rule == "default:read"


def test_a_value_of_the_wrong_type_fails_closed_in_a_deny_rule():
    deny = {"id": "big", "decision": "deny", "tool": "Read", "when": [{"arg": "n", "min": 10}]}
    for value in (["1000"], {"v": 1000}, "lots", None):
        assert decide(BUILTIN_READ, policy(deny), {"n": value}, governed=True)[0].decision.decision == "deny"
    assert decide(BUILTIN_READ, policy(deny), {"n": 3}, governed=True)[0].decision.decision == "allow"


# -- normalisation -----------------------------------------------------------------------------------

PAY = tool(
    "pay", properties={"amount": {"type": "number"}, "count": {"type": "integer"}, "memo": {"type": "string"}}
)
BIG = {"id": "big", "decision": "deny", "tool": "pay", "when": [{"arg": "amount", "min": 500}]}


def test_numeric_string_and_number_give_the_same_decision_and_trace():
    seen = []
    for raw in (
        '{"amount": "1000"}',
        {"amount": "1000"},
        {"amount": 1000},
        '{"amount": 1000}',
        {"amount": " 1e3 "},
    ):
        p, c = decide(PAY, policy(BIG), raw)
        call = c.recorder.of_type("tool.call")[0]
        seen.append((p.decision.decision, p.decision.rule, json.dumps(call.args), call.args_hash))
        if raw in ({"amount": "1000"}, '{"amount": "1000"}'):
            assert call.provider_details["args_as_sent"] == {"amount": "1000"}
    assert len(set(seen)) == 1 and seen[0][0] == "deny", seen
    # where the schema wants a string, a numeric string stays a string
    assert normalize_args(
        {"type": "object", "properties": {"memo": {"type": "string"}}}, {"memo": "1000"}
    ) == {"memo": "1000"}
    # an integer field takes "7" and "7.0", not "7.5"
    schema = PAY.input_schema
    assert normalize_args(schema, {"count": "7"}) == {"count": 7}
    assert normalize_args(schema, {"count": "7.5"}) == {"count": "7.5"}


def test_numeric_strings_equal_numbers_in_equals_and_in():
    for pred in ({"arg": "n", "equals": 1000}, {"arg": "n", "in": [5, 1000]}):
        deny = {"id": "d", "decision": "deny", "tool": "Read", "when": [pred]}
        for value in (1000, "1000", 1000.0):
            assert (
                decide(BUILTIN_READ, policy(deny), {"n": value}, governed=True)[0].decision.decision == "deny"
            )


def test_unicode_nfc_and_case_folding():
    nfd = unicodedata.normalize("NFD", "Zoë")
    deny = {"id": "d", "decision": "deny", "tool": "pay", "when": [{"arg": "memo", "equals": "Zoë"}]}
    p, c = decide(PAY, policy(deny), {"amount": 1, "memo": nfd})
    assert p.decision.decision == "deny"
    assert c.recorder.of_type("tool.call")[0].args["memo"] == "Zoë"  # the trace shows the NFC form
    ci = {
        "id": "d",
        "decision": "deny",
        "tool": "pay",
        "when": [{"arg": "memo", "glob": "*STRASSE*", "ignore_case": True}],
    }
    assert decide(PAY, policy(ci), {"amount": 1, "memo": "Hauptstraße 1"})[0].decision.decision == "deny"
    cs = {**ci, "when": [{"arg": "memo", "glob": "*STRASSE*"}]}
    assert decide(PAY, policy(cs), {"amount": 1, "memo": "Hauptstraße 1"})[0].decision.decision == "allow"
    rx = {
        "id": "d",
        "decision": "deny",
        "tool": "pay",
        "when": [{"arg": "memo", "regex": "rm -rf", "ignore_case": True}],
    }
    assert decide(PAY, policy(rx), {"amount": 1, "memo": "RM -RF /"})[0].decision.decision == "deny"


def test_ignore_case_also_folds_compatibility_forms():
    """Held-out input: fullwidth letters (NFKC confusables) slipped past an ``ignore_case`` deny rule."""
    for op in ({"in": ["evil@x.com"]}, {"equals": "evil@x.com"}, {"glob": "*@x.com"}, {"regex": "@x\\.com$"},
               {"prefix": "evil@"}):  # fmt: skip
        deny = {
            "id": "d",
            "decision": "deny",
            "tool": "pay",
            "when": [{"arg": "memo", **op, "ignore_case": True}],
        }
        for memo in ("\uff45vil@x.com", "EVIL@\uff38.COM", "\uff25\uff36\uff29\uff2c@x.com"):
            assert decide(PAY, policy(deny), {"amount": 1, "memo": memo})[0].decision.decision == "deny", (
                op,
                memo,
            )
        assert (
            decide(PAY, policy(deny), {"amount": 1, "memo": "good@y.com"})[0].decision.decision == "allow"
        ), op


def test_padding_a_text_does_not_slip_past_a_deny_rule_nor_into_an_allow_rule():
    """Held-out input: ``"evil@x.com "`` got past ``in:`` and ``"a@competitor.com\\n"`` past ``glob:``. A padded
    text (spaces, newlines, zero-width characters) is read as sent and trimmed: deny/approval rules match when
    either reading does, allow rules only when both do."""
    for op in ({"in": ["evil@x.com"]}, {"equals": "evil@x.com"}, {"glob": "*@x.com"}, {"regex": "@x\\.com$"},
               {"prefix": "evil@"}):  # fmt: skip
        deny = {"id": "d", "decision": "deny", "tool": "pay", "when": [{"arg": "memo", **op}]}
        for memo in ("evil@x.com ", " evil@x.com", "evil@x.com\n", "\u200bevil@x.com", "evil@x.com\ufeff"):
            got = decide(PAY, policy(deny), {"amount": 1, "memo": memo})[0].decision.decision
            assert got == "deny", (op, memo)
    allow = {"id": "a", "decision": "allow", "tool": "pay", "when": [{"arg": "memo", "regex": "^ok$"}]}
    assert decide(PAY, policy(allow), {"amount": 1, "memo": "ok"})[0].decision.rule == "a"
    assert (
        decide(PAY, policy(allow), {"amount": 1, "memo": " ok "})[0].decision.rule != "a"
    )  # the default decides


# -- regexes -----------------------------------------------------------------------------------------


def test_a_catastrophic_regex_runs_in_linear_time_with_re2():
    deny = {"id": "d", "decision": "deny", "tool": "pay", "when": [{"arg": "memo", "regex": "^(a+)+$"}]}
    started = time.monotonic()
    p, _ = decide(PAY, policy(deny), {"amount": 1, "memo": "a" * 100_000 + "!"})
    assert p.decision.decision == "allow" and time.monotonic() - started < 1


def test_a_regex_re2_cannot_run_has_a_time_limit_and_its_timeout_denies(monkeypatch):
    monkeypatch.setenv("PORTAGENT_POLICY_REGEX_TIMEOUT_S", "0.05")
    allow = {
        "id": "ok",
        "decision": "allow",
        "tool": "pay",
        "when": [{"arg": "memo", "regex": r"^(a|aa)+\1$"}],
    }
    pol = policy(allow)
    assert PolicyEngine(pol).slow_matching
    started = time.monotonic()
    p, _ = decide(PAY, pol, {"amount": 1, "memo": "a" * 60 + "!"})
    assert time.monotonic() - started < 3
    assert (p.decision.decision, p.decision.rule) == ("deny", "policy:error")
    assert "ran out of time" in p.decision.reason
    # the same pattern on a small input still works (lookaround/backreferences are supported)
    assert decide(PAY, pol, {"amount": 1, "memo": "aaaa"})[0].decision.decision == "allow"


def test_only_a_call_a_slow_regex_can_judge_is_decided_off_the_event_loop():
    """A lookaround regex runs on the time-limited engine, in a thread. A rule for another tool (or
    effect class) never reads its ``when``: those calls are decided on the loop, without the hop."""
    import threading

    slow = {"id": "s", "decision": "deny", "tool": "pay*", "when": [{"arg": "memo", "regex": "^(?!ok)"}]}
    lookup = tool("lookup", properties={"q": {"type": "string"}})
    threads: dict[str, str] = {}

    class Watching(PolicyEngine):
        def decide(self, tool: ToolSpec, args: Any, ctx: Any) -> Any:
            threads[tool.name] = threading.current_thread().name
            return super().decide(tool, args, ctx)

    engine = Watching(policy(slow))
    assert engine.slow_for(PAY) and not engine.slow_for(lookup)

    async def both() -> str:
        gw = ToolGateway([PAY, lookup], ctx(), policy=engine)
        await gw.prepare("pay", {"amount": 1, "memo": "ok then"})
        await gw.prepare("lookup", {"q": "x"})
        return threading.current_thread().name

    loop_thread = run(both())
    assert threads["lookup"] == loop_thread and threads["pay"] != loop_thread
    by_effect = PolicyEngine(policy({**slow, "tool": None, "effect": ["external_effect"]}))
    assert not by_effect.slow_for(lookup)  # a read tool: the rule for external effects never applies


def test_a_regex_that_does_not_compile_is_refused_at_load():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="does not compile"):
        policy(
            {"id": "d", "decision": "deny", "tool": "pay", "when": [{"arg": "memo", "regex": "(unclosed"}]}
        )


# -- a policy that cannot decide denies ----------------------------------------------------------------


class _BrokenEngine(PolicyEngine):
    """An engine whose evaluation fails (a real subclass, not a mock: the gateway must survive it)."""

    def _decide(self, tool: ToolSpec, args: Any, ctx: Any) -> Any:
        raise KeyError("dev")


def test_a_policy_evaluation_error_is_a_deny_with_a_reason():
    c = ctx()
    gw = ToolGateway([PAY], c, policy=_BrokenEngine(PermissionPolicy()))
    obs = run(gw.call("pay", {"amount": 1}))
    assert obs.ok is False and obs.error == "permission_denied"
    event = c.recorder.of_type("permission.decision")[0]
    assert (event.decision, event.rule) == ("deny", "policy:error") and "KeyError" in event.reason


def test_partial_risk_weights_are_refused_at_load():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="env_weights needs a weight for every key; missing: lab, dev"):
        PermissionPolicy.model_validate({"risk": {"env_weights": {"staging": 0.3, "prod": 0.7}}})


# -- property: the decision does not depend on the provider path ----------------------------------------

SCHEMA_TOOL = tool(
    "act",
    properties={
        "amount": {"type": "number"},
        "count": {"type": "integer"},
        "flag": {"type": "boolean"},
        "name": {"type": "string"},
        "path": {"type": "string"},
    },
)
PROPERTY_POLICY = policy(
    {"id": "big", "decision": "deny", "tool": "act", "when": [{"arg": "amount", "min": 100}]},
    {
        "id": "many",
        "decision": "deny",
        "tool": "act",
        "when": [{"arg": "count", "max": 3, "if_absent": "no_match"}],
    },
    {
        "id": "zoe",
        "decision": "deny",
        "tool": "act",
        "when": [{"arg": "name", "equals": "Zoë", "if_absent": "no_match"}],
    },
    {
        "id": "etc",
        "decision": "deny",
        "tool": "act",
        "when": [{"arg": "path", "prefix": "/etc/", "if_absent": "no_match"}],
    },
    {"id": "yes", "decision": "allow", "tool": "act", "when": [{"arg": "flag", "equals": True}]},
)
numbers = st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["Zoë", unicodedata.normalize("NFD", "Zoë"), "/etc/x", "/etc/../etc/y"]),
)
ARGS = st.fixed_dictionaries(
    {},
    optional={
        "amount": numbers,
        "count": st.integers(-5, 10),
        "flag": st.booleans(),
        "name": texts,
        "path": texts,
    },
)


def _as_strings(args: dict[str, Any]) -> dict[str, Any]:
    """What a model may send to OpenAI/ADK: numbers as numeric strings (the Claude CLI turns them back)."""
    return {k: json.dumps(v) if k in ("amount", "count") else v for k, v in args.items()}


def _nfd(args: dict[str, Any]) -> dict[str, Any]:
    return {k: unicodedata.normalize("NFD", v) if isinstance(v, str) else v for k, v in args.items()}


def _outcome(raw: Any) -> tuple[Any, ...]:
    c = ctx()
    gw = ToolGateway([SCHEMA_TOOL], c, policy=PROPERTY_POLICY)
    p = run(gw.prepare("act", raw))
    d = p.decision
    return (d.decision if d else None, d.rule if d else p.rejection.error, p.args_hash)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ARGS)
def test_the_decision_does_not_depend_on_the_provider_path(args):
    reference = _outcome(args)  # ADK: an object
    assert _outcome(json.dumps(args)) == reference  # OpenAI: a JSON string
    assert _outcome(json.dumps(_as_strings(args))) == reference  # numbers sent as strings
    assert _outcome(_as_strings(args)) == reference
    assert _outcome(_nfd(args)) == reference  # decomposed Unicode
    assert os.sep == "/"
