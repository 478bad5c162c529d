"""``portagent export --to langgraph``: the exported program on replies that are not plain answers, and on the
calls they hold — the cases the langgraph adapter's own tests cover (tests/adapters/langgraph/
test_replies_and_calls.py, whose emulator script is reused here).

Real LangGraph, real LangChain integrations and vendor SDKs, real gateway, against the emulator; the program
is written by the CLI from the shop's desk (tests/adapters/adk/data) with its chat model on each vendor, and
its ``main()`` is run in-process; what each vendor was sent is read from the emulator's request log.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'portagent[langgraph]')")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters" / "anthropic"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters"))
from _migration_helpers import DUMMY_KEYS, load_module
from _migration_helpers import Ran as ExportedRan
from _support import first_call_cut, portagent_home, raw_ending, run_cli
from gemini_wire import prompt_blocked
from openai_wire import REFUSAL, incomplete_as_raw, refusing_openai
from runtime_testkit import (
    DATA,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    handlers,
    parse_request,
    result_value,
)

from portagent.emulator import (
    RunningEmulator,
    load_script,
    render_anthropic,
    render_gemini,
    render_openai,
    serve,
)
from portagent.tracing.recorder import read_trace

ADAPTER_TESTS = Path(__file__).resolve().parents[1] / "adapters"
SCRIPT = ADAPTER_TESTS / "langgraph" / "data" / "replies.yaml"
MODELS = {
    "openai": "openai:gpt-4.1-mini",  # the Responses API
    "openai_chat": "openai:gpt-4.1-mini",  # models.openai_api: chat_completions
    "anthropic": "anthropic:claude-sonnet-4-6",
    "google_genai": "google_genai:gemini-2.5-flash",
}
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


@pytest.fixture(name="emu", scope="module")
def replies_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT)) as running:
        yield running


@pytest.fixture(name="first_cut", scope="module")
def first_cut_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT), engine=first_call_cut()) as running:
        yield running


@pytest.fixture(name="program", scope="module")
def program_fixture(tmp_path_factory) -> Any:
    """``program(vendor, target, structured)``: the shop desk exported to ``target`` with its chat model on
    ``vendor``, loaded; ``structured``: "desk" or "faq_expert" gets OUTPUT_SCHEMA."""
    root = tmp_path_factory.mktemp("export-langgraph-replies")
    data = root / "data"
    # without shop_handlers.py: the exported program resolves handlers beside the tools file first (ADR 0004),
    # so a copy there would be a second module whose counters this test does not read
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("__pycache__", "shop_handlers.py"))
    expert = yaml.safe_load((data / "faq_expert.yaml").read_text(encoding="utf-8"))
    (data / "faq_expert_structured.yaml").write_text(
        yaml.safe_dump({**expert, "output_schema": OUTPUT_SCHEMA}, sort_keys=False), encoding="utf-8"
    )
    cache: dict[tuple[str, str, str | None], Any] = {}

    def program(vendor: str, target: str = "langgraph", structured: str | None = None) -> Any:
        if (vendor, target, structured) not in cache:
            spec = yaml.safe_load((data / "desk.yaml").read_text(encoding="utf-8"))
            spec["models"]["langgraph"] = MODELS[vendor]
            if vendor == "openai_chat":
                spec["models"]["openai_api"] = "chat_completions"
            if target == "anthropic":  # no handoffs there: the desk keeps its agent tool
                spec["delegation"] = [e for e in spec["delegation"] if e["kind"] == "agent_as_tool"]
            if structured == "desk":
                spec["output_schema"] = OUTPUT_SCHEMA
            if structured == "faq_expert":
                for edge in spec["delegation"]:
                    if edge["agent"] == "faq_expert.yaml":
                        edge["agent"] = "faq_expert_structured.yaml"
            stem = f"desk_{vendor}_{target}_{structured or 'text'}"
            path = data / f"{stem}.yaml"
            path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
            module = root / f"{stem}.py"
            code, _, err = run_cli("export", str(path), "--to", target, "--out", str(module))
            assert code == 0, err
            cache[vendor, target, structured] = load_module(module)
        return cache[vendor, target, structured]

    return program


class Ran(ExportedRan):
    def results_sent(self) -> list[tuple[str | None, Any]]:
        """Tool results in the last request: what the model was finally shown (name, parsed value)."""
        last = parse_request(self.requests[-1])
        names = {i.call_id: i.name for i in last.items if i.kind == "tool_call"}
        return [(i.name or names.get(i.call_id), result_value(i)) for i in last.tool_results()]


def run(module: Any, emu: RunningEmulator, messages: list[str], tmp: Path, target: str = "langgraph") -> Ran:
    """The exported program's ``main()`` on ``messages`` (auto-approve: nothing is refused by the policy)."""
    before = len(emu.requests())
    trace = tmp / "exported.jsonl"
    with portagent_home(tmp / "home"):
        done = asyncio.run(
            asyncio.wait_for(
                module.main(messages, base_url=emu.base_url, api_key=DUMMY_KEYS[target],
                            approver="auto-approve", trace=trace, source="emulator"),
                120,
            )
        )  # fmt: skip
    return Ran(done, read_trace(trace), emu.requests()[before:])


# --- a reply cut by the token limit, or stopped by the content filter --------------------------------

# (first message, the stopped reply's text, the answer to "Are you there?" (None: not asked), finish reason)
STOPPED = {
    "refund": ("Refund ORD-7, but run out of tokens.", "Refunding ORD-7 now.", "Nothing was refunded.", "length"),
    "no_text": ("Look up ORD-7 without a word, and run out of tokens.", "", None, "length"),
    "handoff": ("Hand me over, but run out of tokens.", "Passing you on.", "The desk is still here.", "length"),
    "agent_tool": ("Ask the expert, but run out of tokens.", "Asking the expert.", "The expert was not asked.",
                   "length"),
    "filtered": ("Refund ORD-7, but get filtered.", "Refunding ORD-7 now.", "Nothing was refunded.",
                 "content_filter"),
}  # fmt: skip


@pytest.fixture(name="cut", scope="module")
def cut_replies_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(ADAPTER_TESTS / "data" / "cut_replies.yaml")) as running:
        yield running


@pytest.mark.parametrize("case", list(STOPPED))
@pytest.mark.parametrize("vendor", list(MODELS))
def test_a_reply_stopped_before_its_end_runs_none_of_its_calls(cut, program, tmp_path, vendor, case):
    """The reply stops at max tokens (or at the content filter) while it calls a tool, hands off or asks an
    agent tool: the turn ends with its text so far, and nothing it began is run — the refund, the lookup,
    the handoff, the sub-agent (the call's arguments may be cut too). The next user message continues the
    conversation without a call left unanswered."""
    first, text, answer, finish = STOPPED[case]
    r = run(program(vendor), cut, [first] if answer is None else [first, "Are you there?"], tmp_path)
    assert (r.done["status"], r.done["stop_reason"]) == ("completed", "final_output")
    assert handlers.REFUNDS == [] and handlers.CALLS == {}
    assert not r.of("tool.call") and not r.of("handoff")
    assert [c.finish_reason for c in r.of("model.call")] == [finish, "stop"][: len(r.requests)]
    assert [c.agent for c in r.of("model.call")] == ["shop_desk"] * len(r.requests)
    if answer is None:  # nothing but a call before the limit: the answer so far is empty
        assert (r.done["final_output"], len(r.requests)) == ("", 1)
        return
    assert r.done["final_output"] == answer and len(r.requests) == 2
    replayed = parse_request(r.requests[1])
    assert not [i for i in replayed.items if i.kind in ("tool_call", "tool_result")], replayed.items
    assert text in json.dumps(r.requests[1]["body"])  # the stopped answer's text is kept


@pytest.mark.parametrize("case", ["refund", "agent_tool", "filtered"])
def test_the_exported_anthropic_program_runs_none_of_a_stopped_replys_calls(cut, program, tmp_path, case):
    """``--to anthropic``: tools run on stop_reason tool_use only, and a refusal is traced content_filter, as
    portagent's own runs trace it on every provider (the program said other)."""
    first, text, answer, finish = STOPPED[case]
    r = run(program("anthropic", "anthropic"), cut, [first, "Are you there?"], tmp_path, "anthropic")
    assert (r.done["status"], r.done["final_output"], len(r.requests)) == ("completed", answer, 2)
    assert handlers.REFUNDS == [] and handlers.CALLS == {} and not r.of("tool.call") and not r.of("handoff")
    assert [c.finish_reason for c in r.of("model.call")] == [finish, "stop"]
    assert text in json.dumps(r.requests[1]["body"]) and "tool_use" not in json.dumps(r.requests[1]["body"])


# --- a reply that ended for another reason, and an OpenAI refusal -------------------------------------

WIRES = {"google_genai": "gemini", "openai_chat": "chat", "anthropic": "anthropic", "openai": "responses"}
"""The wire each chat model's replies come on (``openai``: the Responses API)."""
TABLES = {"gemini": render_gemini._FINISH, "chat": render_openai._FINISH, "anthropic": render_anthropic._STOP}
"""The emulator renderer's table of each wire: portable stop reason → the vendor's value."""


RawEnding = raw_ending()


@pytest.fixture(name="ending", scope="module")
def reply_endings_fixture() -> Iterator[RunningEmulator]:
    """The emulator playing tests/adapters/data/reply_endings.yaml (``RawEnding``)."""
    with serve(load_script(ADAPTER_TESTS / "data" / "reply_endings.yaml"), engine=RawEnding) as running:
        yield running


def end_first_reply_with(monkeypatch: pytest.MonkeyPatch, vendor: str, raw: str) -> None:
    """The first reply of each conversation ends with the vendor's ``raw`` value."""
    wire = WIRES[vendor]
    if wire == "responses":  # an answer incomplete for that reason
        incomplete_as_raw(monkeypatch)
    else:
        monkeypatch.setitem(TABLES[wire], f"raw:{raw}", raw)
    monkeypatch.setattr(RawEnding, "RAW", raw)


OTHER_ENDINGS = [
    *[("google_genai", raw, "other") for raw in ("OTHER", "FINISH_REASON_UNSPECIFIED", "A_REASON_NEWER_THAN_THE_SDK")],
    *[("google_genai", raw, "error") for raw in ("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL")],
    ("openai_chat", "insufficient_system_resource", "other"),  # DeepSeek's
    ("openai_chat", "error", "other"),  # some gateways' own
    ("anthropic", "a_reason_newer_than_the_sdk", "other"),
    ("anthropic", "pause_turn", "other"),
    ("openai", "a_reason_newer_than_the_api", "other"),  # incomplete_details.reason
]  # fmt: skip
"""(chat model, the vendor's raw end of a reply holding a call, its finish reason in the trace)."""


@pytest.mark.parametrize(("vendor", "raw", "finish"), OTHER_ENDINGS)
def test_a_reply_that_ended_for_another_reason_runs_none_of_its_calls(
    ending, monkeypatch, program, tmp_path, vendor, raw, finish
):
    """The reply says a few words and calls for a refund, then ends for a reason that is not the normal one
    (Gemini OTHER or its error about the reply's calls, an undocumented Chat finish_reason, a newer Anthropic
    stop_reason, a Responses answer incomplete for a newer reason): the refund is not run, the model call
    names it in ``calls_not_run``, and the turn ends with the text so far, as portagent.wire.finish says
    for the adapters (tests/adapters/test_reply_endings.py). The program ran the refund (it stopped the calls
    of length and content_filter only)."""
    end_first_reply_with(monkeypatch, vendor, raw)
    r = run(
        program(vendor), ending, ["Refund ORD-7, but end for another reason.", "Are you there?"], tmp_path
    )
    assert (r.done["status"], r.done["final_output"]) == ("completed", "Nothing was refunded."), r.done
    assert handlers.REFUNDS == [] and handlers.CALLS == {}
    assert not r.of("tool.call") and not r.of("handoff")
    first, second = r.of("model.call")
    assert (first.finish_reason, first.provider_details.get("calls_not_run")) == (finish, ["issue_refund"])
    assert second.finish_reason == "stop"
    assert len(r.requests) == 2
    replayed = parse_request(r.requests[1])
    assert not [i for i in replayed.items if i.kind in ("tool_call", "tool_result")], replayed.items
    assert "Refunding ORD-7 now." in json.dumps(r.requests[1]["body"])  # the answer so far is kept


NORMAL = {"google_genai": "STOP", "openai_chat": "stop", "anthropic": "tool_use", "openai": None}
"""The vendor's normal end of a reply holding calls (Chat ``stop``: vLLM, Ollama; Responses: ``completed``)."""


@pytest.mark.parametrize("vendor", list(NORMAL))
def test_a_reply_that_ended_normally_runs_its_calls(ending, monkeypatch, program, tmp_path, vendor):
    """The control: the calls of a reply that ended normally run, and the model is asked again."""
    if NORMAL[vendor] is not None:
        end_first_reply_with(monkeypatch, vendor, NORMAL[vendor])
    r = run(program(vendor), ending, ["Refund ORD-7, and end normally."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", "ORD-7 is on its way."), r.done
    assert handlers.CALLS == {"get_order": 1}
    first, _ = r.of("model.call")
    assert first.finish_reason == "tool_calls" and "calls_not_run" not in first.provider_details


@pytest.mark.parametrize("raw", ["SAFETY", "OTHER", "A_BLOCK_NEWER_THAN_THE_SDK"])
def test_a_prompt_gemini_blocked_ends_with_no_text(ending, monkeypatch, program, tmp_path, raw):
    """Gemini refuses the prompt itself (no candidate, only ``promptFeedback.blockReason``): the turn ends
    with ``""`` traced ``content_filter``, the block reason kept, as the langgraph adapter traces it (the
    program traced ``stop``)."""
    monkeypatch.setattr(RawEnding, "EMPTY", True)
    end_first_reply_with(monkeypatch, "google_genai", raw)
    monkeypatch.setattr(render_gemini, "generate_json", prompt_blocked(render_gemini.generate_json))
    r = run(program("google_genai"), ending, ["Say nothing, and end for another reason."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", ""), r.done
    (call,) = r.of("model.call")
    assert call.finish_reason == "content_filter" and call.provider_details.get("prompt_blocked") == raw
    assert len(r.requests) == 1


@pytest.fixture(name="refusing", scope="module")
def refusals_fixture() -> Iterator[RunningEmulator]:
    """The emulator playing tests/adapters/data/refusals.yaml, its OpenAI replies refusals there."""
    with refusing_openai(), serve(load_script(ADAPTER_TESTS / "data" / "refusals.yaml")) as running:
        yield running


@pytest.mark.parametrize("vendor", ["openai", "openai_chat"])
def test_a_refusal_ends_the_turn_with_its_text(refusing, program, tmp_path, vendor):
    """An OpenAI model refuses (a Responses ``refusal`` part, Chat ``message.refusal``): the turn ends with
    the refusal as its answer, traced ``content_filter``, as the adapters do (the program ended ``""`` traced
    ``stop``)."""
    r = run(program(vendor), refusing, ["Refuse to answer."], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", REFUSAL), r.done
    (call,) = r.of("model.call")
    assert call.finish_reason == "content_filter" and "calls_not_run" not in call.provider_details
    assert len(r.requests) == 1


@pytest.mark.parametrize("vendor", ["openai", "openai_chat"])
def test_the_calls_of_a_refusal_are_not_run(refusing, program, tmp_path, vendor):
    """A refusal that holds a call: the call is not run (the program ran it), the model call names it, the
    turn ends with the refusal, and the next user message carries it and no call left unanswered."""
    r = run(program(vendor), refusing, ["Refund ORD-7, but refuse.", "Are you there?"], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", "Nothing was refunded."), r.done
    assert handlers.REFUNDS == [] and handlers.CALLS == {} and not r.of("tool.call")
    first, second = r.of("model.call")
    assert (first.finish_reason, first.provider_details.get("calls_not_run")) == (
        "content_filter",
        ["issue_refund"],
    )
    assert second.finish_reason == "stop"
    replayed = parse_request(r.requests[1])
    assert not [i for i in replayed.items if i.kind in ("tool_call", "tool_result")], replayed.items
    assert REFUSAL in json.dumps(r.requests[1]["body"])  # the refusal is kept in the conversation


@pytest.mark.parametrize("case", ["text", "schema", "calls", "calls_schema"])
@pytest.mark.parametrize("vendor", ["openai", "openai_chat"])
def test_an_empty_refusal_ends_the_turn_with_no_text(refusing, program, tmp_path, vendor, case):
    """The model refuses and says nothing (``"refusal": ""``): a refusal all the same, as on the langgraph
    adapter — traced ``content_filter``, its calls not run, the turn ended with ``""`` (the program took an
    empty Responses refusal for none, and langchain-openai drops an empty ``message.refusal``: traced
    ``stop``, the calls of one holding some ran). With an output schema the model is not asked again."""
    first = (
        "Refund ORD-7, but refuse silently." if case.startswith("calls") else "Refuse to answer, silently."
    )
    structured = "desk" if case.endswith("schema") else None
    r = run(program(vendor, structured=structured), refusing, [first], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", ""), r.done
    assert not r.of("tool.call") and handlers.CALLS == {} and handlers.REFUNDS == []
    (call,) = r.of("model.call")
    not_run = ["issue_refund"] if case.startswith("calls") else None
    assert (call.finish_reason, call.provider_details.get("calls_not_run")) == ("content_filter", not_run)
    assert len(r.requests) == 1


@pytest.mark.parametrize("vendor", ["openai", "openai_chat"])
def test_an_empty_refusal_holding_a_call_leaves_none_unanswered(refusing, program, tmp_path, vendor):
    """The next user message after an empty refusal that held a call carries no call left unanswered."""
    r = run(program(vendor), refusing, ["Refund ORD-7, but refuse silently.", "Are you there?"], tmp_path)
    assert (r.done["status"], r.done["final_output"]) == ("completed", '{"answer": "asked again"}'), r.done
    assert not r.of("tool.call") and handlers.REFUNDS == []
    assert [c.finish_reason for c in r.of("model.call")] == ["content_filter", "stop"]
    replayed = parse_request(r.requests[1])
    assert not [i for i in replayed.items if i.kind in ("tool_call", "tool_result")], replayed.items


@pytest.mark.parametrize("vendor", ["openai", "openai_chat"])
def test_an_agent_tool_with_a_schema_that_refuses_silently_answers_nothing(
    refusing, program, tmp_path, vendor
):
    """An agent run as a tool, with an output schema, refuses with no text: it answers ``""`` (traced
    ``content_filter``, not asked again) and the desk goes on."""
    r = run(
        program(vendor, structured="faq_expert"),
        refusing,
        ["Ask the expert, who refuses silently."],
        tmp_path,
    )
    assert (r.done["status"], r.done["final_output"]) == ("completed", "The expert said nothing."), r.done
    expert = [c.finish_reason for c in r.of("model.call") if c.agent == "faq_expert"]
    assert expert == ["content_filter"]
    assert "asked again" not in json.dumps(r.requests)


@pytest.mark.parametrize("vendor", ["openai", "openai_chat"])
def test_an_output_schema_is_sent_beside_the_tools(emu, program, tmp_path, vendor):
    """An agent with tools and an output schema: the schema is sent in the vendor's field and the run goes on
    (on Chat Completions a bound ``response_format`` made langchain-openai's client refuse the desk's tools,
    not ``strict``, before anything was sent: the run failed)."""
    r = run(program(vendor, structured="desk"), emu, ["Ask the expert a number."], tmp_path)
    assert r.done["status"] == "completed", r.done
    assert r.done["final_output"] == "Expert: validation_error at input", r.done
    first = r.requests[0]["body"]
    sent = first["response_format"] if vendor == "openai_chat" else first["text"]["format"]
    assert json.dumps(OUTPUT_SCHEMA, sort_keys=True) in json.dumps(sent, sort_keys=True), sent
    assert first["tools"], first


# --- an agent-as-tool call's arguments --------------------------------------------------------------

BAD_AGENT_TOOL_CALLS = [
    (vendor, question)
    for vendor in ("openai", "openai_chat", "anthropic", "google_genai")
    for question in (
        "Ask the expert without a question.",
        "Ask the expert a number.",
        # a Gemini call's arguments are an object: "not JSON" cannot reach the agent tool there
        *(() if vendor == "google_genai" else ("Ask the expert with broken arguments.",)),
    )
]


@pytest.mark.parametrize(("vendor", "question"), BAD_AGENT_TOOL_CALLS)
def test_an_agent_tool_call_with_bad_arguments_is_answered_not_run(emu, program, tmp_path, vendor, question):
    """The faq_expert sub-agent takes ``{"input": string}``. Called without it, with a number or with text
    that is not JSON, it is not run on an empty task: the model gets validation_error (naming the field),
    as the gateway answers a tool's bad arguments, and the run goes on."""
    r = run(program(vendor), emu, [question], tmp_path)
    assert r.done["status"] == "completed"
    broken = "broken" in question
    assert r.done["final_output"] == (
        "Expert: validation_error" if broken else "Expert: validation_error at input"
    )
    assert not r.of("handoff") and len(r.requests) == 2  # the sub-agent never ran
    ((name, sent),) = r.results_sent()
    assert name == "faq_expert" and sent["ok"] is False and sent["error"] == "validation_error"
    # traced as in a portagent run (SessionGateway.delegation_task): the refused call and its answer
    (call,) = r.of("tool.call")
    (res,) = r.of("tool.result")
    assert (call.tool, call.via, res.call_id, res.error) == (
        "faq_expert",
        "agent",
        call.call_id,
        "validation_error",
    )
    assert res.output == sent


@pytest.mark.parametrize("question", ["Ask the expert without a question.", "Ask the expert a number."])
@pytest.mark.parametrize("target", ["adk", "anthropic", "openai"])
def test_exported_adk_and_anthropic_programs_refuse_an_agent_tool_call_without_its_task(
    emu, program, tmp_path, target, question
):
    """The same refusal in the programs ``export --to adk``, ``--to anthropic`` and ``--to openai`` write:
    before, the adk program ran the sub-agent with the arguments' JSON (``{}``) as its task, the anthropic one
    answered an ad-hoc ``input: string`` without tracing the call, and the openai one failed the run."""
    vendor = {"anthropic": "anthropic", "adk": "google_genai", "openai": "openai"}[target]
    r = run(program(vendor, target), emu, [question], tmp_path, target=target)
    assert r.done["status"] == "completed", r.done
    assert r.done["final_output"] == "Expert: validation_error at input"
    assert not r.of("handoff") and len(r.requests) == 2  # the sub-agent never ran
    (call,) = r.of("tool.call")
    (res,) = r.of("tool.result")
    assert (call.tool, call.via, res.error) == ("faq_expert", "agent", "validation_error")
    assert (
        res.output["message"] == "arguments do not match faq_expert's input schema" and res.output["details"]
    )


# --- calls whose arguments are not JSON -------------------------------------------------------------


@pytest.mark.parametrize("vendor", ["openai", "openai_chat", "anthropic"])
def test_a_call_whose_arguments_are_not_json_is_answered(emu, program, tmp_path, vendor):
    """``{"query":"shi`` is neither run nor dropped: it is an invalid call, answered with validation_error
    by the gateway, and the model goes on."""
    r = run(program(vendor), emu, ["Search with broken arguments."], tmp_path)
    assert r.done["status"] == "completed"
    assert r.done["final_output"] == "After the broken search: validation_error"
    assert handlers.CALLS == {}
    (result,) = r.of("tool.result")
    assert (result.tool, result.error) == ("search_faq", "validation_error")


@pytest.mark.parametrize("vendor", ["openai", "openai_chat", "anthropic"])
def test_a_broken_call_and_a_good_one_are_answered_in_the_models_order(first_cut, program, tmp_path, vendor):
    """One reply, two calls: the first's arguments are cut, the second's are whole. LangChain keeps the
    broken one apart (``invalid_tool_calls``); both are answered, in the model's order — in the trace and
    in what the vendor is sent back."""
    r = run(program(vendor), first_cut, ["Send one broken call, then a good one."], tmp_path)
    assert r.done["status"] == "completed"
    assert r.done["final_output"] == "Answers: validation_error, then Orders ship within 2 working days."
    assert [c.tool for c in r.of("tool.call")] == ["get_order", "search_faq"]
    assert [name for name, _ in r.results_sent()] == ["get_order", "search_faq"]
    assert handlers.CALLS == {"search_faq": 1}


@pytest.mark.parametrize(("raw", "finish"), [("a_reason_newer_than_the_sdk", "other"), ("end_turn", "other")])
def test_the_exported_anthropic_program_reads_a_replys_end_as_the_adapters(
    ending, monkeypatch, program, tmp_path, raw, finish
):
    """``--to anthropic`` reads how a reply ended with portagent.wire.finish, as the adapters: a reply holding
    a call that ended for a newer reason, or ``end_turn`` (ended, but not for its calls), runs none of them
    and names them in ``calls_not_run``. The program's own table traced ``end_turn`` ``stop`` and named none."""
    end_first_reply_with(monkeypatch, "anthropic", raw)
    r = run(
        program("anthropic", "anthropic"),
        ending,
        ["Refund ORD-7, but end for another reason.", "Are you there?"],
        tmp_path,
        "anthropic",
    )
    assert (r.done["status"], r.done["final_output"]) == ("completed", "Nothing was refunded."), r.done
    assert handlers.REFUNDS == [] and handlers.CALLS == {} and not r.of("tool.call")
    first, second = r.of("model.call")
    assert (first.finish_reason, first.provider_details.get("calls_not_run")) == (finish, ["issue_refund"])
    assert second.finish_reason == "stop"
