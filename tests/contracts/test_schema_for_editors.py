"""``portagent schema`` for editors: one combined schema that picks the kind from ``kind:``, examples
and imported files carrying the ``# yaml-language-server: $schema=`` line.

The combined schema is checked with ``jsonschema`` (the validator yaml-language-server's schemas are
written for: draft 2020-12) against every example spec of the repository and against broken files.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from _support import EXAMPLES, run_cli

MODELINE = "# yaml-language-server: $schema="
AUTHORED = ["agent", "tool", "tools", "policy", "suite", "emulator-script"]


@pytest.fixture(scope="module")
def combined(tmp_path_factory: pytest.TempPathFactory) -> jsonschema.Draft202012Validator:
    out = tmp_path_factory.mktemp("schemas")
    code, stdout, err = run_cli("schema", "--out", str(out))
    assert code == 0, err
    assert f"wrote {out / 'portagent.schema.json'}" in stdout and MODELINE in stdout
    schema = json.loads((out / "portagent.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "$ref" not in json.dumps(schema).replace('"$ref": "#/$defs/', "")  # self-contained
    return jsonschema.Draft202012Validator(schema)


def _specs() -> list[Path]:
    out = []
    for p in sorted((EXAMPLES / "support_desk").glob("*.yaml")):
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "kind" in data:
            out.append(p)
    return out


@pytest.mark.parametrize("path", _specs(), ids=lambda p: p.name)
def test_every_example_spec_validates_against_the_combined_schema(combined, path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert [e.message for e in combined.iter_errors(data)] == []


def test_the_kind_picks_the_schema(combined) -> None:
    agent = {"kind": "agent", "schema_version": 1, "name": "a", "instructions": "x", "modles": {}}
    assert any("'modles' was unexpected" in e.message for e in combined.iter_errors(agent))
    # the same body as a policy is judged by the policy schema
    policy = {"kind": "policy", "schema_version": 1, "name": "p", "version": "1", "rules": [{"id": 1}]}
    errors = list(combined.iter_errors(policy))
    assert errors and all("rules" in list(e.absolute_path) or "rules" in e.json_path for e in errors)
    assert any("is not one of" in e.message for e in combined.iter_errors({"kind": "nope"}))
    assert any("'kind' is a required property" in e.message for e in combined.iter_errors({"name": "x"}))


@pytest.mark.parametrize("kind", AUTHORED)
def test_schema_example_is_valid_and_carries_the_schema_line(combined, kind: str, tmp_path: Path) -> None:
    code, out, err = run_cli("schema", "--example", kind)
    assert code == 0, err
    first, _, body = out.partition("\n")
    assert first == f"{MODELINE}schemas/portagent.schema.json"
    assert [e.message for e in combined.iter_errors(yaml.safe_load(body))] == []
    spec = tmp_path / f"{kind}.yaml"
    spec.write_text(out, encoding="utf-8")
    if kind == "suite":  # the example suite runs the example agent, saved as agent.yaml
        (tmp_path / "agent.yaml").write_text(run_cli("schema", "--example", "agent")[1], encoding="utf-8")
    (tmp_path / "my_handlers.py").write_text("def lookup_order(order_id):\n    return {}\n", encoding="utf-8")
    code, _, err = run_cli("validate", str(spec))
    assert code == 0, err


def test_schema_example_bad_input_is_one_message() -> None:
    code, _, err = run_cli("schema", "--example", "run")
    assert code == 2 and "unknown kind 'run' for --example" in err and "Traceback" not in err
    code, _, err = run_cli("schema", "--schema-ref", "x.json")
    assert code == 2 and "--schema-ref goes with --example" in err
    code, out, _ = run_cli("schema", "--example", "tool", "--schema-ref", "../schemas/portagent.schema.json")
    assert code == 0 and out.startswith(f"{MODELINE}../schemas/portagent.schema.json\n")


def test_schema_into_a_file_path_is_a_usage_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = run_cli("schema", "--out", str(f))
    assert code == 2 and "not a folder" in err


def test_every_shipped_spec_passes_the_published_schema_of_its_kind():
    """What ``validate`` accepts, an editor must not flag: every valid example (shorthands included, e.g. an
    emulator turn's ``handoff: billing``) passes the JSON Schema ``portagent schema`` publishes for its kind."""
    from portagent.contracts.loader import model_for_kind

    root = Path(__file__).resolve().parents[2] / "examples"
    checked = 0
    for path in sorted(root.rglob("*.yaml")):
        if "invalid_specs" in path.parts:
            continue
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or doc.get("kind") not in AUTHORED:
            continue
        schema = model_for_kind(doc["kind"]).model_json_schema()
        errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
        assert not errors, f"{path}: {errors[:3]}"
        checked += 1
    assert checked >= 10
