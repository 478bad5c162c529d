"""Which native tool schemas ``portagent import`` refuses, and why (``migration.importing.schema_gap``)."""

from __future__ import annotations

from typing import Any

import pytest

from portagent.migration.importing import schema_gap


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"type": "object", "properties": {"x": {"type": "string"}}}, None),
        (
            {"type": "object", "properties": {"x": {"type": "strnig"}}},
            "its schema is not valid JSON Schema: ",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "string"}}, "required": "x"},
            "not valid JSON Schema",
        ),
        ({"type": "object", "properties": {"x": {}}}, "parameter 'x' has no type"),
        ({"type": "string"}, "not an object schema with properties"),
        ([], "not an object schema with properties"),
    ],
)
def test_a_schema_is_imported_or_refused_with_the_reason(schema: Any, said: str | None) -> None:
    gap = schema_gap(schema)
    if said is None:
        assert gap is None
    else:
        assert gap is not None and said in gap
