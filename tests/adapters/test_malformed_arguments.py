"""A tool call whose argument text the model broke — in any of the ways models break it — is refused by the
gateway on every provider and wire that can carry such text, never run, never the end of the run.

The wires: OpenAI Responses and Chat Completions (arguments are a JSON string, unary and streamed), and
Anthropic Messages streamed (``input_json_delta`` text; a unary reply's ``input`` is an object the API
parsed). On each: the ``openai`` / ``anthropic`` provider and ``langgraph`` with that vendor's chat model.
(Gemini carries ``args`` as an object: nothing there to break.)

The shapes: JSON cut short (a token limit), a trailing brace, two objects in a row, single quotes, a
trailing comma — and JSON that parses but is not an object (an array, a string, ``null``). Each must give
the same outcome: the run completes; the handler never runs; the trace's ``tool.call`` holds what the model
sent (the text when it is not JSON, else its value) and its ``tool.result`` the gateway's
``validation_error``; and the next request the SDK sent answers that call, by its id, with that error.

Found wrong before: the anthropic SDK's stream raised ``ValueError("Unable to parse tool parameter JSON
from model…")`` for text jiter's partial mode cannot read (single quotes, a trailing comma, a string,
``null``), failing the run; langchain-openai refused JSON that is not an object while it built the
reply's ``AIMessage`` (unary Chat Completions, Responses unary and streamed), failing the run too.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="anthropic is not installed (pip install 'portagent[anthropic]')")
pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'portagent[langgraph]')")
sys.path.insert(0, str(Path(__file__).resolve().parent / "anthropic"))
from runtime_testkit import (
    bundle,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    with_spec,
)

from portagent.emulator import RunningEmulator, load_script, serve

SCRIPT = Path(__file__).resolve().parent / "data" / "malformed_arguments.yaml"
# the anthropic SDK warns while it copies a reply whose tool input is text into the history (pinned in
# test_anthropic_adapter.py's test_malformed_arguments_get_a_validation_error)
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")

TARGETS: dict[str, tuple[str, str | None, str]] = {
    "openai": ("openai", None, "responses"),
    "openai_chat": ("openai", None, "chat"),
    "langgraph-responses": ("langgraph", "openai:gpt-4.1-mini", "responses"),
    "langgraph-chat": ("langgraph", "openai:gpt-4.1-mini", "chat"),
    "anthropic": ("anthropic", None, "anthropic"),
    "langgraph-anthropic": ("langgraph", "anthropic:claude-sonnet-4-6", "anthropic"),
}
"""(provider, models.langgraph, wire) per target."""

SHAPES: dict[str, str] = {
    "cut": '{"query":"shi',  # the emulator cuts {"query":"shipping times"} in half
    "trailing brace": '{"query": "shipping times"}}',
    "two objects": '{"query": "shipping times"}{"query": "refunds"}',
    "single quotes": "{'query': 'shipping times'}",
    "trailing comma": '{"query": "shipping times",}',
    "an array": '["shipping times"]',
    "a string": '"shipping times"',
    "null": "null",
}
"""The script's conversation (``Search: <shape>.``) → the exact text its call carries."""


def _cases() -> list[Any]:
    return [
        pytest.param(target, streaming, shape, id=f"{target}-{'stream' if streaming else 'unary'}-{shape}")
        for target, (_, _, wire) in TARGETS.items()
        for streaming in (False, True)
        if streaming or wire != "anthropic"  # a unary Anthropic reply's input is an object the API parsed
        for shape in SHAPES
    ]


@pytest.fixture(name="emu", scope="module")
def emulator_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT)) as running:
        yield running


def _as_sent(text: str) -> Any:
    """What the trace holds of a call's arguments: their value when the text is JSON, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@pytest.mark.parametrize(("target", "streaming", "shape"), _cases())
def test_broken_arguments_are_refused_as_sent_and_the_run_goes_on(emu, target, streaming, shape):
    provider, model, wire = TARGETS[target]
    b = bundle()
    models = b.agents[b.root].spec.models
    if model is not None:
        models = models.model_copy(update={"langgraph": model})
    if wire == "chat":
        models = models.model_copy(update={"openai_api": "chat_completions"})
    emu.reset()
    r = go(emu, with_spec(b, models=models), f"Search: {shape}.", provider, streaming=streaming)

    assert r.result.status == "completed", r.result.error
    assert handlers.CALLS == {}  # search_faq never ran
    (call,) = r.of("tool.call")
    (res,) = r.of("tool.result")
    assert (call.tool, call.args) == ("search_faq", _as_sent(SHAPES[shape]))
    assert (res.call_id, res.ok, res.error) == (call.call_id, False, "validation_error")
    assert r.result.final_output == "After the search: validation_error"
    # what the SDK sent next: the call, by its id, answered with the gateway's refusal
    assert len(r.requests) == 2
    (answer,) = [i for i in r.views()[1].items if i.kind == "tool_result"]
    assert answer.call_id == call.provider_details["vendor_call_id"]
    assert '"validation_error"' in answer.text, answer.text
