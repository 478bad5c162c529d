"""``portagent export --to openai`` and ``--to adk``: the exported program on a reply the vendor stopped before
its end — cut by the token limit or stopped by the content filter — as the openai and adk adapters treat it
(tests/adapters/test_cut_replies.py, whose emulator script is reused here): none of its calls runs (a tool, a
handoff, an agent tool; the last call's arguments may be cut mid-JSON), the turn ends ``completed`` with the
text so far (``""`` if none), the model call is traced ``length`` / ``content_filter`` naming the calls in
``provider_details.calls_not_run``, and a next user message carries no call left unanswered.

Real openai-agents / google-adk, real gateway, against the emulator; the program is written by the CLI from
the shop's desk (tests/adapters/adk/data) and its ``main()`` run in-process; what the vendor was sent is read
from the emulator's request log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters" / "anthropic"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters"))
from _migration_helpers import DUMMY_KEYS, Ran, load_module
from _support import parse_request, portagent_home, run_cli
from gemini_wire import prompt_blocked, without_content
from openai_wire import REFUSAL, incomplete_as_raw, refusing_openai, without_request_ids
from runtime_testkit import (
    DATA,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    handlers,
)

from portagent.emulator import RunningEmulator, load_script, render_gemini, render_openai, serve
from portagent.emulator.engine import Engine
from portagent.emulator.plan import Plan
from portagent.tracing.recorder import read_trace

SCRIPT = Path(__file__).resolve().parents[1] / "adapters" / "data" / "cut_replies.yaml"
REFUSALS = Path(__file__).resolve().parents[1] / "adapters" / "data" / "refusals.yaml"
ENDINGS = Path(__file__).resolve().parents[1] / "adapters" / "data" / "reply_endings.yaml"
NO_REQUEST_ID = Path(__file__).resolve().parents[1] / "adapters" / "data" / "no_request_id.yaml"
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
PROGRAMS = ["openai", "openai_chat", "adk", "adk_stream"]
"""The exported program: openai-agents on the Responses API, on Chat Completions (``models.openai_api``),
google-adk unary and streamed (``main(streaming=True)``; the exported openai program does not stream)."""


@pytest.fixture(name="emu", scope="module")
def cut_replies_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT)) as running:
        yield running


@pytest.fixture(name="refusing", scope="module")
def refusals_fixture() -> Iterator[RunningEmulator]:
    """The emulator playing tests/adapters/data/refusals.yaml, its OpenAI replies refusals there."""
    with refusing_openai(), serve(load_script(REFUSALS)) as running:
        yield running


class RawEnding(Engine):
    """The first reply of ``ended_while_calling`` and ``ended_with_nothing`` ends with ``RAW`` (``raw:<value>``,
    a key the test gives the renderer: its table's, or ``openai_wire.incomplete_as_raw``); that of
    ``ended_with_nothing`` holds nothing (no text, no call)."""

    RAW = "OTHER"

    def respond(self, view: Any, headers: Any) -> Any:
        plan = super().respond(view, headers)
        if not isinstance(plan, Plan) or plan.cursor != 0:
            return plan
        if plan.conversation == "ended_while_calling":
            return dataclasses.replace(plan, stop_reason=f"raw:{self.RAW}")
        if plan.conversation == "ended_with_nothing":
            return dataclasses.replace(plan, text=None, calls=(), stop_reason=f"raw:{self.RAW}")
        return plan


@pytest.fixture(name="ending", scope="module")
def reply_endings_fixture() -> Iterator[RunningEmulator]:
    """The emulator playing tests/adapters/data/reply_endings.yaml (``RawEnding``)."""
    with serve(load_script(ENDINGS), engine=RawEnding) as running:
        yield running


@pytest.fixture(name="program", scope="module")
def program_fixture(tmp_path_factory) -> Any:
    """``program(kind, structured)``: the shop desk exported for ``kind`` (an item of PROGRAMS), loaded;
    ``structured``: "desk" or "faq_expert" gets the output schema."""
    root = tmp_path_factory.mktemp("export-openai-adk-replies")
    data = root / "data"
    # without shop_handlers.py: the exported program resolves handlers beside the tools file first (ADR 0004),
    # so a copy there would be a second module whose counters this test does not read
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("__pycache__", "shop_handlers.py"))
    cache: dict[tuple[str, str | None], Any] = {}

    def program(kind: str, structured: str | None = None) -> Any:
        target = "adk" if kind.startswith("adk") else "openai"
        if (target, kind == "openai_chat", structured) not in cache:
            spec = yaml.safe_load((data / "desk.yaml").read_text(encoding="utf-8"))
            if kind == "openai_chat":
                spec["models"]["openai_api"] = "chat_completions"
            if structured == "desk":
                spec["output_schema"] = OUTPUT_SCHEMA
            if structured == "faq_expert":
                expert = yaml.safe_load((data / "faq_expert.yaml").read_text(encoding="utf-8"))
                (data / "faq_expert_structured.yaml").write_text(
                    yaml.safe_dump({**expert, "output_schema": OUTPUT_SCHEMA}, sort_keys=False),
                    encoding="utf-8",
                )
                for edge in spec["delegation"]:
                    if edge["agent"] == "faq_expert.yaml":
                        edge["agent"] = "faq_expert_structured.yaml"
            stem = f"desk_{kind}_{structured or 'text'}"
            path = data / f"{stem}.yaml"
            path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
            module = root / f"{stem}.py"
            code, _, err = run_cli("export", str(path), "--to", target, "--out", str(module))
            assert code == 0, err
            cache[target, kind == "openai_chat", structured] = load_module(module)
        return cache[target, kind == "openai_chat", structured]

    return program


def run(program: Any, kind: str, emu: RunningEmulator, messages: list[str], tmp: Path) -> Ran:
    """The exported program's ``main()`` on ``messages`` (auto-approve: nothing is refused by the policy)."""
    before = len(emu.requests())
    trace = tmp / "exported.jsonl"
    target = "adk" if kind.startswith("adk") else "openai"
    extra = {"streaming": True} if kind == "adk_stream" else {}
    with portagent_home(tmp / "home"):
        done = asyncio.run(
            asyncio.wait_for(
                program.main(messages, base_url=emu.base_url, api_key=DUMMY_KEYS[target], approver="auto-approve",
                             trace=trace, source="emulator", **extra),
                120,
            )
        )  # fmt: skip
    return Ran(done, read_trace(trace), emu.requests()[before:])


def assert_nothing_ran(r: Ran) -> None:
    """The gateway ran no tool and no agent was delegated to: no tool event, no handoff, no handler call."""
    assert not r.of("tool.call") and not r.of("tool.result") and not r.of("handoff"), [
        e.type for e in r.events
    ]
    assert handlers.CALLS == {} and handlers.REFUNDS == []


def assert_no_call_sent_back(r: Ran) -> None:
    """No request after the first carries a tool call or a tool result: the stopped call was neither answered
    nor left dangling in the history."""
    for entry in r.requests[1:]:
        view = parse_request(entry)
        assert not [i for i in view.items if i.kind in ("tool_call", "tool_result")], view.items


# (first message, the stopped reply's text, the answer to "Are you there?" (None: not asked), finish reason,
#  the calls not run: None when the name is the SDK's own (a transfer tool))
STOPPED = {
    "refund": ("Refund ORD-7, but run out of tokens.", "Refunding ORD-7 now.", "Nothing was refunded.", "length",
               ["issue_refund"]),
    "no_text": ("Look up ORD-7 without a word, and run out of tokens.", "", None, "length", ["get_order"]),
    "handoff": ("Hand me over, but run out of tokens.", "Passing you on.", "The desk is still here.", "length",
                None),
    "agent_tool": ("Ask the expert, but run out of tokens.", "Asking the expert.", "The expert was not asked.",
                   "length", ["faq_expert"]),
    "filtered": ("Refund ORD-7, but get filtered.", "Refunding ORD-7 now.", "Nothing was refunded.",
                 "content_filter", ["issue_refund"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(STOPPED))
@pytest.mark.parametrize("kind", PROGRAMS)
def test_a_reply_stopped_before_its_end_runs_none_of_its_calls(emu, program, tmp_path, kind, case):
    """The reply stops at max tokens (or at the content filter) while it calls a tool, hands off or asks an
    agent tool: nothing it began is run — the refund, the lookup, the handoff, the sub-agent — the turn ends
    with its text so far, and the next user message continues the conversation without a call left
    unanswered. The exported programs ran the calls (and ADK's traced ``length`` while it did)."""
    first, text, answer, finish, not_run = STOPPED[case]
    messages = [first] if answer is None else [first, "Are you there?"]
    r = run(program(kind), kind, emu, messages, tmp_path)
    assert (r.done["status"], r.done["stop_reason"]) == ("completed", "final_output"), r.done
    assert_nothing_ran(r)
    calls = r.of("model.call")
    assert [c.finish_reason for c in calls] == [finish, "stop"][: len(messages)]
    assert {c.agent for c in calls} == {"shop_desk"}
    stopped = calls[0].provider_details.get("calls_not_run")
    assert stopped == not_run if not_run is not None else len(stopped) == 1
    assert len(r.requests) == len(messages)  # one per user message: the stopped reply ended its turn
    if answer is None:  # nothing but a call before the limit: the answer so far is empty
        assert r.done["final_output"] == ""
        return
    assert r.done["final_output"] == answer
    assert "calls_not_run" not in calls[1].provider_details
    assert_no_call_sent_back(r)
    assert text in json.dumps(r.requests[1]["body"])  # the stopped answer's text is kept


@pytest.mark.parametrize("kind", ["openai", "openai_chat"])  # the exported adk program already did
def test_a_reply_the_content_filter_stopped_ends_with_its_text(emu, program, tmp_path, kind):
    """A filtered reply without calls: traced ``content_filter`` (Chat Completions said ``stop``; openai-agents
    fails a Responses answer left ``incomplete``), the turn ends with the text so far."""
    r = run(program(kind), kind, emu, ["Say something the filter stops."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", "I can't continue with"), r.done
    assert [c.finish_reason for c in r.of("model.call")] == ["content_filter"]
    assert_nothing_ran(r)


@pytest.mark.parametrize("kind", PROGRAMS)
def test_an_agent_with_an_output_schema_ends_a_cut_reply_without_text(emu, program, tmp_path, kind):
    """With an output schema, openai-agents asks the model again when a reply holds no final output: a cut
    reply holding only a call would be asked for again until the turn limit. It ends the run like any cut
    reply, its answer empty (not valid output)."""
    r = run(
        program(kind, "desk"), kind, emu, ["Look up ORD-7 without a word, and run out of tokens."], tmp_path
    )
    assert (r.done["status"], r.done["final_output"]) == ("completed", ""), r.done
    assert_nothing_ran(r)
    (call,) = r.of("model.call")
    assert (call.finish_reason, call.provider_details.get("calls_not_run")) == ("length", ["get_order"])
    assert len(r.requests) == 1


@pytest.mark.parametrize("kind", PROGRAMS)
def test_an_agent_tool_with_an_output_schema_is_not_asked_again(emu, program, tmp_path, kind):
    """The same for an agent run as a tool: its cut reply holding only a call ends its run with ``""`` (one
    model call of its own, its search not run), and the desk goes on (``Agent.as_tool`` takes no error
    handlers: the expert would be asked again until the run's turn limit)."""
    r = run(program(kind, "faq_expert"), kind, emu, ["Ask the expert, who runs out of tokens."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", "The expert answered."), r.done
    expert = [c for c in r.of("model.call") if c.agent == "faq_expert"]
    assert [(c.finish_reason, c.provider_details.get("calls_not_run")) for c in expert] == [
        ("length", ["search_faq"])
    ], [(c.agent, c.finish_reason) for c in r.of("model.call")]
    assert not r.of("tool.call") and handlers.CALLS == {}


@pytest.mark.parametrize("case", ["text", "schema", "calls"])
@pytest.mark.parametrize("kind", ["openai", "openai_chat"])
def test_a_refusal_ends_the_turn_with_its_text(refusing, program, tmp_path, kind, case):
    """The model refuses (a Responses ``refusal`` part, Chat Completions' ``message.refusal``): openai-agents
    raised ``ModelRefusalError`` (the exported program failed, with an output schema or not) and ran the calls
    of a refusal holding one. As in the openai adapter (tests/adapters/test_refusals.py), the turn ends with
    the refusal, traced ``content_filter``, no call run."""
    first = "Refund ORD-7, but refuse." if case == "calls" else "Refuse to answer."
    r = run(program(kind, "desk" if case == "schema" else None), kind, refusing, [first], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", REFUSAL), r.done
    assert_nothing_ran(r)
    (call,) = r.of("model.call")
    not_run = ["issue_refund"] if case == "calls" else None
    assert (call.finish_reason, call.provider_details.get("calls_not_run")) == ("content_filter", not_run)
    assert len(r.requests) == 1


@pytest.mark.parametrize("kind", ["openai", "openai_chat"])
def test_an_agent_tool_that_refuses_answers_with_its_refusal(refusing, program, tmp_path, kind):
    """An agent run as a tool refuses: its answer is the refusal and the desk goes on (the refusal error of
    the expert's run failed the whole program)."""
    r = run(program(kind), kind, refusing, ["Ask the expert, who refuses."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", "The expert declined."), r.done
    expert = [c.finish_reason for c in r.of("model.call") if c.agent == "faq_expert"]
    assert expert == ["content_filter"]
    last = parse_request(r.requests[-1])
    assert REFUSAL in json.dumps([i.output for i in last.tool_results()]), last.items


@pytest.mark.parametrize("case", ["text", "schema", "calls", "calls_schema"])
@pytest.mark.parametrize("kind", ["openai", "openai_chat"])
def test_an_empty_refusal_ends_the_turn_with_no_text(refusing, program, tmp_path, kind, case):
    """The model refuses and says nothing (``"refusal": ""``): a refusal all the same, traced
    ``content_filter``, its calls not run, the turn ended with ``""``. With an output schema openai-agents
    found no final output in ``""`` and asked the model again; on Chat Completions its converter drops an
    empty refusal (traced ``stop``, and the calls of one holding some ran)."""
    first = (
        "Refund ORD-7, but refuse silently." if case.startswith("calls") else "Refuse to answer, silently."
    )
    r = run(program(kind, "desk" if case.endswith("schema") else None), kind, refusing, [first], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", ""), r.done
    assert_nothing_ran(r)
    (call,) = r.of("model.call")
    not_run = ["issue_refund"] if case.startswith("calls") else None
    assert (call.finish_reason, call.provider_details.get("calls_not_run")) == ("content_filter", not_run)
    assert len(r.requests) == 1


@pytest.mark.parametrize("kind", ["openai", "openai_chat"])
def test_an_agent_tool_with_a_schema_that_refuses_silently_answers_nothing(refusing, program, tmp_path, kind):
    """An agent run as a tool, with an output schema, refuses with no text: its run ends with ``""`` and the
    desk goes on (its model was asked again: ``Agent.as_tool`` takes no error handlers)."""
    r = run(program(kind, "faq_expert"), kind, refusing, ["Ask the expert, who refuses silently."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", "The expert said nothing."), r.done
    expert = [c.finish_reason for c in r.of("model.call") if c.agent == "faq_expert"]
    assert expert == ["content_filter"]
    assert "asked again" not in json.dumps(r.requests)


@pytest.mark.parametrize("raw", ["SAFETY", "MAX_TOKENS", "OTHER"])
@pytest.mark.parametrize("kind", ["adk", "adk_stream"])
def test_a_gemini_reply_with_nothing_in_it_ends_with_no_text(
    ending, monkeypatch, program, tmp_path, kind, raw
):
    """Gemini stops a reply before any part for a reason that is not STOP: the turn ends with its text so far,
    ``""``, as in the adk adapter (tests/adapters/test_reply_endings.py). google-adk makes such a response an
    error event, and the exported program ended with no answer at all (``final_output: None``)."""
    monkeypatch.setitem(render_gemini._FINISH, f"raw:{raw}", raw)
    monkeypatch.setattr(RawEnding, "RAW", raw)
    monkeypatch.setattr(render_gemini, "generate_json", without_content(render_gemini.generate_json))
    monkeypatch.setattr(render_gemini, "stream_elements", without_content(render_gemini.stream_elements))
    r = run(program(kind), kind, ending, ["Say nothing, and end for another reason."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", ""), r.done
    assert len(r.requests) == 1


@pytest.mark.parametrize("raw", ["SAFETY", "OTHER"])
@pytest.mark.parametrize("kind", ["adk", "adk_stream"])
def test_a_prompt_gemini_blocked_ends_with_no_text(ending, monkeypatch, program, tmp_path, kind, raw):
    """Gemini refuses the prompt itself (no candidate, only ``promptFeedback.blockReason``): the turn ends with
    ``""`` traced ``content_filter``, as in the adk adapter (tests/adapters/test_reply_endings.py). google-adk
    makes the block reason an error code, and the exported program ended with no answer (``None``)."""
    monkeypatch.setitem(render_gemini._FINISH, f"raw:{raw}", raw)
    monkeypatch.setattr(RawEnding, "RAW", raw)
    monkeypatch.setattr(render_gemini, "generate_json", prompt_blocked(render_gemini.generate_json))
    monkeypatch.setattr(render_gemini, "stream_elements", prompt_blocked(render_gemini.stream_elements))
    r = run(program(kind), kind, ending, ["Say nothing, and end for another reason."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", ""), r.done
    assert [c.finish_reason for c in r.of("model.call")] == ["content_filter"]
    assert len(r.requests) == 1


@pytest.mark.parametrize(
    "kind, raw", [("openai", "a_reason_newer_than_the_api"), ("openai_chat", "insufficient_system_resource")]
)
def test_a_reply_that_ended_for_another_reason_runs_none_of_its_calls(
    ending, monkeypatch, program, tmp_path, kind, raw
):
    """A Responses answer ``incomplete`` for a reason the API added later (the program failed: openai-agents
    raises on it), a completion whose ``finish_reason`` the API does not document (DeepSeek's; the program ran
    its refund): as the openai adapter (tests/adapters/test_reply_endings.py), traced ``other``, no call run,
    the turn ends with the text so far."""
    if kind == "openai":
        incomplete_as_raw(monkeypatch)
    else:
        monkeypatch.setitem(render_openai._FINISH, f"raw:{raw}", raw)
    monkeypatch.setattr(RawEnding, "RAW", raw)
    messages = ["Refund ORD-7, but end for another reason.", "Are you there?"]
    r = run(program(kind), kind, ending, messages, tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", "Nothing was refunded."), r.done
    assert_nothing_ran(r)
    first, second = r.of("model.call")
    assert (first.finish_reason, first.provider_details.get("calls_not_run")) == ("other", ["issue_refund"])
    assert second.finish_reason == "stop"
    assert len(r.requests) == 2
    assert_no_call_sent_back(r)
    assert "Refunding ORD-7 now." in json.dumps(r.requests[1]["body"])


@pytest.fixture(name="no_request_id", scope="module")
def no_request_id_fixture() -> Iterator[RunningEmulator]:
    """The emulator playing tests/adapters/data/no_request_id.yaml (the test takes its x-request-id out)."""
    with serve(load_script(NO_REQUEST_ID)) as running:
        yield running


def test_one_completions_cut_is_not_read_as_another_s(no_request_id, monkeypatch, program, tmp_path):
    """A server that sends no ``x-request-id``: the exported Chat Completions program noted each completion's
    finish reason and its being cut bare under that header (None for all), so the expert's reply cut before
    any text made the desk's next reply, with an output schema, end the run (``EndedBare``). Each model call
    keys its completion itself now, as the openai adapter (tests/adapters/test_chat_finish_keys.py)."""
    without_request_ids(monkeypatch)
    kind = "openai_chat"
    r = run(program(kind, "desk"), kind, no_request_id, ["Ask the expert, then answer in JSON."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", {"answer": "ORD-7 is on its way."}), (
        r.done
    )
    calls = [(c.agent, c.finish_reason, c.provider_details.get("calls_not_run")) for c in r.of("model.call")]
    assert calls == [
        ("shop_desk", "tool_calls", None),
        ("faq_expert", "length", ["search_faq"]),
        ("shop_desk", "tool_calls", None),
        ("shop_desk", "stop", None),
    ], calls
    assert handlers.CALLS == {"get_order": 1}  # the cut search_faq was not run
