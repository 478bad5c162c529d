"""The six real vendor recordings (``../shared/samples/vendor-recordings``) import to traces with the
right tool names, arguments, results, final text and token counts. Values were read from the
cassettes by hand (SOURCES.md describes each); the folder is test data, never copied into the repo.
Without it the tests skip locally and fail under CI=true (``require_path``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _support import SAMPLES, require_path

from portagent.contracts._base import args_hash
from portagent.tracing.importer import import_cassette

RECORDINGS = SAMPLES / "vendor-recordings"


@dataclass(frozen=True)
class Expected:
    file: str
    provider: str
    model: str
    input: str
    calls: list[tuple[str, Any, Any]]
    """(tool, args, result output) in call order."""
    usage: list[tuple[int, int]]
    """(input, output) per model call."""
    finishes: list[str]
    final: str
    reasoning: int = 0
    vendor_ids: list[str | None] | None = None
    paired_by: str = "id"


ANTHROPIC_FINAL = (
    "Here are two great names for your pet pelican:\n\n1. **Charles** - A sophisticated and dignified name, "
    "perfect for a pelican with personality!\n2. **Sammy** - A friendly and playful name that gives off warm, "
    "approachable vibes.\n\nEither of these would make an excellent name for your feathered friend! 🦅"
)
PYDANTIC_ANTHROPIC_FINAL = (
    "Based on the retrieved information, we can see the family relationships:\n- Alice and Bob are married\n"
    "- Charlie is their son\n- Daisy is their daughter and Charlie's younger sister\n\nTherefore, Daisy is the "
    "youngest in the family. She is described as Charlie's younger sister, which indicates she is the youngest "
    "among the four family members."
)

SAMPLES_EXPECTED = [
    Expected(
        "openai/pydantic-ai__test_openai_responses_stream.yaml",
        "openai",
        "gpt-4o",
        "What is the capital of France?",
        [("get_capital", {"country": "France"}, "Paris")],
        [(255, 16), (278, 9)],
        ["tool_calls", "stop"],
        "The capital of France is Paris.",
        vendor_ids=["call_kL0PCQV7M2WMoVX8V8OtYSAL"],
    ),
    Expected(
        "openai/llm__test_tool_use_chain_of_two_calls.yaml",
        "openai",
        "gpt-4o-mini",
        "Can the country of Crumpet have dragons? Answer with only YES or NO",
        [
            ("lookup_population", {"country": "Crumpet"}, "123124"),
            ("can_have_dragons", {"population": 123124}, "true"),
        ],
        [(92, 17), (118, 18), (146, 3)],
        ["tool_calls", "tool_calls", "stop"],
        "YES",
        vendor_ids=["call_TTY8UFNo7rNCaOBUNtlRSvMG", "call_aq9UyiSFkzX6W8Ydc33DoI9Y"],
    ),
    Expected(
        "anthropic/pydantic-ai__test_multiple_parallel_tool_calls.yaml",
        "claude",
        "claude-haiku-4-5",
        "Alice, Bob, Charlie and Daisy are a family. Who is the youngest?",
        [
            ("retrieve_entity_info", {"name": "Alice"}, "alice is bob's wife"),
            ("retrieve_entity_info", {"name": "Bob"}, "bob is alice's husband"),
            ("retrieve_entity_info", {"name": "Charlie"}, "charlie is alice's son"),
            (
                "retrieve_entity_info",
                {"name": "Daisy"},
                "daisy is bob's daughter and charlie's younger sister",
            ),
        ],
        [(423, 202), (771, 77)],
        ["tool_calls", "stop"],
        PYDANTIC_ANTHROPIC_FINAL,
        vendor_ids=[
            "toolu_0167cfEnoQaPviGdVXA95zcu",
            "toolu_01EEe2V5HD1Ac4rKiUR4HD2T",
            "toolu_01XFyAjstT3966qvRynZyVPo",
            "toolu_013mnQZbgtK2oe3Mo3XKJsx3",
        ],
    ),
    Expected(
        "anthropic/llm-anthropic__test_tools.yaml",
        "claude",
        "claude-haiku-4-5-20251001",
        "Two names for a pet pelican",
        [("pelican_name_generator", {}, "Charles"), ("pelican_name_generator", {}, "Sammy")],
        [(542, 62), (678, 82)],
        ["tool_calls", "stop"],
        ANTHROPIC_FINAL,
        vendor_ids=["toolu_01LtHJmixrs9NcWQkK8hu8hj", "toolu_01N8a4jWyf116qKTMqKKmjyt"],
    ),
    Expected(
        "google/pydantic-ai__test_google_model_iter_stream.yaml",
        "adk",
        "gemini-2.0-flash",
        "What is the temperature of the capital of France?",
        [("get_capital", {"country": "France"}, "Paris"), ("get_temperature", {"city": "Paris"}, "30°C")],
        # usage of the *last* stream chunk: the third answer's first chunk says 169 prompt tokens,
        # its final chunk 79 (+ 12 candidates); the final usageMetadata is the total.
        [(52, 5), (64, 5), (79, 12)],
        ["tool_calls", "tool_calls", "stop"],
        "The temperature in Paris is 30°C.\n",
        vendor_ids=[None, None],
        paired_by="order",
    ),
    Expected(
        "google/llm-gemini__test_tools.yaml",
        "adk",
        "gemini-2.5-flash",
        "Two names for a pet pelican",
        [("pelican_name_generator", {}, "Charles"), ("pelican_name_generator", {}, "Sammy")],
        # output = candidatesTokenCount + thoughtsTokenCount (12 + 42) on the first answer
        [(32, 54), (105, 13), (137, 6)],
        ["tool_calls", "tool_calls", "stop"],
        "How about Charles and Sammy?",
        reasoning=42,
        vendor_ids=[None, None],
        paired_by="order",
    ),
]


@pytest.fixture(scope="module")
def recordings() -> Path:
    return require_path(RECORDINGS, "vendor recordings (../shared/samples/vendor-recordings)")


@pytest.mark.parametrize(
    "exp", SAMPLES_EXPECTED, ids=[e.file.split("/")[1].removesuffix(".yaml") for e in SAMPLES_EXPECTED]
)
def test_real_recording_imports_with_the_recorded_values(recordings: Path, exp: Expected) -> None:
    events = import_cassette(recordings / exp.file)
    started, done = events[0], events[-1]
    assert (started.type, started.provider, started.model, started.input) == (
        "run.started",
        exp.provider,
        exp.model,
        exp.input,
    )
    assert (started.sdk, started.source, started.mode) == ("foreign-cassette", "live", "replay")

    calls = [e for e in events if e.type == "tool.call"]
    results = {e.call_id: e for e in events if e.type == "tool.result"}
    assert [(c.tool, c.args) for c in calls] == [(tool, args) for tool, args, _ in exp.calls]
    assert [c.call_id for c in calls] == [f"call_{n}" for n in range(1, len(calls) + 1)]
    assert all(c.args_hash == args_hash(c.args) and c.via == "function" for c in calls)
    assert [c.provider_details.get("vendor_call_id") for c in calls] == exp.vendor_ids
    assert [(results[c.call_id].tool, results[c.call_id].ok, results[c.call_id].output) for c in calls] == [
        (tool, True, out) for tool, _, out in exp.calls
    ]
    assert {r.provider_details["paired_by"] for r in results.values()} == {exp.paired_by}

    model_calls = [e for e in events if e.type == "model.call"]
    assert [(m.input_tokens, m.output_tokens) for m in model_calls] == exp.usage
    assert [m.finish_reason for m in model_calls] == exp.finishes
    assert all(m.response_id for m in model_calls)
    assert sum(m.reasoning_tokens for m in model_calls) == exp.reasoning
    assert (done.type, done.status, done.stop_reason, done.final_output) == (
        "run.completed",
        "completed",
        "final_output",
        exp.final,
    )
    assert (done.input_tokens, done.output_tokens, done.model_calls, done.tool_calls) == (
        sum(i for i, _ in exp.usage),
        sum(o for _, o in exp.usage),
        len(exp.usage),
        len(exp.calls),
    )
    assert done.provider_details.get("calls_without_result") is None


def test_results_come_before_the_model_call_that_carried_them(recordings: Path) -> None:
    events = import_cassette(recordings / "openai/llm__test_tool_use_chain_of_two_calls.yaml")
    assert [e.type for e in events] == [
        "run.started",
        "model.call",
        "tool.call",
        "tool.result",
        "model.call",
        "tool.call",
        "tool.result",
        "model.call",
        "run.completed",
    ]
    assert [e.seq for e in events] == list(range(len(events)))


def test_responses_result_sent_back_under_the_item_id_still_pairs(recordings: Path) -> None:
    # pydantic-ai (2025-03) sent the function_call item id ``fc_…`` back as ``call_id``.
    events = import_cassette(recordings / "openai/pydantic-ai__test_openai_responses_stream.yaml")
    call = next(e for e in events if e.type == "tool.call")
    result = next(e for e in events if e.type == "tool.result")
    assert call.provider_details["item_id"] == result.provider_details["vendor_call_id"]
    assert result.call_id == call.call_id == "call_1"


def test_anthropic_streamed_tool_without_arguments_has_empty_object_args(recordings: Path) -> None:
    # llm-anthropic's stream sends ``input_json_delta`` with an empty ``partial_json``.
    events = import_cassette(recordings / "anthropic/llm-anthropic__test_tools.yaml")
    assert [e.args for e in events if e.type == "tool.call"] == [{}, {}]
    first = next(e for e in events if e.type == "model.call")
    assert first.provider_details["usage"]["input_tokens"] == 542  # the vendor's own object is kept


def test_every_sample_imports_byte_identically_twice(recordings: Path) -> None:
    for exp in SAMPLES_EXPECTED:
        a = [e.model_dump_json() for e in import_cassette(recordings / exp.file)]
        b = [e.model_dump_json() for e in import_cassette(recordings / exp.file)]
        assert a == b, exp.file
