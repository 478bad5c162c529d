"""``a2a serve``: a task cancelled while it waits for approval withdraws its card and ends its run; the
hints a waiting task gives (to the remote caller, and from ``approvals approve``) name the step that
resumes it — a message on the task — and following that step completes the task. The cancel goes
through the A2A SDK's own client."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
from _support import run_cli

from portagent.runtime.runstore import RunStore
from portagent.tools.approvals import ApprovalStore

EMAIL = "Email ana.garcia@uni.example that her DNI is missing."


def _send(url: str, text: str, task_id: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "user", "messageId": os.urandom(6).hex(), "parts": [{"text": text}]}
    if task_id:
        message["taskId"] = task_id
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    result: dict[str, Any] = httpx.post(url, json=body, timeout=60).json()["result"]
    return result


def _cancel(url: str, task_id: str) -> Any:
    async def go() -> Any:
        from a2a.client import ClientConfig, create_client
        from a2a.types import CancelTaskRequest

        client = await create_client(url, ClientConfig(streaming=False))
        try:
            return await client.cancel_task(CancelTaskRequest(id=task_id))
        finally:
            await client.close()

    return asyncio.run(go())


def test_cancel_of_a_waiting_task_withdraws_its_card_and_ends_its_run(served: tuple[str, Path]) -> None:
    url, _ = served
    task = _send(url, EMAIL)
    assert task["status"]["state"] == "input-required"
    (card_id,) = task["metadata"]["portagent"]["pending_approvals"]
    canceled = _cancel(url, task["id"])
    from a2a.types import TaskState

    assert canceled.status.state == TaskState.TASK_STATE_CANCELED

    store = ApprovalStore()
    card = store.get(card_id)
    store.close()
    assert card.status == "superseded" and "canceled" in (card.status_reason or "")
    assert card_id in canceled.status.message.parts[0].text  # the caller is told what was withdrawn
    code, _, err = run_cli("approvals", "approve", card_id)  # nobody can approve a withdrawn call
    assert code == 2 and "superseded" in err

    runs = RunStore()
    prior = runs.get("a2a:" + task["id"])
    runs.close()
    assert prior is not None and prior.status == "cancelled" and prior.pending == []
    assert prior.trace_path is not None
    record = json.loads((Path(prior.trace_path).parent / "run.json").read_text())
    assert record["result"]["status"] == "cancelled"
    assert record["result"]["stop_reason"] == "cancelled_by_caller"


def test_hints_of_a_waiting_task_name_a_message_on_the_task_and_that_resumes_it(
    served: tuple[str, Path],
) -> None:
    url, _ = served
    first = _send(url, EMAIL)
    (card_id,) = first["metadata"]["portagent"]["pending_approvals"]
    step = f"send any message on A2A task {first['id']}"
    # the remote caller asks again before the decision: told the A2A step, not a local command
    again = _send(url, "any news?", first["id"])
    text = again["status"]["message"]["parts"][0]["text"]
    assert again["status"]["state"] == "input-required"
    assert step in text and "portagent resume" not in text, text
    # the reviewer: told the same step
    code, out, err = run_cli("approvals", "approve", card_id, "--reviewer", "dean")
    assert code == 0, err
    assert step in out and "portagent resume" not in out, out
    # portagent resume of that run points at the task too (it said: the same request with the A2A key)
    code, out, err = run_cli("resume", first["metadata"]["portagent"]["run_id"])
    assert code == 2 and "sends any message on that task" in err and first["id"] in err, err
    assert "--idempotency-key" not in err and "Traceback" not in err
    done = _send(url, "go on", first["id"])  # the step, followed
    assert done["status"]["state"] == "completed", done["status"]
    assert done["metadata"]["portagent"]["attempt"] == 2


def test_cancel_of_a_working_task_records_its_run_as_cancelled(tmp_path: Path) -> None:
    """A task cancelled while its run is working (the model is slow to answer): the run ends recorded —
    ``run.completed`` cancelled / cancelled_by_caller, ``run.json``, the run store — not a trace holding only
    ``run.started`` with no ``run.json`` (the runner keeps a Ctrl-C'd attempt resumable; a cancelled task is
    finished)."""
    import yaml
    from _a2a_helpers import AGENT, SCRIPT

    from portagent.a2a.server import ServeConfig, serve_in_thread
    from portagent.adapters.base import REGISTRY
    from portagent.adapters.port import Endpoint
    from portagent.contracts.bundle import load_agent
    from portagent.emulator import load_script
    from portagent.emulator import serve as emulate

    script = yaml.safe_load(Path(SCRIPT).read_text(encoding="utf-8"))
    script.setdefault("defaults", {})["latency_ms"] = 3000  # every model answer takes 3 s
    slow = tmp_path / "slow.yaml"
    slow.write_text(yaml.safe_dump(script), encoding="utf-8")

    async def send_then_cancel(url: str) -> tuple[str, Any]:
        from a2a.client import ClientConfig, create_client
        from a2a.types import CancelTaskRequest, Message, Part, Role, SendMessageRequest

        http = httpx.AsyncClient(timeout=30)  # the stream stays open while the slow model answers
        streaming = await create_client(url, ClientConfig(streaming=True, httpx_client=http))
        plain = await create_client(url, ClientConfig(streaming=False))
        task_id: list[str] = []

        async def consume() -> None:
            message = Message(
                role=Role.ROLE_USER, message_id="slow-1", parts=[Part(text="What is the refund deadline?")]
            )
            async for event in streaming.send_message(SendMessageRequest(message=message)):
                kind = event.WhichOneof("payload")
                if kind == "task":
                    task_id.append(event.task.id)
                elif kind == "status_update":
                    task_id.append(event.status_update.task_id)

        reader = asyncio.create_task(consume())
        try:
            for _ in range(100):  # the task exists and its run is waiting on the model
                if task_id or reader.done():
                    break
                await asyncio.sleep(0.05)
            assert task_id, reader.exception() if reader.done() else "no task event in 5 s"
            await asyncio.sleep(0.8)
            canceled = await plain.cancel_task(CancelTaskRequest(id=task_id[0]))
            await asyncio.sleep(1.0)  # the run records itself as it unwinds
            return task_id[0], canceled
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            await streaming.close()
            await plain.close()
            await http.aclose()

    with emulate(load_script(slow)) as emu:
        config = ServeConfig(
            bundle=load_agent(AGENT),
            provider="openai",
            endpoint=Endpoint(
                source="emulator", mode="direct", base_url=emu.base_url, api_key=REGISTRY["openai"].dummy_key
            ),
            runs_dir=tmp_path / "runs",
            scopes=["email:send", "tickets:write"],
        )
        with serve_in_thread(config) as url:
            task, canceled = asyncio.run(send_then_cancel(url))
    from a2a.types import TaskState

    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    folder = tmp_path / "runs" / task
    events = [json.loads(line) for line in (folder / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    assert events[0]["type"] == "run.started" and events[-1]["type"] == "run.completed", [
        e["type"] for e in events
    ]
    assert (events[-1]["status"], events[-1]["stop_reason"]) == ("cancelled", "cancelled_by_caller")
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["result"]["status"] == "cancelled"
    runs = RunStore()
    try:
        prior = runs.get(f"a2a:{task}")
    finally:
        runs.close()
    assert prior is not None and prior.status == "cancelled"
