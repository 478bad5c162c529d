"""An answer the upstream breaks off is a dropped connection, never a kept exchange.

The recording/journal proxy (``recording/http_proxy.py``) relays the upstream's answer chunk by chunk.
When the upstream closed the connection early — a body shorter than its ``Content-Length`` (http.client
then just returns ``b""``), a chunked body without its last chunk, a reset mid-body — the proxy used to
finish the client's answer as if it were whole and keep it: the journal held a half answer as a good
200 (which a resume would serve again) and the SDK failed on half a JSON body as an ``sdk_error``.

Why not the emulator: it always answers whole, so the upstream here is a few lines of ``http.server``
on a loopback port that sends half of its answer and hangs up. The clients are the real SDKs — the
openai provider through portagent's runner (the run journal), and the ``anthropic`` client through a
recording proxy (the Claude Code cassette path).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import pytest
import yaml
from _support import EXAMPLES

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRecord, RunRequest
from portagent.recording.http_proxy import HttpProxy
from portagent.runtime.runner import RunConfig, arun_full

AGENT = EXAMPLES / "support_desk" / "agent.yaml"
BREAKS = ["short", "chunked", "reset"]
"""How the upstream breaks off: a body shorter than its Content-Length, a chunked body without its
last chunk, a connection reset after half the body."""

RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "status": "completed",
    "model": "gpt-4.1-mini",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Refunds within 30 days. " * 20, "annotations": []}],
        }
    ],
    "usage": {
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "Refunds within 30 days. " * 20}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 5},
}


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


STREAM = _sse(
    [
        {"type": "response.created", "sequence_number": 0, "response": {**RESPONSE, "status": "in_progress"}},
        {
            "type": "response.output_text.delta",
            "sequence_number": 1,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "Refunds within 30 days. " * 20,
            "logprobs": [],
        },
        {"type": "response.completed", "sequence_number": 2, "response": RESPONSE},
    ]
)


class _Upstream(ThreadingHTTPServer):
    daemon_threads = True
    how = "whole"
    hits = 0

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # the reset case closes the socket under the handler on purpose


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Upstream

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.hits += 1
        if self.path.endswith("/messages"):
            body, kind = json.dumps(MESSAGE).encode(), "application/json"
        elif request.get("stream"):
            body, kind = STREAM, "text/event-stream"
        else:
            body, kind = json.dumps(RESPONSE).encode(), "application/json"
        how = self.server.how
        self.send_response(200)
        self.send_header("Content-Type", kind)
        sent = body if how == "whole" else body[: len(body) // 2]
        if how == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(sent), sent))  # and no "0\r\n\r\n"
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(sent)
        self.wfile.flush()
        if how == "whole":
            return
        self.close_connection = True
        if how == "reset":  # SO_LINGER 0: the close sends RST instead of FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        else:
            self.connection.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def upstream() -> Iterator[_Upstream]:
    server = _Upstream(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()[1:]]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("how", BREAKS)
def test_a_journaled_run_keeps_no_broken_off_answer_and_fails_retryable(
    upstream: _Upstream, how: str, stream: bool, tmp_path: Path
) -> None:
    upstream.how = how
    url = f"http://127.0.0.1:{upstream.server_port}"
    out = tmp_path / "run"
    config = RunConfig(
        endpoint=Endpoint(source="live", base_url=url, api_key="sk-dummy-test"),
        out_dir=out,
        options=RunOptions(streaming=stream),
    )
    run = asyncio.run(
        arun_full(
            load_agent(AGENT), RunRequest(input="What is the refund deadline?", provider="openai"), config
        )
    )
    # the SDK saw a dropped connection (a retryable provider error), not half a JSON body (sdk_error)
    assert (run.result.status, run.result.stop_reason) == ("failed", "provider_error"), run.result.error
    assert "cannot reach the OpenAI endpoint" in (run.result.error or "")
    errors = [e for e in run.events if e.type == "error"]
    assert errors and errors[-1].retryable, errors
    # every request it sent reached the upstream, and the journal kept none of the answers as good
    assert upstream.hits >= 1
    lines = _lines(out / "journal" / "attempt-1.jsonl")
    assert not [ln for ln in lines if "response" in ln], lines
    assert [ln["seq"] for ln in lines if "broke off the answer" in ln.get("failed", "")] == list(
        range(upstream.hits)
    )
    journal = RunRecord.model_validate_json((out / "run.json").read_text()).attempts[-1].journal
    assert journal is not None and journal["live"] == 0 and journal["failed"] == upstream.hits


@pytest.mark.parametrize("how", BREAKS)
def test_a_recording_keeps_no_broken_off_answer(upstream: _Upstream, how: str, tmp_path: Path) -> None:
    cassette = tmp_path / "http.yaml"
    proxy = HttpProxy(upstream=f"http://127.0.0.1:{upstream.server_port}", cassette=cassette, mode="record")
    with proxy as url:
        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-dummy", max_retries=0)
        ask: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "What is the refund deadline?"}],
        }
        upstream.how = how
        with pytest.raises(anthropic.APIConnectionError):
            client.messages.create(**ask)
        upstream.how = "whole"  # the same upstream answering whole: that answer is kept
        assert client.messages.create(**ask).content[0].type == "text"
    proxy.save()
    kept = yaml.safe_load(cassette.read_text())["interactions"]
    assert len(kept) == 1 and json.loads(kept[0]["response"]["body"]["string"]) == MESSAGE
