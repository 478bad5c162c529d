"""``schema_problem``: the one "is this JSON Schema well-formed?" check behind ``validate``, suite output
schemas, the gateway's validators and MCP-listed tools. Its verdict and message must be jsonschema's own
(``Draft202012Validator.check_schema``) for every schema, whether the shortcut answered or not — except
that where jsonschema's message names no cause ("… is not valid under any of the given schemas"), the
message says what is wrong and the path may point deeper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _support import run_cli
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from portagent.contracts.schema_faults import SchemaFault, schema_problem
from portagent.contracts.schema_plain import plainly_well_formed

WELL_FORMED: list[Any] = [
    True,
    False,
    {},
    {"type": "object", "properties": {"q": {"type": "string", "maxLength": 5}}, "required": ["q"]},
    {"type": ["string", "null"], "enum": ["a", None]},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},  # the shortcut doubts
    {"$ref": "#/$defs/a", "$defs": {"a": {"type": "integer"}}},
    {"minLength": 1.0},
    # a tree of itself: the reference descends (items), so checking a value ends
    {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            }
        },
        "$ref": "#/$defs/node",
    },
    {"type": "integer", "minimum": 10**400},  # math.isfinite of it overflowed: a traceback
]
MALFORMED: list[Any] = [
    {"type": "strnig"},
    {"properties": 3},
    {"required": "x"},
    {"required": ["a", "a"]},
    {"type": "object", "properties": {"x": {"type": "no-such-type"}}},
    {"items": {"minItems": -1}},
    {"anyOf": []},
    3,
    "object",
    None,
    [{"type": "string"}],
]


def _jsonschema(schema: Any) -> SchemaFault | None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        return SchemaFault(e.message, tuple(e.absolute_path))
    return None


@pytest.mark.parametrize("schema", WELL_FORMED, ids=repr)
def test_a_well_formed_schema_has_no_problem(schema: Any) -> None:
    assert _jsonschema(schema) is None  # the table itself is right
    assert schema_problem(schema) is None


@pytest.mark.parametrize("schema", MALFORMED, ids=repr)
def test_a_malformed_schema_gets_jsonschemas_message_and_path(schema: Any) -> None:
    expected = _jsonschema(schema)
    assert expected is not None  # the table itself is right
    assert not plainly_well_formed(schema)
    fault = schema_problem(schema)
    assert fault is not None
    if expected.message.endswith("is not valid under any of the given schemas"):
        assert fault.path[: len(expected.path)] == expected.path
        assert "given schemas" not in fault.message
    else:
        assert fault == expected


# jsonschema says "'strng' is not valid under any of the given schemas" for each of these (its best match is
# the metaschema's anyOf of "one type name" and "a list of them"): a user is told nothing about what to fix.
NAMED_CAUSE = [
    ({"type": "strng"}, ("type",), "'strng' is not one of ['array', 'boolean', 'integer', 'null'"),
    ({"properties": {"q": {"type": "strng"}}}, ("properties", "q", "type"), "'strng' is not one of ['array'"),
    ({"type": ["string", "strng"]}, ("type", 1), "'strng' is not one of ['array'"),
    ({"type": 3}, ("type",), "3 is not one of ['array'"),
    # a list is no misspelt type name: the list's own fault, not "[] is not one of ['array', …]"
    ({"type": []}, ("type",), "[] should be non-empty"),
    ({"type": ["string", "string"]}, ("type",), "['string', 'string'] has non-unique elements"),
    ({"items": {"anyOf": [{"type": "x"}]}}, ("items", "anyOf", 0, "type"), "'x' is not one of ['array'"),
]


@pytest.mark.parametrize(("schema", "where", "says"), NAMED_CAUSE, ids=repr)
def test_a_malformed_type_names_the_cause_and_the_exact_place(
    schema: Any, where: tuple[Any, ...], says: str
) -> None:
    expected = _jsonschema(schema)
    assert expected is not None and "not valid under any of the given schemas" in expected.message
    fault = schema_problem(schema)
    assert fault is not None
    assert fault.message.startswith(says)
    assert fault.path == where


def test_alternatives_that_all_reject_the_kind_say_what_each_accepts() -> None:
    from jsonschema.exceptions import best_match

    from portagent.contracts.schema_faults import _specific

    validator = Draft202012Validator(
        {"properties": {"a": {"anyOf": [{"type": "string"}, {"type": ["array", "null"]}]}}}
    )
    error = best_match(validator.iter_errors({"a": 3}))
    assert error is not None and "given schemas" in error.message
    assert _specific(error) == SchemaFault(
        "3 is not of type 'string', and 3 is not of type 'array', 'null'", ("a",)
    )


def test_the_path_points_at_the_bad_part() -> None:
    fault = schema_problem({"type": "object", "properties": {"x": {"type": "no-such-type"}}})
    assert fault is not None
    assert fault.path == ("properties", "x", "type")
    assert "no-such-type" in fault.message


def test_every_fault_of_a_schema_is_listed_each_in_its_place() -> None:
    """``validate`` promises every problem: a schema with three mistakes listed only the first."""
    from portagent.contracts.schema_faults import schema_faults

    schema = {
        "type": "object",
        "properties": {"a": {"type": "strng"}, "b": {"type": "objct"}, "q": {"minLength": "2"}},
        "anyOf": [{"type": "strng"}, {"pattern": "(unclosed"}],
    }
    faults = schema_faults(schema)
    assert {f.path for f in faults} == {
        ("properties", "a", "type"),
        ("properties", "b", "type"),
        ("properties", "q", "minLength"),
        ("anyOf", 0, "type"),
        ("anyOf", 1, "pattern"),  # checked as a regex, as check_schema checks it
    }
    assert schema_problem(schema) in faults  # the first one


def test_validate_lists_every_fault(tmp_path: Path) -> None:
    tools = tmp_path / "tools.yaml"
    tools.write_text(
        "kind: tools\nschema_version: 1\ntools:\n"
        "  - name: lookup\n    description: Look a thing up.\n    effect: read\n    handler: tools:lookup\n"
        "    input_schema: {type: object, properties: {a: {type: strng}, b: {type: objct}}}\n"
    )
    code, out, err = run_cli("validate", str(tools))
    assert code == 1, out + err
    assert (
        "[tools.0.input_schema.properties.a.type]" in err
        and "[tools.0.input_schema.properties.b.type]" in err
    )


def test_a_schema_declaring_another_draft_is_told_which_one_is_checked() -> None:
    """Right in draft-07 (tuple ``items``), wrong in 2020-12: the fault says the declared draft is not the
    one checked. A draft-07 ``$schema`` on a schema 2020-12 accepts too stays fine (MCP servers send it)."""
    draft7 = "http://json-schema.org/draft-07/schema#"
    fault = schema_problem({"$schema": draft7, "type": "array", "items": [{"type": "string"}]})
    assert fault is not None and fault.path == ("items",)
    assert (
        f"the schema declares $schema {draft7!r}; portagent checks every schema as JSON Schema 2020-12"
        in fault.message
    )
    assert (
        schema_problem({"$schema": draft7, "type": "object", "properties": {"q": {"type": "string"}}}) is None
    )


def _nested(keyword: str, levels: int) -> Any:
    schema: Any = {"type": "string"}
    for _ in range(levels):
        schema = {keyword: schema}
    return schema


@pytest.mark.parametrize("keyword", ["not", "items"])
def test_a_schema_nested_past_the_limit_is_a_fault_never_a_recursion_error(keyword: str) -> None:
    """Each level of ``not`` or ``items`` is one level of JSON but several of jsonschema's frames: 123
    levels of ``not`` passed a limit counted for ``properties`` and crashed the check."""
    from portagent.contracts.schema_faults import MAX_DEPTH, schema_faults

    deep = _nested(keyword, MAX_DEPTH + 5)
    faults = schema_faults(deep)
    assert len(faults) == 1 and faults[0].message.startswith(f"nests deeper than {MAX_DEPTH} levels")
    fine = _nested(keyword, MAX_DEPTH - 1)
    assert schema_faults(fine) == ()
    list(Draft202012Validator(fine).iter_errors([[[]]] if keyword == "items" else 1))  # checks, no crash


def test_faults_come_in_one_order_whatever_the_hash_seed() -> None:
    from portagent.contracts.schema_faults import schema_faults

    schema = {"properties": {k: {"type": f"x{k}"} for k in "dcba"}, "required": "a"}
    faults = schema_faults(schema)
    assert [f.path for f in faults] == sorted((f.path for f in faults), key=lambda p: tuple(map(str, p)))


def test_keys_that_are_not_strings_and_percent_encoded_loops_are_faults() -> None:
    import yaml

    from portagent.contracts.schema_faults import schema_faults

    [key] = schema_faults(yaml.safe_load("type: object\nproperties: {1: {type: string}}"))
    assert key.path == ("properties",) and "the key 1 is not a string" in key.message
    [null] = schema_faults(yaml.safe_load("const: {null: 1}"))
    assert "the key null is not a string" in null.message
    # a JSON Pointer in a URI fragment is percent-encoded: '#/$defs/a%20b' is the entry "a b"
    loop = {"$defs": {"a b": {"$ref": "#/$defs/a%20b"}}, "properties": {"x": {"$ref": "#/$defs/a%20b"}}}
    [fault] = schema_faults(loop)
    assert fault.path == ("$defs", "a b", "$ref") and "leads back to itself" in fault.message
