"""A reply cut by the token limit while it calls tools, on every provider but claude (Claude Code's own
loop decides; the emulator's script drives its CLI through another path).

The token limit may cut a call's arguments mid-JSON, so no provider runs the calls of such a reply
(Anthropic ``max_tokens``, OpenAI Chat Completions ``length``, Responses ``incomplete`` with reason
``max_output_tokens``, Gemini ``MAX_TOKENS``): the turn ends ``completed`` with the text so far, the model
call is traced ``finish_reason: length`` and names the calls in ``provider_details.calls_not_run``, and a
next user message carries no call left without its result (every vendor refuses one). openai-agents and
google-adk ran such calls; the anthropic and langgraph providers already did not.

Real SDKs and the real gateway against the emulator (``data/cut_replies.yaml``, the shop agents of the
adapter tests); what each vendor was sent is read from the emulator's request log.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "anthropic"))
from runtime_testkit import (
    bundle,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    with_spec,
)

from portagent.contracts.bundle import AgentBundle
from portagent.emulator import RunningEmulator, load_script, serve

SCRIPT = Path(__file__).resolve().parent / "data" / "cut_replies.yaml"
PROVIDERS = ["openai", "openai_chat", "adk", "anthropic", "langgraph"]
"""``openai_chat``: the openai provider on Chat Completions (``models.openai_api``); ``langgraph`` runs its
default, an OpenAI Responses chat model (its other vendors: tests/adapters/langgraph)."""
HANDING_OFF = ["openai", "openai_chat", "adk", "langgraph"]  # the anthropic provider has no handoff
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


@pytest.fixture(name="emu", scope="module")
def cut_replies_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT)) as running:
        yield running


def run(emu: RunningEmulator, provider: str, text: str | list[str], b: AgentBundle, streaming: bool) -> Any:
    if provider == "openai_chat":
        models = b.agents[b.root].spec.models.model_copy(update={"openai_api": "chat_completions"})
        b, provider = with_spec(b, models=models), "openai"
    return go(emu, b, text, provider, streaming=streaming)


def assert_nothing_ran(r: Any) -> None:
    """The gateway ran no tool and no agent was delegated to: no tool event, no handoff, no handler call."""
    assert not r.of("tool.call") and not r.of("tool.result") and not r.of("handoff"), r.types()
    assert handlers.CALLS == {} and handlers.REFUNDS == []


def assert_no_call_sent_back(r: Any) -> None:
    """No request after the first carries a tool call or a tool result: the cut call was neither answered
    nor left dangling in the history."""
    for view in r.views()[1:]:
        assert not [i for i in view.items if i.kind in ("tool_call", "tool_result")], view.items


@STREAMING
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_cut_by_the_token_limit_runs_none_of_its_calls(emu, provider, streaming):
    """The reply says a few words and begins a refund call, then stops at the token limit. The refund is
    not run; the run's first message ends with the text so far; the next user message continues the
    conversation with that text and no call left unanswered."""
    r = run(emu, provider, ["Refund ORD-7, but run out of tokens.", "Are you there?"], bundle(), streaming)
    assert (r.result.status, r.result.stop_reason) == ("completed", "final_output"), r.result.error
    assert r.result.final_output == "Nothing was refunded."
    assert_nothing_ran(r)
    first, second = r.of("model.call")
    assert (first.finish_reason, first.provider_details.get("calls_not_run")) == ("length", ["issue_refund"])
    assert second.finish_reason == "stop" and "calls_not_run" not in second.provider_details
    assert len(r.requests) == 2  # one per user message: the cut reply ended its turn
    assert_no_call_sent_back(r)
    assert "Refunding ORD-7 now." in json.dumps(r.requests[1]["body"])  # the cut answer's text is kept


@STREAMING
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_answer_so_far_of_a_reply_cut_before_any_text(emu, provider, streaming):
    """Nothing but a call before the limit: the turn ends, its answer empty (openai-agents would otherwise
    fall back to the streamed call items; ADK would end a streamed one as an error)."""
    r = run(emu, provider, "Look up ORD-7 without a word, and run out of tokens.", bundle(), streaming)
    assert (r.result.status, r.result.final_output) == ("completed", ""), r.result.error
    assert_nothing_ran(r)
    (call,) = r.of("model.call")
    assert (call.finish_reason, call.provider_details.get("calls_not_run")) == ("length", ["get_order"])
    assert len(r.requests) == 1


@STREAMING
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_agent_with_an_output_schema_is_not_asked_again(emu, provider, streaming):
    """With an output schema, openai-agents asks the model again when a reply holds no final output: a cut
    reply without text would be asked for again and again until the turn limit. It ends the run like any
    cut reply, its answer empty (not valid output), on every provider."""
    b = with_spec(bundle(), output_schema=OUTPUT_SCHEMA)
    r = run(emu, provider, "Look up ORD-7 without a word, and run out of tokens.", b, streaming)
    assert (r.result.status, r.result.final_output) == ("completed", ""), r.result.error
    assert_nothing_ran(r)
    assert [c.finish_reason for c in r.of("model.call")] == ["length"] and len(r.requests) == 1


@STREAMING
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_agent_tool_with_an_output_schema_is_not_asked_again(emu, provider, streaming):
    """The same for an agent run as a tool: its cut reply holding only a call ends its run with ``""``
    (one model call of its own), and the desk goes on. openai-agents' ``Agent.as_tool`` takes no error
    handlers, so the openai provider asked the expert again until the run's turn limit."""
    b = with_spec(bundle(), "faq_expert", output_schema=OUTPUT_SCHEMA)
    r = run(emu, provider, "Ask the expert, who runs out of tokens.", b, streaming)
    assert (r.result.status, r.result.final_output) == ("completed", "The expert answered."), r.result
    expert = [c for c in r.of("model.call") if c.agent == "faq_expert"]
    assert [c.finish_reason for c in expert] == ["length"], [
        (c.agent, c.finish_reason) for c in r.of("model.call")
    ]
    assert expert[0].provider_details.get("calls_not_run") == ["search_faq"]
    assert not r.of("tool.call") and handlers.CALLS == {}


@STREAMING
@pytest.mark.parametrize("provider", HANDING_OFF)
def test_a_handoff_cut_by_the_token_limit_is_not_made(emu, provider, streaming):
    """A transfer call is a call like any other (openai-agents ``transfer_to_<agent>``, ADK
    ``transfer_to_agent``): cut, it is not made, and the desk answers the next message."""
    r = run(
        emu,
        provider,
        ["Hand me over, but run out of tokens.", "Are you there?"],
        bundle(handoffs=True),
        streaming,
    )
    assert (r.result.status, r.result.final_output) == ("completed", "The desk is still here."), r.result
    assert_nothing_ran(r)
    first, _ = r.of("model.call")
    assert first.finish_reason == "length" and len(first.provider_details["calls_not_run"]) == 1
    assert {c.agent for c in r.of("model.call")} == {"shop_desk"}
    assert len(r.requests) == 2
    assert_no_call_sent_back(r)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_agent_tool_call_cut_by_the_token_limit_is_not_run(emu, provider):
    """An agent run as a tool is not run on a task that may be cut: the expert gets no request."""
    r = run(emu, provider, "Ask the expert, but run out of tokens.", bundle(), False)
    assert (r.result.status, r.result.final_output) == ("completed", "Asking the expert."), r.result.error
    assert_nothing_ran(r)
    (call,) = r.of("model.call")
    assert (call.finish_reason, call.provider_details.get("calls_not_run")) == ("length", ["faq_expert"])
    assert len(r.requests) == 1


@STREAMING
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_stopped_by_the_content_filter_is_traced_content_filter(emu, provider, streaming):
    """One finish reason for one event on every provider: the trace importer, the Responses API and the
    langgraph provider called a filtered reply ``content_filter``; the anthropic and adk adapters said
    ``other`` (and Claude Code's trace too). The openai provider's Responses API kept such a reply a
    failure (openai-agents raises on it), and Chat Completions said ``stop``. Now every provider ends the
    turn with the text so far, as for an answer cut by the token limit."""
    r = run(emu, provider, "Say something the filter stops.", bundle(), streaming)
    finishes = [e.finish_reason for e in r.of("model.call")]
    assert finishes == ["content_filter"], (finishes, r.result)
    assert (r.result.status, r.result.final_output) == ("completed", "I can't continue with"), r.result
    assert_nothing_ran(r)


@STREAMING
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_calls_of_a_reply_the_content_filter_stopped_are_not_run(emu, provider, streaming):
    """A filtered reply that had begun a call: no provider runs it (the langgraph provider did: it traced
    such a reply ``tool_calls`` and refunded), the turn ends with the text so far and the model call
    names the call in ``calls_not_run``."""
    r = run(emu, provider, ["Refund ORD-7, but get filtered.", "Are you there?"], bundle(), streaming)
    assert (r.result.status, r.result.final_output) == ("completed", "Nothing was refunded."), r.result
    assert_nothing_ran(r)
    first, _ = r.of("model.call")
    assert (first.finish_reason, first.provider_details.get("calls_not_run")) == (
        "content_filter",
        ["issue_refund"],
    )
    assert len(r.requests) == 2
    assert_no_call_sent_back(r)
