"""``portagent a2a serve``: the card, message/send, streaming, tasks/get, tasks/cancel, approvals as
``input-required`` — JSON-RPC as any caller sends it (0.3 method names) and through the A2A SDK's own
client (1.0), against the support-desk agent whose model is the emulator."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
from _a2a_helpers import TOKEN
from _support import run_cli


def rpc(
    url: str, method: str, params: dict[str, Any], headers: dict[str, str] | None = None
) -> dict[str, Any]:
    r = httpx.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers, timeout=60
    )
    data: dict[str, Any] = r.json()
    return data


def send(url: str, text: str, task_id: str | None = None, **kw: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "user",
        "messageId": os.urandom(6).hex(),
        "parts": [{"kind": "text", "text": text}],
    }
    if task_id:
        message["taskId"] = task_id
    return rpc(url, "message/send", {"message": message}, **kw)


def methods(log: Path) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [(r["method"], r["text"]) for r in rows]


def test_card_is_generated_from_the_spec(served: tuple[str, Path]) -> None:
    url, _ = served
    card = httpx.get(url + ".well-known/agent-card.json").json()
    assert card["name"] == "support_desk" and card["version"] == "1.0.0"
    assert card["description"] == "Answers student-services questions and opens tickets."
    assert card["capabilities"]["streaming"] is True
    assert card["supportedInterfaces"][0]["url"] == url
    (skill,) = card["skills"]
    assert skill["id"] == "support_desk"
    assert {"search_policy", "send_email", "billing_specialist"} <= set(skill["tags"])
    assert "securitySchemes" not in card  # no token: nothing to declare


def test_message_send_runs_the_agent_and_returns_the_artifact(served: tuple[str, Path]) -> None:
    url, log = served
    task = send(url, "What is the refund deadline?")["result"]
    assert task["status"]["state"] == "completed"
    (artifact,) = task["artifacts"]
    assert "30 days" in artifact["parts"][0]["text"]
    meta = task["metadata"]["portagent"]
    assert meta["status"] == "completed" and meta["run_id"].startswith("run_")
    got = rpc(url, "tasks/get", {"id": task["id"]})["result"]
    assert got["status"]["state"] == "completed" and got["artifacts"] == task["artifacts"]
    assert ("message/send", "What is the refund deadline?") in methods(log)


def test_approval_is_input_required_until_the_card_is_decided(served: tuple[str, Path]) -> None:
    url, _ = served
    first = send(url, "Email ana.garcia@uni.example that her DNI is missing.")["result"]
    assert first["status"]["state"] == "input-required"
    (card_id,) = first["metadata"]["portagent"]["pending_approvals"]
    assert card_id in first["status"]["message"]["parts"][0]["text"]
    # another message while the card is pending: still waiting, nothing sent
    again = send(url, "any news?", first["id"])["result"]
    assert again["status"]["state"] == "input-required"
    assert "still waiting for approval" in again["status"]["message"]["parts"][0]["text"]
    code, out, err = run_cli("approvals", "approve", card_id, "--reviewer", "dean")
    assert code == 0, err
    done = send(url, "approved, go on", first["id"])["result"]
    assert done["status"]["state"] == "completed", done["status"]
    assert '"status": "sent"' in done["artifacts"][0]["parts"][0]["text"]
    # same run, resumed: attempt 2 of the run that paused
    assert done["metadata"]["portagent"]["run_id"] == first["metadata"]["portagent"]["run_id"]
    assert done["metadata"]["portagent"]["attempt"] == 2


def test_cancel_a_waiting_task(served: tuple[str, Path]) -> None:
    url, _ = served
    task = send(url, "Email ana.garcia@uni.example that her DNI is missing.")["result"]
    assert task["status"]["state"] == "input-required"
    canceled = rpc(url, "tasks/cancel", {"id": task["id"]})["result"]
    assert canceled["status"]["state"] == "canceled"
    assert rpc(url, "tasks/get", {"id": task["id"]})["result"]["status"]["state"] == "canceled"
    finished = send(url, "What is the refund deadline?")["result"]
    error = rpc(url, "tasks/cancel", {"id": finished["id"]})["error"]
    assert error["code"] == -32002  # TaskNotCancelable: a completed task stays completed


def test_streaming_through_the_sdk_client(served: tuple[str, Path]) -> None:
    """The A2A SDK's own client (A2A 1.0 JSON-RPC, SendStreamingMessage) reads the card and streams."""
    url, _ = served

    async def go() -> list[Any]:
        from a2a.client import ClientConfig, create_client
        from a2a.types import Message, Part, Role, SendMessageRequest

        client = await create_client(url, ClientConfig(streaming=True))
        message = Message(
            role=Role.ROLE_USER, message_id="s1", parts=[Part(text="What is the refund deadline?")]
        )
        events = [e async for e in client.send_message(SendMessageRequest(message=message))]
        await client.close()
        return events

    events = asyncio.run(go())
    kinds = [e.WhichOneof("payload") for e in events]
    assert "status_update" in kinds and "artifact_update" in kinds
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    from a2a.types import TaskState

    assert TaskState.TASK_STATE_WORKING in states and states[-1] == TaskState.TASK_STATE_COMPLETED
    artifact = next(e.artifact_update.artifact for e in events if e.HasField("artifact_update"))
    assert "30 days" in artifact.parts[0].text


def test_token_protects_every_call_but_the_card(served_with_token: tuple[str, Path]) -> None:
    url, log = served_with_token
    card = httpx.get(url + ".well-known/agent-card.json").json()
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    r = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}})
    assert r.status_code == 401
    wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer nope-nope-nope-nope"})
    assert wrong.status_code == 401
    ok = send(url, "What is the refund deadline?", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok["result"]["status"]["state"] == "completed"
    assert [m for m, _ in methods(log)] == ["message/send"]  # refused calls never reached the agent


def test_structured_output_is_a_data_artifact_and_json_mode(tmp_path: Path) -> None:
    from a2a.helpers.proto_helpers import get_data_parts

    from portagent.a2a.card import build_card
    from portagent.a2a.server import _output_parts
    from portagent.contracts.bundle import load_agent

    spec = tmp_path / "agent.yaml"
    spec.write_text(
        "kind: agent\nschema_version: 1\nname: grader\ninstructions: Grade the essay.\n"
        "output_schema: {type: object, properties: {grade: {type: string}}, required: [grade]}\n"
    )
    card = build_card(load_agent(spec), "http://127.0.0.1:1/", secured=False)
    assert list(card.default_output_modes) == ["application/json"]
    assert card.description == "Grade the essay."  # no description: the instructions' first line
    (part,) = _output_parts({"grade": "B"})
    assert part.media_type == "application/json" and get_data_parts([part]) == [{"grade": "B"}]


def test_text_that_is_not_unicode_is_refused_not_crashed_on(served: tuple[str, Path]) -> None:
    """JSON allows ``"\\udcff"``; no trace, hash, file or protobuf message can hold the lone surrogate it
    decodes to. The call gets a JSON-RPC invalid-params error naming where, no task or run starts, and the
    server keeps serving."""
    url, log = served
    message = {
        "role": "user",
        "messageId": "m-surrogate",
        "parts": [{"kind": "text", "text": "refund \udcff"}],
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {"message": message}})
    assert "\\udcff" in body  # the escape, as a client sends it (ensure_ascii)
    r = httpx.post(url, content=body, headers={"content-type": "application/json"}, timeout=60)
    error = r.json()["error"]
    assert r.json()["id"] == 7 and error["code"] == -32602
    assert error["message"] == (
        "Invalid params: params.message.parts[0].text is not valid Unicode text (a lone surrogate)"
    )
    assert ("message/send", "refund \ufffd") not in methods(log)  # refused before the log and the SDK
    assert send(url, "What is the refund deadline?")["result"]["status"]["state"] == "completed"
