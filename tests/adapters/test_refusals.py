"""A reply in which an OpenAI model refuses, on the openai and langgraph providers: one event, one outcome,
as an Anthropic ``stop_reason: refusal`` (tests/adapters/test_cut_replies.py, ``content_filter``).

OpenAI says a refusal in the reply's content, not in its finish reason: the Responses API sends a message
whose content part is ``{"type": "refusal", "refusal": "…"}`` (status ``completed``), Chat Completions a
message with ``refusal`` set and ``content: null`` (``finish_reason: stop``). openai-agents raises
``ModelRefusalError`` on such a reply when it holds no call — the root agent's run failed ``sdk_error``, an
agent run as a tool failed the whole run (``Agent.as_tool`` takes no error handlers) — and ran its calls
when it held one. Every provider now treats it as the content filter's stop: the model call is traced
``finish_reason: content_filter``, no call of the reply runs (``calls_not_run`` names them), and the turn
ends ``completed`` with what the model said, the refusal text — as an Anthropic refusal's text is its
answer. An output schema changes nothing (the text is not valid output: ``output_valid`` false).

Real SDKs and the real gateway against the emulator (``data/refusals.yaml``). The emulator's script cannot
say "refuse" on the OpenAI wires: ``openai_wire.refusing_openai`` swaps in renderers that send the first
reply of each ``refuse*`` conversation as a refusal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "anthropic"))
from openai_wire import REFUSAL, refusing_openai
from runtime_testkit import (
    bundle,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    with_spec,
)

from portagent.contracts.bundle import AgentBundle
from portagent.emulator import RunningEmulator, load_script, serve

SCRIPT = Path(__file__).resolve().parent / "data" / "refusals.yaml"
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])
TARGETS: dict[str, tuple[str, str | None, str]] = {
    "openai": ("openai", None, "responses"),
    "openai_chat": ("openai", None, "chat_completions"),
    "langgraph": ("langgraph", "openai:gpt-4.1-mini", "responses"),
    "langgraph-chat": ("langgraph", "openai:gpt-4.1-mini", "chat_completions"),
}
"""(provider, models.langgraph, models.openai_api): the providers that run an OpenAI model."""
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


@pytest.fixture(name="emu", scope="module")
def refusals_fixture() -> Iterator[RunningEmulator]:
    with refusing_openai(), serve(load_script(SCRIPT)) as running:
        yield running


def run(emu: RunningEmulator, target: str, text: str | list[str], b: AgentBundle, streaming: bool) -> Any:
    provider, model, api = TARGETS[target]
    for name, node in b.agents.items():
        models = node.spec.models.model_copy(update={"openai_api": api})
        if model is not None:
            models = models.model_copy(update={"langgraph": model})
        b = with_spec(b, name, models=models)
    return go(emu, b, text, provider, streaming=streaming)


def assert_nothing_ran(r: Any) -> None:
    assert not r.of("tool.call") and not r.of("tool.result") and not r.of("handoff"), r.types()
    assert handlers.CALLS == {} and handlers.REFUNDS == []


# --- tests ---------------------------------------------------------------------------------------------


@STREAMING
@pytest.mark.parametrize("structured", [False, True], ids=["text", "schema"])
@pytest.mark.parametrize("target", list(TARGETS))
def test_a_refusal_ends_the_turn_with_its_text(emu, target, structured, streaming):
    """The model refuses: the run completes with the refusal as its answer (openai-agents raised
    ``ModelRefusalError``), traced ``content_filter``, in one model call (the model is not asked again)."""
    b = with_spec(bundle(), output_schema=OUTPUT_SCHEMA) if structured else bundle()
    r = run(emu, target, "Refuse to answer.", b, streaming)
    assert (r.result.status, r.result.final_output) == ("completed", REFUSAL), r.result
    (call,) = r.of("model.call")
    assert call.finish_reason == "content_filter" and "calls_not_run" not in call.provider_details
    assert len(r.requests) == 1
    if structured:
        assert r.result.output_valid is False


@STREAMING
@pytest.mark.parametrize("target", list(TARGETS))
def test_the_calls_of_a_refusal_are_not_run(emu, target, streaming):
    """A refusal that holds a call: the call is not run (openai-agents and LangChain ran it), the model call
    names it, the turn ends with the refusal, and the next user message carries no call left unanswered."""
    r = run(emu, target, ["Refund ORD-7, but refuse.", "Are you there?"], bundle(), streaming)
    assert (r.result.status, r.result.final_output) == ("completed", "Nothing was refunded."), r.result
    assert_nothing_ran(r)
    first, second = r.of("model.call")
    assert (first.finish_reason, first.provider_details.get("calls_not_run")) == (
        "content_filter",
        ["issue_refund"],
    )
    assert second.finish_reason == "stop"
    assert len(r.requests) == 2
    for view in r.views()[1:]:
        assert not [i for i in view.items if i.kind in ("tool_call", "tool_result")], view.items
    assert REFUSAL in json.dumps(r.requests[1]["body"])  # the refusal is kept in the conversation


@STREAMING
@pytest.mark.parametrize("structured", [False, True], ids=["text", "schema"])
@pytest.mark.parametrize("target", list(TARGETS))
def test_an_agent_tool_that_refuses_answers_with_its_refusal(emu, target, structured, streaming):
    """An agent run as a tool refuses: its run ends with the refusal, which the desk gets as the tool's
    result, and the desk goes on (openai-agents' refusal error failed the whole run)."""
    b = with_spec(bundle(), "faq_expert", output_schema=OUTPUT_SCHEMA) if structured else bundle()
    r = run(emu, target, "Ask the expert, who refuses.", b, streaming)
    assert (r.result.status, r.result.final_output) == ("completed", "The expert declined."), r.result
    expert = [c for c in r.of("model.call") if c.agent == "faq_expert"]
    assert [c.finish_reason for c in expert] == ["content_filter"], [
        (c.agent, c.finish_reason) for c in r.of("model.call")
    ]
    last = r.views()[-1]
    assert REFUSAL in json.dumps([i.output for i in last.tool_results()]), last.items


@STREAMING
@pytest.mark.parametrize("structured", [False, True], ids=["text", "schema"])
@pytest.mark.parametrize(
    "prompt", ["Refuse to answer, silently.", "Refund ORD-7, but refuse silently."], ids=["bare", "calling"]
)
@pytest.mark.parametrize("target", list(TARGETS))
def test_an_empty_refusal_ends_the_turn_with_no_text(emu, target, prompt, structured, streaming):
    """The model refuses and says nothing (``"refusal": ""``; Chat Completions' converter in openai-agents
    drops it): still a refusal, traced ``content_filter``, its calls not run, and the turn ends with ``""``
    in one model call. With an output schema openai-agents found no final output in ``""`` and asked the
    model again (the run completed with the next answer, model calls content_filter, stop)."""
    b = with_spec(bundle(), output_schema=OUTPUT_SCHEMA) if structured else bundle()
    r = run(emu, target, prompt, b, streaming)
    assert (r.result.status, r.result.final_output) == ("completed", ""), r.result
    assert [c.finish_reason for c in r.of("model.call")] == ["content_filter"]
    assert_nothing_ran(r)
    assert len(r.requests) == 1


@STREAMING
@pytest.mark.parametrize("target", list(TARGETS))
def test_an_agent_tool_with_a_schema_that_refuses_silently_answers_nothing(emu, target, streaming):
    """An agent run as a tool, with an output schema, refuses with no text: its run ends with ``""`` (the
    desk's tool result), its model not asked again (``Agent.as_tool`` takes no error handlers)."""
    b = with_spec(bundle(), "faq_expert", output_schema=OUTPUT_SCHEMA)
    r = run(emu, target, "Ask the expert, who refuses silently.", b, streaming)
    assert (r.result.status, r.result.final_output) == ("completed", "The expert said nothing."), r.result
    expert = [c for c in r.of("model.call") if c.agent == "faq_expert"]
    assert [c.finish_reason for c in expert] == ["content_filter"], [
        (c.agent, c.finish_reason) for c in r.of("model.call")
    ]
    assert "asked again" not in json.dumps([v.items for v in r.views()], default=str)
