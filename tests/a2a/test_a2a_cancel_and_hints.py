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
