"""The OTel export of a model call whose usage is unknown leaves usage and cost out, never 0 tokens for $0.

``trace import`` of an answer without ``usage`` marks its tokens unknown (``tokens_unknown``, cost None);
the export used to put ``gen_ai.usage.* = 0`` and ``portagent.cost_usd = 0`` on its chat span and the
partial sum of the other calls on the agent span, shown by a backend as the run's complete totals.
The cassette is a synthetic Chat Completions recording: a tool call with usage, then an answer without.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

pytest.importorskip("opentelemetry.sdk")

CASSETTE = """\
interactions:
- request:
    body: '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Add 2 and 2"}],"tools":[{"type":"function","function":{"name":"add","parameters":{"type":"object"}}}]}'
    headers:
      content-type:
      - application/json
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: '{"id": "chatcmpl-a1", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18", "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_add", "type": "function", "function": {"name": "add", "arguments": "{\\"a\\": 2, \\"b\\": 2}"}}]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58}}'
    headers:
      content-type:
      - application/json
    status:
      code: 200
      message: OK
- request:
    body: '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Add 2 and 2"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_add","type":"function","function":{"name":"add","arguments":"{\\"a\\": 2, \\"b\\": 2}"}}]},{"role":"tool","tool_call_id":"call_add","content":"4"}],"tools":[{"type":"function","function":{"name":"add","parameters":{"type":"object"}}}]}'
    headers:
      content-type:
      - application/json
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: '{"id": "chatcmpl-a2", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18", "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}]}'
    headers:
      content-type:
      - application/json
    status:
      code: 200
      message: OK
version: 1
"""


def _spans(tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    (tmp_path / "c.yaml").write_text(CASSETTE)
    code, out, err = run_cli("trace", "import", str(tmp_path / "c.yaml"))
    assert code == 0, err
    trace = tmp_path / "trace.jsonl"
    trace.write_text(out)
    done = json.loads(out.strip().splitlines()[-1])
    assert (done["type"], done["cost_usd"], done["provider_details"]["tokens_unknown"]) == (
        "run.completed",
        None,
        True,
    )
    code, _, err = run_cli("trace", "export", str(trace), "--otel-json", str(tmp_path / "o.json"))
    assert code == 0, err
    data = json.loads((tmp_path / "o.json").read_text())
    by_name: dict[str, list[dict[str, Any]]] = {}
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                attrs = {kv["key"]: next(iter(kv["value"].values())) for kv in s["attributes"]}
                by_name.setdefault(s["name"].split()[0], []).append(attrs)
    return by_name


def test_unknown_usage_is_left_out_not_zero(tmp_path: Path) -> None:
    spans = _spans(tmp_path)
    known, unknown = spans["chat"]
    assert known["gen_ai.usage.input_tokens"] == "50" and "portagent.cost_usd" in known
    assert unknown["portagent.tokens_unknown"] is True
    assert not [k for k in unknown if k.startswith("gen_ai.usage.") or k == "portagent.cost_usd"]
    # The agent span says unknown rather than the known call's 50 tokens presented as the run's total.
    (root,) = spans["invoke_agent"]
    assert root["portagent.tokens_unknown"] is True and root["portagent.cost_source"] == "unknown"
    assert not [k for k in root if k.startswith("gen_ai.usage.") or k == "portagent.cost_usd"]
