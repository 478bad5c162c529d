"""Wire fidelity: the emulator's answers have the same event types, field names and nesting as real
vendor traffic (values may differ).

1. Six real recordings (``shared/samples/vendor-recordings``): each recorded *request* is replayed
   against the emulator with a script that plays the same turns, and the responses are compared
   structurally. Differences must be listed below with a reason (fields the API added or dropped
   since the recording was made).
2. What the recordings lack comes from golden snapshots in ``golden/`` built from the vendors'
   documentation (each file names its source): Anthropic ``thinking_delta`` streams and error
   bodies (529), argument deltas split over several chunks (OpenAI Responses and Chat), Gemini errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from _emulator_helpers import GOLDEN, emulator, load_recording, post, shape, weather_with_fault, with_turns

from portagent.wire.sse import parse_json_array_stream, parse_sse

# Fields the emulator sends that an older recording lacks: each was added to the vendor API later
# (and the typed clients in this venv know them).
NEWER: dict[str, set[str]] = {
    "openai.responses": {
        "sequence_number",
        "response.background",
        "response.reasoning.summary",
        "response.usage.input_tokens_details.cache_write_tokens",
        "item.content[].logprobs",
        "part.logprobs",
        "logprobs",
        "response.output[].content[].logprobs",
    },
    "openai.chat": set(),
    "anthropic.json": {"content[].caller", "content[].caller.type", "stop_details", "usage.inference_geo"},
    "anthropic.sse": set(),
    "gemini.sse": {"candidates[].index", "candidates[].finishMessage", "usageMetadata.serviceTier"},
    "gemini.array": set(),
}
# Fields a recording has that the emulator does not send, with the reason.
RETIRED: dict[str, set[str]] = {
    # 2025 Responses API: reasoning.generate_summary was deprecated in favour of reasoning.summary
    "openai.responses": {"response.reasoning.generate_summary"},
    # Chat: service_tier/system_fingerprint are sent; nothing missing
    "openai.chat": set(),
    # usage.cache_creation buckets are sent; nothing missing
    "anthropic.json": set(),
    "anthropic.sse": set(),
    # gemini-2.0 sent candidatesTokensDetails; gemini-2.5 no longer does (llm-gemini recording)
    "gemini.sse": {
        "usageMetadata.candidatesTokensDetails",
        "usageMetadata.candidatesTokensDetails[].modality",
        "usageMetadata.candidatesTokensDetails[].tokenCount",
    },
    "gemini.array": set(),
}


def collapse(seq: list[str]) -> list[str]:
    """Event types with consecutive repeats collapsed (delta counts are free to differ)."""
    out: list[str] = []
    for item in seq:
        if not out or out[-1] != item:
            out.append(item)
    return out


def compare(kind: str, recorded: set[str], ours: set[str], where: str) -> None:
    missing = recorded - ours - RETIRED[kind]
    extra = ours - recorded - NEWER[kind]
    assert not missing, f"{where}: fields the vendor sends but the emulator does not: {sorted(missing)}"
    assert not extra, f"{where}: fields the emulator sends that the vendor does not: {sorted(extra)}"


def by_type(events: list[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for e in events:
        out.setdefault(key(e), set()).update(shape(e))
    return out


def replay(
    path: str, script: dict[str, Any], url: Callable[[Any, str], str]
) -> list[tuple[dict[str, Any], bytes]]:
    """Send every recorded request to the emulator; pair each recording with the emulator's answer."""
    pairs = []
    with emulator(script) as emu:
        for inter in load_recording(path):
            status, _, body = post(url(emu, inter["uri"]), inter["request"])
            assert status == 200, body
            pairs.append((inter, body))
    return pairs


def sse_events(text: str) -> list[dict[str, Any]]:
    return [e.json() for e in parse_sse(text) if e.data != "[DONE]"]


# -- the six recordings ------------------------------------------------------------------------


def test_openai_responses_stream_matches_recording() -> None:
    script = with_turns(
        "capital",
        "What is the capital of France?",
        [
            {"tool_calls": [{"name": "get_capital", "arguments": {"country": "France"}}]},
            {"text": "The capital of France is Paris."},
        ],
    )
    pairs = replay(
        "openai/pydantic-ai__test_openai_responses_stream.yaml",
        script,
        lambda emu, uri: emu.openai_base_url + "/responses",
    )
    for n, (inter, body) in enumerate(pairs):
        rec, ours = sse_events(inter["response_text"]), sse_events(body.decode())
        assert collapse([e["type"] for e in ours]) == collapse([e["type"] for e in rec]), n
        rec_shapes, our_shapes = by_type(rec, lambda e: e["type"]), by_type(ours, lambda e: e["type"])
        for etype, fields in rec_shapes.items():
            compare("openai.responses", fields, our_shapes[etype], f"interaction {n} {etype}")
        # SSE framing: event: <type> then data:, as recorded
        assert [e.event for e in parse_sse(body.decode())] == [e["type"] for e in ours]


def test_openai_chat_json_matches_recording() -> None:
    script = with_turns(
        "dragons",
        "Can the country of Crumpet have dragons? Answer with only YES or NO",
        [
            {"tool_calls": [{"name": "lookup_population", "arguments": {"country": "Crumpet"}}]},
            {
                "tool_calls": [
                    {"name": "can_have_dragons", "arguments": {"population": "{{last_tool_result}}"}}
                ]
            },
            {"text": "YES"},
        ],
    )
    pairs = replay(
        "openai/llm__test_tool_use_chain_of_two_calls.yaml",
        script,
        lambda emu, uri: emu.openai_base_url + "/chat/completions",
    )
    for n, (inter, body) in enumerate(pairs):
        rec, ours = json.loads(inter["response_text"]), json.loads(body)
        compare("openai.chat", shape(rec), shape(ours), f"interaction {n}")
        assert ours["choices"][0]["finish_reason"] == rec["choices"][0]["finish_reason"]
    # the template read the real tool result (123124) and kept its type
    second = json.loads(pairs[1][1])["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(second) == {"population": 123124}


def test_anthropic_parallel_json_matches_recording() -> None:
    text1 = (
        "I'll help you find out who is the youngest by retrieving information about each family member. "
        "I'll retrieve their entity information to compare their ages."
    )
    script = with_turns(
        "family",
        "Alice, Bob, Charlie and Daisy are a family. Who is the youngest?",
        [
            {
                "text": text1,
                "tool_calls": [
                    {"name": "retrieve_entity_info", "arguments": {"name": n}}
                    for n in ("Alice", "Bob", "Charlie", "Daisy")
                ],
            },
            {"text": "Daisy is the youngest."},
        ],
    )
    pairs = replay(
        "anthropic/pydantic-ai__test_multiple_parallel_tool_calls.yaml",
        script,
        lambda emu, uri: emu.anthropic_base_url + "/v1/messages?beta=true",
    )
    for n, (inter, body) in enumerate(pairs):
        rec, ours = inter["response_json"], json.loads(body)
        compare("anthropic.json", shape(rec), shape(ours), f"interaction {n}")
        assert [b["type"] for b in ours["content"]] == [b["type"] for b in rec["content"]]
        assert ours["stop_reason"] == rec["stop_reason"]


def test_anthropic_stream_matches_recording() -> None:
    script = with_turns(
        "pelican",
        "Two names for a pet pelican",
        [
            {"tool_calls": [{"name": "pelican_name_generator"}, {"name": "pelican_name_generator"}]},
            {"text": "Here are two great names for your pet pelican: Charles and Sammy."},
        ],
    )
    pairs = replay(
        "anthropic/llm-anthropic__test_tools.yaml",
        script,
        lambda emu, uri: emu.anthropic_base_url + "/v1/messages",
    )
    for n, (inter, body) in enumerate(pairs):
        rec, ours = sse_events(inter["response_text"]), sse_events(body.decode())
        assert collapse([e["type"] for e in ours]) == collapse([e["type"] for e in rec]), n
        key = lambda e: e["type"] + "/" + str(e.get("delta", e.get("content_block", {})).get("type", ""))  # noqa: E731
        rec_shapes, our_shapes = by_type(rec, key), by_type(ours, key)
        assert set(rec_shapes) == set(our_shapes)
        for etype, fields in rec_shapes.items():
            compare("anthropic.sse", fields, our_shapes[etype], f"interaction {n} {etype}")


def _gemini_url(emu: Any, uri: str) -> str:
    return emu.gemini_base_url + uri.split("googleapis.com", 1)[1]


def test_gemini_sse_matches_recording() -> None:
    script = with_turns(
        "temp",
        "What is the temperature of the capital of France?",
        [
            {"tool_calls": [{"name": "get_capital", "arguments": {"country": "France"}}]},
            # pydantic-ai wraps results as {"return_value": …}; the template unwraps one-key wrappers
            {"tool_calls": [{"name": "get_temperature", "arguments": {"city": "{{last_tool_result}}"}}]},
            {"text": "The temperature in Paris is {{last_tool_result}}.\n"},
        ],
    )
    pairs = replay("google/pydantic-ai__test_google_model_iter_stream.yaml", script, _gemini_url)
    for n, (inter, body) in enumerate(pairs):
        raw = body.decode()
        assert raw.endswith("\r\n\r\n") and raw.startswith("data: {")  # Gemini's CRLF SSE framing
        rec, ours = sse_events(inter["response_text"]), sse_events(raw)
        compare(
            "gemini.sse", set().union(*map(shape, rec)), set().union(*map(shape, ours)), f"interaction {n}"
        )
        assert "finishReason" in ours[-1]["candidates"][0]
    last = sse_events(pairs[2][1].decode())
    assert (
        "".join(p["text"] for e in last for p in e["candidates"][0]["content"]["parts"])
        == "The temperature in Paris is 30°C.\n"
    )


def test_gemini_json_array_stream_matches_recording() -> None:
    script = with_turns(
        "pelican",
        "Two names for a pet pelican",
        [
            {
                "thinking": "I should use the pelican_name_generator tool twice.",
                "tool_calls": [{"name": "pelican_name_generator"}],
                "usage": {"input_tokens": 32, "output_tokens": 54, "reasoning_tokens": 42},
            },
            {"tool_calls": [{"name": "pelican_name_generator"}]},
            {"text": "How about Charles and Sammy?"},
        ],
    )
    pairs = replay("google/llm-gemini__test_tools.yaml", script, _gemini_url)
    for n, (inter, body) in enumerate(pairs):
        rec, ours = parse_json_array_stream(inter["response_text"]), parse_json_array_stream(body.decode())
        compare(
            "gemini.array", set().union(*map(shape, rec)), set().union(*map(shape, ours)), f"interaction {n}"
        )
        assert [len(e["candidates"][0]["content"]["parts"]) for e in ours][-1] >= 1
    first = parse_json_array_stream(pairs[0][1].decode())
    assert first[0]["candidates"][0]["content"]["parts"][0]["thought"] is True  # includeThoughts was set
    assert "thoughtSignature" in first[1]["candidates"][0]["content"]["parts"][0]


# -- golden snapshots from the vendors' documentation -------------------------------------------


def golden(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))


def test_anthropic_thinking_stream_matches_docs() -> None:
    doc = golden("anthropic_thinking_stream.json")
    script = with_turns(
        "t",
        "What is 27 * 453?",
        [{"thinking": "Let me solve this step by step.", "text": "27 * 453 = 12,231"}],
    )
    with emulator(script) as emu:
        status, _, body = post(
            emu.anthropic_base_url + "/v1/messages",
            {
                "model": "claude-sonnet-4-6",
                "max_tokens": 16000,
                "stream": True,
                "thinking": {"type": "enabled", "budget_tokens": 10000},
                "messages": [{"role": "user", "content": "What is 27 * 453?"}],
            },
        )
    assert status == 200
    ours = sse_events(body.decode())
    key = lambda e: e["type"] + "/" + str(e.get("delta", e.get("content_block", {})).get("type", ""))  # noqa: E731
    docs = [e["data"] for e in doc["events"]]
    assert collapse([key(e) for e in ours if e["type"] != "ping"]) == collapse([key(e) for e in docs])
    our_shapes = by_type(ours, key)
    for k, fields in by_type(docs, key).items():
        assert fields <= our_shapes[k], (k, fields - our_shapes[k])  # the docs example is abbreviated


@pytest.mark.parametrize("fault", ["overloaded", "http_429", "http_500"])
def test_anthropic_error_bodies_match_docs(fault: str) -> None:
    case = golden("anthropic_errors.json")["cases"][fault]
    with emulator(weather_with_fault({"type": fault})) as emu:
        status, _, body = post(
            emu.anthropic_base_url + "/v1/messages",
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
            },
        )
    ours = json.loads(body)
    assert status == case["status"]
    assert shape(ours) == shape(case["body"]) and ours["error"]["type"] == case["body"]["error"]["type"]


def test_openai_argument_deltas_match_docs() -> None:
    doc = golden("openai_stream_arguments.json")
    script = with_turns(
        "w",
        "Weather in Paris?",
        [{"tool_calls": [{"name": "get_weather", "arguments": {"location": "Paris, France"}}]}],
    )
    with emulator(script) as emu:
        _, _, rbody = post(
            emu.openai_base_url + "/responses",
            {"model": "gpt-4.1-mini", "input": "Weather in Paris?", "stream": True},
        )
        _, _, cbody = post(
            emu.openai_base_url + "/chat/completions",
            {
                "model": "gpt-4.1-mini",
                "stream": True,
                "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": "Weather in Paris?"}],
            },
        )
    ours = [e for e in sse_events(rbody.decode()) if "function_call" in e["type"] or "item" in e]
    assert collapse([e["type"] for e in ours]) == collapse([e["type"] for e in doc["responses_events"]])
    assert sum(e["type"] == "response.function_call_arguments.delta" for e in ours) >= 2
    assert "".join(e["delta"] for e in ours if e["type"].endswith(".delta")) == '{"location":"Paris, France"}'
    for k, fields in by_type(doc["responses_events"], lambda e: e["type"]).items():
        assert fields <= by_type(ours, lambda e: e["type"])[k], k
    chunks = sse_events(cbody.decode())
    tool_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert len(tool_chunks) >= 3  # the header chunk, then argument pieces
    assert set().union(*map(shape, doc["chat_chunks"])) - set().union(*map(shape, chunks)) == set()
    assert shape(doc["chat_usage_chunk"]) <= shape(chunks[-1]) and chunks[-1]["choices"] == []
    assert cbody.endswith(b"data: [DONE]\n\n")


def test_openai_rate_limit_body_matches_docs() -> None:
    case = golden("openai_stream_arguments.json")["error_429"]
    with emulator(weather_with_fault({"type": "http_429"})) as emu:
        status, headers, body = post(
            emu.openai_base_url + "/responses", {"model": "m", "input": "What's the weather in Paris?"}
        )
    ours = json.loads(body)
    assert status == 429 and shape(ours) == shape(case["body"]) and headers["retry-after"] == "1"
    assert (ours["error"]["type"], ours["error"]["code"]) == ("requests", "rate_limit_exceeded")


@pytest.mark.parametrize("fault", ["http_429", "http_500", "http_503", "unknown"])
@pytest.mark.parametrize("array", [False, True], ids=["json", "json-array-stream"])
def test_gemini_error_bodies_match_docs(fault: str, array: bool) -> None:
    case = golden("gemini_errors.json")["cases"][fault]
    script = (
        weather_with_fault({"type": fault})
        if fault != "unknown"
        else with_turns("x", "other", [{"text": "x"}])
    )
    method = "streamGenerateContent" if array else "generateContent"
    with emulator(script) as emu:
        status, headers, body = post(
            f"{emu.gemini_base_url}/v1beta/models/gemini-2.5-flash:{method}",
            {"contents": [{"role": "user", "parts": [{"text": "What's the weather in Paris?"}]}]},
        )
    ours = json.loads(body)
    if array:  # the JSON-array stream endpoint wraps its error in a one-element array
        assert isinstance(ours, list) and len(ours) == 1
        ours = ours[0]
    assert status == case["status"] and headers["content-type"].startswith("application/json")
    assert shape(ours) == shape(case["body"])
    assert ours["error"]["status"] == case["body"]["error"]["status"]
