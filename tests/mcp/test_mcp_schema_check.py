"""An MCP server's listed tools get the metaschema check only when their schema is doubtful: a server
with dozens of tools of common schemas used to pay ``Draft202012Validator.check_schema`` (a full
metaschema walk) for each one when its tools were wrapped. Not a server run: ``_schema`` is what the
listing goes through, and the spy counts the real check's calls without changing its answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from portagent.contracts.agent import McpServerRef
from portagent.tools.mcp.errors import McpConfigError
from portagent.tools.mcp.sources import _schema, _Server


@pytest.fixture
def metaschema_checks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []
    real = Draft202012Validator.check_schema

    def spy(schema: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(schema)
        real(schema, *args, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "check_schema", staticmethod(spy))
    return seen


def _server() -> _Server:
    return _Server(McpServerRef(name="weather", command=["true"]), Path.cwd())


def test_plain_tool_schemas_skip_the_metaschema_check(metaschema_checks: list[Any]) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "A city."}, "days": {"type": "integer"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    for i in range(20):
        assert (
            _schema(_server(), {"name": f"tool{i}", "inputSchema": schema})["properties"]
            == schema["properties"]
        )
    assert metaschema_checks == []


def test_a_doubtful_schema_still_gets_jsonschemas_verdict(metaschema_checks: list[Any]) -> None:
    bad = {"type": "object", "properties": {"x": {"type": "no-such-type"}}}
    with pytest.raises(McpConfigError) as e:
        _schema(_server(), {"name": "broken", "inputSchema": bad})
    assert metaschema_checks == [bad]
    assert str(e.value).startswith("MCP server 'weather' lists tool 'broken' with an invalid inputSchema: ")
    assert "(at properties/x/type); fix the server" in str(e.value)
