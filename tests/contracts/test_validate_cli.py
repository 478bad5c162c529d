"""`portagent validate`: every bad input gets one clear message (file, field path, expectation), exit 1."""

import subprocess
import sys

import pytest
from _support import EXAMPLES, run_cli

INVALID = EXAMPLES / "invalid_specs"

CASES = {
    "yaml_syntax.yaml": ["yaml_syntax.yaml:4:14", "YAML syntax error"],
    "unknown_field.yaml": ["[descripton]", "did you mean 'description'"],
    "wrong_type.yaml": ["[budget.max_turns]", "valid integer"],
    "undefined_tool.yaml": ["[tools.0]", "undefined tool 'search_polcy'", "did you mean 'search_policy'"],
    "duplicate_tool.yaml": ["[tools.1]", "duplicate tool 'search_policy'"],
    "malformed_schema.yaml": ["[input_schema.properties.n.type]", "malformed JSON Schema"],
    "bad_handler.yaml": ["[handler]", "module:function"],
    "zero_budget.yaml": ["[budget.max_turns]", "[budget.max_tool_calls]", "greater than or equal to 1"],
    "unknown_effect.yaml": ["[effect]", "'delete_everything'", "privileged_operation"],
    "bad_confidence.yaml": ["[risk.allow_below]", "less than or equal to 1"],
    "rule_matches_nothing.yaml": ["[rules.0]", "'ghost' matches no tool"],
    "write_without_idempotency.yaml": ["requires idempotency"],
    "privileged_allowed.yaml": ["may not allow privileged_operation"],
    "empty.yaml": ["empty file"],
    "not_utf8.yaml": ["not UTF-8"],
}


def test_every_invalid_spec_has_a_case():
    assert sorted(CASES) == sorted(p.name for p in INVALID.glob("*.yaml"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_invalid_spec_gets_clear_message(name):
    code, out, err = run_cli("validate", str(INVALID / name))
    assert code == 1
    assert "Traceback" not in err
    for fragment in CASES[name]:
        assert fragment in err, f"{fragment!r} not in:\n{err}"
    assert name in err


def test_all_problems_listed_not_just_first():
    code, _, err = run_cli("validate", str(INVALID))
    assert code == 1
    assert f"0 of {len(CASES)} spec files valid" in err


def test_example_domain_is_valid():
    code, out, err = run_cli("validate", str(EXAMPLES / "support_desk"))
    assert code == 0, err
    assert "0 of" not in out and "spec files valid" in out


def test_missing_path_is_usage_error():
    code, _, err = run_cli("validate", "does/not/exist.yaml")
    assert code == 2
    assert "does/not/exist.yaml" in err and "Traceback" not in err


def test_directory_without_specs(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    code, _, err = run_cli("validate", str(tmp_path))
    assert code == 2
    assert "no spec files" in err


def test_bad_flag_is_usage_error():
    code, _, err = run_cli("validate", "--no-such-flag", "x")
    assert code == 2


def test_unknown_kind(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("kind: agnet\nschema_version: 1\n")
    code, _, err = run_cli("validate", str(f))
    assert code == 1 and "did you mean 'agent'" in err


def test_missing_schema_version(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("kind: policy\n")
    code, _, err = run_cli("validate", str(f))
    assert code == 1 and "schema_version" in err


def test_provider_flag_turns_incompatibility_into_failure(tmp_path):
    base = EXAMPLES / "support_desk"
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text(
        "kind: agent\nschema_version: 1\nname: a\ninstructions: hi\nmodels: {openai: gpt-4.1-mini}\n"
        "delegation: [{agent: b.yaml, kind: handoff}]\n"
    )
    b.write_text(
        "kind: agent\nschema_version: 1\nname: b\ninstructions: hi\n"
        "delegation: [{agent: a.yaml, kind: handoff}]\n"
    )
    code, out, _ = run_cli("validate", str(a))
    assert code == 0 and "lacks handoff_cycles: the delegation graph has a cycle: a -> b -> a" in out
    code, _, err = run_cli("validate", "--provider", "adk", str(a))
    assert code == 1 and "provider 'adk' cannot run this agent" in err and "a -> b -> a" in err
    code, _, _ = run_cli("validate", "--provider", "openai", str(a))
    assert code == 0
    # No claude model id: a configuration mistake the run would refuse, so validate refuses it too.
    code, _, err = run_cli("validate", "--provider", "claude", str(a))
    assert code == 1 and "[models.claude]" in err and "no model id for provider 'claude'" in err
    assert base.exists()


def test_real_process_prints_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "portagent", "validate", str(INVALID / "yaml_syntax.yaml")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "YAML syntax error" in proc.stderr


def test_schema_command_writes_every_kind(tmp_path):
    code, out, _ = run_cli("schema", "--out", str(tmp_path / "schemas"))
    assert code == 0
    names = {p.name for p in (tmp_path / "schemas").iterdir()}
    assert {"agent.schema.json", "tool.schema.json", "policy.schema.json", "tools.schema.json"} <= names


def test_validate_for_adk_refuses_schema_features_gemini_cannot_express(tmp_path):
    spec = tmp_path / "a.yaml"
    (tmp_path / "m.py").write_text("def f(a=None):\n    return {}\n")
    spec.write_text(
        "kind: agent\nschema_version: 1\nname: a\ninstructions: x\nmodels: {adk: gemini-2.5-flash, openai: gpt-4.1-mini}\n"
        "tools:\n  - name: get_x\n    description: d\n    effect: read\n    handler: m:f\n"
        "    input_schema: {type: object, properties: {a: {allOf: [{type: string}]}}}\n"
    )
    code, _, err = run_cli("validate", "--provider", "adk", str(spec))
    assert code == 1 and "input_schema.properties.a.allOf" in err and "Gemini" in err
    code, _, _ = run_cli("validate", "--provider", "openai", str(spec))
    assert code == 0


def test_a_rule_naming_a_granted_builtin_matches_something(tmp_path):
    spec = tmp_path / "a.yaml"
    spec.write_text(
        "kind: agent\nschema_version: 1\nname: a\ninstructions: x\nbuiltin_tools: [Bash]\n"
        "policy:\n  rules:\n    - {id: no-rm, decision: deny, tool: Bash, when: [{arg: command, regex: rm}]}\n"
    )
    code, out, err = run_cli("validate", str(spec))
    assert code == 0, err


def test_a_handler_module_that_cannot_be_found_is_a_problem(tmp_path):
    """Found without running anything: the module file next to the agent spec, then on sys.path (a
    package's submodule too). Before, validate passed and every call failed at run time."""
    from _support import run_cli as cli

    code, _, _ = cli("init", str(tmp_path / "p"))
    assert code == 0
    tools = tmp_path / "p" / "tools.yaml"
    good = tools.read_text()
    assert cli("validate", str(tmp_path / "p"))[0] == 0
    for handler, module in (("p_handlerz:get_order", "p_handlerz"), ("portagent.nope:f", "portagent.nope")):
        tools.write_text(good.replace("p_handlers:get_order", handler))
        code, out, err = cli("validate", str(tmp_path / "p"))
        assert code == 1, out + err
        assert f"[tools.get_order.handler]: handler module {module!r} of tool 'get_order' not found" in err
    tools.write_text(good.replace("p_handlers:get_order", "portagent.tools.memory:remember"))
    assert cli("validate", str(tmp_path / "p" / "agent.yaml"))[0] == 0  # an installed module is found


@pytest.mark.parametrize(
    ("extra", "field", "what"),
    [
        (
            "    preconditions: [{name: open, check: p_checkz:is_open}]\n",
            "preconditions.0.check",
            "precondition check",
        ),
        (
            "    effect: external_effect\n    idempotency: {required: true, key_field: order_id, reconcile: p_lookupz:find}\n",
            "idempotency.reconcile",
            "reconcile",
        ),
    ],
    ids=["precondition", "reconcile"],
)
def test_a_precondition_or_reconcile_module_that_cannot_be_found_is_a_problem(tmp_path, extra, field, what):
    """A precondition check or a reconcile function is looked up as a handler is, at run time: a missing
    module fails every call (a precondition's) or the one moment it is needed (a reconcile's, after an
    effect whose outcome was lost). Before, validate checked handlers only and passed both."""
    from _support import run_cli as cli

    assert cli("init", str(tmp_path / "p"))[0] == 0
    tools = tmp_path / "p" / "tools.yaml"
    good = tools.read_text()
    line = "    handler: p_handlers:get_order\n"
    assert line in good
    if "effect: external_effect" in extra:
        good = good.replace("    effect: read\n", "")
    tools.write_text(good.replace(line, line + extra))
    code, out, err = cli("validate", str(tmp_path / "p"))
    assert code == 1, out + err
    module = extra.split(": p_")[1].split(":")[0]
    assert f"[tools.get_order.{field}]: {what} module 'p_{module}' of tool 'get_order' not found" in err, err
    (tmp_path / "p" / f"p_{module}.py").write_text(
        "def is_open(args, context):\n    return True\n\n\ndef find(key, args, context):\n    return None\n"
    )
    code, out, err = cli("validate", str(tmp_path / "p"))
    assert code == 0, out + err  # found next to the agent spec, as the run finds it


@pytest.mark.parametrize(
    ("value", "shape"), [("true", "bool True"), ("1.0", "float 1.0"), ('"1"', "str '1'")]
)
def test_schema_version_must_be_an_integer(tmp_path, value, shape):
    """YAML's true and 1.0 equal 1 in Python; pydantic's lax Literal[1] took them as version 1."""
    spec = tmp_path / "p.yaml"
    spec.write_text(f"kind: policy\nschema_version: {value}\nname: p\n")
    code, out, err = run_cli("validate", str(spec))
    assert code == 1 and f"'schema_version:' must be an integer (current: 1), got {shape}" in out + err
