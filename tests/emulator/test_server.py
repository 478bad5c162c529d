"""The server: concurrency, the request log (masking, JSONL), control routes, modes, the public API."""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path

from _emulator_helpers import (
    DUMMY_ANTHROPIC_KEY,
    DUMMY_GOOGLE_KEY,
    DUMMY_OPENAI_KEY,
    WEATHER,
    emulator,
    post,
)

import portagent.emulator
from portagent.emulator.requestlog import mask_header, mask_query


def test_public_api_is_small() -> None:
    assert sorted(portagent.emulator.__all__) == [
        "CONVERSATION_HEADER",
        "EmulatorScript",
        "RunningEmulator",
        "load_script",
        "serve",
    ]


def test_urls(tmp_path: Path) -> None:
    with emulator(WEATHER) as emu:
        assert emu.port > 0 and emu.base_url == f"http://127.0.0.1:{emu.port}"
        assert emu.openai_base_url == emu.base_url + "/v1"
        assert emu.anthropic_base_url == emu.gemini_base_url == emu.base_url
        assert emu.env()["GOOGLE_GEMINI_BASE_URL"] == emu.base_url


def test_fifty_concurrent_requests_from_ten_clients() -> None:
    """10 keep-alive clients × 5 requests, all at once, mixed vendors: every answer right, one log entry each."""
    bodies = {
        "/v1/chat/completions": {"model": "m", "messages": [{"role": "user", "content": "hello {n}"}]},
        "/v1/responses": {"model": "m", "input": "hello {n}", "stream": True},
        "/v1/messages": {
            "model": "m",
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "hello {n}"}],
        },
        "/v1beta/models/gemini-2.5-flash:generateContent": {"contents": [{"parts": [{"text": "hello {n}"}]}]},
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse": {
            "contents": [{"parts": [{"text": "hello {n}"}]}]
        },
    }
    results: list[tuple[int, int, bytes]] = []
    lock = threading.Lock()
    start = threading.Barrier(10)

    with emulator(WEATHER) as emu:

        def client(cid: int) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=30)
            start.wait()
            for i, (path, body) in enumerate(bodies.items()):
                n = cid * 5 + i
                payload = json.dumps(body).replace("{n}", str(n)).encode()
                conn.request("POST", path, payload, {"Content-Type": "application/json", "x-client": str(n)})
                resp = conn.getresponse()
                data = resp.read()
                with lock:
                    results.append((n, resp.status, data))
            conn.close()

        threads = [threading.Thread(target=client, args=(c,)) for c in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        log = emu.requests()
    assert len(results) == 50 and all(status == 200 for _, status, _ in results)
    assert all(b"Hello there!" in data for _, _, data in results)
    assert sorted(int(r["headers"]["x-client"]) for r in log) == list(range(50))
    assert len({r["seq"] for r in log}) == 50


def test_request_log_masks_secrets_but_shows_they_were_sent(tmp_path: Path) -> None:
    log_file = tmp_path / "log" / "requests.jsonl"
    log_file.parent.mkdir()
    with emulator(WEATHER, log_path=log_file) as emu:
        post(
            emu.openai_base_url + "/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            {"Authorization": f"Bearer {DUMMY_OPENAI_KEY}", "Cookie": "session=abc"},
        )
        post(
            emu.anthropic_base_url + "/v1/messages",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
            {"x-api-key": DUMMY_ANTHROPIC_KEY},
        )
        post(
            emu.gemini_base_url + f"/v1beta/models/g:generateContent?key={DUMMY_GOOGLE_KEY}",
            {"contents": [{"parts": [{"text": "hi"}]}]},
            {"x-goog-api-key": DUMMY_GOOGLE_KEY, "api-key": "k"},
        )
        memory = emu.requests()
    on_disk = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert on_disk == json.loads(json.dumps(memory))
    text = log_file.read_text()
    for secret in (DUMMY_OPENAI_KEY, DUMMY_ANTHROPIC_KEY, DUMMY_GOOGLE_KEY, "session=abc"):
        assert secret not in text
    assert memory[0]["headers"]["authorization"] == "Bearer <masked>"
    assert memory[0]["headers"]["cookie"] == "<masked>"
    assert memory[1]["headers"]["x-api-key"] == "<masked>"
    assert (
        memory[2]["headers"]["x-goog-api-key"] == "<masked>" and memory[2]["headers"]["api-key"] == "<masked>"
    )
    assert memory[2]["query"] == {"key": "<masked>"}
    entry = memory[0]
    assert {
        "seq",
        "time",
        "method",
        "path",
        "query",
        "headers",
        "body",
        "api",
        "conversation",
        "cursor",
        "status",
        "reply",
        "notes",
        "handled_ms",
    } <= set(entry)
    assert entry["body"]["messages"][0]["content"] == "hi" and entry["reply"]["text"] == "Hello there!"
    assert mask_header("Authorization", "") == "" and mask_header("x-api-key", "") == ""
    assert mask_header("authorization", "token") == "<masked>"
    assert mask_query({"alt": ["sse"], "key": [""]}) == {"alt": "sse", "key": ""}


def test_unknown_conversation_and_malformed_body_are_logged() -> None:
    with emulator(WEATHER) as emu:
        post(
            emu.openai_base_url + "/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "??"}]},
        )
        post(emu.anthropic_base_url + "/v1/messages", b"{oops")
        log = emu.requests()
    assert [r["status"] for r in log] == [400, 400]
    assert "no conversation matches" in log[0]["error"]
    assert "not valid JSON" in log[1]["error"] and log[1]["body"] == {"_raw": "{oops"}


def test_control_routes_and_reset() -> None:
    script = json.loads(json.dumps(WEATHER))
    script["conversations"][1]["turns"][0]["fault"] = {"type": "http_500", "times": 1}
    with emulator(script) as emu:
        hello = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert post(emu.openai_base_url + "/chat/completions", hello)[0] == 500
        assert post(emu.openai_base_url + "/chat/completions", hello)[0] == 200
        status, _, _ = post(emu.base_url + "/_emulator/reset", {})
        assert status == 200
        assert post(emu.openai_base_url + "/chat/completions", hello)[0] == 500
        emu.reset()
        assert post(emu.openai_base_url + "/chat/completions", hello)[0] == 500
        conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=10)
        conn.request("GET", "/_emulator/requests")
        assert len(json.loads(conn.getresponse().read())) == 4
        conn.request("GET", "/_emulator/health")
        assert json.loads(conn.getresponse().read())["conversations"] == ["weather", "hello"]


def test_latency_is_applied() -> None:
    script = json.loads(json.dumps(WEATHER))
    script["conversations"][1]["turns"][0]["latency_ms"] = 200
    with emulator(script) as emu:
        t0 = time.monotonic()
        post(
            emu.openai_base_url + "/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert time.monotonic() - t0 >= 0.2


def test_subprocess_mode_with_script_object() -> None:
    with emulator(WEATHER, mode="subprocess") as emu:
        status, _, body = post(
            emu.anthropic_base_url + "/v1/messages",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hello"}]},
        )
        assert status == 200 and json.loads(body)["content"][0]["text"] == "Hello there!"
        assert emu.requests()[0]["conversation"] == "hello"
        assert emu.log_path is not None and emu.log_path.exists()


def test_server_stops_cleanly_with_a_stalled_stream_open() -> None:
    script = json.loads(json.dumps(WEATHER))
    script["conversations"][1]["turns"][0]["fault"] = {"type": "stall", "after_events": 1, "stall_ms": 30000}
    with emulator(script) as emu:
        conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=10)
        conn.request(
            "POST",
            "/v1/responses",
            json.dumps({"model": "m", "input": "hi", "stream": True}),
            {"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        assert resp.status == 200
        t0 = time.monotonic()
    assert time.monotonic() - t0 < 10  # shutdown does not wait for the stalled handler thread (30 s)
    conn.close()
