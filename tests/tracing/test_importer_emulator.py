"""Record the official clients against the emulator with vcrpy, import the cassette, compare with the
script: the emulator's script is known, so the expected trace is known for every wire API and body
form (JSON, SSE, Gemini's JSON array), including the OTel cache/reasoning token semantics."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
import vcr
from google import genai
from google.genai import types

from portagent.contracts._base import args_hash
from portagent.emulator import RunningEmulator, serve
from portagent.tracing.compare import normalized_jsonl
from portagent.tracing.importer import import_cassette
from portagent.tracing.importer_cassette import read_cassette

Q = "What's the weather in Paris?"
RESULT = {"forecast": "sunny"}
SCRIPT: dict[str, Any] = {
    "kind": "emulator-script",
    "schema_version": 1,
    "name": "trace-import",
    "conversations": [
        {
            "name": "weather",
            "match": {"first_user": Q},
            "turns": [
                {
                    "text": "Let me check.",
                    "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
                    "usage": {
                        "input_tokens": 100,
                        "output_tokens": 10,
                        "cache_read_tokens": 40,
                        "cache_write_tokens": 20,
                        "reasoning_tokens": 3,
                    },
                },
                {
                    "text": "FINAL: {{last_tool_result.forecast}}",
                    "usage": {"input_tokens": 150, "output_tokens": 5},
                },
            ],
        }
    ],
}
KEYS = {
    "openai": "sk-dummy-trace-import",
    "anthropic": "sk-ant-dummy-trace-import",
    "google": "AIza-dummy-trace-import",
}
OA_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CHAT_TOOL = {"type": "function", "function": {k: v for k, v in OA_TOOL.items() if k != "type"}}
AN_TOOL = {"name": "get_weather", "description": "weather", "input_schema": OA_TOOL["parameters"]}


@pytest.fixture(scope="module")
def emu() -> Iterator[RunningEmulator]:
    with serve(SCRIPT, host="127.0.0.1", port=0) as e:
        yield e


def _record(path: Path, drive: Callable[[], None]) -> Path:
    recorder = vcr.VCR(record_mode="all", filter_headers=["authorization", "x-api-key", "x-goog-api-key"])
    with recorder.use_cassette(str(path)):
        drive()
    return path


# -- drivers: one tool round trip per wire API and body form --------------------------------------------


def _responses(emu: RunningEmulator, stream: bool) -> None:
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key=KEYS["openai"], max_retries=0)

    def create(input_: list[Any]) -> Any:
        if not stream:
            return client.responses.create(model="gpt-4.1-mini", input=input_, tools=[OA_TOOL])
        events = list(
            client.responses.create(model="gpt-4.1-mini", input=input_, tools=[OA_TOOL], stream=True)
        )
        return events[-1].response

    first = create([{"role": "user", "content": Q}])
    call = next(o for o in first.output if o.type == "function_call")
    create(
        [
            {"role": "user", "content": Q},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": json.dumps(RESULT)},
        ]
    )


def _chat(emu: RunningEmulator, stream: bool) -> None:
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key=KEYS["openai"], max_retries=0)
    messages: list[Any] = [{"role": "user", "content": Q}]

    def create() -> tuple[str | None, str | None]:
        if not stream:
            c = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=[CHAT_TOOL])
            calls = c.choices[0].message.tool_calls or []
            return (calls[0].id, calls[0].function.arguments) if calls else (None, None)
        call_id, args = None, ""
        for chunk in client.chat.completions.create(
            model="gpt-4.1-mini",
            messages=messages,
            tools=[CHAT_TOOL],
            stream=True,
            stream_options={"include_usage": True},
        ):
            for piece in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                call_id = call_id or piece.id
                args += piece.function.arguments or ""
        return call_id, args

    call_id, args = create()
    messages += [
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": args}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps(RESULT)},
    ]
    create()


def _anthropic(emu: RunningEmulator, stream: bool) -> None:
    client = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key=KEYS["anthropic"], max_retries=0)
    messages: list[Any] = [{"role": "user", "content": Q}]

    def create() -> Any:
        if not stream:
            return client.messages.create(
                model="claude-sonnet-4-6", max_tokens=200, messages=messages, tools=[AN_TOOL]
            )
        with client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=200, messages=messages, tools=[AN_TOOL]
        ) as s:
            return s.get_final_message()

    first = create()
    use = next(b for b in first.content if b.type == "tool_use")
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": json.dumps(RESULT)}],
        },
    ]
    create()


def _gemini_contents(first_call: dict[str, Any] | None) -> list[Any]:
    contents: list[Any] = [{"role": "user", "parts": [{"text": Q}]}]
    if first_call is not None:
        contents += [
            {"role": "model", "parts": [{"functionCall": first_call}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": RESULT}}]},
        ]
    return contents


def _gemini(emu: RunningEmulator, form: str) -> None:
    decl = {"functionDeclarations": [{"name": "get_weather", "parameters": OA_TOOL["parameters"]}]}
    if form == "json-array":
        # google-genai always asks for ?alt=sse; the JSON-array stream is what a plain POST gets
        # (llm-gemini's form), so it is driven with httpx directly.
        url = f"{emu.gemini_base_url}/v1beta/models/gemini-2.5-flash:streamGenerateContent"
        headers = {"x-goog-api-key": KEYS["google"]}
        first = httpx.post(
            url, json={"contents": _gemini_contents(None), "tools": [decl]}, headers=headers
        ).json()
        call = next(
            p["functionCall"]
            for chunk in first
            for p in chunk["candidates"][0]["content"]["parts"]
            if "functionCall" in p
        )
        httpx.post(
            url, json={"contents": _gemini_contents(call), "tools": [decl]}, headers=headers
        ).raise_for_status()
        return
    client = genai.Client(
        api_key=KEYS["google"], http_options=types.HttpOptions(base_url=emu.gemini_base_url)
    )
    config = types.GenerateContentConfig(
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name="get_weather", parameters_json_schema=OA_TOOL["parameters"]
                    )
                ]
            )
        ]
    )

    def generate(contents: list[Any]) -> list[Any]:
        if form == "json":
            return [
                client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
            ]
        return list(
            client.models.generate_content_stream(model="gemini-2.5-flash", contents=contents, config=config)
        )

    chunks = generate(_gemini_contents(None))
    fc = next(p.function_call for c in chunks for p in c.candidates[0].content.parts if p.function_call)
    generate(_gemini_contents({"name": fc.name, "args": dict(fc.args or {})}))


def _form(cassette: Path) -> set[str]:
    """The body forms of a cassette's responses (proves a case recorded the form it names)."""
    bodies = [i.response_body.lstrip() for i in read_cassette(cassette)[0]]
    return {"json" if b[0] == "{" else "json-array" if b[0] == "[" else "sse" for b in bodies}


# (case id, driver, provider, model, expected output of the tool result, cache_write, reasoning)
CASES: list[tuple[str, Callable[[RunningEmulator], None], str, str, Any, int, int]] = [
    ("responses-json", lambda e: _responses(e, False), "openai", "gpt-4.1-mini", json.dumps(RESULT), 20, 3),
    ("responses-sse", lambda e: _responses(e, True), "openai", "gpt-4.1-mini", json.dumps(RESULT), 20, 3),
    ("chat-json", lambda e: _chat(e, False), "openai", "gpt-4.1-mini", json.dumps(RESULT), 20, 3),
    ("chat-sse", lambda e: _chat(e, True), "openai", "gpt-4.1-mini", json.dumps(RESULT), 20, 3),
    (
        "anthropic-json",
        lambda e: _anthropic(e, False),
        "claude",
        "claude-sonnet-4-6",
        json.dumps(RESULT),
        20,
        3,
    ),
    (
        "anthropic-sse",
        lambda e: _anthropic(e, True),
        "claude",
        "claude-sonnet-4-6",
        json.dumps(RESULT),
        20,
        3,
    ),
    # Gemini reports no cache writes (only cachedContentTokenCount).
    ("gemini-json", lambda e: _gemini(e, "json"), "adk", "gemini-2.5-flash", RESULT, 0, 3),
    ("gemini-sse", lambda e: _gemini(e, "sse"), "adk", "gemini-2.5-flash", RESULT, 0, 3),
    ("gemini-json-array", lambda e: _gemini(e, "json-array"), "adk", "gemini-2.5-flash", RESULT, 0, 3),
]


@pytest.mark.parametrize(
    ("case", "drive", "provider", "model", "output", "cache_write", "reasoning"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_recorded_emulator_run_imports_to_the_scripted_trace(
    emu: RunningEmulator,
    tmp_path: Path,
    case: str,
    drive: Callable[[RunningEmulator], None],
    provider: str,
    model: str,
    output: Any,
    cache_write: int,
    reasoning: int,
) -> None:
    cassette = _record(tmp_path / f"{case}.yaml", lambda: drive(emu))
    text = cassette.read_text()
    assert all(key not in text for key in KEYS.values())  # the test's own filter, checked once here

    assert _form(cassette) == {case.split("-", 1)[1]}
    events = import_cassette(cassette)
    types_ = [e.type for e in events]
    assert types_ == ["run.started", "model.call", "tool.call", "tool.result", "model.call", "run.completed"]
    started, call1, tcall, tresult, call2, done = events
    assert (started.provider, started.model, started.sdk, started.source, started.mode, started.input) == (
        provider,
        model,
        "foreign-cassette",
        "emulator",
        "replay",
        Q,
    )
    # OTel semantics on every vendor: input includes the cache buckets, output includes reasoning
    # (the emulator wrote Anthropic's input as 100 - 40 - 20 = 40 and Gemini's candidates as 10 - 3).
    assert (
        call1.input_tokens,
        call1.output_tokens,
        call1.cache_read_tokens,
        call1.cache_write_tokens,
        call1.reasoning_tokens,
        call1.finish_reason,
    ) == (100, 10, 40, cache_write, reasoning, "tool_calls")
    assert (call2.input_tokens, call2.output_tokens, call2.finish_reason) == (150, 5, "stop")
    assert call1.response_id and call1.model == model
    assert (tcall.call_id, tcall.tool, tcall.args) == ("call_1", "get_weather", {"city": "Paris"})
    assert tcall.args_hash == args_hash({"city": "Paris"})
    assert (tresult.call_id, tresult.tool, tresult.ok, tresult.output) == (
        "call_1",
        "get_weather",
        True,
        output,
    )
    # Gemini 2.x sends no call id: the pairing falls back to order and name.
    assert tresult.provider_details["paired_by"] == ("order" if provider == "adk" else "id")
    assert (done.status, done.stop_reason, done.final_output) == ("completed", "final_output", "FINAL: sunny")
    assert (
        done.input_tokens,
        done.output_tokens,
        done.cache_read_tokens,
        done.model_calls,
        done.tool_calls,
    ) == (250, 15, 40, 2, 1)
    # The same cassette imports to the same bytes (ids seeded by content, fixed clock).
    again = import_cassette(cassette)
    assert [e.model_dump_json() for e in again] == [e.model_dump_json() for e in events]
    assert normalized_jsonl(again) == normalized_jsonl(events)
