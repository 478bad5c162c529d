"""``trace import`` pairs each tool result with its call when a vendor gives a later turn's call an id an
earlier call had (``call_0`` twice): the second result was taken for the first one resent with the history,
and the second call was left "without result" although the next request carried it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from portagent.tracing.importer import import_cassette

URI = "https://api.openai.com/v1/chat/completions"


def _exchange(messages: list[dict[str, Any]], answer: dict[str, Any], finish: str) -> dict[str, Any]:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": answer, "finish_reason": finish}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }
    return {
        "request": {
            "method": "POST",
            "uri": URI,
            "body": json.dumps({"model": "gpt-4o-mini", "messages": messages}),
            "headers": {},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": json.dumps(body)},
        },
    }


def _call(name: str) -> dict[str, Any]:
    tool_calls = [{"id": "call_0", "type": "function", "function": {"name": name, "arguments": "{}"}}]
    return {"role": "assistant", "content": None, "tool_calls": tool_calls}


def test_a_reused_call_id_pairs_each_result_with_its_own_call(tmp_path: Path) -> None:
    user = [{"role": "user", "content": "go"}]
    first, second = _call("lookup"), _call("fetch")
    answered = [*user, first, {"role": "tool", "tool_call_id": "call_0", "content": "LOOKUP-RESULT"}]
    both = [*answered, second, {"role": "tool", "tool_call_id": "call_0", "content": "FETCH-RESULT"}]
    cassette = tmp_path / "reuse.yaml"
    cassette.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "interactions": [
                    _exchange(user, first, "tool_calls"),
                    _exchange(answered, second, "tool_calls"),
                    _exchange(both, {"role": "assistant", "content": "done"}, "stop"),
                ],
            }
        )
    )
    events = import_cassette(cassette)
    calls = {e.call_id: e.tool for e in events if e.type == "tool.call"}
    results = {e.call_id: e.output for e in events if e.type == "tool.result"}
    assert sorted(calls.values()) == ["fetch", "lookup"]
    assert {calls[c]: out for c, out in results.items()} == {
        "lookup": "LOOKUP-RESULT",
        "fetch": "FETCH-RESULT",
    }
    done = [e for e in events if e.type == "run.completed"][-1]
    assert not done.provider_details.get("calls_without_result"), done.provider_details


def test_a_cassette_cut_short_is_refused_not_imported_as_a_whole_run(tmp_path: Path) -> None:
    """A copy cut off mid-file lost its last response's ``status`` and vcrpy's closing ``version: 1``: it
    imported as a complete, successful run (a missing status read as 200)."""
    from portagent.contracts.errors import RecordingError

    user = [{"role": "user", "content": "go"}]
    whole = {
        "version": 1,
        "interactions": [_exchange(user, {"role": "assistant", "content": "done"}, "stop")],
    }
    no_version = tmp_path / "no_version.yaml"
    no_version.write_text(yaml.safe_dump({"interactions": whole["interactions"]}))
    no_status = tmp_path / "no_status.yaml"
    cut = json.loads(json.dumps(whole))
    del cut["interactions"][0]["response"]["status"]
    no_status.write_text(yaml.safe_dump(cut))
    for path, why in ((no_version, "no 'version'"), (no_status, "no status code")):
        try:
            import_cassette(path)
        except RecordingError as e:
            assert why in str(e) and "truncated" in str(e), e
        else:
            raise AssertionError(f"{path.name} was imported")
