"""A reply's usage is read field by field (``agent.usage_wire``), not by dumping the whole SDK object: the
counts recorded must be the ones the whole dump gives (issue 18, adapter overhead). The SDK's own usage
type is built here from wire-shaped data, as its client builds it from a response."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types.beta import BetaUsage

from portagent.adapters.anthropic.agent import usage_wire
from portagent.wire.anthropic_response import anthropic_usage

WIRE: list[dict[str, Any]] = [
    {"input_tokens": 120, "output_tokens": 30},
    {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 200,
        "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 0},
        "server_tool_use": {"web_search_requests": 1},
        "service_tier": "standard",
    },
    {"input_tokens": 7, "output_tokens": 90, "output_tokens_details": {"thinking_tokens": 60}},
    {"input_tokens": 7, "output_tokens": 9, "cache_read_input_tokens": None, "some_new_field": {"x": 1}},
]


@pytest.mark.parametrize("wire", WIRE)
def test_the_counts_are_the_whole_dumps(wire: dict[str, Any]) -> None:
    usage = BetaUsage.construct(**wire)  # as the SDK builds a response's models (no validation)
    whole = anthropic_usage(usage.model_dump(mode="json", exclude_none=True))
    read = anthropic_usage(usage_wire(usage))
    assert whole is not None and read is not None
    fields = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
    assert [getattr(read, f) for f in fields] == [getattr(whole, f) for f in fields]
