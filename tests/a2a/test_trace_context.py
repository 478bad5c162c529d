"""W3C trace context: parsing, and ``traceparent`` on MCP calls (``_meta``) read from the MCP server's
own log. The A2A hop (sent and accepted) is proven in ``test_a2a_remote_tools.py``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import REPO

from portagent.tracing.propagation import TraceParent, parse

sys.path.insert(0, str(REPO / "tests" / "mcp"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("00-" + "a" * 32 + "-" + "b" * 16 + "-01", TraceParent("a" * 32, "b" * 16)),
        (" 00-" + "A" * 32 + "-" + "B" * 16 + "-00 ", TraceParent("a" * 32, "b" * 16)),
        ("01-" + "a" * 32 + "-" + "b" * 16 + "-01", None),  # another version: ignored
        ("00-" + "0" * 32 + "-" + "b" * 16 + "-01", None),  # all-zero trace id is invalid
        ("00-" + "a" * 32 + "-" + "0" * 16 + "-01", None),
        ("garbage", None),
        (None, None),
    ],
)
def test_parse(value: object, expected: TraceParent | None) -> None:
    assert parse(value) == expected


def test_mcp_calls_carry_the_runs_traceparent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from _mcp_helpers import DATA, run_agent, server, write_agent

    from portagent.contracts.bundle import load_agent
    from portagent.emulator import load_script
    from portagent.emulator import serve as emulate

    log = tmp_path / "mcp-traceparents.jsonl"
    monkeypatch.setenv("MCP_TEST_LOG", str(tmp_path / "mcp-calls.jsonl"))
    env = {"MCP_TEST_TRACE_LOG": str(log)}
    servers = [server("weather", env=env), server("glossary", allow=["lookup", "fail"], env=env)]
    spec = write_agent(tmp_path / "agent", servers)
    with emulate(load_script(DATA / "emulator.yaml")) as emu:
        out = run_agent(load_agent(spec), "openai", "What is the weather in Paris?", emu, tmp_path)
    assert out.result.status == "completed"
    started = out.events[0]
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["tool"] for r in rows] == ["get_forecast", "lookup"]
    assert {r["traceparent"] for r in rows} == {f"00-{started.trace_id}-{started.span_id}-01"}


def test_a_joined_run_exports_under_the_callers_span(tmp_path: Path) -> None:
    """A run started for a caller (as ``a2a serve`` does) keeps the caller's trace id; its OTel span has the
    caller's span as its (remote) parent."""
    from _support import run_cli

    from portagent.tracing.propagation import joining
    from portagent.tracing.recorder import TraceRecorder

    caller = TraceParent("c" * 32, "d" * 16)
    with joining(caller):
        rec = TraceRecorder(run_id="run_x", provider="openai", agent="desk", path=tmp_path / "trace.jsonl")
    rec.emit("run.started", root=True, agent_version="1.0.0", spec_hash="h", policy_hash="p", sdk="s",
             sdk_version="1", model="m", source="emulator", mode="direct")  # fmt: skip
    rec.emit("run.completed", root=True, status="completed", stop_reason="final_output")
    rec.flush()
    assert rec.trace_id == caller.trace_id and rec.events[0].parent_span_id == caller.span_id
    out = tmp_path / "otel.json"
    code, _, err = run_cli("trace", "export", str(tmp_path / "trace.jsonl"), "--otel-json", str(out))
    assert code == 0, err
    spans = [
        s for r in json.loads(out.read_text())["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]
    ]
    (agent,) = [s for s in spans if s["name"] == "invoke_agent desk"]
    assert (agent["traceId"], agent["parentSpanId"]) == (caller.trace_id, caller.span_id)
