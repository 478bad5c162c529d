"""Matching a script's tool name against the declared ones: Claude Code's ``mcp__<server>__`` prefix
is taken off whole, never by cutting a tool's own ``__``."""

from __future__ import annotations

import pytest

from portagent.emulator.resolve import resolve_tool_name


@pytest.mark.parametrize(
    ("script", "declared", "expected"),
    [
        ("get__order", ["mcp__portagent__get__order"], "mcp__portagent__get__order"),
        ("mcp__portagent__get__order", ["get__order"], "get__order"),
        ("mcp__other__get__order", ["mcp__portagent__get__order"], "mcp__portagent__get__order"),
        ("a__n_code_tool", ["Read", "mcp__portagent__a__n_code_tool"], "mcp__portagent__a__n_code_tool"),
        ("get_weather", ["mcp__weather__get_weather"], "mcp__weather__get_weather"),
    ],
)
def test_the_mcp_prefix_is_taken_off_whole(script, declared, expected):
    assert resolve_tool_name(script, declared) == (expected, None)


@pytest.mark.parametrize(
    ("script", "declared"),
    [
        # The tail of a tool's own name is not that tool.
        ("order", ["mcp__portagent__get__order"]),
        ("mcp__portagent__order", ["mcp__portagent__get__order"]),
        ("mcp__portagent__order", ["get__order"]),
    ],
)
def test_the_tail_of_a_tools_own_name_does_not_match(script, declared):
    name, note = resolve_tool_name(script, declared)
    assert name == script
    assert note is not None and "not declared" in note
