"""``--request-log`` never fails a request: the log line is read from the raw body before the SDK checks
it, and a message whose text is not a string (``null``, a number, an object, a boolean, or ``parts`` not a
list) used to answer HTTP 500 with a traceback from the log's join. Real HTTP against a real server; the
SDK's own answer (JSON-RPC Invalid Request) is what the caller must get, as without the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from _a2a_helpers import start


def _send(url: str, message: dict[str, Any]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    return httpx.post(url, json=body, headers={"Content-Type": "application/json"}, timeout=30)


BAD_PARTS: list[Any] = [
    [{"kind": "text", "text": None}],
    [{"kind": "text", "text": 5}],
    [{"kind": "text", "text": {"a": 1}}],
    [{"kind": "text", "text": True}],
    5,
]


def test_a_message_text_of_the_wrong_type_gets_the_sdks_answer_and_one_log_line(tmp_path: Path) -> None:
    with start(tmp_path) as (url, log):
        answers = [
            _send(url, {"role": "user", "messageId": f"m{i}", "parts": parts})
            for i, parts in enumerate(BAD_PARTS)
        ]
    for parts, answer in zip(BAD_PARTS, answers, strict=True):
        assert answer.status_code == 200, (parts, answer.text)
        assert answer.json()["error"]["code"] == -32600, (parts, answer.text)
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(e["method"], e["text"]) for e in lines] == [("message/send", "")] * len(BAD_PARTS)


@pytest.mark.parametrize("body", [b"[1, 2]", b'"text"', b'{"method": 5, "params": {"id": {"x": 1}}}'])
def test_a_body_that_is_not_a_call_object_is_logged_without_failing(tmp_path: Path, body: bytes) -> None:
    with start(tmp_path) as (url, log):
        answer = httpx.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=30)
    assert answer.status_code != 500, answer.text
    (entry,) = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert entry["method"] is None and entry["task_id"] is None
