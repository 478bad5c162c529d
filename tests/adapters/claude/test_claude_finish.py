"""Claude Code's trace says how a response ended in wire.finish's Anthropic words, the anthropic adapter's
and the trace importer's (one table, portagent/wire/finish.py)."""

from __future__ import annotations

import pytest

from portagent.adapters.claude.trace import _finish
from portagent.wire.finish import reply_finish


@pytest.mark.parametrize(
    "stop_reason, finish",
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("refusal", "content_filter"),
        ("pause_turn", "other"),
        ("a_reason_added_later", "other"),
        (None, None),
    ],
)
def test_a_stop_reason_reads_as_the_anthropic_adapter_reads_it(stop_reason, finish):
    assert _finish(stop_reason) == finish
    if stop_reason is not None:  # a reply holding calls only on tool_use, as the CLI sends them
        assert reply_finish("anthropic", stop_reason, has_calls=stop_reason == "tool_use") == finish
