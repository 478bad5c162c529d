"""``portagent mcp serve``: an MCP client (the mcp package's ``Client``) lists and calls governed tools.

Over stdio and streamable HTTP the server runs as a real ``portagent mcp serve`` process; the policy and
approval tests connect in-process (``Client(server)``), which exercises the same gateway path without
a subprocess.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _mcp_helpers import DATA
from _support import EXAMPLES, REPO, run_cli

from portagent.contracts.tool import ToolSpec
from portagent.mcp.server import GovernedServer, load_target
from portagent.tools.mcp.annotations import effect_from_hints, hints_for
from portagent.tracing.recorder import read_trace

DESK = EXAMPLES / "support_desk"


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PORTAGENT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}


async def _list_and_call(client) -> tuple[list, list]:
    tools = (await client.list_tools()).tools
    results = [
        await client.call_tool("search_policy", {"query": "refund deadline"}),
        await client.call_tool("get_student_record", {"case_id": "42"}),
    ]
    return tools, results


def _check_desk(tools, results, trace: Path) -> None:
    by_name = {t.name: t for t in tools}
    assert sorted(by_name) == [
        "create_ticket",
        "get_student_record",
        "prepare_reply_for_review",
        "search_policy",
        "send_email",
    ]
    search = by_name["search_policy"]
    assert (
        search.input_schema["required"] == ["query"] and search.input_schema["additionalProperties"] is False
    )
    assert "Use when:" in search.description  # the model-facing description
    assert (search.annotations.read_only_hint, search.annotations.idempotent_hint) == (True, True)
    email = by_name["send_email"].annotations
    assert (email.read_only_hint, email.destructive_hint, email.open_world_hint) == (False, True, True)
    assert by_name["send_email"].meta["portagent/effect"] == "external_effect"
    ok, invalid = results
    assert not ok.is_error and ok.structured_content["passages"][0]["id"] == "H-1"
    assert invalid.is_error and invalid.structured_content["error"] == "validation_error"
    assert invalid.content[0].text.startswith("validation_error:")
    events = read_trace(trace)
    assert events[0].type == "run.started" and events[0].provider == "mcp"
    calls = [e for e in events if e.type == "tool.call"]
    assert [(c.tool, c.via) for c in calls] == [("search_policy", "mcp"), ("get_student_record", "mcp")]
    assert [e.error for e in events if e.type == "tool.result"] == [None, "validation_error"]


def test_stdio_client_lists_and_calls_the_example_tools(tmp_path):
    from mcp import Client, StdioServerParameters

    trace = tmp_path / "serve.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        env=_env(tmp_path),
        args=[
            "-m",
            "portagent",
            "mcp",
            "serve",
            str(DESK / "tools.yaml"),
            "--policy",
            str(DESK / "policy.yaml"),
            "--trace",
            str(trace),
        ],
    )

    async def go():
        async with Client(params) as client:
            return await _list_and_call(client)

    tools, results = asyncio.run(asyncio.wait_for(go(), 60))
    _check_desk(tools, results, trace)
    assert read_trace(trace)[-1].type == "run.completed"  # the client closed stdin: the session ended


def test_streamable_http_client_lists_and_calls_the_example_tools(tmp_path):
    from mcp import Client

    trace = tmp_path / "serve.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "portagent",
            "mcp",
            "serve",
            str(DESK / "agent.yaml"),
            "--transport",
            "streamable-http",
            "--port",
            "0",
            "--trace",
            str(trace),
        ],
        env=_env(tmp_path),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = _wait_for_url(proc)
        assert url.startswith("http://127.0.0.1:")

        async def go():
            async with Client(url) as client:
                return await _list_and_call(client)

        tools, results = asyncio.run(asyncio.wait_for(go(), 60))
        _check_desk(tools, results, trace)
        # the agent's own policy governs it: send_email to a non-university address is denied
        events = read_trace(trace)
        assert events[0].agent == "support_desk" and events[0].policy_hash.startswith("sha256:")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    assert read_trace(trace)[-1].type == "run.completed"


def _wait_for_url(proc: subprocess.Popen, timeout: float = 30.0) -> str:
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        if " on http" in line:
            return line.split(" on ", 1)[1].split(";", 1)[0].strip()
    raise AssertionError(f"mcp serve did not announce its URL: {''.join(seen)}")


# --- in-process: policy, approvals --------------------------------------------------------------------


def _sms(tmp_path: Path, **kw) -> GovernedServer:
    sys.path.insert(0, str(DATA))
    return GovernedServer(
        load_target(DATA / "sms_tools.yaml", DATA / "sms_policy.yaml"),
        trace_path=tmp_path / "trace.jsonl",
        **kw,
    )


def _call(governed: GovernedServer, *calls: tuple[str, dict]) -> list:
    from mcp import Client

    async def go():
        governed.start("in-process")
        try:
            async with Client(governed.build()) as client:
                return [await client.call_tool(name, args) for name, args in calls]
        finally:
            governed.stop()

    return asyncio.run(asyncio.wait_for(go(), 30))


def test_policy_denied_call_returns_an_error_and_the_handler_is_not_called(tmp_path):
    import local_handlers

    local_handlers.CALLS.clear()
    (denied,) = _call(_sms(tmp_path), ("send_sms", {"to": "+1900555123", "text": "win big"}))
    assert denied.is_error
    assert denied.structured_content["error"] == "permission_denied"
    assert denied.content[0].text == "permission_denied: premium-rate numbers are never texted"
    assert local_handlers.CALLS == []
    events = read_trace(tmp_path / "trace.jsonl")
    decision = next(e for e in events if e.type == "permission.decision")
    assert (decision.decision, decision.rule, decision.policy_version) == ("deny", "no-premium-numbers", "3")


def test_approval_required_names_the_pending_card_and_a_retry_after_the_decision_runs_once(tmp_path):
    import local_handlers

    local_handlers.CALLS.clear()
    args = {"to": "+34600111222", "text": "Your DNI is missing"}
    (pending,) = _call(_sms(tmp_path), ("send_sms", args))
    assert pending.is_error and pending.structured_content["error"] == "approval_required"
    approval_id = pending.structured_content["approval_id"]
    assert f"portagent approvals approve {approval_id}" in pending.content[0].text
    assert local_handlers.CALLS == []

    code, _, err = run_cli("approvals", "approve", approval_id, "--reviewer", "ana")
    assert code == 0, err

    # a new serve session (a stdio client restarts the server): same namespace, so the card applies
    done, again = _call(_sms(tmp_path), ("send_sms", args), ("send_sms", args))
    assert not done.is_error and done.structured_content["sent"] is True
    assert not again.is_error and again.structured_content["duplicate"] is True  # the ledger: one effect
    assert [{"tool": "send_sms", **args}] == local_handlers.CALLS
    resolved = [e for e in read_trace(tmp_path / "trace.jsonl") if e.type == "approval.resolved"]
    assert [(e.approval_id, e.status, e.reviewer) for e in resolved] == [(approval_id, "approved", "ana")]


def test_a_rejected_card_answers_approval_rejected(tmp_path):
    import local_handlers

    local_handlers.CALLS.clear()
    args = {"to": "+34600111333", "text": "hello"}
    (pending,) = _call(_sms(tmp_path), ("send_sms", args))
    assert run_cli("approvals", "reject", pending.structured_content["approval_id"], "--note", "no")[0] == 0
    (rejected,) = _call(_sms(tmp_path), ("send_sms", args))
    assert rejected.is_error and rejected.structured_content["error"] == "approval_rejected"
    assert local_handlers.CALLS == []


def test_each_serve_session_is_one_trace(tmp_path):
    governed = _sms(tmp_path)
    _call(governed, ("echo_text", {"text": "a"}), ("nope", {}))
    events = read_trace(tmp_path / "trace.jsonl")
    assert [e.type for e in events] == [
        "run.started",
        "tool.call",
        "permission.decision",
        "tool.result",
        "tool.call",
        "tool.result",
        "run.completed",
    ]
    assert {e.run_id for e in events} == {governed.run_id}
    assert events[-2].error == "unknown_tool" and events[-1].tool_calls == 2


# --- the effect ↔ annotation mapping -------------------------------------------------------------------


def _tool(effect: str, **kw) -> ToolSpec:
    idem = {"idempotency": {"required": True}} if effect in ("reversible_write", "external_effect") else {}
    return ToolSpec(
        name="t",
        description="d",
        effect=effect,
        handler="m:f",
        input_schema={"type": "object", "properties": {}},
        **idem,
        **kw,
    )


@pytest.mark.parametrize(
    "effect,hints",
    [
        ("read", (True, False, True, False)),
        ("compute", (True, False, True, False)),
        ("prepare_change", (False, False, False, False)),
        ("reversible_write", (False, False, True, False)),
        ("external_effect", (False, True, True, True)),
        ("privileged_operation", (False, True, False, False)),
    ],
)
def test_effect_classes_map_to_documented_annotations(effect, hints):
    got = hints_for(_tool(effect))
    assert (got["readOnlyHint"], got["destructiveHint"], got["idempotentHint"], got["openWorldHint"]) == hints


def test_reversibility_refines_destructive_hint():
    assert hints_for(_tool("reversible_write", reversible=False))["destructiveHint"] is True
    assert hints_for(_tool("external_effect", reversible=True))["destructiveHint"] is False


@pytest.mark.parametrize(
    "annotations,effect",
    [
        (None, "external_effect"),
        ({}, "external_effect"),
        ({"readOnlyHint": True, "openWorldHint": True}, "read"),
        ({"openWorldHint": True, "destructiveHint": False}, "external_effect"),
        ({"destructiveHint": False}, "reversible_write"),
        ({"destructiveHint": False, "openWorldHint": False}, "reversible_write"),
        ({"destructiveHint": True, "openWorldHint": False}, "external_effect"),
        ({"idempotentHint": True}, "external_effect"),
    ],
)
def test_annotations_map_to_effect_classes(annotations, effect):
    assert effect_from_hints(annotations) == effect


def test_serving_a_missing_file_or_a_busy_port_is_a_usage_error(tmp_path):
    code, _, err = run_cli("mcp", "serve", str(tmp_path / "nope.yaml"))
    assert code == 2 and "no such file" in err
    code, _, err = run_cli("mcp", "serve", str(DESK / "policy.yaml"))
    assert code == 2 and "not kind 'policy'" in err
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        code, _, err = run_cli(
            "mcp",
            "serve",
            str(DESK / "tools.yaml"),
            "--transport",
            "streamable-http",
            "--port",
            str(port),
            "--trace",
            str(tmp_path / "t.jsonl"),
        )
    assert code == 2 and f"cannot listen on 127.0.0.1:{port}" in err
    assert not (tmp_path / "t.jsonl").exists()  # nothing was served, so no session trace


def test_serving_an_agent_proxies_its_mcp_sources_under_its_policy(tmp_path, _mcp_log):
    """An agent whose tools come from MCP servers can itself be served: the client sees the wrapped
    ToolSpecs, and each call passes this portagent's gateway before it reaches the source server."""
    from _mcp_helpers import server, server_log, write_agent
    from mcp import Client, StdioServerParameters

    agent = write_agent(tmp_path / "agent", [server("weather", allow=["get_forecast", "book_table"])])
    trace = tmp_path / "serve.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        env=_env(tmp_path),
        args=["-m", "portagent", "mcp", "serve", str(agent), "--trace", str(trace)],
    )

    async def go():
        async with Client(params) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            ok = await client.call_tool("weather_get_forecast", {"city": "Lyon"})
            booking = await client.call_tool("weather_book_table", {"restaurant": "Chez Max", "people": 2})
            return names, ok, booking

    names, ok, booking = asyncio.run(asyncio.wait_for(go(), 60))
    assert names == ["echo_text", "weather_book_table", "weather_get_forecast"]
    assert not ok.is_error and ok.structured_content["forecast"] == "sunny"
    assert booking.is_error and booking.structured_content["error"] == "approval_required"
    assert [c["tool"] for c in server_log(_mcp_log)] == ["get_forecast"]  # the booking waits for a person
    events = read_trace(trace)
    assert "weather" in events[0].provider_details["mcp"]
    assert [(e.tool, e.via) for e in events if e.type == "tool.call"] == [
        ("weather_get_forecast", "mcp"),
        ("weather_book_table", "mcp"),
    ]
