"""The gateway's schema check never lets jsonschema's evaluation error escape: a schema it cannot evaluate
(here a ``$ref`` to nowhere, compiled without ``validator_for``'s own check) answers the call with a
problem, as a ``validation_error``, instead of raising ``PointerToNowhere`` into the provider's SDK."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from portagent.contracts.schema_faults import schema_problem
from portagent.tools.validation import schema_errors


def test_an_unresolvable_reference_is_a_problem_not_an_exception() -> None:
    validator = Draft202012Validator({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}})
    (problem,) = schema_errors(validator, {"a": 1})
    assert problem["rule"] == "schema" and problem["path"] == ""
    assert "PointerToNowhere" in problem["message"] and "/$defs/Missing" in problem["message"]


def test_references_that_resolve_inside_the_schema_are_accepted() -> None:
    schema = {
        "type": "object",
        "$defs": {"Name": {"type": "string"}},
        "properties": {
            "a": {"$ref": "#/$defs/Name"},
            "b": {"$id": "https://example.com/inner", "$defs": {"N": {}}, "$ref": "#/$defs/N"},
            "const": {"const": {"$ref": "not a reference: data"}},
        },
    }
    assert schema_problem(schema) is None
    assert schema_errors(Draft202012Validator(schema), {"a": "x", "b": 1}) == []


def test_a_reference_outside_the_schema_is_named_with_where_it_is() -> None:
    fault = schema_problem({"type": "array", "items": {"$ref": "other.json#/x"}})
    assert fault is not None and fault.path == ("items", "$ref")
    assert "'other.json#/x' does not resolve within the schema" in fault.message
