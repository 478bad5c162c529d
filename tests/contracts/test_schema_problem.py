"""``schema_problem``: the one "is this JSON Schema well-formed?" check behind ``validate``, suite output
schemas, the gateway's validators and MCP-listed tools. Its verdict and message must be jsonschema's own
(``Draft202012Validator.check_schema``) for every schema, whether the shortcut answered or not."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from portagent.contracts.schema_plain import SchemaFault, plainly_well_formed, schema_problem

WELL_FORMED: list[Any] = [
    True,
    False,
    {},
    {"type": "object", "properties": {"q": {"type": "string", "maxLength": 5}}, "required": ["q"]},
    {"type": ["string", "null"], "enum": ["a", None]},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},  # the shortcut doubts
    {"$ref": "#/$defs/a", "$defs": {"a": {"type": "integer"}}},
    {"minLength": 1.0},
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
    assert schema_problem(schema) == expected


def test_the_path_points_at_the_bad_part() -> None:
    fault = schema_problem({"type": "object", "properties": {"x": {"type": "no-such-type"}}})
    assert fault is not None
    assert fault.path == ("properties", "x", "type")
    assert "no-such-type" in fault.message
