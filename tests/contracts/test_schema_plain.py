"""``validate`` answers the usual JSON Schema questions without importing jsonschema (issue 20), and the
shortcut never says "well-formed" where jsonschema's metaschema check would refuse the schema.

``contracts.schema_plain.plainly_well_formed`` answers True only for schemas of the common keywords whose
values are certainly right; anything else goes to ``Draft202012Validator.check_schema``, whose message is
the one ``validate`` prints. Held to jsonschema on random schemas, malformed ones included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from _support import EXAMPLES, REPO, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from portagent.contracts.schema_plain import plainly_well_formed

ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 2.5, -1.0]),
    st.text(alphabet="ab(", max_size=3),
    st.lists(st.sampled_from(["a", "a", "b", 1]), max_size=3),
    st.just({}),
)
TYPE_NAMES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null", "int", ""])
KEYS = st.sampled_from(
    [
        "type",
        "title",
        "description",
        "format",
        "$comment",
        "default",
        "const",
        "deprecated",
        "uniqueItems",
        "minLength",
        "maxItems",
        "minProperties",
        "minimum",
        "exclusiveMaximum",
        "multipleOf",
        "required",
        "enum",
        "examples",
        "pattern",
        "$ref",
        "$id",
        "patternProperties",
        "nullable",
    ]
)
VALUES = st.one_of(
    ANY,
    TYPE_NAMES,
    st.lists(TYPE_NAMES, max_size=3),
    st.sampled_from(["^EXP-[0-9]+$", "(", "[a-", "\\d{2}", "x"]),
)


def _leaf() -> st.SearchStrategy[Any]:
    return st.one_of(st.booleans(), st.dictionaries(KEYS, VALUES, max_size=4), ANY)


SCHEMAS = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.builds(
            lambda base, props: {**base, "properties": props},
            st.dictionaries(KEYS, VALUES, max_size=2),
            st.one_of(st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2), ANY),
        ),
        st.builds(
            lambda key, sub: {key: sub}, st.sampled_from(["items", "additionalProperties", "not"]), inner
        ),
        st.builds(
            lambda key, subs: {key: subs},
            st.sampled_from(["anyOf", "allOf", "oneOf"]),
            st.lists(inner, max_size=3),
        ),
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS)
def test_well_formed_is_said_only_when_the_metaschema_agrees(schema: Any) -> None:
    if plainly_well_formed(schema):
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as e:
            raise AssertionError((schema, e.message)) from None


def test_the_usual_schemas_are_answered_by_the_shortcut() -> None:
    usual = {
        "type": "object",
        "description": "a case",
        "properties": {
            "case_id": {"type": "string", "pattern": "^EXP-[0-9]{2,8}$", "maxLength": 20},
            "priority": {"type": ["string", "null"], "enum": ["low", "high", None], "default": "low"},
            "amount": {"type": "number", "minimum": 0, "exclusiveMaximum": 1e6},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "either": {"anyOf": [{"type": "integer"}, {"const": "none"}]},
        },
        "required": ["case_id"],
        "additionalProperties": False,
    }
    assert plainly_well_formed(usual)
    for doubtful in (
        {"type": "strin"},
        {"type": []},
        {"type": ["string", "string"]},
        {"required": ["a", "a"]},
        {"pattern": "("},
        {"minLength": -1},
        {"minLength": 1.0},  # jsonschema accepts an integral float; the shortcut leaves it to it
        {"$ref": "#/x"},
        {"anyOf": []},
        {"properties": {"a": {"type": 3}}},
    ):
        assert not plainly_well_formed(doubtful), doubtful


def test_validate_of_the_example_does_not_import_jsonschema() -> None:
    """``validate examples/support_desk`` (tool schemas, valid and invalid examples, a suite's output
    schemas) is answered by the shortcut: jsonschema (~80 ms to import) is never loaded."""
    code = (
        "import sys\n"
        "from portagent.cli import main\n"
        "try:\n"
        f"    main(['validate', {str(EXAMPLES / 'support_desk')!r}])\n"
        "except SystemExit as e:\n"
        "    print('exit', e.code)\n"
        "print('jsonschema loaded:', 'jsonschema' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert "8 of 8 spec files valid" in done.stdout, done.stdout + done.stderr
    assert "jsonschema loaded: False" in done.stdout, done.stdout


def test_a_malformed_schema_still_gets_jsonschemas_message(tmp_path: Path) -> None:
    tools = tmp_path / "tools.yaml"
    tools.write_text(
        "kind: tools\nschema_version: 1\ntools:\n"
        "  - name: lookup\n    description: Look a thing up.\n    effect: read\n"
        "    handler: tools:lookup\n"
        "    input_schema: {type: object, properties: {q: {type: strin}}}\n"
    )
    code, out, err = run_cli("validate", str(tools))
    assert code != 0, out + err
    assert "malformed JSON Schema" in out + err and "strin" in out + err, out + err
    # the cause named (the types a "type" may name), not jsonschema's "not valid under any of the given schemas"
    assert "'strin' is not one of ['array', 'boolean'" in err and "given schemas" not in err, err
    assert "[tools.0.input_schema.properties.q.type]" in err, err
