"""Body forms and flows the real recordings lack, from the small synthetic cassettes in ``data/``
(written by hand for this purpose; each file's header says what it covers) and inline ones."""

from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from _tracing_helpers import DATA

from portagent.contracts._base import args_hash
from portagent.contracts.errors import RecordingError, UsageError
from portagent.core.clock import FixedClock, IdFactory
from portagent.tracing.importer import import_cassette


def _of(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def test_chat_sse_gzip_parallel_calls_results_in_other_order() -> None:
    events = import_cassette(DATA / "chat_sse_gzip.yaml")
    calls, results = _of(events, "tool.call"), _of(events, "tool.result")
    assert [(c.call_id, c.tool, c.args) for c in calls] == [
        ("call_1", "get_weather", {"city": "Paris"}),
        ("call_2", "get_weather", {"city": "Rome"}),
    ]
    # the arguments of call_1 arrived in three pieces with a space after the colon: parsed, then hashed
    assert calls[0].args_hash == args_hash({"city": "Paris"})
    # results are emitted in the order the request carried them, each on its own call
    assert [(r.call_id, r.output) for r in results] == [
        ("call_2", '{"forecast": "rain"}'),
        ("call_1", '{"forecast": "sunny"}'),
    ]
    first, second = _of(events, "model.call")
    assert (first.input_tokens, first.output_tokens, first.cache_read_tokens, first.reasoning_tokens) == (
        120,
        30,
        64,
        7,
    )
    assert (first.finish_reason, first.response_id, first.provider_details["stream"]) == (
        "tool_calls",
        "chatcmpl-syn1",
        True,
    )
    assert (second.input_tokens, second.output_tokens, second.finish_reason) == (180, 9, "stop")
    assert events[-1].final_output == "Paris: sunny. Rome: rain."
    assert (
        events[0].model == "gpt-4.1-mini"
        and second.provider_details["response_model"] == "gpt-4.1-mini-2025-04-14"
    )


def test_anthropic_cache_buckets_are_added_to_input_and_kept_apart() -> None:
    events = import_cassette(DATA / "anthropic_claude_code.yaml")
    first, second = _of(events, "model.call")
    # Anthropic input_tokens 10 excludes the buckets: OTel input = 10 + 1500 read + 200 written
    assert (first.input_tokens, first.cache_read_tokens, first.cache_write_tokens, first.output_tokens) == (
        1710,
        1500,
        200,
        40,
    )
    assert (second.input_tokens, second.cache_read_tokens, second.cache_write_tokens) == (1725, 1700, 0)
    done = events[-1]
    assert (done.input_tokens, done.cache_read_tokens, done.cache_write_tokens, done.output_tokens) == (
        3435,
        3200,
        200,
        52,
    )


def test_claude_code_traffic_mcp_names_reminders_errors_and_skipped_count_tokens() -> None:
    events = import_cassette(DATA / "anthropic_claude_code.yaml")
    started = events[0]
    assert started.input == "Refund invoice 42"  # the <system-reminder> block is not the user's text
    assert started.provider_details["skipped_interactions"] == [
        {"index": 0, "method": "POST", "uri": "https://api.anthropic.com/v1/messages/count_tokens?beta=true"}
    ]
    (call,), (result,) = _of(events, "tool.call"), _of(events, "tool.result")
    assert (call.tool, call.via, call.args) == ("get_invoice", "mcp", {"invoice_id": 42})
    assert call.provider_details["vendor_tool_name"] == "mcp__billing__get_invoice"
    # is_error → ok false with the catalogue's handler_error; the appended reminder is stripped
    assert (result.ok, result.error, result.output) == (False, "handler_error", "invoice 42 not found")
    assert events[-1].final_output == "Invoice 42 does not exist."


def test_gemini_calls_without_ids_pair_by_order_and_wrappers_are_unwrapped() -> None:
    events = import_cassette(DATA / "gemini_parallel_no_ids.yaml")
    calls, results = _of(events, "tool.call"), _of(events, "tool.result")
    assert [c.args for c in calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert all("vendor_call_id" not in c.provider_details for c in calls)
    assert [(r.call_id, r.ok, r.error, r.output, r.provider_details["paired_by"]) for r in results] == [
        ("call_1", True, None, {"forecast": "sunny"}, "order"),  # ADK's {"result": …} wrapper removed
        ("call_2", False, "handler_error", "station offline", "order"),  # {"error": …} → not ok
    ]
    first = _of(events, "model.call")[0]
    # promptTokenCount includes the cached part; output = candidates 20 + thoughts 15
    assert (first.input_tokens, first.cache_read_tokens, first.output_tokens, first.reasoning_tokens) == (
        300,
        256,
        35,
        15,
    )
    assert (first.response_id, first.finish_reason) == ("gem_syn1", "tool_calls")
    assert events[-1].final_output == "Paris is sunny; Rome is unknown."


def test_responses_json_reasoning_retry_after_429_and_previous_response_id() -> None:
    events = import_cassette(DATA / "responses_retry_reasoning.yaml")
    assert [e.type for e in events] == [
        "run.started",
        "model.call",
        "tool.call",
        "tool.result",
        "error",
        "model.call",
        "run.completed",
    ]
    first, second = _of(events, "model.call")
    assert (first.input_tokens, first.output_tokens, first.cache_read_tokens, first.reasoning_tokens) == (
        2000,
        300,
        1024,
        256,
    )
    assert (second.cache_read_tokens, second.provider_details["interaction"]) == (2048, 2)
    (result,) = _of(events, "tool.result")  # the retry resends the result: emitted once
    assert (result.output, result.provider_details["interaction"]) == ("4", 1)
    (error,) = _of(events, "error")
    assert (error.error_type, error.retryable, error.provider_details["http_status"]) == (
        "rate_limit_exceeded",
        True,
        429,
    )
    assert error.message == "Rate limit reached for o4-mini"
    done = events[-1]
    assert (done.status, done.final_output, done.model_calls, done.input_tokens, done.reasoning_tokens) == (
        "completed",
        "2+2 = 4",
        2,
        4100,
        256,
    )
    assert events[0].provider_details["skipped_interactions"][0]["uri"].endswith("/v1/traces/ingest")


def test_truncated_stream_keeps_what_arrived_and_fails_the_run() -> None:
    events = import_cassette(DATA / "anthropic_truncated_stream.yaml")
    (call,) = _of(events, "model.call")
    assert (call.finish_reason, call.provider_details["stream_incomplete"], call.input_tokens) == (
        "error",
        True,
        12,
    )
    done = events[-1]
    assert (done.status, done.stop_reason, done.final_output) == (
        "failed",
        "provider_error",
        "Once upon a time",
    )


def test_call_never_answered_keeps_no_result_and_malformed_arguments_stay_raw() -> None:
    events = import_cassette(DATA / "chat_unanswered_call.yaml")
    (call,) = _of(events, "tool.call")
    assert not _of(events, "tool.result")
    assert (call.args, call.args_hash, call.provider_details["args_not_json"]) == (
        '{"path": "x"',
        args_hash('{"path": "x"'),
        True,
    )
    done = events[-1]
    assert (done.status, done.stop_reason, done.final_output) == ("cancelled", "recording_ended", None)
    assert done.provider_details["calls_without_result"] == ["call_1"]


# -- inline cassettes: other serializers and layouts -----------------------------------------------------

CHAT_REQ = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
CHAT_RESP = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}


def _cassette(tmp_path: Path, interactions: list[dict[str, Any]], name: str = "c.yaml", **top: Any) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1, **top}))
    return path


def _inter(uri: str, req: Any, resp: Any, status: int = 200, **resp_headers: str) -> dict[str, Any]:
    return {
        "request": {"method": "POST", "uri": uri, "body": json.dumps(req), "headers": {}},
        "response": {
            "status": {"code": status, "message": ""},
            "headers": {k: [v] for k, v in resp_headers.items()},
            "body": {"string": resp if isinstance(resp, str | bytes) else json.dumps(resp)},
        },
    }


def test_python2_era_unicode_tags_and_other_tags_load_as_plain_data(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(
        "interactions:\n- request:\n    method: !!python/unicode POST\n"
        "    uri: !!python/unicode https://api.openai.com/v1/chat/completions\n"
        f"    body: !!python/unicode '{json.dumps(CHAT_REQ)}'\n"
        "    headers: !CaseInsensitiveDict {content-type: [application/json]}\n"
        "  response:\n    status: {code: 200, message: OK}\n    headers: {}\n"
        f"    body: {{string: !!python/str '{json.dumps(CHAT_RESP)}'}}\n"
        "version: 1\n"
    )
    events = import_cassette(path)
    assert events[-1].final_output == "Hello!" and events[1].input_tokens == 5


def test_python_object_tags_are_never_constructed(tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text("interactions: !!python/object/apply:os.system ['echo pwned']\nversion: 1\n")
    # read as the plain list ['echo pwned'], which is then not an interaction
    with pytest.raises(RecordingError, match="interaction 0: needs a 'request'"):
        import_cassette(path)


def test_json_serializer_cassette(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "interactions": [_inter("https://api.openai.com/v1/chat/completions", CHAT_REQ, CHAT_RESP)],
            }
        )
    )
    assert import_cassette(path)[-1].final_output == "Hello!"


def test_gzip_without_content_encoding_header_and_binary_request_body(tmp_path: Path) -> None:
    inter = _inter(
        "https://api.openai.com/v1/chat/completions", CHAT_REQ, gzip.compress(json.dumps(CHAT_RESP).encode())
    )
    inter["request"]["body"] = json.dumps(CHAT_REQ).encode()  # !!binary request body
    events = import_cassette(_cassette(tmp_path, [inter]))
    assert events[-1].final_output == "Hello!"


def test_pydantic_ai_parsed_body_on_both_sides(tmp_path: Path) -> None:
    inter = {
        "request": {
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions",
            "headers": {},
            "parsed_body": CHAT_REQ,
        },
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "parsed_body": CHAT_RESP},
    }
    assert import_cassette(_cassette(tmp_path, [inter]))[-1].final_output == "Hello!"


def test_gemini_json_array_stream_cut_mid_array_keeps_whole_elements(tmp_path: Path) -> None:
    piece = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}],
        "usageMetadata": {"promptTokenCount": 4},
        "responseId": "r1",
        "modelVersion": "gemini-2.5-flash",
    }
    body = "[" + json.dumps(piece) + '\n,\r\n{"candidates": [{"content": {"parts": [{"te'
    inter = _inter(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        body,
    )
    events = import_cassette(_cassette(tmp_path, [inter]))
    call = events[1]
    assert (call.finish_reason, call.input_tokens, call.provider_details["stream_incomplete"]) == (
        "error",
        4,
        True,
    )
    assert (events[-1].status, events[-1].final_output) == ("failed", "Hel")


def test_model_traffic_behind_an_unknown_path_is_recognised_by_its_bodies(tmp_path: Path) -> None:
    proxied = _inter("https://llm-gateway.internal/team-a/complete", CHAT_REQ, CHAT_RESP)
    unrelated = _inter("https://weather.example/api", {"city": "Paris"}, {"forecast": "sunny"})
    events = import_cassette(_cassette(tmp_path, [unrelated, proxied]))
    assert events[0].provider == "openai" and events[-1].final_output == "Hello!"
    assert events[0].provider_details["skipped_interactions"] == [
        {"index": 0, "method": "POST", "uri": "https://weather.example/api"}
    ]


def test_body_guess_tries_the_next_vendor_when_the_bodies_do_not_parse(tmp_path: Path) -> None:
    # Both bodies have "messages" and "max_tokens": Anthropic is tried first, its stream parser finds
    # no Anthropic event in a Chat stream, and Chat Completions is kept.
    chat_sse = (
        'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
        '"delta":{"content":"Hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    chat = _inter("https://proxy.internal/llm", {**CHAT_REQ, "max_tokens": 5, "stream": True}, chat_sse)
    events = import_cassette(_cassette(tmp_path, [chat], "chat.yaml"))
    assert (events[0].provider, events[1].provider_details["api"], events[-1].final_output) == (
        "openai",
        "openai.chat",
        "Hi",
    )
    anthropic_json = {
        "id": "msg_1",
        "type": "message",
        "model": "claude",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "Hello"}],
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    anth = _inter(
        "https://proxy.internal/llm",
        {"model": "claude", "messages": [{"role": "user", "content": "hi"}]},
        anthropic_json,
    )
    events = import_cassette(_cassette(tmp_path, [anth], "anth.yaml"))
    assert (events[0].provider, events[-1].final_output) == ("claude", "Hello")


def test_error_inside_a_200_stream_is_an_error_event(tmp_path: Path) -> None:
    body = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_e","model":"claude-haiku-4-5",'
        '"usage":{"input_tokens":3,"output_tokens":0}}}\n\n'
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    inter = _inter(
        "https://api.anthropic.com/v1/messages",
        {"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        body,
    )
    events = import_cassette(_cassette(tmp_path, [inter]))
    assert [e.type for e in events] == ["run.started", "model.call", "error", "run.completed"]
    assert (events[2].error_type, events[2].message) == ("overloaded_error", "Overloaded")
    assert events[-1].status == "failed"


def test_http_error_last_fails_the_run_with_gemini_status_name(tmp_path: Path) -> None:
    err = {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}
    inter = _inter(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        err,
        status=429,
    )
    events = import_cassette(_cassette(tmp_path, [inter]))
    assert [e.type for e in events] == ["run.started", "error", "run.completed"]
    assert (events[1].error_type, events[1].retryable) == ("RESOURCE_EXHAUSTED", True)
    assert (events[-1].status, events[-1].stop_reason, events[-1].model_calls) == (
        "failed",
        "provider_error",
        0,
    )
    assert events[0].model == "gemini-2.0-flash"  # from the URL


def test_emulator_server_header_labels_the_source(tmp_path: Path) -> None:
    inter = _inter(
        "http://127.0.0.1:8000/v1/chat/completions",
        CHAT_REQ,
        CHAT_RESP,
        server="portagent-emulator Python/3.11.7",
    )
    assert import_cassette(_cassette(tmp_path, [inter]))[0].source == "emulator"


def test_injected_clock_and_ids_and_agent_name(tmp_path: Path) -> None:
    path = _cassette(tmp_path, [_inter("https://api.openai.com/v1/chat/completions", CHAT_REQ, CHAT_RESP)])
    events = import_cassette(path, agent="support", clock=FixedClock(step_ms=1000), ids=IdFactory(seed="s"))
    assert events[0].run_id == IdFactory(seed="s").run_id()
    assert [e.ts for e in events] == [
        "2026-01-01T00:00:00.000Z",
        "2026-01-01T00:00:01.000Z",
        "2026-01-01T00:00:02.000Z",
    ]
    assert {e.agent for e in events} == {"support"}
    default = import_cassette(path)
    assert default[0].agent == "c" and default[0].run_id != events[0].run_id


def test_import_opens_no_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("trace import tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    for path in sorted(DATA.glob("*.yaml")):
        import_cassette(path)


# -- corrupted cassettes: a clear RecordingError naming the file ------------------------------------------

CORRUPT: list[tuple[str, str, str]] = [
    (
        "truncated",
        "interactions:\n- request:\n    uri: 'https://api.openai.com/v1/chat/completions\n",
        r"truncated\.yaml:\d+:\d+: not valid YAML .*truncated",
    ),
    ("not-a-cassette", "name: support-desk\ntools: [get_invoice]\n", "not a vcrpy cassette"),
    ("a-trace", '{"type": "run.started", "seq": 0}\n', "not a vcrpy cassette"),
    ("wrong-version", "interactions: []\nversion: 2\n", "format version 2 is not supported"),
    ("old-format", "- request: {uri: x}\n  response: {}\n", "pre-1.0 format"),
    ("empty", "interactions: []\nversion: 1\n", "has no interactions"),
    ("interaction-not-mapping", "interactions: [oops]\nversion: 1\n", "interaction 0: needs a 'request'"),
]


@pytest.mark.parametrize(("name", "text", "message"), CORRUPT, ids=[c[0] for c in CORRUPT])
def test_corrupted_cassette_raises_recording_error_naming_the_file(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    with pytest.raises(RecordingError, match=message) as info:
        import_cassette(path)
    assert str(path) in str(info.value) and info.value.exit_code == 1


def test_truncated_copy_of_a_real_layout_names_file_and_line(tmp_path: Path) -> None:
    text = (DATA / "anthropic_claude_code.yaml").read_text()
    path = tmp_path / "cut.yaml"
    path.write_text(text[: len(text) // 2] + "\n  - 'unterminated")
    with pytest.raises(RecordingError, match=r"cut\.yaml:\d+:\d+: not valid YAML"):
        import_cassette(path)


def test_unknown_vendor_traffic_only(tmp_path: Path) -> None:
    path = _cassette(
        tmp_path, [_inter("https://api.mistral.ai/v1/fim/completions", {"prompt": "x"}, {"ok": 1})]
    )
    with pytest.raises(
        RecordingError,
        match=r"no OpenAI .* traffic among its 1 interaction\(s\) "
        r"\(the first is POST https://api.mistral.ai/v1/fim/completions\)",
    ):
        import_cassette(path)


def test_a_cassette_mixing_vendors_is_refused(tmp_path: Path) -> None:
    anthropic = _inter(
        "https://api.anthropic.com/v1/messages",
        {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        {"type": "message", "id": "m1", "content": [], "stop_reason": "end_turn"},
    )
    openai = _inter("https://api.openai.com/v1/chat/completions", CHAT_REQ, CHAT_RESP)
    with pytest.raises(
        RecordingError, match=r"interaction 1 .*openai traffic in a cassette of anthropic traffic"
    ):
        import_cassette(_cassette(tmp_path, [anthropic, openai]))


def test_bad_bodies_on_a_model_endpoint_name_the_interaction(tmp_path: Path) -> None:
    bad_request = _inter("https://api.openai.com/v1/chat/completions", CHAT_REQ, CHAT_RESP)
    bad_request["request"]["body"] = "{not json"
    with pytest.raises(RecordingError, match=r"interaction 0 \(POST .*\): request body is not JSON"):
        import_cassette(_cassette(tmp_path, [bad_request], "a.yaml"))
    bad_response = _inter("https://api.openai.com/v1/chat/completions", CHAT_REQ, '{"choices": [')
    with pytest.raises(RecordingError, match=r"interaction 0 .*response is not a valid openai.chat response"):
        import_cassette(_cassette(tmp_path, [bad_response], "b.yaml"))
    bad_gzip = _inter("https://api.openai.com/v1/chat/completions", CHAT_REQ, b"\x1f\x8bnot-gzip")
    with pytest.raises(
        RecordingError, match=r"interaction 0 response: compressed body cannot be decompressed"
    ):
        import_cassette(_cassette(tmp_path, [bad_gzip], "c.yaml"))


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such cassette file"):
        import_cassette(tmp_path / "nope.yaml")


def test_require_path_fails_instead_of_skipping_under_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import _support

    monkeypatch.setattr(_support, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        _support.require_path(tmp_path / "absent", "vendor recordings")
