"""The openai provider on Chat Completions notes what each completion said (its finish reason; whether it
was cut before any text) under a key of the model call's own, not the ``x-request-id`` header, which a
server may not send: every completion then shared one key, and one reply was read as another. An expert's
reply cut before any text left that key marked "cut bare", so the desk's later reply without a final output
ended the run with ``""`` instead of being asked again; two agents run as tools at once could read each
other's finish reason.

Real SDK and gateway against the emulator, whose ``x-request-id`` header is left out for the test (the
emulator always sends one; a server without it is what is tested).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "anthropic"))
from openai_wire import without_request_ids
from runtime_testkit import (
    bundle,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    with_spec,
)

from portagent.contracts.bundle import AgentBundle
from portagent.emulator import RunningEmulator, load_script, serve

SCRIPT = Path(__file__).resolve().parent / "data" / "no_request_id.yaml"
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


@pytest.fixture(name="emu", scope="module")
def no_request_id_emulator_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT)) as running:
        yield running


@pytest.fixture(autouse=True)
def no_request_id_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that sends no ``x-request-id``: the emulator's response headers without it."""
    without_request_ids(monkeypatch)


def on_chat_completions(b: AgentBundle) -> AgentBundle:
    for name in b.agents:
        models = b.agents[name].spec.models.model_copy(update={"openai_api": "chat_completions"})
        b = with_spec(b, name, models=models)
    return b


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])
def test_one_completions_cut_is_not_read_as_another_s(emu, streaming):
    """The expert's reply is cut before any text (its run ends with ``""``); the desk, with an output
    schema, then looks the order up and answers. The expert's cut, noted under the key every completion
    shared, made the desk's look-up reply read as a cut answer without its calls: the desk's run was ended
    with ``""`` before its answer (``EndedBare``)."""
    b = on_chat_completions(with_spec(bundle(), output_schema=OUTPUT_SCHEMA))
    r = go(emu, b, "Ask the expert, then answer in JSON.", "openai", streaming=streaming)
    assert (r.result.status, r.result.final_output) == (
        "completed",
        {"answer": "ORD-7 is on its way."},
    ), r.result
    calls = [(c.agent, c.finish_reason, c.provider_details.get("calls_not_run")) for c in r.of("model.call")]
    assert calls == [
        ("shop_desk", "tool_calls", None),
        ("faq_expert", "length", ["search_faq"]),
        ("shop_desk", "tool_calls", None),
        ("shop_desk", "stop", None),
    ], calls
    assert handlers.CALLS == {"get_order": 1}  # the cut search_faq was not run
