"""The argument check's shortcut (``validation.plainly_valid``, issue 18): it may only ever say "valid" when
jsonschema says so too; anything else goes to jsonschema, whose errors are the ones reported. Checked on
random schemas of the keywords it knows (and a few it does not) against random JSON values."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from portagent.contracts.schema_plain import plainly_invalid, plainly_valid
from portagent.tools.validation import schema_errors, validator_for

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False, allow_infinity=False),
    st.sampled_from([1.0, 2.0, 0.0, -0.0, 1.5]),
    st.text(alphabet="abAB1-é ", max_size=6),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner, max_size=4)
    ),
    max_leaves=12,
)
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"])


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(TYPES, st.lists(TYPES, min_size=1, max_size=3)),
            "enum": st.lists(
                st.one_of(st.none(), st.text(alphabet="ab1", max_size=2), st.integers(0, 2)), max_size=3
            ),
            "const": st.one_of(st.text(alphabet="ab", max_size=2), st.integers(0, 2), st.just(True)),
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 4),
            "pattern": st.sampled_from(["^a", "b$", "[0-9]", "^EXP-[0-9]{2,8}$", "é"]),
            "minimum": st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False)),
            "maximum": st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False)),
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 3),
            "description": st.just("d"),
            "format": st.just("email"),
            "exclusiveMinimum": st.integers(-1, 1),  # a keyword the shortcut leaves to jsonschema
            "multipleOf": st.just(2),
        },
    )


SCHEMAS = st.recursive(
    st.one_of(_leaf(), st.booleans()),
    lambda inner: st.one_of(
        st.builds(
            lambda base, props, required, extra: {
                **base,
                "properties": props,
                "required": required,
                **({"additionalProperties": extra} if extra is not None else {}),
            },
            _leaf(),
            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=2, unique=True),
            st.one_of(st.none(), st.booleans(), inner),
        ),
        st.builds(lambda base, items: {**base, "items": items}, _leaf(), inner),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS, JSON)
def test_valid_is_said_only_when_jsonschema_agrees(schema: Any, value: Any) -> None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        assume(False)  # the gateway compiles only valid schemas (validator_for checks them first)
    if plainly_valid(schema, value):
        assert Draft202012Validator(schema).is_valid(value), (schema, value)


def test_the_usual_tool_schemas_are_answered_by_the_shortcut() -> None:
    record = {
        "type": "object",
        "properties": {
            "case_id": {"type": "string", "maxLength": 20, "pattern": "^EXP-[0-9]{2,8}$"},
            "include_payments": {"type": "boolean"},
            "template_id": {"type": "string", "enum": ["missing_docs", "payment_due"]},
            "amount": {"type": "number", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["case_id"],
        "additionalProperties": False,
    }
    good = {
        "case_id": "EXP-42",
        "include_payments": True,
        "template_id": "payment_due",
        "amount": 3,
        "tags": [],
    }
    assert plainly_valid(record, good)
    for bad in ({}, {"case_id": "42"}, {"case_id": "EXP-42", "x": 1}, {"case_id": "EXP-42", "amount": -1}):
        assert not plainly_valid(record, bad)
        assert schema_errors(validator_for(record), bad)  # jsonschema's errors, as before
    assert schema_errors(validator_for(record), good) == []
    assert not plainly_valid({"$ref": "#/$defs/x", "$defs": {"x": {}}}, 1)  # unknown keywords: jsonschema's
    assert not plainly_valid({"type": "integer"}, True) and plainly_valid({"type": "integer"}, 2.0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS, JSON)
def test_invalid_is_said_only_when_jsonschema_agrees(schema: Any, value: Any) -> None:
    """``plainly_invalid`` (``validate``'s check that an invalid example fails) holds to jsonschema too."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        assume(False)  # validate checks examples only against a well-formed schema
    if plainly_invalid(schema, value):
        assert not Draft202012Validator(schema).is_valid(value), (schema, value)


def test_the_usual_invalid_examples_are_answered_by_the_shortcut() -> None:
    record = {
        "type": "object",
        "properties": {
            "case_id": {"type": "string", "pattern": "^EXP-[0-9]{2,8}$"},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        },
        "required": ["case_id"],
        "additionalProperties": False,
    }
    for bad in (
        {},
        {"case_id": "42"},
        {"case_id": "EXP-42", "priority": "urgent"},
        {"case_id": "EXP-42", "x": 1},
        {"case_id": "EXP-42", "tags": ["a", 1]},
        {"case_id": "EXP-42", "tags": ["a", "b", "c"]},
        [],
    ):
        assert plainly_invalid(record, bad), bad
    assert not plainly_invalid(record, {"case_id": "EXP-42", "priority": "low", "tags": ["a"]})
    assert not plainly_invalid({"$ref": "#/$defs/x", "$defs": {"x": {}}}, 1)  # unknown keywords: jsonschema's
    assert not plainly_invalid({"type": "integer"}, 2.0) and plainly_invalid({"type": "integer"}, True)
