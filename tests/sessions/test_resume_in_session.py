"""A run of a session that waits for approval, resumed with ``portagent resume``, adds its exchange to the
thread when it completes — docs/sessions.md promises it, and re-running the same request with the same
``--idempotency-key`` always did. Before, ``resume`` ran the stored request outside the session: the
run completed, its record named the session, and the thread never got the turns (a thread that did not
exist yet was never created).

What proves it, beyond the summary line: the thread's turns (``sessions show --json``), the handler's
own log (the approved refund ran once), and the trace — the resumed attempt sent the model the same framed
input as the paused one (the thread's earlier turns included), so its journal applies.
"""

from __future__ import annotations

import json
from pathlib import Path

from _support import run_cli

AGENT = """
kind: agent
schema_version: 1
name: shop
instructions: You handle refunds. Use the tools.
models: {openai: gpt-4.1-mini, adk: gemini-2.5-flash}
tools:
  - name: get_order
    description: Read one order.
    effect: read
    input_schema:
      type: object
      properties: {order_id: {type: string}}
      required: [order_id]
      additionalProperties: false
    handler: resume_session_handlers:get_order
  - name: refund
    description: Refund an order. Money leaves; cannot be undone.
    effect: external_effect
    input_schema:
      type: object
      properties: {order_id: {type: string}, amount: {type: number}}
      required: [order_id, amount]
      additionalProperties: false
    idempotency: {required: true, key_template: "{order_id}:refund"}
    handler: resume_session_handlers:refund
policy:
  rules:
    - {id: reads, decision: allow, reason: reading is fine, tool: get_order}
    - {id: refunds-reviewed, decision: approval_required, reason: refunds are reviewed, tool: refund}
"""

SCRIPT = """
kind: emulator-script
schema_version: 1
name: shop
defaults:
  usage: {input_tokens: 100, output_tokens: 10}
conversations:
  - name: refund
    match: {first_user_regex: "Refund ORD-7\\\\.?\\\\s*$"}
    turns:
      - tool_calls: [{name: get_order, arguments: {order_id: ORD-7}}]
      - tool_calls: [{name: refund, arguments: {order_id: ORD-7, amount: 20}}]
      - text: "Refunded: {{last_tool_result.refunded}}"
  - name: hello
    match: {first_user_regex: "(?s).*"}
    turns:
      - text: "Hi there."
"""

HANDLERS = """
from pathlib import Path

LOG = Path(__file__).with_name("refunds.log")


def get_order(order_id):
    return {"order_id": order_id, "status": "shipped"}


def refund(order_id, amount):
    with LOG.open("a") as f:
        f.write(f"{order_id} {amount}\\n")
    return {"refunded": amount}
"""


def _project(folder: Path) -> Path:
    folder.mkdir()
    (folder / "agent.yaml").write_text(AGENT)
    (folder / "emulator.yaml").write_text(SCRIPT)
    (folder / "resume_session_handlers.py").write_text(HANDLERS)
    return folder


def _trace(run_id: str) -> list[dict]:
    import os

    path = Path(os.environ["PORTAGENT_HOME"]) / "runs" / run_id / "trace.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_resumed_session_run_adds_its_exchange_to_the_thread(tmp_path):
    p = _project(tmp_path / "shop")
    run = ("run", str(p / "agent.yaml"), "--provider", "openai", "--emulator", str(p / "emulator.yaml"))
    code, out, err = run_cli(*run, "--session", "desk", "--input", "Hello")
    assert code == 0 and "session    desk  2 turns, turns added" in out, out + err
    code, out, err = run_cli(*run, "--session", "desk", "--input", "Refund ORD-7", "--approver", "defer")
    assert code == 0 and "waiting_approval" in out, out + err
    assert "2 turns, nothing added (run waiting_approval)" in out
    run_id = out.split(" run ", 1)[1].split()[0]
    approval_id = next(ln.split()[1] for ln in out.splitlines() if ln.startswith("approval "))
    assert run_cli("approvals", "approve", approval_id)[0] == 0

    code, out, err = run_cli("resume", run_id)
    assert code == 0, out + err
    assert "status     completed" in out and "final      Refunded: 20" in out
    assert "session    desk  4 turns, turns added" in out
    code, out, _ = run_cli("sessions", "show", "desk", "--json")
    turns = json.loads(out)
    assert [(t["role"], t["content"]) for t in turns] == [
        ("user", "Hello"),
        ("assistant", "Hi there."),
        ("user", "Refund ORD-7"),
        ("assistant", "Refunded: 20"),
    ]
    assert turns[-1]["run_id"] == run_id
    assert (p / "refunds.log").read_text() == "ORD-7 20\n"  # the approved refund, once
    # both attempts sent the same framed input (the thread's first exchange included): the journal applies
    started = [e for e in _trace(run_id) if e["type"] == "run.started"]
    assert len(started) == 2 and started[0]["input"] == started[1]["input"]
    assert "Hi there." in started[1]["input"] and started[1]["input"].endswith("Refund ORD-7")


def test_a_resumed_first_run_of_a_session_creates_the_thread(tmp_path):
    p = _project(tmp_path / "shop")
    code, out, err = run_cli(
        "run", str(p / "agent.yaml"), "--provider", "openai", "--emulator", str(p / "emulator.yaml"),
        "--session", "new-thread", "--input", "Refund ORD-7", "--approver", "defer",
    )  # fmt: skip
    assert code == 0 and "waiting_approval" in out, out + err
    run_id = out.split(" run ", 1)[1].split()[0]
    approval_id = next(ln.split()[1] for ln in out.splitlines() if ln.startswith("approval "))
    assert run_cli("approvals", "approve", approval_id)[0] == 0
    code, out, err = run_cli("resume", run_id)
    assert code == 0 and "session    new-thread  2 turns, turns added" in out, out + err
    code, out, err = run_cli("sessions", "show", "new-thread", "--json")
    assert code == 0, err
    assert [t["role"] for t in json.loads(out)] == ["user", "assistant"]


def test_a_paused_session_run_resumes_after_the_thread_moved_on(tmp_path):
    """The thread gets another exchange while a run of it waits for approval. Resuming that run frames it
    with the thread as it was when it paused (the journal replays the model's answers to that request, and
    the card was decided for it): the approved refund runs once, and the exchange is added after the newer
    one. It was refused as "started with a different input", and every command offered failed the same
    way, so the approved card could never be used."""
    p = _project(tmp_path / "shop")
    run = ("run", str(p / "agent.yaml"), "--provider", "openai", "--emulator", str(p / "emulator.yaml"))
    code, out, err = run_cli(*run, "--session", "desk", "--input", "Hello")
    assert code == 0, out + err
    code, out, err = run_cli(*run, "--session", "desk", "--input", "Refund ORD-7", "--approver", "defer")
    assert code == 0 and "waiting_approval" in out, out + err
    run_id = out.split(" run ", 1)[1].split()[0]
    approval_id = next(ln.split()[1] for ln in out.splitlines() if ln.startswith("approval "))
    code, out, err = run_cli(*run, "--session", "desk", "--input", "Anything new?")  # the thread moves on
    assert code == 0 and "session    desk  4 turns, turns added" in out, out + err
    assert run_cli("approvals", "approve", approval_id)[0] == 0

    code, out, err = run_cli("resume", run_id)
    assert code == 0, out + err
    assert "status     completed" in out and "final      Refunded: 20" in out
    code, out, _ = run_cli("sessions", "show", "desk", "--json")
    assert [(t["role"], t["content"]) for t in json.loads(out)][-4:] == [
        ("user", "Anything new?"),
        ("assistant", "Hi there."),
        ("user", "Refund ORD-7"),
        ("assistant", "Refunded: 20"),
    ]
    assert (p / "refunds.log").read_text() == "ORD-7 20\n"  # the approved refund, once
    started = [e for e in _trace(run_id) if e["type"] == "run.started"]
    assert len(started) == 2 and started[0]["input"] == started[1]["input"]
    assert "Anything new?" not in started[1]["input"]  # framed as when it paused


def test_a_card_deferred_in_chat_is_finished_by_portagent_resume(tmp_path, monkeypatch):
    """``chat`` asks approvals inline; one deferred there is decided later with ``portagent approvals``,
    whose next step is ``portagent resume RUN`` — which needs to know how the chat ran the line. It did
    not (the step offered was a key the chat cannot send), so a deferred chat card could never be used."""
    import io

    p = _project(tmp_path / "shop")
    monkeypatch.setattr("sys.stdin", io.StringIO("Refund ORD-7\nd\n"))
    code, out, err = run_cli(
        "chat", str(p / "agent.yaml"), "--provider", "openai", "--emulator", str(p / "emulator.yaml"),
        "--session", "desk",
    )  # fmt: skip
    assert code == 0 and "[waiting_approval" in out, out + err
    approval_id = next(w for w in out.split() if w.startswith("apr_"))
    run_id = next(w for w in out.replace("]", " ").split() if w.startswith("run_"))
    code, out, err = run_cli("approvals", "approve", approval_id)
    assert code == 0 and f"portagent resume {run_id}" in out, out + err
    code, out, err = run_cli("resume", run_id)
    assert code == 0 and "final      Refunded: 20" in out, out + err
    assert "session    desk  2 turns, turns added" in out
    assert (p / "refunds.log").read_text() == "ORD-7 20\n"
