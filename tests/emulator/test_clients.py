"""The official clients (openai, anthropic, google-genai) against the emulator: every mode parses, and
every fault surfaces as the client's own error class (these pin the clients' behaviour too)."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from _emulator_helpers import (
    DUMMY_ANTHROPIC_KEY,
    DUMMY_GOOGLE_KEY,
    DUMMY_OPENAI_KEY,
    WEATHER,
    emulator,
    post,
    weather_with_fault,
    with_turns,
)
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from portagent.emulator import RunningEmulator
from portagent.wire.sse import parse_json_array_stream

Q = "What's the weather in Paris?"
OA_TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
AN_TOOLS = [
    {
        "name": "get_weather",
        "description": "weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
GM_CONFIG = types.GenerateContentConfig(
    tools=[
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(name="get_weather", parameters_json_schema={"type": "object"})
            ]
        )
    ]
)


@pytest.fixture(scope="module")
def emu() -> Iterator[RunningEmulator]:
    with emulator(WEATHER) as e:
        yield e


def oa(emu: RunningEmulator, **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=emu.openai_base_url, api_key=DUMMY_OPENAI_KEY, **{"max_retries": 0, **kw})


def an(emu: RunningEmulator, **kw: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=emu.anthropic_base_url, api_key=DUMMY_ANTHROPIC_KEY, **{"max_retries": 0, **kw}
    )


_KEEP: list[genai.Client] = []


def gm(emu: RunningEmulator, **kw: Any) -> genai.Client:
    # A genai.Client closes its HTTP client when garbage-collected, even while a call made through
    # ``client.models`` is running; keep a reference for the test session.
    client = genai.Client(
        api_key=DUMMY_GOOGLE_KEY, http_options=types.HttpOptions(base_url=emu.gemini_base_url, **kw)
    )
    _KEEP.append(client)
    return client


# -- every mode parses -------------------------------------------------------------------------


def test_openai_responses_json_and_sse(emu: RunningEmulator) -> None:
    client = oa(emu)
    r = client.responses.create(model="gpt-4.1-mini", input=Q, tools=OA_TOOLS)
    assert [o.type for o in r.output] == ["message", "function_call"]
    assert r.output[1].name == "get_weather" and json.loads(r.output[1].arguments) == {"city": "Paris"}
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.input_tokens_details.cached_tokens) == (
        100,
        10,
        40,
    )
    events = list(client.responses.create(model="gpt-4.1-mini", input=Q, tools=OA_TOOLS, stream=True))
    types_seen = [e.type for e in events]
    assert (
        types_seen[:2] == ["response.created", "response.in_progress"]
        and types_seen[-1] == "response.completed"
    )
    assert types_seen.count("response.function_call_arguments.delta") >= 2  # arguments split over deltas
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].response.output[1].arguments == '{"city":"Paris"}'
    assert events[-1].response.usage.total_tokens == 110


def test_openai_chat_json_and_sse_usage_chunk_only_when_asked(emu: RunningEmulator) -> None:
    client = oa(emu)
    msgs = [{"role": "user", "content": Q}]
    c = client.chat.completions.create(model="gpt-4.1-mini", messages=msgs)
    assert (
        c.choices[0].finish_reason == "tool_calls"
        and c.choices[0].message.tool_calls[0].function.name == "get_weather"
    )
    assert c.usage.prompt_tokens == 100
    plain = list(client.chat.completions.create(model="gpt-4.1-mini", messages=msgs, stream=True))
    assert all(ch.usage is None for ch in plain) and plain[-1].choices[0].finish_reason == "tool_calls"
    with_usage = list(
        client.chat.completions.create(
            model="gpt-4.1-mini", messages=msgs, stream=True, stream_options={"include_usage": True}
        )
    )
    assert with_usage[-1].choices == [] and with_usage[-1].usage.completion_tokens == 10
    status, _, raw = post(
        emu.openai_base_url + "/chat/completions", {"model": "m", "messages": msgs, "stream": True}
    )
    assert status == 200 and raw.endswith(b"data: [DONE]\n\n")


def test_anthropic_json_sse_beta_and_count_tokens(emu: RunningEmulator) -> None:
    client = an(emu)
    msgs = [{"role": "user", "content": Q}]
    m = client.messages.create(model="claude-sonnet-4-6", max_tokens=100, messages=msgs, tools=AN_TOOLS)
    assert [b.type for b in m.content] == ["text", "tool_use"] and m.stop_reason == "tool_use"
    assert (m.usage.input_tokens, m.usage.cache_read_input_tokens) == (60, 40)  # 100 total - 40 cached
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=100, messages=msgs, tools=AN_TOOLS
    ) as s:
        final = s.get_final_message()
    assert final.content[1].input == {"city": "Paris"} and final.usage.output_tokens == 10
    beta = client.beta.messages.create(
        model="claude-sonnet-4-6", max_tokens=100, messages=msgs, betas=["interleaved-thinking-2025-05-14"]
    )
    assert beta.content[0].text == "Let me check."
    # Claude Code (the JS SDK) posts to /v1/messages?beta=true (SDK_NOTES §4.5)
    status, _, raw = post(
        emu.anthropic_base_url + "/v1/messages?beta=true",
        {"model": "m", "max_tokens": 5, "messages": msgs},
        {"x-api-key": DUMMY_ANTHROPIC_KEY},
    )
    assert status == 200 and json.loads(raw)["content"][0]["text"] == "Let me check."
    assert emu.requests()[-1]["query"] == {"beta": "true"}
    assert client.messages.count_tokens(model="claude-sonnet-4-6", messages=msgs).input_tokens > 0


def test_anthropic_thinking_stream() -> None:
    script = with_turns("t", "think", [{"thinking": "Let me reason step by step.", "text": "42"}])
    with emulator(script) as emu:
        client = an(emu)
        kwargs: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 2000,
            "messages": [{"role": "user", "content": "think"}],
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        }
        deltas = [
            e.delta.type
            for e in client.messages.create(**kwargs, stream=True)
            if e.type == "content_block_delta"
        ]
        assert "thinking_delta" in deltas and "signature_delta" in deltas and "text_delta" in deltas
        with client.messages.stream(**kwargs) as s:
            final = s.get_final_message()
        assert (
            final.content[0].type == "thinking" and final.content[0].thinking == "Let me reason step by step."
        )
        assert final.content[0].signature


def test_gemini_json_sse_async_and_json_array(emu: RunningEmulator) -> None:
    client = gm(emu)
    r = client.models.generate_content(model="gemini-2.5-flash", contents=Q, config=GM_CONFIG)
    assert r.function_calls[0].name == "get_weather" and r.function_calls[0].args == {"city": "Paris"}
    assert (r.usage_metadata.prompt_token_count, r.usage_metadata.cached_content_token_count) == (100, 40)
    chunks = list(
        client.models.generate_content_stream(model="gemini-2.5-flash", contents=Q, config=GM_CONFIG)
    )
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert chunks[-1].function_calls[0].name == "get_weather"

    async def run_async() -> str:
        res = await client.aio.models.generate_content(model="gemini-2.5-flash", contents="hello")
        return res.text or ""

    assert asyncio.run(run_async()) == "Hello there!"
    # the JSON-array stream (no alt=sse): google-genai only speaks SSE, so read it with httpx + our parser
    body = {"contents": [{"role": "user", "parts": [{"text": Q}]}]}
    resp = httpx.post(
        emu.gemini_base_url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        json=body,
        headers={"x-goog-api-key": DUMMY_GOOGLE_KEY},
    )
    assert resp.status_code == 200 and resp.text.startswith("[{")
    elements = parse_json_array_stream(resp.text)
    assert elements[-1]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "get_weather"


# -- faults map to each client's error class ---------------------------------------------------


def _calls(emu: RunningEmulator) -> dict[str, Any]:
    return {
        "openai": lambda: oa(emu).responses.create(model="gpt-4.1-mini", input=Q),
        "openai-chat-stream": lambda: list(
            oa(emu).chat.completions.create(
                model="gpt-4.1-mini", messages=[{"role": "user", "content": Q}], stream=True
            )
        ),
        "anthropic": lambda: an(emu).messages.create(
            model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": Q}]
        ),
        "gemini": lambda: gm(emu).models.generate_content(model="gemini-2.5-flash", contents=Q),
    }


FAULTS = [
    (
        "http_429",
        {
            "openai": (openai.RateLimitError, 429),
            "openai-chat-stream": (openai.RateLimitError, 429),
            "anthropic": (anthropic.RateLimitError, 429),
            "gemini": (genai_errors.ClientError, 429, "RESOURCE_EXHAUSTED"),
        },
    ),
    (
        "http_500",
        {
            "openai": (openai.InternalServerError, 500),
            "openai-chat-stream": (openai.InternalServerError, 500),
            "anthropic": (anthropic.InternalServerError, 500),
            "gemini": (genai_errors.ServerError, 500, "INTERNAL"),
        },
    ),
    (
        "http_503",
        {
            "openai": (openai.InternalServerError, 503),
            "openai-chat-stream": (openai.InternalServerError, 503),
            "anthropic": (anthropic.ServiceUnavailableError, 503),
            "gemini": (genai_errors.ServerError, 503, "UNAVAILABLE"),
        },
    ),
    (
        "overloaded",
        {
            "openai": (openai.InternalServerError, 503),
            "openai-chat-stream": (openai.InternalServerError, 503),
            "anthropic": (anthropic.OverloadedError, 529),
            "gemini": (genai_errors.ServerError, 503, "UNAVAILABLE"),
        },
    ),
]


@pytest.mark.parametrize(("fault", "expected"), FAULTS, ids=[f[0] for f in FAULTS])
def test_http_faults_raise_the_clients_error_classes(
    fault: str, expected: dict[str, tuple[Any, ...]]
) -> None:
    with emulator(weather_with_fault({"type": fault, "retry_after_s": 2})) as emu:
        for client, call in _calls(emu).items():
            cls, status, *rest = expected[client]
            with pytest.raises(cls) as info:
                call()
            err = info.value
            if isinstance(err, genai_errors.APIError):
                assert (err.code, err.status) == (status, rest[0])
            else:
                assert err.status_code == status
                assert err.response.headers["retry-after"] == "2"
        bodies = [json.loads(r["body"]) if isinstance(r["body"], str) else r for r in emu.requests()]
        assert len(bodies) == 4 and all(r["fault"] == fault for r in emu.requests())


def test_anthropic_529_body_shape() -> None:
    with emulator(weather_with_fault({"type": "overloaded"})) as emu:
        status, headers, raw = post(
            emu.anthropic_base_url + "/v1/messages",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": Q}]},
        )
    body = json.loads(raw)
    assert status == 529 and body["type"] == "error"
    assert body["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert body["request_id"] == headers["request-id"]


def test_429_then_success_with_client_retries() -> None:
    """``times: 1``: the SDK's own retry (honouring retry-after) gets the answer."""
    with emulator(weather_with_fault({"type": "http_429", "times": 1, "retry_after_s": 0.05})) as emu:
        r = oa(emu, max_retries=2).responses.create(model="gpt-4.1-mini", input=Q)
        assert r.output[0].content[0].text == "Let me check."
        m = an(emu, max_retries=2).messages.create(
            model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": Q}]
        )
        assert m.content[0].text == "Let me check."
        assert [r["status"] for r in emu.requests()] == [429, 200, 429, 200]
        # a retry is the same request at the same cursor: same deterministic ids
        assert r.id == "resp_emu_weather_0"


def test_slow_first_byte_times_out() -> None:
    with emulator(weather_with_fault({"type": "slow_first_byte", "delay_ms": 1500})) as emu:
        with pytest.raises(openai.APITimeoutError):
            oa(emu, timeout=0.3).responses.create(model="gpt-4.1-mini", input=Q)
        with pytest.raises(anthropic.APITimeoutError):
            an(emu, timeout=0.3).messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": Q}]
            )
        with pytest.raises(httpx.ReadTimeout):  # google-genai lets httpx's exception through
            gm(emu, timeout=300).models.generate_content(model="gemini-2.5-flash", contents=Q)


def test_stall_mid_stream_pauses_between_events() -> None:
    with emulator(weather_with_fault({"type": "stall", "after_events": 3, "stall_ms": 400})) as emu:
        stamps = []
        t0 = time.monotonic()
        for event in oa(emu).responses.create(model="gpt-4.1-mini", input=Q, stream=True):
            stamps.append((event.type, time.monotonic()))
        gaps = [b[1] - a[1] for a, b in itertools.pairwise(stamps)]
        assert gaps.index(max(gaps)) == 2  # the pause is after the 3rd event
        # ... and the 4th comes no sooner than the stall after the request (the gap alone can look shorter
        # when the client gets the 3rd event late)
        assert stamps[3][1] - t0 >= 0.38
        assert stamps[-1][0] == "response.completed"


def test_truncated_stream() -> None:
    with emulator(weather_with_fault({"type": "truncate", "after_events": 3})) as emu:
        with pytest.raises(
            openai.APIConnectionError
        ):  # the dropped connection surfaces as a connection error
            list(oa(emu).responses.create(model="gpt-4.1-mini", input=Q, stream=True))
        with pytest.raises(
            (httpx2.RemoteProtocolError, anthropic.APIConnectionError), match="incomplete chunked read"
        ):
            # anthropic 2.14 lets httpx2's RemoteProtocolError escape from a stream it is iterating; 2.17
            # wraps it in APIConnectionError (the adapter takes both as a provider error)
            list(
                an(emu).messages.create(
                    model="m", max_tokens=5, messages=[{"role": "user", "content": Q}], stream=True
                )
            )
        with pytest.raises(openai.APIConnectionError):  # JSON body shorter than its Content-Length
            oa(emu).responses.create(model="gpt-4.1-mini", input=Q)
    with emulator(weather_with_fault({"type": "truncate", "after_events": 3, "clean_end": True})) as emu:
        kinds = [e.type for e in oa(emu).responses.create(model="gpt-4.1-mini", input=Q, stream=True)]
        assert kinds == ["response.created", "response.in_progress", "response.output_item.added"]


def test_huge_text_and_wrong_content_type() -> None:
    with emulator(weather_with_fault({"type": "huge_text", "size_bytes": 2_000_000})) as emu:
        text = oa(emu).responses.create(model="gpt-4.1-mini", input=Q, stream=True)
        full = "".join(e.delta for e in text if e.type == "response.output_text.delta")
        assert len(full.encode()) == 2_000_000 and full.startswith("Let me check.")
    with emulator(weather_with_fault({"type": "wrong_content_type", "content_type": "text/html"})) as emu:
        status, headers, _ = post(emu.openai_base_url + "/responses", {"model": "m", "input": Q})
        assert status == 200 and headers["content-type"] == "text/html"
        # pinned: the official clients do not check the content-type of a 200 answer
        assert (
            oa(emu).responses.create(model="gpt-4.1-mini", input=Q).output[0].content[0].text
            == "Let me check."
        )


# -- bad requests ------------------------------------------------------------------------------


def test_unknown_conversation_is_a_400_in_each_vendor_shape(emu: RunningEmulator) -> None:
    with pytest.raises(openai.BadRequestError, match="known conversations: weather"):
        oa(emu).chat.completions.create(model="m", messages=[{"role": "user", "content": "nope"}])
    with pytest.raises(anthropic.BadRequestError, match="no conversation matches"):
        an(emu).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "nope"}])
    with pytest.raises(genai_errors.ClientError) as info:
        gm(emu).models.generate_content(model="gemini-2.5-flash", contents="nope")
    assert info.value.status == "INVALID_ARGUMENT" and "known conversations" in info.value.message


@pytest.mark.parametrize(
    "path",
    [
        "/v1/responses",
        "/v1/chat/completions",
        "/v1/messages",
        "/v1beta/models/gemini-2.5-flash:generateContent",
    ],
)
@pytest.mark.parametrize("body", [b"{not json", b"[]", b'{"messages": 3, "input": 5, "contents": 7}'])
def test_malformed_body_is_400_never_a_crash(emu: RunningEmulator, path: str, body: bytes) -> None:
    status, _, raw = post(emu.base_url + path, body)
    assert status == 400
    parsed = json.loads(raw)
    assert "error" in parsed
    # and the server is still fine
    assert (
        post(
            emu.openai_base_url + "/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )[0]
        == 200
    )


def test_unknown_route_is_404(emu: RunningEmulator) -> None:
    status, _, raw = post(emu.base_url + "/v1/embeddings", {"input": "x"})
    assert status == 404 and json.loads(raw)["error"]["type"] == "invalid_request_error"
