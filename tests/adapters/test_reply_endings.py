"""One rule for a reply's tool calls, on every provider: they run only when the vendor says the reply
ended normally — Gemini ``STOP``, Chat Completions ``tool_calls`` / ``stop`` (some servers say ``stop``
with calls), Anthropic ``tool_use``, the Responses API ``completed``.

A reply that ended for any other reason runs none of them. A reason that is the vendor's error about the
reply itself (Gemini ``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``) is
traced ``finish_reason: error`` and fails the run as a provider error. Any other one (Gemini ``OTHER``,
``FINISH_REASON_UNSPECIFIED``, a value newer than the SDK; a Chat Completions finish reason the API does
not document; an Anthropic stop reason newer than the SDK; a Responses answer ``incomplete`` for a reason
the API added later) is traced ``other`` and ends the turn with the text so far, as an answer cut by the
token limit does (tests/adapters/test_cut_replies.py) — ``""`` when the reply held nothing at all. google-adk
and the langgraph provider ran the calls of a Gemini reply ending ``OTHER`` / ``MALFORMED_FUNCTION_CALL``…,
openai-agents and the langgraph provider those of a completion with an unknown finish reason, the langgraph
provider those of an Anthropic reply with an unknown stop reason; the openai provider failed an answer
incomplete for an unknown reason, the adk provider a Gemini reply that held nothing.

Real SDKs and the real gateway against the emulator (``data/reply_endings.yaml``). The script's stop
reasons are the portable ones; the vendor's raw value, which they cannot name, is sent by an engine of
this test's (``emulator.serve(engine=…)``) and written as it is by the emulator's renderers.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "anthropic"))
from _support import raw_ending
from gemini_wire import prompt_blocked, without_content
from openai_wire import incomplete_as_raw
from runtime_testkit import (
    bundle,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    with_spec,
)

from portagent.contracts.bundle import AgentBundle
from portagent.emulator import (
    RunningEmulator,
    load_script,
    render_anthropic,
    render_gemini,
    render_openai,
    serve,
)

SCRIPT = Path(__file__).resolve().parent / "data" / "reply_endings.yaml"
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])

TARGETS: dict[str, tuple[str, str | None, str]] = {
    "adk": ("adk", None, "gemini"),
    "langgraph-gemini": ("langgraph", "google_genai:gemini-2.5-flash", "gemini"),
    "openai_chat": ("openai", None, "chat"),
    "langgraph-chat": ("langgraph", "openai:gpt-4.1-mini", "chat"),
    "anthropic": ("anthropic", None, "anthropic"),
    "langgraph-anthropic": ("langgraph", "anthropic:claude-sonnet-4-6", "anthropic"),
    "openai": ("openai", None, "responses"),
    "langgraph-responses": ("langgraph", "openai:gpt-4.1-mini", "responses"),
}
"""A provider (and the langgraph chat model) per wire: (provider, models.langgraph, wire)."""
TABLES = {"gemini": render_gemini._FINISH, "chat": render_openai._FINISH, "anthropic": render_anthropic._STOP}
"""The emulator renderer's table of each wire: portable stop reason → the vendor's value."""
OTHER = {
    "gemini": ["OTHER", "FINISH_REASON_UNSPECIFIED", "IMAGE_OTHER", "A_REASON_NEWER_THAN_THE_SDK"],
    "chat": ["insufficient_system_resource", "error"],  # DeepSeek's; some gateways' own
    "anthropic": ["a_reason_newer_than_the_sdk"],
    "responses": ["a_reason_newer_than_the_api"],  # incomplete_details.reason of an incomplete answer
}
"""Raw reasons that are neither normal nor the token limit nor the content filter: ``other``."""
ERRORS = ["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"]
"""Gemini's own error about a reply's calls: ``error``, a provider error."""
NORMAL = {"gemini": "STOP", "chat": "stop", "anthropic": "tool_use", "responses": None}
"""The vendor's normal end of a reply holding calls (Responses: ``completed``, the script's own)."""


RawEnding = raw_ending()


@pytest.fixture(name="emu", scope="module")
def reply_endings_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT), engine=RawEnding) as running:
        yield running


def run(
    emu: RunningEmulator,
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    raw: str | None,
    text: str | list[str],
    streaming: bool,
) -> Any:
    provider, model, wire = TARGETS[target]
    if wire == "responses":  # no table: an incomplete answer's reason (openai_wire.incomplete_as_raw)
        incomplete_as_raw(monkeypatch)
    else:
        monkeypatch.setitem(TABLES[wire], f"raw:{raw}", raw)
    monkeypatch.setattr(RawEnding, "RAW", raw)
    b: AgentBundle = bundle()
    models = b.agents[b.root].spec.models
    if model is not None:
        models = models.model_copy(update={"langgraph": model})
    if wire == "chat":
        models = models.model_copy(update={"openai_api": "chat_completions"})
    return go(emu, with_spec(b, models=models), text, provider, streaming=streaming)


def assert_nothing_ran(r: Any) -> None:
    assert not r.of("tool.call") and not r.of("tool.result") and not r.of("handoff"), r.types()
    assert handlers.CALLS == {} and handlers.REFUNDS == []


def _cases(kinds: dict[str, list[str]]) -> list[Any]:
    return [
        pytest.param(target, raw, id=f"{target}-{raw}")
        for target, (_, _, wire) in TARGETS.items()
        for raw in kinds[wire]
    ]


@STREAMING
@pytest.mark.parametrize("target, raw", _cases(OTHER))
def test_a_reply_that_ended_for_another_reason_runs_none_of_its_calls(
    emu, monkeypatch, target, raw, streaming
):
    """The reply says a few words and calls for a refund, then ends for a reason that is not the normal
    one. The refund is not run; the first message ends with the text so far, traced ``other`` with the
    call named; the next user message carries that text and no call left unanswered."""
    text = ["Refund ORD-7, but end for another reason.", "Are you there?"]
    r = run(emu, monkeypatch, target, raw, text, streaming)
    assert (r.result.status, r.result.final_output) == ("completed", "Nothing was refunded."), r.result
    assert_nothing_ran(r)
    first, second = r.of("model.call")
    assert (first.finish_reason, first.provider_details.get("calls_not_run")) == ("other", ["issue_refund"])
    assert second.finish_reason == "stop"
    assert len(r.requests) == 2  # one per user message: the reply ended its turn
    for view in r.views()[1:]:
        assert not [i for i in view.items if i.kind in ("tool_call", "tool_result")], view.items
    assert "Refunding ORD-7 now." in json.dumps(r.requests[1]["body"])  # the answer so far is kept


@STREAMING
@pytest.mark.parametrize("target", [t for t, (_, _, wire) in TARGETS.items() if wire == "gemini"])
@pytest.mark.parametrize("raw", ERRORS)
def test_a_reply_gemini_calls_malformed_is_a_provider_error(emu, monkeypatch, target, raw, streaming):
    """Gemini says its own reply's calls are broken: none runs (google-adk and langchain ran them when the
    reply held any), the model call is traced ``error`` naming them, and the run fails as a provider error
    that names the reason (adk failed only when the reply held no text; langgraph ended with ``""``)."""
    r = run(emu, monkeypatch, target, raw, "Refund ORD-7, but end for another reason.", streaming)
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error"), r.result
    assert raw in (r.result.error or ""), r.result.error
    assert_nothing_ran(r)
    (call,) = r.of("model.call")
    assert (call.finish_reason, call.provider_details.get("calls_not_run")) == ("error", ["issue_refund"])
    assert len(r.requests) == 1


@STREAMING
@pytest.mark.parametrize("target", list(TARGETS))
def test_a_reply_that_ended_normally_runs_its_calls(emu, monkeypatch, target, streaming):
    """The control: Gemini ``STOP``, Chat Completions ``stop`` (not ``tool_calls``: vLLM and Ollama say
    ``stop`` with calls), Anthropic ``tool_use`` — the call runs and the model is asked again."""
    raw = NORMAL[TARGETS[target][2]]
    r = run(emu, monkeypatch, target, raw, "Refund ORD-7, and end normally.", streaming)
    assert (r.result.status, r.result.final_output) == ("completed", "ORD-7 is on its way."), r.result
    assert handlers.CALLS == {"get_order": 1}
    first, _ = r.of("model.call")
    assert first.finish_reason == "tool_calls" and "calls_not_run" not in first.provider_details


@STREAMING
@pytest.mark.parametrize("target", [t for t, (_, _, wire) in TARGETS.items() if wire == "gemini"])
@pytest.mark.parametrize(
    "raw, finish",
    [
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("MAX_TOKENS", "length"),
        ("OTHER", "other"),
        ("FINISH_REASON_UNSPECIFIED", "other"),
    ],
)
def test_a_reply_with_nothing_in_it_ends_the_turn_with_no_text(
    emu, monkeypatch, target, raw, finish, streaming
):
    """Gemini stops a reply before any part — no text, no call — for a reason that is not ``STOP`` (its filter,
    the token limit, ``OTHER``). The turn ends ``completed`` with the text so far, ``""``, as every reply that
    did not end normally (``content_filter`` / ``length`` / ``other``), in one model call. google-adk makes such
    a response an error (``error_code``: the reason), and the adk provider failed the run ("Gemini returned no
    answer"); the langgraph provider ended it with ``""``."""
    monkeypatch.setattr(RawEnding, "EMPTY", True)
    monkeypatch.setattr(render_gemini, "generate_json", without_content(render_gemini.generate_json))
    monkeypatch.setattr(render_gemini, "stream_elements", without_content(render_gemini.stream_elements))
    r = run(emu, monkeypatch, target, raw, "Say nothing, and end for another reason.", streaming)
    assert (r.result.status, r.result.final_output) == ("completed", ""), r.result
    (call,) = r.of("model.call")
    assert call.finish_reason == finish and "calls_not_run" not in call.provider_details
    assert len(r.requests) == 1


@STREAMING
@pytest.mark.parametrize("target", [t for t, (_, _, wire) in TARGETS.items() if wire == "gemini"])
@pytest.mark.parametrize(
    "raw",
    ["SAFETY", "PROHIBITED_CONTENT", "OTHER", "BLOCKED_REASON_UNSPECIFIED", "A_BLOCK_NEWER_THAN_THE_SDK"],
)
def test_a_prompt_gemini_blocked_ends_the_turn_with_no_text(emu, monkeypatch, target, raw, streaming):
    """Gemini refuses the prompt itself: no candidate, only ``promptFeedback.blockReason``. The turn ends
    ``completed`` with ``""``, traced ``content_filter`` (a filtered reply holding nothing, as the trace
    importer reads such an answer), the block reason kept. google-adk makes it an error (``error_code``: the
    block reason), and the adk provider failed the run ("Gemini returned no answer")."""
    monkeypatch.setattr(RawEnding, "EMPTY", True)
    monkeypatch.setattr(render_gemini, "generate_json", prompt_blocked(render_gemini.generate_json))
    monkeypatch.setattr(render_gemini, "stream_elements", prompt_blocked(render_gemini.stream_elements))
    r = run(emu, monkeypatch, target, raw, "Say nothing, and end for another reason.", streaming)
    assert (r.result.status, r.result.final_output) == ("completed", ""), r.result
    (call,) = r.of("model.call")
    assert call.finish_reason == "content_filter", call
    assert call.provider_details.get("prompt_blocked") == raw, call.provider_details
    assert "calls_not_run" not in call.provider_details
    assert len(r.requests) == 1


def _stop_in_a_chunk_of_its_own(render: Any) -> Any:
    """A Gemini stream whose function calls come in a chunk without ``finishReason`` and whose ``STOP``
    follows in a last chunk of its own (an empty text), as Gemini may send a call turn."""

    def rendered(plan: Any, view: Any) -> Any:
        out = render(plan, view)
        if not plan.calls:
            return out
        last = out[-1]
        candidate = last["candidates"][0]
        finish = candidate.pop("finishReason", None)
        candidate.pop("finishMessage", None)
        tail = {
            "candidates": [
                {"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": finish, "index": 0}
            ],
            "usageMetadata": last.get("usageMetadata"),
            "modelVersion": last.get("modelVersion"),
        }
        return [*out, tail]

    return rendered


@pytest.mark.parametrize("progressive", [True, False], ids=["progressive", "chunk-by-chunk"])
@pytest.mark.parametrize("target", [t for t, (_, _, wire) in TARGETS.items() if wire == "gemini"])
def test_calls_streamed_before_their_stop_run(emu, monkeypatch, target, progressive):
    """A call chunk carries no finish reason; the ``STOP`` comes after it. With ADK's progressive SSE off
    (``ADK_DISABLE_PROGRESSIVE_SSE_STREAMING``) ADK hands the adapter each chunk as a response, so the call
    chunk has no finish reason to read: not saying why a reply ended is not saying it was cut, and its calls
    run (they were dropped as ``other`` while ADK went on to the empty ``STOP`` chunk)."""
    if not progressive:
        monkeypatch.setenv("ADK_DISABLE_PROGRESSIVE_SSE_STREAMING", "1")
    monkeypatch.setattr(
        render_gemini, "stream_elements", _stop_in_a_chunk_of_its_own(render_gemini.stream_elements)
    )
    r = run(emu, monkeypatch, target, "STOP", "Refund ORD-7, and end normally.", True)
    assert handlers.CALLS == {"get_order": 1}, r.types()
    assert not any("calls_not_run" in c.provider_details for c in r.of("model.call"))
    assert r.result.status == "completed"
    if progressive:  # chunk by chunk, ADK's events give the adapter each chunk: which text ends the turn is
        # not settled there (its trace holds a model.call per chunk too; docs/adapters/adk.md)
        assert r.result.final_output == "ORD-7 is on its way.", r.result
