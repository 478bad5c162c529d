"""The SDK-free mapping helpers of the ADK adapter, and their lists checked against the installed SDK."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from portagent.adapters.adk.events import final_text, finish_reason, output_schema_problems, usage_fields
from portagent.wire.gemini_schema import GEMINI_OPENAPI_SCHEMA_FIELDS, tool_schema_problems


def test_usage_fields_follow_otel_semantics():
    usage = SimpleNamespace(
        prompt_token_count=500,
        cached_content_token_count=200,
        candidates_token_count=28,
        thoughts_token_count=12,
        tool_use_prompt_token_count=5,
    )
    assert usage_fields(usage) == {
        "input_tokens": 505,
        "output_tokens": 40,
        "cache_read_tokens": 200,
        "cache_write_tokens": 0,
        "reasoning_tokens": 12,
    }
    assert usage_fields(None) == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
    }


@pytest.mark.parametrize(
    "vendor, calls, error, expected",
    [
        ("STOP", True, None, "tool_calls"),
        ("STOP", False, None, "stop"),
        (None, False, None, "stop"),
        ("MAX_TOKENS", False, None, "length"),
        ("MALFORMED_FUNCTION_CALL", False, None, "error"),
        ("SAFETY", False, None, "content_filter"),
        ("SAFETY", True, None, "content_filter"),
        ("OTHER", False, None, "other"),
        ("STOP", False, "MODEL_RETURNED_NO_CONTENT", "error"),
        # calls run only on STOP: any other reason with calls is not tool_calls (tests/adapters/test_reply_endings.py)
        ("OTHER", True, None, "other"),
        ("FINISH_REASON_UNSPECIFIED", True, None, "other"),
        ("A_REASON_NEWER_THAN_THIS_TABLE", True, None, "other"),
        # a chunk with calls and no reason yet (ADK with progressive SSE off hands on each chunk): they run
        (None, True, None, "tool_calls"),
        ("CONTINUATION", True, None, "length"),
        ("LANGUAGE", True, None, "content_filter"),
        ("MALFORMED_FUNCTION_CALL", True, None, "error"),
        ("UNEXPECTED_TOOL_CALL", True, "UNEXPECTED_TOOL_CALL", "error"),
        ("TOO_MANY_TOOL_CALLS", True, None, "error"),
    ],
)
def test_finish_reasons(vendor, calls, error, expected):
    assert finish_reason(vendor, has_calls=calls, error_code=error) == expected


def test_final_text_drops_thoughts():
    parts = [
        SimpleNamespace(text="thinking…", thought=True),
        SimpleNamespace(text="Hello ", thought=None),
        SimpleNamespace(text="world", thought=False),
        SimpleNamespace(text=None, thought=None),
    ]
    assert final_text(parts) == "Hello world"
    assert final_text([SimpleNamespace(text=None, thought=None)]) is None


def test_tool_schemas_gemini_can_declare():
    schema = {
        "type": "object",
        "title": "Args",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {
            "q": {"type": "string", "pattern": "^a", "maxLength": 4, "examples": ["ab"]},
            "n": {"type": ["integer", "null"], "minimum": 1, "enum": [1, 2.5]},
            "tags": {
                "type": "array",
                "items": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/T"}]},
                "minItems": 1,
            },
            "allOf": {"type": "string"},
        },  # a property *named* allOf is fine
        "required": ["q"],
        "additionalProperties": False,
        "$defs": {"T": {"type": "integer"}},
    }
    assert tool_schema_problems("search_orders", schema) == []


def test_tool_schema_features_gemini_cannot_declare_are_named():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "allOf": [{"minLength": 1}]},
            "b": {"type": "object", "properties": {"c": {"const": 1}}},
            "d": {"enum": ["x", True]},
            "e": {"$ref": "#/$defs/E", "description": "no siblings allowed"},
            "bad-name": {"type": "string"},
        },
        "if": {"required": ["a"]},
        "then": {"required": ["b"]},
        "$defs": {"E": {"type": "string"}},
    }
    problems = tool_schema_problems("x", schema)
    for expected in (
        "input_schema.properties.a.allOf",
        "input_schema.properties.b.properties.c.const",
        "input_schema.properties.d.enum",
        "input_schema.properties.e.$ref",
        "input_schema.properties.bad-name",
        "input_schema.if",
        "input_schema.then",
    ):
        assert any(p.startswith(expected + ":") for p in problems), (expected, problems)
    assert tool_schema_problems("9lives", {"type": "object", "properties": {}})[0].startswith("name '9lives'")


def test_output_schema_problems():
    ok = {
        "type": "object",
        "properties": {"a": {"type": "string", "nullable": True, "enum": ["x"]}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert output_schema_problems(ok) == []
    bad = {
        "type": "object",
        "$schema": "x",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"enum": [1]},
            "c": {"oneOf": [{"type": "string"}]},
        },
    }
    problems = output_schema_problems(bad)
    for expected in (
        "output_schema.$schema",
        "output_schema.properties.a.type",
        "output_schema.properties.b.enum",
        "output_schema.properties.c.oneOf",
    ):
        assert any(p.startswith(expected + ":") for p in problems), (expected, problems)


def test_openapi_schema_fields_match_the_installed_sdk():
    """GEMINI_OPENAPI_SCHEMA_FIELDS is google-genai's ``types.Schema`` (by alias): fail when it moves."""
    types = pytest.importorskip("google.genai.types")
    aliases = {f.alias or n for n, f in types.Schema.model_fields.items()}
    assert {
        "$defs" if a == "defs" else "$ref" if a == "ref" else a for a in aliases
    } == GEMINI_OPENAPI_SCHEMA_FIELDS


def test_output_schema_problems_agree_with_the_sdk_converter():
    """What output_schema_problems accepts, google-genai's converter (used by ADK) accepts, and the
    other way round for the refused examples."""
    t = pytest.importorskip("google.genai._transformers")
    import copy

    accepted = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "nullable": True, "enum": ["x"], "description": "d", "pattern": "^x$"},
            "b": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        },
        "required": ["a"],
        "additionalProperties": False,
        "title": "T",
    }
    assert output_schema_problems(accepted) == []
    t.t_schema(None, copy.deepcopy(accepted))
    for refused in (
        {"type": "object", "properties": {"a": {"const": "x"}}},
        {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}},
        {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}},
    ):
        assert output_schema_problems(refused)
        with pytest.raises(Exception):  # noqa: B017  (pydantic ValidationError, ValueError, AttributeError)
            t.t_schema(None, copy.deepcopy(refused))
